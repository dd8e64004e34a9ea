// Tests for the CPU matmul's ladder (Note [Matmul rungs], matmul_rungs.cpp)
// and its top rung (Note [Packed matmul], packed_matmul.cpp): the packed rung
// against the reference through the verifier on odd shapes, transposed and
// batched operands, on 1 and several threads; the rung the trace names is
// the one that ran.
#include <gtest/gtest.h>

#include <cstring>
#include <random>
#include <string>

#include "floors/kernels/kernels.h"
#include "floors/kernels/cpu/matmul_rungs.h"
#include "floors/kernels/cpu/parallel.h"
#include "floors/kernels/verify/verifier.h"
#include "kernel_test_util.h"
#include "tracer/trace.h"

namespace descent {
namespace {

using testing_util::random_tensor;

bool has_packed_rung() {  // FMA on this CPU (AVX-512, or AVX2 with FMA)
  const Tensor a = testing_util::make({1, 1, 1}, ScalarType::Float32, {1}),
               out = empty_tensor({1, 1, 1}, ScalarType::Float32, Device{});
  return kernels::packed_matmul(a, a, out);
}

// The same elements, bit for bit, in row-major order (sizes may differ: [1, M, N] and [M, N]).
bool same_bits(const Tensor& a, const Tensor& b) {
  const Tensor ca = call(Op::contiguous, a), cb = call(Op::contiguous, b);
  return ca.numel() == cb.numel() && ca.dtype() == cb.dtype() &&
         std::memcmp(ca.data_ptr(), cb.data_ptr(), size_t(ca.numel()) * element_size(ca.dtype())) == 0;
}

struct ThreadsGuard {
  explicit ThreadsGuard(int n) : saved(kernels::get_num_threads()) { kernels::set_num_threads(n); }
  ~ThreadsGuard() { kernels::set_num_threads(saved); }
  int saved;
};

TEST(MatmulRungs, TheCpuLadderAndItsErrors) {
  EXPECT_EQ(kernels::matmul_rungs(DeviceType::CPU), (std::vector<std::string>{"reference", "register", "packed"}));
  EXPECT_STREQ(kernels::matmul_rung(DeviceType::CPU), "auto");
  {
    kernels::MatmulRungGuard g(DeviceType::CPU, "packed");
    EXPECT_STREQ(kernels::matmul_rung(DeviceType::CPU), "packed");
  }
  EXPECT_STREQ(kernels::matmul_rung(DeviceType::CPU), "auto");
  EXPECT_THROW(kernels::set_matmul_rung(DeviceType::CPU, "blas"), ValueError);
}

// Shapes that are not multiples of mr, nr or kc (1x1x1; K past one and two
// blocks of kc; M past one block of mc; one row; one column; one step of the
// loop nest on several threads, whose tasks pack their own panels), each as mm on
// contiguous, transposed and both-transposed operands, on an A whose rows
// are further apart than K (a slice) or all one row (expanded), and as bmm of
// three batches (one a permuted view), on 1 thread and on 3, with each microkernel
// this CPU can run (AVX-512's and AVX2's): the verifier holds the packed
// rung within Note [Device matmul bound] of the reference.
void holds_the_bound_on_odd_shapes() {
  std::mt19937_64 rng(19);
  struct Shape {
    int64_t m, k, n;
  };
  const Shape shapes[] = {{1, 1, 1},     {7, 13, 5},    {129, 257, 65}, {1, 300, 47},
                          {50, 1000, 3}, {800, 20, 33}, {13, 600, 87},  {257, 64, 301}};
  for (ScalarType dt : {ScalarType::Float32, ScalarType::Float64}) {
    for (const Shape& s : shapes) {
      const Tensor a = random_tensor({s.m, s.k}, dt, rng, -4, 4), b = random_tensor({s.k, s.n}, dt, rng, -4, 4);
      const Tensor at = call(Op::contiguous, call(Op::transpose, a, 0, 1));  // a^T's storage: a is its transpose
      const Tensor bt = call(Op::contiguous, call(Op::transpose, b, 0, 1));
      const Tensor ta = call(Op::transpose, at, 0, 1), tb = call(Op::transpose, bt, 0, 1);
      const Tensor a3 = random_tensor({3, s.m, s.k}, dt, rng, -4, 4);
      const Tensor b3 = call(Op::transpose, random_tensor({3, s.n, s.k}, dt, rng, -4, 4), 1, 2);
      // A's rows further apart than K (a slice of a wider matrix), and all one row (expanded: stride 0).
      const Tensor wide = random_tensor({s.m, s.k + 3}, dt, rng, -4, 4);
      const Tensor sliced = wide.as_strided({s.m, s.k}, {s.k + 3, 1}, 1);
      const Tensor row = random_tensor({1, s.k}, dt, rng, -4, 4);
      const Tensor expanded = row.as_strided({s.m, s.k}, {0, 1}, 0);
      struct Case {
        Op op;
        Tensor x, y;
        const char* what;
      };
      const Case cases[] = {{Op::mm, a, b, "mm"},
                            {Op::mm, ta, b, "mm(a^T stored)"},
                            {Op::mm, a, tb, "mm(b^T stored)"},
                            {Op::mm, ta, tb, "mm(both transposed)"},
                            {Op::bmm, a3, b3, "bmm(b permuted)"},
                            {Op::mm, sliced, b, "mm(a a slice of a wider matrix)"},
                            {Op::mm, expanded, b, "mm(a one row expanded)"}};
      for (int threads : {1, 3}) {
        ThreadsGuard tg(threads);
        for (const Case& c : cases) {
          Stack args;
          args.push(c.x);
          args.push(c.y);
          const kernels::Verdict v = kernels::verify_call(op_entry(c.op), args, dt, Device{});
          SCOPED_TRACE(std::string(c.what) + " " + dtype_name(dt) + " " + std::to_string(s.m) + "x" +
                       std::to_string(s.k) + "x" + std::to_string(s.n) + " threads=" + std::to_string(threads) + ": " +
                       v.variants + " " + v.detail);
          EXPECT_TRUE(v.passed);
          EXPECT_EQ(v.variants, "reference vs register+packed");
          EXPECT_EQ(v.claim, "bound");
          EXPECT_LE(v.max_abs_diff, v.bound);
        }
      }
    }
  }
}

TEST(PackedMatmul, HoldsTheVerifierBoundOnOddShapes) {
  if (!has_packed_rung()) GTEST_SKIP() << "no FMA unit: the packed rung hands every product to the register rung";
  const std::string widest = kernels::matmul_isa();
  for (const std::string& isa : kernels::matmul_isas()) {
    if (isa != "avx2" && isa != "avx512") continue;
    kernels::set_matmul_isa(isa);
    SCOPED_TRACE(isa);
    holds_the_bound_on_odd_shapes();
  }
  kernels::set_matmul_isa(widest);
}

// Each element is one thread's chain of K fused steps: the bits do not depend
// on the thread count, nor on the split of rows and columns it makes, nor on
// who packed the panels (shared packing items in the first product, its
// several steps; each task its own in the second, one step on several
// threads: Note [Packed matmul]).
TEST(PackedMatmul, BitsDoNotDependOnThreads) {
  if (!has_packed_rung()) GTEST_SKIP() << "no FMA unit";
  std::mt19937_64 rng(5);
  kernels::MatmulRungGuard g(DeviceType::CPU, "packed");
  for (ScalarType dt : {ScalarType::Float32, ScalarType::Float64})
    for (int64_t k : {517, 64}) {
      const int64_t batches = k == 64 ? 1 : 2;  // one: the threads share the product, not a batch each
      const Tensor a = random_tensor({batches, 301, k}, dt, rng, -1, 1),
                   b = random_tensor({batches, k, 203}, dt, rng, -1, 1);
      Tensor one;
      {
        ThreadsGuard tg(1);
        one = call(Op::bmm, a, b);
      }
      for (int threads : {2, 3, 7}) {
        ThreadsGuard tg(threads);
        EXPECT_TRUE(same_bits(call(Op::bmm, a, b), one)) << dtype_name(dt) << " k=" << k << " threads=" << threads;
      }
    }
}

// Note [Panels read in place]: a panel read in place runs the same steps in
// the same order as the same panel packed, so the bits are the same. A and
// B contiguous against the same operands stored transposed (every panel
// packed), with each microkernel this CPU can run, in three products:
// - 301 x 64 x 203 on one thread: A's whole panels read in place (K is one kc
//   block), only its edge panel packed (301 rows: one row past the whole
//   panels); B packed.
// - the same on 3 threads, a step alone, where every task packs its own
//   panels: B's whole panels read in place too, no packing items at all.
// - 60 x 64 x 4100 on 3 threads: N past nc (at most 4096), so several steps
//   with shared packing items of B, and A (60 rows: whole panels only) read
//   in place, so no "pack A" item.
// The tile tasks' spans say what each read in place.
TEST(PackedMatmul, PanelsReadInPlaceGiveThePackedBits) {
  if (!has_packed_rung()) GTEST_SKIP() << "no FMA unit";
  std::mt19937_64 rng(11);
  kernels::MatmulRungGuard g(DeviceType::CPU, "packed");
  const std::string widest = kernels::matmul_isa();
  struct Case {
    int64_t m, k, n;
    int threads;
  };
  for (const std::string& isa : kernels::matmul_isas()) {
    if (isa != "avx2" && isa != "avx512") continue;
    kernels::set_matmul_isa(isa);
    for (ScalarType dt : {ScalarType::Float32, ScalarType::Float64})
      for (const Case c : {Case{301, 64, 203, 1}, Case{301, 64, 203, 3}, Case{60, 64, 4100, 3}}) {
        ThreadsGuard tg(c.threads);
        const Tensor a = random_tensor({c.m, c.k}, dt, rng, -1, 1), b = random_tensor({c.k, c.n}, dt, rng, -1, 1);
        const Tensor ta = call(Op::transpose, call(Op::contiguous, call(Op::transpose, a, 0, 1)), 0, 1);
        const Tensor tb = call(Op::transpose, call(Op::contiguous, call(Op::transpose, b, 0, 1)), 0, 1);
        trace::start();
        const Tensor in_place = call(Op::mm, a, b);
        const trace::Trace t = trace::stop();
        const Tensor packed = call(Op::mm, ta, tb);
        const std::string what = isa + " " + dtype_name(dt) + " " + std::to_string(c.m) + "x" + std::to_string(c.k) +
                                 "x" + std::to_string(c.n) + " threads=" + std::to_string(c.threads);
        EXPECT_TRUE(same_bits(in_place, packed)) << what;
        int tasks = 0, a_in_place = 0, b_in_place = 0, pack_a = 0, pack_b = 0;
        for (const trace::Span& s : t.spans) {
          pack_a += s.name == "pack A";
          pack_b += s.name == "pack B";
          if (s.name != "tile task") continue;
          ++tasks;
          a_in_place += s.find_arg("a_read_in_place") != nullptr;
          b_in_place += s.find_arg("b_read_in_place") != nullptr;
        }
        const bool one_step = c.n < 4096 && c.threads > 1;  // every task packs its own panels
        EXPECT_GT(tasks, 0) << what;
        if (c.threads == 1)  // one thread's last pass of A's rows may hold only the edge panel (doubles: short passes)
          EXPECT_GT(a_in_place, 0) << what;
        else
          EXPECT_EQ(a_in_place, tasks) << what << ": every task holds a whole panel of A";
        if (one_step)
          EXPECT_GT(b_in_place, 0) << what;
        else
          EXPECT_EQ(b_in_place, 0) << what << ": B is packed once and shared";
        EXPECT_EQ(pack_a, c.threads == 1 ? 1 : 0) << what << ": only the edge panel of A is packed, by an item";
        EXPECT_EQ(pack_b > 0, !one_step) << what;
      }
  }
  kernels::set_matmul_isa(widest);
}

// The kernel span's rung= is the rung that ran: with each rung chosen, mm's
// span names it, and the output has that rung's bits: the reference's for
// the reference and register rungs, the packed kernel's own (called
// directly, and for this shape not the reference's: its steps are fused) for
// the packed one. "auto" names packed for a large product, register for a
// small one, and the reference loop for int64 names itself.
TEST(MatmulRungs, TheTraceNamesTheRungThatRan) {
  std::mt19937_64 rng(7);
  const Tensor a = random_tensor({100, 90}, ScalarType::Float32, rng, -1, 1);
  const Tensor b = random_tensor({90, 80}, ScalarType::Float32, rng, -1, 1);
  const Tensor small = random_tensor({8, 8}, ScalarType::Float32, rng, -1, 1);
  Tensor want_ref;
  {
    kernels::VariantGuard vg(kernels::Variant::Reference);
    want_ref = call(Op::mm, a, b);
  }
  const bool packed = has_packed_rung();
  const Tensor want_packed = empty_tensor({1, 100, 80}, ScalarType::Float32, Device{});
  if (packed) {
    ASSERT_TRUE(kernels::packed_matmul(a.as_strided({1, 100, 90}, {100 * 90, 90, 1}, 0),
                                       b.as_strided({1, 90, 80}, {90 * 80, 80, 1}, 0), want_packed));
    EXPECT_FALSE(same_bits(want_packed, want_ref)) << "this shape's fused steps round differently";
  }
  auto traced_rung = [](const Tensor& x, const Tensor& y, Tensor* out) {
    trace::start();
    *out = call(Op::mm, x, y);
    const trace::Trace t = trace::stop();
    std::string rung;
    for (const trace::Span& s : t.spans)
      if (s.name == "aten::mm")
        if (const auto* v = s.find_arg("rung")) rung = std::get<std::string>(*v);
    EXPECT_EQ(rung, kernels::last_matmul_rung());
    return rung;
  };
  Tensor got;
  for (const char* rung : {"reference", "register", "packed"}) {
    kernels::MatmulRungGuard g(DeviceType::CPU, rung);
    const std::string ran = traced_rung(a, b, &got);
    if (std::string(rung) == "packed" && !packed) {
      EXPECT_EQ(ran, "register") << "without FMA the packed rung hands the call down";
      continue;
    }
    EXPECT_EQ(ran, rung);
    EXPECT_TRUE(same_bits(got, ran == "packed" ? want_packed : want_ref)) << rung;
  }
  EXPECT_EQ(traced_rung(a, b, &got), packed ? "packed" : "register");
  EXPECT_EQ(traced_rung(small, small, &got), "register");
  const Tensor i = testing_util::make({3, 3}, ScalarType::Int64, std::vector<double>(9, 1.0));
  EXPECT_EQ(traced_rung(i, i, &got), "register") << "int64 takes the register rung's i-k-j loop";
  {
    kernels::VariantGuard vg(kernels::Variant::Reference);
    EXPECT_EQ(traced_rung(a, b, &got), "reference");
  }
  {  // SSE2 has no FMA: the packed rung hands the call to the register rung, and the trace says so
    const std::string widest = kernels::matmul_isa();
    kernels::set_matmul_isa(kernels::matmul_isas()[0]);
    kernels::MatmulRungGuard g(DeviceType::CPU, "packed");
    EXPECT_EQ(traced_rung(a, b, &got), "register");
    EXPECT_TRUE(same_bits(got, want_ref));
    kernels::set_matmul_isa(widest);
  }
}

}  // namespace
}  // namespace descent
