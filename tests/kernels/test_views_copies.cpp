// Tests for the view and copy kernels (floors/kernels/views.cpp,
// copy_kernels.cpp, inplace_kernels.cpp) and for where outputs get their memory: the errors each
// view raises, contiguous/clone/to/copy_ semantics (when they copy, and what),
// and that output memory comes from the CPU allocator, one allocation per new
// tensor and none for views. (The values views reach are checked by the
// property test in tests/core/test_view_model.cpp.)
//
// [SECTION] View errors
// [SECTION] Copies
// [SECTION] Output memory
#include <gtest/gtest.h>

#include <limits>

#include "floors/allocator/allocator.h"
#include "floors/kernels/kernels.h"
#include "floors/kernels/cpu/parallel.h"
#include "kernel_test_util.h"

namespace descent {
namespace {

using namespace testing_util;

Tensor iota(const DimVector& sizes, ScalarType dt = ScalarType::Float32) {
  std::vector<double> v(size_t(numel_of(sizes)));
  for (size_t i = 0; i < v.size(); ++i) v[i] = double(i);
  return make(sizes, dt, v);
}

// Expects `fn` to throw `E` with `part` in its message.
template <typename E, typename Fn>
void expect_error(Fn&& fn, const std::string& part) {
  try {
    fn();
    ADD_FAILURE() << "no error (wanted one mentioning '" << part << "')";
  } catch (const E& e) {
    EXPECT_NE(std::string(e.what()).find(part), std::string::npos) << e.what();
  }
}

// [SECTION] View errors ----------------------------------------------------------------

TEST(ViewErrors, EachViewChecksItsArguments) {
  Tensor x = iota({2, 3});
  Tensor s = iota({});
  expect_error<Error>([&] { call(Op::view, x, DimVector{4, 2}); }, "invalid for input of size 6");
  expect_error<Error>([&] { call(Op::view, x, DimVector{-1, -1}); }, "only one dimension can be inferred");
  expect_error<Error>([&] { call(Op::reshape, x, DimVector{-2, 3}); }, "invalid shape dimension -2");
  expect_error<Error>([&] { call(Op::view, x, DimVector{-1, 4}); }, "invalid for input of size 6");
  expect_error<Error>([&] { call(Op::view, call(Op::transpose, x, 0, 1), DimVector{6}); }, "Use .reshape");
  expect_error<IndexError>([&] { call(Op::transpose, x, 0, 2); }, "but got 2)");
  expect_error<Error>([&] { call(Op::permute, x, DimVector{0}); }, "does not match");
  expect_error<Error>([&] { call(Op::permute, x, DimVector{1, -1}); }, "duplicate dims");
  expect_error<IndexError>([&] { call(Op::permute, x, DimVector{0, 2}); }, "Dimension out of range");
  expect_error<Error>([&] { call(Op::expand, x, DimVector{3}); }, "must be greater or equal");
  expect_error<Error>([&] { call(Op::expand, x, DimVector{2, 4}); }, "must match the existing size (3)");
  expect_error<Error>([&] { call(Op::expand, x, DimVector{-1, 2, 3}); }, "(-1) isn't allowed in a leading");
  expect_error<Error>([&] { call(Op::slice, x, 1, 0, 3, 0); }, "step must be positive");
  expect_error<IndexError>([&] { call(Op::slice, s, 0); }, "0-dim");
  expect_error<IndexError>([&] { call(Op::select, x, 1, 3); }, "index 3 is out of bounds for dimension 1 with size 3");
  expect_error<IndexError>([&] { call(Op::select, x, 0, -3); }, "out of bounds");
  expect_error<IndexError>([&] { call(Op::select, s, 0, 0); }, "0-dim");
  expect_error<IndexError>([&] { call(Op::unsqueeze, x, 3); }, "[-3, 2], but got 3)");
  EXPECT_EQ(call(Op::unsqueeze, x, -3).sizes(), (DimVector{1, 2, 3}));
  EXPECT_EQ(call(Op::unsqueeze, s, 0).sizes(), (DimVector{1}));
  EXPECT_EQ(call(Op::transpose, s, 0, -1).dim(), 0) << "a 0-d tensor accepts dims 0 and -1";
  EXPECT_EQ(call(Op::view, iota({0, 4}), DimVector{2, 0, 3}).numel(), 0);
}

TEST(ViewErrors, ShapesPastInt64AreInvalidNotWrapped) {
  // (2^62 + 1) * 4 wraps to 4 in int64: the product is checked, not wrapped.
  Tensor x = iota({4});
  const int64_t big = (int64_t(1) << 62) + 1, k32 = int64_t(1) << 32;
  expect_error<Error>(
      [&] {
        call(Op::reshape, x, DimVector{big, 4});
      },
      "shape '[4611686018427387905, 4]' is invalid for input of size 4");
  expect_error<Error>([&] { call(Op::view, x, DimVector{big, -1}); }, "shape '[4611686018427387905, -1]'");
  expect_error<Error>([&] { call(Op::view, x, DimVector{-1, big, 4}); }, "is invalid for input of size 4");
  expect_error<Error>([&] { call(Op::reshape, x, DimVector{k32, k32, 2}); }, "is invalid for input of size 4");
  EXPECT_EQ(call(Op::reshape, iota({0}), DimVector{big, 0}).sizes(), (DimVector{big, 0})) << "a zero wins";
  expect_error<Error>([&] { call(Op::reshape, iota({0}), DimVector{big, 4, 0, -1}); }, "input of size 0");
}

TEST(Slice, HugeStepsKeepTheFirstElementAndDoNotOverflow) {
  constexpr int64_t kMax = std::numeric_limits<int64_t>::max();
  const int64_t k62 = int64_t(1) << 62;
  Tensor x = iota({6});
  for (int64_t step : {kMax, k62, int64_t{6}}) {
    Tensor a = call(Op::slice, x, 0, IValue(), IValue(), step);
    EXPECT_EQ(a.sizes(), (DimVector{1})) << step;
    EXPECT_EQ(values(a), std::vector<double>{0}) << step;
  }
  EXPECT_EQ(values(call(Op::slice, x, 0, 5, kMax, kMax)), std::vector<double>{5});
  EXPECT_EQ(call(Op::slice, x, 0, 6, IValue(), kMax).numel(), 0);
  EXPECT_EQ(values(call(Op::slice, x, 0, 1, IValue(), 4)), (std::vector<double>{1, 5}));
  Tensor m = iota({2, 3});  // stride 3 * 2^62 does not fit an int64, and a dim of one element never needs it
  Tensor rows = call(Op::slice, m, 0, IValue(), IValue(), k62);
  EXPECT_EQ(rows.sizes(), (DimVector{1, 3}));
  EXPECT_EQ(values(rows), (std::vector<double>{0, 1, 2}));
  Tensor cols = call(Op::slice, m, 1, 1, IValue(), kMax);
  EXPECT_EQ(cols.sizes(), (DimVector{2, 1}));
  EXPECT_EQ(values(cols), (std::vector<double>{1, 4}));
  // Several elements 2^62 apart: the stride itself cannot be represented.
  Tensor wide = iota({3}).as_strided({3}, {k62}, 0);
  expect_error<Error>([&] { call(Op::slice, wide, 0, IValue(), IValue(), 2); }, "does not fit in an int64");
}

TEST(ViewErrors, ExpandRejectsNegativeSizes) {
  Tensor one = iota({1});
  EXPECT_THROW(call(Op::expand, one, DimVector{-2}), Error);
  EXPECT_THROW(call(Op::expand, iota({2, 1}), DimVector{2, -5}), Error);
}

TEST(ViewErrors, TransposeOfZeroDimTensorChecksDims) {
  Tensor s = iota({});
  EXPECT_THROW(call(Op::transpose, s, 5, 7), IndexError);
  EXPECT_THROW(call(Op::transpose, s, 0, 1), IndexError);
}

// [SECTION] Copies ------------------------------------------------------------------------

TEST(Copies, ContiguousCopiesOnlyWhenNeeded) {
  Tensor x = iota({3, 4});
  Tensor same = call(Op::contiguous, x);
  EXPECT_TRUE(same.is_same(x)) << "already contiguous: the argument itself";
  Tensor t = call(Op::transpose, x, 0, 1);
  Tensor c = call(Op::contiguous, t);
  EXPECT_FALSE(c.storage() == x.storage());
  EXPECT_TRUE(c.is_contiguous());
  EXPECT_EQ(values(c), values(t));
  Tensor e = call(Op::expand, iota({1, 3}), DimVector{4, 3});  // stride 0 is not contiguous
  EXPECT_EQ(values(call(Op::contiguous, e)), values(e));
  Tensor sl = call(Op::slice, x, 1, 1, 3);  // rows padded
  EXPECT_FALSE(sl.is_contiguous());
  EXPECT_EQ(values(call(Op::contiguous, sl)), (std::vector<double>{1, 2, 5, 6, 9, 10}));
}

TEST(Copies, CloneAlwaysCopies) {
  Tensor x = iota({2, 3}, ScalarType::Int64);
  Tensor c = call(Op::clone, x);
  EXPECT_FALSE(c.storage() == x.storage());
  EXPECT_EQ(values(c), values(x));
  c.data<int64_t>()[0] = 99;
  EXPECT_EQ(x.data<int64_t>()[0], 0) << "the clone does not alias its source";
  Tensor ct = call(Op::clone, call(Op::transpose, x, 0, 1));
  EXPECT_EQ(values(ct), (std::vector<double>{0, 3, 1, 4, 2, 5}));
}

// A strided source into a contiguous destination takes the optimized loop
// (optimized.cpp, strided_into_contiguous) and gives the reference's values,
// converted or not, on 1 and 3 threads (a thread's range starts mid-row).
TEST(Copies, StridedSourcesTakeTheOptimizedLoopAndMatchTheReference) {
  std::mt19937_64 rng(91);
  const Tensor x = random_tensor({37, 41, 5}, ScalarType::Float32, rng);
  const Tensor sources[] = {
      call(Op::transpose, x, 0, 1),    call(Op::permute, x, DimVector{2, 0, 1}),
      call(Op::slice, x, 1, 3, 40, 2), call(Op::expand, call(Op::slice, x, 0, 0, 1), DimVector{6, 41, 5}),
      call(Op::select, x, 2, 4),
  };
  const int saved_threads = kernels::get_num_threads();
  for (const Tensor& src : sources) {
    for (ScalarType to : {ScalarType::Float32, ScalarType::Float64}) {
      Tensor want = empty_tensor(src.sizes(), to, Device{});
      {
        kernels::VariantGuard g(kernels::Variant::Reference);
        call(Op::copy_, want, src);
      }
      for (int threads : {1, 3}) {
        kernels::set_num_threads(threads);
        Tensor got = empty_tensor(src.sizes(), to, Device{});
        call(Op::copy_, got, src);
        EXPECT_STREQ(kernels::last_variant(), "optimized") << src.sizes().str();
        EXPECT_EQ(values(got), values(want)) << src.sizes().str() << " threads=" << threads;
      }
    }
  }
  kernels::set_num_threads(saved_threads);
}

TEST(Copies, ToConvertsDtypes) {
  Tensor f = make({5}, ScalarType::Float32, {-1.5, 0, 0.25, 2.75, 3});
  EXPECT_TRUE(call(Op::to, f, ScalarType::Float32).is_same(f)) << "same dtype, copy=False: no copy";
  Tensor forced = call(Op::to, f, ScalarType::Float32, IValue(), true);
  EXPECT_FALSE(forced.storage() == f.storage());
  EXPECT_EQ(values(forced), values(f));
  EXPECT_EQ(values(call(Op::to, f, ScalarType::Int64)), (std::vector<double>{-1, 0, 0, 2, 3})) << "toward zero";
  EXPECT_EQ(values(call(Op::to, f, ScalarType::Bool)), (std::vector<double>{1, 0, 1, 1, 1}));
  EXPECT_EQ(values(call(Op::to, f, ScalarType::Float64)), values(f));
  Tensor t = call(Op::transpose, iota({2, 3}, ScalarType::Int64), 0, 1);
  Tensor td = call(Op::to, t, ScalarType::Float64);
  EXPECT_EQ(values(td), (std::vector<double>{0, 3, 1, 4, 2, 5}));
  EXPECT_TRUE(call(Op::to, f, IValue(), Device{}).is_same(f));
  Tensor on_sim = call(Op::to, f, IValue(), Device{DeviceType::Sim, 0});  // Note [Copies between devices]
  EXPECT_EQ(on_sim.device(), (Device{DeviceType::Sim, 0}));
  EXPECT_EQ(values(call(Op::to, on_sim, IValue(), Device{})), values(f));
}

TEST(Copies, CopyIntoBroadcastsAndConverts) {
  Tensor dst = call(Op::zeros, DimVector{2, 3});
  Tensor res = call(Op::copy_, dst, make({3}, ScalarType::Int64, {1, 2, 3}));
  EXPECT_TRUE(res.is_same(dst)) << "copy_ returns self";
  EXPECT_EQ(values(dst), (std::vector<double>{1, 2, 3, 1, 2, 3}));
  // Into a non-contiguous destination: only the viewed elements change.
  Tensor base = call(Op::zeros, DimVector{3, 2});
  call(Op::copy_, call(Op::transpose, base, 0, 1), iota({2, 3}));
  EXPECT_EQ(values(base), (std::vector<double>{0, 3, 1, 4, 2, 5}));
  EXPECT_THROW(call(Op::copy_, call(Op::zeros, DimVector{3}), iota({2, 3})), Error)
      << "output with shape [3] doesn't match the broadcast shape [2, 3]";
  EXPECT_THROW(call(Op::copy_, call(Op::zeros, DimVector{3}), iota({4})), Error);
}

// [SECTION] Output memory -------------------------------------------------------------------

// How many CPU allocations `fn` makes, and checks they are all freed again with its result.
template <typename Fn>
int64_t allocs_of(Fn&& fn) {
  alloc::CpuStats before = alloc::cpu_stats();
  {
    Tensor out = fn();
    (void)out;
  }
  alloc::CpuStats after = alloc::cpu_stats();
  EXPECT_EQ(after.num_frees - before.num_frees, after.num_allocs - before.num_allocs) << "everything freed";
  EXPECT_EQ(after.allocated_bytes, before.allocated_bytes);
  return after.num_allocs - before.num_allocs;
}

TEST(OutputMemory, ComesFromTheCpuAllocator) {
  Tensor a = iota({4, 5}), b = iota({4, 5}), row = iota({5});
  Tensor i = iota({4, 5}, ScalarType::Int64);
  alloc::CpuStats s0 = alloc::cpu_stats();
  Tensor out = call(Op::add, a, b);
  alloc::CpuStats s1 = alloc::cpu_stats();
  EXPECT_EQ(s1.num_allocs - s0.num_allocs, 1) << "one add, one output";
  EXPECT_EQ(s1.allocated_bytes - s0.allocated_bytes, 20 * 4);
  EXPECT_EQ(out.storage()->data.nbytes, 80u);
  EXPECT_EQ(reinterpret_cast<uintptr_t>(out.data_ptr()) % alloc::kAlignment, 0u);
  EXPECT_EQ(allocs_of([&] { return call(Op::add, a, row); }), 1) << "broadcasting does not copy";
  EXPECT_EQ(allocs_of([&] { return call(Op::add, i, a); }), 2) << "the int64 operand is cast first";
  EXPECT_EQ(allocs_of([&] { return call(Op::add, iota({0, 3}), iota({0, 3})); }), 0) << "zero bytes: nothing";
  EXPECT_EQ(allocs_of([&] { return call(Op::sum_dim, a, DimVector{1}); }), 1);
  EXPECT_EQ(allocs_of([&] { return call(Op::transpose, a, 0, 1); }), 0) << "views allocate nothing";
  EXPECT_EQ(allocs_of([&] { return call(Op::reshape, a, DimVector{20}); }), 0);
  EXPECT_EQ(allocs_of([&] { return call(Op::reshape, call(Op::transpose, a, 0, 1), DimVector{20}); }), 1);
  EXPECT_EQ(allocs_of([&] { return call(Op::contiguous, a); }), 0);
  EXPECT_EQ(allocs_of([&] { return call(Op::zeros, DimVector{3, 3}); }), 1);
  EXPECT_EQ(allocs_of([&] { return call(Op::matmul, a, call(Op::transpose, b, 0, 1)); }), 2)
      << "the transposed operand is made contiguous for the fast loop, then the output";
}

}  // namespace
}  // namespace descent
