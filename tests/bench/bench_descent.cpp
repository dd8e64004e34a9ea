// descent's per-call costs in C++, with tracing compiled in: the dispatcher
// path of a 1-element add, an empty factory, and the tracer's own cost per
// span, on and off. Driven by bench.py, which sets them beside PyTorch's.
#include "floors/dispatch/dispatcher.h"
#include "tests/bench/timing.h"
#include "tracer/trace.h"

#include <vector>
#if defined(__x86_64__)
#include <x86intrin.h>
#endif

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
#if defined(__x86_64__)
  // The counter read inline, 8 in a row: the hardware's own cost per read,
  // without the call that now_ticks() pays. A span cannot cost less than two.
  bench::report("clock_read_inline", bench::median_ns_per_call([] {
    uint64_t sum = 0;
    for (int i = 0; i < 8; ++i) sum += __rdtsc();
    asm volatile("" : : "r"(sum));
  }, n / 8) / 8);
#endif

  // What tracing adds to a real call: the traced add minus the plain one,
  // per span recorded. One recording first, so that the buffer's pages are
  // already touched (a first recording also times page faults).
  const long traced_calls = 2000;
  trace::start();
  for (long i = 0; i < traced_calls; ++i) Tensor c = call(Op::add, a, b);
  const double spans_per_call = double(trace::stop().spans.size()) / double(traced_calls);
  std::vector<double> traced;
  for (int r = 0; r < bench::kReps; ++r) {
    trace::start();
    traced.push_back(bench::median_ns_per_call([&] { Tensor c = call(Op::add, a, b); }, traced_calls / bench::kReps));
    trace::stop();
  }
  std::sort(traced.begin(), traced.end());
  const double add_traced = traced[bench::kReps / 2];
  const double add_plain = bench::median_ns_per_call([&] { Tensor c = call(Op::add, a, b); }, n);
  bench::report("cpp_add_1elem_traced", add_traced);
  bench::report("spans_per_add", spans_per_call);
  bench::report("tracing_cost_per_span_in_add", (add_traced - add_plain) / spans_per_call);
  return 0;
}
