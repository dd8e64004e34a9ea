// Floor 4: the derivatives of the reductions (Note [One derivative per op],
// derivatives.cpp): sum, mean, max and max.dim, mse_loss, and sort and topk,
// whose values are selected as max.dim's is.
#include "floors/autograd/formulas.h"

#include <algorithm>
#include <vector>

namespace descent::autograd {
namespace {

// The dims a reduction reduced, wrapped and sorted (all of them for None or []).
DimVector reduced_dims(const IValue& dims, int ndim) {
  DimVector out;
  if (dims.is_none() || dims.to_int_list().empty()) {
    for (int d = 0; d < ndim; ++d) out.push_back(d);
    return out;
  }
  for (int64_t d : dims.to_int_list()) out.push_back(ndim == 0 ? 0 : wrap_dim(d, ndim, "sum"));
  std::sort(out.data(), out.data() + out.size());
  return out;
}

// g of a reduction over `dims` back to the input's shape (sum's backward).
Tensor unreduce(const Tensor& g, const DimVector& dims, bool keepdim, const DimVector& sizes) {
  Tensor r = g;
  if (!keepdim && sizes.size() > 0)
    for (int64_t d : dims) r = call(Op::unsqueeze, r, d);
  return expand(r, sizes);
}

int64_t count_of(const DimVector& dims, const DimVector& sizes) {
  int64_t n = 1;
  for (int64_t d : dims) n *= sizes.size() ? sizes[int(d)] : 1;
  return n;
}
void sum_backward(BackwardContext& c) { c.out[0] = expand(c.g, c.sizes(0)); }
void sum_dim_backward(BackwardContext& c) {
  const DimVector dims = reduced_dims(c.arg(1), c.sizes(0).size());
  c.out[0] = unreduce(c.g, dims, c.arg(2).to_bool(), c.sizes(0));
}
void mean_backward(BackwardContext& c) {
  c.out[0] = div(expand(c.g, c.sizes(0)), number(double(numel_of(c.sizes(0)))));
}
void mean_dim_backward(BackwardContext& c) {
  const DimVector dims = reduced_dims(c.arg(1), c.sizes(0).size());
  c.out[0] = div(unreduce(c.g, dims, c.arg(2).to_bool(), c.sizes(0)), number(double(count_of(dims, c.sizes(0)))));
}
// max() of all elements: the gradient shared evenly among the elements that
// equal the maximum (PyTorch's evenly_distribute_backward). A NaN is the
// maximum of anything it is in, and NaN == NaN is false, so "equal" counts a
// NaN element as equal to a NaN maximum: max([1., nan]).backward() gives
// [0., 1.] as in PyTorch, not 0/0. PyTorch's CUDA path computes this mask
// with logical ops, as here; its CPU path reads value.isnan() with item()
// first and then builds one of the two masks.
void max_backward(BackwardContext& c) {
  const Tensor x = c.self();
  const Tensor r = c.result();
  const auto is_nan = [&](const Tensor& t) { return as_dtype(call(Op::ne, t, t), x.dtype()); };
  const Tensor mask = call(Op::add, as_dtype(call(Op::eq, x, r), x.dtype()), mul(is_nan(x), is_nan(r)));
  c.out[0] = mul(mask, div(c.g, call(Op::sum, mask, IValue())));
}
// max(dim): the gradient goes to the element each index names (PyTorch
// scatters it; descent compares the indices with a range along dim).
void max_dim_backward(BackwardContext& c) {
  const DimVector& sizes = c.sizes(0);
  const bool keepdim = c.arg(2).to_bool();
  Tensor g = c.g, idx = c.result1();
  if (sizes.size() == 0) {
    c.out[0] = g;
    return;
  }
  const int d = wrap_dim(c.arg(1).to_int(), sizes.size(), "max");
  if (!keepdim) {
    g = call(Op::unsqueeze, g, int64_t{d});
    idx = call(Op::unsqueeze, idx, int64_t{d});
  }
  DimVector line(std::vector<int64_t>(size_t(sizes.size()), 1));
  line[d] = sizes[d];
  const Tensor range = call(Op::view, call(Op::arange, Scalar(sizes[d]), ScalarType::Int64, g.device()), line);
  c.out[0] = mul(g, call(Op::eq, range, idx));
}
// mse_loss: d/dself = norm * (self - target) * g, d/dtarget its negative,
// norm = 2 / (elements averaged) for the mean, 2 otherwise (PyTorch's
// mse_loss_backward; its norm counts self's elements, which are these when the
// shapes match, and it refuses the target's gradient when target was broadcast).
void mse_loss_backward(BackwardContext& c) {
  const int64_t reduction = c.arg(2).to_int();
  const Tensor diff = sub(c.self(), c.other());
  const double norm = reduction == 1 ? 2.0 / double(diff.numel()) : 2.0;
  const Tensor grad = mul(mul(diff, number(norm)), c.g);
  if (c.needs(0)) c.out[0] = grad;
  if (c.needs(1)) c.out[1] = neg(grad);
}
// sort and topk: g scattered back to the positions the indices name along
// dim, zeros elsewhere (PyTorch's value_selecting_reduction_backward):
// index_put_ with the indices along dim and a range along every other dim.
void sort_backward(BackwardContext& c) {
  const DimVector& sizes = c.sizes(0);
  if (sizes.size() == 0) {
    c.out[0] = c.g;
    return;
  }
  const int d = wrap_dim(c.arg(c.n.op.id == Op::topk ? 2 : 1).to_int(), sizes.size(), c.n.op.python_name);
  OptionalTensorList where;
  for (int k = 0; k < sizes.size(); ++k) {
    if (k == d) {
      where.push_back(c.result1());
      continue;
    }
    DimVector line(std::vector<int64_t>(size_t(sizes.size()), 1));
    line[k] = c.g.sizes()[k];
    where.push_back(call(Op::view, call(Op::arange, Scalar(line[k]), ScalarType::Int64, c.g.device()), line));
  }
  Tensor z = zeros(sizes, c.g.dtype(), c.g.device());
  call(Op::index_put_, z, where, c.g, true);
  c.out[0] = z;
}

// The rows (formulas.h says how a row reads).
constexpr Derivative kRows[] = {
    {Op::sum, "SumBackward0", {kNone, kNone}, sum_backward},
    {Op::sum_dim, "SumBackward1", {kNone, kNone}, sum_dim_backward},
    {Op::mean, "MeanBackward0", {kNone, kNone}, mean_backward},
    {Op::mean_dim, "MeanBackward1", {kNone, kNone}, mean_dim_backward},
    {Op::max, "MaxBackward1", {kSelf | kResult, kNone}, max_backward},
    {Op::max_dim, "MaxBackward0", {kResult1, kNone}, max_dim_backward},
    {Op::mse_loss, "MseLossBackward0", {kSelf | kOther, kSelf | kOther}, mse_loss_backward},
    {Op::sort, "SortBackward0", {kResult1, kNone}, sort_backward},
    {Op::topk, "TopkBackward0", {kResult1, kNone}, sort_backward},
};

}  // namespace

std::span<const Derivative> reduction_derivatives() { return kRows; }

}  // namespace descent::autograd
