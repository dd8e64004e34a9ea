// The layout of an elementwise op's fresh output: which strides it gets.
//
// Note [Output strides follow the inputs]
// ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
// An elementwise op (unary, binary, comparison, clamp, mse_loss without a
// reduction) allocates its result in the memory order of its inputs, as
// PyTorch's TensorIterator does (TensorIteratorBase::fast_set_up, then
// compute_strides, reorder_dimensions and allocate_or_resize_outputs in
// aten/src/ATen/TensorIterator.cpp). For x of shape (3, 2):
//   x.t().exp().stride()  is (1, 2), not (1, 3): x.t()'s own layout;
//   (x.t() + 1).stride()  is (1, 2) as well;
//   x.t() + y, y a contiguous (2, 3): (1, 2), the first operand decides;
//   y + x.t():            (3, 1), y decides;
//   x.t() + b, b of shape (3,) or (2, 1): (1, 2), whatever the order, since
//     a broadcast dim cannot decide.
// The rule, in two steps:
//   1. every input of the output's shape (no broadcasting, no 0-d scalar
//      beside a tensor): all contiguous gives a contiguous output; all
//      channels-last (4-d, channels-last strides) a channels-last one; all
//      dense (one block of memory, Note [Views and strides]) with the very
//      same strides, those strides;
//   2. otherwise the dims are sorted, fastest first, by the inputs' strides:
//      dim a goes inside dim b when the first input that can tell says a's
//      stride is smaller. An input cannot tell when either dim is broadcast
//      in it (stride 0: a dim it lacks, or of size 1 where the output's is
//      larger); on equal strides it says "swap" only when a is the larger
//      dim, and otherwise the next input is asked; when none can tell, the
//      dims keep their order (an insertion sort that leaves ties alone).
//      The output's strides are then contiguous in that order.
// So all-contiguous inputs give a contiguous output, a transposed or
// permuted dense tensor gives its permutation, and the first input that is
// not broadcast along the dims in question wins. The output then walks
// memory in the same order as its inputs, which is what lets the loops stay
// on their fast paths: the CPU's optimized loops take any operands laid out
// like a dense output as flat arrays (optimized.cpp), and the device loops
// order their dims by the output's strides before merging them
// (make_offsets, device_loops.h). The reference loops read and write
// through strides and need nothing. A dtype cast of an input keeps its
// layout when the input is dense (aten::_to_copy's preserved memory format,
// copy_kernels.cpp), as PyTorch's does; the kernels ask after the cast.
// In-place ops write into self and keep its strides; .contiguous() and the
// reductions' results are row-major here (PyTorch's reductions keep a
// permuted layout too; descent's do not yet).
#include "floors/kernels/kernels.h"

namespace descent::kernels {

namespace {

// c10's is_contiguous(ChannelsLast) for a 4-d tensor (N, C, H, W): strides,
// over the dims of size > 1, contiguous in the order C, W, H, N.
bool channels_last(const Tensor& t) {
  if (t.dim() != 4) return false;
  int64_t expected = 1;
  for (int d : {1, 3, 2, 0}) {
    if (t.sizes()[d] == 1) continue;
    if (t.strides()[d] != expected) return false;
    expected *= t.sizes()[d];
  }
  return true;
}

DimVector channels_last_strides(const DimVector& s) {
  DimVector st;
  st.resize(4);
  st[1] = 1;
  st[3] = s[1];
  st[2] = st[3] * s[3];
  st[0] = st[2] * s[2];
  return st;
}

// Step 1 of the Note: every input has the output's shape. Writes the
// strides and returns true when one of its three cases applies.
bool same_shape_strides(const DimVector& shape, const Tensor* const* in, int n, DimVector* out) {
  bool contiguous = true, last = true, same_dense = true;
  for (int k = 0; k < n; ++k) {
    if (!(in[k]->sizes() == shape)) return false;
    contiguous &= in[k]->is_contiguous();
  }
  if (contiguous) {
    *out = contiguous_strides(shape);
    return true;
  }
  for (int k = 0; k < n; ++k) {
    last &= channels_last(*in[k]);
    same_dense &= dense(*in[k]) && in[k]->strides() == in[n - 1]->strides();
  }
  if (last)
    *out = channels_last_strides(shape);
  else if (same_dense)
    *out = in[n - 1]->strides();
  return last || same_dense;
}

}  // namespace

DimVector output_strides(const DimVector& shape, std::initializer_list<const Tensor*> inputs) {
  constexpr int kMaxInputs = 4;
  const Tensor* in[kMaxInputs];
  int n = 0;
  for (const Tensor* t : inputs) in[n++] = t;
  DimVector result;
  if (same_shape_strides(shape, in, n, &result)) return result;
  const int nd = shape.size();
  if (nd <= 1) return contiguous_strides(shape);
  // Each input's stride along each of the output's dims; 0 where it is broadcast.
  int64_t stride[kMaxInputs][kMaxDims];
  for (int k = 0; k < n; ++k) {
    const int shift = nd - in[k]->dim();
    for (int d = 0; d < nd; ++d) {
      const int j = d - shift;
      const bool broadcast = j < 0 || (in[k]->sizes()[j] == 1 && shape[d] != 1);
      stride[k][d] = broadcast ? 0 : in[k]->strides()[j];
    }
  }
  // +1: dim a belongs outside dim b; -1: inside; 0: no input can tell.
  auto outside = [&](int a, int b) {
    for (int k = 0; k < n; ++k) {
      const int64_t sa = stride[k][a], sb = stride[k][b];
      if (sa == 0 || sb == 0) continue;
      if (sa != sb) return sa > sb ? 1 : -1;
      if (shape[a] > shape[b]) return 1;
    }
    return 0;
  };
  // order[0] is the fastest dim. Row-major to begin with, then an insertion
  // sort that moves a dim inward only past the dims it must go inside of,
  // and stops at the first it must stay outside of.
  int order[kMaxDims];
  for (int i = 0; i < nd; ++i) order[i] = nd - 1 - i;
  for (int i = 1; i < nd; ++i) {
    int at = i;
    for (int j = i - 1; j >= 0; --j) {
      const int c = outside(order[j], order[at]);
      if (c > 0)
        std::swap(order[j], order[at]), at = j;
      else if (c < 0)
        break;
    }
  }
  bool row_major = true;
  for (int i = 0; i < nd; ++i) row_major &= order[i] == nd - 1 - i;
  if (row_major) return contiguous_strides(shape);
  result.resize(nd);
  int64_t step = 1;
  for (int i = 0; i < nd; ++i) {
    result[order[i]] = step;
    // Saturated, as contiguous_strides: only a shape with a 0 can get that far.
    if (__builtin_mul_overflow(step, shape[order[i]], &step)) step = INT64_MAX;
  }
  return result;
}

Tensor empty_output(const DimVector& shape, ScalarType dtype, Device device,
                    std::initializer_list<const Tensor*> inputs) {
  return empty_strided_tensor(shape, output_strides(shape, inputs), dtype, device);
}

// Whether `t` covers one block of memory without gaps or overlaps, in some
// order of its dims (a transposed or permuted contiguous tensor): then a sum
// of all its elements is a sum over that block. Strides are never negative.
bool dense(const Tensor& t) {
  int order[kMaxDims], m = 0;  // the dims of size > 1, by increasing stride (an insertion sort)
  for (int d = 0; d < t.dim(); ++d) {
    if (t.sizes()[d] == 1) continue;
    int i = m++;
    for (; i > 0 && t.strides()[order[i - 1]] > t.strides()[d]; --i) order[i] = order[i - 1];
    order[i] = d;
  }
  int64_t expected = 1;
  for (int i = 0; i < m; ++i) {
    if (t.strides()[order[i]] != expected) return false;
    expected *= t.sizes()[order[i]];  // at most numel: no overflow
  }
  return true;
}

}  // namespace descent::kernels
