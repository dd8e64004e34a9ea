// Tests for the factory kernels and the random number generator
// (floors/kernels/factories.cpp, random.h): dtype inference of empty, zeros,
// ones and full; arange's values and errors; linspace's values, as
// PyTorch's (Note [linspace fills from both ends]); rand and randn reproducible after
// manual_seed and fresh on successive calls; the CPU's mt19937 against
// std::mt19937 (Note [PyTorch's CPU random stream]); the devices' Philox4x32-10
// against the Random123 known-answer vector and an implementation written here
// from the paper (Note [Counter-based random numbers]).
//
// [SECTION] Fill factories
// [SECTION] arange
// [SECTION] linspace
// [SECTION] Philox
// [SECTION] mt19937
// [SECTION] rand and randn
#include <gtest/gtest.h>

#include <array>
#include <cmath>
#include <cstring>
#include <limits>
#include <set>
#include <string>
#include <typeinfo>

#include "floors/kernels/cpu/cpu_generator.h"
#include "floors/kernels/device/random.h"
#include "kernel_test_util.h"

namespace descent {
namespace {

using namespace testing_util;
using kernels::manual_seed;

// [SECTION] Fill factories ------------------------------------------------------------

TEST(Factories, FillValuesShapesAndDtypes) {
  Tensor z = call(Op::zeros, DimVector{2, 3});
  EXPECT_EQ(z.dtype(), ScalarType::Float32) << "the default float dtype";
  EXPECT_EQ(z.sizes(), (DimVector{2, 3}));
  EXPECT_TRUE(z.is_contiguous());
  EXPECT_EQ(values(z), std::vector<double>(6, 0));
  EXPECT_EQ(values(call(Op::ones, DimVector{4}, ScalarType::Int64)), std::vector<double>(4, 1));
  EXPECT_EQ(values(call(Op::ones, DimVector{2}, ScalarType::Bool)), std::vector<double>(2, 1));
  EXPECT_EQ(call(Op::empty, DimVector{5, 0}).numel(), 0);
  EXPECT_EQ(call(Op::empty, DimVector{3}, ScalarType::Float64).dtype(), ScalarType::Float64);
  Tensor s = call(Op::ones, DimVector{});
  EXPECT_EQ(s.dim(), 0);
  EXPECT_EQ(values(s), std::vector<double>{1});
}

TEST(Factories, FullInfersItsDtypeFromTheValue) {
  struct Case {
    IValue value;
    ScalarType want;
    double stored;
  };
  for (const Case& c : {Case{IValue(2.5), ScalarType::Float32, 2.5}, Case{IValue(int64_t{3}), ScalarType::Int64, 3},
                        Case{IValue(true), ScalarType::Bool, 1}}) {
    Tensor t = call(Op::full, DimVector{2, 2}, c.value);
    EXPECT_EQ(t.dtype(), c.want);
    EXPECT_EQ(values(t), std::vector<double>(4, c.stored));
  }
  Tensor f64 = call(Op::full, DimVector{3}, 0.1, ScalarType::Float64);
  EXPECT_EQ(values(f64), std::vector<double>(3, 0.1));
  Tensor truncated = call(Op::full, DimVector{1}, 2.9, ScalarType::Int64);
  EXPECT_EQ(values(truncated), std::vector<double>{2});
  EXPECT_THROW(call(Op::full, DimVector{-1}, 1.0), Error);
  EXPECT_THROW(call(Op::zeros, DimVector{2, -3}), Error);
}

// Expects `fn` to throw exactly descent::Error (Python's RuntimeError), `part` in its message.
template <typename Fn>
void expect_runtime_error(Fn&& fn, const std::string& part) {
  try {
    fn();
    ADD_FAILURE() << "no error (wanted one mentioning '" << part << "')";
  } catch (const Error& e) {
    EXPECT_EQ(typeid(e), typeid(Error)) << e.what();
    EXPECT_NE(std::string(e.what()).find(part), std::string::npos) << e.what();
  }
}

TEST(Factories, FullRaisesForAValueItsDtypeCannotHold) {
  // Note [Checked scalar conversion]: NaN, the infinities and doubles outside
  // [-2^63, 2^63) do not become int64 (a C++ cast would be undefined), and a
  // finite double past float's range does not become inf.
  for (double v : {double(NAN), double(INFINITY), -double(INFINITY), 1e20, -1e20, 0x1p63, -0x1p64})
    expect_runtime_error([&] { call(Op::full, DimVector{2}, v, ScalarType::Int64); },
                         "full(): fill_value cannot be converted to type int64_t without overflow");
  for (double v : {1e300, -1e300, 3.5e38}) {
    expect_runtime_error([&] { call(Op::full, DimVector{2}, v, ScalarType::Float32); },
                         "full(): fill_value cannot be converted to type float without overflow");
    expect_runtime_error([&] { call(Op::full, DimVector{2}, v); }, "type float without overflow");
  }
  Tensor lowest = call(Op::full, DimVector{1}, -0x1p63, ScalarType::Int64);
  EXPECT_EQ(lowest.data<int64_t>()[0], std::numeric_limits<int64_t>::min()) << "-2^63 itself fits";
  EXPECT_EQ(call(Op::full, DimVector{1}, 0x1p63 - 1024, ScalarType::Int64).data<int64_t>()[0],
            int64_t((uint64_t(1) << 63) - 1024))
      << "the largest double below 2^63";
  EXPECT_TRUE(std::isinf(values(call(Op::full, DimVector{1}, double(INFINITY)))[0])) << "inf is a float";
  EXPECT_TRUE(std::isnan(values(call(Op::full, DimVector{1}, double(NAN)))[0])) << "so is NaN";
  EXPECT_EQ(values(call(Op::full, DimVector{1}, 1e300, ScalarType::Float64)), std::vector<double>{1e300});
  EXPECT_EQ(values(call(Op::full, DimVector{1}, double(NAN), ScalarType::Bool)), std::vector<double>{1});
  EXPECT_EQ(values(call(Op::full, DimVector{1}, double(std::numeric_limits<float>::max()))),
            std::vector<double>{double(std::numeric_limits<float>::max())});
}

// [SECTION] arange ---------------------------------------------------------------------

TEST(Arange, ValuesAndDtypes) {
  Tensor a = call(Op::arange, 5);
  EXPECT_EQ(a.dtype(), ScalarType::Int64);
  EXPECT_EQ(values(a), (std::vector<double>{0, 1, 2, 3, 4}));
  Tensor f = call(Op::arange, 2.5);
  EXPECT_EQ(f.dtype(), ScalarType::Float32);
  EXPECT_EQ(values(f), (std::vector<double>{0, 1, 2}));
  Tensor h = call(Op::arange_start_step, 1, 7.5, 0.5);
  EXPECT_EQ(h.dtype(), ScalarType::Float32);
  ASSERT_EQ(h.numel(), 13);
  for (int i = 0; i < 13; ++i) EXPECT_EQ(values(h)[size_t(i)], 1 + 0.5 * i);
  EXPECT_EQ(values(call(Op::arange_start_step, 5, 0, -1)), (std::vector<double>{5, 4, 3, 2, 1}));
  EXPECT_EQ(values(call(Op::arange_start_step, -3, 4, 3)), (std::vector<double>{-3, 0, 3}));
  EXPECT_EQ(call(Op::arange_start_step, 2, 2).numel(), 0);
  EXPECT_EQ(call(Op::arange, 0).numel(), 0);
  Tensor d = call(Op::arange, 4, ScalarType::Float64);
  EXPECT_EQ(d.dtype(), ScalarType::Float64);
  EXPECT_EQ(values(d), (std::vector<double>{0, 1, 2, 3}));
  // float64 arange computes start + i * step in double: no accumulated error.
  Tensor fine = call(Op::arange_start_step, 0.0, 1.0, 0.1, ScalarType::Float64);
  ASSERT_EQ(fine.numel(), 10);
  for (int i = 0; i < 10; ++i) EXPECT_EQ(values(fine)[size_t(i)], 0.1 * i);
}

TEST(Arange, IntegerBoundsAtTheEndsOfInt64AreCountedExactly) {
  constexpr int64_t kMax = std::numeric_limits<int64_t>::max(), kMin = std::numeric_limits<int64_t>::min();
  constexpr int64_t k62 = int64_t(1) << 62;
  struct Case {
    int64_t start, end, step;
    std::vector<int64_t> want;
  };
  const Case cases[] = {
      {kMax - 9, kMax, 3, {kMax - 9, kMax - 6, kMax - 3}},  // a double rounds both bounds to 2^63
      {kMin, kMin + 10, 3, {kMin, kMin + 3, kMin + 6, kMin + 9}},
      {kMax - 1, kMax, k62, {kMax - 1}},
      {kMin, kMax, kMax, {kMin, -1, kMax - 1}},  // end - start is 2^64 - 1
      {kMin, kMax, k62, {kMin, -k62, 0, k62}},   // start + 4 * step would overflow
      {kMax, kMin, kMin, {kMax, -1}},            // |step| is 2^63
      {5, kMin, kMin, {5, 5 + kMin}},
      {kMax, kMax, 1, {}},
      {kMin, kMin + 1, kMax, {kMin}},
  };
  for (const Case& c : cases) {
    Tensor t = call(Op::arange_start_step, c.start, c.end, c.step);
    EXPECT_EQ(t.dtype(), ScalarType::Int64);
    ASSERT_EQ(t.numel(), int64_t(c.want.size())) << c.start << " " << c.end << " " << c.step;
    for (size_t i = 0; i < c.want.size(); ++i) EXPECT_EQ(t.data<int64_t>()[i], c.want[i]) << i;
    EXPECT_EQ(call(Op::arange_start_step, c.start, c.end, c.step, ScalarType::Float64).numel(), int64_t(c.want.size()))
        << "the length does not depend on the dtype";
  }
  EXPECT_THROW(call(Op::arange_start_step, kMin, kMax, 1), Error) << "too many elements, counted without overflow";
  expect_runtime_error([&] { call(Op::arange_start_step, 1e19, 2e19, 1e18, ScalarType::Int64); },
                       "arange(): start cannot be converted to type int64_t without overflow");
}

TEST(Arange, Errors) {
  EXPECT_THROW(call(Op::arange_start_step, 0, 5, 0), Error) << "step 0";
  EXPECT_THROW(call(Op::arange_start_step, 0.0, 1.0, 0.0), Error) << "step 0.0";
  EXPECT_THROW(call(Op::arange_start_step, 0, 5, -1), Error) << "wrong sign";
  EXPECT_THROW(call(Op::arange_start_step, 5, 0, 1), Error) << "wrong sign";
  EXPECT_THROW(call(Op::arange, -3), Error) << "end below the default start 0";
  EXPECT_THROW(call(Op::arange, INFINITY), Error);
  EXPECT_THROW(call(Op::arange, NAN), Error);
  EXPECT_THROW(call(Op::arange_start_step, 0, 1e15, 1), Error) << "too many elements";
  try {
    call(Op::arange_start_step, 0, 5, 0);
  } catch (const Error& e) {
    EXPECT_STREQ(e.what(), "step must be nonzero");  // aten's words, no "arange(): "
  }
}

// [SECTION] linspace ---------------------------------------------------------------------

// Note [linspace fills from both ends]: float32 elements are fused
// multiply-adds from the nearer end; four of them as PyTorch 2.11 gave them
// on the H200 host, by their bits.
TEST(Linspace, FillsFromBothEndsWithFusedStepsAsPytorch) {
  const double pi = 3.141592653589793;
  Tensor t = call(Op::linspace, -pi, pi, 2000);
  ASSERT_EQ(t.dtype(), ScalarType::Float32);
  ASSERT_EQ(t.numel(), 2000);
  const float* p = t.data<float>();
  const float start = float(-pi), end = float(pi), step = (end - start) / 1999.0f;
  for (int i = 0; i < 2000; ++i) {
    const float want = i < 1000 ? std::fma(step, float(i), start) : std::fma(-step, float(1999 - i), end);
    ASSERT_EQ(p[i], want) << i;
  }
  auto bits = [&](int i) {
    uint32_t b;
    std::memcpy(&b, &p[i], 4);
    return b;
  };
  EXPECT_EQ(bits(0), 0xc0490fdbu);
  EXPECT_EQ(bits(1), 0xc048dc5cu);
  EXPECT_EQ(bits(999), 0xbacdfd58u);
  EXPECT_EQ(bits(1001), 0x3b9a7e1cu);
  EXPECT_EQ(bits(1999), 0x40490fdbu);
  // int64 steps in double and truncates; float16 rounds every operation to 16 bits.
  EXPECT_EQ(values(call(Op::linspace, -2.5, 7.25, 33, ScalarType::Int64)),
            (std::vector<double>{-2, -1, -1, -1, 0, 0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 2, 2,
                                 2,  3,  3,  3,  3, 4, 4, 4, 5, 5, 5, 5, 6, 6, 6, 7}));
  const std::vector<double> h = values(call(Op::linspace, -pi, pi, 2000, ScalarType::Float16));
  EXPECT_EQ(std::vector<double>(h.begin() + 997, h.begin() + 1003),
            (std::vector<double>{-0.0078125, -0.005859375, -0.001953125, 0.001953125, 0.005859375, 0.0078125}));
}

TEST(Linspace, ShortOnesDtypesAndErrors) {
  EXPECT_EQ(values(call(Op::linspace, 2, 5, 1)), (std::vector<double>{2}));
  EXPECT_EQ(call(Op::linspace, 2, 5, 0).numel(), 0);
  EXPECT_EQ(values(call(Op::linspace, 0, 1, 1, ScalarType::Bool)), (std::vector<double>{0}));
  EXPECT_EQ(call(Op::linspace, 0, 10, 5).dtype(), ScalarType::Float32) << "the default dtype, whatever the bounds";
  EXPECT_EQ(values(call(Op::linspace, 0, 10, 5)), (std::vector<double>{0, 2.5, 5, 7.5, 10}));
  expect_runtime_error([&] { call(Op::linspace, 2, 5, -1); }, "number of steps must be non-negative");
  EXPECT_THROW(call(Op::linspace, 0, 1, 5, ScalarType::Bool), NotImplementedError);
  expect_runtime_error([&] { call(Op::linspace, 0, INFINITY, 3, ScalarType::Int64); },
                       "end cannot be converted to type int64_t without overflow");
  expect_runtime_error([&] { call(Op::linspace, 0, 1e6, 3, ScalarType::Float16); },
                       "cannot be converted to type at::Half without overflow");
}

// [SECTION] Philox ---------------------------------------------------------------------

// Philox4x32-10 written from Salmon et al. (SC'11) and Random123's philox.h:
// ten rounds, the key bumped by the Weyl constants between rounds.
std::array<uint32_t, 4> philox_spec(std::array<uint32_t, 4> ctr, std::array<uint32_t, 2> key) {
  for (int round = 0; round < 10; ++round) {
    if (round > 0) key = {key[0] + 0x9E3779B9u, key[1] + 0xBB67AE85u};
    uint64_t p0 = uint64_t{0xD2511F53u} * ctr[0], p1 = uint64_t{0xCD9E8D57u} * ctr[2];
    ctr = {uint32_t(p1 >> 32) ^ ctr[1] ^ key[0], uint32_t(p1), uint32_t(p0 >> 32) ^ ctr[3] ^ key[1], uint32_t(p0)};
  }
  return ctr;
}

TEST(Philox, KnownAnswerVector) {
  // Random123's kat_vectors: counter 0, key 0.
  std::array<uint32_t, 4> want = {0x6627e8d5u, 0xe169c58du, 0xbc57ac4cu, 0x9b00dbd8u};
  EXPECT_EQ(kernels::philox4x32(0, 0), want);
  EXPECT_EQ(philox_spec({0, 0, 0, 0}, {0, 0}), want);
}

TEST(Philox, MatchesTheSpecAndIsDeterministic) {
  std::mt19937_64 rng(91);
  for (int i = 0; i < 1000; ++i) {
    uint64_t c = rng(), k = rng();
    auto got = kernels::philox4x32(c, k);
    EXPECT_EQ(got, philox_spec({uint32_t(c), uint32_t(c >> 32), 0, 0}, {uint32_t(k), uint32_t(k >> 32)}));
    EXPECT_EQ(got, kernels::philox4x32(c, k));
  }
}

TEST(Philox, DiffersForDifferentCountersAndKeys) {
  std::set<std::array<uint32_t, 4>> seen;
  for (uint64_t c = 0; c < 2000; ++c) seen.insert(kernels::philox4x32(c, 42));
  for (uint64_t k = 0; k < 2000; ++k) seen.insert(kernels::philox4x32(7, k));
  seen.insert(kernels::philox4x32(uint64_t(1) << 32, 42));  // the counter's high word counts
  seen.insert(kernels::philox4x32(7, uint64_t(1) << 32));   // and so does the key's
  EXPECT_EQ(seen.size(), 4001u) << "every (counter, key) pair gives a different block";  // (7, 42) appears twice
  // One flipped input bit changes about half the output bits.
  int flipped = 0;
  for (int bit = 0; bit < 64; ++bit) {
    auto a = kernels::philox4x32(123, 456), b = kernels::philox4x32(123 ^ (uint64_t(1) << bit), 456);
    for (int w = 0; w < 4; ++w) flipped += __builtin_popcount(a[w] ^ b[w]);
  }
  EXPECT_NEAR(flipped / 64.0, 64.0, 8.0);
}

TEST(Philox, UniformAndNormalHelpers) {
  double sum = 0, sum_sq = 0;
  const int n = 20000;
  for (uint64_t c = 0; c < n; ++c) {
    float u = kernels::uniform_float(c, 5);
    double ud = kernels::uniform_double(c, 5);
    ASSERT_TRUE(u >= 0.f && u < 1.f) << u;
    ASSERT_TRUE(ud >= 0.0 && ud < 1.0) << ud;
    double z = kernels::normal_double(c, 5);
    ASSERT_TRUE(std::isfinite(z));
    sum += z, sum_sq += z * z;
  }
  EXPECT_NEAR(sum / n, 0.0, 0.05);
  EXPECT_NEAR(sum_sq / n, 1.0, 0.05);
  EXPECT_EQ(kernels::uniform_float(3, 9), float(kernels::philox4x32(3, 9)[0] >> 8) * 0x1p-24f);
}

// [SECTION] mt19937 ---------------------------------------------------------------------

TEST(Mt19937, IsStdMt19937OnTheLow32BitsOfTheSeed) {
  for (uint64_t seed : {uint64_t{0}, uint64_t{5489}, uint64_t{77}, (uint64_t{1} << 32) + 5, ~uint64_t{0}}) {
    kernels::Mt19937 ours(seed);
    std::mt19937 want{uint32_t(seed)};
    for (int i = 0; i < 2000; ++i) ASSERT_EQ(ours(), want()) << "seed " << seed << ", word " << i;
  }
  kernels::Mt19937 d;  // the C++ standard ([rand.predef]): the 10000th word of the default seed
  for (int i = 1; i < 10000; ++i) d();
  EXPECT_EQ(d(), 4123659995u);
}

TEST(Mt19937, Random64IsTheFirstWordHigh) {
  kernels::CpuGenerator g;
  std::mt19937 want(5489);
  const uint64_t hi = want(), lo = want();
  EXPECT_EQ(g.random64(), (hi << 32) | lo);
}

// [SECTION] rand and randn -----------------------------------------------------------

TEST(Random, ReproducibleAfterManualSeedAndFreshOnSuccessiveCalls) {
  for (Op op : {Op::rand, Op::randn}) {
    for (ScalarType dt : {ScalarType::Float32, ScalarType::Float64}) {
      SCOPED_TRACE(std::string(op_entry(op).name) + " " + dtype_name(dt));
      manual_seed(1234);
      std::vector<double> a = values(call(op, DimVector{10, 100}, dt));
      std::vector<double> b = values(call(op, DimVector{10, 100}, dt));
      manual_seed(1234);
      std::vector<double> a2 = values(call(op, DimVector{10, 100}, dt));
      EXPECT_EQ(a, a2) << "manual_seed replays the same numbers";
      int same = 0;
      for (size_t i = 0; i < a.size(); ++i) same += a[i] == b[i];
      EXPECT_LT(same, 5) << "a second call draws fresh numbers";
      manual_seed(1235);
      std::vector<double> c = values(call(op, DimVector{10, 100}, dt));
      EXPECT_NE(a, c) << "another seed, other numbers";
    }
  }
}

TEST(Random, TheCpuDrawsTorchsStream) {
  manual_seed(77);
  std::vector<double> first = values(call(Op::rand, DimVector{4}));
  std::vector<double> second = values(call(Op::rand, DimVector{2, 3}));
  manual_seed(77);
  std::vector<double> all = values(call(Op::rand, DimVector{10}));
  first.insert(first.end(), second.begin(), second.end());
  EXPECT_EQ(first, all) << "each call goes on where the last stopped";
  std::mt19937 words(77);
  for (double x : all) EXPECT_EQ(x, double(words() & 0xFFFFFF) * 0x1p-24) << "the low 24 bits of a word";
  manual_seed(0);
  std::vector<double> z = values(call(Op::randn, DimVector{3}));
  const double printed[] = {1.5410, -0.2934, -2.1788};  // torch.manual_seed(0); torch.randn(3), PyTorch 2.11
  for (int i = 0; i < 3; ++i) EXPECT_NEAR(z[size_t(i)], printed[i], 0.5e-4);
}

TEST(Random, TheDeviceCountersMoveOnlyForADevice) {
  manual_seed(77);
  EXPECT_EQ(kernels::reserve_counters(4).offset, 0u);
  EXPECT_EQ(kernels::reserve_counters(6).offset, 4u);
  call(Op::rand, DimVector{10});  // the CPU's generator is another one
  const kernels::GeneratorState g = kernels::reserve_counters(0);
  EXPECT_EQ(g.offset, 10u);
  EXPECT_EQ(g.seed, 77u);
}

TEST(Random, DistributionsAndDtypes) {
  manual_seed(5);
  std::vector<double> u = values(call(Op::rand, DimVector{20000}));
  double mean = 0;
  for (double x : u) {
    ASSERT_TRUE(x >= 0 && x < 1) << x;
    mean += x / double(u.size());
  }
  EXPECT_NEAR(mean, 0.5, 0.01);
  std::vector<double> z = values(call(Op::randn, DimVector{20000}));
  double m = 0, sq = 0;
  for (double x : z) m += x / double(z.size()), sq += x * x / double(z.size());
  EXPECT_NEAR(m, 0.0, 0.03);
  EXPECT_NEAR(sq, 1.0, 0.05);
  EXPECT_THROW(call(Op::rand, DimVector{2}, ScalarType::Int64), Error);
  EXPECT_THROW(call(Op::randn, DimVector{2}, ScalarType::Bool), Error);
  EXPECT_EQ(call(Op::rand, DimVector{0, 4}).numel(), 0);
}

}  // namespace
}  // namespace descent
