// Tests for the elementwise CPU kernels (floors/kernels/elementwise_kernels.cpp,
// elementwise.h, reference.cpp, optimized.cpp, promotion.cpp): every binary,
// unary and comparison op against a float64 reference computed here with plain
// loops, over broadcasting ([3, 1] + [1, 4]), non-contiguous, zero-size and 0-d
// inputs; type promotion; and the errors the kernels raise.
//
// [SECTION] Reference helpers
// [SECTION] Binary ops
// [SECTION] Unary ops
// [SECTION] Comparisons
// [SECTION] Type promotion
// [SECTION] Errors
#include <gtest/gtest.h>

#include <climits>
#include <cmath>
#include <functional>
#include <limits>

#include "floors/kernels/kernels.h"
#include "kernel_test_util.h"

namespace descent {
namespace {

using namespace testing_util;
using RefFn = std::function<double(double, double)>;

// [SECTION] Reference helpers -------------------------------------------------------

// PyTorch's broadcast of two shapes, written independently of broadcast_shapes().
DimVector broadcast(const DimVector& a, const DimVector& b) {
  int n = std::max(a.size(), b.size());
  DimVector out;
  for (int i = 0; i < n; ++i) {
    int64_t sa = i - (n - a.size()) >= 0 ? a[i - (n - a.size())] : 1;
    int64_t sb = i - (n - b.size()) >= 0 ? b[i - (n - b.size())] : 1;
    out.push_back(sa == 1 ? sb : sa);
  }
  return out;
}

// Row-major position in `in` of the element that out position `linear` reads when `in` is broadcast to `out`.
int64_t source_index(int64_t linear, const DimVector& out, const DimVector& in) {
  int64_t src = 0, mul = 1;
  for (int d = out.size() - 1; d >= 0; --d) {
    int64_t i = linear % out[d];
    linear /= out[d];
    int k = d - (out.size() - in.size());
    if (k < 0) continue;
    if (in[k] != 1) src += i * mul;
    mul *= in[k];
  }
  return src;
}

// Checks call(op, a, b) against ref() applied to the broadcast float64 values.
void check_binary(Op op, const Tensor& a, const Tensor& b, ScalarType want_dtype, const RefFn& ref, double ulps,
                  const std::string& what) {
  SCOPED_TRACE(std::string(op_entry(op).name) + " " + what + " " + a.shape_str() + " " + dtype_name(a.dtype()) +
               " with " + b.shape_str() + " " + dtype_name(b.dtype()));
  Tensor out = call(op, a, b);
  DimVector shape = broadcast(a.sizes(), b.sizes());
  ASSERT_EQ(out.sizes(), shape);
  ASSERT_EQ(out.dtype(), want_dtype);
  std::vector<double> av = values(a), bv = values(b), ov = values(out);
  for (int64_t i = 0; i < out.numel(); ++i) {
    double want = ref(av[size_t(source_index(i, shape, a.sizes()))], bv[size_t(source_index(i, shape, b.sizes()))]);
    ASSERT_TRUE(close(ov[size_t(i)], want, want_dtype, ulps)) << "element " << i;
  }
}

// Pairs of operands for one dtype: broadcasting, non-contiguous, zero-size, 0-d.
std::vector<std::pair<Tensor, Tensor>> operand_pairs(ScalarType dt, std::mt19937_64& rng, double lo, double hi,
                                                     double lo2, double hi2) {
  auto r = [&](const DimVector& s, bool second = false) {
    return random_tensor(s, dt, rng, second ? lo2 : lo, second ? hi2 : hi);
  };
  Tensor strided = call(Op::slice, r({4, 6}), 1, IValue(), IValue(), 2);  // [4, 3], column step 2
  return {
      {r({3, 1}), r({1, 4}, true)},
      {transposed({2, 3}, dt, rng, lo, hi), r({2, 3}, true)},
      {r({2, 3}), transposed({2, 3}, dt, rng, lo2, hi2)},
      {strided, r({3}, true)},
      {r({2, 1, 3}), r({4, 1}, true)},
      {r({0, 3}), r({0, 3}, true)},
      {r({0, 3}), r({3}, true)},
      {r({}), r({2, 2}, true)},
      {r({2, 2}), r({}, true)},
      {r({}), r({}, true)},
      {r({5, 7}), r({5, 7}, true)},  // contiguous: the optimized loop
  };
}

// [SECTION] Binary ops -----------------------------------------------------------------

TEST(Binary, ArithmeticMatchesFloat64Reference) {
  std::mt19937_64 rng(11);
  struct Case {
    Op op;
    RefFn ref;
  };
  const Case cases[] = {
      {Op::add, [](double a, double b) { return a + b; }},
      {Op::sub, [](double a, double b) { return a - b; }},
      {Op::mul, [](double a, double b) { return a * b; }},
      {Op::div, [](double a, double b) { return a / b; }},
  };
  for (const Case& c : cases) {
    for (ScalarType dt : {ScalarType::Float32, ScalarType::Float64, ScalarType::Int64}) {
      ScalarType want = c.op == Op::div && dt == ScalarType::Int64 ? ScalarType::Float32 : dt;
      // +, -, *, / of float32 values are exact in float64, so rounding once gives the float32 result.
      for (auto& [a, b] : operand_pairs(dt, rng, -10, 10, -10, 10)) check_binary(c.op, a, b, want, c.ref, 0, "");
    }
  }
}

TEST(Binary, PowMatchesFloat64Reference) {
  std::mt19937_64 rng(12);
  RefFn ref = [](double a, double b) { return std::pow(a, b); };
  for (ScalarType dt : {ScalarType::Float32, ScalarType::Float64})
    for (auto& [a, b] : operand_pairs(dt, rng, 0.1, 3, -2, 2)) check_binary(Op::pow, a, b, dt, ref, 2, "");
  for (auto& [a, b] : operand_pairs(ScalarType::Int64, rng, -4, 5, 0, 6))
    check_binary(Op::pow, a, b, ScalarType::Int64, ref, 0, "");
}

TEST(Binary, AlphaScalesTheSecondOperand) {
  std::mt19937_64 rng(13);
  Tensor a = random_tensor({3, 4}, ScalarType::Float32, rng), b = random_tensor({4}, ScalarType::Float32, rng);
  Tensor out = call(Op::add, a, b, 2.5);
  Tensor diff = call(Op::sub, a, b, 0.5);
  std::vector<double> av = values(a), bv = values(b), ov = values(out), dv = values(diff);
  for (int i = 0; i < 12; ++i) {
    EXPECT_TRUE(close(ov[i], av[i] + 2.5 * bv[i % 4], ScalarType::Float32, 1)) << i;
    EXPECT_TRUE(close(dv[i], av[i] - 0.5 * bv[i % 4], ScalarType::Float32, 1)) << i;
  }
  Tensor ia = make({2}, ScalarType::Int64, {10, 20}), ib = make({2}, ScalarType::Int64, {3, 4});
  EXPECT_EQ(values(call(Op::add, ia, ib, 3)), (std::vector<double>{19, 32}));
  EXPECT_EQ(values(call(Op::sub, ia, ib, -2)), (std::vector<double>{16, 28}));
}

TEST(Binary, IntegerArithmeticWrapsAround) {
  Tensor big = make({1}, ScalarType::Int64, {0});
  big.data<int64_t>()[0] = INT64_MAX;
  Tensor one = make({1}, ScalarType::Int64, {1});
  EXPECT_EQ(call(Op::add, big, one).data<int64_t>()[0], INT64_MIN);
  EXPECT_EQ(call(Op::mul, big, make({1}, ScalarType::Int64, {2})).data<int64_t>()[0], -2);
  Tensor minv = make({1}, ScalarType::Int64, {0});
  minv.data<int64_t>()[0] = INT64_MIN;
  EXPECT_EQ(call(Op::neg, minv).data<int64_t>()[0], INT64_MIN);
  EXPECT_EQ(call(Op::pow, make({1}, ScalarType::Int64, {3}), make({1}, ScalarType::Int64, {41})).data<int64_t>()[0],
            int64_t(uint64_t(12157665459056928801ull) * 3ull));  // 3^41 mod 2^64
}

TEST(Binary, ReferenceAndOptimizedAgreeBitForBit) {
  std::mt19937_64 rng(14);
  for (Op op : {Op::add, Op::sub, Op::mul, Op::div, Op::pow}) {
    Tensor a = random_tensor({8, 37}, ScalarType::Float32, rng, 0.1, 3);
    Tensor b = random_tensor({8, 37}, ScalarType::Float32, rng, -2, 2);
    Tensor s = random_tensor({}, ScalarType::Float32, rng, 0.5, 2);
    for (auto [x, y] : {std::pair{a, b}, std::pair{a, s}, std::pair{s, b}}) {
      Tensor ref, opt;
      {
        kernels::VariantGuard g(kernels::Variant::Reference);
        ref = call(op, x, y);
        EXPECT_STREQ(kernels::last_variant(), "reference");
      }
      opt = call(op, x, y);
      EXPECT_STREQ(kernels::last_variant(), "optimized") << op_entry(op).name << " on contiguous/scalar operands";
      EXPECT_EQ(values(ref), values(opt)) << op_entry(op).name;
    }
  }
  call(Op::add, transposed({3, 4}, ScalarType::Float32, rng), random_tensor({3, 4}, ScalarType::Float32, rng));
  EXPECT_STREQ(kernels::last_variant(), "reference") << "a transposed operand has no fast path";
}

// [SECTION] Unary ops --------------------------------------------------------------------

TEST(Unary, EveryOpMatchesFloat64Reference) {
  std::mt19937_64 rng(21);
  struct Case {
    Op op;
    double (*ref)(double);
    bool positive;
    double ulps;
  };
  const Case cases[] = {
      {Op::neg, [](double x) { return -x; }, false, 0},
      {Op::abs, [](double x) { return std::fabs(x); }, false, 0},
      {Op::relu, [](double x) { return x > 0 ? x : 0.0; }, false, 0},
      {Op::exp, [](double x) { return std::exp(x); }, false, 4},
      {Op::log, [](double x) { return std::log(x); }, true, 4},
      {Op::sqrt, [](double x) { return std::sqrt(x); }, true, 4},
      {Op::sigmoid, [](double x) { return 1 / (1 + std::exp(-x)); }, false, 4},
      {Op::tanh, [](double x) { return std::tanh(x); }, false, 4},
      {Op::sin, [](double x) { return std::sin(x); }, false, 4},
      {Op::cos, [](double x) { return std::cos(x); }, false, 4},
      {Op::reciprocal, [](double x) { return 1 / x; }, true, 1},  // correctly rounded division
  };
  for (const Case& c : cases) {
    for (ScalarType dt : {ScalarType::Float32, ScalarType::Float64, ScalarType::Int64}) {
      bool to_float = dt == ScalarType::Int64 && c.ulps != 0;  // exp(int) etc. compute in float32
      ScalarType want = to_float ? ScalarType::Float32 : dt;
      double lo = c.positive ? (dt == ScalarType::Int64 ? 1 : 0.05) : -6, hi = 6;
      for (Tensor x : {random_tensor({3, 4}, dt, rng, lo, hi), transposed({3, 4}, dt, rng, lo, hi),
                       random_tensor({0, 3}, dt, rng, lo, hi), random_tensor({}, dt, rng, lo, hi),
                       random_tensor({2, 70}, dt, rng, lo, hi)}) {
        SCOPED_TRACE(std::string(op_entry(c.op).name) + " " + x.shape_str() + " " + dtype_name(dt));
        Tensor y = call(c.op, x);
        ASSERT_EQ(y.sizes(), x.sizes());
        ASSERT_EQ(y.dtype(), want);
        std::vector<double> xv = values(x), yv = values(y);
        for (size_t i = 0; i < xv.size(); ++i) ASSERT_TRUE(close(yv[i], c.ref(xv[i]), want, c.ulps)) << i;
      }
    }
  }
}

TEST(Unary, NaNAndInfinities) {
  const double nan = std::numeric_limits<double>::quiet_NaN(), inf = INFINITY;
  Tensor x = make({5}, ScalarType::Float32, {nan, -inf, inf, -0.0, 2});
  EXPECT_TRUE(std::isnan(values(call(Op::relu, x))[0])) << "relu propagates NaN";
  EXPECT_EQ(values(call(Op::relu, x))[1], 0.0);
  EXPECT_TRUE(std::isnan(values(call(Op::abs, x))[0]));
  EXPECT_EQ(values(call(Op::abs, x))[1], inf);
  EXPECT_EQ(values(call(Op::sigmoid, x))[1], 0.0);
  EXPECT_EQ(values(call(Op::sigmoid, x))[2], 1.0);
  EXPECT_EQ(values(call(Op::exp, x))[1], 0.0);
  EXPECT_TRUE(std::isnan(values(call(Op::log, make({1}, ScalarType::Float64, {-1})))[0]));
  EXPECT_EQ(values(call(Op::log, make({1}, ScalarType::Float64, {0})))[0], -inf);
}

TEST(Unary, AbsOfNegativeZeroIsPositiveZeroInBothVariants) {
  const double nan = std::numeric_limits<double>::quiet_NaN();
  for (ScalarType dt : {ScalarType::Float32, ScalarType::Float64}) {
    Tensor x = make({4}, dt, {-0.0, 0.0, -2.5, -nan});
    for (kernels::Variant v : {kernels::Variant::Reference, kernels::Variant::Optimized}) {
      kernels::VariantGuard g(v);
      std::vector<double> y = values(call(Op::abs, x));
      EXPECT_STREQ(kernels::last_variant(), v == kernels::Variant::Reference ? "reference" : "optimized");
      for (double e : y) EXPECT_FALSE(std::signbit(e)) << dtype_name(dt) << " " << kernels::last_variant();
      EXPECT_EQ(y[2], 2.5);
    }
  }
}

// Runs f, which must throw an E whose message contains `part`.
template <class E, class F>
void expect_error(F&& f, const std::string& part) {
  try {
    f();
    ADD_FAILURE() << "expected an error containing: " << part;
  } catch (const E& e) {
    EXPECT_NE(std::string(e.what()).find(part), std::string::npos) << e.what();
  }
}

// clamp: PyTorch's CPU expression min(max(x, lo), hi), the same in both
// variants, for every dtype it takes (Note [clamp's bounds]).
TEST(Unary, ClampIsPytorchsExpressionInBothVariants) {
  std::mt19937_64 rng(23);
  const double nan = std::numeric_limits<double>::quiet_NaN();
  for (ScalarType dt : {ScalarType::Float32, ScalarType::Float64, ScalarType::Int64, ScalarType::Float16}) {
    for (Tensor x : {random_tensor({5, 40}, dt, rng, -4, 4), transposed({40, 5}, dt, rng, -4, 4)}) {
      for (kernels::Variant v : {kernels::Variant::Reference, kernels::Variant::Optimized}) {
        kernels::VariantGuard g(v);
        const std::vector<double> xv = values(x);
        const std::vector<double> both = values(call(Op::clamp, x, int64_t{-1}, int64_t{2}));
        const std::vector<double> lo = values(call(Op::clamp_min, x, int64_t{0}));
        const std::vector<double> hi = values(call(Op::clamp_max, x, int64_t{1}));
        const std::vector<double> crossed = values(call(Op::clamp, x, int64_t{2}, int64_t{-1}));
        for (size_t i = 0; i < xv.size(); ++i) {
          EXPECT_EQ(both[i], std::min(std::max(xv[i], -1.0), 2.0)) << i;
          EXPECT_EQ(lo[i], std::max(xv[i], 0.0)) << i;
          EXPECT_EQ(hi[i], std::min(xv[i], 1.0)) << i;
          EXPECT_EQ(crossed[i], -1.0) << "min > max gives max";
        }
      }
    }
  }
  Tensor f = make({4}, ScalarType::Float32, {nan, -0.0, 0.0, 3});
  std::vector<double> r = values(call(Op::clamp, f, 0.0, IValue()));
  EXPECT_TRUE(std::isnan(r[0])) << "a NaN element stays NaN";
  EXPECT_TRUE(std::signbit(r[1])) << "-0.0 < 0.0 is false: -0.0 is kept";
  r = values(call(Op::clamp, f, IValue(), nan));
  EXPECT_EQ(r[3], 3.0) << "clamp with only max = NaN keeps every element";
  r = values(call(Op::clamp, f, 0.0, nan));
  EXPECT_TRUE(std::isnan(r[1]) && std::isnan(r[3])) << "both bounds, one NaN: all NaN";
  r = values(call(Op::clamp_min, f, nan));
  EXPECT_TRUE(std::isnan(r[3])) << "clamp_min(NaN): all NaN";
  Tensor i = make({3}, ScalarType::Int64, {-3, 0, 4});
  EXPECT_EQ(call(Op::clamp, i, 0.5, IValue()).dtype(), ScalarType::Float32) << "the bounds promote as Python numbers";
  EXPECT_EQ(call(Op::clamp, i, int64_t{0}, IValue()).dtype(), ScalarType::Int64);
  EXPECT_EQ(call(Op::clamp_min, make({2}, ScalarType::Bool, {1, 0}), int64_t{0}).dtype(), ScalarType::Int64);
  expect_error<Error>([&] { call(Op::clamp, f, IValue(), IValue()); },
                      "At least one of 'min' or 'max' must not be None");
  expect_error<NotImplementedError>(
      [&] {
        call(Op::clamp_max, make({2}, ScalarType::Bool, {1, 0}), true);
      },
      "\"clamp_max_scalar_cpu\" not implemented for 'Bool'");
  expect_error<Error>(
      [&] {
        call(Op::clamp, make({2}, ScalarType::Float16, {1, 0}), IValue(), 1e6);
      },
      "cannot be converted to type at::Half without overflow");
}

// [SECTION] Comparisons -------------------------------------------------------------------

TEST(Compare, ResultsAreBoolAndMatchReference) {
  std::mt19937_64 rng(31);
  struct Case {
    Op op;
    RefFn ref;
  };
  const Case cases[] = {
      {Op::eq, [](double a, double b) { return double(a == b); }},
      {Op::lt, [](double a, double b) { return double(a < b); }},
      {Op::gt, [](double a, double b) { return double(a > b); }},
      {Op::ne, [](double a, double b) { return double(a != b); }},
      {Op::le, [](double a, double b) { return double(a <= b); }},
      {Op::ge, [](double a, double b) { return double(a >= b); }},
  };
  for (const Case& c : cases) {
    for (ScalarType dt : {ScalarType::Float32, ScalarType::Int64, ScalarType::Bool})
      for (auto& [a, b] : operand_pairs(dt, rng, -2, 3, -2, 3))  // small integers: many ties
        check_binary(c.op, a, b, ScalarType::Bool, c.ref, 0, "");
    // Mixed dtypes are promoted first: int64 against float32 with broadcasting.
    Tensor i = make({3, 1}, ScalarType::Int64, {1, 2, 3});
    Tensor f = make({1, 4}, ScalarType::Float32, {0.5, 2, 2.5, NAN});
    check_binary(c.op, i, f, ScalarType::Bool, c.ref, 0, "mixed");
  }
}

// [SECTION] Type promotion ------------------------------------------------------------------

TEST(Promotion, ResultDtypes) {
  auto t = [](ScalarType dt, bool zero_dim = false) { return zero_dim ? make({}, dt, {1}) : make({3}, dt, {1, 0, 1}); };
  using S = ScalarType;
  struct Case {
    Op op;
    Tensor a, b;
    S want;
    const char* what;
  };
  Tensor wrapped_float = make({}, S::Float64, {0.5});
  wrapped_float.impl()->wrapped_number = true;  // as the binding marks a Python float
  Tensor wrapped_int = make({}, S::Int64, {2});
  wrapped_int.impl()->wrapped_number = true;
  const Case cases[] = {
      {Op::add, t(S::Int64), t(S::Float32), S::Float32, "int64 + float32"},
      {Op::div, t(S::Int64), t(S::Int64), S::Float32, "int64 / int64 is true division"},
      {Op::add, t(S::Bool), t(S::Bool), S::Bool, "bool + bool"},
      {Op::mul, t(S::Bool), t(S::Int64), S::Int64, "bool * int64"},
      {Op::add, t(S::Float32), t(S::Float64), S::Float64, "float32 + float64"},
      {Op::add, t(S::Float32), t(S::Float64, true), S::Float32, "a 0-d tensor does not widen a dimensioned one"},
      {Op::add, t(S::Int64), t(S::Float64, true), S::Float64, "but a higher category from a 0-d tensor counts"},
      {Op::add, t(S::Int64), wrapped_float, S::Float32, "int64 + Python float -> default float"},
      {Op::add, t(S::Float64), wrapped_float, S::Float64, "float64 + Python float"},
      {Op::add, t(S::Bool), wrapped_int, S::Int64, "bool + Python int"},
      {Op::add, t(S::Float32), wrapped_int, S::Float32, "float32 + Python int"},
      {Op::eq, t(S::Int64), t(S::Float32), S::Bool, "comparisons are bool"},
      {Op::lt, t(S::Float64), t(S::Float64), S::Bool, "comparisons are bool"},
      {Op::gt, t(S::Bool), t(S::Bool), S::Bool, "comparisons are bool"},
      {Op::ne, t(S::Int64), t(S::Float64), S::Bool, "comparisons are bool"},
      {Op::le, t(S::Float32), t(S::Int64), S::Bool, "comparisons are bool"},
      {Op::ge, t(S::Bool), t(S::Float32), S::Bool, "comparisons are bool"},
      {Op::add, t(S::Float16), t(S::BFloat16), S::Float32, "neither 16-bit float holds the other: float32"},
      {Op::mul, t(S::Float16), t(S::Float32), S::Float32, "float16 * float32"},
      {Op::add, t(S::BFloat16), t(S::Float64), S::Float64, "bfloat16 + float64"},
      {Op::add, t(S::Float16), wrapped_float, S::Float16, "float16 + Python float stays float16"},
      {Op::add, t(S::Int64), t(S::BFloat16), S::BFloat16, "int64 + bfloat16"},
      {Op::add, t(S::Float16), t(S::Float32, true), S::Float16, "a 0-d float32 does not widen float16"},
      {Op::add, t(S::Float16, true), t(S::BFloat16, true), S::Float32, "two 0-d 16-bit floats"},
      {Op::div, t(S::Float16), t(S::Int64), S::Float16, "float16 / int64"},
  };
  for (const Case& c : cases) EXPECT_EQ(call(c.op, c.a, c.b).dtype(), c.want) << c.what;
  // The compute dtype itself, before div and the comparisons pick their output dtype.
  EXPECT_EQ(kernels::result_type(t(S::Int64), t(S::Int64)), S::Int64);
  EXPECT_EQ(kernels::result_type(t(S::Bool), t(S::Float64, true)), S::Float64);
  EXPECT_EQ(kernels::result_type(t(S::Float64, true), t(S::Float32, true)), S::Float64)
      << "two 0-d tensors: normal rules";
}

// torch.promote_types over every pair of dtypes, PyTorch's promoteTypes table
// written out (rows and columns: b, u8, i8, i16, i32, i64, f16, bf16, f32, f64).
TEST(Promotion, TheTableOfEveryPair) {
  using S = ScalarType;
  const S order[] = {S::Bool,  S::UInt8,   S::Int8,     S::Int16,   S::Int32,
                     S::Int64, S::Float16, S::BFloat16, S::Float32, S::Float64};
  const S b = S::Bool, u8 = S::UInt8, i8 = S::Int8, i16 = S::Int16, i32 = S::Int32, i64 = S::Int64, f16 = S::Float16,
          bf = S::BFloat16, f32 = S::Float32, f64 = S::Float64;
  const S table[10][10] = {
      /* b   */ {b, u8, i8, i16, i32, i64, f16, bf, f32, f64},
      /* u8  */ {u8, u8, i16, i16, i32, i64, f16, bf, f32, f64},
      /* i8  */ {i8, i16, i8, i16, i32, i64, f16, bf, f32, f64},
      /* i16 */ {i16, i16, i16, i16, i32, i64, f16, bf, f32, f64},
      /* i32 */ {i32, i32, i32, i32, i32, i64, f16, bf, f32, f64},
      /* i64 */ {i64, i64, i64, i64, i64, i64, f16, bf, f32, f64},
      /* f16 */ {f16, f16, f16, f16, f16, f16, f16, f32, f32, f64},
      /* bf  */ {bf, bf, bf, bf, bf, bf, f32, bf, f32, f64},
      /* f32 */ {f32, f32, f32, f32, f32, f32, f32, f32, f32, f64},
      /* f64 */ {f64, f64, f64, f64, f64, f64, f64, f64, f64, f64},
  };
  for (int i = 0; i < 10; ++i)
    for (int j = 0; j < 10; ++j) {
      EXPECT_EQ(kernels::promote_types_of(order[i], order[j]), table[i][j])
          << dtype_name(order[i]) << ", " << dtype_name(order[j]);
      const Tensor a = make({2}, order[i], {1, 0}), c = make({2}, order[j], {1, 1});
      EXPECT_EQ(kernels::result_type(a, c), table[i][j]) << dtype_name(order[i]) << " + " << dtype_name(order[j]);
    }
}

TEST(Promotion, NarrowIntegersWithNumbersAndZeroDimTensors) {
  using S = ScalarType;
  Tensor wrapped_int = make({}, S::Int64, {1});
  wrapped_int.impl()->wrapped_number = true;
  Tensor wrapped_float = make({}, S::Float64, {1.5});
  wrapped_float.impl()->wrapped_number = true;
  for (S t : {S::UInt8, S::Int8, S::Int16, S::Int32}) {
    const Tensor x = make({3}, t, {1, 2, 3});
    EXPECT_EQ(call(Op::add, x, wrapped_int).dtype(), t) << "a Python int keeps " << dtype_name(t);
    EXPECT_EQ(call(Op::mul, x, make({}, S::Int64, {3})).dtype(), t) << "a 0-d int64 tensor keeps " << dtype_name(t);
    EXPECT_EQ(call(Op::add, x, wrapped_float).dtype(), S::Float32) << "a Python float gives the default float";
    EXPECT_EQ(call(Op::add, x, make({}, S::Float64, {1.5})).dtype(), S::Float64) << "a 0-d float64 tensor: float64";
    EXPECT_EQ(call(Op::div, x, x).dtype(), S::Float32) << "true division";
    EXPECT_EQ(call(Op::add, x, make({3}, S::Bool, {1, 0, 1})).dtype(), t) << "bool + int";
    EXPECT_EQ(call(Op::lt, x, wrapped_float).dtype(), S::Bool);
  }
  EXPECT_EQ(call(Op::add, make({1}, S::UInt8, {1}), make({1}, S::Int8, {1})).dtype(), S::Int16);
  EXPECT_EQ(values(call(Op::add, make({1}, S::UInt8, {200}), make({1}, S::Int8, {-100}))), (std::vector<double>{100}));
}

TEST(Promotion, IntegerArithmeticWraps) {
  using S = ScalarType;
  // Two's complement wraparound, as in C and PyTorch, on both CPU variants.
  for (auto variant : {kernels::Variant::Reference, kernels::Variant::Optimized}) {
    kernels::VariantGuard guard(variant);
    EXPECT_EQ(values(call(Op::add, make({2}, S::UInt8, {255, 200}), make({2}, S::UInt8, {1, 100}))),
              (std::vector<double>{0, 44}));
    EXPECT_EQ(values(call(Op::sub, make({1}, S::UInt8, {0}), make({1}, S::UInt8, {1}))), (std::vector<double>{255}));
    EXPECT_EQ(values(call(Op::add, make({1}, S::Int8, {127}), make({1}, S::Int8, {1}))), (std::vector<double>{-128}));
    EXPECT_EQ(values(call(Op::mul, make({1}, S::Int16, {300}), make({1}, S::Int16, {300}))),
              (std::vector<double>{24464}));
    EXPECT_EQ(values(call(Op::add, make({1}, S::Int32, {2147483647}), make({1}, S::Int32, {1}))),
              (std::vector<double>{-2147483648.0}));
    EXPECT_EQ(values(call(Op::neg, make({2}, S::Int8, {-128, 5}))), (std::vector<double>{-128, -5}));
    EXPECT_EQ(values(call(Op::neg, make({2}, S::UInt8, {1, 0}))), (std::vector<double>{255, 0}));
    EXPECT_EQ(values(call(Op::abs, make({2}, S::Int8, {-128, -5}))), (std::vector<double>{-128, 5}));
  }
  // A sum of a narrow integer is int64 (and so does not wrap at its width); a dtype keeps the width.
  const Tensor big = make({3}, S::Int32, {2147483647, 2147483647, 2});
  const Tensor total = call(Op::sum, big, IValue());
  EXPECT_EQ(total.dtype(), S::Int64);
  EXPECT_EQ(values(total), (std::vector<double>{4294967296.0}));
  const Tensor wrapped = call(Op::sum, big, S::Int32);
  EXPECT_EQ(wrapped.dtype(), S::Int32);
  EXPECT_EQ(values(wrapped), (std::vector<double>{0}));
  EXPECT_EQ(call(Op::sum, make({2}, S::UInt8, {255, 255}), IValue()).dtype(), S::Int64);
  EXPECT_EQ(values(call(Op::sum, make({2}, S::UInt8, {255, 255}), IValue())), (std::vector<double>{510}));
}

TEST(Promotion, PromotedValues) {
  using S = ScalarType;
  EXPECT_EQ(values(call(Op::add, make({3}, S::Int64, {1, 2, 3}), make({3}, S::Float32, {0.5, 0.5, 0.25}))),
            (std::vector<double>{1.5, 2.5, 3.25}));
  EXPECT_EQ(values(call(Op::div, make({3}, S::Int64, {7, -7, 1}), make({3}, S::Int64, {2, 2, 0}))),
            (std::vector<double>{3.5, -3.5, INFINITY}));
  EXPECT_EQ(values(call(Op::add, make({4}, S::Bool, {1, 1, 0, 0}), make({4}, S::Bool, {1, 0, 1, 0}))),
            (std::vector<double>{1, 1, 1, 0}))
      << "bool + is logical or";
  EXPECT_EQ(values(call(Op::mul, make({4}, S::Bool, {1, 1, 0, 0}), make({4}, S::Bool, {1, 0, 1, 0}))),
            (std::vector<double>{1, 0, 0, 0}))
      << "bool * is logical and";
  Tensor s = call(Op::sum, make({2, 2}, S::Int64, {1, 2, 3, 4}));
  EXPECT_EQ(s.dtype(), S::Int64);
  EXPECT_EQ(values(s), (std::vector<double>{10}));
  Tensor sb = call(Op::sum, make({5}, S::Bool, {1, 0, 1, 1, 0}));
  EXPECT_EQ(sb.dtype(), S::Int64) << "sum(bool) counts in int64";
  EXPECT_EQ(values(sb), (std::vector<double>{3}));
  EXPECT_EQ(call(Op::exp, make({1}, S::Bool, {1})).dtype(), S::Float32);
  EXPECT_EQ(call(Op::abs, make({1}, S::Int64, {-3})).dtype(), S::Int64);
}

// [SECTION] Errors -----------------------------------------------------------------------

TEST(ElementwiseErrors, BoolNegSubAndFloatAlpha) {
  Tensor b = make({2}, ScalarType::Bool, {1, 0});
  EXPECT_THROW(call(Op::neg, b), Error);
  EXPECT_THROW(call(Op::sub, b, b), Error);
  Tensor i = make({2}, ScalarType::Int64, {1, 2});
  EXPECT_THROW(call(Op::add, i, i, 2.5), Error);
  EXPECT_NO_THROW(call(Op::add, make({2}, ScalarType::Float32, {1, 2}), i, 2.5));
}

TEST(ElementwiseErrors, ShapesThatDoNotBroadcastNameTheDimension) {
  try {
    call(Op::mul, make({3}, ScalarType::Float32, {1, 2, 3}), make({4}, ScalarType::Float32, {1, 2, 3, 4}));
    ADD_FAILURE() << "no error";
  } catch (const Error& e) {
    std::string m = e.what();
    EXPECT_EQ(m, "The size of tensor a (3) must match the size of tensor b (4) at non-singleton dimension 0") << m;
  }
  EXPECT_THROW(call(Op::eq, make({2, 3}, ScalarType::Int64, std::vector<double>(6)),
                    make({3, 2}, ScalarType::Int64, std::vector<double>(6))),
               Error);
}

// PyTorch's rules: a tensor of integer exponents may be negative (powi: 1 for
// a base of 1, +-1 for -1, else 0); a Python int exponent (a wrapped number)
// may not, "Integers to negative integer powers are not allowed."
TEST(ElementwiseErrors, IntegerPowWithNegativeExponent) {
  std::mt19937_64 rng(41);
  Tensor base = make({6}, ScalarType::Int64, {2, 3, 1, -1, -1, 0});
  Tensor exps = make({6}, ScalarType::Int64, {1, -1, -7, -3, -2, -1});
  Tensor wrapped = make({}, ScalarType::Int64, {-2});
  wrapped.impl()->wrapped_number = true;
  for (auto v : {kernels::Variant::Reference, kernels::Variant::Auto}) {
    kernels::VariantGuard g(v);
    EXPECT_EQ(values(call(Op::pow, base, exps)), (std::vector<double>{2, 0, 1, -1, 1, 0}));
    EXPECT_EQ(values(call(Op::pow, make({2}, ScalarType::Int64, {2, 1}), make({}, ScalarType::Int64, {-2}))),
              (std::vector<double>{0, 1}))
        << "a 0-d tensor exponent is a tensor, not a number";
    EXPECT_THROW(call(Op::pow, transposed({2, 2}, ScalarType::Int64, rng, 1, 3), wrapped), Error);
    EXPECT_THROW(call(Op::pow, make({2}, ScalarType::Bool, {1, 0}), wrapped), Error) << "bool is integral too";
  }
  // A float exponent promotes to float: no error.
  EXPECT_EQ(
      values(call(Op::pow, make({4}, ScalarType::Int64, {2, 3, 4, 5}), make({4}, ScalarType::Float32, {1, 2, -1, 0}))),
      (std::vector<double>{2, 9, 0.25, 1}));
}

}  // namespace
}  // namespace descent
