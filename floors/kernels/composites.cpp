// Composite kernels: ops that decompose into other ops, each called through
// the dispatcher, so the trace shows the decomposition.
//
// [SECTION] matmul
// [SECTION] Copies: contiguous and to
// [SECTION] item
// [SECTION] reshape and flatten
// [SECTION] linear
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
  kernels::register_nn_composites(m);
}

}  // namespace descent
