// Floor 5: advanced indexing, aten::index and aten::index_put_.
//
// [SECTION] The plan: which element of self each result element is
// [SECTION] On a device: index tensors read on the host
// [SECTION] index: reading
// [SECTION] index_put_: writing
//
// Note [Advanced indexing]
// ~~~~~~~~~~~~~~~~~~~~~~~~
// x[i] with an integer or bool tensor (or a list) reaches the kernels as
// aten::index(x, indices), and x[i] = v as aten::index_put_(x, indices, v):
// Tensor.__getitem__ has already applied the ints, slices and None as views
// (floors/binding/python_indexing.cpp), and `indices` holds one entry per leading dim of what is
// left, None where that dim is taken whole. As in ATen (IndexingUtils.h,
// TensorAdvancedIndexing.cpp):
//   1. a bool mask stands for the positions of its True elements: a mask of
//      k dims becomes k int64 index tensors (the columns of its nonzero()),
//      each of its sizes checked against the dim of x it covers;
//   2. the index tensors broadcast together to one shape, B;
//   3. the result is x's shape with the indexed dims replaced by B: in their
//      place when they are adjacent (x[:, i, j] of a 4-d x has shape
//      [x0, *B, x3]), in front otherwise (x[i, :, j]: [*B, x1]), numpy's rule;
//   4. each element of the result is the element of x at the positions the
//      index tensors hold at its B coordinates (a negative one counts from
//      the end), and at its own coordinates in the dims not indexed.
// Every position is checked before any element is read or written; one out
// of range is an IndexError naming the index's ordinal among the index
// tensors, as ATen's kernel names it ("index 5 is out of bounds for
// dimension 0 with size 4").
// index_put_ walks the same positions and writes `values`, broadcast to the
// result's shape, into them: assigned (a position named twice keeps one of
// the writes: the last, here) or added (accumulate=True; index's backward
// uses that to send each gradient element to where it was read from).
//
// Both kernels are one reference loop (no optimized variant: the verifier
// says "single kernel"), which finds every offset through strided_offset.
//
// On a device (sim:0, cuda:N) the plan is still made on the host: the index
// tensors are copied to the host (a wait for the stream, as PyTorch's
// nonzero() waits for a mask), masks become positions and every position is
// checked there, before anything is launched; the positions then go back to
// the device, where one kernel gathers (index: each result element finds
// its offset, GatherPlan) or scatters (index_put_: the host has sorted the
// result's elements by target, so each target is written by one thread in
// the CPU's order, ScatterPlan, device_reduce.h). Both are exact. Index
// tensors on the CPU are taken for a device tensor, as PyTorch takes them.
#include <algorithm>
#include <utility>
#include <vector>

#include "floors/kernels/device/device_reduce.h"
#include "floors/kernels/kernels.h"
#include "floors/kernels/roofline.h"
#include "floors/streams/streams.h"
#include "tracer/tracer.h"

namespace descent::kernels {

namespace {

using trace::Floor;
using trace::ScopedSpan;

// [SECTION] The plan ----------------------------------------------------------------------

struct IndexPlan {
  DimVector shape;                    // the result's shape
  Tensor index[kMaxDims];             // per dim of self: its int64 index tensor, or undefined (taken whole)
  DimVector index_strides[kMaxDims];  // that tensor's strides, broadcast into the result's shape
  DimVector self_strides;             // self's strides of the dims not indexed, placed in the result's shape
};

// "[2], [3]": the shapes of the index tensors, for the broadcast error.
std::string shapes_of(const Tensor* index, int n) {
  std::string s;
  for (int d = 0; d < n; ++d)
    if (index[d].defined()) s += (s.empty() ? "" : ", ") + index[d].sizes().str();
  return s;
}

// Step 1: a bool mask of k dims as k int64 tensors, the coordinates of its True elements.
void expand_mask(const Tensor& mask, const Tensor& self, int first_dim, Tensor* out) {
  for (int j = 0; j < mask.dim(); ++j)
    DESCENT_CHECK(mask.sizes()[j] == self.sizes()[first_dim + j], IndexError, "The shape of the mask ",
                  mask.sizes().str(), " at index ", j, " does not match the shape of the indexed tensor ",
                  self.sizes().str(), " at index ", first_dim + j);
  int64_t count = 0;
  for (int64_t i = 0; i < mask.numel(); ++i)
    count += *(mask.data<bool>() + strided_offset(i, mask.sizes(), mask.strides()));
  for (int j = 0; j < mask.dim(); ++j)
    out[first_dim + j] = empty_tensor({count}, ScalarType::Int64, Device{});  // on the host
  int64_t k = 0;
  for (int64_t i = 0; i < mask.numel(); ++i) {
    if (!*(mask.data<bool>() + strided_offset(i, mask.sizes(), mask.strides()))) continue;
    int64_t rest = i;  // i's coordinates in the mask, last dim first
    for (int j = mask.dim() - 1; j >= 0; --j) {
      out[first_dim + j].data<int64_t>()[k] = rest % mask.sizes()[j];
      rest /= mask.sizes()[j];
    }
    ++k;
  }
}

// The index tensors as the plan takes them: an int32 one as int64, a uint8
// one as a bool mask (PyTorch's old byte masks, which it still takes with a
// deprecation warning), converted on the host; the rest as they are (int8
// and int16 are refused by plan_index, as PyTorch refuses them).
OptionalTensorList long_or_bool(const OptionalTensorList& indices) {
  OptionalTensorList out;
  for (const Tensor& t : indices) {
    const bool convert = t.defined() && t.device().type == DeviceType::CPU &&
                         (t.dtype() == ScalarType::Int32 || t.dtype() == ScalarType::UInt8);
    if (!convert) {
      out.push_back(t);
      continue;
    }
    Tensor c = empty_tensor(t.sizes(), t.dtype() == ScalarType::Int32 ? ScalarType::Int64 : ScalarType::Bool, Device{});
    for (int64_t i = 0; i < t.numel(); ++i) {
      const int64_t at = strided_offset(i, t.sizes(), t.strides());
      if (t.dtype() == ScalarType::Int32)
        c.data<int64_t>()[i] = t.data<int32_t>()[at];
      else
        c.data<bool>()[i] = t.data<uint8_t>()[at] != 0;
    }
    out.push_back(c);
  }
  return out;
}

IndexPlan plan_index(const char* op, const Tensor& self, const OptionalTensorList& indices) {
  int count = 0;  // the dims of self the indices cover
  for (const Tensor& t : indices) count += t.defined() && t.dtype() == ScalarType::Bool ? t.dim() : 1;
  for (const Tensor& t : indices)
    DESCENT_CHECK(!t.defined() || t.dtype() == ScalarType::Int64 || t.dtype() == ScalarType::Bool, IndexError,
                  "tensors used as indices must be long, int, byte or bool tensors");
  DESCENT_CHECK(count <= self.dim(), IndexError, "too many indices for tensor of dimension ", self.dim(), " (got ",
                count, ")");
  IndexPlan p;
  int d = 0;
  for (const Tensor& t : indices) {
    DESCENT_CHECK(!t.defined() || t.device() == self.device() || t.device().type == DeviceType::CPU, Error, op,
                  "(): indices should be either on cpu or on the same device as the indexed tensor (",
                  self.device().str(), ")");
    if (t.defined() && t.dtype() == ScalarType::Bool) {
      expand_mask(t, self, d, p.index);
      d += t.dim();
    } else {
      p.index[d++] = t;
    }
  }
  // Step 2: broadcast the index tensors to B.
  DimVector b;
  bool adjacent = true;
  int first = -1, last = -1, n_indexed = 0;
  for (d = 0; d < self.dim(); ++d) {
    if (!p.index[d].defined()) continue;
    const DimVector& s = p.index[d].sizes();
    const int n = std::max(b.size(), s.size());
    DimVector out;
    out.resize(n);
    for (int i = 0; i < n; ++i) {
      const int ib = b.size() - n + i, is = s.size() - n + i;
      const int64_t sb = ib >= 0 ? b[ib] : 1, ss = is >= 0 ? s[is] : 1;
      DESCENT_CHECK(sb == ss || sb == 1 || ss == 1, IndexError,
                    "shape mismatch: indexing tensors could not be broadcast together with shapes ",
                    shapes_of(p.index, self.dim()));
      out[i] = sb == 1 ? ss : sb;
    }
    b = out;
    adjacent &= last < 0 || last == d - 1;
    if (first < 0) first = d;
    last = d;
    ++n_indexed;
  }
  // Step 3: the dims not indexed, in order, with B spliced in at b_at; each
  // keeps its stride in self at its place in the result (zeros elsewhere).
  const int b_at = n_indexed == 0 || !adjacent ? 0 : first;
  int kept = 0;
  for (d = 0; d < self.dim(); ++d) {
    if (p.index[d].defined()) continue;
    if (kept++ == b_at)
      for (int i = 0; i < b.size(); ++i) p.shape.push_back(b[i]);
    p.shape.push_back(self.sizes()[d]);
  }
  if (kept <= b_at)
    for (int i = 0; i < b.size(); ++i) p.shape.push_back(b[i]);
  const DimVector& shape = p.shape;
  p.self_strides.resize(shape.size(), 0);
  kept = 0;
  for (d = 0; d < self.dim(); ++d) {
    if (p.index[d].defined()) continue;
    p.self_strides[kept < b_at ? kept : kept + b.size()] = self.strides()[d];
    ++kept;
  }
  // Each index tensor, broadcast to B, as strides over the result's shape (zero outside B).
  for (d = 0; d < self.dim(); ++d) {
    if (!p.index[d].defined()) continue;
    const Tensor e = expand_to(p.index[d], b);
    p.index_strides[d].resize(shape.size(), 0);
    for (int i = 0; i < b.size(); ++i) p.index_strides[d][b_at + i] = e.strides()[i];
  }
  // Every position in range before any element moves.
  int ordinal = 0;
  for (d = 0; d < self.dim(); ++d) {
    const Tensor& t = p.index[d];
    if (!t.defined()) continue;
    const int64_t size = self.sizes()[d];
    for (int64_t i = 0; i < t.numel(); ++i) {
      const int64_t v = t.data<int64_t>()[strided_offset(i, t.sizes(), t.strides())];
      DESCENT_CHECK(v >= -size && v < size, IndexError, "index ", v, " is out of bounds for dimension ", ordinal,
                    " with size ", size);
    }
    ++ordinal;
  }
  return p;
}

// The offset in self (in elements, from self's first) of result element `linear`.
int64_t self_offset(const IndexPlan& p, const Tensor& self, int64_t linear) {
  int64_t off = strided_offset(linear, p.shape, p.self_strides);
  for (int d = 0; d < self.dim(); ++d) {
    const Tensor& t = p.index[d];
    if (!t.defined()) continue;
    int64_t v = t.data<int64_t>()[strided_offset(linear, p.shape, p.index_strides[d])];
    if (v < 0) v += self.sizes()[d];
    off += v * self.strides()[d];
  }
  return off;
}

bool on_device(const Tensor& t) { return t.device().type != DeviceType::CPU; }

// The one loop is the reference loop on the CPU (Note [Advanced indexing]),
// the device's kernel otherwise.
void begin(ScopedSpan& span, const Tensor& out, const IndexPlan& p) {
  last_variant() = DESCENT_DECIDES(span, on_device(out) ? device::variant(out.device()) : "reference");
  if (!span.active()) return;
  span.arg("dtype", dtype_name(out.dtype()));
  span.arg("numel", numel_of(p.shape));
  span.arg("variant", last_variant());
  // The selected elements read (or written) once and the result written
  // (or read) once; the indices' reading is not counted.
  record_work(span, 2 * numel_of(p.shape) * int64_t(element_size(out.dtype())), 0);
}

// [SECTION] On a device ------------------------------------------------------------------------

// A contiguous host copy of an index tensor (the device's copy waits for its stream).
Tensor host_index(const Tensor& t) {
  if (!t.defined()) return t;
  if (t.device().type == DeviceType::CPU) return t.is_contiguous() ? t : call(Op::contiguous, t);
  const Tensor c = t.is_contiguous() ? t : call(Op::contiguous, t);
  Tensor h = empty_tensor(c.sizes(), c.dtype(), Device{});
  const size_t bytes = size_t(c.numel()) * element_size(c.dtype());
  if (bytes) streams::copy_bytes(h.data_ptr(), Device{}, c.data_ptr(), c.device(), bytes);
  return h;
}
OptionalTensorList host_indices(const OptionalTensorList& indices) {
  OptionalTensorList out;
  for (const Tensor& t : indices) out.push_back(host_index(t));
  return out;
}

// A contiguous host tensor's copy on device d, on its current stream.
Tensor to_device(const Tensor& h, Device d) {
  Tensor t = empty_tensor(h.sizes(), h.dtype(), d);
  const size_t bytes = size_t(h.numel()) * element_size(h.dtype());
  if (bytes) streams::copy_bytes(t.data_ptr(), d, h.data_ptr(), Device{}, bytes);
  return t;
}
Tensor to_device(const std::vector<int64_t>& v, Device d) {
  Tensor h = empty_tensor({int64_t(v.size())}, ScalarType::Int64, Device{});
  std::copy(v.begin(), v.end(), h.data<int64_t>());
  return to_device(h, d);
}

void copy_dims(const DimVector& from, int64_t* to) {
  for (int i = 0; i < from.size(); ++i) to[i] = from[i];
}

// The index tensors of a plan, on self's device, and the gather plan over
// them; `keep` holds them until the host lets go (the caching allocator
// reuses their memory only for work queued after the kernel, Note [Caching
// allocator policy]).
device::GatherPlan gather_plan(const IndexPlan& p, const Tensor& self, std::vector<Tensor>& keep) {
  device::GatherPlan g;
  g.numel = numel_of(p.shape);
  g.dims = p.shape.size();
  copy_dims(p.shape, g.shape);
  copy_dims(p.self_strides, g.self_strides);
  for (int d = 0; d < self.dim(); ++d) {
    if (!p.index[d].defined()) continue;
    const int x = g.indexed++;
    keep.push_back(to_device(p.index[d], self.device()));
    g.index[x] = keep.back().data<int64_t>();
    copy_dims(p.index_strides[d], g.index_strides[x]);
    g.dim_size[x] = self.sizes()[d];
    g.dim_stride[x] = self.strides()[d];
  }
  return g;
}

}  // namespace

// [SECTION] index -------------------------------------------------------------------------

// aten::index.Tensor(self, indices): Note [Advanced indexing].
void index_kernel(const OpEntry& op, DispatchKeySet, Stack& s) {
  ScopedSpan span(Floor::Kernels, op.profiler_name);
  const Tensor& self = s[0].to_tensor();
  const bool dev = on_device(self);
  const IndexPlan p =
      plan_index(op.python_name, self, long_or_bool(dev ? host_indices(s[1].to_tensor_list()) : s[1].to_tensor_list()));
  Tensor out = empty_tensor(p.shape, self.dtype(), self.device());
  begin(span, out, p);
  if (dev) {
    std::vector<Tensor> keep;
    device::gather(self.device(), self.dtype(), self.data_ptr(), out.data_ptr(), gather_plan(p, self, keep));
    s.set_result(std::move(out));
    return;
  }
  visit_dtype(self.dtype(), [&]<typename T>() {
    const T* src = self.data<T>();
    T* dst = out.data<T>();
    for (int64_t i = 0; i < out.numel(); ++i) dst[i] = src[self_offset(p, self, i)];
  });
  s.set_result(std::move(out));
}

// [SECTION] index_put_ ----------------------------------------------------------------------

namespace {

// index_put_ on a device: every target found on the host (its positions are
// there), the result's elements sorted by target, stably, then one thread
// per target on the device (ScatterPlan, device_reduce.h).
void scatter_on_device(const IndexPlan& p, const Tensor& self, const Tensor& v, bool accumulate) {
  const int64_t n = numel_of(p.shape);
  std::vector<std::pair<int64_t, int64_t>> by_target(
      static_cast<size_t>(n));  // (target, element): sorting keeps elements in order
  for (int64_t i = 0; i < n; ++i) by_target[size_t(i)] = {self_offset(p, self, i), i};
  std::sort(by_target.begin(), by_target.end());
  std::vector<int64_t> target, order(static_cast<size_t>(n)), start;
  for (int64_t r = 0; r < n; ++r) {
    order[size_t(r)] = by_target[size_t(r)].second;
    if (r == 0 || by_target[size_t(r)].first != by_target[size_t(r - 1)].first) {
      target.push_back(by_target[size_t(r)].first);
      start.push_back(r);
    }
  }
  start.push_back(n);
  device::ScatterPlan sp;
  sp.segments = int64_t(target.size());
  sp.accumulate = accumulate;
  sp.values.dims = p.shape.size();
  copy_dims(p.shape, sp.values.sizes);
  copy_dims(v.strides(), sp.values.strides);
  if (sp.segments == 0) return;
  const Tensor t = to_device(target, self.device()), o = to_device(order, self.device()),
               st = to_device(start, self.device());
  sp.target = t.data<int64_t>();
  sp.order = o.data<int64_t>();
  sp.start = st.data<int64_t>();
  device::scatter(self.device(), self.dtype(), self.data_ptr(), v.data_ptr(), sp);
}

}  // namespace

// aten::index_put_(self, indices, values, accumulate): Note [Advanced indexing].
// PyTorch's checks: values broadcast to the indexed result and have self's
// dtype, except where one value fills a single bool mask (ATen's masked_fill_
// path, which casts it). Where values or an index share self's memory,
// descent reads a copy of them (PyTorch refuses such overlaps).
void index_put_kernel(const OpEntry& op, DispatchKeySet, Stack& s) {
  ScopedSpan span(Floor::Kernels, op.profiler_name);
  const Tensor& self = s[0].to_tensor();
  const bool dev = on_device(self);
  OptionalTensorList indices;
  for (const Tensor& t : long_or_bool(dev ? host_indices(s[1].to_tensor_list()) : s[1].to_tensor_list()))
    indices.push_back(t.defined() && t.storage() == self.storage() ? call(Op::clone, t) : t);
  Tensor values = s[2].to_tensor();
  const bool accumulate = s[3].to_bool();
  const IndexPlan p = plan_index(op.python_name, self, indices);
  DESCENT_CHECK(expandable_to(values.sizes(), p.shape), Error, "shape mismatch: value tensor of shape ",
                values.sizes().str(), " cannot be broadcast to indexing result of shape ", p.shape.str());
  int masks = 0, others = 0;
  for (const Tensor& t : indices) (t.defined() && t.dtype() == ScalarType::Bool ? masks : others) += t.defined();
  const bool masked_fill = !accumulate && values.numel() == 1 && masks == 1 && others == 0;
  DESCENT_CHECK(masked_fill || values.dtype() == self.dtype(), Error,
                "Index put requires the source and destination dtypes match, got ", type_word(self.dtype()),
                " for the destination and ", type_word(values.dtype()), " for the source.");
  if (values.dtype() != self.dtype()) values = cast(values, self.dtype());
  if (values.storage() == self.storage()) values = call(Op::clone, values);
  if (dev && values.device().type == DeviceType::CPU &&
      values.numel() == 1)  // x[i] = 5: a CPU scalar, as PyTorch takes it
    values = to_device(values.is_contiguous() ? values : call(Op::contiguous, values), self.device());
  DESCENT_CHECK(values.device() == self.device(), Error, "index_put_(): values must be on ", self.device().str(),
                ", the device of self, not ", values.device().str());
  const Tensor v = expand_to(values, p.shape);
  begin(span, self, p);
  if (dev) {
    scatter_on_device(p, self, v, accumulate);
    s.set_result(Tensor(self));
    return;
  }
  visit_dtype(self.dtype(), [&]<typename T>() {
    const T* src = v.data<T>();
    T* dst = self.data<T>();
    for (int64_t i = 0; i < numel_of(p.shape); ++i) {
      T& e = dst[self_offset(p, self, i)];
      const T x = src[strided_offset(i, p.shape, v.strides())];
      e = accumulate ? plus(e, x) : x;  // wrapping for the integers, as the device's scatter_segment
    }
  });
  s.set_result(Tensor(self));
}

}  // namespace descent::kernels
