// Floor 3, the dispatcher: from an op and its arguments to the kernel that runs.
//
// [SECTION] Kernels and the op entry
// [SECTION] The thread's include and exclude sets
// [SECTION] Calling an op
// [SECTION] Registration
//
// See Note [Dispatch key priority] (floors/core/dispatch_key.h) and
// Note [Computing the key set] (dispatcher.cpp).
#pragma once

#include <array>
#include <type_traits>

#include "floors/core/grad_mode.h"
#include "floors/core/dispatch_key.h"
#include "floors/dispatch/ivalue.h"
#include "floors/dispatch/ops.h"
#include "floors/dispatch/schema.h"

namespace descent {

// [SECTION] Kernels and the op entry -----------------------------------------

struct OpEntry;
// A boxed kernel: reads its arguments from the stack (schema order, defaults
// filled in) and leaves its results there. `keys` is the key set it was
// dispatched with, for redispatching below itself.
using BoxedKernel = void (*)(const OpEntry& op, DispatchKeySet keys, Stack& stack);

struct OpEntry {
  Op id;
  const char* name;           // "aten::add.Tensor": the operator name, what errors quote (interned)
  const char* profiler_name;  // "aten::add": the dispatch and kernel spans' name, as PyTorch's profiler shows it
  const char* python_name;    // "add": the Python function, shared by overloads; kernels' error prefixes
  OpKind kind;
  Exactness exactness;
  Domain domain;
  PythonModule python_module = PythonModule::Torch;  // descent._C, or descent._C._nn (Note [One op table])
  const char* sample;                                // a small valid call (Note [One op table])
  const char* dispatch;  // the keys declared to have kernels: "CPU", "CompositeImplicitAutograd" (Note [One op table])
  Schema schema;
  // What a call uses, by runtime_slot(key): the op's own kernel at the key,
  // else the op's own fallthrough mark, else the key's fallback (refresh()).
  std::array<BoxedKernel, kNumRuntimeKeys> kernels{};  // nullptr: none
  std::array<bool, kNumRuntimeKeys> fallthrough{};     // the call skips this key
  // What was registered for this op itself, by runtime_slot(key).
  std::array<BoxedKernel, kNumRuntimeKeys> own_kernels{};
  std::array<int8_t, kNumRuntimeKeys> own_fallthrough{};  // 0: not marked, 1: a fallthrough, -1: marked not one
  // The unboxed (typed) form of the op's own kernel, where it has one, and
  // the id of its C++ signature (Note [Boxed and unboxed calls], unboxed.h).
  std::array<void*, kNumRuntimeKeys> own_unboxed{};
  std::array<const void*, kNumRuntimeKeys> own_unboxed_signature{};
  std::array<void*, kNumRuntimeKeys> unboxed{};  // what a typed call uses: own_unboxed where the own kernel runs
  std::array<const void*, kNumRuntimeKeys> unboxed_signature{};
  // Per backend (index: BackendComponent, 0 for a call with none): the keys
  // that are not fallthroughs, with every backend bit set. A call's key set is
  // masked with its backend's entry before the highest key is taken (c10's
  // nonFallthroughKeysPerBackend_). Recomputed whenever `fallthrough` changes.
  std::array<DispatchKeySet, kNumBackends + 1> non_fallthrough{};

  bool is_fallthrough(DispatchKey k) const { return is_runtime(k) && fallthrough[runtime_slot(k)]; }
  BoxedKernel kernel(DispatchKey k) const { return is_runtime(k) ? kernels[runtime_slot(k)] : nullptr; }
  void refresh();  // recomputes kernels, fallthrough and non_fallthrough from the own_ and fallback tables
};

// Every op's entry, indexed by Op. Built on first use from DESCENT_FORALL_OPS;
// the kernels are there once the floors have registered them
// (register_floors, floors/registration.h).
const OpEntry& op_entry(Op op);
const std::array<OpEntry, kNumOps>& all_ops();
// Finds an op by its operator name ("aten::max.dim"); nullptr when unknown.
const OpEntry* find_op(std::string_view full_name);

// [SECTION] The thread's include and exclude sets ----------------------------

// Keys added to, or removed from, every call this thread makes. A thread
// starts as c10's does: BackendSelect and ADInplaceOrView included, every
// Autocast key excluded.
struct LocalKeys {
  DispatchKeySet included = kDefaultIncluded;
  DispatchKeySet excluded = kDefaultExcluded;
};
LocalKeys& local_keys();
// `keys` with the thread's included keys added and its excluded ones removed.
DispatchKeySet apply_local_keys(DispatchKeySet keys);

// RAII: removes `keys` from every call on this thread for the guard's
// lifetime (c10's ExcludeDispatchKeyGuard).
class ExcludeKeyGuard {
 public:
  explicit ExcludeKeyGuard(DispatchKeySet keys);
  explicit ExcludeKeyGuard(DispatchKey k) : ExcludeKeyGuard(DispatchKeySet(k)) {}
  ~ExcludeKeyGuard();
  ExcludeKeyGuard(const ExcludeKeyGuard&) = delete;
  ExcludeKeyGuard& operator=(const ExcludeKeyGuard&) = delete;

 private:
  DispatchKeySet saved_;
};
// RAII: adds `keys` to every call on this thread for the guard's lifetime.
class IncludeKeyGuard {
 public:
  explicit IncludeKeyGuard(DispatchKeySet keys);
  explicit IncludeKeyGuard(DispatchKey k) : IncludeKeyGuard(DispatchKeySet(k)) {}
  ~IncludeKeyGuard();
  IncludeKeyGuard(const IncludeKeyGuard&) = delete;
  IncludeKeyGuard& operator=(const IncludeKeyGuard&) = delete;

 private:
  DispatchKeySet saved_;
};
// RAII: calls below autograd (c10's at::AutoDispatchBelowAutograd): every
// Autograd key excluded. What an Autograd kernel uses to run the op beneath it.
struct AutoDispatchBelowAutograd : ExcludeKeyGuard {
  AutoDispatchBelowAutograd() : ExcludeKeyGuard(kAutogradKeys) {}
};
// RAII: below autograd and ADInplaceOrView (c10's AutoDispatchBelowADInplaceOrView).
struct AutoDispatchBelowADInplaceOrView : ExcludeKeyGuard {
  AutoDispatchBelowADInplaceOrView() : ExcludeKeyGuard(kAutogradKeysWithADInplaceOrView) {}
};
// RAII: inference mode (c10::InferenceMode), Note [Grad mode is a flag, not a
// key]: grad mode off, inference mode on, every Autograd key excluded, and
// ADInplaceOrView no longer included (a tensor made outside still carries it,
// so its in-place ops are still counted); tensors made inside carry neither
// key. InferenceMode(false) undoes it inside one.
// What InferenceMode's constructor does, without the restoring.
void set_inference_mode(bool enabled);
class InferenceMode {
 public:
  explicit InferenceMode(bool enabled = true);
  ~InferenceMode();
  InferenceMode(const InferenceMode&) = delete;
  InferenceMode& operator=(const InferenceMode&) = delete;

 private:
  AutogradState saved_state_;
  LocalKeys saved_keys_;
};

// [SECTION] Calling an op ------------------------------------------------------

// The key set of a call: the union of its tensors' keys, plus the thread's
// included keys, minus its excluded ones.
DispatchKeySet compute_key_set(const OpEntry& op, const Stack& stack);

// Fills in defaults for arguments missing at the end of the stack, computes
// the key set and runs the highest-priority kernel. Results are left on the stack.
void call_boxed(Op op, Stack& stack);
void call_boxed(const OpEntry& op, Stack& stack);  // the same, for an operator defined beyond the table
// Runs the boxed kernel of `key` on the stack (defaults filled first),
// raising NotImplementedError when there is none: what call_boxed and the
// typed call's boxing fall back to. `ks` is the call's key set, for the message.
void run_boxed_kernel(const OpEntry& e, DispatchKeySet ks, DispatchKeySet live, DispatchKey key, Stack& stack);
// Runs the highest-priority kernel of `keys` (after removing the op's
// fallthrough keys). Kernels call this to pass a call down.
void redispatch_boxed(const OpEntry& op, DispatchKeySet keys, Stack& stack);

// An argument of call() on the stack: a Tensor lvalue is borrowed (it outlives
// the call, Note [Borrowed arguments]); everything else is moved or copied.
template <typename A>
IValue argument(A&& a) {
  if constexpr (std::is_lvalue_reference_v<A> && std::is_same_v<std::remove_cvref_t<A>, Tensor>)
    return IValue::borrow(a);
  else
    return IValue(std::forward<A>(a));
}

// Convenience for C++ callers: call(Op::add, a, b) -> the single Tensor result.
template <typename... Args>
Tensor call(Op op, Args&&... args) {
  Stack s;
  (s.push(argument(std::forward<Args>(args))), ...);
  call_boxed(op, s);
  return std::move(s[0].owned_tensor());
}

// [SECTION] Registration ---------------------------------------------------------

// For tests: registers `k` as op's own kernel for runtime key `key`
// (replacing any), or, with k == nullptr, removes it. Returns the previous
// one. Floors register through a Library (library.h).
BoxedKernel register_kernel(Op op, DispatchKey key, BoxedKernel k);
// For tests: marks `key` (a runtime key, or an alias for all its keys) as a
// fallthrough for `op` (the call skips it), or as not one.
void set_fallthrough(Op op, DispatchKey key, bool on);
// For tests: removes set_fallthrough's mark: the op's kernel or the key's fallback decides again.
void clear_fallthrough(Op op, DispatchKey key);

// What a Library (library.h) registers: a boxed kernel, or a fallthrough.
struct Kernel {
  BoxedKernel fn = nullptr;
  bool fallthrough = false;
  void* unboxed = nullptr;          // the same kernel, typed (optional)
  const void* signature = nullptr;  // signature_id of `unboxed` (unboxed.h)
  Kernel() = default;
  Kernel(BoxedKernel f) : fn(f) {}  // NOLINT(google-explicit-constructor): m.impl(Op::neg, neg_kernel)
  static Kernel Fallthrough() {
    Kernel k(nullptr);
    k.fallthrough = true;
    return k;
  }
  // A kernel in both conventions: `boxed` for boxed calls and fallbacks,
  // `typed` for typed calls of exactly its signature (unboxed.h).
  template <typename R, typename... A>
  static Kernel both(BoxedKernel boxed, R (*typed)(DispatchKeySet, A...), const void* signature) {
    Kernel k(boxed);
    k.unboxed = reinterpret_cast<void*>(typed);
    k.signature = signature;
    return k;
  }
};
// The registration primitives a Library calls, under one lock: an op's own
// kernel at a key (an alias key: at each of its runtime keys), and a key's
// fallback for every op. `where` names the registering library in errors.
void register_op_kernel(OpEntry& op, DispatchKey key, Kernel k, const std::string& where);
void register_fallback(DispatchKey key, Kernel k, const std::string& where);
OpEntry& mutable_op_entry(Op op);
std::array<OpEntry, kNumOps>& ops_for_registration();  // the table, writable, for a floor's registration
// What an op holds of its own at one runtime key: its kernel in both
// conventions and its fallthrough mark (0 none, 1 a fallthrough, -1 marked not one).
struct KernelSlot {
  BoxedKernel boxed = nullptr;
  int8_t fallthrough = 0;
  void* unboxed = nullptr;
  const void* signature = nullptr;
};
// Puts `k` in place of what `op` holds at the runtime key `key` and returns
// what was there, under the registration lock. descent.library overrides a
// built-in kernel this way, as torch.library does with a warning, and puts
// the old one back when its Library goes (Note [Python kernels],
// floors/binding/library_object.cpp). ValueError for a key that is not a runtime key.
KernelSlot swap_op_kernel(OpEntry& op, DispatchKey key, KernelSlot k);
// The same for a runtime key's fallback (every op without a kernel of its
// own there runs it): descent.library's Library("_", "IMPL").fallback.
Kernel swap_fallback(DispatchKey key, Kernel k);

class Library;  // library.h
// Floor 3's own registration: the fallbacks and the BackendSelect and
// ADInplaceOrView kernels. The floors above register theirs themselves, and
// register_floors (floors/registration.h) runs them all once, in order (Note
// [Registering the floors]): the dispatcher knows no floor above it.
void register_dispatch_kernels();
void register_fallbacks();                          // dispatcher.cpp: the keys every op skips
void register_backend_select_kernels(Library& m);   // backend_select.cpp
void register_inplace_or_view_kernels(Library& m);  // inplace_or_view.cpp

}  // namespace descent
