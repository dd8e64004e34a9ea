// libFuzzer target: the Chrome Trace Event / Kineto JSON loader
// (tracer/load_chrome.cpp over the JSON reader, tracer/json.cpp): what the
// app's --trace and --compare and `descent replay` read from PyTorch's
// profiler, Perfetto, or descent's own Chrome export.
//
// For any bytes, from_chrome_json() either raises TraceFormatError that names
// the source first, or returns a Trace whose spans form a tree, whatever the
// file said (Note [Parents from time containment]): sorted by (thread, start),
// every flow naming two of its spans. That trace then survives what descent
// does with it (fuzz.h, use_loaded_trace). Any other exception, a crash, a
// hang, or an ASan or UBSan report is a bug.
//
// Corpus: tests/fuzz/corpus/chrome_json (the two PyTorch profiler files
// recorded on the H200 host, descent's own export, and small files with
// flows, metadata events, escapes and odd numbers); dictionary:
// chrome_json.dict.
#include <cstddef>
#include <cstdint>
#include <string>

#include "tests/fuzz/fuzz.h"
#include "tracer/trace.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace descent;
  const std::string text(reinterpret_cast<const char*>(data), size);
  trace::Trace t;
  try {
    t = trace::from_chrome_json(text, "fuzz.json");
  } catch (const trace::TraceFormatError& e) {
    fuzz::check_error_names_source(e, "fuzz.json");
    return 0;
  }
  FUZZ_CHECK(trace::check_structure(t).empty(), "a loaded Chrome trace whose spans do not form a tree");
  for (size_t k = 1; k < t.spans.size(); ++k) {
    const trace::Span& a = t.spans[k - 1];
    const trace::Span& b = t.spans[k];
    FUZZ_CHECK(a.thread < b.thread || (a.thread == b.thread && a.start_ns <= b.start_ns),
               "a loaded Chrome trace not sorted by (thread, start)");
  }
  const trace::SpanIndex ids(t);
  for (const trace::Flow& f : t.flows) {
    FUZZ_CHECK(ids.find(f.from) != SIZE_MAX && ids.find(f.to) != SIZE_MAX, "a flow that names a missing span");
  }
  fuzz::use_loaded_trace(t);
  return 0;
}
