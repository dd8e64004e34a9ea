// float16 and bfloat16: two 16-bit floats, stored as bits and computed in float.
//
// Note [Reduced-precision floats]
// ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
// float16 (IEEE binary16: 1 sign bit, 5 exponent bits, 10 mantissa bits;
// largest 65504, smallest normal 2**-14) and bfloat16 (the top half of a
// float32: 8 exponent bits, 7 mantissa bits; float32's range at a quarter of
// its digits) halve the memory and the bandwidth of float32. GPUs have
// tensor cores that multiply them; no x86 core before AVX-512 FP16 does
// arithmetic on them at all. So descent, like PyTorch (c10::Half,
// c10::BFloat16), stores them as 16 bits and computes in float32:
//   - an element function (elementwise.h) reads its operands as float32,
//     computes in float32 and rounds the result once to the tensor's dtype
//     (PyTorch's "opmath" type): a * b + c on float16 is one rounding, not
//     three, on the CPU, the simulated device and CUDA alike;
//   - sums, means and matrix products accumulate in float32 and round the
//     total once (opmath_t below: PyTorch's opmath_type and acc_type);
//   - a conversion from float32 rounds to the nearest value, ties to even,
//     as the hardware does; a value past the largest becomes infinity, and
//     every NaN becomes the quiet NaN (0x7e00, 0x7fc0) with its sign as
//     c10's do. From float64 or int64 the value goes through float32 first,
//     as in PyTorch (so it can round twice).
// The conversions are integer arithmetic on the bits, written once for the
// host and the GPU (DESCENT_HD), so every device rounds alike: the verifier
// holds float16 and bfloat16 to the same bit-for-bit claims as float32
// where the op is exact.
#pragma once

#include <cstdint>
#include <cstring>
#include <type_traits>

// DESCENT_HD marks a function that nvcc compiles for the GPU as well as the
// host: the element functions, these conversions and the kernel bodies run
// unchanged in the CPU loops, the simulated device's blocks and CUDA's
// threads (Note [One kernel body, two devices], device_loops.h). Empty for g++.
#ifdef __CUDACC__
#define DESCENT_HD __host__ __device__
#else
#define DESCENT_HD
#endif

namespace descent {

DESCENT_HD inline uint32_t float_bits(float f) {
#ifdef __CUDA_ARCH__
  return __float_as_uint(f);
#else
  uint32_t u;
  std::memcpy(&u, &f, 4);
  return u;
#endif
}
DESCENT_HD inline float bits_float(uint32_t u) {
#ifdef __CUDA_ARCH__
  return __uint_as_float(u);
#else
  float f;
  std::memcpy(&f, &u, 4);
  return f;
#endif
}

// float32 -> float16 bits, rounding to nearest even.
DESCENT_HD inline uint16_t float_to_half_bits(float f) {
  const uint32_t x = float_bits(f);
  const uint32_t sign = (x >> 16) & 0x8000u, ax = x & 0x7fffffffu;
  if (ax > 0x7f800000u) return uint16_t(sign | 0x7e00u);   // NaN
  if (ax >= 0x477ff000u) return uint16_t(sign | 0x7c00u);  // 65520 and up (infinity too): infinity
  if (ax < 0x38800000u) {                         // below 2**-14: a subnormal float16 (units of 2**-24), or zero
    if (ax < 0x33000000u) return uint16_t(sign);  // below 2**-25: rounds to zero
    const uint32_t m = (ax & 0x7fffffu) | 0x800000u;
    const uint32_t shift = 126u - (ax >> 23);  // 14 to 24
    uint32_t r = m >> shift;
    const uint32_t rest = m & ((1u << shift) - 1u), half = 1u << (shift - 1u);
    if (rest > half || (rest == half && (r & 1u))) ++r;
    return uint16_t(sign | r);
  }
  uint32_t r = (ax >> 13) - (112u << 10);  // exponent rebiased from 127 to 15, top 10 mantissa bits
  const uint32_t rest = ax & 0x1fffu;
  if (rest > 0x1000u || (rest == 0x1000u && (r & 1u))) ++r;  // a carry into the exponent is right
  return uint16_t(sign | r);
}

// float16 bits -> float32 (exact).
DESCENT_HD inline float half_bits_to_float(uint16_t h) {
  const uint32_t sign = uint32_t(h & 0x8000u) << 16, e = (h >> 10) & 0x1fu, m = h & 0x3ffu;
  if (e == 0x1f) return bits_float(sign | 0x7f800000u | (m << 13));  // infinity, NaN
  if (e != 0) return bits_float(sign | ((e + 112u) << 23) | (m << 13));
  const float sub = float(m) * 0x1p-24f;  // subnormal or zero: exact in float32
  return sign ? -sub : sub;
}

// float32 -> bfloat16 bits, rounding to nearest even.
DESCENT_HD inline uint16_t float_to_bfloat16_bits(float f) {
  const uint32_t x = float_bits(f);
  if ((x & 0x7fffffffu) > 0x7f800000u) return uint16_t(((x >> 16) & 0x8000u) | 0x7fc0u);  // NaN
  return uint16_t((x + 0x7fffu + ((x >> 16) & 1u)) >> 16);  // a carry past the largest gives infinity
}
DESCENT_HD inline float bfloat16_bits_to_float(uint16_t b) { return bits_float(uint32_t(b) << 16); }

// The element types. A value converts to float implicitly (so comparisons,
// isnan and the casts to other dtypes read it as float32) and is made from a
// float explicitly (Half(x)), so that every rounding is written where it happens.
struct alignas(2) Half {
  uint16_t bits;
  Half() = default;
  DESCENT_HD explicit Half(float f) : bits(float_to_half_bits(f)) {}
  DESCENT_HD operator float() const { return half_bits_to_float(bits); }
};
struct alignas(2) BFloat16 {
  uint16_t bits;
  BFloat16() = default;
  DESCENT_HD explicit BFloat16(float f) : bits(float_to_bfloat16_bits(f)) {}
  DESCENT_HD operator float() const { return bfloat16_bits_to_float(bits); }
};

template <class T>
inline constexpr bool is_reduced_float_v = std::is_same_v<T, Half> || std::is_same_v<T, BFloat16>;
// float, double, Half, BFloat16.
template <class T>
inline constexpr bool is_float_v = std::is_floating_point_v<T> || is_reduced_float_v<T>;
// The type an element function computes in: float for the 16-bit floats.
template <class T>
using opmath_t = std::conditional_t<is_reduced_float_v<T>, float, T>;

}  // namespace descent
