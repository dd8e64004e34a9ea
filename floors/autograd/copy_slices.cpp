// Floor 4: in-place ops through views.
//
// Note [In-place on a view]
// ~~~~~~~~~~~~~~~~~~~~~~~~~
// `buf = x.clone(); buf[0] = y` writes y into a view of buf (buf[0] is a
// select view sharing buf's memory). Autograd must see that buf has changed:
// every gradient of buf now flows, at row 0, to y (and not to x), and
// elsewhere to x as before. PyTorch records this on the view's *base*: buf's
// grad_fn becomes a CopySlices node, which holds the in-place op's own node
// (CopyBackwards here) and where the view lies in the base. Its backward:
//   1. copy the gradient of the base;
//   2. take the view's region of that copy and run the op's node on it: its
//      first output is the gradient of what the view held before the write
//      (zero for a copy_, g*other for a mul_), written back into the region;
//      its other outputs go to the op's other inputs (y);
//   3. the copy goes to the base's old history.
// The view itself gets a new grad_fn that places its gradient at its region
// of zeros of the base's shape, leading into the CopySlices: an
// AsStridedBackward0, as PyTorch makes by default (it replays the view op
// instead only for tensors that do not support as_strided). A write through a view
// of a leaf that requires grad is refused, as in PyTorch. descent requires
// the base to be laid out plainly (contiguous from its storage's start),
// which every tensor a kernel makes is; the regions are computed on the
// gradient's copy, not through view ops, so these two nodes are differentiable
// once only (create_graph through them raises).
//
// Note [A view's grad_fn after an in-place write]
// ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
// `b = x * 1; v = b[0]; b.mul_(5)`: v's grad_fn (SelectBackward0) was made
// when v was, and leads into b's grad_fn of that time (the MulBackward0 of
// `x * 1`). But b.mul_(5) changed what v holds: v is now 5 * x[0], and its
// gradient must go through b's new grad_fn (the MulBackward0 of the mul_).
// Writing through a sibling view (`b[0].mul_(7)` while `c = b[:, 1]` is
// held) moves b's history onto a CopySlices just the same. Nothing in the
// write can reach every view of b, so PyTorch looks the other way: each view
// remembers the version of its memory when its grad_fn was made (its
// attr_version), and reading the view's grad_fn when the shared version
// counter has moved on makes a new one first, an AsStridedBackward0 (the
// view's geometry) into the base's grad_fn as it is now
// (VariableHooks::grad_fn, torch/csrc/autograd/variable.cpp). descent does
// the same: TensorImpl::view_version, checked by grad_fn(t), which every
// Autograd kernel reads through gradient_edge. `v.grad_fn` then prints
// <AsStridedBackward0>, as in PyTorch; and a view made of a tensor that did
// not require grad, whose base has since gained a history (`b.mul_(w)` with
// w requiring grad), gains one too, and requires grad from then on
// (autograd::requires_grad, which the Autograd kernels and Tensor.requires_grad read).
//
// Note [A view made in no_grad mode]
// ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
// `with torch.no_grad(): v = y[:2]` then `v.mul_(2)` with grad mode on:
// should the write be recorded into y's graph? The view was made where
// nothing is tracked, so the graph has no record of it, and either answer
// surprises someone. PyTorch refuses: its ADInplaceOrView kernel marks a
// view made with grad mode off (CreationMeta::NO_GRAD_MODE, and so every
// view of that view), and an in-place op on it with grad mode on raises "A
// view was created in no_grad mode and is being modified inplace with grad
// mode enabled. ..." (handle_view_on_rebase, torch/csrc/autograd/variable.cpp).
// A write to its base or another view of it raises the same, "its base or
// another view of its base has been modified", when the view's grad_fn is
// next read (v.grad_fn, v.is_leaf, an op taking v with grad on), whatever
// mode the write ran in. Such a view requires grad when its base does, and
// is a leaf with no AccumulateGrad of its own: an op on it records an edge
// of None. descent marks the view in its Autograd kernel (PyTorch in
// ADInplaceOrView; floor 3 here cannot reach the autograd state), so a view
// made in inference mode, where that kernel does not run, is not marked:
// PyTorch's CreationMeta::INFERENCE_MODE is not kept.
#include "floors/autograd/copy_slices.h"

#include <algorithm>

#include "floors/autograd/derivatives.h"

#include "floors/dispatch/dispatcher.h"

namespace descent::autograd {

namespace {

Tensor region_of(const Tensor& whole, const ViewGeometry& v) { return whole.as_strided(v.sizes, v.strides, v.offset); }

void check_once_differentiable(const char* name, const Tensor& g) {
  DESCENT_CHECK(!grad_mode_enabled() || !g.requires_grad(), NotImplementedError, "descent cannot differentiate ", name,
                " a second time (create_graph=True with a gradient that requires grad): Note [In-place on a view]");
}

}  // namespace

CopySlices::CopySlices(const GradMeta& base, ViewGeometry v, Ref<Node> f)
    : Node("CopySlices"), view(std::move(v)), fn(std::move(f)) {
  qualified = "torch::autograd::CopySlices";
  inputs.push_back(base);
}

TensorList CopySlices::apply(TensorList&& grads) {
  Tensor g = grads.empty() ? Tensor() : std::move(grads[0]);
  if (!g.defined()) g = call(Op::zeros, inputs[0].sizes, inputs[0].dtype, inputs[0].device);
  check_once_differentiable(name, g);
  Tensor result = call(Op::clone, g);  // contiguous: the view's geometry applies to it as to the base
  Tensor region = region_of(result, view);
  TensorList res = fn->apply(TensorList{call(Op::clone, region)});
  if (!res.empty() && res[0].defined())
    call(Op::copy_, region, res[0], false);
  else
    call(Op::zero_, region);
  TensorList out(next_edges.size());
  out[0] = std::move(result);
  for (size_t k = 1; k < out.size() && k < res.size(); ++k) out[k] = std::move(res[k]);
  return out;
}

AsStridedBackward::AsStridedBackward(const GradMeta& b, ViewGeometry bg, ViewGeometry v)
    : Node("AsStridedBackward0"), base(b), base_geometry(std::move(bg)), view(std::move(v)) {}

namespace {

bool is_plain(const ViewGeometry& g) {
  int64_t expected = 1;
  for (int d = g.sizes.size(); d-- > 0;) {
    if (g.sizes[d] != 1 && g.strides[d] != expected) return false;
    expected *= g.sizes[d];
  }
  return g.offset == 0;
}

// One past the last element a geometry reaches in its memory.
int64_t extent(const ViewGeometry& g) {
  int64_t last = g.offset;
  for (int d = 0; d < g.sizes.size(); ++d) {
    if (g.sizes[d] == 0) return g.offset;
    last += (g.sizes[d] - 1) * g.strides[d];
  }
  return last + 1;
}

}  // namespace

TensorList AsStridedBackward::apply(TensorList&& grads) {
  Tensor g = grads.empty() ? Tensor() : std::move(grads[0]);
  // An expanded view reads one element of the base many times (stride 0):
  // the gradients of those reads add up before they are placed.
  ViewGeometry once = view;
  for (int d = 0; d < once.sizes.size(); ++d)
    if (once.strides[d] == 0) once.sizes[d] = 1;
  if (g.defined()) {
    check_once_differentiable(name, g);
    g = sum_to(g, once.sizes);
  }
  if (is_plain(base_geometry)) {  // the base is laid out as its gradient is: place the view's part in it
    Tensor whole = call(Op::zeros, base.sizes, base.dtype, base.device);
    if (g.defined()) call(Op::copy_, region_of(whole, once), g, false);
    return {whole};
  }
  // Otherwise place it in zeros as long as the memory both reach, and read the base's part out.
  Tensor memory = call(Op::zeros, DimVector{std::max(extent(base_geometry), extent(once))}, base.dtype, base.device);
  if (g.defined()) call(Op::copy_, region_of(memory, once), g, false);
  return {call(Op::clone, region_of(memory, base_geometry))};
}

void check_view_write(const Tensor& view, bool indirect) {
  const AutogradMeta* m = meta(view);
  if (!m || m->creation == CreationMeta::Default) return;
  const char* what = indirect ? "its base or another view of its base has been" : "is being";
  const std::string prefix =
      m->grad_fn ? str("Output ", m->output_nr, " of ", m->grad_fn->name, " is a view of a view which was created in")
                 : std::string("A view was created in");
  throw Error(str(prefix, " no_grad mode and ", what,
                  " modified inplace with grad mode enabled. Given that this use case is ambiguous and error-prone, "
                  "it is forbidden. You can clarify your code by moving both the view and the inplace either both "
                  "inside the no_grad block (if you don't want the inplace to be tracked) or both outside (if you "
                  "want the inplace to be tracked)."));
}

void note_view_creation(const Tensor& self, const Tensor& view) {
  if (!view.is_view() || view.impl() == self.impl()) return;
  // PyTorch's propagate_creation_meta: a view of a marked view keeps the mark.
  if (!grad_mode_enabled() || creation_meta(self) != CreationMeta::Default)
    ensure_meta(view).creation = CreationMeta::NoGradMode;
}

void regenerate_view_grad_fn(const Tensor& view) {
  const Tensor base(view.impl()->base);
  const AutogradMeta* m = meta(view);
  if ((!m || !m->grad_fn) && !base.requires_grad()) {  // no history, and none to join
    view.impl()->view_version = view.version();
    return;
  }
  check_view_write(view, true);  // leaves view_version behind: every read raises, as in PyTorch
  view.impl()->view_version = view.version();
  const Edge base_edge = gradient_edge(base);  // the base is never a view: this does not come back here
  if (!base_edge.valid()) return;
  Ref<Node> fn(new AsStridedBackward(GradMeta{base.sizes(), base.dtype(), base.device()},
                                     ViewGeometry{base.sizes(), base.strides(), base.offset()},
                                     ViewGeometry{view.sizes(), view.strides(), view.offset()}));
  fn->next_edges.push_back(base_edge);
  set_history(view, fn, 0);
}

void rebase_history_through_view(const Tensor& view, const Tensor& base, const Edge& base_edge, const Ref<Node>& fn) {
  DESCENT_CHECK(base.is_contiguous() && base.offset() == 0, NotImplementedError,
                "an in-place op through a view of a tensor that is not laid out from its memory's start (Note "
                "[In-place on a view])");
  const GradMeta base_meta{base.sizes(), base.dtype(), base.device()};
  const ViewGeometry geometry{view.sizes(), view.strides(), view.offset()};
  Ref<Node> slices(new CopySlices(base_meta, geometry, fn));
  slices->next_edges.push_back(base_edge);
  for (size_t k = 1; k < fn->next_edges.size(); ++k) slices->next_edges.push_back(fn->next_edges[k]);
  set_history(base, slices, 0);
  Ref<Node> as_view(new AsStridedBackward(base_meta, ViewGeometry{base.sizes(), base.strides(), 0}, geometry));
  as_view->next_edges.push_back(Edge{slices, 0});
  set_history(view, as_view, 0);
}

}  // namespace descent::autograd
