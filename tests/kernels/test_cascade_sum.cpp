// Tests for cascade summation and zero-size work in the reduction and matmul
// kernels (Note [Cascade summation], reference.cpp; optimized.cpp): float32
// sums of millions of elements land where PyTorch's do, in both variants; the
// optimized sum is the same on any number of threads; the variants agree
// within Note [Summation bound]; empty inputs with huge empty dims cost nothing.
//
// [SECTION] Sums PyTorch gets right
// [SECTION] Threads and the bound
// [SECTION] Zero-size work is O(1)
#include <gtest/gtest.h>

#include <chrono>
#include <cmath>
#include <functional>
#include <random>
#include <vector>

#include "floors/kernels/kernels.h"
#include "floors/kernels/cpu/parallel.h"
#include "kernel_test_util.h"

namespace descent {
namespace {

using namespace testing_util;
using kernels::Variant;
using kernels::VariantGuard;

constexpr Variant kBoth[] = {Variant::Reference, Variant::Optimized};
const char* name(Variant v) { return v == Variant::Reference ? "reference" : "optimized"; }

Tensor full(const DimVector& sizes, double v, ScalarType dt = ScalarType::Float32) {
  return call(Op::full, sizes, v, dt);
}
float item_f(const Tensor& t) { return call(Op::contiguous, t).data<float>()[0]; }

// [SECTION] Sums PyTorch gets right ----------------------------------------------------

// In order in float32 these were 0.10108 and 16777216 (Note [Cascade summation]).
TEST(CascadeSum, Float32SumsOfMillionsAreRight) {
  Tensor tenths = full({10'000'000}, 0.1);
  Tensor ones_t = call(Op::permute, full({3, 1 << 23}, 1.0), DimVector{1, 0});
  for (Variant v : kBoth) {
    SCOPED_TRACE(name(v));
    VariantGuard g(v);
    EXPECT_EQ(item_f(call(Op::mean, tenths)), 0.1f);
    EXPECT_EQ(item_f(call(Op::sum, tenths)), 1e6f);
    Tensor total = call(Op::sum, ones_t);
    EXPECT_STREQ(kernels::last_variant(), name(v)) << "x.T.sum() has a fast path: the transpose is dense";
    EXPECT_EQ(item_f(total), 25165824.0f);
    Tensor rows = full({3, 1 << 23}, 1.0);
    Tensor by_row = call(Op::sum_dim, rows, DimVector{1});    // 3 long rows
    Tensor by_col = call(Op::sum_dim, ones_t, DimVector{0});  // the same, strided
    for (int i = 0; i < 3; ++i) {
      EXPECT_EQ(values(by_row)[size_t(i)], 8388608.0 * 1) << i;
      EXPECT_EQ(values(by_col)[size_t(i)], 8388608.0) << i;
    }
    // Summing over the rows of a tall matrix (the prefix layout): 2**25 rows of 1.0.
    EXPECT_EQ(values(call(Op::sum_dim, full({1 << 25, 1}, 1.0), DimVector{0}))[0], 33554432.0);
    // 0.1 is not a float: 2**22 of them are 419430.4 give or take the cascade's bound.
    for (double got : values(call(Op::sum_dim, full({1 << 22, 3}, 0.1), DimVector{0})))
      EXPECT_NEAR(got, 419430.4, double(kernels::cascade_depth(1 << 22)) * std::ldexp(1.0, -24) * 419430.4);
  }
  // Where the reduced elements are whole rows, the optimized loop adds them in the reference's order.
  std::mt19937_64 rng(7);
  Tensor r = random_tensor({100'003, 5}, ScalarType::Float32, rng, -1, 1);
  Tensor ref, opt;
  {
    VariantGuard g(Variant::Reference);
    ref = call(Op::sum_dim, r, DimVector{0});
  }
  opt = call(Op::sum_dim, r, DimVector{0});
  EXPECT_STREQ(kernels::last_variant(), "optimized");
  EXPECT_EQ(values(opt), values(ref));
}

// [SECTION] Threads and the bound ------------------------------------------------------

struct ThreadsGuard {
  int saved = kernels::get_num_threads();
  ~ThreadsGuard() { kernels::set_num_threads(saved); }
};

TEST(CascadeSum, OptimizedSumIsTheSameOnAnyNumberOfThreads) {
  ThreadsGuard restore;
  std::mt19937_64 rng(8);
  Tensor x = random_tensor({3'000'000}, ScalarType::Float32, rng, -1, 1);
  Tensor odd = random_tensor({1'234'567}, ScalarType::Float32, rng, -1, 1);
  Tensor m = random_tensor({300'001, 7}, ScalarType::Float32, rng, -1, 1);
  std::vector<std::vector<double>> got;
  for (int threads : {1, 2, 3, 4, 8}) {
    kernels::set_num_threads(threads);
    VariantGuard g(Variant::Optimized);
    std::vector<double> r = values(call(Op::sum, x));
    r.push_back(values(call(Op::sum, odd))[0]);
    for (double v : values(call(Op::sum_dim, m, DimVector{0}))) r.push_back(v);
    for (double v : values(call(Op::sum_dim, call(Op::view, x, DimVector{3, 1'000'000, 1}), DimVector{1})))
      r.push_back(v);
    got.push_back(r);
  }
  for (size_t i = 1; i < got.size(); ++i) EXPECT_EQ(got[i], got[0]) << "thread count " << i;
}

// The variants add in different orders; each is within cascade_depth(n) * u *
// sum|x| of the exact sum, so they are within twice that of each other (Note
// [Summation bound]), a far tighter bound than n * u * sum|x|.
TEST(CascadeSum, VariantsAgreeWithinTheCascadeBound) {
  std::mt19937_64 rng(9);
  const double u = std::ldexp(1.0, -24);
  for (int64_t n : {int64_t(1), int64_t(31), int64_t(33), int64_t(1000), int64_t(4097), int64_t(1'000'003)}) {
    Tensor x = random_tensor({n}, ScalarType::Float32, rng, -1, 1);
    for (int64_t i = 0; i < n; i += 97) x.data<float>()[i] *= 1000.0f;  // mixed magnitudes
    double exact = 0, abs_sum = 0;
    for (int64_t i = 0; i < n; ++i) exact += x.data<float>()[i], abs_sum += std::fabs(x.data<float>()[i]);
    double got[2];
    for (int k = 0; k < 2; ++k) {
      VariantGuard g(kBoth[k]);
      got[k] = item_f(call(Op::sum, x));
      // float64 accumulation of float32 values is exact enough to stand for the exact sum here.
      const double bound = double(kernels::cascade_depth(n)) * u * abs_sum + 1e-3 * u * abs_sum;
      EXPECT_LE(std::fabs(got[k] - exact), bound) << name(kBoth[k]) << " n=" << n;
    }
    EXPECT_LE(std::fabs(got[0] - got[1]), 2 * double(kernels::cascade_depth(n)) * u * abs_sum) << n;
  }
  EXPECT_EQ(kernels::cascade_depth(0), 0);
  EXPECT_EQ(kernels::cascade_depth(5), 4) << "never more than n - 1";
  EXPECT_EQ(kernels::cascade_depth(10'000'000), 3 + 22 + 4) << "block, levels above it, lanes";
}

// [SECTION] Zero-size work is O(1) ------------------------------------------------------

double seconds_of(const std::function<void()>& f) {
  auto t0 = std::chrono::steady_clock::now();
  f();
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

// zeros(2**30, 0).sum(0) once looped over 2**30 empty rows; an empty product
// over its 2**40 empty rows. Each must return at once, in both variants (the
// limit is generous for sanitizer builds on a busy machine: a loop over 2**30
// rows takes seconds there, one over 2**40 hours).
TEST(ZeroSize, ReductionsAndProductsOfEmptyTensorsDoNoWork) {
  Tensor tall = call(Op::zeros, DimVector{int64_t(1) << 30, 0});
  Tensor wide = call(Op::zeros, DimVector{0, int64_t(1) << 30});
  Tensor rows = call(Op::zeros, DimVector{int64_t(1) << 40, 0});
  for (Variant v : kBoth) {
    SCOPED_TRACE(name(v));
    VariantGuard g(v);
    double t = seconds_of([&] {
      EXPECT_EQ(call(Op::sum_dim, tall, DimVector{0}).sizes(), DimVector{0});
      EXPECT_EQ(call(Op::mean_dim, tall, DimVector{0}).sizes(), DimVector{0});
      EXPECT_EQ(call(Op::sum_dim, wide, DimVector{1}).sizes(), DimVector{0});
      EXPECT_EQ(values(call(Op::sum, tall)), std::vector<double>{0});
      EXPECT_EQ(call(Op::sum_dim, call(Op::permute, tall, DimVector{1, 0}), DimVector{1}).sizes(), DimVector{0});
      EXPECT_EQ(call(Op::mm, rows, call(Op::zeros, DimVector{0, 0})).sizes(), (DimVector{int64_t(1) << 40, 0}));
      EXPECT_EQ(call(Op::mm, call(Op::zeros, DimVector{0, 0}), call(Op::zeros, DimVector{0, int64_t(1) << 40})).sizes(),
                (DimVector{0, int64_t(1) << 40}));
    });
    EXPECT_LT(t, 0.5) << "seconds";
    // An output of 2**20 zeros is written, and nothing else is done.
    Tensor s = call(Op::sum_dim, call(Op::zeros, DimVector{1 << 20, 0}), DimVector{1});
    EXPECT_EQ(values(s), std::vector<double>(size_t(1) << 20, 0.0));
    Tensor m = call(Op::mean_dim, call(Op::zeros, DimVector{4, 0}), DimVector{1});
    for (double x : values(m)) EXPECT_TRUE(std::isnan(x)) << "mean of nothing is nan, as in PyTorch";
  }
}

}  // namespace
}  // namespace descent
