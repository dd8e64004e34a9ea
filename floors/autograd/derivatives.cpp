// Floor 4: the derivative formulas, one per differentiable op of the table.
//
// [SECTION] Helpers the formulas share
// [SECTION] The formulas
// [SECTION] The formulas of torch.nn's ops
// [SECTION] The table
// [SECTION] The node that runs a formula
//
// Note [One derivative per op]
// ~~~~~~~~~~~~~~~~~~~~~~~~~~~~
// PyTorch keeps its derivatives in derivatives.yaml, beside
// native_functions.yaml: for each op, the node's name and one expression per
// differentiable input. descent keeps them here, beside the op table
// (floors/dispatch/ops.h), in the table's order, as C++ functions: each reads
// the incoming gradient `g` and what the node saved, and sets the gradient
// of each tensor input that needs one. Every formula is written with ops of
// the table, called through the dispatcher, so during backward the trace
// shows a node's kernels beneath it, and with create_graph=True the formulas
// are themselves recorded: second derivatives come for free wherever a
// formula only calls differentiable ops.
// Three kinds of op have no row, and the registration check
// (variable_type.cpp) insists on exactly these:
//   - factories, whose results never require grad (their Autograd keys
//     fall through), and comparisons, whose bool results cannot (their
//     Autograd kernel records nothing and runs the op below autograd, as
//     PyTorch's generated kernels for eq, lt, ... do);
//   - CompositeImplicitAutograd ops (matmul, reshape, contiguous, to,
//     flatten, linear, lift_fresh), whose gradient comes from the ops they decompose
//     into (Note [Composite ops decompose]).
// A node has one input per tensor argument, and one per tensor of a
// Tensor[] (cat's), in order; a formula may read the first three of them
// (addmm's self, mat1 and mat2), each saved only where an input that needs
// a gradient reads it, as PyTorch's generated code saves them.
// A gradient leaves a formula in the shape of the op's result broadcast as
// the op broadcast it: the engine sums it down to the input's own shape and
// casts it to the input's dtype (Note [Validating a node's outputs],
// engine.cpp), as PyTorch's validate_outputs does, so the binary formulas
// read like the maths (d(a*b)/da = g*b).
#include "floors/autograd/derivatives.h"

#include <algorithm>
#include <cmath>
#include <vector>

#include "floors/dispatch/dispatcher.h"

namespace descent::autograd {

// [SECTION] Helpers the formulas share ------------------------------------------------

Tensor sum_to(const Tensor& grad, const DimVector& sizes) {
  if (grad.sizes() == sizes) return grad;
  const int lead = grad.dim() - sizes.size();
  DimVector dims;
  for (int d = 0; d < grad.dim(); ++d)
    if (d < lead || (sizes[d - lead] == 1 && grad.sizes()[d] != 1)) dims.push_back(d);
  Tensor r = dims.empty() ? grad : call(Op::sum_dim, grad, dims, true);
  return r.sizes() == sizes ? r : call(Op::view, r, sizes);
}

struct BackwardContext {
  FormulaNode& n;
  Tensor g;        // the gradient of the op's (first) result
  TensorList out;  // what the formula sets: the gradient of each tensor input

  int num_inputs() const { return int(n.tensor_inputs.size()); }
  bool needs(int k) const { return n.next_edges[k].valid(); }
  Tensor input(int k) const { return n.inputs_saved[k].unpack(&n); }  // a saved tensor input, k < kSavedInputs
  Tensor self() const { return input(0); }
  Tensor other() const { return input(1); }
  Tensor result() const { return n.result.unpack(&n); }
  Tensor result1() const { return n.result1.unpack(&n); }
  const IValue& arg(int i) const { return n.args[i]; }
  const DimVector& sizes(int k) const { return n.tensor_inputs[k].sizes; }
  ScalarType dtype(int k) const { return n.tensor_inputs[k].dtype; }
  Device device(int k) const { return n.tensor_inputs[k].device; }
};

namespace {

Tensor number(double v) { return scalar_tensor(Scalar(v)); }  // a wrapped number: keeps the tensor's dtype
Tensor mul(const Tensor& a, const Tensor& b) { return call(Op::mul, a, b); }
Tensor div(const Tensor& a, const Tensor& b) { return call(Op::div, a, b); }
Tensor sub(const Tensor& a, const Tensor& b) { return call(Op::sub, a, b); }
Tensor neg(const Tensor& a) { return call(Op::neg, a); }
Tensor as_dtype(const Tensor& a, ScalarType t) { return call(Op::_to_copy, a, t, IValue()); }
// On the device of the gradient they stand for: a sim:0 input gets sim:0 zeros.
Tensor zeros(const DimVector& sizes, ScalarType t, Device d) { return call(Op::zeros, sizes, t, d); }
Tensor expand(const Tensor& g, const DimVector& sizes) { return call(Op::expand, g, sizes); }

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

// [SECTION] The formulas ---------------------------------------------------------------

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
  const Tensor range = call(Op::view, call(Op::arange, Scalar(sizes[d]), IValue(), IValue()), line);
  c.out[0] = mul(g, call(Op::eq, range, idx));
}
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
// index: each gradient element goes back to where it was read from, added
// where a position was read twice (PyTorch's index_backward).
void index_backward(BackwardContext& c) {
  Tensor z = zeros(c.sizes(0), c.g.dtype(), c.g.device());
  call(Op::index_put_, z, c.arg(1), c.g, true);
  c.out[0] = z;
}
// index_put_: self's gradient is g with the positions written zeroed (g
// itself when they were added to); values' is g at those positions, which
// the engine sums down to values' shape where values were broadcast.
void index_put_backward(BackwardContext& c) {
  if (c.needs(0)) {
    const bool accumulate = c.arg(3).to_bool();
    c.out[0] = accumulate
                   ? c.g
                   : call(Op::index_put_, call(Op::clone, c.g), c.arg(1), zeros({}, c.g.dtype(), c.g.device()), false);
  }
  if (c.needs(1)) c.out[1] = call(Op::index, c.g, c.arg(1));
}
// cat: each input's gradient is its slice of g along dim (PyTorch's
// cat_tensors_backward); a skipped 1-D tensor of size 0 (Note [cat's checks],
// copy_kernels.cpp) gets zeros of its shape. Nothing is saved but the sizes.
void cat_backward(BackwardContext& c) {
  auto skipped = [&](int k) { return c.sizes(k).size() == 1 && c.sizes(k)[0] == 0; };
  int first = 0;
  while (first < c.num_inputs() && skipped(first)) ++first;
  if (first == c.num_inputs()) {  // every input was skipped: each gets its empty gradient
    for (int k = 0; k < c.num_inputs(); ++k)
      if (c.needs(k)) c.out[k] = zeros(c.sizes(k), c.g.dtype(), c.g.device());
    return;
  }
  const int64_t d = wrap_dim(c.arg(1).to_int(), c.sizes(first).size(), "cat");
  int64_t at = 0;
  for (int k = 0; k < c.num_inputs(); ++k) {
    if (skipped(k)) {
      if (c.needs(k)) c.out[k] = zeros(c.sizes(k), c.g.dtype(), c.g.device());
      continue;
    }
    const int64_t size = c.sizes(k)[int(d)];
    if (c.needs(k)) c.out[k] = call(Op::slice, c.g, d, at, at + size, int64_t{1});
    at += size;
  }
}
void unsqueeze_backward(BackwardContext& c) { c.out[0] = call(Op::reshape, c.g, c.sizes(0)); }
// Note [A cast to an integer dtype records no graph]
// ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
// Only floating tensors have gradients. x.long(), x.to(torch.int32) and
// x.bool() of an x that requires grad give a result that does not (no
// grad_fn, requires_grad False), and a backward through it fails with
// "element 0 of tensors does not require grad and does not have a grad_fn".
// derivatives.yaml says so for _to_copy with the condition
// `!dtype || isDifferentiableType(*dtype)`, and the Autograd kernel reads it
// before it records anything (variable_type.cpp); a cast that keeps the
// dtype (dtype None: a copy to another device) is differentiable.
bool to_differentiable_dtype(const Stack& args) { return args[1].is_none() || is_floating(args[1].to_scalar_type()); }
void identity_backward(BackwardContext& c) { c.out[0] = c.g; }  // clone; _to_copy (the engine casts back)
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
// Note [Ops whose results have no gradient]
// ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
// argmax, argmin, all, any and multinomial give int64 or bool results, and floor_divide
// is in gen_variable_type.py's DONT_REQUIRE_DERIVATIVE: aten records no
// node for them, whatever their inputs (x // 2 of an x that requires grad
// does not). They sit in the table below with a condition that is never
// true, so their Autograd kernel runs them below autograd and records
// nothing (the span says "none: the result's dtype has no gradients"); the
// node name is never shown.
bool never_differentiable(const Stack&) { return false; }
void no_backward(BackwardContext&) {}
void copy_backward(BackwardContext& c) {  // self is overwritten: no gradient reaches its old value
  if (c.needs(0)) c.out[0] = zeros(c.sizes(0), c.dtype(0), c.device(0));
  if (c.needs(1)) c.out[1] = c.g;
}
void overwrite_backward(BackwardContext& c) { c.out[0] = zeros(c.sizes(0), c.dtype(0), c.device(0)); }  // fill_, zero_
void fill_tensor_backward(BackwardContext& c) {  // fill_.Tensor: value reached every element of self
  if (c.needs(0)) c.out[0] = zeros(c.sizes(0), c.dtype(0), c.device(0));
  if (c.needs(1)) c.out[1] = call(Op::sum, c.g, IValue());
}

// [SECTION] The formulas of torch.nn's ops (nn_kernels.cpp) ----------------------------------------

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
}  // namespace

// [SECTION] The table ------------------------------------------------------------------

namespace {
constexpr uint8_t kNone = 0;
constexpr Derivative kDerivatives[] = {
    // op               node                      input 0's grad reads, input 1's, 2's   formula
    {Op::add, "AddBackward0", {kNone, kNone}, add_backward},
    {Op::sub, "SubBackward0", {kNone, kNone}, sub_backward},
    {Op::mul, "MulBackward0", {kOther, kSelf}, mul_backward},
    {Op::div, "DivBackward0", {kOther, kSelf | kOther}, div_backward},
    {Op::pow_scalar, "PowBackward0", {kSelf, kNone}, pow_scalar_backward},
    {Op::pow, "PowBackward1", {kSelf | kOther, kSelf | kResult}, pow_backward},
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
    {Op::clamp, "ClampBackward1", {kSelf, kNone}, clamp_backward},
    {Op::clamp_min, "ClampMinBackward0", {kSelf, kNone}, clamp_backward},
    {Op::clamp_max, "ClampMaxBackward0", {kSelf, kNone}, clamp_backward},
    {Op::sum, "SumBackward0", {kNone, kNone}, sum_backward},
    {Op::sum_dim, "SumBackward1", {kNone, kNone}, sum_dim_backward},
    {Op::mean, "MeanBackward0", {kNone, kNone}, mean_backward},
    {Op::mean_dim, "MeanBackward1", {kNone, kNone}, mean_dim_backward},
    {Op::max, "MaxBackward1", {kSelf | kResult, kNone}, max_backward},
    {Op::max_dim, "MaxBackward0", {kResult1, kNone}, max_dim_backward},
    {Op::mse_loss, "MseLossBackward0", {kSelf | kOther, kSelf | kOther}, mse_loss_backward},
    {Op::mm, "MmBackward0", {kOther, kSelf}, mm_backward},
    {Op::addmm, "AddmmBackward0", {kNone, kInput2, kOther}, addmm_backward},
    {Op::bmm, "BmmBackward0", {kOther, kSelf}, bmm_backward},
    {Op::dot, "DotBackward0", {kOther, kSelf}, dot_backward},
    {Op::mv, "MvBackward0", {kOther, kSelf}, mv_backward},
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
    {Op::alias, "AliasBackward0", {kNone, kNone}, identity_backward},
    {Op::clone, "CloneBackward0", {kNone, kNone}, identity_backward},
    {Op::_to_copy, "ToCopyBackward0", {kNone, kNone}, identity_backward, to_differentiable_dtype},
    {Op::cat, "CatBackward0", {kNone, kNone}, cat_backward},
    {Op::index, "IndexBackward0", {kNone, kNone}, index_backward},
    {Op::index_put_, "IndexPutBackward0", {kNone, kNone}, index_put_backward},
    // In place: the same nodes as the out-of-place ops (PyTorch names them
    // alike); kSelf is a copy of self taken before the op wrote into it.
    {Op::add_, "AddBackward0", {kNone, kNone}, add_backward},
    {Op::sub_, "SubBackward0", {kNone, kNone}, sub_backward},
    {Op::mul_, "MulBackward0", {kOther, kSelf}, mul_backward},
    {Op::div_, "DivBackward0", {kOther, kSelf | kOther}, div_backward},
    {Op::copy_, "CopyBackwards", {kNone, kNone}, copy_backward},
    {Op::fill_, "FillBackward0", {kNone, kNone}, overwrite_backward},
    {Op::fill_tensor_, "FillBackward1", {kNone, kNone}, fill_tensor_backward},
    {Op::zero_, "ZeroBackward0", {kNone, kNone}, overwrite_backward},
    {Op::uniform_, "UniformBackward0", {kNone, kNone}, overwrite_backward},
    {Op::normal_, "NormalBackward0", {kNone, kNone}, overwrite_backward},
    {Op::log10, "Log10Backward0", {kSelf, kNone}, log10_backward},
    {Op::log2, "Log2Backward0", {kSelf, kNone}, log2_backward},
    {Op::where, "WhereBackward0", {kNone, kSelf, kSelf}, where_backward},
    {Op::masked_fill, "MaskedFillBackward0", {kOther, kNone}, masked_fill_backward},
    {Op::tril, "TrilBackward0", {kNone, kNone}, tril_backward},
    {Op::triu, "TriuBackward0", {kNone, kNone}, tril_backward},
    {Op::clamp_, "ClampBackward1", {kSelf, kNone}, clamp_backward},
    {Op::random_from_, "RandomBackward0", {kNone, kNone}, overwrite_backward},
    {Op::sort, "SortBackward0", {kResult1, kNone}, sort_backward},
    {Op::topk, "TopkBackward0", {kResult1, kNone}, sort_backward},
    {Op::unfold, "UnfoldBackward0", {kNone, kNone}, unfold_backward},
    {Op::as_strided, "AsStridedBackward0", {kNone, kNone}, as_strided_backward},
    // Note [Ops whose results have no gradient]
    {Op::multinomial, "(no gradient)", {kNone, kNone}, no_backward, never_differentiable},
    {Op::floor_divide, "(no gradient)", {kNone, kNone}, no_backward, never_differentiable},
    {Op::argmax, "(no gradient)", {kNone, kNone}, no_backward, never_differentiable},
    {Op::argmin, "(no gradient)", {kNone, kNone}, no_backward, never_differentiable},
    {Op::all, "(no gradient)", {kNone, kNone}, no_backward, never_differentiable},
    {Op::all_dim, "(no gradient)", {kNone, kNone}, no_backward, never_differentiable},
    {Op::any, "(no gradient)", {kNone, kNone}, no_backward, never_differentiable},
    {Op::any_dim, "(no gradient)", {kNone, kNone}, no_backward, never_differentiable},
    // torch.nn's ops (nn_kernels.cpp): PyTorch's node names.
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
};
}  // namespace

const Derivative* derivative_of(Op op) {
  static const auto by_op = [] {
    std::array<const Derivative*, kNumOps> t{};
    for (const Derivative& d : kDerivatives) t[int(d.op)] = &d;
    return t;
  }();
  return by_op[int(op)];
}

// [SECTION] The node that runs a formula ---------------------------------------------

FormulaNode::FormulaNode(const Derivative& d, const OpEntry& e) : Node(d.node), derivative(d), op(e) {}

TensorList FormulaNode::apply(TensorList&& grads) {
  BackwardContext c{*this, grads.empty() ? Tensor() : std::move(grads[0]), TensorList(next_edges.size())};
  if (!c.g.defined())
    c.g = zeros(inputs[0].sizes, inputs[0].dtype, inputs[0].device);  // no gradient reached this result
  derivative.formula(c);
  TensorList out(next_edges.size());
  for (size_t k = 0; k < out.size(); ++k)
    if (next_edges[k].valid()) out[k] = std::move(c.out[k]);
  return out;
}

void FormulaNode::release_saved_variables() {
  for (SavedVariable& v : inputs_saved)
    if (v.defined()) v.reset();
  for (SavedVariable* v : {&result, &result1})
    if (v->defined()) v->reset();
}

// The saved values by the names the schema gives them: "self, other" for
// mul, "mat1, mat2" for addmm (PyTorch's _saved_mat1, _saved_mat2).
std::string FormulaNode::saved_names() const {
  std::string s;
  auto add = [&](const SavedVariable& v, const char* n) {
    if (v.defined()) s += (s.empty() ? "" : ", ") + std::string(n);
  };
  for (int k = 0; k < kSavedInputs && k < int(input_names.size()); ++k) add(inputs_saved[k], input_names[size_t(k)]);
  add(result, "result");
  add(result1, "indices");
  return s;
}

// A value the formula may read but this node did not save (the input's
// gradient was not needed: `x * w` with only x requiring grad saves w, not
// x) reads as None, as PyTorch's generated attributes do; a name the
// formula never reads is no attribute.
bool FormulaNode::saved_value(std::string_view name, Tensor& out) {
  uint8_t may = 0;
  for (uint8_t bits : derivative.saves_for) may |= bits;
  SavedVariable* v = nullptr;
  uint8_t bit = 0;
  if (name == "result") v = &result, bit = kResult;
  if (name == "indices") v = &result1, bit = kResult1;
  for (int k = 0; !v && k < kSavedInputs && k < int(input_names.size()); ++k)
    if (name == input_names[size_t(k)]) v = &inputs_saved[k], bit = uint8_t(1u << k);
  if (!v || !(may & bit)) return false;
  out = v->defined() ? v->unpack(this) : Tensor();
  return true;
}

}  // namespace descent::autograd
