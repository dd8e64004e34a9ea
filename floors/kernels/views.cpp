// View kernels: new sizes, strides and offset over the same storage.
//
// None of these copies an element or asks floor 6 for memory; see
// Note [Views and strides] (floors/core/tensor.h). reshape, which copies
// when no view can express the shape, is a composite of view and clone
// (composites.cpp, Note [Composite ops decompose]).
#include <algorithm>

#include "floors/kernels/kernels.h"
#include "tracer/tracer.h"

namespace descent::kernels {

// The sizes `req` with one -1 inferred from numel; raises on a bad shape.
// aten's infer_size, with its messages (no "view(): " prefix: PyTorch prints none).
DimVector infer_size(const char* op, const DimVector& req, int64_t numel) {
  (void)op;
  DimVector out = req;
  int infer = -1;
  int64_t known = 1;
  bool overflow = false, has_zero = false;
  for (int i = 0; i < req.size(); ++i) {
    if (req[i] == -1) {
      DESCENT_CHECK(infer < 0, Error, "only one dimension can be inferred");
      infer = i;
    } else {
      DESCENT_CHECK(req[i] >= 0, Error, "invalid shape dimension ", req[i]);
      has_zero |= req[i] == 0;
      overflow |= __builtin_mul_overflow(known, req[i], &known);
    }
  }
  if (has_zero) known = 0;  // a zero makes the product 0 whatever came before it
  // Sizes whose product an int64 cannot hold cannot hold `numel` elements either.
  DESCENT_CHECK(has_zero || !overflow, Error, "shape '", req.str(), "' is invalid for input of size ", numel);
  if (infer >= 0) {
    DESCENT_CHECK(known != 0 && numel % known == 0, Error, "shape '", req.str(), "' is invalid for input of size ",
                  numel);
    out[infer] = numel / known;
  }
  DESCENT_CHECK(numel_of(out) == numel, Error, "shape '", req.str(), "' is invalid for input of size ", numel);
  return out;
}

// Strides that let `sizes` view memory laid out as (old_sizes, old_strides),
// or false when none do. Old dims are grouped into chunks that are contiguous
// with each other; each chunk must be covered exactly by consecutive new dims.
bool view_strides(const DimVector& old_sizes, const DimVector& old_strides, const DimVector& sizes, DimVector* out) {
  out->resize(sizes.size());
  if (numel_of(old_sizes) == 0 || old_sizes.size() == 0) {
    *out = contiguous_strides(sizes);
    return true;
  }
  int nd = sizes.size() - 1;  // next new dim to assign, right to left
  int64_t chunk_numel = 1;
  int64_t base = old_strides[old_sizes.size() - 1];
  for (int d = old_sizes.size() - 1; d >= 0; --d) {
    chunk_numel *= old_sizes[d];
    bool chunk_ends = d == 0 || (old_sizes[d - 1] != 1 && old_strides[d - 1] != chunk_numel * base);
    if (!chunk_ends) continue;
    int64_t covered = 1;
    while (nd >= 0 && (covered < chunk_numel || sizes[nd] == 1)) {
      (*out)[nd] = covered * base;
      covered *= sizes[nd];
      --nd;
    }
    if (covered != chunk_numel) return false;
    if (d > 0) {
      base = old_strides[d - 1];
      chunk_numel = 1;
    }
  }
  for (; nd >= 0; --nd) {  // leading new dims of size 1
    if (sizes[nd] != 1) return false;
    (*out)[nd] = 1;
  }
  return true;
}

namespace {

// The result of a view op. Its base is recorded by the ADInplaceOrView
// kernel above this one (Note [ADInplaceOrView], dispatch/inplace_or_view.cpp).
void set_view(trace::ScopedSpan& span, Stack& s, const Tensor&, Tensor v) {
  span.arg("variant", "view (no copy)");
  last_variant() = "view";
  s.set_result(std::move(v));
}

#define DESCENT_VIEW_KERNEL(fn) void fn(const OpEntry& op, DispatchKeySet, Stack& s)
#define DESCENT_VIEW_BEGIN                                         \
  trace::ScopedSpan span(trace::Floor::Kernels, op.profiler_name); \
  const Tensor& x = s[0].to_tensor();

DESCENT_VIEW_KERNEL(view_kernel) {
  DESCENT_VIEW_BEGIN
  DimVector sizes = infer_size(op.python_name, s[1].to_int_list(), x.numel());
  DimVector strides;
  bool ok = view_strides(x.sizes(), x.strides(), sizes, &strides);
  DESCENT_CHECK(ok, Error,
                "view size is not compatible with input tensor's size and stride (at least one dimension "
                "spans across two contiguous subspaces). Use .reshape(...) instead.");
  if (op.id == Op::_unsafe_view) {
    // aten::_unsafe_view: the same view, but not recorded as one (no base):
    // for a result over a copy no one else holds (reshape's clone, mm's output).
    span.arg("variant", "view (no copy, no base)");
    last_variant() = "view";
    s.set_result(x.as_strided(sizes, strides, x.offset()));
    return;
  }
  set_view(span, s, x, x.as_strided(sizes, strides, x.offset()));
}

DESCENT_VIEW_KERNEL(transpose_kernel) {
  DESCENT_VIEW_BEGIN
  DimVector sizes = x.sizes(), strides = x.strides();
  int a = wrap_dim(s[1].to_int(), x.dim(), op.python_name), b = wrap_dim(s[2].to_int(), x.dim(), op.python_name);
  if (x.dim() > 0) {  // a 0-d tensor accepts dims 0 and -1 and stays as it is
    std::swap(sizes[a], sizes[b]);
    std::swap(strides[a], strides[b]);
  }
  set_view(span, s, x, x.as_strided(sizes, strides, x.offset()));
}

// aten::t: transpose(0, 1) for a matrix; a vector or a 0-d tensor is its own transpose.
DESCENT_VIEW_KERNEL(t_kernel) {
  DESCENT_VIEW_BEGIN
  DESCENT_CHECK(x.dim() <= 2, Error, "t() expects a tensor with <= 2 dimensions, but self is ", x.dim(), "D");
  DimVector sizes = x.sizes(), strides = x.strides();
  if (x.dim() == 2) {
    std::swap(sizes[0], sizes[1]);
    std::swap(strides[0], strides[1]);
  }
  set_view(span, s, x, x.as_strided(sizes, strides, x.offset()));
}

DESCENT_VIEW_KERNEL(permute_kernel) {
  DESCENT_VIEW_BEGIN
  const DimVector& dims = s[1].to_int_list();
  DESCENT_CHECK(dims.size() == x.dim(), Error,
                "permute(sparse_coo): number of dimensions in the tensor input "  // sic: aten's words for every layout
                "does not match the length of the desired ordering of dimensions i.e. input.dim() = ",
                x.dim(), " is not equal to len(dims) = ", dims.size());
  DimVector sizes, strides;
  bool seen[kMaxDims] = {};
  for (int64_t d : dims) {
    int w = wrap_dim(d, x.dim(), op.python_name);
    DESCENT_CHECK(!seen[w], Error, "permute(): duplicate dims are not allowed.");
    seen[w] = true;
    sizes.push_back(x.sizes()[w]);
    strides.push_back(x.strides()[w]);
  }
  set_view(span, s, x, x.as_strided(sizes, strides, x.offset()));
}

DESCENT_VIEW_KERNEL(expand_kernel) {
  DESCENT_VIEW_BEGIN
  const DimVector& req = s[1].to_int_list();
  DESCENT_CHECK(req.size() >= x.dim(), Error, "expand(descent.",
                x.device().type == DeviceType::CPU ? "" : str(device_type_name(x.device().type), "."),
                type_word(x.dtype()), "Tensor{", x.shape_str(), "}, size=", req.str(),
                "): the number of sizes provided (", req.size(),
                ") must be greater or equal to the number of dimensions in the tensor (", x.dim(), ")");
  DimVector sizes = req, strides;
  strides.resize(req.size());
  int shift = req.size() - x.dim();
  for (int i = 0; i < req.size(); ++i) {
    int j = i - shift;
    if (j < 0) {
      DESCENT_CHECK(req[i] >= 0, Error, "The expanded size of the tensor (", req[i],
                    ") isn't allowed in a leading, non-existing dimension ", i);
      strides[i] = 0;
      continue;
    }
    int64_t have = x.sizes()[j];
    if (req[i] == -1) sizes[i] = have;
    DESCENT_CHECK(sizes[i] >= 0 || have != 1, Error, "expand(): invalid size ", req[i], " at dimension ", i,
                  " (sizes must be non-negative, or -1 to keep the existing size)");  // aten: an overflow, later
    DESCENT_CHECK(sizes[i] == have || have == 1, Error, "The expanded size of the tensor (", sizes[i],
                  ") must match the existing size (", have, ") at non-singleton dimension ", i,
                  ".  Target sizes: ", req.str(), ".  Tensor sizes: ", x.shape_str());
    strides[i] = sizes[i] == have ? x.strides()[j] : 0;
  }
  set_view(span, s, x, x.as_strided(sizes, strides, x.offset()));
}

DESCENT_VIEW_KERNEL(slice_kernel) {
  DESCENT_VIEW_BEGIN
  DESCENT_CHECK(x.dim() > 0, IndexError, "slice() cannot be applied to a 0-dim tensor.");
  int d = wrap_dim(s[1].to_int(), x.dim(), op.python_name);
  int64_t n = x.sizes()[d], step = s[4].to_int();
  DESCENT_CHECK(step > 0, Error, "slice step must be positive (got ", step, ")");
  auto clamp = [n](int64_t i) { return std::clamp(i < 0 ? i + n : i, int64_t{0}, n); };
  int64_t start = s[2].is_none() ? 0 : clamp(s[2].to_int());
  int64_t end = s[3].is_none() ? n : clamp(s[3].to_int());
  // ceil((end - start) / step) written so that nothing overflows, even for steps near 2**63.
  int64_t len = end > start ? (end - start - 1) / step + 1 : 0;
  DimVector sizes = x.sizes(), strides = x.strides();
  sizes[d] = len;
  // The new stride is stride * step; a dim of one element or none never
  // steps, so when that product overflows it keeps its old stride instead.
  int64_t stride;
  bool overflow = __builtin_mul_overflow(x.strides()[d], step, &stride);
  DESCENT_CHECK(!overflow || len <= 1, Error, "slice(): the stride ", x.strides()[d], " of dimension ", d,
                " times the step ", step, " does not fit in an int64");
  if (!overflow) strides[d] = stride;
  set_view(span, s, x, x.as_strided(sizes, strides, x.offset() + start * x.strides()[d]));
}

DESCENT_VIEW_KERNEL(select_kernel) {
  DESCENT_VIEW_BEGIN
  DESCENT_CHECK(x.dim() > 0, IndexError,
                "invalid index of a 0-dim tensor. Use `tensor.item()` in Python or "
                "`tensor.item<T>()` in C++ to convert a 0-dim tensor to a number");
  int d = wrap_dim(s[1].to_int(), x.dim(), op.python_name);
  int64_t n = x.sizes()[d], i = s[2].to_int();
  DESCENT_CHECK(i >= -n && i < n, IndexError, "index ", i, " is out of bounds for dimension ", d, " with size ", n);
  if (i < 0) i += n;
  DimVector sizes, strides;
  for (int k = 0; k < x.dim(); ++k)
    if (k != d) sizes.push_back(x.sizes()[k]), strides.push_back(x.strides()[k]);
  set_view(span, s, x, x.as_strided(sizes, strides, x.offset() + i * x.strides()[d]));
}

DESCENT_VIEW_KERNEL(unsqueeze_kernel) {
  DESCENT_VIEW_BEGIN
  int d = wrap_dim(s[1].to_int(), x.dim() + 1, op.python_name);
  DimVector sizes, strides;
  for (int k = 0; k <= x.dim(); ++k) {
    if (k == d) {
      sizes.push_back(1);
      strides.push_back(k < x.dim() ? x.strides()[k] * x.sizes()[k] : 1);
    }
    if (k < x.dim()) sizes.push_back(x.sizes()[k]), strides.push_back(x.strides()[k]);
  }
  set_view(span, s, x, x.as_strided(sizes, strides, x.offset()));
}

// squeeze(), squeeze.dim and squeeze.dims: the dims of size 1 left out, all
// of them or those named (a named dim of another size stays, as in aten; a
// 0-d tensor's dim 0 or -1 is itself). Each result is a view (SqueezeBackward0,
// 1 and 2 unsqueeze the gradient back).
DESCENT_VIEW_KERNEL(squeeze_kernel) {
  DESCENT_VIEW_BEGIN
  bool named[kMaxDims] = {};
  if (op.id == Op::squeeze) {
    std::fill(named, named + kMaxDims, true);
  } else if (op.id == Op::squeeze_dim) {
    const int d = wrap_dim(s[1].to_int(), x.dim(), op.python_name);
    if (x.dim() > 0) named[d] = true;
  } else {
    for (int64_t d : s[1].to_int_list()) {
      const int w = wrap_dim(d, x.dim(), op.python_name);
      if (x.dim() == 0) continue;
      DESCENT_CHECK(!named[w], Error, "dim ", w, " appears multiple times in the list of dims");
      named[w] = true;
    }
  }
  DimVector sizes, strides;
  for (int k = 0; k < x.dim(); ++k)
    if (!(named[k] && x.sizes()[k] == 1)) sizes.push_back(x.sizes()[k]), strides.push_back(x.strides()[k]);
  set_view(span, s, x, x.as_strided(sizes, strides, x.offset()));
}

// unfold(dimension, size, step): every window of `size` elements along the
// dim, `step` apart, as a new last dim (the dim itself counts the windows).
// A 0-d self is one element: [size] for size 1.
DESCENT_VIEW_KERNEL(unfold_kernel) {
  DESCENT_VIEW_BEGIN
  const int d = wrap_dim(s[1].to_int(), x.dim() == 0 ? 1 : x.dim(), op.python_name);
  const int64_t size = s[2].to_int(), step = s[3].to_int();
  const int64_t n = x.dim() ? x.sizes()[d] : 1;
  DESCENT_CHECK(size <= n, Error, "maximum size for tensor at dimension ", d, " is ", n, " but size is ", size);
  DESCENT_CHECK(step > 0, Error, "step is ", step, " but must be > 0");
  DESCENT_CHECK(size >= 0, Error, "size is ", size, " but must be >= 0");
  DimVector sizes = x.sizes(), strides = x.strides();
  const int64_t stride = x.dim() ? x.strides()[d] : 1;
  if (x.dim()) sizes[d] = (n - size) / step + 1, strides[d] = stride * step;
  sizes.push_back(size), strides.push_back(stride);
  set_view(span, s, x, x.as_strided(sizes, strides, x.offset()));
}

// as_strided(size, stride, storage_offset=None): any sizes and strides over
// self's storage, from storage_offset (self's own offset when None), as aten
// gives them; the view must lie inside the storage (aten's setStorage check).
DESCENT_VIEW_KERNEL(as_strided_kernel) {
  DESCENT_VIEW_BEGIN
  const DimVector& sizes = s[1].to_int_list();
  const DimVector& strides = s[2].to_int_list();
  const int64_t offset = s[3].is_none() ? x.offset() : s[3].to_int();
  DESCENT_CHECK(sizes.size() == strides.size(), Error, "mismatch in length of strides and shape");
  int64_t last = offset;  // the last element's position, in elements
  bool empty = false;
  for (int k = 0; k < sizes.size(); ++k) {
    DESCENT_CHECK(strides[k] >= 0, Error,
                  "as_strided: Negative strides are not supported at the moment, got strides: ", strides.str());
    DESCENT_CHECK(sizes[k] >= 0, Error, "Trying to create tensor with negative dimension ", sizes[k], ": ",
                  sizes.str());
    empty |= sizes[k] == 0;
    last += (sizes[k] - 1) * strides[k];
  }
  DESCENT_CHECK(offset >= 0, Error, "Tensor: invalid storage offset ", offset);
  const int64_t item = int64_t(element_size(x.dtype()));
  const int64_t need = empty ? 0 : (last + 1) * item;
  const int64_t have = int64_t(x.storage()->data.nbytes);
  DESCENT_CHECK(need <= have, Error, "setStorage: sizes ", sizes.str(), ", strides ", strides.str(),
                ", storage offset ", offset, ", and itemsize ", item, " requiring a storage size of ", need,
                " are out of bounds for storage of size ", have);
  set_view(span, s, x, x.as_strided(sizes, strides, offset));
}

// x[...]: the same view of the same memory, a new tensor (torch's THPVariable_getitem calls at::alias).
DESCENT_VIEW_KERNEL(alias_kernel) {
  DESCENT_VIEW_BEGIN
  set_view(span, s, x, x.as_strided(x.sizes(), x.strides(), x.offset()));
}

}  // namespace

void register_view_kernels(Library& m) {
  m.impl(Op::view, view_kernel);
  m.impl(Op::_unsafe_view, view_kernel);
  m.impl(Op::transpose, transpose_kernel);
  m.impl(Op::t, t_kernel);
  m.impl(Op::permute, permute_kernel);
  m.impl(Op::expand, expand_kernel);
  m.impl(Op::slice, slice_kernel);
  m.impl(Op::select, select_kernel);
  m.impl(Op::unsqueeze, unsqueeze_kernel);
  for (Op op : {Op::squeeze, Op::squeeze_dim, Op::squeeze_dims}) m.impl(op, squeeze_kernel);
  m.impl(Op::unfold, unfold_kernel);
  m.impl(Op::as_strided, as_strided_kernel);
  m.impl(Op::alias, alias_kernel);
}

}  // namespace descent::kernels
