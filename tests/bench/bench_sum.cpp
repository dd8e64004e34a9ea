// The reduction benchmark: float32 and float64 sums of 64 MiB, the median of
// 7 calls after a warm-up, on one thread and on two (Note [Cascade summation],
// floors/kernels/cpu/reference.cpp; the loops are in floors/kernels/cpu/optimized.cpp).
//
//     build/tests/bench/bench_sum
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <vector>

#include "floors/kernels/kernels.h"
#include "floors/kernels/cpu/parallel.h"
#include "floors/registration.h"

using namespace descent;

template <class F>
double median_ms(F f) {
  f();
  std::vector<double> t;
  for (int i = 0; i < 7; ++i) {
    auto a = std::chrono::steady_clock::now();
    f();
    t.push_back(std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - a).count());
  }
  std::sort(t.begin(), t.end());
  return t[3];
}

int main() {
  descent::register_floors();  // Note [Registering the floors]
  Tensor x = call(Op::full, DimVector{1 << 24}, 0.5, ScalarType::Float32);
  Tensor m = call(Op::full, DimVector{4096, 4096}, 0.5, ScalarType::Float32);
  Tensor d = call(Op::full, DimVector{1 << 23}, 0.5, ScalarType::Float64);
  for (int threads : {1, 2}) {
    kernels::set_num_threads(threads);
    std::printf(
        "threads=%d  sum 2^24 f32: %.2f ms  4096x4096.sum(1): %.2f ms  .sum(0): %.2f ms  sum 2^23 f64: %.2f ms\n",
        threads, median_ms([&] { call(Op::sum, x); }), median_ms([&] { call(Op::sum_dim, m, DimVector{1}); }),
        median_ms([&] { call(Op::sum_dim, m, DimVector{0}); }), median_ms([&] { call(Op::sum, d); }));
  }
}
