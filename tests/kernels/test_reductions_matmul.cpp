// Tests for the reduction and matmul CPU kernels (floors/kernels/
// reduction_kernels.cpp, product_kernels.cpp, reference.cpp, optimized.cpp):
// sum, mean, max and max.dim
// against float64 loops written here, over many dims, keepdim, non-contiguous,
// zero-size and 0-d inputs; reference and optimized sums agreeing within
// Note [Summation bound] on [64, 1000] inputs; NaN and ties in max; matmul in
// its 1-d, 2-d and batched forms.
//
// [SECTION] A float64 reference reduction
// [SECTION] sum and mean
// [SECTION] Reference against optimized sums
// [SECTION] max and max.dim
// [SECTION] matmul
#include <gtest/gtest.h>

#include <climits>
#include <cmath>
#include <limits>
#include <optional>
#include <string>
#include <vector>

#include "floors/kernels/kernels.h"
#include "floors/kernels/cpu/matmul_rungs.h"
#include "floors/kernels/cpu/parallel.h"
#include "kernel_test_util.h"

namespace descent {
namespace {

using namespace testing_util;
using kernels::Variant;
using kernels::VariantGuard;

// [SECTION] A float64 reference reduction ----------------------------------------------

struct Reduced {
  DimVector keep;           // in's sizes with reduced dims set to 1
  std::vector<double> sum;  // per keep element, in long double then rounded
  std::vector<double> abs_sum;
  std::vector<int64_t> count;
};

Reduced reduce_ref(const Tensor& in, const std::vector<bool>& reduced) {
  Reduced r;
  r.keep = in.sizes();
  for (int d = 0; d < in.dim(); ++d)
    if (reduced[size_t(d)]) r.keep[d] = 1;
  int64_t n_out = numel_of(r.keep);
  std::vector<long double> acc(size_t(n_out), 0), abs_acc(size_t(n_out), 0);
  r.count.assign(size_t(n_out), 0);
  std::vector<double> v = values(in);
  for (int64_t i = 0; i < in.numel(); ++i) {
    int64_t rest = i, o = 0, mul = 1;
    for (int d = in.dim() - 1; d >= 0; --d) {
      int64_t idx = rest % in.sizes()[d];
      rest /= in.sizes()[d];
      if (!reduced[size_t(d)]) o += idx * mul;
      mul *= r.keep[d];
    }
    acc[size_t(o)] += v[size_t(i)];
    abs_acc[size_t(o)] += std::fabs(v[size_t(i)]);
    ++r.count[size_t(o)];
  }
  for (int64_t j = 0; j < n_out; ++j)
    r.sum.push_back(double(acc[size_t(j)])), r.abs_sum.push_back(double(abs_acc[size_t(j)]));
  return r;
}

DimVector drop_reduced(const DimVector& keep, const std::vector<bool>& reduced) {
  DimVector out;
  for (int d = 0; d < keep.size(); ++d)
    if (!reduced[size_t(d)]) out.push_back(keep[d]);
  return out;
}

double eps_of(ScalarType t) { return t == ScalarType::Float32 ? 0x1p-24 : t == ScalarType::Float64 ? 0x1p-53 : 0; }

// Runs sum or mean with dims (None when empty optional) and checks it against reduce_ref.
void check_sum(Op op, const Tensor& x, const std::optional<DimVector>& dims, bool keepdim) {
  SCOPED_TRACE(std::string(op_entry(op).name) + " of " + x.shape_str() + " " + dtype_name(x.dtype()) + " dims " +
               (dims ? dims->str() : "None") + (keepdim ? " keepdim" : ""));
  ASSERT_GT(x.dim(), 0) << "check_sum is for tensors with dimensions";
  std::vector<bool> reduced(size_t(x.dim()), !dims || dims->empty());
  if (dims)
    for (int64_t d : *dims) reduced[size_t(wrap_dim(d, x.dim(), "test"))] = true;
  Tensor out = call(op, x, dims ? IValue(*dims) : IValue(), keepdim);
  Reduced r = reduce_ref(x, reduced);
  ASSERT_EQ(out.sizes(), keepdim ? r.keep : drop_reduced(r.keep, reduced));
  ScalarType want = is_floating(x.dtype()) ? x.dtype() : ScalarType::Int64;
  ASSERT_EQ(out.dtype(), want);
  std::vector<double> got = values(out);
  for (size_t j = 0; j < got.size(); ++j) {
    double n = double(r.count[j]);
    double want_v = op == Op::mean_dim ? (n ? r.sum[j] / n : NAN) : r.sum[j];
    // Note [Summation bound], for one cascade: cascade_depth(n) eps sum|x|, divided by n for mean; plus the final rounding.
    double bound =
        double(kernels::cascade_depth(int64_t(n))) * eps_of(want) * r.abs_sum[j] / (op == Op::mean_dim && n ? n : 1) +
        eps_of(want) * std::fabs(want_v);
    if (std::isnan(want_v)) {
      EXPECT_TRUE(std::isnan(got[j])) << j;
    } else {
      EXPECT_LE(std::fabs(got[j] - want_v), bound) << "element " << j << ": got " << got[j] << ", want " << want_v;
    }
  }
}

// [SECTION] sum and mean ---------------------------------------------------------------

TEST(Sum, EveryDimChoiceMatchesReference) {
  std::mt19937_64 rng(51);
  std::vector<std::optional<DimVector>> dim_choices = {
      std::nullopt,  DimVector{},     DimVector{0},    DimVector{1},       DimVector{2},
      DimVector{-1}, DimVector{0, 2}, DimVector{2, 0}, DimVector{0, 1, 2}, DimVector{1, 2}};
  for (ScalarType dt : {ScalarType::Float32, ScalarType::Float64, ScalarType::Int64, ScalarType::Bool}) {
    Tensor contiguous = random_tensor({3, 4, 5}, dt, rng, -10, 10);
    Tensor permuted = call(Op::permute, random_tensor({5, 3, 4}, dt, rng, -10, 10), DimVector{1, 2, 0});
    Tensor sliced = call(Op::slice, random_tensor({3, 8, 5}, dt, rng, -10, 10), 1, 1, IValue(), 2);
    for (const Tensor& x : {contiguous, permuted, sliced})
      for (const auto& dims : dim_choices)
        for (bool keepdim : {false, true}) {
          check_sum(Op::sum_dim, x, dims, keepdim);
          if (is_floating(dt)) check_sum(Op::mean_dim, x, dims, keepdim);
        }
  }
}

TEST(Sum, ZeroSizeAndZeroDim) {
  Tensor empty = make({0, 3}, ScalarType::Float32, {});
  for (Op op : {Op::sum_dim, Op::mean_dim}) {
    for (const auto& dims :
         {std::optional<DimVector>{}, std::optional<DimVector>{DimVector{0}}, std::optional<DimVector>{DimVector{1}}})
      for (bool keepdim : {false, true}) check_sum(op, empty, dims, keepdim);
  }
  EXPECT_EQ(values(call(Op::sum_dim, empty, DimVector{0})), (std::vector<double>{0, 0, 0}));
  EXPECT_TRUE(std::isnan(values(call(Op::mean, empty))[0])) << "the mean of nothing is NaN";
  Tensor scalar = make({}, ScalarType::Float64, {2.5});
  for (const auto& dims :
       {std::optional<DimVector>{}, std::optional<DimVector>{DimVector{0}}, std::optional<DimVector>{DimVector{-1}}}) {
    Tensor s = call(Op::sum_dim, scalar, dims ? IValue(*dims) : IValue(), true);
    EXPECT_EQ(s.dim(), 0);
    EXPECT_EQ(values(s), (std::vector<double>{2.5}));
  }
}

TEST(Sum, BadDimsRaise) {
  Tensor x = make({2, 3}, ScalarType::Float32, std::vector<double>(6, 1));
  try {
    call(Op::sum_dim, x, DimVector{2});
    ADD_FAILURE() << "no error";
  } catch (const IndexError& e) {
    EXPECT_STREQ(e.what(), "Dimension out of range (expected to be in range of [-2, 1], but got 2)");  // c10's: no op
  }
  EXPECT_THROW(call(Op::sum_dim, x, DimVector{1, -1}), Error) << "a repeated dim";
  EXPECT_THROW(call(Op::mean_dim, make({2}, ScalarType::Int64, {1, 2})), Error) << "mean needs a float dtype";
}

TEST(Sum, Int64SumAndMatmulWrapAroundOnOverflow) {
  Tensor big = make({9}, ScalarType::Int64, std::vector<double>(9, 0));
  for (int i = 0; i < 9; ++i) big.data<int64_t>()[i] = INT64_MAX / 4;
  const int64_t wrapped = int64_t(uint64_t(INT64_MAX / 4) * 9u);
  for (auto v : {Variant::Reference, Variant::Auto}) {
    VariantGuard g(v);
    EXPECT_EQ(call(Op::sum, big).data<int64_t>()[0], wrapped);
    Tensor m = call(Op::matmul, call(Op::view, big, DimVector{1, 9}), call(Op::view, big, DimVector{9, 1}));
    EXPECT_EQ(m.data<int64_t>()[0], int64_t(uint64_t(INT64_MAX / 4) * uint64_t(INT64_MAX / 4) * 9u));
  }
}

// [SECTION] Reference against optimized sums ------------------------------------------

TEST(SumVariants, AgreeWithinTheSummationBound) {
  std::mt19937_64 rng(61);
  for (ScalarType dt : {ScalarType::Float32, ScalarType::Float64}) {
    // Mixed signs and magnitudes make the order of additions matter.
    Tensor x = random_tensor({64, 1000}, dt, rng, -1, 1);
    for (int64_t i = 0; i < x.numel(); i += 97) {
      visit_dtype(dt, [&]<typename T>() {
        if constexpr (std::is_floating_point_v<T>) x.data<T>()[i] *= T(1000);
      });
    }
    for (const auto& dims : {std::optional<DimVector>{}, std::optional<DimVector>{DimVector{1}},
                             std::optional<DimVector>{DimVector{0}}, std::optional<DimVector>{DimVector{-1, 0}}}) {
      for (Op op : {Op::sum_dim, Op::mean_dim}) {
        SCOPED_TRACE(std::string(op_entry(op).name) + " " + dtype_name(dt) + " dims " + (dims ? dims->str() : "None"));
        IValue d = dims ? IValue(*dims) : IValue();
        Tensor ref, opt;
        {
          VariantGuard g(Variant::Reference);
          ref = call(op, x, d);
          EXPECT_STREQ(kernels::last_variant(), "reference");
        }
        {
          VariantGuard g(Variant::Optimized);
          opt = call(op, x, d);
          EXPECT_STREQ(kernels::last_variant(), "optimized") << "a contiguous block of reduced dims is fast";
        }
        std::vector<bool> reduced(2, !dims);
        if (dims)
          for (int64_t k : *dims) reduced[size_t(wrap_dim(k, 2, "test"))] = true;
        Reduced r = reduce_ref(x, reduced);
        std::vector<double> rv = values(ref), ov = values(opt);
        ASSERT_EQ(rv.size(), r.sum.size());
        for (size_t j = 0; j < rv.size(); ++j) {
          double n = double(r.count[j]);
          double bound =
              2 * double(kernels::cascade_depth(int64_t(n))) * eps_of(dt) * r.abs_sum[j] / (op == Op::mean_dim ? n : 1);
          EXPECT_LE(std::fabs(rv[j] - ov[j]), bound) << "element " << j;
        }
        check_sum(op, x, dims, false);  // the Auto result against the float64 reference too
      }
    }
  }
  // Small integers stored as floats sum exactly in any order: then the variants must agree exactly,
  // which catches an element dropped or added twice that the bound above could hide.
  Tensor ints = random_tensor({64, 1000}, ScalarType::Float32, rng, -50, 50);
  for (int64_t i = 0; i < ints.numel(); ++i) ints.data<float>()[i] = std::floor(ints.data<float>()[i]);
  for (const auto& dims :
       {std::optional<DimVector>{}, std::optional<DimVector>{DimVector{1}}, std::optional<DimVector>{DimVector{0}}}) {
    IValue d = dims ? IValue(*dims) : IValue();
    Tensor opt = call(Op::sum_dim, ints, d);
    VariantGuard g(Variant::Reference);
    EXPECT_EQ(values(opt), values(call(Op::sum_dim, ints, d))) << (dims ? dims->str() : "None");
    check_sum(Op::sum_dim, ints, dims, false);
  }
  // A non-contiguous input has no fast path: both variants are the reference loop, bit for bit.
  Tensor t = transposed({40, 30}, ScalarType::Float32, rng);
  Tensor a = call(Op::sum_dim, t, DimVector{1});
  EXPECT_STREQ(kernels::last_variant(), "reference");
  VariantGuard g(Variant::Reference);
  EXPECT_EQ(values(a), values(call(Op::sum_dim, t, DimVector{1})));
}

// [SECTION] max and max.dim ------------------------------------------------------------

TEST(Max, NaNPropagatesInBothVariants) {
  const double nan = std::numeric_limits<double>::quiet_NaN();
  for (ScalarType dt : {ScalarType::Float32, ScalarType::Float64}) {
    for (int pos : {0, 5, 11}) {
      std::vector<double> v = {1, 7, -3, 2, 9, 4, 0, 8, 3, 5, 6, -1};
      v[size_t(pos)] = nan;
      Tensor x = make({3, 4}, dt, v);
      Tensor xt = call(Op::transpose, make({4, 3}, dt, v), 0, 1);
      for (auto var : {Variant::Reference, Variant::Auto}) {
        VariantGuard g(var);
        for (const Tensor& in : {x, xt}) {
          Tensor m = call(Op::max, in);
          EXPECT_EQ(m.dim(), 0);
          EXPECT_TRUE(std::isnan(values(m)[0])) << "NaN at " << pos << " " << dtype_name(dt);
        }
      }
    }
  }
  Tensor x = make({5}, ScalarType::Float32, {-INFINITY, -3, -INFINITY, -2.5, -7});
  EXPECT_EQ(values(call(Op::max, x))[0], -2.5);
  EXPECT_EQ(values(call(Op::max, make({3}, ScalarType::Int64, {-5, -2, -9})))[0], -2);
  EXPECT_EQ(values(call(Op::max, make({3}, ScalarType::Bool, {0, 1, 0})))[0], 1);
  EXPECT_EQ(values(call(Op::max, make({}, ScalarType::Float32, {4})))[0], 4);
  EXPECT_THROW(call(Op::max, make({0, 3}, ScalarType::Float32, {})), Error);
}

// Runs max.dim and returns (values, indices).
std::pair<Tensor, Tensor> max_dim(const Tensor& x, int64_t dim, bool keepdim = false) {
  Stack s;
  s.push(x);
  s.push(dim);
  s.push(keepdim);
  call_boxed(Op::max_dim, s);
  EXPECT_EQ(s.size(), 2);
  return {s[0].to_tensor(), s[1].to_tensor()};
}

TEST(MaxDim, TiesGiveTheFirstIndex) {
  Tensor x = make({2, 3}, ScalarType::Float32, {1, 3, 3, 2, 2, 1});
  auto [v1, i1] = max_dim(x, 1);
  EXPECT_EQ(values(v1), (std::vector<double>{3, 2}));
  EXPECT_EQ(values(i1), (std::vector<double>{1, 0}));
  auto [v0, i0] = max_dim(x, 0);
  EXPECT_EQ(values(v0), (std::vector<double>{2, 3, 3}));
  EXPECT_EQ(values(i0), (std::vector<double>{1, 0, 0}));
  auto [vk, ik] = max_dim(x, -1, true);
  EXPECT_EQ(vk.sizes(), (DimVector{2, 1}));
  EXPECT_EQ(ik.sizes(), (DimVector{2, 1}));
  EXPECT_EQ(ik.dtype(), ScalarType::Int64);
  // The same ties seen through a transpose.
  Tensor xt = call(Op::transpose, make({3, 2}, ScalarType::Int64, {5, 1, 5, 1, 4, 1}), 0, 1);
  auto [vt, it] = max_dim(xt, 1);
  EXPECT_EQ(values(vt), (std::vector<double>{5, 1}));
  EXPECT_EQ(values(it), (std::vector<double>{0, 0}));
  // NaN is the maximum, and its first occurrence is the index.
  auto [vn, in] = max_dim(make({1, 4}, ScalarType::Float64, {1, NAN, 9, NAN}), 1);
  EXPECT_TRUE(std::isnan(values(vn)[0]));
  EXPECT_EQ(values(in)[0], 1);
}

TEST(MaxDim, MatchesReferenceOnEveryDim) {
  std::mt19937_64 rng(71);
  for (ScalarType dt : {ScalarType::Float32, ScalarType::Int64, ScalarType::Bool}) {
    Tensor x = call(Op::permute, random_tensor({5, 4, 6}, dt, rng, -3, 3), DimVector{1, 0, 2});  // [4, 5, 6]
    std::vector<double> xv = values(x);
    for (int dim = 0; dim < 3; ++dim) {
      auto [v, idx] = max_dim(x, dim);
      std::vector<double> got_v = values(v), got_i = values(idx);
      DimVector sizes = x.sizes();
      int64_t n = sizes[dim], inner = 1;
      for (int d = dim + 1; d < 3; ++d) inner *= sizes[d];
      for (int64_t o = 0; o < int64_t(got_v.size()); ++o) {
        int64_t outer = o / inner, in_pos = o % inner, best = 0;
        auto at = [&](int64_t k) { return xv[size_t((outer * n + k) * inner + in_pos)]; };
        for (int64_t k = 1; k < n; ++k)
          if (at(k) > at(best)) best = k;
        EXPECT_EQ(got_i[size_t(o)], best) << dtype_name(dt) << " dim " << dim << " element " << o;
        EXPECT_EQ(got_v[size_t(o)], at(best));
      }
    }
  }
}

TEST(MaxDim, ZeroSizeAndZeroDim) {
  Tensor empty = make({0, 3}, ScalarType::Float32, {});
  EXPECT_THROW(max_dim(empty, 0), IndexError);
  auto [v, i] = max_dim(empty, 1);
  EXPECT_EQ(v.sizes(), (DimVector{0}));
  auto [vs, is] = max_dim(make({}, ScalarType::Float32, {3}), 0);
  EXPECT_EQ(vs.dim(), 0);
  EXPECT_EQ(values(vs)[0], 3);
  EXPECT_EQ(values(is)[0], 0);
  EXPECT_THROW(max_dim(make({2}, ScalarType::Float32, {1, 2}), 1), IndexError);
}

// [SECTION] matmul ----------------------------------------------------------------------

// float64 reference of torch.matmul for the shapes below (1-d, 2-d, batched with broadcasting).
void check_matmul(const Tensor& a, const Tensor& b, const DimVector& want_shape) {
  SCOPED_TRACE("matmul " + a.shape_str() + " x " + b.shape_str());
  Tensor out = call(Op::matmul, a, b);
  ASSERT_EQ(out.sizes(), want_shape);
  // Treat both as [batch..., M, K] and [batch..., K, N] with size-1 batch dims broadcast.
  DimVector as = a.sizes(), bs = b.sizes();
  if (a.dim() == 1) as = DimVector{1, as[0]};
  if (b.dim() == 1) bs = DimVector{bs[0], 1};
  int64_t M = as[as.size() - 2], K = as[as.size() - 1], N = bs[bs.size() - 1];
  int nb = std::max(as.size(), bs.size()) - 2;
  std::vector<double> av = values(a), bv = values(b), ov = values(out);
  int64_t batches = int64_t(ov.size()) / std::max<int64_t>(1, M * N);
  ScalarType dt = out.dtype();
  for (int64_t bi = 0; bi < batches; ++bi) {
    // The batch index in each operand: unravel over the broadcast batch shape, 0 where an operand has size 1.
    int64_t rest = bi, a_off = 0, b_off = 0, a_mul = M * K, b_mul = K * N;
    for (int d = nb - 1; d >= 0; --d) {
      int ka = d - (nb - (as.size() - 2)), kb = d - (nb - (bs.size() - 2));
      int64_t sa = ka >= 0 ? as[ka] : 1, sb = kb >= 0 ? bs[kb] : 1, s = std::max(sa, sb);
      int64_t idx = rest % s;
      rest /= s;
      if (sa != 1) a_off += idx * a_mul;
      if (sb != 1) b_off += idx * b_mul;
      a_mul *= sa, b_mul *= sb;
    }
    for (int64_t i = 0; i < M; ++i)
      for (int64_t j = 0; j < N; ++j) {
        double acc = 0, abs_acc = 0;
        for (int64_t k = 0; k < K; ++k) {
          double p = av[size_t(a_off + i * K + k)] * bv[size_t(b_off + k * N + j)];
          acc += p, abs_acc += std::fabs(p);
        }
        double got = ov[size_t(bi * M * N + i * N + j)];
        EXPECT_LE(std::fabs(got - acc), 2 * double(K + 1) * eps_of(dt) * abs_acc)
            << "batch " << bi << " [" << i << ", " << j << "]";
      }
  }
}

TEST(Matmul, ShapesMatchFloat64Reference) {
  std::mt19937_64 rng(81);
  for (ScalarType dt : {ScalarType::Float32, ScalarType::Float64, ScalarType::Int64}) {
    auto r = [&](const DimVector& s) { return random_tensor(s, dt, rng, -5, 5); };
    check_matmul(r({17, 23}), r({23, 19}), {17, 19});
    check_matmul(transposed({17, 23}, dt, rng), transposed({23, 19}, dt, rng), {17, 19});
    check_matmul(r({7}), r({7}), {});
    check_matmul(r({3, 7}), r({7}), {3});
    check_matmul(r({7}), r({7, 4}), {4});
    check_matmul(r({2, 3, 4}), r({4, 5}), {2, 3, 5});
    check_matmul(r({3, 4}), r({2, 4, 5}), {2, 3, 5});
    check_matmul(r({2, 1, 3, 4}), r({5, 4, 2}), {2, 5, 3, 2});
    check_matmul(r({4}), r({2, 4, 5}), {2, 5});
    check_matmul(r({3, 0}), r({0, 4}), {3, 4});  // K = 0: zeros
    check_matmul(r({0, 3}), r({3, 4}), {0, 4});
  }
  EXPECT_EQ(values(call(Op::matmul, make({3, 0}, ScalarType::Float32, {}), make({0, 2}, ScalarType::Float32, {}))),
            std::vector<double>(6, 0.0));
}

TEST(Matmul, VariantsAgreeBitForBitAndErrorsAreRaised) {
  std::mt19937_64 rng(82);
  Tensor a = random_tensor({9, 33}, ScalarType::Float32, rng), b = random_tensor({33, 10}, ScalarType::Float32, rng);
  Tensor ref;
  {
    VariantGuard g(Variant::Reference);
    ref = call(Op::matmul, a, b);
  }
  EXPECT_EQ(values(ref), values(call(Op::matmul, a, b))) << "both add products in ascending k";
  EXPECT_STREQ(kernels::last_variant(), "optimized");
  EXPECT_THROW(call(Op::matmul, a, a), Error);  // mm's: "mat1 and mat2 shapes cannot be multiplied"
  EXPECT_THROW(call(Op::matmul, make({}, ScalarType::Float32, {1}), b), Error);
  Tensor m = make({2, 2}, ScalarType::Bool, {1, 0, 0, 1});
  EXPECT_THROW(call(Op::matmul, m, m), Error);
}

// Note [Register-blocked matmul]: every vector unit this CPU has, on shapes
// that take every path (whole tiles of MR rows, leftover rows, one-vector
// tiles, the last columns in registers, several blocks of k with a partial last one, a
// range of rows that crosses batches), with zeros of both signs and
// infinities among the inputs, gives the reference's bits on 1 and 3 threads.
TEST(Matmul, RegisterTilesGiveTheReferenceBitsOnEveryVectorUnit) {
  std::mt19937_64 rng(83);
  struct Shape {
    int64_t batch, m, k, n;
  };
  // The last three: columns fewer than a vector, summed in registers eight rows at a time (Linear(3, 1)'s
  // product and its rows left over, and 17 columns: one vector tile and one such column).
  const Shape shapes[] = {{1, 13, 600, 87}, {1, 6, 256, 64}, {3, 5, 257, 33}, {2, 1, 40, 100},
                          {1, 25, 3, 7},    {1, 2003, 3, 1}, {2, 19, 5, 17}};
  const std::string widest = kernels::matmul_isa();
  const int saved_threads = kernels::get_num_threads();
  kernels::MatmulRungGuard rung(DeviceType::CPU, "register");  // auto would pack the larger ones (Note [Matmul rungs])
  for (const std::string& isa : kernels::matmul_isas()) {
    kernels::set_matmul_isa(isa);
    EXPECT_EQ(kernels::matmul_isa(), isa);
    for (ScalarType dt : {ScalarType::Float32, ScalarType::Float64}) {
      for (const Shape& sh : shapes) {
        std::vector<double> va = random_values(sh.batch * sh.m * sh.k, dt, rng, -4, 4);
        std::vector<double> vb = random_values(sh.batch * sh.k * sh.n, dt, rng, -4, 4);
        const double specials[] = {0.0, -0.0, INFINITY, -0.0};
        for (size_t s = 0; s < 4; ++s) {  // a few special values at spread-out places
          va[(s * 7919) % va.size()] = specials[s];
          vb[(s * 104729) % vb.size()] = specials[s];
        }
        Tensor a = make({sh.batch, sh.m, sh.k}, dt, va), b = make({sh.batch, sh.k, sh.n}, dt, vb);
        Tensor ref;
        {
          kernels::VariantGuard g(kernels::Variant::Reference);
          ref = call(Op::matmul, a, b);
        }
        for (int threads : {1, 3}) {
          kernels::set_num_threads(threads);
          Tensor got = call(Op::matmul, a, b);
          EXPECT_STREQ(kernels::last_variant(), "optimized");
          const std::vector<double> want = values(ref), have = values(got);
          ASSERT_EQ(want.size(), have.size());
          for (size_t i = 0; i < want.size(); ++i) {
            ASSERT_TRUE((std::isnan(want[i]) && std::isnan(have[i])) ||
                        (want[i] == have[i] && std::signbit(want[i]) == std::signbit(have[i])))
                << isa << " " << dtype_name(dt) << " " << sh.batch << "x" << sh.m << "x" << sh.k << "x" << sh.n
                << " threads=" << threads << " element " << i << ": " << have[i] << " vs " << want[i];
          }
        }
      }
    }
  }
  kernels::set_num_threads(saved_threads);
  kernels::set_matmul_isa(widest);
  EXPECT_THROW(kernels::set_matmul_isa("avx1024"), ValueError);
}

}  // namespace
}  // namespace descent
