// Floor 4: the derivatives of the matrix products (Note [One derivative per op],
// derivatives.cpp): mm, addmm, bmm, dot and mv.
#include "floors/autograd/formulas.h"

namespace descent::autograd {
namespace {

// PyTorch's maybe_multiply: g itself when the factor is 1.
Tensor times(const Tensor& g, const Scalar& s) { return s.to_double() == 1 ? g : mul(g, scalar_tensor(s)); }
Tensor t(const Tensor& a) { return call(Op::t, a); }
// The gradients of mm(mat1, mat2), as PyTorch's mm_mat1_backward and
// mm_mat2_backward compute them: where the input was a column-major matrix
// (a transposed contiguous one, as a Linear layer's weight.t() is), its
// gradient is computed transposed and handed back as a transpose, so that
// it has the input's layout, and AccumulateGrad takes the weight's
// gradient without a copy (Note [AccumulateGrad steals a gradient], node.cpp).
Tensor mm_mat1_backward(BackwardContext& c, int k, const Tensor& mat2) {
  return c.n.column_major & (1u << k) ? t(call(Op::mm, mat2, t(c.g))) : call(Op::mm, c.g, t(mat2));
}
Tensor mm_mat2_backward(BackwardContext& c, int k, const Tensor& mat1) {
  return c.n.column_major & (1u << k) ? t(call(Op::mm, t(c.g), mat1)) : call(Op::mm, t(mat1), c.g);
}
void mm_backward(BackwardContext& c) {
  if (c.needs(0)) c.out[0] = mm_mat1_backward(c, 0, c.other());
  if (c.needs(1)) c.out[1] = mm_mat2_backward(c, 1, c.self());
}
// addmm(self, mat1, mat2, beta, alpha) = beta * self + alpha * mat1 @ mat2:
// self's gradient is beta * g (summed down to self's shape by the engine),
// mat1's alpha * g @ mat2^T, mat2's alpha * mat1^T @ g (PyTorch's
// mm_mat1_backward and mm_mat2_backward). mat1 is saved for mat2's gradient
// and mat2 for mat1's, as AddmmBackward0 saves them.
void addmm_backward(BackwardContext& c) {
  const Scalar beta = c.arg(3).to_scalar(), alpha = c.arg(4).to_scalar();
  if (c.needs(0)) c.out[0] = times(c.g, beta);
  if (c.needs(1)) c.out[1] = times(mm_mat1_backward(c, 1, c.input(2)), alpha);
  if (c.needs(2)) c.out[2] = times(mm_mat2_backward(c, 2, c.input(1)), alpha);
}
void bmm_backward(BackwardContext& c) {
  if (c.needs(0)) c.out[0] = call(Op::bmm, c.g, call(Op::transpose, c.other(), 1, 2));
  if (c.needs(1)) c.out[1] = call(Op::bmm, call(Op::transpose, c.self(), 1, 2), c.g);
}
void dot_backward(BackwardContext& c) {
  if (c.needs(0)) c.out[0] = mul(c.g, c.other());
  if (c.needs(1)) c.out[1] = mul(c.g, c.self());
}
void mv_backward(BackwardContext& c) {
  if (c.needs(0)) c.out[0] = mul(call(Op::unsqueeze, c.g, 1), call(Op::unsqueeze, c.other(), 0));
  if (c.needs(1)) c.out[1] = call(Op::mv, call(Op::t, c.self()), c.g);
}

// The rows (formulas.h says how a row reads).
constexpr Derivative kRows[] = {
    {Op::mm, "MmBackward0", {kOther, kSelf}, mm_backward},
    {Op::addmm, "AddmmBackward0", {kNone, kInput2, kOther}, addmm_backward},
    {Op::bmm, "BmmBackward0", {kOther, kSelf}, bmm_backward},
    {Op::dot, "DotBackward0", {kOther, kSelf}, dot_backward},
    {Op::mv, "MvBackward0", {kOther, kSelf}, mv_backward},
};

}  // namespace

std::span<const Derivative> product_derivatives() { return kRows; }

}  // namespace descent::autograd
