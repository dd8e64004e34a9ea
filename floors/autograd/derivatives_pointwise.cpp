// Floor 4: the derivatives of the elementwise ops (Note [One derivative per op],
// derivatives.cpp): the binary arithmetic and pow, the unary functions, clamp,
// and the ops that keep or mask elements (where, masked_fill, tril, triu),
// with the in-place forms of the arithmetic.
#include "floors/autograd/formulas.h"

#include <cmath>

namespace descent::autograd {
namespace {

void add_backward(BackwardContext& c) {
  const Scalar alpha = c.arg(2).to_scalar();
  c.out[0] = c.g;
  if (c.needs(1)) c.out[1] = alpha.to_double() == 1 ? c.g : mul(c.g, scalar_tensor(alpha));
}
void sub_backward(BackwardContext& c) {
  const Scalar alpha = c.arg(2).to_scalar();
  c.out[0] = c.g;
  if (c.needs(1)) c.out[1] = alpha.to_double() == 1 ? neg(c.g) : mul(c.g, number(-alpha.to_double()));
}
// rsub(self, other, alpha) = other - alpha * self (RsubBackward1, rsub.Scalar):
// -g * alpha, PyTorch's maybe_multiply(-grad, alpha).
void rsub_backward(BackwardContext& c) {
  const Scalar alpha = c.arg(2).to_scalar();
  const Tensor ng = neg(c.g);
  c.out[0] = alpha.to_double() == 1 ? ng : mul(ng, scalar_tensor(alpha));
}
void mul_backward(BackwardContext& c) {
  if (c.needs(0)) c.out[0] = mul(c.g, c.other());
  if (c.needs(1)) c.out[1] = mul(c.g, c.self());
}
void div_backward(BackwardContext& c) {
  if (c.needs(0)) c.out[0] = div(c.g, c.other());
  if (c.needs(1)) {
    const Tensor o = c.other();
    c.out[1] = neg(div(mul(c.g, c.self()), mul(o, o)));
  }
}
// d(x^e)/dx = e * x^(e-1); zero for e == 0 (PyTorch's pow_backward).
void pow_scalar_backward(BackwardContext& c) {
  const Scalar e = c.arg(1).to_scalar();
  if (e.to_double() == 0) {
    c.out[0] = zeros(c.sizes(0), c.dtype(0), c.device(0));
    return;
  }
  const Scalar e1 = e.is_floating() ? Scalar(e.to_double() - 1) : Scalar(e.to_int() - 1);
  c.out[0] = mul(c.g, mul(call(Op::pow_scalar, c.self(), e1), scalar_tensor(e)));
}
// Writes 0 into `d` wherever the bool `mask` (broadcast to d's shape) is
// true: PyTorch's at::where(mask, 0, d). descent has no where op; index_put_
// under the mask writes the same values.
Tensor zero_where(Tensor d, const Tensor& mask) {
  OptionalTensorList m;
  m.push_back(call(Op::expand, mask, d.sizes()));
  call(Op::index_put_, d, m, zeros({}, d.dtype(), d.device()), false);
  return d;
}
// x^y: d/dx = y * x^(y-1), d/dy = x^y * log(x), each 0 where PyTorch's
// pow_backward_self and pow_backward_exponent take 0 (where the formula is
// 0 * inf): d/dx where y == 0, d/dy where x == 0 and y >= 0. So
// pow(0., 2.) gives the exponent the gradient 0, as in PyTorch, not NaN.
void pow_backward(BackwardContext& c) {
  const Tensor y = c.other();
  if (c.needs(0)) {
    const Tensor d = mul(y, call(Op::pow, c.self(), sub(y, number(1))));
    c.out[0] = mul(c.g, zero_where(d, call(Op::eq, y, number(0))));
  }
  if (c.needs(1)) {
    const Tensor x = c.self();
    const Tensor at_zero = call(Op::eq,
                                call(Op::add, as_dtype(call(Op::eq, x, number(0)), ScalarType::Int64),
                                     as_dtype(call(Op::ge, y, number(0)), ScalarType::Int64)),
                                number(2));  // x == 0 and y >= 0 (logical_and)
    c.out[1] = mul(c.g, zero_where(mul(c.result(), call(Op::log, x)), at_zero));
  }
}
// base ** x for a number base (PowBackward2, pow.Scalar): g * base^x * log(base),
// PyTorch's pow_backward_exponent: for base 0, 0 where x >= 0 (where 0 * -inf
// would be NaN), NaN exponents included.
void pow_scalar_base_backward(BackwardContext& c) {
  const double base = c.arg(0).to_scalar().to_double();
  Tensor d = mul(c.result(), number(std::log(base)));
  if (base == 0) d = zero_where(d, call(Op::ge, c.self(), number(0)));
  c.out[0] = mul(c.g, d);
}
void neg_backward(BackwardContext& c) { c.out[0] = neg(c.g); }
void abs_backward(BackwardContext& c) {  // g * sgn(x), sgn(0) = 0
  const Tensor x = c.self();
  const Tensor zero = number(0);
  const Tensor sgn = sub(as_dtype(call(Op::gt, x, zero), x.dtype()), as_dtype(call(Op::lt, x, zero), x.dtype()));
  c.out[0] = mul(c.g, sgn);
}
void exp_backward(BackwardContext& c) { c.out[0] = mul(c.g, c.result()); }
void log_backward(BackwardContext& c) { c.out[0] = div(c.g, c.self()); }
void sqrt_backward(BackwardContext& c) { c.out[0] = div(c.g, mul(c.result(), number(2))); }
void relu_backward(BackwardContext& c) {  // the gradient where the result is positive, as PyTorch's formula
  c.out[0] = call(Op::threshold_backward, c.g, c.result(), Scalar(int64_t{0}));
}
// threshold_backward is linear in grad_output: its own backward masks again;
// self gets zeros (derivatives.yaml: zeros_like(grad)).
void threshold_backward_backward(BackwardContext& c) {
  if (c.needs(0)) c.out[0] = call(Op::threshold_backward, c.g, c.other(), c.arg(2).to_scalar());
  if (c.needs(1)) c.out[1] = zeros(c.sizes(1), c.dtype(1), c.device(1));
}
void sigmoid_backward(BackwardContext& c) {
  const Tensor y = c.result();
  c.out[0] = mul(c.g, mul(y, sub(number(1), y)));
}
void tanh_backward(BackwardContext& c) {
  const Tensor y = c.result();
  c.out[0] = mul(c.g, sub(number(1), mul(y, y)));
}
void reciprocal_backward(BackwardContext& c) {  // -g * result^2, as derivatives.yaml writes it
  const Tensor y = c.result();
  c.out[0] = mul(neg(c.g), mul(y, y));
}
void sin_backward(BackwardContext& c) { c.out[0] = mul(c.g, call(Op::cos, c.self())); }
void cos_backward(BackwardContext& c) { c.out[0] = mul(c.g, neg(call(Op::sin, c.self()))); }
// clamp's gradient passes where min <= self <= max, bounds included (PyTorch's
// clamp_backward and the clamp_min/clamp_max formulas, whose where(mask, g, 0)
// is a product with the mask here). A bound not given is no condition.
void clamp_backward(BackwardContext& c) {
  const IValue none;
  const bool both = c.n.op.id == Op::clamp || c.n.op.id == Op::clamp_;
  const IValue& lo = c.n.op.id == Op::clamp_max ? none : c.arg(1);
  const IValue& hi = both ? c.arg(2) : c.n.op.id == Op::clamp_max ? c.arg(1) : none;
  const Tensor x = c.self();
  Tensor mask;
  if (!lo.is_none()) mask = call(Op::ge, x, scalar_tensor(lo.to_scalar()));
  if (!hi.is_none()) {
    const Tensor le = call(Op::le, x, scalar_tensor(hi.to_scalar()));
    mask = mask.defined() ? mul(mask, le) : le;  // bool * bool: and
  }
  c.out[0] = mul(c.g, mask);
}
// log10 and log2: g / (self * ln 10) and g / (self * ln 2), as derivatives.yaml writes them.
void log10_backward(BackwardContext& c) { c.out[0] = div(c.g, mul(c.self(), number(2.302585092994045684))); }
void log2_backward(BackwardContext& c) { c.out[0] = div(c.g, mul(c.self(), number(0.693147180559945309))); }
// where(condition, self, other): g where the condition chose the input, 0
// elsewhere (derivatives.yaml: where(condition, grad, 0), where(condition, 0, grad)).
void where_backward(BackwardContext& c) {
  const Tensor cond = c.input(0);
  const Tensor zero = zeros({}, c.g.dtype(), c.g.device());
  if (c.needs(1)) c.out[1] = call(Op::where, cond, c.g, zero);
  if (c.needs(2)) c.out[2] = call(Op::where, cond, zero, c.g);
}
// masked_fill: g with the filled positions zeroed, grad.masked_fill(mask, 0).
void masked_fill_backward(BackwardContext& c) { c.out[0] = call(Op::masked_fill, c.g, c.other(), Scalar(int64_t{0})); }
// tril and triu are linear: the gradient is masked alike, grad.tril(diagonal).
void tril_backward(BackwardContext& c) { c.out[0] = call(c.n.op.id, c.g, c.arg(1)); }

// The rows (formulas.h says how a row reads).
constexpr Derivative kRows[] = {
    {Op::add, "AddBackward0", {kNone, kNone}, add_backward},
    {Op::sub, "SubBackward0", {kNone, kNone}, sub_backward},
    {Op::mul, "MulBackward0", {kOther, kSelf}, mul_backward},
    {Op::div, "DivBackward0", {kOther, kSelf | kOther}, div_backward},
    {Op::pow_scalar, "PowBackward0", {kSelf, kNone}, pow_scalar_backward},
    {Op::pow, "PowBackward1", {kSelf | kOther, kSelf | kOther | kResult}, pow_backward},
    {Op::pow_scalar_base, "PowBackward2", {kSelf | kResult, kNone}, pow_scalar_base_backward},
    {Op::rsub, "RsubBackward1", {kNone, kNone}, rsub_backward},
    {Op::neg, "NegBackward0", {kNone, kNone}, neg_backward},
    {Op::abs, "AbsBackward0", {kSelf, kNone}, abs_backward},
    {Op::exp, "ExpBackward0", {kResult, kNone}, exp_backward},
    {Op::log, "LogBackward0", {kSelf, kNone}, log_backward},
    {Op::sqrt, "SqrtBackward0", {kResult, kNone}, sqrt_backward},
    {Op::relu, "ReluBackward0", {kResult, kNone}, relu_backward},
    {Op::threshold_backward, "ThresholdBackwardBackward0", {kOther, kNone}, threshold_backward_backward},
    {Op::sigmoid, "SigmoidBackward0", {kResult, kNone}, sigmoid_backward},
    {Op::tanh, "TanhBackward0", {kResult, kNone}, tanh_backward},
    {Op::sin, "SinBackward0", {kSelf, kNone}, sin_backward},
    {Op::cos, "CosBackward0", {kSelf, kNone}, cos_backward},
    {Op::reciprocal, "ReciprocalBackward0", {kResult, kNone}, reciprocal_backward},
    {Op::log10, "Log10Backward0", {kSelf, kNone}, log10_backward},
    {Op::log2, "Log2Backward0", {kSelf, kNone}, log2_backward},
    {Op::clamp, "ClampBackward1", {kSelf, kNone}, clamp_backward},
    {Op::clamp_min, "ClampMinBackward0", {kSelf, kNone}, clamp_backward},
    {Op::clamp_max, "ClampMaxBackward0", {kSelf, kNone}, clamp_backward},
    {Op::where, "WhereBackward0", {kNone, kSelf, kSelf}, where_backward},
    {Op::masked_fill, "MaskedFillBackward0", {kOther, kNone}, masked_fill_backward},
    {Op::tril, "TrilBackward0", {kNone, kNone}, tril_backward},
    {Op::triu, "TriuBackward0", {kNone, kNone}, tril_backward},
    // In place: the same nodes as the out-of-place ops (PyTorch names them
    // alike); kSelf is a copy of self taken before the op wrote into it.
    {Op::add_, "AddBackward0", {kNone, kNone}, add_backward},
    {Op::sub_, "SubBackward0", {kNone, kNone}, sub_backward},
    {Op::mul_, "MulBackward0", {kOther, kSelf}, mul_backward},
    {Op::div_, "DivBackward0", {kOther, kSelf | kOther}, div_backward},
    {Op::clamp_, "ClampBackward1", {kSelf, kNone}, clamp_backward},
};

}  // namespace

std::span<const Derivative> pointwise_derivatives() { return kRows; }

}  // namespace descent::autograd
