// Floor 4: the derivative formulas, one per differentiable op of the table:
// the table joined from its families, and the node that runs a formula.
//
// The formulas live by family, each file its formulas and then its rows:
// derivatives_pointwise.cpp (arithmetic, unary functions, clamp, where and
// the masks), derivatives_reductions.cpp (sum, mean, max, mse_loss, sort),
// derivatives_products.cpp (mm, addmm, bmm, dot, mv), derivatives_views.cpp
// (views, unfold, as_strided), derivatives_copies.cpp (clone, _to_copy, cat,
// index, index_put_ and the in-place writes) and derivatives_nn.cpp
// (torch.nn's ops); what they share is formulas.h. Adding a derivative is
// its formula and its row in its family's file.
//
// [SECTION] The ops without a gradient
// [SECTION] The table
// [SECTION] The node that runs a formula
//
// Note [One derivative per op]
// ~~~~~~~~~~~~~~~~~~~~~~~~~~~~
// PyTorch keeps its derivatives in derivatives.yaml, beside
// native_functions.yaml: for each op, the node's name and one expression per
// differentiable input. descent keeps them in this floor, beside the op
// table (floors/dispatch/ops.h), by family, as C++ functions: each reads
// the incoming gradient `g` and what the node saved, and sets the gradient
// of each tensor input that needs one. Every formula is written with ops of
// the table, called through the dispatcher, so during backward the trace
// shows a node's kernels beneath it, and with create_graph=True the formulas
// are themselves recorded: second derivatives come for free wherever a
// formula only calls differentiable ops.
// Three kinds of op have no row, and the registration check
// (variable_type.cpp) insists on exactly these:
//   - factories, whose results never require grad (their Autograd keys
//     fall through), and comparisons, whose bool results cannot (their
//     Autograd kernel records nothing and runs the op below autograd, as
//     PyTorch's generated kernels for eq, lt, ... do);
//   - CompositeImplicitAutograd ops (matmul, reshape, contiguous, to,
//     flatten, linear, lift_fresh), whose gradient comes from the ops they decompose
//     into (Note [Composite ops decompose]).
// A node has one input per tensor argument, and one per tensor of a
// Tensor[] (cat's), in order; a formula may read the first three of them
// (addmm's self, mat1 and mat2), each saved only where an input that needs
// a gradient reads it, as PyTorch's generated code saves them.
// A gradient leaves a formula in the shape of the op's result broadcast as
// the op broadcast it: the engine sums it down to the input's own shape and
// casts it to the input's dtype (Note [Validating a node's outputs],
// engine.cpp), as PyTorch's validate_outputs does, so the binary formulas
// read like the maths (d(a*b)/da = g*b).
#include "floors/autograd/derivatives.h"

#include <array>

#include "floors/autograd/formulas.h"

namespace descent::autograd {

Tensor sum_to(const Tensor& grad, const DimVector& sizes) {
  if (grad.sizes() == sizes) return grad;
  const int lead = grad.dim() - sizes.size();
  DimVector dims;
  for (int d = 0; d < grad.dim(); ++d)
    if (d < lead || (sizes[d - lead] == 1 && grad.sizes()[d] != 1)) dims.push_back(d);
  Tensor r = dims.empty() ? grad : call(Op::sum_dim, grad, dims, true);
  return r.sizes() == sizes ? r : call(Op::view, r, sizes);
}

// [SECTION] The ops without a gradient ------------------------------------------------

namespace {

// Note [Ops whose results have no gradient]
// ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
// argmax, argmin, all, any and multinomial give int64 or bool results, and floor_divide
// is in gen_variable_type.py's DONT_REQUIRE_DERIVATIVE: aten records no
// node for them, whatever their inputs (x // 2 of an x that requires grad
// does not). They sit in the table below with a condition that is never
// true, so their Autograd kernel runs them below autograd and records
// nothing (the span says "none: the result's dtype has no gradients"); the
// node name is never shown.
bool never_differentiable(const Stack&) { return false; }
void no_backward(BackwardContext&) {}

constexpr Derivative kNoGradient[] = {
    {Op::multinomial, "(no gradient)", {kNone, kNone}, no_backward, never_differentiable},
    {Op::floor_divide, "(no gradient)", {kNone, kNone}, no_backward, never_differentiable},
    {Op::argmax, "(no gradient)", {kNone, kNone}, no_backward, never_differentiable},
    {Op::argmin, "(no gradient)", {kNone, kNone}, no_backward, never_differentiable},
    {Op::all, "(no gradient)", {kNone, kNone}, no_backward, never_differentiable},
    {Op::all_dim, "(no gradient)", {kNone, kNone}, no_backward, never_differentiable},
    {Op::any, "(no gradient)", {kNone, kNone}, no_backward, never_differentiable},
    {Op::any_dim, "(no gradient)", {kNone, kNone}, no_backward, never_differentiable},
};
}  // namespace

// [SECTION] The table ------------------------------------------------------------------

// The families' rows joined, indexed by op; an op has at most one row.
const Derivative* derivative_of(Op op) {
  static const auto by_op = [] {
    std::array<const Derivative*, kNumOps> t{};
    for (std::span<const Derivative> family :
         {pointwise_derivatives(), reduction_derivatives(), product_derivatives(), view_derivatives(),
          copy_derivatives(), nn_derivatives(), std::span<const Derivative>(kNoGradient)})
      for (const Derivative& d : family) {
        DESCENT_CHECK(t[int(d.op)] == nullptr, Error, "autograd: two derivative rows for ", d.node,
                      " (Note [One derivative per op])");
        t[int(d.op)] = &d;
      }
    return t;
  }();
  return by_op[int(op)];
}

// [SECTION] The node that runs a formula ---------------------------------------------

FormulaNode::FormulaNode(const Derivative& d, const OpEntry& e) : Node(d.node), derivative(d), op(e) {}

TensorList FormulaNode::apply(TensorList&& grads) {
  BackwardContext c{*this, grads.empty() ? Tensor() : std::move(grads[0]), TensorList(next_edges.size())};
  if (!c.g.defined())
    c.g = zeros(inputs[0].sizes, inputs[0].dtype, inputs[0].device);  // no gradient reached this result
  derivative.formula(c);
  TensorList out(next_edges.size());
  for (size_t k = 0; k < out.size(); ++k)
    if (next_edges[k].valid()) out[k] = std::move(c.out[k]);
  return out;
}

void FormulaNode::release_saved_variables() {
  for (SavedVariable& v : inputs_saved)
    if (v.defined()) v.reset();
  for (SavedVariable* v : {&result, &result1})
    if (v->defined()) v->reset();
}

// The saved values by the names the schema gives them: "self, other" for
// mul, "mat1, mat2" for addmm (PyTorch's _saved_mat1, _saved_mat2).
std::string FormulaNode::saved_names() const {
  std::string s;
  auto add = [&](const SavedVariable& v, const char* n) {
    if (v.defined()) s += (s.empty() ? "" : ", ") + std::string(n);
  };
  for (int k = 0; k < kSavedInputs && k < int(input_names.size()); ++k) add(inputs_saved[k], input_names[size_t(k)]);
  add(result, "result");
  add(result1, "indices");
  return s;
}

// A value the formula may read but this node did not save (the input's
// gradient was not needed: `x * w` with only x requiring grad saves w, not
// x) reads as None, as PyTorch's generated attributes do; a name the
// formula never reads is no attribute.
bool FormulaNode::saved_value(std::string_view name, Tensor& out) {
  uint8_t may = 0;
  for (uint8_t bits : derivative.saves_for) may |= bits;
  SavedVariable* v = nullptr;
  uint8_t bit = 0;
  if (name == "result") v = &result, bit = kResult;
  if (name == "indices") v = &result1, bit = kResult1;
  for (int k = 0; !v && k < kSavedInputs && k < int(input_names.size()); ++k)
    if (name == input_names[size_t(k)]) v = &inputs_saved[k], bit = uint8_t(1u << k);
  if (!v || !(may & bit)) return false;
  out = v->defined() ? v->unpack(this) : Tensor();
  return true;
}

}  // namespace descent::autograd
