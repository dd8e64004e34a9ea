// The packed matmul's microkernels, one per vector unit (Note [Packed
// matmul], packed_matmul.cpp): the fused multiply-adds for AVX-512 and for
// AVX2 with FMA, each in four ways of reading its operands (Note [Panels read
// in place]), and the choice of one for the vector unit the matmul uses.
// packed_matmul.cpp alone includes it.
#pragma once

#include <cstdint>
#include <string_view>

#if defined(__x86_64__)
#include <immintrin.h>
#endif

#include "floors/kernels/kernels.h"

namespace descent::kernels::packed {

// c[0, mr) x [0, nr) (rows ldc apart) = (load ? c : 0) + the kc steps of an
// A panel times a B panel, each step one fused multiply-add per element. A
// panel is packed (lda or ldb unused) or read in place, its rows lda (its
// steps ldb) apart (Note [Panels read in place]).
template <typename T>
using MicroFn = void (*)(int64_t kc, const T* ap, int64_t lda, const T* bp, int64_t ldb, T* c, int64_t ldc, bool load);

// How many steps ahead the microkernel asks for B (and a packed A). On the
// H200 host, in paired turns of one process beside torch, at 512^2 and
// 2048^2 on one thread and on 16 (docs/BENCHMARKS.md, session 10): 16 steps
// ahead took less of torch's time than no prefetch in all four products of
// two calls (in the second, 1.03 against 1.09x at 512^2 on one thread, 0.83
// against 0.89 on 16; at 2048^2 on one thread 1.15 against 1.17, within
// that call's noise of up to 5%). 8 steps ahead beat 16 in three of those
// eight, 24 in one of four (and tied in another).
constexpr int64_t kPrefetchSteps = 16;

template <typename T>
struct Micro {
  MicroFn<T> fn[2][2] = {};  // [A read in place][B read in place]; null: this CPU has no FMA unit for it
  int64_t mr = 1, nr = 1;
  bool ok() const { return fn[0][0] != nullptr; }
};

#if defined(__x86_64__)
// The same microkernel in each unit's words. GCC inlines a function built for
// one instruction set only into a function built for the same, so each unit
// has its own helpers (V<T>), and the loop (packed_micro.inc) is compiled
// once inside each unit's namespace with that unit's instruction set on.
namespace avx512 {
#define DESCENT_TARGET gnu::target("avx512f"), gnu::always_inline
template <typename T>
struct V;
template <>
struct V<float> {
  using R = __m512;
  static constexpr int kLanes = 16;
  [[DESCENT_TARGET]] static inline R load(const float* p) { return _mm512_loadu_ps(p); }
  [[DESCENT_TARGET]] static inline void store(float* p, R v) { _mm512_storeu_ps(p, v); }
  [[DESCENT_TARGET]] static inline R zero() { return _mm512_setzero_ps(); }
  [[DESCENT_TARGET]] static inline R splat(float x) { return _mm512_set1_ps(x); }
  [[DESCENT_TARGET]] static inline R fma(R a, R b, R c) { return _mm512_fmadd_ps(a, b, c); }
};
template <>
struct V<double> {
  using R = __m512d;
  static constexpr int kLanes = 8;
  [[DESCENT_TARGET]] static inline R load(const double* p) { return _mm512_loadu_pd(p); }
  [[DESCENT_TARGET]] static inline void store(double* p, R v) { _mm512_storeu_pd(p, v); }
  [[DESCENT_TARGET]] static inline R zero() { return _mm512_setzero_pd(); }
  [[DESCENT_TARGET]] static inline R splat(double x) { return _mm512_set1_pd(x); }
  [[DESCENT_TARGET]] static inline R fma(R a, R b, R c) { return _mm512_fmadd_pd(a, b, c); }
};
#undef DESCENT_TARGET

#pragma GCC push_options
#pragma GCC target("avx512f")
#include "floors/kernels/cpu/packed_micro.inc"
#pragma GCC pop_options
}  // namespace avx512

namespace avx2 {
#define DESCENT_TARGET gnu::target("avx2,fma"), gnu::always_inline
template <typename T>
struct V;
template <>
struct V<float> {
  using R = __m256;
  static constexpr int kLanes = 8;
  [[DESCENT_TARGET]] static inline R load(const float* p) { return _mm256_loadu_ps(p); }
  [[DESCENT_TARGET]] static inline void store(float* p, R v) { _mm256_storeu_ps(p, v); }
  [[DESCENT_TARGET]] static inline R zero() { return _mm256_setzero_ps(); }
  [[DESCENT_TARGET]] static inline R splat(float x) { return _mm256_set1_ps(x); }
  [[DESCENT_TARGET]] static inline R fma(R a, R b, R c) { return _mm256_fmadd_ps(a, b, c); }
};
template <>
struct V<double> {
  using R = __m256d;
  static constexpr int kLanes = 4;
  [[DESCENT_TARGET]] static inline R load(const double* p) { return _mm256_loadu_pd(p); }
  [[DESCENT_TARGET]] static inline void store(double* p, R v) { _mm256_storeu_pd(p, v); }
  [[DESCENT_TARGET]] static inline R zero() { return _mm256_setzero_pd(); }
  [[DESCENT_TARGET]] static inline R splat(double x) { return _mm256_set1_pd(x); }
  [[DESCENT_TARGET]] static inline R fma(R a, R b, R c) { return _mm256_fmadd_pd(a, b, c); }
};
#undef DESCENT_TARGET

#pragma GCC push_options
#pragma GCC target("avx2,fma")
#include "floors/kernels/cpu/packed_micro.inc"
#pragma GCC pop_options
}  // namespace avx2
#endif

// The microkernel for the vector unit the matmul uses (matmul_isa(): the
// widest, or the one set_matmul_isa chose); none without FMA.
template <typename T>
Micro<T> micro_for_isa() {
#if defined(__x86_64__)
  const std::string_view isa = matmul_isa();
  const auto of = [](const MicroFn<T>(&fns)[2][2], int64_t mr, int64_t nr) {
    Micro<T> m;
    for (int i = 0; i < 2; ++i)
      for (int j = 0; j < 2; ++j) m.fn[i][j] = fns[i][j];
    m.mr = mr, m.nr = nr;
    return m;
  };
  if (isa == "avx512") return of(avx512::kMicros<T, 12, 2>, 12, 2 * avx512::V<T>::kLanes);
  __builtin_cpu_init();
  if (isa == "avx2" && __builtin_cpu_supports("fma")) return of(avx2::kMicros<T, 6, 2>, 6, 2 * avx2::V<T>::kLanes);
#endif
  return {};
}

}  // namespace descent::kernels::packed
