// The unboxed calling convention: a typed call through the dispatcher.
//
// [SECTION] Signatures
// [SECTION] The typed call
//
// Note [Boxed and unboxed calls]
// ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
// PyTorch has two ways to call an operator, and so does descent.
//
// Boxed (call_boxed, dispatcher.h): the arguments travel as a Stack of
// IValues in schema order, and every kernel has the one signature
// void(const OpEntry&, DispatchKeySet, Stack&). One signature for all ops is
// what makes code that works for every op possible: a fallback (one kernel
// for all ops at a key: the fallthroughs today, autograd's or a tracer's
// later), the binding (which parses Python arguments against the schema at
// run time, so it has values, not C++ types), the verifier and the tests.
// The price: each argument is wrapped in a tagged IValue, pushed, and read
// back with a tag check.
//
// Unboxed (TypedOp<R(A...)>, below; PyTorch's at::add through
// TypedOperatorHandle::call): the arguments stay the C++ values they are.
// The key set is computed from the typed tensor arguments directly, and the
// kernel's slot is asked for an unboxed function of exactly this signature
// (R(DispatchKeySet, A...)), which is called with the arguments as they are:
// no stack, no tags. An op whose kernel at that key is boxed only (or a
// fallback) is still callable: the arguments are boxed then, and the result
// unboxed, which is what c10 does too. The trace marks which convention a
// dispatch used (convention=unboxed); the spans are otherwise the same.
//
// descent's binding stays boxed: it is schema-driven at run time, where
// PyTorch's is generated C++ that calls the typed at:: functions. That is a
// difference on purpose (one binding, read in an afternoon, for every op).
#pragma once

#include <tuple>
#include <utility>

#include "floors/dispatch/dispatcher.h"
#include "tracer/tracer.h"

namespace descent {

// [SECTION] Signatures --------------------------------------------------------

// One address per C++ signature: how a slot's unboxed function is matched to
// the type a caller asks for (an inline variable has one definition in the program).
template <typename Sig>
inline const char signature_tag = 0;
template <typename Sig>
const void* signature_id() {
  return &signature_tag<Sig>;
}

namespace detail {
inline DispatchKeySet keys_of_arg(const Tensor& t) { return t.defined() ? t.impl()->keys : DispatchKeySet(); }
inline DispatchKeySet keys_of_arg(const OptionalTensorList& l) {  // every tensor of a list, as compute_key_set
  DispatchKeySet ks;
  for (const Tensor& t : l) ks = ks | keys_of_arg(t);
  return ks;
}
inline DispatchKeySet keys_of_arg(const IValue& v) {  // a typed call whose arguments are IValues (tests)
  if (v.is_tensor()) return keys_of_arg(v.to_tensor());
  return v.is_tensor_list() ? keys_of_arg(v.to_tensor_list()) : DispatchKeySet();
}
template <typename T>
DispatchKeySet keys_of_arg(const T&) {
  return DispatchKeySet();
}
template <typename R>
R unbox_result(Stack& s) {
  if constexpr (std::is_same_v<R, Tensor>)
    return std::move(s[0].owned_tensor());
  else
    return s[0];  // an IValue
}
}  // namespace detail

// [SECTION] The typed call ------------------------------------------------------

template <typename Sig>
class TypedOp;

// A typed handle on an op of the table: TypedOp<Tensor(const Tensor&, const
// Tensor&, const Scalar&)>(Op::add).call(a, b, 1). The signature is the
// schema's, in order, with every argument given (no defaults filled).
template <typename R, typename... A>
class TypedOp<R(A...)> {
 public:
  using Unboxed = R (*)(DispatchKeySet, A...);
  explicit TypedOp(Op op) : e_(&op_entry(op)) {}

  // Computes the key set from the arguments and runs the highest kernel.
  R call(A... args) const {
    DispatchKeySet ks;
    ((ks = ks | detail::keys_of_arg(args)), ...);
    return run(apply_local_keys(ks), false, std::forward<A>(args)...);
  }
  // Runs the highest kernel of `keys` (a kernel passing the call down).
  R redispatch(DispatchKeySet keys, A... args) const { return run(keys, true, std::forward<A>(args)...); }

 private:
  R run(DispatchKeySet ks, bool redispatch, A... args) const {
    const OpEntry& e = *e_;
    trace::ScopedSpan span(trace::Floor::Dispatch, e.profiler_name);
    const DispatchKeySet live = ks & e.non_fallthrough[int(ks.highest_backend())];
    const DispatchKey key = DESCENT_DECIDES(span, live.highest());  // Note [Where a span decided]
    if (span.active()) {
      if (redispatch) span.arg("redispatch", true);
      span.arg("keyset", ks.name());
      span.arg("kernel", dispatch_key_name(key));
      const DispatchKeySet skipped = ks - live;
      if (skipped.highest_functionality() != Functionality::None) span.arg("fallthrough", skipped.name());
    }
    if (is_runtime(key)) {
      const int slot = runtime_slot(key);
      if (e.unboxed[slot] && e.unboxed_signature[slot] == signature_id<R(A...)>()) {
        span.arg("convention", "unboxed");
        return reinterpret_cast<Unboxed>(e.unboxed[slot])(live, std::forward<A>(args)...);
      }
    }
    span.arg("convention", "boxed");
    Stack s;
    (s.push(argument(std::forward<A>(args))), ...);
    run_boxed_kernel(e, ks, live, key, s);
    return detail::unbox_result<R>(s);
  }
  const OpEntry* e_;
};

}  // namespace descent
