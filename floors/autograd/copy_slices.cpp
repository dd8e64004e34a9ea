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
// of zeros of the base's shape, leading into the CopySlices (PyTorch
// regenerates it from the view op; descent names it AsStridedBackward0, the
// name PyTorch uses when it cannot replay the view). A write through a view
// of a leaf that requires grad is refused, as in PyTorch. descent requires
// the base to be laid out plainly (contiguous from its storage's start),
// which every tensor a kernel makes is; the regions are computed on the
// gradient's copy, not through view ops, so these two nodes are differentiable
// once only (create_graph through them raises).
#include "floors/autograd/copy_slices.h"

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
  inputs.push_back(base);
}

TensorList CopySlices::apply(TensorList&& grads) {
  Tensor g = grads.empty() ? Tensor() : std::move(grads[0]);
  if (!g.defined()) g = call(Op::zeros, inputs[0].sizes, inputs[0].dtype, inputs[0].device);
  check_once_differentiable(name, g);
  Tensor result = call(Op::clone, g);  // contiguous: the view's geometry applies to it as to the base
  Tensor region = region_of(result, view);
  TensorList res = fn->apply(TensorList{call(Op::clone, region)});
  if (!res.empty() && res[0].defined()) call(Op::copy_, region, res[0], false);
  else call(Op::zero_, region);
  TensorList out(next_edges.size());
  out[0] = std::move(result);
  for (size_t k = 1; k < out.size() && k < res.size(); ++k) out[k] = std::move(res[k]);
  return out;
}

AsStridedBackward::AsStridedBackward(const GradMeta& b, ViewGeometry v)
    : Node("AsStridedBackward0"), base(b), view(std::move(v)) {}

TensorList AsStridedBackward::apply(TensorList&& grads) {
  Tensor g = grads.empty() ? Tensor() : std::move(grads[0]);
  Tensor whole = call(Op::zeros, base.sizes, base.dtype, base.device);
  if (g.defined()) {
    check_once_differentiable(name, g);
    call(Op::copy_, region_of(whole, view), g, false);
  }
  return {whole};
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
  Ref<Node> as_view(new AsStridedBackward(base_meta, geometry));
  as_view->next_edges.push_back(Edge{slices, 0});
  set_history(view, as_view, 0);
}

}  // namespace descent::autograd
