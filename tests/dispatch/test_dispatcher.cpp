// Tests for the dispatcher (floors/dispatch/{dispatch_key,dispatcher,
// backend_select,ivalue}): key-set operations, the key set of a call, the
// thread's include/exclude guards, grad and inference mode, fallthrough and
// redispatch through a test kernel registered at AutogradCPU, BackendSelect
// for factories, missing kernels,
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
#include "tracer/trace.h"

namespace descent {
namespace {

// Registers `k` for (op, runtime key) for the scope, then puts the old kernel back.
struct KernelOverride {
  KernelOverride(Op op, DispatchKey key, BoxedKernel k) : op(op), key(key), old(register_kernel(op, key, k)) {}
  ~KernelOverride() { register_kernel(op, key, old); }
  Op op;
  DispatchKey key;
  BoxedKernel old;
};
// Marks (op, key) as a fallthrough or not for the scope (an alias key: all
// its runtime keys), then takes the mark away again.
struct FallthroughOverride {
  FallthroughOverride(Op op, DispatchKey key, bool on) : op(op), key(key) {
    for (int8_t m : op_entry(op).own_fallthrough) EXPECT_EQ(m, 0) << "a mark left by another test";
    set_fallthrough(op, key, on);
  }
  ~FallthroughOverride() { clear_fallthrough(op, key); }
  Op op;
  DispatchKey key;
};

Tensor floats(std::initializer_list<float> v) {
  Tensor t = empty_tensor({int64_t(v.size())}, ScalarType::Float32, Device{});
  int i = 0;
  for (float x : v) t.data<float>()[i++] = x;
  return t;
}

// [SECTION] Key sets ----------------------------------------------------------------------

// Note [A key set is functionalities times backends]
TEST(DispatchKeySet, PerBackendKeysAreAFunctionalityAndABackend) {
  constexpr DispatchKeySet cpu(DispatchKey::CPU), autograd_cpu(DispatchKey::AutogradCPU);
  static_assert(cpu.has_functionality(Functionality::Dense));
  static_assert(cpu.highest_backend() == BackendComponent::CPU);
  static_assert(autograd_cpu.has_functionality(Functionality::AutogradFunctionality));
  static_assert(autograd_cpu.highest_backend() == BackendComponent::CPU);
  static_assert((cpu | autograd_cpu).repr() ==
                (DispatchKeySet::backend(BackendComponent::CPU) | DispatchKeySet::functionality(Functionality::Dense) |
                 DispatchKeySet::functionality(Functionality::AutogradFunctionality))
                    .repr());
  // The representation's one loss: CPU with AutogradCUDA also "holds" CUDA and AutogradCPU.
  constexpr DispatchKeySet mixed = cpu | DispatchKeySet(DispatchKey::AutogradCUDA);
  static_assert(mixed.has(DispatchKey::CUDA) && mixed.has(DispatchKey::AutogradCPU));
  EXPECT_EQ(functionality_of(DispatchKey::AutogradSim), Functionality::AutogradFunctionality);
  EXPECT_EQ(backend_of(DispatchKey::AutogradSim), BackendComponent::Sim);
  EXPECT_EQ(backend_of(DispatchKey::BackendSelect), BackendComponent::Invalid);
  EXPECT_EQ(per_backend_key(Functionality::Dense, BackendComponent::CUDA), DispatchKey::CUDA);
  EXPECT_EQ(per_backend_key(Functionality::AutogradFunctionality, BackendComponent::Sim), DispatchKey::AutogradSim);
}

TEST(DispatchKeySet, HighestBelowAddRemove) {
  const DispatchKeySet s = tensor_keys(BackendComponent::CPU, false).add(DispatchKey::BackendSelect);
  EXPECT_EQ(s.highest(), DispatchKey::AutocastCPU);
  EXPECT_EQ((s - kAutocastKeys).highest(), DispatchKey::AutogradCPU);
  EXPECT_EQ(s.below(DispatchKey::AutogradCPU).str(), "CPU, BackendSelect, ADInplaceOrView");
  EXPECT_EQ(s.below(DispatchKey::BackendSelect), DispatchKeySet(DispatchKey::CPU));
  EXPECT_EQ(s.below(DispatchKey::CPU).highest(), DispatchKey::Undefined) << "only the backend bit is left";
  // Removing keys keeps the backend: excluding every Autograd key leaves CPU.
  EXPECT_EQ((s - kAutogradKeysWithADInplaceOrView - kAutocastKeys).str(), "CPU, BackendSelect");
  EXPECT_EQ(s.remove(DispatchKey::AutogradCPU).has(DispatchKey::CPU), true);
  EXPECT_FALSE(s.has(DispatchKey::Sim));
  EXPECT_FALSE(s.has(DispatchKey::AutogradCUDA));
  EXPECT_EQ(DispatchKeySet().highest(), DispatchKey::Undefined);
  EXPECT_TRUE(DispatchKeySet(DispatchKey::Undefined).empty());
  EXPECT_EQ(DispatchKeySet(DispatchKey::CUDA).highest(), DispatchKey::CUDA);
  // Two backends: the highest backend bit wins (CUDA above CPU, as in c10).
  EXPECT_EQ((DispatchKeySet(DispatchKey::CPU) | DispatchKeySet(DispatchKey::CUDA)).highest(), DispatchKey::CUDA);
}

TEST(DispatchKeySet, PrintedAsC10PrintsThem) {
  // ../shared/fixtures/pytorch-h200/facts.json, dispatch_keys_of.
  EXPECT_EQ(tensor_keys(BackendComponent::CPU, false).str(), "CPU, ADInplaceOrView, AutogradCPU, AutocastCPU");
  EXPECT_EQ(tensor_keys(BackendComponent::CUDA, false).str(), "CUDA, ADInplaceOrView, AutogradCUDA, AutocastCUDA");
  EXPECT_EQ(tensor_keys(BackendComponent::Sim, false).str(), "Sim, ADInplaceOrView, AutogradSim, AutocastSim");
  EXPECT_EQ(tensor_keys(BackendComponent::CPU, true).str(), "CPU, AutocastCPU") << "an inference tensor";
  EXPECT_EQ(kDefaultIncluded.str(), "BackendSelect, ADInplaceOrView");
  EXPECT_EQ(DispatchKeySet().str(), "");
  const DispatchKeySet s = DispatchKeySet(DispatchKey::CPU).add(DispatchKey::AutogradCPU);
  EXPECT_STREQ(s.name(), "CPU|AutogradCPU");
  EXPECT_EQ(s.name(), s.name()) << "name() is interned: the same pointer each time";
  EXPECT_STREQ(DispatchKeySet().name(), "{}");
  const char* names[] = {"Undefined",
                         "CPU",
                         "CUDA",
                         "Sim",
                         "BackendSelect",
                         "Python",
                         "ADInplaceOrView",
                         "AutogradCPU",
                         "AutogradCUDA",
                         "AutogradSim",
                         "AutocastCPU",
                         "AutocastCUDA",
                         "AutocastSim",
                         "Autograd",
                         "CompositeExplicitAutograd",
                         "CompositeImplicitAutograd"};
  for (int k = 0; k < kNumDispatchKeys; ++k) EXPECT_STREQ(dispatch_key_name(DispatchKey(k)), names[k]);
  EXPECT_EQ(alias_runtime_keys(DispatchKey::Autograd).str(), "AutogradCPU, AutogradCUDA, AutogradSim");
  EXPECT_EQ(alias_runtime_keys(DispatchKey::CompositeExplicitAutograd).str(), "CPU, CUDA, Sim");
}

// [SECTION] The key set of a call, and the thread's guards ----------------------------

DispatchKeySet keys_of_call(Op op, const Tensor& a) {
  Stack s;
  s.push(a);
  return compute_key_set(op_entry(op), s);
}

TEST(KeySetOfCall, EveryCpuTensorCarriesTheAutogradKeysWhetherOrNotItRequiresGrad) {
  Tensor x = floats({1, 2});
  EXPECT_EQ(x.impl()->keys.str(), "CPU, ADInplaceOrView, AutogradCPU, AutocastCPU");
  // The tensor's keys, plus the thread's BackendSelect and ADInplaceOrView, minus its Autocast keys.
  EXPECT_EQ(keys_of_call(Op::neg, x).str(), "CPU, BackendSelect, ADInplaceOrView, AutogradCPU");
  x.set_requires_grad(true);
  EXPECT_EQ(x.impl()->keys.str(), "CPU, ADInplaceOrView, AutogradCPU, AutocastCPU") << "requires_grad adds no key";
  EXPECT_EQ(keys_of_call(Op::neg, x).highest(), DispatchKey::AutogradCPU);
  // A factory call has no tensor: the thread's keys alone.
  Stack none;
  none.push(DimVector{2});
  EXPECT_EQ(compute_key_set(op_entry(Op::zeros), none).str(), "BackendSelect, ADInplaceOrView");
}

TEST(KeySetOfCall, NoGradIsAFlagAndChangesNoKey) {
  Tensor x = floats({1});
  const DispatchKeySet plain = keys_of_call(Op::neg, x);
  EXPECT_TRUE(grad_mode_enabled());
  {
    NoGradGuard no_grad;
    EXPECT_FALSE(grad_mode_enabled());
    EXPECT_EQ(keys_of_call(Op::neg, x), plain);
    EXPECT_EQ(floats({2}).impl()->keys, x.impl()->keys);
  }
  EXPECT_TRUE(grad_mode_enabled());
}

TEST(KeySetOfCall, BelowAutogradAndInferenceModeExcludeKeys) {
  Tensor x = floats({1});
  {
    AutoDispatchBelowAutograd below;
    EXPECT_EQ(keys_of_call(Op::neg, x).str(), "CPU, BackendSelect, ADInplaceOrView");
    {
      AutoDispatchBelowADInplaceOrView further;
      EXPECT_EQ(keys_of_call(Op::neg, x).str(), "CPU, BackendSelect");
    }
  }
  EXPECT_EQ(local_keys().included, kDefaultIncluded);
  EXPECT_EQ(local_keys().excluded, kDefaultExcluded);
  {
    InferenceMode inference;
    EXPECT_FALSE(grad_mode_enabled());
    EXPECT_TRUE(autograd_state().inference_mode);
    Tensor y = floats({1});
    EXPECT_TRUE(y.impl()->inference);
    EXPECT_EQ(y.impl()->keys.str(), "CPU, AutocastCPU");
    EXPECT_EQ(keys_of_call(Op::neg, y).str(), "CPU, BackendSelect");
    // A normal tensor still carries ADInplaceOrView, which is not excluded.
    EXPECT_EQ(keys_of_call(Op::neg, x).str(), "CPU, BackendSelect, ADInplaceOrView");
    {
      InferenceMode off(false);
      EXPECT_TRUE(grad_mode_enabled());
      EXPECT_EQ(keys_of_call(Op::neg, x).str(), "CPU, BackendSelect, ADInplaceOrView, AutogradCPU");
    }
  }
  EXPECT_FALSE(autograd_state().inference_mode);
  EXPECT_EQ(local_keys().included, kDefaultIncluded);
  EXPECT_EQ(local_keys().excluded, kDefaultExcluded);
}

TEST(KeySetOfCall, GuardsNestRestoreAndArePerThread) {
  Tensor x = floats({1});
  const DispatchKeySet plain = keys_of_call(Op::neg, x);
  {
    ExcludeKeyGuard no_cpu_autograd(DispatchKey::AutogradCPU);
    EXPECT_FALSE(keys_of_call(Op::neg, x).has(DispatchKey::AutogradCPU));
    {
      ExcludeKeyGuard again(DispatchKey::AutogradCPU);  // nested: still excluded after the inner one ends
    }
    EXPECT_FALSE(keys_of_call(Op::neg, x).has(DispatchKey::AutogradCPU));
    {
      IncludeKeyGuard inc(DispatchKey::AutogradCPU);  // exclusion wins over inclusion
      EXPECT_FALSE(keys_of_call(Op::neg, x).has(DispatchKey::AutogradCPU));
    }
  }
  EXPECT_EQ(keys_of_call(Op::neg, x), plain);
  {
    IncludeKeyGuard inc(DispatchKey::AutocastCPU);
    ExcludeKeyGuard exc{DispatchKeySet()};  // excludes nothing
    EXPECT_EQ(local_keys().included.str(), "BackendSelect, ADInplaceOrView, AutocastCPU");
    std::thread other([&] {
      EXPECT_EQ(local_keys().included, kDefaultIncluded) << "the guards are per thread";
      EXPECT_EQ(local_keys().excluded, kDefaultExcluded);
    });
    other.join();
  }
  EXPECT_EQ(local_keys().included, kDefaultIncluded);
}

// [SECTION] Fallthrough and redispatch ---------------------------------------------

int g_autograd_runs = 0;
DispatchKeySet g_autograd_keys;
DispatchKeySet g_cpu_keys;

// A stand-in for floor 4: records that it ran, then passes the call below itself.
void autograd_neg(const OpEntry& op, DispatchKeySet keys, Stack& s) {
  ++g_autograd_runs;
  g_autograd_keys = keys;
  redispatch_boxed(op, keys.below(DispatchKey::AutogradCPU), s);
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
  KernelOverride autograd{Op::neg, DispatchKey::AutogradCPU, autograd_neg};
  KernelOverride cpu{Op::neg, DispatchKey::CPU, recording_cpu_neg};
};

TEST_F(Fallthrough, KernelRunsWhenFallthroughIsOff) {
  FallthroughOverride off(Op::neg, DispatchKey::Autograd, false);
  expect_negated(call(Op::neg, x));
  EXPECT_EQ(g_autograd_runs, 1);
  EXPECT_EQ(g_autograd_keys.str(), "CPU, AutogradCPU") << "BackendSelect and ADInplaceOrView fall through for neg";
  EXPECT_EQ(g_cpu_keys.str(), "CPU");
}

TEST_F(Fallthrough, KernelIsSkippedWhileFallthroughIsOn) {
  FallthroughOverride on(Op::neg, DispatchKey::Autograd, true);
  expect_negated(call(Op::neg, x));
  EXPECT_EQ(g_autograd_runs, 0);
  EXPECT_EQ(g_cpu_keys.str(), "CPU");
}

TEST_F(Fallthrough, BelowAutogradSkipsTheKernel) {
  FallthroughOverride off(Op::neg, DispatchKey::Autograd, false);
  {
    AutoDispatchBelowAutograd below;
    expect_negated(call(Op::neg, x));
    EXPECT_EQ(g_autograd_runs, 0);
  }
  expect_negated(call(Op::neg, x));
  EXPECT_EQ(g_autograd_runs, 1) << "the guard's exclusion ends with its scope";
}

TEST_F(Fallthrough, EveryTensorReachesTheAutogradKernelRequiresGradOrNot) {
  FallthroughOverride off(Op::neg, DispatchKey::Autograd, false);
  Tensor plain = floats({1.f, 2.f, 3.f});
  Tensor y = call(Op::neg, plain);
  EXPECT_EQ(g_autograd_runs, 1) << "the kernel, not the key set, checks requires_grad";
  EXPECT_EQ(y.data<float>()[2], -3.f);
  NoGradGuard no_grad;
  call(Op::neg, plain);
  EXPECT_EQ(g_autograd_runs, 2) << "no_grad is a flag the kernel reads: the call still reaches it";
}

TEST(DefaultFallthrough, OnlyOpsWithoutADerivativeFallThroughAutogradAndOnlyBookkeepingOpsStopAtADInplaceOrView) {
  int inplace = 0, views = 0;
  for (const OpEntry& e : all_ops()) {
    // A CompositeImplicitAutograd op has its kernel at the Autograd keys (Note [Composite ops decompose]);
    // every other op has an Autograd kernel but the factories (Note [One derivative per op]); a
    // comparison's records nothing.
    // (A composite factory, ones_like or eye, has its composite's kernel there too.)
    const bool composite = std::string_view(e.dispatch).find("CompositeImplicitAutograd") != std::string_view::npos;
    for (DispatchKey k : {DispatchKey::AutogradCPU, DispatchKey::AutogradSim}) {
      EXPECT_EQ(e.is_fallthrough(k), e.kind == OpKind::Factory && !composite)
          << e.name << " at " << dispatch_key_name(k);
    }
    EXPECT_TRUE(e.is_fallthrough(DispatchKey::AutocastCPU)) << e.name;
    // Note [ADInplaceOrView]: ops that write in place or make views run its kernel.
    const bool mutable_op = !composite && e.schema.is_mutable(), view_op = !composite && e.schema.is_view();
    inplace += mutable_op;
    views += view_op;
    EXPECT_EQ(e.is_fallthrough(DispatchKey::ADInplaceOrView), !(mutable_op || view_op)) << e.name;
    EXPECT_EQ(e.is_fallthrough(DispatchKey::BackendSelect), !std::string_view(e.dispatch).starts_with("BackendSelect"))
        << e.name;  // the factories and _to_copy select (Note [Dispatch key priority])
  }
  EXPECT_EQ(inplace, 13) << "add_, sub_, mul_, div_, copy_, fill_ (.Scalar and .Tensor), zero_, index_put_, "
                            "uniform_, normal_, random_.from, clamp_";
  EXPECT_EQ(views, 14) << "view, transpose, t, permute, expand, slice, select, unsqueeze, alias, squeeze (three "
                          "overloads), unfold, as_strided";
}

// Note [ADInplaceOrView]: the key's kernels bump the version of a tensor
// written in place and record a view's base; below the key, neither happens.
TEST(ADInplaceOrView, BumpsVersionsAndRecordsBases) {
  Tensor x = floats({1, 2, 3});
  const uint32_t v0 = x.version();
  call(Op::add_, x, floats({1, 1, 1}));
  EXPECT_EQ(x.version(), v0 + 1);
  Tensor row = call(Op::select, x, 0, 1);
  EXPECT_TRUE(row.is_view());
  EXPECT_EQ(row.impl()->base.get(), x.impl());
  Tensor again = call(Op::unsqueeze, row, 0);
  EXPECT_EQ(again.impl()->base.get(), x.impl()) << "a view of a view has the root as its base";
  call(Op::fill_, row, 5);
  EXPECT_EQ(x.version(), v0 + 2) << "a view shares its base's counter";
  {
    AutoDispatchBelowADInplaceOrView below;
    call(Op::add_, x, floats({1, 1, 1}));
    EXPECT_EQ(x.version(), v0 + 2) << "below the key nothing is counted";
    EXPECT_FALSE(call(Op::select, x, 0, 0).is_view());
  }
  trace::start();
  call(Op::mul_, x, floats({2, 2, 2}));
  const trace::Trace t = trace::stop();
  std::vector<std::string> kernels;  // of the dispatch spans, outermost first
  for (const trace::Span& sp : t.spans) {
    const trace::ArgValue* k = sp.floor == trace::Floor::Dispatch ? sp.find_arg("kernel") : nullptr;
    if (k) kernels.push_back(std::get<std::string>(*k));
  }
  EXPECT_EQ(kernels, (std::vector<std::string>{"AutogradCPU", "ADInplaceOrView", "CPU"}));
}

TEST_F(Fallthrough, EverythingIsRestoredAfterwards) {
  {
    FallthroughOverride off(Op::neg, DispatchKey::Autograd, false);
    KernelOverride inner(Op::neg, DispatchKey::AutogradCPU, nullptr);
    EXPECT_FALSE(op_entry(Op::neg).is_fallthrough(DispatchKey::AutogradCUDA));
  }
  // A kernel registered at a key beats the key's fallthrough fallback, as in c10.
  EXPECT_FALSE(op_entry(Op::neg).is_fallthrough(DispatchKey::AutogradCPU));
  EXPECT_EQ(op_entry(Op::neg).kernel(DispatchKey::AutogradCPU), autograd_neg);
  EXPECT_FALSE(op_entry(Op::neg).is_fallthrough(DispatchKey::AutogradCUDA)) << "neg's own autograd kernel is there";
  EXPECT_TRUE(op_entry(Op::ones).is_fallthrough(DispatchKey::AutogradCUDA)) << "the fallback, where a factory has none";
  // register_kernel returns the kernel it replaced (here neg's sim:0 kernel, put back), and refuses alias keys.
  const auto sim_neg = op_entry(Op::neg).kernel(DispatchKey::Sim);
  ASSERT_NE(sim_neg, nullptr);
  EXPECT_EQ(register_kernel(Op::neg, DispatchKey::Sim, nullptr), sim_neg);
  EXPECT_EQ(register_kernel(Op::neg, DispatchKey::Sim, sim_neg), nullptr);
  EXPECT_THROW(register_kernel(Op::neg, DispatchKey::Autograd, nullptr), ValueError);
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
  g_real_cpu_zeros = op_entry(Op::zeros).kernel(DispatchKey::CPU);
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

TEST(BackendSelect, FactoriesReachTheDevicesBackendAndAMissingDeviceIsNamed) {
  const Device sim{DeviceType::Sim, 0};
  for (Op op : {Op::zeros, Op::empty, Op::rand}) {
    Tensor t = call(op, DimVector{2}, IValue(), sim);
    EXPECT_EQ(t.device(), sim) << op_entry(op).name;
  }
  EXPECT_EQ(call(Op::arange_start_step, 0, 5, 1, IValue(), sim).device(), sim);
  // cuda:9 exists on no machine descent runs on: the error names it, in one line.
  try {
    call(Op::zeros, DimVector{2}, IValue(), Device::parse("cuda:9"));
    ADD_FAILURE() << "no error for cuda:9";
  } catch (const Error& e) {
    const std::string m = e.what();
    EXPECT_EQ(m.rfind("cuda:9 is not available", 0), 0u) << m;
    EXPECT_EQ(m.find('\n'), std::string::npos) << m;
  }
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
  // Excluding the backend's functionality leaves no kernel: an error, not a crash.
  ExcludeKeyGuard no_dense(DispatchKeySet::functionality(Functionality::Dense));
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
