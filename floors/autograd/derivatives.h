// Floor 4: one derivative formula per differentiable op of the table, and
// the node that runs it (PyTorch's derivatives.yaml and the Node classes
// generated from it). See Note [One derivative per op] in derivatives.cpp.
#pragma once

#include "floors/autograd/node.h"
#include "floors/dispatch/dispatcher.h"

namespace descent::autograd {

// What a formula reads besides the incoming gradient, by the input whose
// gradient needs it: a node saves only what the inputs that require grad
// need, as PyTorch's generated code does (so fewer saved tensors can trip
// the version check).
enum Saves : uint8_t {
  kSelf = 1,      // tensor input 0 (for an in-place op: a copy taken before it wrote)
  kOther = 2,     // tensor input 1
  kInput2 = 4,    // tensor input 2 (addmm's mat2)
  kResult = 8,    // the op's result
  kResult1 = 16,  // its second result (max.dim's indices)
};
// The tensor inputs a formula may read: the first three. An op may have more
// (cat's Tensor[], one input per element), whose gradients need none of them.
constexpr int kSavedInputs = 3;

struct FormulaNode;
struct BackwardContext;
using Formula = void (*)(BackwardContext& c);

// Whether a call's result can have a gradient, from its arguments (PyTorch's
// output_differentiability condition in derivatives.yaml); null: always.
using OutputDifferentiable = bool (*)(const Stack& args);

struct Derivative {
  Op op;
  const char* node;                 // PyTorch's node name: "AddBackward0"
  uint8_t saves_for[kSavedInputs];  // Saves bits, for the gradient of tensor input 0, 1 and 2
  Formula formula;
  OutputDifferentiable differentiable = nullptr;  // _to_copy's: only to a floating dtype
};

// The formula of `op`, or nullptr for an op without one (a factory, a
// comparison, a composite: Note [One derivative per op]).
const Derivative* derivative_of(Op op);

// The node an Autograd kernel records for an op with a formula.
struct FormulaNode final : Node {
  FormulaNode(const Derivative& d, const OpEntry& op);
  TensorList apply(TensorList&& grads) override;
  void release_saved_variables() override;
  std::string saved_names() const override;
  bool saved_value(std::string_view name, Tensor& out) override;

  const Derivative& derivative;
  const OpEntry& op;
  Stack args;                                // the forward's arguments, tensors and Tensor[]s left out (None)
  std::vector<GradMeta> tensor_inputs;       // shape, dtype and device of each tensor input, a Tensor[]'s one by one
  std::vector<const char*> input_names;      // each one's schema name ("self", "mat2", "tensors"), for saved_names
  SavedVariable inputs_saved[kSavedInputs];  // the tensor inputs the formula reads, by position
  SavedVariable result, result1;
  // Bit k: tensor input k was a column-major matrix (strides (1, rows)), as
  // mm's and addmm's gradients read it (PyTorch's mm_mat1_backward and
  // mm_mat2_backward take the input's sizes and strides).
  uint8_t column_major = 0;
};

// Sums `grad` down to `sizes` over the dimensions broadcasting added or
// stretched (at::sum_to): how a gradient returns to a broadcast input.
Tensor sum_to(const Tensor& grad, const DimVector& sizes);

}  // namespace descent::autograd
