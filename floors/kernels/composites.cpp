// Composite kernels: ops that decompose into other ops, each called through
// the dispatcher, so the trace shows the decomposition.
//
// [SECTION] matmul
// [SECTION] Copies: contiguous and to
// [SECTION] item
// [SECTION] reshape and flatten
// [SECTION] linear
// [SECTION] Factories like a tensor: empty_like, zeros_like, ..., new_zeros, eye
// [SECTION] narrow, stack and clip
// [SECTION] var and std
// [SECTION] where with numbers, clamp with tensors, isclose, vector_norm
// [SECTION] Registration
//
// Note [Composite ops decompose]
// ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
// native_functions.yaml gives an op one of three kinds of kernel:
//   - backend kernels (dispatch: CPU, CUDA, ...), which do the work;
//   - CompositeExplicitAutograd: one kernel for every backend, made of other
//     ops, registered at every backend's Dense key but NOT at the Autograd
//     keys, so the op needs a derivative of its own (a backward formula in
//     derivatives.yaml): autograd records one node for the whole op;
//   - CompositeImplicitAutograd (the default when an op has no dispatch
//     entry): a decomposition registered at the Dense keys AND the Autograd
//     keys. The call runs it at AutogradCPU, above autograd, so every op it
//     calls goes through autograd itself: the op needs no derivative, its
//     gradient comes from its parts.
// matmul, contiguous, to, reshape, flatten and linear are
// CompositeImplicitAutograd in PyTorch and here. That is why `x @ w` on 2-D
// tensors has grad_fn
// MmBackward0, not a MatmulBackward (PyTorch's own facts,
// shared/fixtures/pytorch-h200/facts.json: "x@w": "MmBackward0(...)"),
// x.reshape(12) of a contiguous x is ViewBackward0, and x.contiguous() of a
// contiguous x has no grad_fn at all (it returns x). The trace shows the
// same: the aten::matmul dispatch span (kernel AutogradCPU, the composite's
// slot, as in c10's dispatch table) holds an aten::mm dispatch span, which
// runs mm's CPU kernel. A composite opens no kernel span of its own: it runs
// no loop, only calls.
//
// The decompositions are PyTorch's (at::native::matmul, contiguous, to,
// reshape, flatten, linear), with these simplifications:
//   - matmul's 1-D @ 2-D removes the unsqueezed dim with _unsafe_view, where
//     PyTorch calls squeeze_(0) on mm's output: descent has no squeeze, and
//     either way the result is no view (so linear of a 1-D input without a
//     bias ends in UnsafeViewBackward0 where PyTorch's ends in SqueezeBackward4);
//   - matmul folds a >= 3-D self @ a 1-D or 2-D other into one mv or mm, as
//     PyTorch does; every other batched case expands, reshapes to 3-D and
//     calls bmm (PyTorch also folds 1-D/2-D @ >= 3-D by transposing, when
//     gradients allow; descent does not);
//   - reshape's copy, matmul's fold and its batched case end, as PyTorch's,
//     with _unsafe_view: a view of a fresh copy (the clone, mm's or bmm's
//     output) that records no view base, so the result is no view
//     (x.T.reshape(24)._base is None, as in torch).
//
// Note [matmul names the shapes it was given]
// ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
// A message different from PyTorch's on purpose. When one operand is 1-D and
// the other is not, PyTorch's matmul reports the mismatch from inside the op
// it decomposed into, in shapes the user never wrote: ones(3) @ ones(4, 5)
// says "mat1 and mat2 shapes cannot be multiplied (1x3 and 4x5)" (mm after
// an unsqueeze), ones(2, 3, 4) @ ones(3) says "size mismatch, got input (6),
// mat (6x4), vec (3)" (mv after the fold). descent checks the contracted
// sizes first and names the operands as given: "matmul(): shapes [3] and
// [4, 5] cannot be multiplied (3 != 4)". The class is PyTorch's,
// RuntimeError. 1-D @ 1-D (dot's message names both lengths) and the 2-D
// and batched cases (mm's and bmm's name the matrices) keep PyTorch's text.
#include <algorithm>
#include <cmath>

#include "floors/kernels/kernels.h"

namespace descent::kernels {

namespace {

// A composite that returns its argument unchanged (as PyTorch's, the very
// same tensor); no loop ran, which the verifier reads in last_variant().
void returns_self(Stack& s) {
  last_variant() = "none";
  s.set_result(Tensor(s[0].to_tensor()));
}

// Runs the view op that shapes a composite's result without changing
// last_variant(): the composite reports the loop it ran (mm's, clone's),
// as the one kernel it replaces did, not the view after it.
template <typename F>
Tensor shaping(F&& view) {
  const char* ran = last_variant();
  Tensor t = view();
  last_variant() = ran;
  return t;
}

// [SECTION] matmul ----------------------------------------------------------------

// at::native::matmul: by the operands' dims, dot, mv, mm, or bmm over the
// broadcast batch dims.
Tensor matmul(const Tensor& a, const Tensor& b) {
  const int da = a.dim(), db = b.dim();
  DESCENT_CHECK(da >= 1 && db >= 1, Error, "both arguments to matmul need to be at least 1D, but they are ", da,
                "D and ", db, "D");
  if (da + db > 2 && (da == 1 || db == 1)) {  // Note [matmul names the shapes it was given]
    const int64_t k1 = a.sizes()[da - 1], k2 = db == 1 ? b.sizes()[0] : b.sizes()[db - 2];
    DESCENT_CHECK(k1 == k2, Error, "matmul(): shapes ", a.shape_str(), " and ", b.shape_str(),
                  " cannot be multiplied (", k1, " != ", k2, ")");
  }
  if (da == 1 && db == 1) return call(Op::dot, a, b);
  if (da == 2 && db == 1) return call(Op::mv, a, b);
  if (da == 1 && db == 2) {
    Tensor row = call(Op::mm, call(Op::unsqueeze, a, 0), b);
    return shaping([&] { return call(Op::_unsafe_view, row, DimVector{b.sizes()[1]}); });
  }
  if (da == 2 && db == 2) return call(Op::mm, a, b);
  if (da >= 3 && db <= 2) {
    // Fold self's batch dims into its rows: [..., M, K] as [(... M), K], one mv or mm.
    DimVector out_shape;
    for (int d = 0; d < da - 1; ++d) out_shape.push_back(a.sizes()[d]);
    Tensor folded = call(Op::reshape, a, DimVector{numel_of(out_shape), a.sizes()[da - 1]});
    if (db == 2) out_shape.push_back(b.sizes()[1]);
    Tensor out = call(db == 2 ? Op::mm : Op::mv, folded, b);
    return shaping([&] { return call(Op::_unsafe_view, out, out_shape); });
  }
  // Batched: broadcast the batch dims, expand both to them, reshape to 3-D, bmm.
  const int64_t n = da > 1 ? a.sizes()[da - 2] : 1, k1 = a.sizes()[da - 1];
  const int64_t k2 = db > 1 ? b.sizes()[db - 2] : b.sizes()[0], p = db > 1 ? b.sizes()[db - 1] : 1;
  DimVector batch_a, batch_b;
  for (int d = 0; d < da - 2; ++d) batch_a.push_back(a.sizes()[d]);
  for (int d = 0; d < db - 2; ++d) batch_b.push_back(b.sizes()[d]);
  const DimVector batch = broadcast_shapes(batch_a, batch_b, "matmul");
  const int64_t batches = numel_of(batch);
  DimVector size_a = batch, size_b = batch, out_shape = batch;
  size_a.push_back(n), size_a.push_back(k1);
  size_b.push_back(k2), size_b.push_back(p);
  if (da > 1) out_shape.push_back(n);
  if (db > 1) out_shape.push_back(p);
  Tensor a3 = call(Op::reshape, call(Op::expand, a, size_a), DimVector{batches, n, k1});
  Tensor b3 = call(Op::reshape, call(Op::expand, b, size_b), DimVector{batches, k2, p});
  Tensor out = call(Op::bmm, a3, b3);
  return shaping([&] { return call(Op::_unsafe_view, out, out_shape); });
}

void matmul_composite(const OpEntry&, DispatchKeySet, Stack& s) {
  s.set_result(matmul(s[0].to_tensor(), s[1].to_tensor()));
}

// [SECTION] Copies: contiguous and to -----------------------------------------------

// at::native::contiguous: self when already contiguous, else a clone.
void contiguous_composite(const OpEntry&, DispatchKeySet, Stack& s) {
  const Tensor& x = s[0].to_tensor();
  if (x.is_contiguous()) return returns_self(s);
  s.set_result(call(Op::clone, x));
}

// at::native::to (to_impl): self when neither dtype nor device changes and
// copy is False, else _to_copy.
void to_composite(const OpEntry&, DispatchKeySet, Stack& s) {
  const Tensor& x = s[0].to_tensor();
  const bool same_dtype = s[1].is_none() || s[1].to_scalar_type() == x.dtype();
  const bool same_device = s[2].is_none() || s[2].to_device() == x.device();
  if (same_dtype && same_device && !s[3].to_bool()) return returns_self(s);
  s.set_result(call(Op::_to_copy, x, s[1], s[2]));
}

// at::native::lift_fresh: self. PyTorch's __setitem__ calls it on the 0-d
// tensor it makes of a Python number (x[0] = 5); here it is the span that
// says so in the trace (Note [x[i] = v as PyTorch writes it], python_indexing.cpp).
void lift_fresh_composite(const OpEntry&, DispatchKeySet, Stack& s) { returns_self(s); }

// [SECTION] item ---------------------------------------------------------------------

// at::native::item: the one element, read by _local_scalar_dense (which,
// for a device tensor, copies it to the host and waits: Note [Reading a
// device tensor waits], floors/binding/device_object.cpp).
void item_composite(const OpEntry&, DispatchKeySet, Stack& s) {
  const Tensor& x = s[0].to_tensor();
  DESCENT_CHECK(x.numel() == 1, Error, "a Tensor with ", x.numel(), " elements cannot be converted to Scalar");
  Stack inner;
  inner.push(x);
  call_boxed(Op::_local_scalar_dense, inner);
  s.set_result(std::move(inner[0]));
}

// [SECTION] reshape and flatten --------------------------------------------------------

// at::native::reshape: a view when strides can express the shape (PyTorch's
// computeStride, view_strides here), else _unsafe_view of a contiguous clone.
Tensor reshape(const char* op, const Tensor& x, const DimVector& shape) {
  const DimVector sizes = infer_size(op, shape, x.numel());
  DimVector strides;
  if (view_strides(x.sizes(), x.strides(), sizes, &strides)) return call(Op::view, x, sizes);
  Tensor copy = call(Op::clone, x);
  return shaping([&] { return call(Op::_unsafe_view, copy, sizes); });
}

void reshape_composite(const OpEntry& op, DispatchKeySet, Stack& s) {
  s.set_result(reshape(op.python_name, s[0].to_tensor(), s[1].to_int_list()));
}

// at::native::flatten (flatten.using_ints): dims start_dim..end_dim as one,
// by reshape's own code, called directly as PyTorch calls native::reshape,
// so the trace shows aten::flatten over aten::view (or aten::clone and
// aten::_unsafe_view) and the gradient is ViewBackward0 (or
// UnsafeViewBackward0 over CloneBackward0): there is no FlattenBackward. A
// 0-d tensor becomes [1]; start_dim == end_dim returns self itself.
void flatten_composite(const OpEntry& op, DispatchKeySet, Stack& s) {
  const Tensor& x = s[0].to_tensor();
  const int start = wrap_dim(s[1].to_int(), x.dim(), op.python_name);
  const int end = wrap_dim(s[2].to_int(), x.dim(), op.python_name);
  DESCENT_CHECK(start <= end, Error, "flatten() has invalid args: start_dim cannot come after end_dim");
  if (x.dim() == 0) return s.set_result(reshape(op.python_name, x, DimVector{1}));
  if (start == end) return returns_self(s);
  DimVector shape;
  int64_t joined = 1;  // the product of the joined sizes, not -1: [0, 1, 3, 0] flattened 1..2 is [0, 3, 0]
  for (int d = 0; d < x.dim(); ++d) {
    if (d < start || d > end)
      shape.push_back(x.sizes()[d]);
    else
      joined *= x.sizes()[d];
    if (d == end) shape.push_back(joined);
  }
  s.set_result(reshape(op.python_name, x, shape));
}

// [SECTION] linear --------------------------------------------------------------------------

// at::native::linear, as PyTorch 2.11 decomposes it:
//   - a 2-D input with a bias: addmm(bias, input, weight.t()), one fused op
//     (AddmmBackward0 with TBackward0 under it);
//   - a contiguous input with a 1-D bias: the same on the input reshaped to
//     2-D, viewed back (ViewBackward0 over AddmmBackward0: _flatten_nd_linear);
//   - otherwise matmul(input, weight.t()), then add_(bias) in place for a
//     bias, whose node is AddBackward0.
// The checks are the ops' own (mm's, addmm's, expand's), after linear's one
// of its own.
void linear_composite(const OpEntry&, DispatchKeySet, Stack& s) {
  const Tensor& input = s[0].to_tensor();
  const Tensor& weight = s[1].to_tensor();
  DESCENT_CHECK(input.dim() != 0 && weight.dim() != 0, Error,
                "both arguments to linear need to be at least 1D, "
                "but they are ",
                input.dim(), "D and ", weight.dim(), "D");
  if (s[2].is_none()) return s.set_result(call(Op::matmul, input, call(Op::t, weight)));
  const Tensor& bias = s[2].to_tensor();
  if (input.dim() == 2) return s.set_result(call(Op::addmm, bias, input, call(Op::t, weight)));
  if (input.is_contiguous() && bias.dim() == 1) {
    DimVector rows_of = input.sizes();
    const int64_t last = rows_of[rows_of.size() - 1];
    rows_of.resize(rows_of.size() - 1);
    const Tensor rows = call(Op::reshape, input, DimVector{numel_of(rows_of), last});
    const Tensor out = call(Op::addmm, bias, rows, call(Op::t, weight));
    rows_of.push_back(out.sizes()[1]);
    return s.set_result(shaping([&] { return call(Op::view, out, rows_of); }));
  }
  Tensor out = call(Op::matmul, input, call(Op::t, weight));
  const char* ran = last_variant();
  call(Op::add_, out, bias);
  last_variant() = ran;
  s.set_result(std::move(out));
}

// [SECTION] Factories like a tensor: empty_like, zeros_like, ..., new_zeros, eye ------------

// Note [Factories like a tensor]
// ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
// aten's *_like ops take the sizes, dtype and device of `self` where their
// arguments leave them out, and are made of other ops (TensorFactories.cpp):
//   - empty_like: empty_strided with self's sizes and strides when self is
//     dense (PyTorch's memory_format=preserve: a transposed self gives a
//     transposed result), else a contiguous empty;
//   - zeros_like: empty_like, then zero_; ones_like and full_like:
//     empty_like, then fill_; rand_like: empty_like, then uniform_(0, 1);
//     randn_like: empty_like, then normal_(0, 1);
//   - new_empty, new_zeros, new_ones and new_full: empty, zeros, ones and
//     full of the size given, self's dtype and device by default;
//   - eye(n, m): empty([n, m]), zero_, and fill_(1) of the diagonal, a view
//     of stride m + 1 (aten's eye_out_cpu, whose as_strided is no op here).
// aten declares them CompositeExplicitAutograd, which gives no node either:
// their results never require grad (derivatives.yaml lists none of them).
// Here they are CompositeImplicitAutograd, so the trace shows their parts
// beneath them, and the schemas drop layout, pin_memory and memory_format
// (Note [Where descent's schemas differ from aten's]).
IValue or_self(const IValue& given, IValue self) { return given.is_none() ? self : given; }

Tensor empty_like(const Tensor& self, const IValue& dtype, const IValue& device) {
  const IValue dt = or_self(dtype, self.dtype()), dev = or_self(device, self.device());
  if (dense(self)) return call(Op::empty_strided, self.sizes(), self.strides(), dt, dev);
  return call(Op::empty, self.sizes(), dt, dev);
}

void empty_like_composite(const OpEntry&, DispatchKeySet, Stack& s) {
  s.set_result(empty_like(s[0].to_tensor(), s[1], s[2]));
}

// zeros_like, ones_like, rand_like, randn_like (self, dtype, device) and
// full_like (self, fill_value, dtype, device): empty_like, then the write.
void like_composite(const OpEntry& op, DispatchKeySet, Stack& s) {
  const bool full = op.id == Op::full_like;
  Tensor out = empty_like(s[0].to_tensor(), s[full ? 2 : 1], s[full ? 3 : 2]);
  switch (op.id) {
    case Op::zeros_like:
      call(Op::zero_, out);
      break;
    case Op::ones_like:
      call(Op::fill_, out, Scalar(int64_t{1}));
      break;
    case Op::full_like:
      call(Op::fill_, out, s[1].to_scalar());
      break;
    case Op::rand_like:
      call(Op::uniform_, out, 0.0, 1.0);
      break;
    default:  // randn_like
      call(Op::normal_, out, 0.0, 1.0);
      break;
  }
  s.set_result(std::move(out));
}

// new_empty, new_zeros, new_ones (self, size, dtype, device) and new_full
// (self, size, fill_value, dtype, device): the factory of the same name.
void new_factory_composite(const OpEntry& op, DispatchKeySet, Stack& s) {
  const Tensor& self = s[0].to_tensor();
  const bool full = op.id == Op::new_full;
  const IValue dt = or_self(s[full ? 3 : 2], self.dtype()), dev = or_self(s[full ? 4 : 3], self.device());
  const DimVector& size = s[1].to_int_list();
  switch (op.id) {
    case Op::new_empty:
      return s.set_result(call(Op::empty, size, dt, dev));
    case Op::new_zeros:
      return s.set_result(call(Op::zeros, size, dt, dev));
    case Op::new_ones:
      return s.set_result(call(Op::ones, size, dt, dev));
    default:
      return s.set_result(call(Op::full, size, s[2].to_scalar(), dt, dev));
  }
}

// randint(high, size), randint.low(low, high, size), randint_like(self,
// high) and randint_like.low_dtype(self, low, high): empty (int64 by default,
// aten's dtype=long) or empty_like, then random_(low, high), as aten's
// randint and randint_like are written.
void randint_composite(const OpEntry& op, DispatchKeySet, Stack& s) {
  if (op.id == Op::randint_like || op.id == Op::randint_like_low) {
    const int k = op.id == Op::randint_like_low ? 1 : 0;
    Tensor out = empty_like(s[0].to_tensor(), s[k + 2], s[k + 3]);
    call(Op::random_from_, out, k ? s[1].to_int() : int64_t{0}, s[k + 1].to_int());
    return s.set_result(std::move(out));
  }
  const bool low = op.id == Op::randint_low;
  const int k = low ? 1 : 0;
  const IValue& dt = s[k + 2];
  Tensor out = call(Op::empty, s[k + 1].to_int_list(), dt.is_none() ? IValue(ScalarType::Int64) : dt, s[k + 3]);
  call(Op::random_from_, out, low ? s[0].to_int() : int64_t{0}, s[k].to_int());
  s.set_result(std::move(out));
}

// eye(n) and eye.m(n, m), as aten's eye_out_cpu writes them.
void eye_composite(const OpEntry& op, DispatchKeySet, Stack& s) {
  const bool square = op.id == Op::eye;
  const int64_t n = s[0].to_int(), m = square ? n : s[1].to_int();
  DESCENT_CHECK(n >= 0, Error, "n must be greater or equal to 0, got ", n);
  DESCENT_CHECK(m >= 0, Error, "m must be greater or equal to 0, got ", m);
  const IValue& dt = s[square ? 1 : 2];
  Tensor out = call(Op::empty, DimVector{n, m}, dt.is_none() ? IValue(kDefaultFloat) : dt, s[square ? 2 : 3]);
  call(Op::zero_, out);
  const int64_t k = std::min(n, m);
  if (k > 0) call(Op::fill_, out.as_strided(DimVector{k}, DimVector{m + 1}, out.offset()), Scalar(int64_t{1}));
  s.set_result(std::move(out));
}

// [SECTION] narrow, stack and clip -------------------------------------------------------

// at::native::narrow: slice(self, dim, start, start + length), after its checks.
void narrow_composite(const OpEntry&, DispatchKeySet, Stack& s) {
  const Tensor& x = s[0].to_tensor();
  DESCENT_CHECK(x.dim() > 0, Error, "narrow() cannot be applied to a 0-dim tensor.");
  const int64_t length = s[3].to_int();
  DESCENT_CHECK(length >= 0, Error, "narrow(): length must be non-negative.");
  const int d = wrap_dim(s[1].to_int(), x.dim(), "narrow");
  const int64_t size = x.sizes()[d];
  int64_t start = s[2].to_int();
  DESCENT_CHECK(-size <= start && start <= size, IndexError, "start out of range (expected to be in range of [", -size,
                ", ", size, "], but got ", start, ")");
  if (start < 0) start += size;
  DESCENT_CHECK(start <= size - length, Error, "start (", start, ") + length (", length, ") exceeds dimension size (",
                size, ").");
  s.set_result(call(Op::slice, x, int64_t{d}, start, start + length, int64_t{1}));
}

// Note [stack is unsqueeze and cat]
// ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
// at::native::stack checks that every tensor has the first one's sizes,
// unsqueezes each at dim and cats them. aten declares it
// CompositeExplicitAutograd, with a node of its own (StackBackward0, whose
// gradients are unbind(grad, dim)); here it is CompositeImplicitAutograd,
// so its gradient comes from its parts: CatBackward0 over one
// UnsqueezeBackward0 a tensor. The values and the gradients are the same.
void stack_composite(const OpEntry&, DispatchKeySet, Stack& s) {
  const OptionalTensorList& in = s[0].to_tensor_list();
  DESCENT_CHECK(in.size() > 0, Error, "stack expects a non-empty TensorList");
  const int d = wrap_dim(s[1].to_int(), in[0].dim() + 1, "stack");
  OptionalTensorList parts;
  for (int i = 0; i < int(in.size()); ++i) {
    DESCENT_CHECK(in[i].sizes() == in[0].sizes(), Error, "stack expects each tensor to be equal size, but got ",
                  in[0].shape_str(), " at entry 0 and ", in[i].shape_str(), " at entry ", i);
    parts.push_back(call(Op::unsqueeze, in[i], int64_t{d}));
  }
  s.set_result(call(Op::cat, parts, int64_t{d}));
}

// aten::clip is clamp by another name (numpy's), as in aten.
void clip_composite(const OpEntry&, DispatchKeySet, Stack& s) { s.set_result(call(Op::clamp, s[0], s[1], s[2])); }

// [SECTION] var and std -------------------------------------------------------------------

// Note [var and std decompose]
// ~~~~~~~~~~~~~~~~~~~~~~~~~~~~
// aten computes var and std in one kernel (Welford's running mean and sum
// of squares, std_var_kernel) and records VarBackward0 or StdBackward0.
// descent writes them from ops it has, so the trace shows the arithmetic:
// mean over the dims (keepdim), self minus it, squared, summed, divided by
// max(0, N - correction) (N the elements reduced; correction 1 by default,
// Bessel's, 0 for unbiased=False), and sqrt of that for std. The two-pass
// sum is as accurate as Welford's (its error is within the summation bound
// of the sum beneath it); the gradient comes from the parts (DivBackward0
// over SumBackward1, MulBackward0, SubBackward0, MeanBackward1) and has
// var_backward's values, 2 (x - mean) g / (N - correction). Integer and
// bool inputs are refused with aten's message. N - correction <= 0 divides
// by zero, as aten does (inf or nan; aten also warns).
Tensor var_of(const char* op, const Tensor& x, const IValue& dims, double correction, bool keepdim, bool sqrt) {
  DESCENT_CHECK(is_floating(x.dtype()), Error, "std and var only support floating point and complex dtypes");
  DimVector reduced;
  if (dims.is_none() || dims.to_int_list().empty()) {
    for (int d = 0; d < x.dim(); ++d) reduced.push_back(d);
  } else {
    for (int64_t d : dims.to_int_list()) reduced.push_back(wrap_dim(d, x.dim(), op));
  }
  int64_t n = 1;
  for (int64_t d : reduced) n *= x.dim() ? x.sizes()[int(d)] : 1;
  const IValue none;
  const Tensor mean = call(Op::mean_dim, x, reduced, true, none);
  const Tensor diff = call(Op::sub, x, mean, Scalar(int64_t{1}));
  const Tensor sum = call(Op::sum_dim, call(Op::mul, diff, diff), reduced, keepdim, none);
  const Tensor var = call(Op::div, sum, scalar_tensor(Scalar(std::max(0.0, double(n) - correction))));
  return sqrt ? call(Op::sqrt, var) : var;
}

// var/std(self, unbiased), var/std.dim(self, dim, unbiased, keepdim) and
// var/std.correction(self, dim, correction, keepdim).
void var_composite(const OpEntry& op, DispatchKeySet, Stack& s) {
  const bool sqrt = op.id == Op::std_unbiased || op.id == Op::std_dim || op.id == Op::std_correction;
  const Tensor& x = s[0].to_tensor();
  if (op.id == Op::var_unbiased || op.id == Op::std_unbiased)
    return s.set_result(var_of(op.python_name, x, IValue(), s[1].to_bool() ? 1 : 0, false, sqrt));
  if (op.id == Op::var_dim || op.id == Op::std_dim)
    return s.set_result(var_of(op.python_name, x, s[1], s[2].to_bool() ? 1 : 0, s[3].to_bool(), sqrt));
  const double correction = s[2].is_none() ? 1.0 : s[2].to_scalar().to_double();
  s.set_result(var_of(op.python_name, x, s[1], correction, s[3].to_bool(), sqrt));
}

// [SECTION] where with numbers, clamp with tensors, isclose, vector_norm ----------------

// where.ScalarOther, where.ScalarSelf and where.Scalar: where.self with the
// numbers as 0-d wrapped numbers, so they promote as a Python number does
// (aten wraps them alike: wrapped_scalar_tensor).
void where_scalar_composite(const OpEntry&, DispatchKeySet, Stack& s) {
  auto operand = [&](int i) { return s[i].is_tensor() ? s[i].to_tensor() : scalar_tensor(s[i].to_scalar()); };
  s.set_result(call(Op::where, s[0], operand(1), operand(2)));
}

// Note [clamp with tensor bounds]
// ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
// aten's clamp.Tensor is one structured kernel (ClampBackward0, whose
// gradient passes where min <= self <= max). descent writes it with where:
// where(self < min, min, self), then where(r > max, max, r), all three
// broadcast and promoted as aten does; a bound left None is no condition.
// The values are aten's for every finite bound (min > max gives max, a NaN
// self stays NaN); a NaN bound is not propagated (aten gives NaN). The
// gradient comes from the parts: self's is g where neither bound replaced
// it, and each bound gets g where it was chosen.
void clamp_tensor_composite(const OpEntry&, DispatchKeySet, Stack& s) {
  Tensor r = s[0].to_tensor();
  DESCENT_CHECK(!(s[1].is_none() && s[2].is_none()), Error,
                "torch.clamp: At least one of 'min' or 'max' must not be None");
  if (!s[1].is_none()) r = call(Op::where, call(Op::lt, r, s[1]), s[1], r);
  if (!s[2].is_none()) r = call(Op::where, call(Op::gt, r, s[2]), s[2], r);
  s.set_result(std::move(r));
}

// at::native::isclose: self == other, or |self - other| <= atol + rtol *
// |other| where that error is finite; with equal_nan also where both are
// NaN. bool or and and are add and mul of bool tensors here (aten's |= and
// &=); isfinite(error) is error != inf, a NaN error failing the <= anyway.
void isclose_composite(const OpEntry&, DispatchKeySet, Stack& s) {
  const Tensor& a = s[0].to_tensor();
  const Tensor& b = s[1].to_tensor();
  const double rtol = s[2].to_double(), atol = s[3].to_double();
  const bool equal_nan = s[4].to_bool();
  DESCENT_CHECK(a.dtype() == b.dtype(), Error, type_word(a.dtype()), " did not match ", type_word(b.dtype()));
  DESCENT_CHECK(rtol >= 0, Error, "rtol must be greater than or equal to zero, but got ", rtol);
  DESCENT_CHECK(atol >= 0, Error, "atol must be greater than or equal to zero, but got ", atol);
  Tensor close = call(Op::eq, a, b);
  if (equal_nan && is_floating(a.dtype()))
    close = call(Op::add, close, call(Op::mul, call(Op::ne, a, a), call(Op::ne, b, b)), Scalar(int64_t{1}));
  if (rtol == 0 && atol == 0) return s.set_result(std::move(close));
  const Tensor fa = a.dtype() == ScalarType::Bool ? call(Op::_to_copy, a, kDefaultFloat, IValue()) : a;
  const Tensor fb = b.dtype() == ScalarType::Bool ? call(Op::_to_copy, b, kDefaultFloat, IValue()) : b;
  const Tensor allowed = call(Op::add, call(Op::abs, call(Op::mul, fb, scalar_tensor(Scalar(rtol)))),
                              scalar_tensor(Scalar(atol)), Scalar(int64_t{1}));
  const Tensor actual = call(Op::abs, call(Op::sub, fa, fb, Scalar(int64_t{1})));
  const Tensor within =
      call(Op::mul, call(Op::ne, actual, scalar_tensor(Scalar(INFINITY))), call(Op::le, actual, allowed));
  s.set_result(call(Op::add, close, within, Scalar(int64_t{1})));
}

// Note [vector_norm decomposes]
// ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
// aten's linalg_vector_norm is one reduction kernel (LinalgVectorNormBackward0).
// descent writes it from ops it has, by ord: 2 is sqrt(sum(x * x)), 1
// sum(abs(x)), inf max(abs(x)) (amax; max of everything or max.dim for one
// dim), 0 the count of nonzeros, any other p sum(abs(x) ** p) ** (1 / p).
// torch.norm and Tensor.norm call it for a number p, as torch/functional.py
// does. The gradient comes from the parts; at a vector of zeros ord 2 gives
// NaN (sqrt's derivative at 0 times 0), where aten's formula gives 0.
void vector_norm_composite(const OpEntry&, DispatchKeySet, Stack& s) {
  Tensor x = s[0].to_tensor();
  DESCENT_CHECK(is_floating(x.dtype()), Error,
                "linalg.vector_norm: Expected a floating point or complex tensor as input. Got ", type_word(x.dtype()));
  if (!s[4].is_none()) x = call(Op::_to_copy, x, s[4], IValue());
  const double ord = s[1].to_scalar().to_double();
  const IValue& dim = s[2];
  const bool keepdim = s[3].to_bool();
  const IValue none;
  auto total = [&](const Tensor& t) {
    return dim.is_none() && !keepdim ? call(Op::sum, t, none) : call(Op::sum_dim, t, dim, keepdim, none);
  };
  if (ord == 2) return s.set_result(call(Op::sqrt, total(call(Op::mul, x, x))));
  const Tensor a = call(Op::abs, x);
  if (ord == 1) return s.set_result(total(a));
  if (std::isinf(ord)) {
    DESCENT_CHECK(ord > 0, Error,
                  "linalg.vector_norm: ord=-inf is not supported by descent (only 0, 1, 2, inf, p > 0)");
    const bool one_dim = !dim.is_none() && dim.to_int_list().size() == 1;
    DESCENT_CHECK(dim.is_none() || one_dim, Error,
                  "linalg.vector_norm: ord=inf over several dims is not supported by descent");
    if (!one_dim) return s.set_result(call(Op::max, a));
    Stack m;
    m.push(a), m.push(dim.to_int_list()[0]), m.push(keepdim);
    call_boxed(Op::max_dim, m);
    return s.set_result(std::move(m[0]));
  }
  if (ord == 0)
    return s.set_result(total(call(Op::_to_copy, call(Op::ne, x, scalar_tensor(Scalar(0.0))), x.dtype(), none)));
  DESCENT_CHECK(ord > 0, Error, "linalg.vector_norm: a negative ord is not supported by descent");
  s.set_result(call(Op::pow_scalar, total(call(Op::pow_scalar, a, Scalar(ord))), Scalar(1.0 / ord)));
}

}  // namespace

}  // namespace descent::kernels

namespace descent {

namespace kernels {
void register_nn_composites(Library& m);  // nn_kernels.cpp: softmax, cross_entropy_loss, layer_norm, ...
}  // namespace kernels

// [SECTION] Registration -------------------------------------------------------------

// `m` is the CompositeImplicitAutograd library (register_kernels, libraries.cpp):
// each kernel lands at every Dense and Autograd key (alias_runtime_keys).
void register_composite_kernels(Library& m) {
  m.impl(Op::matmul, kernels::matmul_composite);
  m.impl(Op::contiguous, kernels::contiguous_composite);
  m.impl(Op::to, kernels::to_composite);
  m.impl(Op::lift_fresh, kernels::lift_fresh_composite);
  m.impl(Op::item, kernels::item_composite);
  m.impl(Op::reshape, kernels::reshape_composite);
  m.impl(Op::flatten, kernels::flatten_composite);
  m.impl(Op::linear, kernels::linear_composite);
  m.impl(Op::empty_like, kernels::empty_like_composite);
  for (Op op : {Op::zeros_like, Op::ones_like, Op::full_like, Op::rand_like, Op::randn_like})
    m.impl(op, kernels::like_composite);
  for (Op op : {Op::new_empty, Op::new_zeros, Op::new_ones, Op::new_full}) m.impl(op, kernels::new_factory_composite);
  m.impl(Op::eye, kernels::eye_composite);
  m.impl(Op::eye_m, kernels::eye_composite);
  m.impl(Op::narrow, kernels::narrow_composite);
  m.impl(Op::stack, kernels::stack_composite);
  m.impl(Op::clip, kernels::clip_composite);
  for (Op op : {Op::randint, Op::randint_low, Op::randint_like, Op::randint_like_low})
    m.impl(op, kernels::randint_composite);
  for (Op op : {Op::where_scalar_other, Op::where_scalar_self, Op::where_scalar})
    m.impl(op, kernels::where_scalar_composite);
  m.impl(Op::clamp_tensor, kernels::clamp_tensor_composite);
  m.impl(Op::isclose, kernels::isclose_composite);
  m.impl(Op::linalg_vector_norm, kernels::vector_norm_composite);
  for (Op op : {Op::var_unbiased, Op::var_dim, Op::var_correction, Op::std_unbiased, Op::std_dim, Op::std_correction})
    m.impl(op, kernels::var_composite);
  kernels::register_nn_composites(m);
}

}  // namespace descent
