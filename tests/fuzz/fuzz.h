// What the fuzz targets share: a check that stops the run, and what descent
// does with a trace once a loader has returned it (both trace loaders' targets
// run it). See tests/fuzz/README.md.
#pragma once

#include <algorithm>
#include <charconv>
#include <climits>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <string_view>
#include <tuple>
#include <vector>

#include "tracer/trace.h"

// Stops the run with `what` when `cond` is false: libFuzzer saves the input
// that did it as a crash (build-fuzz/artifacts/<target>/crash-...).
#define FUZZ_CHECK(cond, what)                                                           \
  do {                                                                                   \
    if (!(cond)) {                                                                       \
      std::fprintf(stderr, "fuzz check failed: %s (%s:%d)\n", what, __FILE__, __LINE__); \
      std::abort();                                                                      \
    }                                                                                    \
  } while (0)

namespace descent::fuzz {

// A trace whose times all lie within this many ns (46 days) of the Chrome
// export's base is written to the nanosecond (Note [Chrome export times from
// a base] in tracer/export_chrome.cpp: a double of microseconds holds every
// nanosecond up to 2^42 us, 51 days).
constexpr int64_t kExactNs = 4'000'000'000'000'000;

// Whether each time of `t` is within kExactNs of the export's base: the
// earliest start, or 0 when a time is negative.
inline bool chrome_export_is_exact(const trace::Trace& t) {
  if (t.spans.empty()) return true;
  int64_t lo = INT64_MAX;
  for (const trace::Span& s : t.spans) lo = std::min({lo, s.start_ns, s.end_ns});
  const int64_t base = lo < 0 ? 0 : lo;
  for (const trace::Span& s : t.spans) {
    for (const int64_t ns : {s.start_ns, s.end_ns}) {
      int64_t from_base = 0;
      if (__builtin_sub_overflow(ns, base, &from_base) || from_base < -kExactNs || from_base > kExactNs) return false;
    }
  }
  return true;
}

// A loader's error must name the file it was given, first ("<source>:...").
inline void check_error_names_source(const trace::TraceFormatError& e, std::string_view source) {
  const std::string_view what = e.what();
  FUZZ_CHECK(what.starts_with(source) && what.size() > source.size() + 2 && what[source.size()] == ':',
             "a TraceFormatError that does not start with the source's name and ':'");
}

// What descent does with a trace a loader returned: `descent replay`
// (floors/python/descent/__main__.py), the app (ui/state.cpp) and the Python
// Trace object (floors/binding/trace_object.cpp), whose methods run on any
// loaded trace, whether its spans form a tree or not:
//   - saved in descent's format, it loads back, and saving that gives the
//     same text (the app saves any trace it shows, a Chrome file's too);
//   - check_structure() says what is wrong with it, if anything;
//   - the tree prints: plain, and for a file of `descent trace --repeat N`
//     the last run's timed over the runs (std::invalid_argument when the
//     roots do not split into N runs);
//   - the Chrome export loads back as a tree, with every span on its thread
//     at its times (where the file holds them to the nanosecond), and
//     exporting that and loading it again changes nothing; or it raises
//     TraceFormatError (times out of the loader's range).
inline void use_loaded_trace(const trace::Trace& t) {
  const std::string saved = trace::to_descent_format(t);
  trace::Trace again;
  try {
    again = trace::from_descent_format(saved, "saved");
  } catch (const trace::TraceFormatError& e) {
    std::fprintf(stderr, "%s\n", e.what());
    FUZZ_CHECK(false, "a loaded trace, saved in descent's format, does not load back");
  }
  FUZZ_CHECK(trace::to_descent_format(again) == saved, "descent's format does not round-trip");

  (void)trace::check_structure(t);
  (void)trace::format_tree(t);
  size_t runs = 1;
  if (const auto it = t.metadata.find("trace.runs"); it != t.metadata.end()) {
    const std::string& text = it->second;
    const auto r = std::from_chars(text.data(), text.data() + text.size(), runs);
    if (r.ec != std::errc() || r.ptr != text.data() + text.size() || runs == 0) runs = 1;
  }
  try {
    (void)trace::format_tree_repeated(t, runs);
  } catch (const std::invalid_argument&) {
  }
  const std::string json = trace::to_chrome_json(t);
  trace::Trace back;
  try {
    back = trace::from_chrome_json(json, "export.json");
  } catch (const trace::TraceFormatError& e) {
    check_error_names_source(e, "export.json");
    return;
  }
  FUZZ_CHECK(trace::check_structure(back).empty(), "the Chrome export loads back as spans that do not form a tree");
  if (!chrome_export_is_exact(t)) return;
  // Every span comes back on its thread with its times to the nanosecond
  // (in the loader's order, so compared as sorted lists).
  const auto times = [](const trace::Trace& x) {
    std::vector<std::tuple<uint32_t, int64_t, int64_t>> v;
    for (const trace::Span& s : x.spans) v.emplace_back(s.thread, s.start_ns, s.end_ns);
    std::sort(v.begin(), v.end());
    return v;
  };
  FUZZ_CHECK(times(back) == times(t), "the Chrome export does not keep each span's thread and times");
  // What the export loaded back as, it writes and loads back as the same:
  // the first pass may change a trace (ids renumbered, a "src" argument for
  // the source line), the second must not.
  const trace::Trace twice = trace::from_chrome_json(trace::to_chrome_json(back), "export2.json");
  FUZZ_CHECK(trace::to_descent_format(twice) == trace::to_descent_format(back),
             "descent's Chrome export does not read back as it was written");
}

}  // namespace descent::fuzz
