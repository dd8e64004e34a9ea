// Floor 4: the Autograd kernels (PyTorch's generated VariableType), one for
// every op with a derivative, registered at the Autograd alias key.
//
// [SECTION] The check every op pays
// [SECTION] Recording a node
// [SECTION] The typed form
// [SECTION] Registration
//
// Note [What an Autograd kernel does]
// ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
// Every tensor carries its backend's Autograd key, so every call of a
// differentiable op comes here first (Note [Computing the key set]). The
// kernel asks two questions: is grad mode on, and does any tensor input
// require grad? When not, it redispatches below autograd at once: the trace
// shows a floor-4 span with graph=none and the reason, the price every op
// pays for autograd even when nothing is recorded. Otherwise it records:
//   1. for an in-place op, refuses what PyTorch refuses (a leaf that
//      requires grad, a view of one); a write through any other view is
//      recorded on the view's base (Note [In-place on a view]);
//   2. makes the node (FormulaNode, named as PyTorch names it), with one
//      edge per tensor input, each tensor of a Tensor[] one too (cat's): the
//      input's grad_fn, its AccumulateGrad, or None (Note [The graph
//      autograd records]);
//   3. saves the inputs the formula reads (Note [One derivative per op]);
//   4. runs the op below autograd (c10's AutoDispatchBelowADInplaceOrView:
//      the ops the kernels call inside record nothing), with the key set
//      below its own key, so ADInplaceOrView still runs for in-place and
//      view ops;
//   5. makes the result the node's output 0 (set_history), which is how the
//      result comes to require grad; an in-place op moves self's history
//      onto the new node (its old grad_fn is now the node's edge);
//   6. saves the result if the formula reads it.
#include <cstdio>

#include "floors/autograd/copy_slices.h"
#include "floors/autograd/derivatives.h"
#include "floors/autograd/variable_type.h"
#include "floors/dispatch/library.h"
#include "floors/dispatch/unboxed.h"
#include "tracer/tracer.h"

namespace descent::autograd {

namespace {

// [SECTION] The check every op pays ------------------------------------------------------

// What the call runs next: everything below the Autograd keys (c10's after_autograd_keyset).
DispatchKeySet below_autograd(DispatchKeySet ks) { return ks.below(DispatchKey::AutogradCPU); }

const char* no_graph_reason() {
  return grad_mode_enabled() ? "none: no input requires grad" : "none: grad mode is off";
}

void record(const OpEntry& op, DispatchKeySet ks, Stack& s, trace::ScopedSpan& span);

// Whether stack slot i is a Tensor[] of the op's schema: its tensors are
// inputs of the node, one edge each (cat's), where a Tensor?[]'s (index's
// indices) are arguments the formula reads.
bool is_tensor_inputs(const OpEntry& op, const Stack& s, int i) {
  return s[i].is_tensor_list() && i < int(op.schema.args.size()) &&
         op.schema.args[size_t(i)].type == ArgType::TensorList;
}

void autograd_kernel(const OpEntry& op, DispatchKeySet ks, Stack& s) {
  trace::ScopedSpan span(trace::Floor::Autograd, op.profiler_name);
  bool any = false;
  for (int i = 0; i < s.size(); ++i) {
    if (s[i].is_tensor()) any |= autograd::requires_grad(s[i].to_tensor());
    if (is_tensor_inputs(op, s, i))
      for (const Tensor& t : s[i].to_tensor_list()) any |= autograd::requires_grad(t);
  }
  // Note [A cast to an integer dtype records no graph] (derivatives_copies.cpp).
  const Derivative* d = any && grad_mode_enabled() ? derivative_of(op.id) : nullptr;
  const bool no_gradients = d && d->differentiable && !d->differentiable(s);
  if (DESCENT_DECIDES(span, !any || !grad_mode_enabled() || no_gradients)) {  // Note [Where a span decided]
    span.arg("graph", no_gradients ? "none: the result's dtype has no gradients" : no_graph_reason());
    AutoDispatchBelowADInplaceOrView guard;
    redispatch_boxed(op, below_autograd(ks), s);
    return;
  }
  record(op, ks, s, span);
}

// A view op's Autograd kernel: the same, then the view's creation is kept
// (Note [A view made in no_grad mode], copy_slices.cpp).
void view_autograd_kernel(const OpEntry& op, DispatchKeySet ks, Stack& s) {
  const Tensor self = s[0].to_tensor();  // owned: the stack holds the view once the op has run
  autograd_kernel(op, ks, s);
  if (s.size() > 0 && s[0].is_tensor()) note_view_creation(self, s[0].to_tensor());
}

// [SECTION] Recording a node -----------------------------------------------------------

// Refuses what PyTorch refuses; returns whether the write goes through a
// view, and so must be recorded on the view's base (Note [In-place on a view]).
bool check_inplace(const Tensor& self) {
  if (self.is_view()) {
    check_view_write(self, false);  // Note [A view made in no_grad mode] (copy_slices.cpp)
    const Tensor base(self.impl()->base);
    DESCENT_CHECK(!(is_leaf(base) && base.requires_grad()), Error,
                  "a view of a leaf Variable that requires grad is being used in an in-place operation.");
    return true;
  }
  DESCENT_CHECK(!(is_leaf(self) && self.requires_grad()), Error,
                "a leaf Variable that requires grad is being used in an in-place operation.");
  return false;
}

std::string edge_names(const Node& n) {
  std::string s;
  for (const Edge& e : n.next_edges) s += (s.empty() ? "" : ", ") + std::string(e.valid() ? e.fn->name : "None");
  return s;
}

// The shapes of the node's tensor inputs, one per edge: "[2, 3], [3]".
std::string input_shapes(const FormulaNode& n) {
  std::string s;
  for (const GradMeta& m : n.tensor_inputs) s += (s.empty() ? "" : ", ") + m.sizes.str();
  return s;
}

// Per edge, the data_ptr() of the leaf an AccumulateGrad edge leads to, "-"
// for any other edge: "0x5f1e2a40, -". See Note [Naming the leaves].
std::string edge_data_ptrs(const Node& n) {
  std::string s;
  for (const Edge& e : n.next_edges) {
    s += s.empty() ? "" : ", ";
    if (e.valid() && e.fn->is_accumulate_grad()) {
      char buf[32];
      const void* p = Tensor(static_cast<const AccumulateGrad&>(*e.fn).variable).data_ptr();
      std::snprintf(buf, sizeof buf, "0x%llx", static_cast<unsigned long long>(reinterpret_cast<uintptr_t>(p)));
      s += buf;
    } else {
      s += "-";
    }
  }
  return s;
}

void record(const OpEntry& op, DispatchKeySet ks, Stack& s, trace::ScopedSpan& span) {
  const Derivative* d = derivative_of(op.id);
  const bool inplace = op.schema.is_mutable();
  const bool through_view = inplace && check_inplace(s[0].to_tensor());
  Tensor base;
  Edge base_edge;
  if (through_view) {  // the base's history before the write (Note [In-place on a view])
    base = Tensor(s[0].to_tensor().impl()->base);
    DESCENT_CHECK(base.is_contiguous() && base.offset() == 0, NotImplementedError, op.python_name,
                  "(): an in-place op through a view of a tensor that is not laid out from its memory's start "
                  "(Note [In-place on a view])");  // refused before anything is written
    base_edge = gradient_edge(base);
  }
  auto* fn = new FormulaNode(*d, op);
  const Ref<Node> node(fn);
  fn->next_edges.reserve(2);
  // The edges, the inputs' shapes, and the arguments the formula reads.
  Tensor inputs[kSavedInputs];
  auto add_input = [&](const Tensor& t, const char* name) {
    const size_t k = fn->tensor_inputs.size();
    if (k < size_t(kSavedInputs)) inputs[k] = t;
    fn->tensor_inputs.push_back(GradMeta{t.sizes(), t.dtype(), t.device()});
    if (k < 8 && t.dim() == 2 && t.strides()[0] == 1 && t.strides()[1] == t.sizes()[0])
      fn->column_major = uint8_t(fn->column_major | (1u << k));
    fn->input_names.push_back(name);
    fn->next_edges.push_back(gradient_edge(t));
  };
  for (int i = 0; i < s.size(); ++i) {
    const char* name = op.schema.args[size_t(i)].name.c_str();  // lives as long as the op table
    if (s[i].is_tensor()) {
      add_input(s[i].to_tensor(), name);
    } else if (is_tensor_inputs(op, s, i)) {
      for (const Tensor& t : s[i].to_tensor_list()) add_input(t, name);
    } else {
      fn->args.push(s[i]);
      continue;
    }
    fn->args.push(IValue());
  }
  uint8_t saves = 0;
  for (int k = 0; k < kSavedInputs && k < int(fn->tensor_inputs.size()); ++k)
    if (fn->next_edges[k].valid()) saves |= d->saves_for[k];
  if (saves & kSelf) fn->inputs_saved[0] = SavedVariable(inplace ? call(Op::clone, inputs[0]) : inputs[0], false);
  if (saves & kOther) fn->inputs_saved[1] = SavedVariable(inputs[1], false);
  if (saves & kInput2) fn->inputs_saved[2] = SavedVariable(inputs[2], false);
  {
    AutoDispatchBelowADInplaceOrView guard;
    redispatch_boxed(op, below_autograd(ks), s);
  }
  const Tensor& out = s[0].to_tensor();
  if (through_view) {
    fn->inputs = {GradMeta{out.sizes(), out.dtype(), out.device()}};
    rebase_history_through_view(out, base, base_edge, node);
  } else {
    set_history(out, node, 0);  // in place: `out` is self, whose history moves onto this node
  }
  if (saves & kResult) fn->result = SavedVariable(out, true);
  if (saves & kResult1) fn->result1 = SavedVariable(s[1].to_tensor(), false);
  if (span.active()) {
    span.arg("graph", "recorded");
    span.arg("node", fn->name);
    span.arg("node_id", int64_t(fn->id));
    span.arg("edges", trace::intern(edge_names(*fn)));
    // The ids of the nodes the edges lead to (-1 for None), so that a reader
    // of the trace (the app's graph panel) can draw the graph.
    static constexpr const char* kEdgeKeys[] = {"edge0_id", "edge1_id", "edge2_id"};
    for (size_t k = 0; k < fn->next_edges.size() && k < 3; ++k)
      span.arg(kEdgeKeys[k], fn->next_edges[k].valid() ? int64_t(fn->next_edges[k].fn->id) : int64_t{-1});
    const std::string saved = fn->saved_names();
    span.arg("saved", trace::intern(saved.empty() ? "nothing" : saved));
    // For the graph panel: the inputs' shapes (the profiler's input_shapes)
    // and which leaves the edges reach (Note [Naming the leaves]).
    span.arg("input_shapes", trace::intern(input_shapes(*fn)));
    span.arg("edge_data_ptrs", trace::intern(edge_data_ptrs(*fn)));
  }
}

// [SECTION] The typed form ---------------------------------------------------------------

inline bool requires_grad_of(const Tensor& t) { return autograd::requires_grad(t); }
template <typename T>
bool requires_grad_of(const T&) {
  return false;
}

// The same kernel for a typed call (Note [Boxed and unboxed calls]): the
// check and the redispatch stay unboxed; recording boxes the arguments.
template <Op kOp, typename Sig>
struct TypedAutograd;
template <Op kOp, typename... A>
struct TypedAutograd<kOp, Tensor(A...)> {
  static Tensor call(DispatchKeySet ks, A... args) {
    if (const char* at = DESCENT_HERE; !(requires_grad_of(args) || ...) || !grad_mode_enabled()) {
      trace::ScopedSpan span(trace::Floor::Autograd, op_entry(kOp).profiler_name);
      span.arg(trace::kDecidedAt, at);  // Note [Where a span decided]
      span.arg("graph", no_graph_reason());
      AutoDispatchBelowADInplaceOrView guard;
      static const TypedOp<Tensor(A...)> below(kOp);
      return below.redispatch(below_autograd(ks), args...);
    }
    Stack s;
    (s.push(argument(args)), ...);
    autograd_kernel(op_entry(kOp), ks, s);
    return std::move(s[0].owned_tensor());
  }
};
using BinaryAlphaSig = Tensor(const Tensor&, const Tensor&, const Scalar&);
using BinarySig = Tensor(const Tensor&, const Tensor&);

Kernel autograd_kernel_for(Op op) {
  switch (op) {
    case Op::add:
      return Kernel::both(autograd_kernel, &TypedAutograd<Op::add, BinaryAlphaSig>::call,
                          signature_id<BinaryAlphaSig>());
    case Op::sub:
      return Kernel::both(autograd_kernel, &TypedAutograd<Op::sub, BinaryAlphaSig>::call,
                          signature_id<BinaryAlphaSig>());
    case Op::mul:
      return Kernel::both(autograd_kernel, &TypedAutograd<Op::mul, BinarySig>::call, signature_id<BinarySig>());
    case Op::div:
      return Kernel::both(autograd_kernel, &TypedAutograd<Op::div, BinarySig>::call, signature_id<BinarySig>());
    default:
      return Kernel(autograd_kernel);
  }
}

// A comparison's Autograd kernel: its result is bool, so there is nothing to
// record whatever its inputs, but it still runs below autograd with the
// guard, so that the ops its kernel calls (the `to` of a wrapped number) do
// not pass through Autograd again. PyTorch's generated VariableType kernels
// for eq, lt, ... do the same.
void not_differentiable_kernel(const OpEntry& op, DispatchKeySet ks, Stack& s) {
  trace::ScopedSpan span(trace::Floor::Autograd, op.profiler_name);
  span.arg("graph", !grad_mode_enabled()      ? "none: grad mode is off"
                    : op.kind == OpKind::Read ? "none: not differentiable (a Scalar result)"
                    : op.kind == OpKind::Collective
                        ? "none: a collective has no derivative (PyTorch's autograd fallback runs it below autograd)"
                        : "none: not differentiable (a bool result)");
  AutoDispatchBelowADInplaceOrView guard;
  redispatch_boxed(op, below_autograd(ks), s);
}

bool is_composite(const OpEntry& e) { return std::string_view(e.dispatch).find("Composite") != std::string_view::npos; }

}  // namespace

}  // namespace descent::autograd

namespace descent {

// [SECTION] Registration -------------------------------------------------------------------

// Every op of the table gets an Autograd kernel if it has a derivative, and
// the check below makes "has a derivative" match Note [One derivative per
// op]: a factory, a comparison or a composite has none; every other op has
// one. An op added to the table without its formula fails here, at start-up.
// A comparison, a read of an element (item's _local_scalar_dense, whose
// result is a Scalar) or a collective (Note [Collectives are c10d ops])
// gets a kernel that records nothing (not_differentiable_kernel).
void register_autograd_kernels() {
  Library m(Library::IMPL, "aten", DispatchKey::Autograd);
  for (const OpEntry& e : ops_for_registration()) {
    const bool exempt = e.kind == OpKind::Factory || e.kind == OpKind::Comparison || e.kind == OpKind::Read ||
                        e.kind == OpKind::Collective || autograd::is_composite(e);
    const autograd::Derivative* d = autograd::derivative_of(e.id);
    DESCENT_CHECK(exempt || d != nullptr, Error, "autograd: '", e.name,
                  "' has no derivative formula (floors/autograd/derivatives_*.cpp); add one to its family's file, as "
                  "derivatives.yaml has one "
                  "for every differentiable op");
    DESCENT_CHECK(!exempt || d == nullptr, Error, "autograd: '", e.name, "' is a ",
                  autograd::is_composite(e) ? "composite" : "factory, comparison, read or collective",
                  " and must not have a derivative formula (Note [One derivative per op])");
    if (d && e.schema.is_view())
      m.impl(e.id, Kernel(autograd::view_autograd_kernel));
    else if (d)
      m.impl(e.id, autograd::autograd_kernel_for(e.id));
    else if (e.kind == OpKind::Comparison || e.kind == OpKind::Collective ||
             (e.kind == OpKind::Read && !autograd::is_composite(e)))
      m.impl(e.id, Kernel(autograd::not_differentiable_kernel));
  }
}

}  // namespace descent
