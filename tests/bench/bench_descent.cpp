// descent's per-call costs in C++, with tracing compiled in: the dispatcher
// path of a 1-element add, an empty factory, and the tracer's own cost per
// span, on and off. Driven by bench.py, which sets them beside PyTorch's.
#include "floors/autograd/node.h"
#include "floors/dispatch/dispatcher.h"
#include "floors/dispatch/unboxed.h"
#include "floors/registration.h"
#include "tests/bench/timing.h"
#include "tracer/trace.h"

#include <barrier>
#include <chrono>
#include <thread>
#include <vector>
#if defined(__x86_64__)
#include <x86intrin.h>
#endif

using namespace descent;

namespace {

// One unit of real work (about 60 ns of integer mixing), with or without a span.
uint64_t work_unit(uint64_t x) {
  for (int i = 0; i < 48; ++i) x = (x ^ (x >> 13)) * 0x9E3779B97F4A7C15ull + uint64_t(i);
  return x;
}

// Wall time of `threads` threads doing `units` units each, every unit in a
// span when `traced`: the median of kReps runs after one warm-up run. The
// threads live through all runs (as a real program's pool does), so their
// trace buffers are already paged in after the warm-up.
double parallel_run_ns(int threads, long units, bool traced) {
  std::barrier sync(threads + 1);
  std::vector<uint64_t> sink(threads);
  std::vector<std::thread> pool;
  for (int t = 0; t < threads; ++t)
    pool.emplace_back([&, t] {
      uint64_t x = uint64_t(t) + 1;
      for (int r = 0; r <= bench::kReps; ++r) {
        sync.arrive_and_wait();  // go
        for (long i = 0; i < units; ++i) {
          DESCENT_SPAN(Kernels, "unit");
          x = work_unit(x);
        }
        sync.arrive_and_wait();  // done
      }
      sink[t] = x;
    });
  std::vector<double> runs;
  for (int r = 0; r <= bench::kReps; ++r) {
    if (traced) trace::start();
    auto t0 = std::chrono::steady_clock::now();
    sync.arrive_and_wait();
    sync.arrive_and_wait();
    auto t1 = std::chrono::steady_clock::now();
    if (traced) trace::stop();
    if (r > 0) runs.push_back(std::chrono::duration<double, std::nano>(t1 - t0).count());  // run 0 warms up
  }
  for (auto& th : pool) th.join();
  asm volatile("" : : "r"(sink.data()) : "memory");
  return bench::median(std::move(runs));
}

}  // namespace

int main() {
  descent::register_floors();  // Note [Registering the floors]
  Tensor a = call(Op::randn, DimVector{1});
  Tensor b = call(Op::randn, DimVector{1});
  const long n = 200000;

  // The boxed call (a Stack of IValues) and the typed one (Note [Boxed and unboxed calls]).
  bench::report("cpp_add_1elem", bench::median_ns_per_call([&] { Tensor c = call(Op::add, a, b); }, n));
  const TypedOp<Tensor(const Tensor&, const Tensor&, const Scalar&)> add(Op::add);
  const Scalar one(int64_t{1});
  bench::report("cpp_add_1elem_typed", bench::median_ns_per_call([&] { Tensor c = add.call(a, b, one); }, n));
  // With one input requiring grad, the Autograd kernel records an AddBackward0 (floor 4).
  Tensor w = call(Op::randn, DimVector{1});
  autograd::set_requires_grad(w, true);
  bench::report("cpp_add_1elem_grad", bench::median_ns_per_call([&] { Tensor c = add.call(w, b, one); }, n));
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
  bench::report("span_on", bench::median(on));
  bench::report("span_cost_calibrated", calibrated);
  bench::report("clock_read", bench::median_ns_per_call([] { (void)trace::now_ticks(); }, n));
#if defined(__x86_64__)
  // The counter read inline, 8 in a row: the hardware's own cost per read,
  // without the call that now_ticks() pays. A span cannot cost less than two.
  bench::report("clock_read_inline", bench::median_ns_per_call(
                                         [] {
                                           uint64_t sum = 0;
                                           for (int i = 0; i < 8; ++i) sum += __rdtsc();
                                           asm volatile("" : : "r"(sum));
                                         },
                                         n / 8) /
                                         8);
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
  const double add_traced = bench::median(traced);
  const double add_plain = bench::median_ns_per_call([&] { Tensor c = call(Op::add, a, b); }, n);
  bench::report("cpp_add_1elem_traced", add_traced);
  bench::report("spans_per_add", spans_per_call);
  bench::report("tracing_cost_per_span_in_add", (add_traced - add_plain) / spans_per_call);

  // Tracy's published 2.25 ns per zone is measured this way (its manual,
  // "Performance impact"): a workload on 12 threads, run with and without
  // profiling, the difference in wall time divided by all the zones. Each
  // thread pays that times the number of threads. The same here, on every
  // hardware thread, and its per-thread cost beside it.
  const int threads = std::max(1u, std::thread::hardware_concurrency());
  const long units = 200000;  // per thread: fits the chunks a recording keeps
  const double plain = parallel_run_ns(threads, units, false);
  const double traced_wall = parallel_run_ns(threads, units, true);
  const double per_span_wall = (traced_wall - plain) / double(threads * units);
  bench::report("tracy_method_threads", threads);
  bench::report("tracy_method_per_span_wall", per_span_wall);
  bench::report("tracy_method_per_span_per_thread", per_span_wall * threads);
  return 0;
}
