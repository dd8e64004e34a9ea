// The two calling conventions (Note [Boxed and unboxed calls]): a typed call
// runs the unboxed kernel where the op has one, boxes where it has not, and
// gives what a boxed call gives, for every op of the table.
#include <gtest/gtest.h>

#include "floors/dispatch/unboxed.h"
#include "floors/kernels/device/random.h"
#include "floors/kernels/verify/verifier.h"
#include "tests/kernels/kernel_test_util.h"
#include "tracer/trace.h"

namespace descent {
namespace {

using BinaryAlphaSig = Tensor(const Tensor&, const Tensor&, const Scalar&);
using BinarySig = Tensor(const Tensor&, const Tensor&);

bool same(const Tensor& a, const Tensor& b) {
  return a.dtype() == b.dtype() && a.sizes() == b.sizes() && testing_util::values(a) == testing_util::values(b);
}

// The dispatch spans' "convention" arguments of running fn, traced.
std::vector<std::string> conventions(const std::function<void()>& fn) {
  trace::start();
  fn();
  const trace::Trace t = trace::stop();
  std::vector<std::string> out;
  for (const trace::Span& s : t.spans) {
    if (const auto* v = s.find_arg("convention")) out.push_back(std::get<std::string>(*v));
  }
  return out;
}

TEST(Unboxed, BinaryOpsRunTheirTypedKernelAndAgreeWithBoxed) {
  std::mt19937_64 rng(7);
  for (ScalarType dt : {ScalarType::Int64, ScalarType::Float32, ScalarType::Float64}) {
    const Tensor a = testing_util::random_tensor({3, 4}, dt, rng, 1, 5),
                 b = testing_util::random_tensor({4}, dt, rng, 1, 5);
    EXPECT_TRUE(same(TypedOp<BinaryAlphaSig>(Op::add).call(a, b, Scalar(int64_t{2})), call(Op::add, a, b, 2)));
    EXPECT_TRUE(same(TypedOp<BinaryAlphaSig>(Op::sub).call(a, b, Scalar(int64_t{1})), call(Op::sub, a, b)));
    EXPECT_TRUE(same(TypedOp<BinarySig>(Op::mul).call(a, b), call(Op::mul, a, b)));
    EXPECT_TRUE(same(TypedOp<BinarySig>(Op::div).call(a, b), call(Op::div, a, b)));
  }
  const Tensor x = testing_util::make({2}, ScalarType::Float32, {1, 2});
  // Both dispatches of the call (the Autograd kernel's, then the CPU kernel's) stay unboxed.
  EXPECT_EQ(conventions([&] { TypedOp<BinarySig>(Op::mul).call(x, x); }),
            (std::vector<std::string>{"unboxed", "unboxed"}));
  // A typed call of another signature than the kernel's is boxed, not mistaken for it
  // (the redispatch below autograd is then a boxed call, which marks no convention).
  EXPECT_EQ(conventions([&] { TypedOp<Tensor(const Tensor&)>(Op::neg).call(x); }), std::vector<std::string>{"boxed"});
}

TEST(Unboxed, TheTypedCallComputesTheKeySetAndErrorsAsTheBoxedOne) {
  const Tensor x = testing_util::make({2}, ScalarType::Float32, {1, 2});
  trace::start();
  TypedOp<BinarySig>(Op::mul).call(x, x);
  const trace::Trace t = trace::stop();
  std::vector<const trace::Span*> d;  // the call's dispatch, then the Autograd kernel's redispatch
  for (const trace::Span& s : t.spans) {
    if (s.floor == trace::Floor::Dispatch) d.push_back(&s);
  }
  ASSERT_EQ(d.size(), 2u);
  auto arg = [](const trace::Span* s, const char* k) {
    const trace::ArgValue* v = s->find_arg(k);
    return v ? std::get<std::string>(*v) : std::string("(none)");
  };
  EXPECT_EQ(d[0]->name, "aten::mul");
  EXPECT_EQ(arg(d[0], "keyset"), "CPU|BackendSelect|ADInplaceOrView|AutogradCPU");
  EXPECT_EQ(arg(d[0], "kernel"), "AutogradCPU") << "mul has a derivative: its Autograd kernel checks requires_grad";
  EXPECT_EQ(arg(d[0], "convention"), "unboxed");
  // A kernel is handed the keys that are live for its op (the fallthroughs
  // already masked out), so what it redispatches to is CPU alone.
  EXPECT_EQ(arg(d[1], "keyset"), "CPU") << "below autograd";
  EXPECT_EQ(arg(d[1], "kernel"), "CPU");
  EXPECT_EQ(arg(d[1], "convention"), "unboxed") << "the check redispatches without boxing";
  const Tensor y = testing_util::make({3}, ScalarType::Float32, {1, 2, 3});
  EXPECT_THROW(TypedOp<BinarySig>(Op::mul).call(x, y), Error);  // shapes that do not broadcast
}

// Every op of the table, its sample call made both ways: boxed, and typed
// with IValue arguments (which boxes, after computing the key set from them).
template <size_t... I>
IValue typed_call(Op op, const Stack& s, std::index_sequence<I...>) {
  using Sig = IValue(decltype((void)I, std::declval<const IValue&>())...);
  return TypedOp<Sig>(op).call(s[I]...);
}
IValue typed_call(Op op, const Stack& s) {
  switch (s.size()) {
    case 1:
      return typed_call(op, s, std::make_index_sequence<1>());
    case 2:
      return typed_call(op, s, std::make_index_sequence<2>());
    case 3:
      return typed_call(op, s, std::make_index_sequence<3>());
    case 4:
      return typed_call(op, s, std::make_index_sequence<4>());
    case 5:
      return typed_call(op, s, std::make_index_sequence<5>());
    case 6:
      return typed_call(op, s, std::make_index_sequence<6>());
    default:
      ADD_FAILURE() << "a sample call of " << s.size() << " arguments";
      return IValue();
  }
}

TEST(Unboxed, EveryOpGivesTheSameResultBoxedAndTyped) {
  for (const OpEntry& e : all_ops()) {
    if (!kernels::is_verified(e)) continue;  // a collective needs a process group: test_distributed.py
    if (e.domain != Domain::Any && e.domain != Domain::Positive) continue;
    for (ScalarType dt : {ScalarType::Float32, ScalarType::Int64}) {
      Stack boxed = kernels::sample_call(e, dt, 3), typed = kernels::sample_call(e, dt, 3);
      bool boxed_ok = true;
      try {
        call_boxed(e.id, boxed);
      } catch (const Error&) {
        boxed_ok = false;  // this op refuses this dtype: the typed call must refuse it too
      }
      if (!boxed_ok) {
        EXPECT_THROW(typed_call(e.id, typed), Error) << e.name;
        continue;
      }
      // Random factories draw from the generator: the same seed for both calls.
      kernels::manual_seed(11);
      Stack again = kernels::sample_call(e, dt, 3);
      call_boxed(e.id, again);
      kernels::manual_seed(11);
      const IValue r = typed_call(e.id, typed);
      if (e.kind == OpKind::Read) {  // item, _local_scalar_dense: a Scalar
        ASSERT_TRUE(r.is_scalar() && again[0].is_scalar()) << e.name;
        EXPECT_EQ(r.tag(), again[0].tag()) << e.name;
        EXPECT_EQ(r.to_double(), again[0].to_double()) << e.name << " " << dtype_name(dt);
        continue;
      }
      ASSERT_TRUE(r.is_tensor()) << e.name;
      // Its elements are whatever the memory held: compare what it promises.
      if (e.id == Op::empty || e.id == Op::empty_strided || e.id == Op::empty_like || e.id == Op::new_empty) {
        EXPECT_EQ(r.to_tensor().sizes(), again[0].to_tensor().sizes());
        EXPECT_EQ(r.to_tensor().dtype(), again[0].to_tensor().dtype());
        EXPECT_EQ(r.to_tensor().strides(), again[0].to_tensor().strides());
        continue;
      }
      EXPECT_TRUE(same(r.to_tensor(), again[0].to_tensor())) << e.name << " " << dtype_name(dt);
    }
  }
}

}  // namespace
}  // namespace descent
