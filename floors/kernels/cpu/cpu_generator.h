// The CPU's random numbers: PyTorch's CPU generator (a 32-bit Mersenne
// Twister) and the draws aten makes from it, so that a seeded CPU call gives
// torch's numbers. The devices keep their counter-based generator (random.h).
//
// [SECTION] The engine: mt19937
// [SECTION] The generator: random(), random64() and the cached normal
// [SECTION] Distributions: one value
// [SECTION] torch's AVX2 Box-Muller: avx_mathfun's log and sincos, one lane
// [SECTION] Fills: rand, randn, randint, randperm
//
// Note [PyTorch's CPU random stream]
// ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
// A learner's notebook says torch.manual_seed(0) and prints torch.randn(3):
// tensor([ 1.5410, -0.2934, -2.1788]). descent.manual_seed(0);
// descent.randn(3) prints the same, because descent's CPU draws its numbers
// the way aten's CPUGeneratorImpl does (aten/src/ATen/CPUGeneratorImpl.cpp,
// core/MT19937RNGEngine.h, core/DistributionsHelper.h,
// core/TransformationHelper.h, native/cpu/DistributionTemplates.h,
// native/TensorFactories.cpp):
//   - the engine is MT19937, the 32-bit Mersenne Twister (Matsumoto and
//     Nishimura, 1998), seeded with the low 32 bits of the seed by the
//     standard init_genrand, so its words are std::mt19937(seed mod 2**32)'s:
//     2357136044 first for seed 0, 3499211612 for 5489. manual_seed(2**32)
//     replays manual_seed(0) on the CPU (not on a device);
//   - random() is one word, random64() two: (first << 32) | second;
//   - a uniform keeps the LOW bits of its draw: float32 the low 24 of one
//     word, float64 the low 53 of random64(), float16 11 and bfloat16 8 (the
//     type's digits), times 2**-digits: a multiple of 2**-digits in [0, 1),
//     exact in the type. rand is that, one draw per element in order;
//   - randn has two algorithms, chosen by the tensor (normal_kernel):
//     * 16 elements or more, contiguous (every randn here): all n uniforms
//       first, in the tensor's type, then Box-Muller over each block of 16,
//       pairing element j with j + 8: u1 = 1 - x[j] (in (0, 1], for the log),
//       u2 = x[j + 8], r = sqrt(-2 log u1), theta = 2 pi u2, x[j] = r cos
//       theta, x[j + 8] = r sin theta, computed in the tensor's type (theta
//       in double, then rounded to it; float32 has its own kernel on x86,
//       below). When n is not a multiple of 16, 16 fresh uniforms overwrite
//       the last 16 elements, which are transformed once more: randn(17)
//       draws 17 + 16 uniforms, and its element 0 comes from the first
//       block, elements 1 to 16 from the second;
//     * fewer than 16: one sample per element of normal_distribution<double>:
//       two float64 uniforms (four words), r = sqrt(-2 log1p(-u2)), theta = 2
//       pi u1 (u1 is the angle here, not the radius), r cos theta returned
//       and r sin theta kept in the generator for the next such sample, even
//       in the next call: randn(3) is pair 1's cosine, its sine, pair 2's
//       cosine, and pair 2's sine is the first element of the next small
//       randn. manual_seed forgets it. The fills of the first algorithm
//       neither read nor clear it. The sample is rounded from double to the
//       tensor's type;
//   - randint(low, high) / random_(from, to): random() % (high - low) + low,
//     random64() instead when the range is 2**32 or more (for int64, float,
//     double and bfloat16 results);
//   - randperm(n): arange(n), then for i from 0 to n - 2 swap element i with
//     element i + random() % (n - i) (n below 2**32 / 20; above, an
//     inside-out Fisher-Yates on random64()).
// The log, sine and cosine are glibc's (std::log, std::sin, std::cos on
// float or double), as in torch's scalar code.
//
// Note [torch's x86 kernels fuse * std + mean]
// ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
// aten's CPU distribution kernels are compiled once per CPU capability, the
// AVX2 and AVX-512 ones with -mfma, and GCC contracts `z * std + mean` into
// one fused multiply-add there: torch 2.11's float64 normal_(2, 3) on x86
// is fma(z, 3, 2), which is 1 ulp from z * 3 + 2 for about one element in
// four. descent writes the std::fma out (randn's std of 1 and mean of 0 give
// z either way); torch built for its default capability (no FMA) rounds twice.
//
// Only the CPU's numbers are torch's. PyTorch's CUDA generator is a Philox
// too, but it deals its counters to threads its own way (curand states,
// four numbers a thread): sim:0 and cuda:N keep descent's own counter-based
// stream (Note [Counter-based random numbers], random.h), so a seeded
// descent.randn(3, device="cuda") is not torch's, as torch's CUDA numbers
// are not its CPU ones. manual_seed seeds both generators, as torch's does.
//
// Where torch itself varies, descent follows one side:
//   - float32 randn of 16 or more: torch's x86 kernel, whose Box-Muller is
//     not glibc's (Note [torch's AVX2 Box-Muller]); torch built without AVX2
//     (ARM, or ATEN_CPU_CAPABILITY=default) runs the scalar code above, which
//     descent runs for float64;
//   - float16 and bfloat16: the computation in the type itself, every
//     operation and math function rounded to it (c10's Half arithmetic and
//     BFloat16-math.h), as torch long did; torch of 2026 computes them in
//     float32 and rounds once (which side a given torch is on, the check
//     below tells).
// tools/torch-random-check.py prints descent's numbers beside torch's.
#pragma once

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdint>
#include <mutex>
#include <type_traits>

#include "floors/core/half.h"  // Half, BFloat16, float_bits, bits_float

namespace descent::kernels {

// [SECTION] The engine: mt19937 ---------------------------------------------------

// MT19937, the 32-bit Mersenne Twister: 624 words of state, tempered on the
// way out. Written from the 1998 paper and the reference mt19937ar.c.
class Mt19937 {
 public:
  static constexpr int kStateWords = 624;   // n
  static constexpr int kShiftWords = 397;   // m
  explicit Mt19937(uint64_t seed = 5489) {  // 5489: the reference's default seed
    state_[0] = uint32_t(seed);             // the low 32 bits, as at::mt19937
    for (int i = 1; i < kStateWords; ++i)
      state_[i] = 1812433253u * (state_[i - 1] ^ (state_[i - 1] >> 30)) + uint32_t(i);
    next_ = kStateWords;  // the first draw regenerates
  }
  uint32_t operator()() {
    if (next_ == kStateWords) regenerate();
    uint32_t y = state_[next_++];
    y ^= y >> 11;
    y ^= (y << 7) & 0x9d2c5680u;
    y ^= (y << 15) & 0xefc60000u;
    y ^= y >> 18;
    return y;
  }

 private:
  // The twist: each word from the top bit of itself, the low 31 of the next,
  // and the word m ahead (wrapping), all 624 at once.
  void regenerate() {
    for (int i = 0; i < kStateWords; ++i) {
      const uint32_t y = (state_[i] & 0x80000000u) | (state_[(i + 1) % kStateWords] & 0x7fffffffu);
      state_[i] = state_[(i + kShiftWords) % kStateWords] ^ (y >> 1) ^ ((y & 1u) ? 0x9908b0dfu : 0u);
    }
    next_ = 0;
  }
  std::array<uint32_t, kStateWords> state_;
  int next_;  // the word the next draw tempers
};

// [SECTION] The generator: random(), random64() and the cached normal -------------

// aten's CPUGeneratorImpl: the engine and the second sample of the last
// Box-Muller pair of normal_double() (its next_double_normal_sample).
struct CpuGenerator {
  Mt19937 engine;
  bool has_next_normal = false;
  double next_normal = 0;

  void seed(uint64_t s) {  // torch's set_current_seed
    engine = Mt19937(s);
    has_next_normal = false;
  }
  uint32_t random() { return engine(); }
  uint64_t random64() {
    const uint32_t hi = engine();
    const uint32_t lo = engine();
    return (uint64_t(hi) << 32) | lo;
  }
};

// The CPU generator, held for the caller's scope (torch's generator->mutex_):
// a fill draws its numbers in one piece. Defined in factories.cpp.
struct LockedCpuGenerator {
  std::unique_lock<std::mutex> lock;
  CpuGenerator& gen;
};
LockedCpuGenerator lock_cpu_generator();

// [SECTION] Distributions: one value ----------------------------------------------

inline constexpr double kPi = 3.14159265358979323846;

// The mantissa digits a uniform keeps (std::numeric_limits<T>::digits), and
// the type it is computed in (aten's dist_acctype: float but for double).
template <class T>
inline constexpr int kUniformDigits = std::is_same_v<T, double>  ? 53
                                      : std::is_same_v<T, float> ? 24
                                      : std::is_same_v<T, Half>  ? 11
                                                                 : 8;
template <class T>
using dist_acc_t = std::conditional_t<std::is_same_v<T, double>, double, float>;

// uniform_real_distribution<T>(from, to): the low kUniformDigits<T> bits of
// one draw (random64() for double), scaled to [0, 1), then x * (to - from) + from
// as one fused multiply-add: aten's CPU kernel is built for AVX2 with FMA, and
// the compiler contracts that line. Measured beside torch 2.11 on the H100
// host: uniform_(-2, 3) of 20 float32 differed from torch's in 8 values by
// 1-2 ulps with a separate multiply and add; the fused one, rounded once,
// gave torch's value in each of them (x * 1 + 0, rand's, is exact either way).
template <class T>
dist_acc_t<T> uniform_real(CpuGenerator& g, T from, T to) {
  using Acc = dist_acc_t<T>;
  constexpr int digits = kUniformDigits<T>;
  const uint64_t word = std::is_same_v<T, double> ? g.random64() : uint64_t(g.random());
  const Acc x = Acc(word & ((uint64_t(1) << digits) - 1)) * (Acc(1) / Acc(uint64_t(1) << digits));
  const T span = T(Acc(to) - Acc(from));  // in T: a Half minus a Half is a Half
  return std::fma(x, Acc(span), Acc(from));
}

// normal_distribution<double>(mean, std): Box-Muller on two float64
// uniforms, the sine kept for the next call (Note [PyTorch's CPU random
// stream]); z * std + mean, in double, one fused multiply-add (Note [torch's
// x86 kernels fuse * std + mean]).
inline double normal_double(CpuGenerator& g, double mean = 0.0, double std = 1.0) {
  if (g.has_next_normal) {
    g.has_next_normal = false;
    return std::fma(g.next_normal, std, mean);
  }
  const double u1 = uniform_real<double>(g, 0.0, 1.0);
  const double u2 = uniform_real<double>(g, 0.0, 1.0);
  const double r = std::sqrt(-2.0 * std::log1p(-u2));
  const double theta = 2.0 * kPi * u1;
  g.next_normal = r * std::sin(theta);
  g.has_next_normal = true;
  return std::fma(r * std::cos(theta), std, mean);
}

// uniform_int_from_to_distribution<T>(range, base): (word % range) + base,
// the word 64 bits wide for a range of 2**32 or more in int64, float, double
// or bfloat16 (the types that can tell such numbers apart).
template <class T>
T random_from_to(CpuGenerator& g, uint64_t range, int64_t base) {
  constexpr bool wide_type = std::is_same_v<T, int64_t> || std::is_same_v<T, double> || std::is_same_v<T, float> ||
                             std::is_same_v<T, BFloat16>;
  const uint64_t word = wide_type && range >= (uint64_t(1) << 32) ? g.random64() : uint64_t(g.random());
  const int64_t v = int64_t(word % range + uint64_t(base));  // wraps as aten's (val % range) + base does
  if constexpr (is_reduced_float_v<T>)
    return T(float(v));
  else
    return T(v);
}

// [SECTION] torch's AVX2 Box-Muller: avx_mathfun's log and sincos, one lane -----------

// Note [torch's AVX2 Box-Muller]
// ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
// On x86, torch's float32 randn of 16 elements or more runs normal_fill_AVX2
// (native/cpu/DistributionTemplates.h): aten registers its distribution
// kernels with REGISTER_DISPATCH, which leaves the AVX-512 slot empty, so an
// AVX-512 CPU runs the AVX2 build too. That kernel computes eight pairs at a
// time with avx_mathfun.h's log256_ps and sincos256_ps, Julien Pommier's
// vector versions of Cephes' logf, sinf and cosf, and its theta is float32's
// 2 pi (6.2831855f) times u2 in float32, not the double product of the
// scalar code. Those polynomials are not glibc's functions, and the last bit
// of a result differs often, so descent computes them too, lane by lane:
// the same constants and steps, in the same order. One more thing decides
// the bits: GCC compiles the intrinsics of that header as plain vector
// arithmetic and, under its default -ffp-contract=fast with -mfma, fuses a
// multiply whose only use is an add or subtract into one fused
// multiply-add. The std::fma calls below are those fusions, found by
// compiling the header's steps with g++ -O2 -mavx2 -mfma and comparing
// every float32 uniform (all 2**24 of them) lane by lane: the Horner steps
// of each polynomial, the three-part range reduction of sincos, and the
// products that meet an add. std::fma rounds once on every machine, so
// descent's numbers do not depend on its own compiler flags.

// log256_ps for one lane x in (0, 1]: x = m * 2**e with m in [sqrt(1/2),
// sqrt(2)), then log(1 + (m - 1)) by Cephes' polynomial, plus e log 2 in two
// parts. (x <= 0 gives a NaN, as the vector code's all-ones mask does.)
inline float avx2_log(float x) {
  if (!(x > 0.0f)) return bits_float(0xffffffffu);
  // The constants are double literals rounded to float, as the header's float arrays hold them.
  constexpr float kPoly[] = {float(7.0376836292E-2),  float(-1.1514610310E-1), float(1.1676998740E-1),
                             float(-1.2420140846E-1), float(+1.4249322787E-1), float(-1.6668057665E-1),
                             float(+2.0000714765E-1), float(-2.4999993993E-1), float(+3.3333331174E-1)};
  constexpr float kLog2Lo = float(-2.12194440e-4), kLog2Hi = float(0.693359375);  // log 2 = hi + lo
  constexpr float kSqrtHalf = float(0.707106781186547524);
  x = std::max(x, bits_float(0x00800000u));  // no subnormals
  const uint32_t bits = float_bits(x);
  float e = float(int32_t(bits >> 23) - 0x7f) + 1.0f;
  float m = bits_float((bits & ~0x7f800000u) | float_bits(0.5f));  // the mantissa, in [0.5, 1)
  const bool below = m < kSqrtHalf;                                // then m + m - 1, one exponent less
  const float kept = below ? m : 0.0f;
  m = m - 1.0f;
  e = e - (below ? 1.0f : 0.0f);
  m = m + kept;
  const float z = m * m;
  float y = std::fma(kPoly[0], m, kPoly[1]);
  for (int k = 2; k < 9; ++k) y = std::fma(y, m, kPoly[k]);
  y = y * m;
  y = std::fma(y, z, e * kLog2Lo);
  y = std::fma(-z, 0.5f, y);
  return std::fma(e, kLog2Hi, m + y);
}

// sincos256_ps for one lane: x reduced by multiples of pi/4 (j, even) in
// three parts, then Cephes' sine and cosine polynomials on the remainder,
// swapped and signed by j.
inline void avx2_sincos(float x, float* sin_out, float* cos_out) {
  constexpr float kFourOverPi = float(1.27323954473516);
  constexpr float kDP1 = float(-0.78515625), kDP2 = float(-2.4187564849853515625e-4),
                  kDP3 = float(-3.77489497744594108e-8);  // -pi/4 in three parts
  constexpr float kSin[] = {float(-1.9515295891E-4), float(8.3321608736E-3), float(-1.6666654611E-1)};
  constexpr float kCos[] = {float(2.443315711809948E-005), float(-1.388731625493765E-003),
                            float(4.166664568298827E-002)};
  uint32_t sin_sign = float_bits(x) & 0x80000000u;
  x = bits_float(float_bits(x) & 0x7fffffffu);
  int32_t j = int32_t(x * kFourOverPi);  // truncates, as cvttps
  j = (j + 1) & ~1;
  const float y = float(j);
  sin_sign ^= uint32_t(j & 4) << 29;
  const uint32_t cos_sign = uint32_t(~(j - 2) & 4) << 29;
  const bool sine_from_sin_poly = (j & 2) == 0;  // the vector code's poly_mask
  x = std::fma(y, kDP1, x);
  x = std::fma(y, kDP2, x);
  x = std::fma(y, kDP3, x);
  const float z = x * x;
  float c = std::fma(kCos[0], z, kCos[1]);
  c = std::fma(c, z, kCos[2]);
  c = c * z;
  c = std::fma(c, z, -(z * 0.5f));
  c = c + 1.0f;
  float s = std::fma(kSin[0], z, kSin[1]);
  s = std::fma(s, z, kSin[2]);
  s = s * z;
  s = std::fma(s, x, x);
  // The vector code's select, its subtractions and additions of zeros included.
  const float s_part = sine_from_sin_poly ? s : 0.0f, c_part = sine_from_sin_poly ? 0.0f : c;
  s = s - s_part;
  c = c - c_part;
  *sin_out = bits_float(float_bits(c_part + s_part) ^ sin_sign);
  *cos_out = bits_float(float_bits(c + s) ^ cos_sign);
}

// normal_fill_16_AVX2: torch's float32 block on x86 (Note [torch's AVX2 Box-Muller]).
inline void avx2_box_muller_16(float* x, float mean, float std) {
  constexpr float kTwoPi = float(2.0 * kPi);  // 6.2831855f
  for (int j = 0; j < 8; ++j) {
    const float u1 = 1.0f - x[j], u2 = x[j + 8];
    const float radius = std::sqrt(-2.0f * avx2_log(u1));
    float s, c;
    avx2_sincos(kTwoPi * u2, &s, &c);
    x[j] = std::fma(radius * c, std, mean);
    x[j + 8] = std::fma(radius * s, std, mean);
  }
}

// [SECTION] Fills: rand, randn, randint, randperm -------------------------------------

// rand: n uniforms in [0, 1), one draw each, in order.
template <class T>
void uniform_fill(CpuGenerator& g, T* out, int64_t n) {
  for (int64_t i = 0; i < n; ++i) out[i] = T(uniform_real<T>(g, T(0.0f), T(1.0f)));
}

// Box-Muller over one block of 16 uniforms, in place: element j (j < 8) and
// j + 8 make a pair; every operation in T, as torch's normal_fill_16. The
// final "* std + mean" also turns a -0.0 (a radius of 0) into +0.0, as in torch.
template <class T>
void box_muller_16(T* x, T mean, T std) {
  for (int j = 0; j < 8; ++j) {
    if constexpr (is_reduced_float_v<T>) {  // each operation and math function rounds to T
      auto mul = [](T a, T b) { return T(float(a) * float(b)); };
      const T u1 = T(1.0f - float(x[j]));
      const T radius = T(std::sqrt(float(T(-2.0f * float(T(std::log(float(u1))))))));
      const T theta = T(float(2.0 * kPi * double(float(x[j + 8]))));
      const T c = T(std::cos(float(theta))), s = T(std::sin(float(theta)));
      x[j] = T(float(mul(mul(radius, c), std)) + float(mean));
      x[j + 8] = T(float(mul(mul(radius, s), std)) + float(mean));
    } else {
      const T u1 = T(1) - x[j];  // [0, 1) -> (0, 1] for the log
      const T radius = std::sqrt(T(-2) * std::log(u1));
      const T theta = T(2.0 * kPi * double(x[j + 8]));       // the product in double, then rounded to T
      x[j] = std::fma(radius * std::cos(theta), std, mean);  // Note [torch's x86 kernels fuse * std + mean]
      x[j + 8] = std::fma(radius * std::sin(theta), std, mean);
    }
  }
}

// normal_(mean, std) (randn: 0, 1) into a contiguous out: torch's
// normal_fill from 16 elements on, mean and std in T; else one
// normal_double() per element (Note [PyTorch's CPU random stream]).
template <class T>
void normal_fill(CpuGenerator& g, T* out, int64_t n, double mean = 0.0, double std = 1.0) {
  constexpr int64_t kBlock = 16;  // elements a Box-Muller block transforms
  auto to_t = [](double v) {      // a double to T: through float for the 16-bit types, as c10's Half(double)
    if constexpr (is_reduced_float_v<T>)
      return T(float(v));
    else
      return T(v);
  };
  if (n < kBlock) {
    for (int64_t i = 0; i < n; ++i) out[i] = to_t(normal_double(g, mean, std));
    return;
  }
  const T mean_t = to_t(mean), std_t = to_t(std);
  uniform_fill(g, out, n);
  auto block = [&](T* x) {  // float32: torch's x86 kernel (Note [torch's AVX2 Box-Muller])
    if constexpr (std::is_same_v<T, float>)
      avx2_box_muller_16(x, mean_t, std_t);
    else
      box_muller_16(x, mean_t, std_t);
  };
  for (int64_t i = 0; i + kBlock <= n; i += kBlock) block(out + i);
  if (n % kBlock != 0) {  // the tail: the last 16 elements again, from fresh uniforms
    T* last = out + n - kBlock;
    uniform_fill(g, last, kBlock);
    block(last);
  }
}

// randint(low, high) into out: random_from_to with range high - low.
template <class T>
void random_from_to_fill(CpuGenerator& g, T* out, int64_t n, uint64_t range, int64_t base) {
  for (int64_t i = 0; i < n; ++i) out[i] = random_from_to<T>(g, range, base);
}

// randperm(n) into out (torch's randperm_cpu): for small n, arange then a
// swap of element i with i + random() % (n - i) for each i but the last;
// for n of 2**32 / 20 or more, the inside-out Fisher-Yates on random64().
template <class T>
void randperm_fill(CpuGenerator& g, T* out, int64_t n) {
  auto value = [](int64_t i) {
    if constexpr (is_reduced_float_v<T>)
      return T(float(i));
    else
      return T(i);
  };
  if (n < int64_t(UINT32_MAX / 20)) {
    for (int64_t i = 0; i < n; ++i) out[i] = value(i);
    for (int64_t i = 0; i + 1 < n; ++i) {
      const int64_t z = int64_t(g.random()) % (n - i);
      const T saved = out[i];
      out[i] = out[z + i];
      out[z + i] = saved;
    }
    return;
  }
  for (int64_t i = 0; i < n; ++i) {
    const int64_t z = int64_t(g.random64() % uint64_t(i + 1));
    out[i] = out[z];
    out[z] = value(i);
  }
}

}  // namespace descent::kernels
