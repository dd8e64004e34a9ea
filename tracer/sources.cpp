// descent's embedded sources: lookups over the table that
// tools/embed_sources.cmake generates. See Note [Embedded sources] in sources.h.
#include "tracer/sources.h"

#include <algorithm>

namespace descent::trace {

namespace {

// The table's entries sorted by path, built once.
const std::vector<const embedded::File*>& sorted_files() {
  static const std::vector<const embedded::File*> files = [] {
    std::vector<const embedded::File*> v;
    for (size_t i = 0; i < embedded::kFileCount; ++i) v.push_back(&embedded::kFiles[i]);
    std::sort(v.begin(), v.end(), [](const auto* a, const auto* b) { return a->path < b->path; });
    return v;
  }();
  return files;
}

}  // namespace

std::string_view embedded_source(std::string_view path) {
  const auto& files = sorted_files();
  const auto it = std::lower_bound(files.begin(), files.end(), path,
                                   [](const embedded::File* f, std::string_view p) { return f->path < p; });
  return it != files.end() && (*it)->path == path ? (*it)->text : std::string_view{};
}

std::vector<std::string_view> embedded_source_paths() {
  std::vector<std::string_view> paths;
  for (const embedded::File* f : sorted_files()) paths.push_back(f->path);
  return paths;
}

}  // namespace descent::trace
