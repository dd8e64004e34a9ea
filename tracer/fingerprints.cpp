// Source fingerprints (Note [Source fingerprints] in trace.h): this build's,
// from the table tools/hash_sources.cmake writes, and the ones a trace holds.
// Apart from trace.cpp so that what reads traces without the runtime (the
// fuzz targets) needs no generated table.
#include <algorithm>
#include <string>
#include <string_view>
#include <unordered_set>
#include <variant>

#include "tracer/trace.h"

namespace descent::trace {

std::string_view source_fingerprint(std::string_view path) {
  const fingerprints::Entry* begin = fingerprints::kEntries;
  const fingerprints::Entry* end = begin + fingerprints::kCount;
  const fingerprints::Entry* it =
      std::lower_bound(begin, end, path, [](const fingerprints::Entry& e, std::string_view p) { return e.path < p; });
  return it != end && it->path == path ? it->fingerprint : std::string_view();
}

void add_source_fingerprints(Trace& t) {
  std::unordered_set<std::string_view> seen;  // a million spans name a few dozen files
  auto add = [&](std::string_view file) {
    if (file.empty() || !seen.insert(file).second) return;
    const std::string_view fp = source_fingerprint(file);
    if (!fp.empty()) t.metadata.try_emplace(std::string(kSourceMetaPrefix) + std::string(file), fp);
  };
  for (const Span& s : t.spans) {
    add(s.file);
    if (const ArgValue* at = s.find_arg(kDecidedAt); at && std::holds_alternative<std::string>(*at)) {
      const std::string& where = std::get<std::string>(*at);  // "file:line"
      add(std::string_view(where).substr(0, where.rfind(':')));
    }
  }
}

SourceMatch source_match(const Trace& t, std::string_view file) {
  const std::string_view ours = source_fingerprint(file);
  if (ours.empty()) return SourceMatch::NotOurs;
  const auto it = t.metadata.find(std::string(kSourceMetaPrefix) + std::string(file));
  if (it == t.metadata.end()) return SourceMatch::Unknown;
  return it->second == ours ? SourceMatch::Same : SourceMatch::Changed;
}

}  // namespace descent::trace
