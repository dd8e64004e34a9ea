// Tests for floors/core/half.h: float16 and bfloat16 conversions, against a
// rounding computed independently in double (Note [Reduced-precision floats]).
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <random>

#include "floors/core/half.h"
#include "floors/core/scalar.h"

namespace descent {
namespace {

// The value of f rounded to `digits` significant bits (11 for float16, 8
// for bfloat16), ties to even, with exponents below `min_exp` in subnormal
// steps and anything beyond `max` (after rounding) infinite. Done in double:
// f / q is exact and nearbyint rounds ties to even.
double round_to(float f, int digits, int min_exp, double max) {
  if (std::isnan(f) || std::isinf(f) || f == 0) return f;
  const int e = std::max(int(std::floor(std::log2(std::fabs(double(f))))), min_exp);
  const double q = std::ldexp(1.0, e - (digits - 1));
  const double r = std::nearbyint(double(f) / q) * q;
  if (std::fabs(r) > max) return f > 0 ? INFINITY : -INFINITY;
  return r;
}

uint32_t bits_of(float f) {
  uint32_t u;
  std::memcpy(&u, &f, 4);
  return u;
}

TEST(Half, EveryFloat16ConvertsExactlyAndBack) {
  for (uint32_t h = 0; h < 0x10000; ++h) {
    Half x;
    x.bits = uint16_t(h);
    const float f = float(x);
    if (((h >> 10) & 0x1f) == 0x1f && (h & 0x3ff)) {
      EXPECT_TRUE(std::isnan(f)) << std::hex << h;
      EXPECT_EQ(Half(f).bits, (h & 0x8000) | 0x7e00) << "a NaN becomes the quiet NaN with its sign, " << std::hex << h;
      continue;
    }
    EXPECT_EQ(Half(f).bits, h) << std::hex << h;
    EXPECT_EQ(double(f), round_to(f, 11, -14, 65504.0)) << std::hex << h;
  }
}

TEST(Half, Float32RoundsToNearestEven) {
  EXPECT_EQ(float(Half(1.0f + 0x1p-11f)), 1.0f) << "a tie goes to the even neighbour (1.0)";
  EXPECT_EQ(float(Half(1.0f + 3 * 0x1p-11f)), 1.0f + 0x1p-9f) << "a tie goes to the even neighbour (1 + 2**-9)";
  EXPECT_EQ(float(Half(65504.0f)), 65504.0f);
  EXPECT_EQ(float(Half(65519.0f)), 65504.0f) << "below the midpoint to infinity";
  EXPECT_TRUE(std::isinf(float(Half(65520.0f)))) << "the midpoint rounds to even: infinity";
  EXPECT_EQ(float(Half(0x1p-24f)), 0x1p-24f) << "the smallest subnormal";
  EXPECT_EQ(float(Half(0x1p-25f)), 0.0f) << "half of it ties to zero";
  EXPECT_EQ(float(Half(0x1.000002p-25f)), 0x1p-24f) << "just above half of it rounds up";
  EXPECT_EQ(Half(-0.0f).bits, 0x8000) << "the sign of zero stays";
  std::mt19937 rng(7);
  for (int i = 0; i < 2000000; ++i) {
    uint32_t u = rng();
    float f;
    std::memcpy(&f, &u, 4);
    if (std::isnan(f)) continue;
    const double want = round_to(f, 11, -14, 65504.0);
    ASSERT_EQ(double(float(Half(f))), want) << std::hex << u;
    // bfloat16: float32's exponent range, 8 significant bits.
    const double want_b = round_to(f, 8, -126, 0x1.fep127);
    ASSERT_EQ(double(float(BFloat16(f))), want_b) << std::hex << u;
  }
}

TEST(BFloat16, IsTheTopHalfOfAFloat32) {
  for (uint32_t b = 0; b < 0x10000; ++b) {
    BFloat16 x;
    x.bits = uint16_t(b);
    const float f = float(x);
    EXPECT_EQ(bits_of(f), b << 16);
    if (std::isnan(f))
      EXPECT_EQ(BFloat16(f).bits, (b & 0x8000) | 0x7fc0) << std::hex << b;
    else
      EXPECT_EQ(BFloat16(f).bits, b) << std::hex << b;
  }
  EXPECT_EQ(float(BFloat16(1.0f + 0x1p-8f)), 1.0f) << "a tie goes to the even neighbour";
  EXPECT_EQ(float(BFloat16(1.0f + 0x1.8p-8f)), 1.0f + 0x1p-7f);
  EXPECT_TRUE(std::isinf(float(BFloat16(std::numeric_limits<float>::max())))) << "past the largest bfloat16";
}

TEST(Half, ScalarsCheckTheRangeAsC10Does) {
  EXPECT_EQ(float(Scalar(65504.0).to<Half>()), 65504.0f);
  EXPECT_EQ(float(Scalar(int64_t{2048}).to<Half>()), 2048.0f);
  try {
    (void)Scalar(int64_t{100000}).to<Half>("full", "fill_value");
    FAIL() << "100000 fits no float16";
  } catch (const Error& e) {
    EXPECT_STREQ(e.what(), "full(): fill_value cannot be converted to type at::Half without overflow");
  }
  EXPECT_THROW((void)Scalar(1e39).to<BFloat16>(), Error);
  EXPECT_TRUE(std::isinf(float(Scalar(INFINITY).to<Half>()))) << "infinity is a float16";
  EXPECT_EQ(float(Scalar(1e38).to<BFloat16>()), float(BFloat16(1e38f)));
}

}  // namespace
}  // namespace descent
