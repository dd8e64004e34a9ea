// Floor 4: the derivatives of the views (Note [One derivative per op],
// derivatives.cpp): view, transpose, permute, expand, slice, select,
// unsqueeze and squeeze, unfold and as_strided (alias, whose gradient is
// clone's, is derivatives_copies.cpp's). A view's gradient
// is the gradient put back in the input's shape, or added into the
// positions of the input it read.
#include "floors/autograd/formulas.h"

#include <vector>

namespace descent::autograd {
namespace {

void view_backward(BackwardContext& c) { c.out[0] = call(Op::reshape, c.g, c.sizes(0)); }
void transpose_backward(BackwardContext& c) {
  c.out[0] = call(Op::transpose, c.g, c.arg(1).to_int(), c.arg(2).to_int());
}
void t_backward(BackwardContext& c) { c.out[0] = call(Op::t, c.g); }
void permute_backward(BackwardContext& c) {
  const DimVector& dims = c.arg(1).to_int_list();
  DimVector inverse(std::vector<int64_t>(size_t(dims.size()), 0));
  for (int i = 0; i < dims.size(); ++i) inverse[wrap_dim(dims[i], dims.size(), "permute")] = i;
  c.out[0] = call(Op::permute, c.g, inverse);
}
void expand_backward(BackwardContext& c) { c.out[0] = sum_to(c.g, c.sizes(0)); }
// slice and select: zeros of the input's shape, the gradient written into
// the part the view saw (PyTorch's slice_backward and select_backward).
void slice_backward(BackwardContext& c) {
  Tensor z = zeros(c.sizes(0), c.g.dtype(), c.g.device());
  call(Op::copy_, call(Op::slice, z, c.arg(1), c.arg(2), c.arg(3), c.arg(4)), c.g, false);
  c.out[0] = z;
}
void select_backward(BackwardContext& c) {
  Tensor z = zeros(c.sizes(0), c.g.dtype(), c.g.device());
  call(Op::copy_, call(Op::select, z, c.arg(1), c.arg(2)), c.g, false);
  c.out[0] = z;
}
void unsqueeze_backward(BackwardContext& c) { c.out[0] = call(Op::reshape, c.g, c.sizes(0)); }
// The position of element `linear` (row-major) of a view of these sizes and strides.
int64_t strided_offset_of(int64_t linear, const DimVector& sizes, const DimVector& strides) {
  int64_t off = 0;
  for (int d = sizes.size() - 1; d >= 0; --d) {
    off += linear % sizes[d] * strides[d];
    linear /= sizes[d];
  }
  return off;
}
// A view whose element i sits at position pos[i] of its input, read as a
// row-major tensor of the input's sizes: g added into those positions of
// zeros (index_put_ with accumulate, so overlapping windows add up).
Tensor positions_backward(const Tensor& g, const std::vector<int64_t>& pos, const DimVector& in_sizes) {
  Tensor p = empty_tensor({int64_t(pos.size())}, ScalarType::Int64, Device{});
  for (size_t i = 0; i < pos.size(); ++i) p.data<int64_t>()[i] = pos[i];
  if (g.device().type != DeviceType::CPU) p = call(Op::_to_copy, p, IValue(), g.device());
  Tensor z = zeros({numel_of(in_sizes)}, g.dtype(), g.device());
  OptionalTensorList at;
  at.push_back(p);
  call(Op::index_put_, z, at, call(Op::reshape, g, DimVector{-1}), true);
  return call(Op::view, z, in_sizes);
}
// The positions of a view of sizes `sizes` and strides `strides` (in
// elements of a row-major input) from `offset`.
std::vector<int64_t> view_positions(const DimVector& sizes, const DimVector& strides, int64_t offset) {
  std::vector<int64_t> pos(static_cast<size_t>(numel_of(sizes)));
  for (size_t i = 0; i < pos.size(); ++i) pos[i] = offset + strided_offset_of(int64_t(i), sizes, strides);
  return pos;
}
// unfold(dimension, size, step): UnfoldBackward0, each window's gradient
// added back where the window read (aten's unfold_backward).
void unfold_backward(BackwardContext& c) {
  const DimVector& in = c.sizes(0);
  const DimVector cs = contiguous_strides(in);
  const int d = in.size() ? wrap_dim(c.arg(1).to_int(), in.size(), "unfold") : 0;
  DimVector strides;
  for (int k = 0; k < in.size(); ++k) strides.push_back(k == d ? cs[k] * c.arg(3).to_int() : cs[k]);
  strides.push_back(in.size() ? cs[d] : 1);
  c.out[0] = positions_backward(c.g, view_positions(c.g.sizes(), strides, 0), in);
}
// Note [as_strided's gradient]
// ~~~~~~~~~~~~~~~~~~~~~~~~~~~~
// AsStridedBackward0 adds g into the input's positions that each element
// read, overlapping ones adding up, as aten's as_strided_backward. descent
// reads the strides and the offset as positions of the input laid out
// row-major from its first element (a contiguous input whose storage
// starts with it: the common as_strided(x, ...) of a fresh x); aten also
// handles inputs that are themselves views of a larger storage.
void as_strided_backward(BackwardContext& c) {
  const int64_t offset = c.arg(3).is_none() ? 0 : c.arg(3).to_int();
  c.out[0] =
      positions_backward(c.g, view_positions(c.arg(1).to_int_list(), c.arg(2).to_int_list(), offset), c.sizes(0));
}

// The rows (formulas.h says how a row reads).
constexpr Derivative kRows[] = {
    {Op::view, "ViewBackward0", {kNone, kNone}, view_backward},
    {Op::_unsafe_view, "UnsafeViewBackward0", {kNone, kNone}, view_backward},
    {Op::transpose, "TransposeBackward0", {kNone, kNone}, transpose_backward},
    {Op::t, "TBackward0", {kNone, kNone}, t_backward},
    {Op::permute, "PermuteBackward0", {kNone, kNone}, permute_backward},
    {Op::expand, "ExpandBackward0", {kNone, kNone}, expand_backward},
    {Op::slice, "SliceBackward0", {kNone, kNone}, slice_backward},
    {Op::select, "SelectBackward0", {kNone, kNone}, select_backward},
    {Op::unsqueeze, "UnsqueezeBackward0", {kNone, kNone}, unsqueeze_backward},
    {Op::squeeze, "SqueezeBackward0", {kNone, kNone}, unsqueeze_backward},
    {Op::squeeze_dim, "SqueezeBackward1", {kNone, kNone}, unsqueeze_backward},
    {Op::squeeze_dims, "SqueezeBackward2", {kNone, kNone}, unsqueeze_backward},
    {Op::unfold, "UnfoldBackward0", {kNone, kNone}, unfold_backward},
    {Op::as_strided, "AsStridedBackward0", {kNone, kNone}, as_strided_backward},
};

}  // namespace

std::span<const Derivative> view_derivatives() { return kRows; }

}  // namespace descent::autograd
