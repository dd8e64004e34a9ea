// The timing method shared by descent's benchmarks and their PyTorch twins:
// warm up, then the median over kReps repetitions of kIters calls each.
#pragma once

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <utility>
#include <vector>

namespace bench {

constexpr int kReps = 7;

// The middle value (kReps is odd, so there is one).
inline double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

template <typename Fn>
double median_ns_per_call(Fn&& fn, long iters) {
  for (long i = 0; i < std::min(iters, 2000L); ++i) fn();  // warm-up
  std::vector<double> per_call;
  for (int r = 0; r < kReps; ++r) {
    auto t0 = std::chrono::steady_clock::now();
    for (long i = 0; i < iters; ++i) fn();
    auto t1 = std::chrono::steady_clock::now();
    per_call.push_back(std::chrono::duration<double, std::nano>(t1 - t0).count() / double(iters));
  }
  return median(std::move(per_call));
}

// One JSON object per line: {"name": ..., "ns": ...}
inline void report(const char* name, double ns) { std::printf("{\"name\": \"%s\", \"ns\": %.2f}\n", name, ns); }

}  // namespace bench
