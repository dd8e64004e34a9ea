// Floor 4: the derivatives of torch.nn's ops (nn_kernels.cpp; Note [One
// derivative per op], derivatives.cpp): softmax and log_softmax and their
// backward ops, nll_loss, layer_norm, embedding, binary cross-entropy, and
// gelu and silu with their backward ops.
#include "floors/autograd/formulas.h"

namespace descent::autograd {
namespace {

// The dim of a softmax-like op, wrapped for its input's dims (a 0-d input is one row).
int64_t softmax_dim(const BackwardContext& c, int arg, int input) {
  const int nd = c.sizes(input).size();
  return wrap_dim(c.arg(arg).to_int(), nd == 0 ? 1 : nd, "softmax");
}
Tensor sum_keep(const Tensor& t, int64_t dim) { return t.dim() == 0 ? t : call(Op::sum_dim, t, DimVector{dim}, true); }
// SoftmaxBackward0 and LogSoftmaxBackward0: the backward ops of aten, from the result.
void softmax_backward(BackwardContext& c) {
  const Op back = c.n.op.id == Op::_softmax ? Op::_softmax_backward_data : Op::_log_softmax_backward_data;
  c.out[0] = call(back, c.g, c.result(), softmax_dim(c, 1, 0), c.dtype(0));
}
// _softmax_backward_data(go, y) = y * (go - sum(go * y)): d/dgo is the same
// op of the incoming gradient, d/dy = G * go - G * sum(go * y) - go * sum(G * y)
// (PyTorch's softmax_double_backward).
void softmax_backward_data_backward(BackwardContext& c) {
  const int64_t dim = softmax_dim(c, 2, 1);
  const Tensor y = c.other();
  if (c.needs(0)) c.out[0] = call(Op::_softmax_backward_data, c.g, y, dim, c.arg(3));
  if (c.needs(1)) {
    const Tensor go = c.self();
    c.out[1] = sub(sub(mul(c.g, go), mul(c.g, sum_keep(mul(go, y), dim))), mul(go, sum_keep(mul(c.g, y), dim)));
  }
}
// _log_softmax_backward_data(go, y) = go - exp(y) * sum(go): d/dgo = G - sum(G * exp(y)),
// d/dy = -G * exp(y) * sum(go).
void log_softmax_backward_data_backward(BackwardContext& c) {
  const int64_t dim = softmax_dim(c, 2, 1);
  const Tensor e = call(Op::exp, c.other());
  if (c.needs(0)) c.out[0] = sub(c.g, sum_keep(mul(c.g, e), dim));
  if (c.needs(1)) c.out[1] = neg(mul(mul(c.g, e), sum_keep(c.self(), dim)));
}
// A loss's weight (and pos_weight) has no derivative in derivatives.yaml:
// PyTorch's backward refuses it when it requires grad, as here.
void refuse_weight_gradients(const BackwardContext& c, int first) {
  for (int k = first; k < c.num_inputs(); ++k)
    DESCENT_CHECK(!c.needs(k), Error, "the derivative for '", c.n.input_names[size_t(k)], "' is not implemented.");
}
// NllLossBackward0: -weight[t] * g at each sample's class (divided by the
// total weight for the mean), nothing at ignored samples (PyTorch's
// nll_loss_backward, written here with index_put_).
void nll_loss_backward(BackwardContext& c) {
  refuse_weight_gradients(c, 2);
  const int64_t reduction = c.arg(3).to_int(), ignore = c.arg(4).to_int();
  const DimVector& sizes = c.sizes(0);
  Tensor target = c.other();
  const Tensor kept = call(Op::ne, target, number(double(ignore)));
  Tensor safe = mul(target, kept);
  Tensor w = c.num_inputs() > 2 ? mul(call(Op::index, c.input(2),
                                           [&] {
                                             OptionalTensorList l;
                                             l.push_back(safe);
                                             return l;
                                           }()),
                                      kept)
                                : as_dtype(kept, c.dtype(0));
  Tensor coef = neg(mul(w, c.g));
  if (reduction == 1) coef = div(coef, c.result1());
  const int64_t n = sizes.size() == 1 ? 1 : sizes[0];
  OptionalTensorList at;
  if (sizes.size() == 2) at.push_back(call(Op::arange, Scalar(n), ScalarType::Int64, c.device(0)));
  at.push_back(call(Op::reshape, safe, DimVector{n}));
  Tensor grad = zeros(sizes, c.dtype(0), c.device(0));
  c.out[0] = call(Op::index_put_, grad, at, call(Op::reshape, coef, DimVector{n}), true);
}
// The position of the tensor input named `name` (layer_norm's weight or bias,
// bce's weight or pos_weight, either of which may be None), or -1.
int input_named(const BackwardContext& c, std::string_view name) {
  for (int k = 0; k < c.num_inputs(); ++k)
    if (name == c.n.input_names[size_t(k)]) return k;
  return -1;
}
// NativeLayerNormBackward0: with xhat = (x - mean) * rstd over the normalized
// dims (recomputed from x, so that the formula is differentiable again) and
// gxhat = g * weight, d/dx = rstd * (gxhat - mean(gxhat) - xhat * mean(gxhat * xhat)),
// d/dweight = g * xhat and d/dbias = g, which the engine sums down to their shape.
void native_layer_norm_backward(BackwardContext& c) {
  const Tensor x = c.self();
  const int nd = c.arg(1).to_int_list().size();
  DimVector dims;
  for (int d = x.dim() - nd; d < x.dim(); ++d) dims.push_back(d);
  const Tensor xc = sub(x, call(Op::mean_dim, x, dims, true));
  const Tensor var = call(Op::mean_dim, mul(xc, xc), dims, true);
  const Tensor rstd = call(Op::pow_scalar, call(Op::add, var, number(c.arg(4).to_double())), Scalar(-0.5));
  const Tensor xhat = mul(xc, rstd);
  const int wk = input_named(c, "weight"), bk = input_named(c, "bias");
  if (c.needs(0)) {
    const Tensor gxhat = wk > 0 ? mul(c.g, c.input(wk)) : c.g;
    const Tensor inner = sub(sub(gxhat, call(Op::mean_dim, gxhat, dims, true)),
                             mul(xhat, call(Op::mean_dim, mul(gxhat, xhat), dims, true)));
    c.out[0] = mul(rstd, inner);
  }
  if (wk > 0 && c.needs(wk)) c.out[wk] = mul(c.g, xhat);
  if (bk > 0 && c.needs(bk)) c.out[bk] = c.g;
}
// EmbeddingBackward0: each row of g added into the weight row its index
// named; nothing into padding_idx's row; with scale_grad_by_freq, each row
// divided by how often its index appears (PyTorch's embedding_dense_backward).
void embedding_backward(BackwardContext& c) {
  const DimVector& sizes = c.sizes(0);
  const int64_t rows = sizes[0], d = sizes[1], padding = c.arg(2).to_int();
  const Tensor idx = call(Op::reshape, as_dtype(c.other(), ScalarType::Int64), DimVector{-1});
  Tensor g = call(Op::reshape, c.g, DimVector{-1, d});
  OptionalTensorList at;
  at.push_back(idx);
  if (padding >= 0) g = mul(g, call(Op::unsqueeze, call(Op::ne, idx, number(double(padding))), 1));
  if (c.arg(3).to_bool()) {
    Tensor counts = zeros({rows}, c.dtype(0), c.device(0));
    call(Op::index_put_, counts, at, number(1), true);
    g = div(g, call(Op::unsqueeze, call(Op::index, counts, at), 1));
  }
  c.out[0] = call(Op::index_put_, zeros(sizes, c.dtype(0), c.device(0)), at, g, true);
}
// The mean's 1 / numel, or g as it is (binary cross-entropy's reductions).
Tensor scaled(const BackwardContext& c, const Tensor& grad) {
  return c.arg(c.n.op.id == Op::binary_cross_entropy ? 3 : 4).to_int() == 1
             ? div(grad, number(double(numel_of(c.sizes(0)))))
             : grad;
}
// BinaryCrossEntropyBackward0: d/dx = g * w * (x - t) / max(x * (1 - x), 1e-12),
// d/dt = g * w * (log(1 - x) - log(x)), the logs clamped at -100 as the loss's
// (PyTorch's binary_cross_entropy_backward and _target_backward).
void binary_cross_entropy_backward(BackwardContext& c) {
  refuse_weight_gradients(c, 2);
  const Tensor x = c.self(), t = c.other();
  Tensor g = c.num_inputs() > 2 ? mul(c.g, c.input(2)) : c.g;
  g = scaled(c, g);
  if (c.needs(0)) {
    const Tensor denom = call(Op::clamp_min, mul(sub(number(1), x), x), Scalar(1e-12));
    c.out[0] = div(mul(g, sub(x, t)), denom);
  }
  if (c.needs(1)) {
    const Tensor l1x = call(Op::clamp_min, call(Op::log, sub(number(1), x)), Scalar(-100.0));
    const Tensor lx = call(Op::clamp_min, call(Op::log, x), Scalar(-100.0));
    c.out[1] = mul(g, sub(l1x, lx));
  }
}
// BinaryCrossEntropyWithLogitsBackward0: d/dx = g * w * ((pw * t + 1 - t) *
// sigmoid(x) - pw * t), d/dt = g * w * (log(1 - sigmoid(x)) - pw * log(sigmoid(x)))
// (-x * g * w without pos_weight). A node keeps three tensor inputs
// (kSavedInputs): with both weight and pos_weight, pos_weight is the fourth.
void bce_with_logits_backward(BackwardContext& c) {
  DESCENT_CHECK(c.num_inputs() <= 3, NotImplementedError,
                "binary_cross_entropy_with_logits(): the gradient with both weight and pos_weight given is not "
                "implemented in descent (a node saves three tensor inputs)");
  refuse_weight_gradients(c, 2);
  const Tensor x = c.self(), t = c.other();
  const int wk = input_named(c, "weight"), pk = input_named(c, "pos_weight");
  const Tensor g = scaled(c, wk > 0 ? mul(c.g, c.input(wk)) : c.g);
  const Tensor sig = call(Op::sigmoid, x);
  if (c.needs(0)) {
    if (pk > 0) {
      const Tensor pt = mul(c.input(pk), t);
      c.out[0] = mul(g, sub(mul(call(Op::add, sub(pt, t), number(1)), sig), pt));
    } else {
      c.out[0] = mul(g, sub(sig, t));
    }
  }
  if (c.needs(1))
    c.out[1] =
        pk > 0 ? mul(g, sub(call(Op::log, sub(number(1), sig)), mul(c.input(pk), call(Op::log, sig)))) : mul(g, neg(x));
}

// gelu and silu (Note [gelu and silu as aten computes them], elementwise.h):
// derivatives.yaml's gelu_backward(grad, self, approximate) and
// silu_backward(grad, self), each an op of the table with its own node.
void gelu_backward_formula(BackwardContext& c) { c.out[0] = call(Op::gelu_backward, c.g, c.self(), c.arg(1)); }
// silu: derivatives.yaml's "GradMode::is_enabled() ? infinitely_differentiable_silu_backward(grad,
// self) : silu_backward(grad, self)": under create_graph=True the formula is sigmoid's ops, so the
// gradient's node is MulBackward0 as torch's; otherwise the one silu_backward kernel.
void silu_backward_formula(BackwardContext& c) {
  const Tensor x = c.self();
  if (!grad_mode_enabled()) {
    c.out[0] = call(Op::silu_backward, c.g, x);
    return;
  }
  const Tensor s = call(Op::sigmoid, x);
  c.out[0] = mul(mul(c.g, s), call(Op::add, number(1), mul(x, call(Op::rsub, s, Scalar(1.0)))));  // 1 - s: rsub
}
// gelu_backward(grad_output, self) is linear in grad_output; self's gradient
// is g * grad_output * gelu''(self), aten's gelu_double_backward:
//   erf's:  pdf(x) (2 - x^2), pdf(x) = exp(-x^2 / 2) / sqrt(2 pi);
//   tanh's: (1 - t^2) (u' - x t u'^2 + 3 beta kappa x^2), u = beta (x + kappa x^3), t = tanh(u).
void gelu_double_backward(BackwardContext& c) {
  const Tensor x = c.other();
  if (c.needs(0)) c.out[0] = call(Op::gelu_backward, c.g, x, c.arg(2));
  if (!c.needs(1)) return;
  constexpr double kBeta = 0.79788456080286535588, kKappa = 0.044715, kInvSqrt2Pi = 0.39894228040143267794;
  const Tensor x2 = mul(x, x);
  Tensor second;
  if (c.arg(2).to_int() == 1) {
    const Tensor du = mul(number(kBeta), call(Op::add, number(1), mul(number(3 * kKappa), x2)));
    const Tensor t = call(Op::tanh, mul(number(kBeta), call(Op::add, x, mul(number(kKappa), mul(x2, x)))));
    const Tensor inner = call(Op::add, sub(du, mul(mul(x, t), mul(du, du))), mul(number(3 * kBeta * kKappa), x2));
    second = mul(sub(number(1), mul(t, t)), inner);
  } else {
    const Tensor pdf = mul(number(kInvSqrt2Pi), call(Op::exp, mul(number(-0.5), x2)));
    second = mul(pdf, sub(number(2), x2));
  }
  c.out[1] = mul(mul(c.g, c.self()), second);
}
// Note [silu_backward has a derivative here]
// ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
// derivatives.yaml has no row for silu_backward: silu's own double backward
// goes through infinitely_differentiable_silu_backward (above), so torch
// records a NotImplemented node for aten::silu_backward called directly
// (torch.ops.aten.silu_backward(g, x) with inputs that require grad), whose
// backward raises. descent's start-up check wants a derivative for every
// differentiable row, so it has one, SiluBackwardBackward0:
// silu_backward(grad_output, self) is linear in grad_output; self's gradient
// g * grad_output * s (1 - s) (2 + x (1 - 2 s)), s = sigmoid(x) (aten's silu_double_backward).
void silu_double_backward(BackwardContext& c) {
  const Tensor x = c.other();
  if (c.needs(0)) c.out[0] = call(Op::silu_backward, c.g, x);
  if (!c.needs(1)) return;
  const Tensor s = call(Op::sigmoid, x);
  const Tensor ds = mul(s, sub(number(1), s));
  const Tensor second = mul(ds, call(Op::add, number(2), mul(x, sub(number(1), mul(number(2), s)))));
  c.out[1] = mul(mul(c.g, c.self()), second);
}

// The rows (formulas.h says how a row reads).
constexpr Derivative kRows[] = {
    {Op::_softmax, "SoftmaxBackward0", {kResult, kNone}, softmax_backward},
    {Op::_log_softmax, "LogSoftmaxBackward0", {kResult, kNone}, softmax_backward},
    {Op::_softmax_backward_data,
     "SoftmaxBackwardDataBackward0",
     {kOther, kSelf | kOther},
     softmax_backward_data_backward},
    {Op::_log_softmax_backward_data,
     "LogSoftmaxBackwardDataBackward0",
     {kOther, kSelf | kOther},
     log_softmax_backward_data_backward},
    {Op::nll_loss_forward, "NllLossBackward0", {kOther | kInput2 | kResult1, kNone, kNone}, nll_loss_backward},
    {Op::native_layer_norm,
     "NativeLayerNormBackward0",
     {kSelf | kOther | kInput2, kSelf, kSelf},
     native_layer_norm_backward},
    {Op::embedding, "EmbeddingBackward0", {kOther, kNone}, embedding_backward},
    {Op::binary_cross_entropy,
     "BinaryCrossEntropyBackward0",
     {kSelf | kOther | kInput2, kSelf | kInput2, kNone},
     binary_cross_entropy_backward},
    {Op::binary_cross_entropy_with_logits,
     "BinaryCrossEntropyWithLogitsBackward0",
     {kSelf | kOther | kInput2, kSelf | kOther | kInput2, kNone},
     bce_with_logits_backward},
    {Op::gelu, "GeluBackward0", {kSelf, kNone}, gelu_backward_formula},
    {Op::gelu_backward, "GeluBackwardBackward0", {kOther, kSelf | kOther}, gelu_double_backward},
    {Op::silu, "SiluBackward0", {kSelf, kNone}, silu_backward_formula},
    {Op::silu_backward, "SiluBackwardBackward0", {kOther, kSelf | kOther}, silu_double_backward},
};

}  // namespace

std::span<const Derivative> nn_derivatives() { return kRows; }

}  // namespace descent::autograd
