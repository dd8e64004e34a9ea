// Tests for the dispatcher (floors/dispatch/{dispatch_key,dispatcher,
// backend_select,ivalue}): key-set operations, the key set of a call, the
// thread's include/exclude guards, fallthrough and redispatch through a test
// kernel registered at Autograd, BackendSelect for factories, missing kernels,
// default filling and argument-count errors, and the boxed calling convention.
//
// Every test that registers a kernel or changes a fallthrough restores it
// through an RAII helper, so a failing assertion cannot leak into other tests.
//
// [SECTION] Key sets
// [SECTION] The key set of a call, and the thread's guards
// [SECTION] Fallthrough and redispatch
// [SECTION] Factories and BackendSelect
// [SECTION] Errors, defaults and the boxed convention
#include <gtest/gtest.h>

#include <string>
#include <thread>

#include "floors/dispatch/dispatcher.h"

namespace descent {
namespace {

// Registers `k` for (op, key) for the scope, then puts the old kernel back.
struct KernelOverride {
  KernelOverride(Op op, DispatchKey key, BoxedKernel k) : op(op), key(key), old(register_kernel(op, key, k)) {}
  ~KernelOverride() { register_kernel(op, key, old); }
  Op op;
  DispatchKey key;
  BoxedKernel old;
};
// Sets (op, key)'s fallthrough for the scope, then restores what it was.
struct FallthroughOverride {
  FallthroughOverride(Op op, DispatchKey key, bool on) : op(op), key(key), was(op_entry(op).fallthrough.has(key)) {
    set_fallthrough(op, key, on);
  }
  ~FallthroughOverride() { set_fallthrough(op, key, was); }
  Op op;
  DispatchKey key;
  bool was;
};

Tensor floats(std::initializer_list<float> v) {
  Tensor t = empty_tensor({int64_t(v.size())}, ScalarType::Float32, Device{});
  int i = 0;
  for (float x : v) t.data<float>()[i++] = x;
  return t;
}

// [SECTION] Key sets ----------------------------------------------------------------------

TEST(DispatchKeySet, HighestBelowAddRemove) {
  constexpr DispatchKeySet s = DispatchKeySet(DispatchKey::CPU).add(DispatchKey::Autograd).add(DispatchKey::BackendSelect);
  static_assert(s.highest() == DispatchKey::Autograd);
  static_assert(s.below(DispatchKey::Autograd) == DispatchKeySet(DispatchKey::CPU).add(DispatchKey::BackendSelect));
  static_assert(s.below(DispatchKey::BackendSelect) == DispatchKeySet(DispatchKey::CPU));
  static_assert(s.below(DispatchKey::CPU).empty());
  static_assert(s.remove(DispatchKey::Autograd).highest() == DispatchKey::BackendSelect);
  static_assert(s.remove(DispatchKey::Sim) == s);  // removing an absent key changes nothing
  static_assert(DispatchKeySet().highest() == DispatchKey::Undefined);
  static_assert(DispatchKeySet(DispatchKey::Undefined).empty());
  static_assert((s & DispatchKeySet(DispatchKey::CPU)) == DispatchKeySet(DispatchKey::CPU));
  static_assert((s - s).empty());
  static_assert(DispatchKeySet(DispatchKey::CUDA).bits() == 1u << 3);
  EXPECT_TRUE(s.has(DispatchKey::CPU));
  EXPECT_FALSE(s.has(DispatchKey::Sim));
}

TEST(DispatchKeySet, NamesListHighestFirst) {
  DispatchKeySet s = DispatchKeySet(DispatchKey::CPU).add(DispatchKey::Autograd);
  EXPECT_EQ(s.str(), "Autograd|CPU");
  EXPECT_EQ(s.add(DispatchKey::BackendSelect).str(), "Autograd|BackendSelect|CPU");
  EXPECT_EQ(DispatchKeySet(DispatchKey::Sim).str(), "Sim");
  EXPECT_EQ(DispatchKeySet().str(), "{}");
  EXPECT_STREQ(s.name(), "Autograd|CPU");
  EXPECT_EQ(s.name(), s.name()) << "name() is interned: the same pointer each time";
  const char* names[] = {"Undefined", "CPU", "Sim", "CUDA", "BackendSelect", "Autograd"};
  for (int k = 0; k < kNumDispatchKeys; ++k) EXPECT_STREQ(dispatch_key_name(DispatchKey(k)), names[k]);
}

// [SECTION] The key set of a call, and the thread's guards ----------------------------

DispatchKeySet keys_of_call(Op op, const Tensor& a) {
  Stack s;
  s.push(a);
  return compute_key_set(op_entry(op), s);
}

TEST(KeySetOfCall, CpuTensorGivesBackendSelectAndCpu) {
  Tensor x = floats({1, 2});
  EXPECT_EQ(keys_of_call(Op::neg, x), DispatchKeySet(DispatchKey::BackendSelect).add(DispatchKey::CPU));
  EXPECT_EQ(keys_of_call(Op::neg, x).str(), "BackendSelect|CPU");
  x.set_requires_grad(true);
  DispatchKeySet ks = keys_of_call(Op::neg, x);
  EXPECT_TRUE(ks.has(DispatchKey::Autograd));
  EXPECT_EQ(ks.highest(), DispatchKey::Autograd);
  EXPECT_EQ(ks.str(), "Autograd|BackendSelect|CPU");
  // A factory call has no tensor: BackendSelect alone.
  Stack none;
  none.push(DimVector{2});
  EXPECT_EQ(compute_key_set(op_entry(Op::zeros), none), DispatchKeySet(DispatchKey::BackendSelect));
  // Several tensors: the union.
  Stack two;
  two.push(floats({1}));
  two.push(x);
  EXPECT_TRUE(compute_key_set(op_entry(Op::add), two).has(DispatchKey::Autograd));
}

TEST(KeySetOfCall, GuardsChangeTheSetAndRestoreOnExit) {
  Tensor x = floats({1});
  x.set_requires_grad(true);
  const DispatchKeySet plain = keys_of_call(Op::neg, x);
  ASSERT_TRUE(local_keys().included.empty());
  ASSERT_TRUE(local_keys().excluded.empty());
  {
    ExcludeKeyGuard no_grad(DispatchKey::Autograd);
    EXPECT_TRUE(local_keys().excluded.has(DispatchKey::Autograd));
    EXPECT_FALSE(keys_of_call(Op::neg, x).has(DispatchKey::Autograd));
    {
      ExcludeKeyGuard again(DispatchKey::Autograd);  // nested: still excluded after the inner one ends
    }
    EXPECT_FALSE(keys_of_call(Op::neg, x).has(DispatchKey::Autograd));
    {
      IncludeKeyGuard inc(DispatchKey::Autograd);  // exclusion wins over inclusion
      EXPECT_FALSE(keys_of_call(Op::neg, x).has(DispatchKey::Autograd));
    }
  }
  EXPECT_EQ(keys_of_call(Op::neg, x), plain);
  EXPECT_TRUE(local_keys().excluded.empty());
  Tensor y = floats({1});
  {
    IncludeKeyGuard inc(DispatchKey::Autograd);
    EXPECT_TRUE(keys_of_call(Op::neg, y).has(DispatchKey::Autograd));
    // The guards are per thread.
    std::thread other([&] {
      EXPECT_TRUE(local_keys().included.empty());
      EXPECT_FALSE(keys_of_call(Op::neg, y).has(DispatchKey::Autograd));
    });
    other.join();
  }
  EXPECT_FALSE(keys_of_call(Op::neg, y).has(DispatchKey::Autograd));
  EXPECT_TRUE(local_keys().included.empty());
}

// [SECTION] Fallthrough and redispatch ---------------------------------------------

int g_autograd_runs = 0;
DispatchKeySet g_autograd_keys;
DispatchKeySet g_cpu_keys;

// A stand-in for floor 4: records that it ran, then passes the call below itself.
void autograd_neg(const OpEntry& op, DispatchKeySet keys, Stack& s) {
  ++g_autograd_runs;
  g_autograd_keys = keys;
  redispatch_boxed(op, keys.below(DispatchKey::Autograd), s);
}
// Wraps the real CPU kernel of neg to record the key set it was given.
BoxedKernel g_real_cpu_neg = nullptr;
void recording_cpu_neg(const OpEntry& op, DispatchKeySet keys, Stack& s) {
  g_cpu_keys = keys;
  g_real_cpu_neg(op, keys, s);
}

class Fallthrough : public ::testing::Test {
 protected:
  void SetUp() override {
    g_autograd_runs = 0;
    g_autograd_keys = g_cpu_keys = DispatchKeySet();
    g_real_cpu_neg = cpu.old;  // the real kernel, replaced by the recording one below
    x = floats({1.5f, -2.f, 0.f});
    x.set_requires_grad(true);
  }
  void expect_negated(const Tensor& y) {
    ASSERT_EQ(y.numel(), 3);
    EXPECT_EQ(y.data<float>()[0], -1.5f);
    EXPECT_EQ(y.data<float>()[1], 2.f);
    EXPECT_EQ(y.data<float>()[2], -0.f);
    EXPECT_FALSE(y.is_same(x));
  }
  Tensor x;
  KernelOverride autograd{Op::neg, DispatchKey::Autograd, autograd_neg};
  KernelOverride cpu{Op::neg, DispatchKey::CPU, recording_cpu_neg};
};

TEST_F(Fallthrough, KernelRunsWhenFallthroughIsOff) {
  FallthroughOverride off(Op::neg, DispatchKey::Autograd, false);
  expect_negated(call(Op::neg, x));
  EXPECT_EQ(g_autograd_runs, 1);
  EXPECT_EQ(g_autograd_keys.str(), "Autograd|CPU") << "BackendSelect falls through for neg";
  EXPECT_EQ(g_cpu_keys.str(), "CPU");
}

TEST_F(Fallthrough, KernelIsSkippedWhileFallthroughIsOn) {
  ASSERT_TRUE(op_entry(Op::neg).fallthrough.has(DispatchKey::Autograd)) << "the default";
  expect_negated(call(Op::neg, x));
  EXPECT_EQ(g_autograd_runs, 0);
  EXPECT_EQ(g_cpu_keys.str(), "CPU");
}

TEST_F(Fallthrough, ExcludeGuardSkipsTheKernel) {
  FallthroughOverride off(Op::neg, DispatchKey::Autograd, false);
  {
    ExcludeKeyGuard no_grad(DispatchKey::Autograd);
    expect_negated(call(Op::neg, x));
    EXPECT_EQ(g_autograd_runs, 0);
  }
  expect_negated(call(Op::neg, x));
  EXPECT_EQ(g_autograd_runs, 1) << "the guard's exclusion ends with its scope";
}

TEST_F(Fallthrough, IncludeGuardReachesTheKernelWithoutRequiresGrad) {
  FallthroughOverride off(Op::neg, DispatchKey::Autograd, false);
  Tensor plain = floats({1.f, 2.f, 3.f});
  call(Op::neg, plain);
  EXPECT_EQ(g_autograd_runs, 0);
  IncludeKeyGuard inc(DispatchKey::Autograd);
  Tensor y = call(Op::neg, plain);
  EXPECT_EQ(g_autograd_runs, 1);
  EXPECT_EQ(y.data<float>()[2], -3.f);
}

TEST_F(Fallthrough, EverythingIsRestoredAfterwards) {
  {
    FallthroughOverride off(Op::neg, DispatchKey::Autograd, false);
    KernelOverride inner(Op::neg, DispatchKey::Autograd, nullptr);
    EXPECT_FALSE(op_entry(Op::neg).fallthrough.has(DispatchKey::Autograd));
  }
  EXPECT_TRUE(op_entry(Op::neg).fallthrough.has(DispatchKey::Autograd));
  EXPECT_EQ(op_entry(Op::neg).kernels[int(DispatchKey::Autograd)], autograd_neg);
  // register_kernel returns the kernel it replaced.
  EXPECT_EQ(register_kernel(Op::neg, DispatchKey::Sim, nullptr), nullptr);
}

TEST(Redispatch, RunsTheHighestKeyOfTheGivenSet) {
  Stack s;
  s.push(floats({4.f}));
  redispatch_boxed(op_entry(Op::neg), DispatchKeySet(DispatchKey::CPU), s);
  ASSERT_EQ(s.size(), 1);
  EXPECT_EQ(s[0].to_tensor().data<float>()[0], -4.f);
}

// [SECTION] Factories and BackendSelect ----------------------------------------------

DispatchKeySet g_factory_keys;
BoxedKernel g_real_cpu_zeros = nullptr;
void recording_cpu_zeros(const OpEntry& op, DispatchKeySet keys, Stack& s) {
  g_factory_keys = keys;
  g_real_cpu_zeros(op, keys, s);
}

TEST(BackendSelect, PicksCpuForNoneAndCpu) {
  g_real_cpu_zeros = op_entry(Op::zeros).kernels[int(DispatchKey::CPU)];
  KernelOverride rec(Op::zeros, DispatchKey::CPU, recording_cpu_zeros);
  for (IValue dev : {IValue(), IValue(Device::parse("cpu")), IValue(Device{})}) {
    g_factory_keys = DispatchKeySet();
    Tensor t = call(Op::zeros, DimVector{2, 3}, IValue(), dev);
    EXPECT_EQ(g_factory_keys, DispatchKeySet(DispatchKey::CPU)) << g_factory_keys.str();
    EXPECT_EQ(t.device(), Device{});
    EXPECT_EQ(t.sizes(), (DimVector{2, 3}));
    EXPECT_EQ(t.dtype(), ScalarType::Float32);
    for (int i = 0; i < 6; ++i) EXPECT_EQ(t.data<float>()[i], 0.f);
  }
  // The defaults (dtype=None, device=None) are filled in the same way.
  Tensor d = call(Op::ones, DimVector{2});
  EXPECT_EQ(d.device(), Device{});
}

TEST(BackendSelect, OtherDevicesRaiseNotImplementedNamingOpAndBackend) {
  struct Case { Device dev; const char* key; };
  for (Case c : {Case{Device{DeviceType::Sim, 0}, "'Sim'"}, Case{Device::parse("cuda:1"), "'CUDA'"}}) {
    for (Op op : {Op::zeros, Op::empty, Op::rand}) {
      try {
        call(op, DimVector{2}, IValue(), c.dev);
        ADD_FAILURE() << "no error for " << op_entry(op).name << " on " << c.dev.str();
      } catch (const NotImplementedError& e) {
        std::string m = e.what();
        EXPECT_NE(m.find(std::string("'") + op_entry(op).name + "'"), std::string::npos) << m;
        EXPECT_NE(m.find(c.key), std::string::npos) << m;
      }
    }
  }
  EXPECT_THROW(call(Op::arange_start_step, 0, 5, 1, IValue(), Device{DeviceType::Sim, 0}), NotImplementedError);
}

// [SECTION] Errors, defaults and the boxed convention ----------------------------------

TEST(Dispatch, MissingKernelRaisesNotImplementedNamingOpAndKey) {
  Tensor x = floats({1.f});
  {
    KernelOverride gone(Op::neg, DispatchKey::CPU, nullptr);
    try {
      call(Op::neg, x);
      ADD_FAILURE() << "no error";
    } catch (const NotImplementedError& e) {
      std::string m = e.what();
      EXPECT_NE(m.find("'aten::neg'"), std::string::npos) << m;
      EXPECT_NE(m.find("'CPU'"), std::string::npos) << m;
    }
  }
  EXPECT_EQ(call(Op::neg, x).data<float>()[0], -1.f) << "restored";
  // Excluding the backend leaves no key at all: an error, not a crash.
  ExcludeKeyGuard no_cpu(DispatchKey::CPU);
  EXPECT_THROW(call(Op::neg, x), NotImplementedError);
}

TEST(Dispatch, DefaultsAreFilledFromTheSchema) {
  Tensor x = floats({1.f, 2.f, 3.f});
  Tensor total = call(Op::sum, x);  // dim=None, keepdim=False
  EXPECT_EQ(total.dim(), 0);
  EXPECT_EQ(total.data<float>()[0], 6.f);
  Stack s;
  s.push(x);
  s.push(floats({1.f, 1.f, 1.f}));
  call_boxed(Op::add, s);  // alpha=1 filled in
  ASSERT_EQ(s.size(), 1);
  EXPECT_EQ(s[0].to_tensor().data<float>()[2], 4.f);
  Tensor sl = call(Op::slice, x);  // dim=0, start=None, end=None, step=1
  EXPECT_EQ(sl.sizes(), (DimVector{3}));
  Tensor to64 = call(Op::to, x, ScalarType::Float64);  // device=None, copy=False
  EXPECT_EQ(to64.dtype(), ScalarType::Float64);
}

TEST(Dispatch, ArgumentCountErrorsAreTypeErrors) {
  Tensor x = floats({1.f});
  try {
    call(Op::neg, x, x);
    ADD_FAILURE() << "no error";
  } catch (const TypeError& e) {
    EXPECT_NE(std::string(e.what()).find("neg() takes 1 arguments but 2 were given"), std::string::npos) << e.what();
  }
  EXPECT_THROW(call(Op::sum, x, IValue(), false, 7), TypeError);
  try {
    call(Op::add, x);
    ADD_FAILURE() << "no error";
  } catch (const TypeError& e) {
    EXPECT_NE(std::string(e.what()).find("missing required argument 'other'"), std::string::npos) << e.what();
  }
  // No tensor argument means no backend key: the dispatcher cannot pick a kernel
  // (type checks are the binding's job), but it raises instead of crashing.
  EXPECT_THROW(call(Op::neg, 3), NotImplementedError);
  EXPECT_THROW(call(Op::sum, x, 1.5), TypeError) << "a float where int[]? is expected";
}

TEST(Dispatch, SeveralResultsComeBackOnTheStack) {
  Stack s;
  s.push(floats({3.f, 7.f, 5.f}));
  s.push(0);
  call_boxed(Op::max_dim, s);
  ASSERT_EQ(s.size(), 2);
  EXPECT_EQ(s[0].to_tensor().data<float>()[0], 7.f);
  EXPECT_EQ(s[1].to_tensor().dtype(), ScalarType::Int64);
  EXPECT_EQ(s[1].to_tensor().data<int64_t>()[0], 1);
}

TEST(IValue, AccessorsCheckTheTagAndStackHasACapacity) {
  IValue i(int64_t{5});
  EXPECT_EQ(i.to_int(), 5);
  EXPECT_EQ(i.to_double(), 5.0);  // an int is a valid float argument
  EXPECT_TRUE(i.to_scalar().is_integral());
  try {
    i.to_tensor();
    ADD_FAILURE() << "no error";
  } catch (const TypeError& e) {
    EXPECT_NE(std::string(e.what()).find("expected a value of type Tensor but got int"), std::string::npos) << e.what();
  }
  EXPECT_THROW(IValue(1.5).to_int(), TypeError);
  EXPECT_THROW(IValue().to_device(), TypeError);
  EXPECT_EQ(IValue(Scalar(2.5)).tag(), IValue::Tag::Double);
  EXPECT_EQ(IValue(Scalar(true)).tag(), IValue::Tag::Bool);
  // Copies of a tensor IValue share the tensor; moves leave None behind.
  Tensor t = floats({1.f});
  int uses = t.impl()->use_count();
  IValue a(t), b(a);
  EXPECT_EQ(t.impl()->use_count(), uses + 2);
  IValue c(std::move(a));
  EXPECT_TRUE(a.is_none());  // NOLINT(bugprone-use-after-move)
  EXPECT_EQ(t.impl()->use_count(), uses + 2);
  b = IValue(3);
  EXPECT_EQ(t.impl()->use_count(), uses + 1);
  Stack s;
  for (int k = 0; k < kMaxStack; ++k) s.push(k);
  EXPECT_THROW(s.push(0), Error);
  EXPECT_EQ(s.pop().to_int(), kMaxStack - 1);
  s.set_result(IValue(t));
  EXPECT_EQ(s.size(), 1);
}

// Note [Borrowed arguments]: a borrowed tensor costs no reference, and every
// way out of the stack (a copy, a result moved out) owns one.
TEST(IValue, BorrowedTensorsTakeNoReferenceUntilCopiedOrMovedOut) {
  Tensor t = floats({1.f, 2.f});
  int uses = t.impl()->use_count();
  IValue b = IValue::borrow(t);
  EXPECT_TRUE(b.is_tensor());
  EXPECT_TRUE(b.is_borrowed());
  EXPECT_TRUE(b.to_tensor().is_same(t));
  EXPECT_EQ(t.impl()->use_count(), uses);
  IValue moved(std::move(b));  // still borrowed: a pointer moved
  EXPECT_TRUE(moved.is_borrowed());
  EXPECT_EQ(t.impl()->use_count(), uses);
  IValue copy(moved);  // a copy owns
  EXPECT_FALSE(copy.is_borrowed());
  EXPECT_EQ(t.impl()->use_count(), uses + 1);
  Tensor out = std::move(moved.owned_tensor());  // moving out owns first: t keeps its tensor
  EXPECT_TRUE(t.defined());
  EXPECT_TRUE(out.is_same(t));
  EXPECT_EQ(t.impl()->use_count(), uses + 2);

  // Through a whole call: the arguments are borrowed, so after the call the
  // counts are as before, and a kernel that returns its input (contiguous of
  // a contiguous tensor) hands back an owned reference.
  Tensor r = call(Op::contiguous, t);
  EXPECT_TRUE(r.is_same(t));
  EXPECT_EQ(t.impl()->use_count(), uses + 3);
  Stack s;
  s.push(IValue::borrow(t));
  s.set_result(std::move(s[0]));  // a borrowed result, still safe to move out of
  Tensor r2 = std::move(s[0].owned_tensor());
  EXPECT_TRUE(t.defined());
  EXPECT_TRUE(r2.is_same(t));
}

}  // namespace
}  // namespace descent
