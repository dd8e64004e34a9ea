// Tests for the verifier (floors/kernels/verifier.{h,cpp}): over every op and
// dtype, for seeds 1, 2 and 3, the reference and optimized kernels must agree
// as the op table claims (bit for bit for Exact ops, within Note [Summation
// bound] for Reordered ones); sample calls are built as Note [One op table]
// describes; and the verifier does notice a wrong optimized kernel.
#include <gtest/gtest.h>

#include <cstring>
#include <map>
#include <set>
#include <string>

#include "floors/kernels/kernels.h"
#include "floors/kernels/verify/verifier.h"
#include "kernel_test_util.h"

namespace descent {
namespace {

using kernels::Verdict;

class VerifyAll : public ::testing::TestWithParam<uint64_t> {};

TEST_P(VerifyAll, EveryOpAndDtypePasses) {
  std::vector<Verdict> verdicts = kernels::verify_all(GetParam());
  const std::string table = kernels::format_verdicts(verdicts);
  size_t verified = 0;
  for (const OpEntry& e : all_ops()) verified += kernels::is_verified(e);
  EXPECT_EQ(verified, size_t(kNumOps) - 5) << "every row but c10d's five collectives";
  ASSERT_EQ(verdicts.size(), verified * kNumScalarTypes) << table;
  std::set<std::string> ops_seen;
  std::map<std::string, int> claims;
  for (const Verdict& v : verdicts) {
    SCOPED_TRACE(v.op + " " + dtype_name(v.dtype) + ": " + v.claim + " (" + v.variants + ") " + v.detail);
    EXPECT_TRUE(v.passed);
    ops_seen.insert(v.op);
    ++claims[v.claim];
    const OpEntry* op = find_op(v.op);
    ASSERT_NE(op, nullptr);
    if (v.claim == "unsupported") {
      EXPECT_FALSE(v.detail.empty()) << "an unsupported verdict carries the error";
      continue;
    }
    if (op->kind == OpKind::Matmul) {  // every optimized rung of the CPU's ladder (Note [Matmul rungs])
      const bool packed = v.variants == "reference vs register+packed";
      EXPECT_TRUE(packed || v.variants == "reference vs register") << v.variants;
      EXPECT_EQ(v.claim, packed ? "bound" : "bit-for-bit");
    } else if (v.variants != "reference vs optimized") {
      EXPECT_EQ(v.claim, "single kernel");
    } else if (op->exactness != Exactness::Reordered) {
      EXPECT_EQ(v.claim, "bit-for-bit");
    } else {
      EXPECT_EQ(v.claim, is_floating(v.dtype) ? "bound" : "bit-for-bit");
    }
    if (v.claim == "bit-for-bit") {
      EXPECT_EQ(v.max_abs_diff, 0.0);
    }
    if (v.claim == "bound") {
      EXPECT_LE(v.max_abs_diff, v.bound);
    }
  }
  for (const OpEntry& e : all_ops())
    EXPECT_EQ(ops_seen.count(e.name), size_t(kernels::is_verified(e))) << e.name << " missing from the verdicts";
  EXPECT_GT(claims["bit-for-bit"], 0) << table;
  EXPECT_GT(claims["bound"], 0) << table;
  EXPECT_GT(claims["single kernel"], 0) << table;
  EXPECT_GT(claims["unsupported"], 0) << table;
}

INSTANTIATE_TEST_SUITE_P(Seeds, VerifyAll, ::testing::Values(1u, 2u, 3u));

TEST(Verifier, KnownVerdicts) {
  auto verdict = [](Op op, ScalarType dt) { return kernels::verify(op_entry(op), dt, 1); };
  Verdict add = verdict(Op::add, ScalarType::Float32);
  EXPECT_EQ(add.claim, "bit-for-bit");
  EXPECT_EQ(add.variants, "reference vs optimized");
  Verdict sum = verdict(Op::sum, ScalarType::Float32);
  EXPECT_EQ(sum.claim, "bound");
  EXPECT_GT(sum.bound, 0.0);
  Verdict mean_int = verdict(Op::mean, ScalarType::Int64);
  EXPECT_EQ(mean_int.claim, "unsupported");
  EXPECT_TRUE(mean_int.passed);
  Verdict rand_int = verdict(Op::rand, ScalarType::Int64);
  EXPECT_EQ(rand_int.claim, "unsupported");
  Verdict eq = verdict(Op::eq, ScalarType::Float32);
  EXPECT_EQ(eq.claim, "single kernel") << "comparisons have one loop";
  Verdict view = verdict(Op::transpose, ScalarType::Float64);
  EXPECT_EQ(view.claim, "single kernel");
  EXPECT_EQ(view.variants, "view vs view");
}

// The narrow integers (uint8, int8, int16, int32): every verdict holds bit
// for bit, on the CPU's two variants and on sim:0 against the CPU, and what
// PyTorch refuses on int64 is refused on them (mean, true division in place,
// random numbers, mse_loss), and a bound uint8 cannot hold.
TEST(Verifier, NarrowIntegersAreExactOnEveryDevice) {
  std::set<Op> refused = {Op::mean, Op::mean_dim, Op::div_, Op::rand, Op::randn, Op::mse_loss};
  // Issue 42's: floats only (random draws, var and std, norms, multinomial), a zero divisor among the
  // sample's integers (floor_divide), and clamp_'s float bounds, which an integer self cannot hold.
  for (Op op : {Op::rand_like, Op::randn_like, Op::uniform_, Op::normal_, Op::floor_divide, Op::var_unbiased,
                Op::var_dim, Op::var_correction, Op::std_unbiased, Op::std_dim, Op::std_correction, Op::clamp_,
                Op::linalg_vector_norm, Op::multinomial})
    refused.insert(op);
  // torch.nn's ops: floats only, as aten's kernels dispatch (tests/python/nn_op_rows.py's REFUSED_NARROW_INT_NN);
  // embedding reads int32 indices too, and max_pool2d pads with -inf, which no integer holds.
  for (Op op : {Op::_softmax,
                Op::_log_softmax,
                Op::_softmax_backward_data,
                Op::_log_softmax_backward_data,
                Op::softmax,
                Op::log_softmax,
                Op::nll_loss_forward,
                Op::nll_loss,
                Op::nll_loss_nd,
                Op::cross_entropy_loss,
                Op::native_layer_norm,
                Op::layer_norm,
                Op::binary_cross_entropy,
                Op::binary_cross_entropy_with_logits,
                Op::one_hot,
                Op::max_pool2d,
                Op::gelu,
                Op::gelu_backward,
                Op::silu,
                Op::silu_backward})
    refused.insert(op);
  for (ScalarType dt : {ScalarType::UInt8, ScalarType::Int8, ScalarType::Int16, ScalarType::Int32}) {
    for (Device d : {Device{}, Device::parse("sim:0")}) {
      for (const OpEntry& e : all_ops()) {
        if (!kernels::is_verified(e)) continue;
        const Verdict v = kernels::verify(e, dt, 2, d);
        SCOPED_TRACE(v.op + " " + dtype_name(dt) + " on " + d.str() + ": " + v.claim + " " + v.detail);
        EXPECT_TRUE(v.passed);
        EXPECT_EQ(v.max_abs_diff, 0.0);
        EXPECT_NE(v.claim, "bound") << "integers are exact";
        // linspace's sample starts at -2.5, which uint8 cannot hold (Note [Checked scalar conversion]).
        // randint_like.low_dtype's draws from -3, which uint8 cannot hold either.
        const bool refuses = refused.count(e.id) == 1 ||
                             ((e.id == Op::linspace || e.id == Op::randint_like_low) && dt == ScalarType::UInt8) ||
                             (e.id == Op::embedding && dt != ScalarType::Int32);
        if (d.type == DeviceType::CPU) {
          EXPECT_EQ(v.claim == "unsupported", refuses);
        }
      }
    }
  }
}

TEST(Verifier, SampleCallsFollowTheOpTable) {
  // "T[4, 6]^T; float64": a transposed random tensor of the dtype under test, then a dtype.
  Stack s = kernels::sample_call(op_entry(Op::contiguous), ScalarType::Float32, 1);
  ASSERT_EQ(s.size(), 1);
  EXPECT_EQ(s[0].to_tensor().sizes(), (DimVector{6, 4}));
  EXPECT_FALSE(s[0].to_tensor().is_contiguous());
  Stack to = kernels::sample_call(op_entry(Op::to), ScalarType::Int64, 1);
  ASSERT_EQ(to.size(), 2);
  EXPECT_EQ(to[0].to_tensor().dtype(), ScalarType::Int64);
  EXPECT_EQ(to[1].to_scalar_type(), ScalarType::Float64);
  // "T[4, 6]; 1; 1; 5; 2" for slice: a tensor and four ints.
  Stack sl = kernels::sample_call(op_entry(Op::slice), ScalarType::Bool, 1);
  ASSERT_EQ(sl.size(), 5);
  EXPECT_EQ(sl[4].to_int(), 2);
  // Factories take the dtype under test; full's "[4, 6]; 2.5" keeps its fill value.
  Stack full = kernels::sample_call(op_entry(Op::full), ScalarType::Int64, 1);
  ASSERT_EQ(full.size(), 3);
  EXPECT_EQ(full[0].to_int_list(), (DimVector{4, 6}));
  EXPECT_EQ(full[1].to_double(), 2.5);
  EXPECT_EQ(full[2].to_scalar_type(), ScalarType::Int64);
  // Positive-domain ops get positive inputs; the same seed gives the same tensor.
  Stack lg = kernels::sample_call(op_entry(Op::log), ScalarType::Float32, 9);
  for (double v : testing_util::values(lg[0].to_tensor())) EXPECT_GT(v, 0.0);
  Stack again = kernels::sample_call(op_entry(Op::log), ScalarType::Float32, 9);
  EXPECT_EQ(testing_util::values(lg[0].to_tensor()), testing_util::values(again[0].to_tensor()));
  // Every sample call runs, but those of torch.nn's ops that take class indices (or probabilities): the
  // sample syntax writes a top-level tensor of the dtype under test only, so their float32 samples are
  // refused with PyTorch's error, and the verifier reports them "unsupported" (a gap, not a claim).
  const std::set<Op> needs_indices = {Op::nll_loss_forward,    Op::nll_loss,  Op::nll_loss_nd,
                                      Op::cross_entropy_loss,  Op::embedding, Op::one_hot,
                                      Op::binary_cross_entropy};
  for (const OpEntry& e : all_ops()) {
    if (!kernels::is_verified(e)) {
      EXPECT_THROW(kernels::sample_call(e, ScalarType::Float32, 2), ValueError) << e.name;
      continue;
    }
    Stack c = kernels::sample_call(e, ScalarType::Float32, 2);
    if (needs_indices.count(e.id) == 1) {
      EXPECT_THROW(call_boxed(e.id, c), Error) << e.name << ": " << e.sample;
      continue;
    }
    EXPECT_NO_THROW(call_boxed(e.id, c)) << e.name << ": " << e.sample;
  }
}

// Regression: `empty`'s elements are uninitialised, so comparing them bit for bit
// made its verdict depend on what the heap held before.
TEST(Verifier, EmptyIsNotComparedAsIfInitialised) {
  for (ScalarType dt : {ScalarType::Bool, ScalarType::Int64, ScalarType::Float32, ScalarType::Float64}) {
    for (int round = 0; round < 5; ++round) {
      {  // leave old, different bytes in the heap where the next tensors will be
        std::vector<Tensor> junk;
        for (int k = 0; k < 8; ++k) {
          junk.push_back(empty_tensor({4, 6}, dt, Device{}));
          std::memset(junk.back().data_ptr(), 0x11 * (k + 1), junk.back().storage()->data.nbytes);
        }
      }
      Verdict v = kernels::verify(op_entry(Op::empty), dt, 1);
      EXPECT_TRUE(v.passed) << dtype_name(dt) << ": " << v.detail;
    }
  }
}

// A deliberately wrong "optimized" neg: the verifier must report it.
BoxedKernel g_real_neg = nullptr;
void off_by_one_neg(const OpEntry& op, DispatchKeySet keys, Stack& s) {
  g_real_neg(op, keys, s);
  if (kernels::requested_variant() == kernels::Variant::Optimized) {
    Tensor out = s[0].to_tensor();
    out.data<float>()[3] += 1.0f;
  }
}

TEST(Verifier, NoticesAWrongOptimizedKernel) {
  Verdict v;
  {
    struct Restore {
      ~Restore() { register_kernel(Op::neg, DispatchKey::CPU, g_real_neg); }
    } restore;
    g_real_neg = register_kernel(Op::neg, DispatchKey::CPU, off_by_one_neg);
    v = kernels::verify(op_entry(Op::neg), ScalarType::Float32, 1);
  }
  EXPECT_FALSE(v.passed);
  EXPECT_EQ(v.detail, "results differ bit-wise");
  EXPECT_TRUE(kernels::verify(op_entry(Op::neg), ScalarType::Float32, 1).passed) << "restored";
  EXPECT_NE(kernels::format_verdicts({v}).find("FAIL"), std::string::npos);
}

}  // namespace
}  // namespace descent
