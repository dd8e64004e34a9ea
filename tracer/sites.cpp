// descent tracer: interned strings, floor names and the table of source
// sites spans point at (Note [Span source sites] in tracer.h).
//
// [SECTION] Interning and floor names
// [SECTION] Source sites
#include <array>
#include <mutex>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "tracer/tracer.h"

namespace descent::trace {

// [SECTION] Interning and floor names ------------------------------------------

namespace {
struct StringHash {
  using is_transparent = void;
  size_t operator()(std::string_view s) const { return std::hash<std::string_view>{}(s); }
};
struct InternTable {
  std::mutex mutex;
  std::unordered_set<std::string, StringHash, std::equal_to<>> strings;  // nodes never move
};
}  // namespace

const char* intern(std::string_view s) {
  static InternTable* table = new InternTable;  // never destroyed: pointers live forever
  std::lock_guard lock(table->mutex);
  auto it = table->strings.find(s);
  if (it == table->strings.end()) it = table->strings.emplace(s).first;
  return it->c_str();
}

const char* floor_name(Floor f) {
  static constexpr std::array<const char*, kNumFloors> kNames = {
      "none", "python", "binding", "dispatch", "autograd", "kernels", "allocator", "streams", "launch", "device"};
  const auto i = static_cast<size_t>(f);
  return i < kNames.size() ? kNames[i] : "unknown";
}

// [SECTION] Source sites ---------------------------------------------------------

namespace {

// Append-only: sites[i - 1] is site i. Never destroyed (threads may outlive statics).
struct SiteTable {
  std::mutex mutex;
  std::vector<SourceSite> sites;
  std::unordered_map<std::string, uint16_t> index;  // "file\nline\nfunction" -> site
};
SiteTable& site_table() {
  static SiteTable* t = new SiteTable;
  return *t;
}

// `file` relative to the repository root when it still names it (code built
// without -fmacro-prefix-map, e.g. by nvcc).
std::string_view relative_to_source_dir(std::string_view file) {
#ifdef DESCENT_SOURCE_DIR
  constexpr std::string_view kSourceDir = DESCENT_SOURCE_DIR "/";
  if (file.starts_with(kSourceDir)) file.remove_prefix(kSourceDir.size());
#endif
  return file;
}

}  // namespace

std::vector<SourceSite> sites_registered() {
  std::lock_guard lock(site_table().mutex);
  return site_table().sites;
}

uint16_t register_site(std::string_view file, uint32_t line, std::string_view function) {
  file = relative_to_source_dir(file);
  std::string key;
  key.reserve(file.size() + function.size() + 12);
  key.append(file).append("\n").append(std::to_string(line)).append("\n").append(function);
  SiteTable& t = site_table();
  std::lock_guard lock(t.mutex);
  if (const auto it = t.index.find(key); it != t.index.end()) return it->second;
  if (t.sites.size() >= kMaxSites) return 0;
  t.sites.push_back({intern(file), line, intern(function)});
  const auto site = static_cast<uint16_t>(t.sites.size());
  t.index.emplace(std::move(key), site);
  return site;
}

SourceSite site_info(uint16_t index) {
  SiteTable& t = site_table();
  std::lock_guard lock(t.mutex);
  return index > 0 && index <= t.sites.size() ? t.sites[index - 1] : SourceSite{};
}

uint32_t site_count() {
  SiteTable& t = site_table();
  std::lock_guard lock(t.mutex);
  return static_cast<uint32_t>(t.sites.size());
}

}  // namespace descent::trace
