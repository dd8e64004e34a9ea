// Dispatch keys and key sets: how the dispatcher decides which kernel runs.
//
// [SECTION] Backends and functionalities
// [SECTION] Dispatch keys
// [SECTION] Key sets
// [SECTION] Named sets
//
// descent's keys are a subset of c10's (c10/core/DispatchKey.h), with the
// same names, the same order and the same representation, so that what the
// trace shows is what PyTorch does. See Note [Dispatch key priority] and
// Note [A key set is functionalities times backends].
#pragma once

#include <bit>
#include <cstdint>
#include <string>

namespace descent {

// [SECTION] Backends and functionalities ----------------------------------------

// A backend owns memory and runs kernels on it. c10 has a dozen (CPU, CUDA,
// HIP, XLA, MPS, ..., PrivateUse1); descent has the simulated device where
// c10 has PrivateUse1, the backend an out-of-tree device plugs into.
enum class BackendComponent : uint8_t {
  Invalid = 0,
  CPU = 1,   // host kernels, run on the calling thread
  CUDA = 2,  // a real NVIDIA GPU
  Sim = 3,   // the simulated device (c10's PrivateUse1 slot)
};
constexpr int kNumBackends = 3;

// Note [Dispatch key priority]
// ~~~~~~~~~~~~~~~~~~~~~~~~~~~~
// Every call carries a set of keys. The dispatcher runs the kernel of the
// highest-priority key in the set; that kernel may do its part and then
// "redispatch" with its own key (and everything above it) removed, so the call
// walks down the keys in order. A key registered as a fallthrough is skipped
// at no cost: it is masked out before the highest key is taken. Priority is
// the order of the functionality keys below, later is higher, as in c10:
//
// - Dense: the backend kernels (CPU, CUDA, Sim), the bottom. They own the
//   memory and do the actual work.
// - BackendSelect: for factories (empty, ones, arange...), which have no
//   tensor argument to take a backend from: its kernel reads the `device`
//   argument and redispatches to that backend; _to_copy, which has a tensor
//   and a device, adds the device's backend to the tensor's there. Every
//   call carries it (the thread includes it by default); other ops fall
//   through it.
// - Python: a Python __torch_dispatch__ mode sees the call here (Note [The
//   Python key], floors/binding/python_dispatch.cpp). No tensor carries it;
//   the thread includes it while a TorchDispatchMode is active, so a mode
//   sees each op after autograd has recorded it and after the composites
//   have decomposed it (aten.mm, aten.t), as in PyTorch. Every op falls
//   through it when no mode is on.
// - ADInplaceOrView: bumps the version counter of a tensor written in place
//   and records a view's base, for autograd's checks. Every tensor carries
//   it and the thread includes it; ops that neither write in place nor make
//   views fall through it.
// - Autograd (AutogradCPU, AutogradCUDA, AutogradSim): records the graph
//   node, then redispatches below itself. Every tensor carries its backend's
//   Autograd key, whether or not it requires grad (c10's "Dream: skip
//   VariableType kernel when requires_grad=false" is still a dream): the
//   kernel checks grad mode and requires_grad itself, and every op pays for
//   that check (Note [What an Autograd kernel does], floors/autograd/).
//   Ops with no derivative (factories, comparisons) fall through it.
// - AutocastCPU, AutocastCUDA, AutocastSim: mixed precision. Every tensor
//   carries its backend's, and the thread excludes them all by default, so
//   they act only inside an autocast region (which descent does not have).
enum class Functionality : uint8_t {
  None = 0,
  Dense = 1,  // per backend: CPU, CUDA, Sim
  BackendSelect = 2,
  Python = 3,
  ADInplaceOrView = 4,
  AutogradFunctionality = 5,  // per backend: AutogradCPU, AutogradCUDA, AutogradSim
  AutocastCPU = 6,
  AutocastCUDA = 7,
  AutocastSim = 8,
};
constexpr int kNumFunctionalities = 8;
constexpr bool is_per_backend(Functionality f) {
  return f == Functionality::Dense || f == Functionality::AutogradFunctionality;
}

// [SECTION] Dispatch keys ------------------------------------------------------

// A key a kernel can be registered for. Runtime keys name one slot of an op's
// kernel table: a functionality that is not per backend (BackendSelect), or
// a per-backend functionality on one backend (AutogradCPU = Autograd x CPU).
// Alias keys name several runtime keys at once, for registration only.
enum class DispatchKey : uint8_t {
  Undefined = 0,
  // Runtime keys, lowest priority first within each group.
  CPU,   // Dense x CPU
  CUDA,  // Dense x CUDA
  Sim,   // Dense x Sim
  BackendSelect,
  Python,
  ADInplaceOrView,
  AutogradCPU,   // Autograd x CPU
  AutogradCUDA,  // Autograd x CUDA
  AutogradSim,   // Autograd x Sim
  AutocastCPU,
  AutocastCUDA,
  AutocastSim,
  // Alias keys (registration only; see alias_runtime_keys()).
  Autograd,                   // every backend's Autograd key
  CompositeExplicitAutograd,  // every backend's Dense key: one kernel for all devices
  CompositeImplicitAutograd,  // Dense and Autograd keys: a decomposition into other ops
};
constexpr int kNumRuntimeKeys = 12;  // CPU .. AutocastSim: an op's kernel table has a slot each
constexpr int kNumDispatchKeys = 16;

const char* dispatch_key_name(DispatchKey k);  // "CPU", "AutogradCPU", ... as c10 names them
constexpr bool is_alias(DispatchKey k) { return k >= DispatchKey::Autograd; }
constexpr bool is_runtime(DispatchKey k) { return k != DispatchKey::Undefined && !is_alias(k); }
constexpr int runtime_slot(DispatchKey k) { return int(k) - 1; }  // index in an op's kernel table

Functionality functionality_of(DispatchKey k);  // CPU -> Dense, AutogradCPU -> AutogradFunctionality
BackendComponent backend_of(DispatchKey k);     // CPU, AutogradCPU -> CPU; Invalid for the rest
// The runtime key of a per-backend functionality on a backend (Dense x CUDA = CUDA).
DispatchKey per_backend_key(Functionality f, BackendComponent b);

// [SECTION] Key sets -----------------------------------------------------------

// Note [A key set is functionalities times backends]
// ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
// As in c10 (Note [DispatchKeySet Internal Representation]), a key set is a
// bitmask of two parts: the low bits are backends (CPU, CUDA, Sim), the high
// bits functionalities (Dense, BackendSelect, ..., AutocastSim). A runtime
// per-backend key sets one bit of each: AutogradCPU is the Autograd bit and
// the CPU bit. So a set holding CPU and AutogradCUDA holds the CPU and CUDA
// bits and the Dense and Autograd bits, and therefore also "contains" CUDA
// and AutogradCPU: the representation cannot tell them apart, which is fine
// because every tensor of one call is on one backend. In exchange, the
// highest key is two bit scans (the highest functionality, then the highest
// backend for a per-backend one), and a set fits in one word.
//
// Removing keys (operator-, remove) clears functionality bits only and keeps
// the backend bits: excluding every Autograd key must not forget that the
// call is on the CPU.
class DispatchKeySet {
 public:
  constexpr DispatchKeySet() = default;
  constexpr explicit DispatchKeySet(DispatchKey k) : repr_(bits_of(k)) {}
  constexpr static DispatchKeySet from_repr(uint32_t r) {
    DispatchKeySet s;
    s.repr_ = r;
    return s;
  }
  constexpr static DispatchKeySet backend(BackendComponent b) {
    return from_repr(b == BackendComponent::Invalid ? 0 : uint32_t(1) << (int(b) - 1));
  }
  constexpr static DispatchKeySet functionality(Functionality f) {
    return from_repr(f == Functionality::None ? 0 : uint32_t(1) << (kNumBackends + int(f) - 1));
  }

  constexpr uint32_t repr() const { return repr_; }
  constexpr bool empty() const { return repr_ == 0; }
  // Whether the set holds runtime key k (both of its bits, for a per-backend key).
  constexpr bool has(DispatchKey k) const {
    const uint32_t b = bits_of(k);
    return b != 0 && (repr_ & b) == b;
  }
  constexpr bool has_functionality(Functionality f) const { return (repr_ & functionality(f).repr_) != 0; }
  constexpr DispatchKeySet operator|(DispatchKeySet o) const { return from_repr(repr_ | o.repr_); }
  constexpr DispatchKeySet operator&(DispatchKeySet o) const { return from_repr(repr_ & o.repr_); }
  // Clears o's functionality bits, keeping every backend bit (see the note).
  constexpr DispatchKeySet operator-(DispatchKeySet o) const { return from_repr(repr_ & (kBackendMask | ~o.repr_)); }
  constexpr DispatchKeySet add(DispatchKey k) const { return *this | DispatchKeySet(k); }
  constexpr DispatchKeySet remove(DispatchKey k) const { return *this - DispatchKeySet(k); }
  constexpr bool operator==(const DispatchKeySet&) const = default;

  constexpr Functionality highest_functionality() const {
    const uint32_t f = repr_ >> kNumBackends;
    return f == 0 ? Functionality::None : Functionality(32 - std::countl_zero(f));
  }
  constexpr BackendComponent highest_backend() const {
    const uint32_t b = repr_ & kBackendMask;
    return b == 0 ? BackendComponent::Invalid : BackendComponent(32 - std::countl_zero(b));
  }
  // The key that runs: the highest functionality, on the highest backend when
  // it is per backend. Undefined when none (or a per-backend one without a backend).
  DispatchKey highest() const;
  // The keys of lower priority than k's functionality, with every backend
  // bit kept: what a kernel at k redispatches to.
  constexpr DispatchKeySet below(DispatchKey k) const {
    const Functionality f = functionality_of_constexpr(k);
    const uint32_t keep = f == Functionality::None ? 0 : (uint32_t(1) << (kNumBackends + int(f) - 1)) - 1;
    return from_repr(repr_ & (keep | kBackendMask));
  }

  // The runtime keys, lowest priority first, as c10 prints them:
  // "CPU, ADInplaceOrView, AutogradCPU, AutocastCPU".
  std::string str() const;
  const char* name() const;  // the same joined by '|', never freed: safe as a span argument

 private:
  static constexpr uint32_t kBackendMask = (uint32_t(1) << kNumBackends) - 1;
  static constexpr Functionality functionality_of_constexpr(DispatchKey k) {
    switch (k) {
      case DispatchKey::CPU:
      case DispatchKey::CUDA:
      case DispatchKey::Sim:
        return Functionality::Dense;
      case DispatchKey::BackendSelect:
        return Functionality::BackendSelect;
      case DispatchKey::Python:
        return Functionality::Python;
      case DispatchKey::ADInplaceOrView:
        return Functionality::ADInplaceOrView;
      case DispatchKey::AutogradCPU:
      case DispatchKey::AutogradCUDA:
      case DispatchKey::AutogradSim:
        return Functionality::AutogradFunctionality;
      case DispatchKey::AutocastCPU:
        return Functionality::AutocastCPU;
      case DispatchKey::AutocastCUDA:
        return Functionality::AutocastCUDA;
      case DispatchKey::AutocastSim:
        return Functionality::AutocastSim;
      default:
        return Functionality::None;
    }
  }
  static constexpr BackendComponent backend_of_constexpr(DispatchKey k) {
    switch (k) {
      case DispatchKey::CPU:
      case DispatchKey::AutogradCPU:
        return BackendComponent::CPU;
      case DispatchKey::CUDA:
      case DispatchKey::AutogradCUDA:
        return BackendComponent::CUDA;
      case DispatchKey::Sim:
      case DispatchKey::AutogradSim:
        return BackendComponent::Sim;
      default:
        return BackendComponent::Invalid;
    }
  }
  static constexpr uint32_t bits_of(DispatchKey k) {
    return functionality(functionality_of_constexpr(k)).repr_ | backend(backend_of_constexpr(k)).repr_;
  }
  uint32_t repr_ = 0;
};

// [SECTION] Named sets -----------------------------------------------------------

// Every backend's Autograd key (c10's autograd_dispatch_keyset).
constexpr DispatchKeySet kAutogradKeys = DispatchKeySet(DispatchKey::AutogradCPU) |
                                         DispatchKeySet(DispatchKey::AutogradCUDA) |
                                         DispatchKeySet(DispatchKey::AutogradSim);
constexpr DispatchKeySet kAutogradKeysWithADInplaceOrView =
    kAutogradKeys | DispatchKeySet(DispatchKey::ADInplaceOrView);
// Every Autocast key (c10's autocast_dispatch_keyset).
constexpr DispatchKeySet kAutocastKeys = DispatchKeySet(DispatchKey::AutocastCPU) |
                                         DispatchKeySet(DispatchKey::AutocastCUDA) |
                                         DispatchKeySet(DispatchKey::AutocastSim);
// What the thread includes and excludes before anyone changes it (c10's
// default_included_set and default_excluded_set).
// Every key above Python: what a mode's __torch_dispatch__ runs without (c10's
// after_Python_keyset, PythonFallbackKernel.cpp), so the ops it calls go
// straight to the keys beneath Python.
constexpr DispatchKeySet kAbovePythonKeys = kAutogradKeysWithADInplaceOrView | kAutocastKeys;
constexpr DispatchKeySet kDefaultIncluded =
    DispatchKeySet(DispatchKey::BackendSelect) | DispatchKeySet(DispatchKey::ADInplaceOrView);
constexpr DispatchKeySet kDefaultExcluded = kAutocastKeys;

// The keys a tensor on backend b carries (c10's TensorImpl constructor):
// b's Dense key, ADInplaceOrView and b's Autograd key, and b's Autocast key.
// A tensor made in inference mode has neither ADInplaceOrView nor Autograd.
DispatchKeySet tensor_keys(BackendComponent b, bool inference);

// The runtime keys an alias key stands for, or {k} for a runtime key.
DispatchKeySet alias_runtime_keys(DispatchKey k);

}  // namespace descent
