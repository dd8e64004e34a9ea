// descent's per-call costs in C++, with tracing compiled in: the dispatcher
// path of a 1-element add, an empty factory, and the tracer's own cost per
// span, on and off. Driven by bench.py, which sets them beside PyTorch's.
#include "floors/dispatch/dispatcher.h"
#include "tests/bench/timing.h"
#include "tracer/trace.h"

using namespace descent;

int main() {
  Tensor a = call(Op::randn, DimVector{1});
  Tensor b = call(Op::randn, DimVector{1});
  const long n = 200000;

  bench::report("cpp_add_1elem", bench::median_ns_per_call([&] { Tensor c = call(Op::add, a, b); }, n));
  bench::report("cpp_empty_0", bench::median_ns_per_call([&] { Tensor c = call(Op::empty, DimVector{0}); }, n));
  bench::report("span_off", bench::median_ns_per_call([] { DESCENT_SPAN(Kernels, "bench"); }, 10 * n));

  // Tracing on: one begin/end pair per call. Restart the recording between
  // repetitions so the buffers stay bounded.
  trace::start();
  double on = bench::median_ns_per_call([] { DESCENT_SPAN(Kernels, "bench"); }, n);
  trace::Trace t = trace::stop();
  bench::report("span_on", on);
  bench::report("span_cost_calibrated", t.span_cost_ns);

  trace::start();
  double add_traced = bench::median_ns_per_call([&] { Tensor c = call(Op::add, a, b); }, n / 10);
  trace::stop();
  bench::report("cpp_add_1elem_traced", add_traced);
  return 0;
}
