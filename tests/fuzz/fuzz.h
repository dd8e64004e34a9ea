// What the fuzz targets share: a check that stops the run, and what descent
// does with a trace once a loader has returned it (both trace loaders' targets
// run it). See tests/fuzz/README.md.
#pragma once

#include <charconv>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <string_view>

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

// A loader's error must name the file it was given, first ("<source>:...").
inline void check_error_names_source(const trace::TraceFormatError& e, std::string_view source) {
  const std::string_view what = e.what();
  FUZZ_CHECK(what.starts_with(source) && what.size() > source.size() + 2 && what[source.size()] == ':',
             "a TraceFormatError that does not start with the source's name and ':'");
}

// What `descent replay` (floors/python/descent/__main__.py) and the app
// (ui/state.cpp) do with a trace a loader returned, plus the promise of
// descent's own format:
//   - saved in descent's format, it loads back, and saving that gives the
//     same text (the app saves any trace it shows, a Chrome file's too);
//   - check_structure() says whether the spans form a tree; only then are
//     they shown: the tree printed (for a file of `descent trace --repeat N`,
//     the last run's, timed over the runs), and the Chrome export written,
//     which loads back or raises TraceFormatError (its times out of range).
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

  if (!trace::check_structure(t).empty()) return;  // replay and the app refuse it, naming the problems
  size_t runs = 1;
  if (const auto it = t.metadata.find("trace.runs"); it != t.metadata.end()) {
    const std::string& text = it->second;
    size_t n = 0;
    const auto r = std::from_chars(text.data(), text.data() + text.size(), n);
    if (r.ec == std::errc() && r.ptr == text.data() + text.size() && n > 0) runs = n;
  }
  std::string tree;
  try {
    tree = runs > 1 ? trace::format_tree_repeated(t, runs) : trace::format_tree(t);
  } catch (const std::invalid_argument&) {  // the roots do not split into `runs` runs: replay prints the plain tree
    tree = trace::format_tree(t);
  }
  const std::string json = trace::to_chrome_json(t);
  try {
    const trace::Trace back = trace::from_chrome_json(json, "export.json");
    FUZZ_CHECK(trace::check_structure(back).empty(), "the Chrome export of a tree loads back as something else");
  } catch (const trace::TraceFormatError& e) {
    check_error_names_source(e, "export.json");
  }
}

}  // namespace descent::fuzz
