// descent's per-call costs in C++, with tracing compiled in: the dispatcher
// path of a 1-element add, an empty factory, and the tracer's own cost per
// span, on and off. Driven by bench.py, which sets them beside PyTorch's.
#include "floors/dispatch/dispatcher.h"
#include "tests/bench/timing.h"
#include "tracer/trace.h"

#include <vector>

using namespace descent;

int main() {
  Tensor a = call(Op::randn, DimVector{1});
  Tensor b = call(Op::randn, DimVector{1});
  const long n = 200000;

  bench::report("cpp_add_1elem", bench::median_ns_per_call([&] { Tensor c = call(Op::add, a, b); }, n));
  bench::report("cpp_empty_0", bench::median_ns_per_call([&] { Tensor c = call(Op::empty, DimVector{0}); }, n));
  bench::report("span_off", bench::median_ns_per_call([] { DESCENT_SPAN(Kernels, "bench"); }, 10 * n));

  // Tracing on: one begin/end pair per call, 20000 per recording (a
  // recording of millions of spans would time page faults, not the tracer).
  std::vector<double> on;
  double calibrated = 0;
  for (int r = 0; r < bench::kReps; ++r) {
    trace::start();
    on.push_back(bench::median_ns_per_call([] { DESCENT_SPAN(Kernels, "bench"); }, 20000 / bench::kReps));
    calibrated = trace::stop().span_cost_ns;
  }
  std::sort(on.begin(), on.end());
  bench::report("span_on", on[bench::kReps / 2]);
  bench::report("span_cost_calibrated", calibrated);
  bench::report("clock_read", bench::median_ns_per_call([] { (void)trace::now_ticks(); }, n));

  trace::start();
  double add_traced = bench::median_ns_per_call([&] { Tensor c = call(Op::add, a, b); }, n / 10);
  trace::stop();
  bench::report("cpp_add_1elem_traced", add_traced);
  return 0;
}
