// libFuzzer target: descent's own trace format (tracer/descent_format.cpp),
// what `descent replay FILE` and the app's --trace read from a file that
// someone else recorded.
//
// For any bytes, from_descent_format() either raises TraceFormatError that
// names the source first, or returns a Trace that survives what descent does
// with it (fuzz.h, use_loaded_trace): saved again it round-trips exactly,
// and it prints and exports to Chrome JSON whether or not its spans form a
// tree (the file says any ids, parents and times). Any other exception, a
// crash, a hang, or an ASan or UBSan report is a bug.
//
// Corpus: tests/fuzz/corpus/descent_format (the H200 trace of
// tests/tracer/data and small files that use every line type, escape and
// argument kind); dictionary: descent_format.dict.
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
    t = trace::from_descent_format(text, "fuzz.descent");
  } catch (const trace::TraceFormatError& e) {
    fuzz::check_error_names_source(e, "fuzz.descent");
    return 0;
  }
  fuzz::use_loaded_trace(t);
  return 0;
}
