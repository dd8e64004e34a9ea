// Floor 4: the derivatives of the ops that copy or write elements
// (Note [One derivative per op], derivatives.cpp): alias, clone, _to_copy, cat,
// index and index_put_, and the in-place writes copy_, fill_, zero_ and the
// random fills, which no gradient crosses to the old values.
#include "floors/autograd/formulas.h"

namespace descent::autograd {
namespace {

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
void identity_backward(BackwardContext& c) { c.out[0] = c.g; }  // alias, clone; _to_copy (the engine casts back)
void copy_backward(BackwardContext& c) {  // self is overwritten: no gradient reaches its old value
  if (c.needs(0)) c.out[0] = zeros(c.sizes(0), c.dtype(0), c.device(0));
  if (c.needs(1)) c.out[1] = c.g;
}
void overwrite_backward(BackwardContext& c) { c.out[0] = zeros(c.sizes(0), c.dtype(0), c.device(0)); }  // fill_, zero_
void fill_tensor_backward(BackwardContext& c) {  // fill_.Tensor: value reached every element of self
  if (c.needs(0)) c.out[0] = zeros(c.sizes(0), c.dtype(0), c.device(0));
  if (c.needs(1)) c.out[1] = call(Op::sum, c.g, IValue());
}

// The rows (formulas.h says how a row reads).
constexpr Derivative kRows[] = {
    {Op::alias, "AliasBackward0", {kNone, kNone}, identity_backward},
    {Op::clone, "CloneBackward0", {kNone, kNone}, identity_backward},
    {Op::_to_copy, "ToCopyBackward0", {kNone, kNone}, identity_backward, to_differentiable_dtype},
    {Op::cat, "CatBackward0", {kNone, kNone}, cat_backward},
    {Op::index, "IndexBackward0", {kNone, kNone}, index_backward},
    {Op::index_put_, "IndexPutBackward0", {kNone, kNone}, index_put_backward},
    {Op::copy_, "CopyBackwards", {kNone, kNone}, copy_backward},
    {Op::fill_, "FillBackward0", {kNone, kNone}, overwrite_backward},
    {Op::fill_tensor_, "FillBackward1", {kNone, kNone}, fill_tensor_backward},
    {Op::zero_, "ZeroBackward0", {kNone, kNone}, overwrite_backward},
    {Op::uniform_, "UniformBackward0", {kNone, kNone}, overwrite_backward},
    {Op::normal_, "NormalBackward0", {kNone, kNone}, overwrite_backward},
    {Op::random_from_, "RandomBackward0", {kNone, kNone}, overwrite_backward},
};

}  // namespace

std::span<const Derivative> copy_derivatives() { return kRows; }

}  // namespace descent::autograd
