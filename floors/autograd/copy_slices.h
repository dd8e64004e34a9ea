// Floor 4: an in-place op on a view, recorded on the view's base
// (PyTorch's CopySlices). See Note [In-place on a view] in copy_slices.cpp.
#pragma once

#include "floors/autograd/node.h"

namespace descent::autograd {

// Where a view lies in its base: sizes, strides and offset in elements.
struct ViewGeometry {
  DimVector sizes, strides;
  int64_t offset = 0;
};

// The base's new grad_fn after an in-place op `fn` wrote through a view.
struct CopySlices final : Node {
  CopySlices(const GradMeta& base, ViewGeometry view, Ref<Node> fn);
  TensorList apply(TensorList&& grads) override;
  void release_saved_variables() override { fn->release_saved_variables(); }
  std::string saved_names() const override { return fn->saved_names(); }
  ViewGeometry view;
  Ref<Node> fn;  // the in-place op's own node (MulBackward0, CopyBackwards, ...)
};

// The view's new grad_fn: its gradient placed into zeros of the base's shape
// (summed first over the dimensions an expand repeats).
struct AsStridedBackward final : Node {
  AsStridedBackward(const GradMeta& base, ViewGeometry base_geometry, ViewGeometry view);
  TensorList apply(TensorList&& grads) override;
  GradMeta base;
  ViewGeometry base_geometry;  // where the base lies in its memory
  ViewGeometry view;           // where the view lies in the same memory
};

// Records `fn` (already run, its edges set) as a write through `view` into
// its base: the base's history moves onto a CopySlices, the view's onto an
// AsStridedBackward of it. Raises when the base's layout is not the plain
// one the gradient is laid out in.
// Gives `view` a new grad_fn when its memory was written in place since its
// grad_fn was made (PyTorch's VariableHooks::grad_fn): an AsStridedBackward0
// into its base's grad_fn as it is now. Called by grad_fn(t); see Note [A
// view's grad_fn after an in-place write].
void regenerate_view_grad_fn(const Tensor& view);

void rebase_history_through_view(const Tensor& view, const Tensor& base, const Edge& base_edge, const Ref<Node>& fn);

// Refuses an in-place write to a view made in no_grad mode (`indirect`: to
// its base or another view of it), with PyTorch's message; returns for any
// other view. Note [A view made in no_grad mode].
void check_view_write(const Tensor& view, bool indirect);
// Marks `view`, the result of a view op on `self`, made in no_grad mode (or
// a view of such a view), as PyTorch's ADInplaceOrView kernels do.
void note_view_creation(const Tensor& self, const Tensor& view);

}  // namespace descent::autograd
