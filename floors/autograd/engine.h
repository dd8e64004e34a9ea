// Floor 4: the backward engine. See Note [How backward walks the graph] (engine.cpp).
#pragma once

#include "floors/autograd/node.h"

namespace descent::autograd {

struct BackwardOptions {
  bool retain_graph = false;  // keep the saved tensors for another backward
  bool create_graph = false;  // record the backward itself (for higher derivatives)
  bool allow_unused = false;  // grad(): an input the outputs do not depend on gives None instead of an error
};

// loss.backward() and descent.autograd.backward: runs the graph from
// `roots` (with `grads`, one per root; undefined means ones for a
// one-element root) and adds the gradients into the leaves' .grad.
void backward(const TensorList& roots, const TensorList& grads, const BackwardOptions& opts);

// descent.autograd.grad: the gradients of `roots` with respect to `inputs`,
// returned instead of accumulated into .grad (undefined for an unused input
// when allow_unused).
TensorList grad(const TensorList& roots, const TensorList& grads, const TensorList& inputs,
                const BackwardOptions& opts);

}  // namespace descent::autograd
