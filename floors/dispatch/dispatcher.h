// Floor 3, the dispatcher: from an op and its arguments to the kernel that runs.
//
// [SECTION] Kernels and the op entry
// [SECTION] The thread's include and exclude sets
// [SECTION] Calling an op
// [SECTION] Registration
//
// See Note [Dispatch key priority] (dispatch_key.h) and
// Note [Computing the key set] (dispatcher.cpp).
#pragma once

#include <array>
#include <type_traits>

#include "floors/dispatch/dispatch_key.h"
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
  const char* sample;         // a small valid call (Note [One op table])
  Schema schema;
  std::array<BoxedKernel, kNumDispatchKeys> kernels{};  // nullptr: none registered
  DispatchKeySet fallthrough;  // keys this op skips (see Note [Dispatch key priority])
};

// Every op's entry, indexed by Op. Built on first use from DESCENT_FORALL_OPS,
// with every floor's kernels registered.
const OpEntry& op_entry(Op op);
const std::array<OpEntry, kNumOps>& all_ops();
// Finds an op by its operator name ("aten::max.dim"); nullptr when unknown.
const OpEntry* find_op(std::string_view full_name);

// [SECTION] The thread's include and exclude sets ----------------------------

// Keys added to, or removed from, every call this thread makes.
struct LocalKeys {
  DispatchKeySet included;
  DispatchKeySet excluded;
};
LocalKeys& local_keys();
// `keys` with the thread's included keys added and its excluded ones removed.
DispatchKeySet apply_local_keys(DispatchKeySet keys);

// RAII: removes `k` from every call on this thread for the guard's lifetime.
class ExcludeKeyGuard {
 public:
  explicit ExcludeKeyGuard(DispatchKey k);
  ~ExcludeKeyGuard();
 private:
  DispatchKeySet saved_;
};
// RAII: adds `k` to every call on this thread for the guard's lifetime.
class IncludeKeyGuard {
 public:
  explicit IncludeKeyGuard(DispatchKey k);
  ~IncludeKeyGuard();
 private:
  DispatchKeySet saved_;
};

// [SECTION] Calling an op ------------------------------------------------------

// The key set of a call: the union of its tensors' keys, plus the thread's
// included keys, minus its excluded ones.
DispatchKeySet compute_key_set(const OpEntry& op, const Stack& stack);

// Fills in defaults for arguments missing at the end of the stack, computes
// the key set and runs the highest-priority kernel. Results are left on the stack.
void call_boxed(Op op, Stack& stack);
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

// Registers `k` as op's kernel for `key` (replacing any), or, with
// k == nullptr, removes it. Returns the previous kernel. Not thread-safe with
// concurrent calls: registration happens at start-up (and in tests).
BoxedKernel register_kernel(Op op, DispatchKey key, BoxedKernel k);
// Marks `key` as a fallthrough for `op` (the call skips it), or unmarks it.
void set_fallthrough(Op op, DispatchKey key, bool on);

// What the floors' registration functions write through while the table is
// being built (before any call can see it).
class Registrar {
 public:
  explicit Registrar(std::array<OpEntry, kNumOps>& table) : table_(table) {}
  void kernel(Op op, DispatchKey key, BoxedKernel k) { table_[int(op)].kernels[int(key)] = k; }
  void fallthrough(Op op, DispatchKey key, bool on);
 private:
  std::array<OpEntry, kNumOps>& table_;
};

// Each floor's registration function, called once when the table is built.
void register_backend_select_kernels(Registrar& r);  // dispatch/backend_select.cpp
void register_cpu_kernels(Registrar& r);             // kernels/register_cpu.cpp

}  // namespace descent
