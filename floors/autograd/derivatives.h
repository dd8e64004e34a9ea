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
  kSelf = 1,     // the first tensor input (for an in-place op: a copy taken before it wrote)
  kOther = 2,    // the second tensor input
  kResult = 4,   // the op's result
  kResult1 = 8,  // its second result (max.dim's indices)
};

struct FormulaNode;
struct BackwardContext;
using Formula = void (*)(BackwardContext& c);

struct Derivative {
  Op op;
  const char* node;       // PyTorch's node name: "AddBackward0"
  uint8_t saves_for[2];   // Saves bits, for the gradient of tensor input 0 and of input 1
  Formula formula;
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

  const Derivative& derivative;
  const OpEntry& op;
  Stack args;                // the forward's arguments, tensors left out (None)
  GradMeta tensor_inputs[2];  // shape, dtype and device of each tensor input
  int num_tensor_inputs = 0;
  SavedVariable self, other, result, result1;
};

// Sums `grad` down to `sizes` over the dimensions broadcasting added or
// stretched (at::sum_to): how a gradient returns to a broadcast input.
Tensor sum_to(const Tensor& grad, const DimVector& sizes);

}  // namespace descent::autograd
