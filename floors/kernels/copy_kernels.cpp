// Floor 5's boxed copies: the copy loop into a given result, moving elements
// between the host and a device, .item()'s read, clone, _to_copy and cat.
// copy_, which writes into self, is an in-place kernel (inplace_kernels.cpp).
//
// [SECTION] The copy loop
// [SECTION] Between devices
// [SECTION] Reading one element
// [SECTION] clone, _to_copy and cat
#include <cstring>
#include <vector>

#include "floors/kernels/boxed.h"
#include "floors/streams/streams.h"

namespace descent::kernels {

// [SECTION] The copy loop ------------------------------------------------------------------

// src (dst's sizes) into dst, on dst's device; src there too, or a CPU scalar.
void copy_into(ScopedSpan& span, const Tensor& src, const Tensor& dst) {
  begin(span, dst);
  loop_work(span, dst, {&src}, dst.dtype(), 0);
  run_loop(
      span, dst, [&] { device::copy(src, dst); }, [&] { return optimized_copy(src, dst); },
      [&] { reference_copy(src, dst); });
}

// [SECTION] Between devices -----------------------------------------------------------------

// Note [Copies between devices]
// ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
// Between the host and a device, a copy moves bytes, not elements:
// streams::copy_bytes moves one contiguous block on the device's current
// stream (cudaMemcpyAsync on CUDA, a task on the worker on sim:0; floor 7)
// and converts nothing. As in aten, x.to(device) is aten::to ->
// aten::_to_copy, which makes an empty result there (aten::empty; aten's is
// empty_strided) and calls aten::copy_ into it; copy_ between devices makes
// the elements contiguous first, on the side where that is cheap, and
// converts a dtype where PyTorch's blocking copy does:
//   host to device: a contiguous copy on the host when x is strided (a CPU
//     loop), the bytes, then a cast kernel on the device if the dtype changes;
//   device to host: a contiguous copy on the device when x is strided, the
//     bytes, then the cast on the host if the dtype changes; copy_bytes
//     queues the bytes and then waits for the stream, so the host reads
//     finished elements (cudaMemcpyAsync, then cudaStreamSynchronize);
//   one device to another (sim:0 to cuda:0, cuda:0 to cuda:1): through the
//     host, as two copies (descent makes no peer-to-peer copies).
// When self is contiguous and has src's sizes and dtype the bytes land in
// self itself; otherwise in a contiguous block that copy_ then writes into
// self, through self's strides and broadcasting it, with the copy loop of
// self's device.
// From pinned host memory (x.pin_memory()) the device reads the bytes when
// the copy runs, not before copy_bytes returns (Note [Pinned host memory],
// floors/streams/host_memory.cpp): the host then waits for the copy in a
// floor-7 span "copy from pinned memory", unless the caller asked for
// non_blocking (copy_'s argument; Tensor.to(..., non_blocking=True) comes
// here through copy_), as PyTorch's copy_ waits.
// x's elements, contiguous, in dtype dt on `dev` (in `into` when given: a
// contiguous tensor there of x's sizes and dtype dt).
Tensor move_to(const Tensor& x, Device dev, ScalarType dt, bool non_blocking, const Tensor* into) {
  const bool to_host = dev.type == DeviceType::CPU, from_host = x.device().type == DeviceType::CPU;
  if (!to_host && !from_host) return move_to(move_to(x, Device{}, x.dtype()), dev, dt, false, into);
  Tensor src = x;
  if (!x.is_contiguous()) {
    ScopedSpan span(Floor::Kernels, to_host ? "contiguous on the device" : "contiguous on the host");
    src = empty_tensor(x.sizes(), x.dtype(), x.device());
    copy_into(span, x, src);
  }
  const bool cast_after = dt != x.dtype();
  Tensor moved = into && !cast_after ? *into : empty_tensor(x.sizes(), src.dtype(), dev);
  const size_t nbytes = size_t(src.numel()) * element_size(src.dtype());
  const bool pinned = from_host && src.storage()->pinned;
  if (nbytes > 0) {
    streams::copy_bytes(moved.data_ptr(), dev, src.data_ptr(), src.device(), nbytes, pinned);
    if (pinned && !non_blocking) streams::synchronize(streams::current_stream(dev), "copy from pinned memory");
  }
  if (!cast_after) return moved;
  ScopedSpan span(Floor::Kernels, to_host ? "cast on the host" : "cast on the device");
  Tensor out = into ? *into : empty_tensor(x.sizes(), dt, dev);
  copy_into(span, moved, out);
  return out;
}

// [SECTION] Reading one element ----------------------------------------------------------------

// aten::_local_scalar_dense(self) -> Scalar: self's one element as a Scalar
// (float64 for a floating dtype, int64, bool), what .item() returns. On a
// device, as PyTorch's _local_scalar_dense_cuda: the element's bytes are
// queued on the current stream behind the kernels that compute it
// (cudaMemcpyAsync, simMemcpyAsync), then the host waits for that stream
// once (cudaStreamSynchronize), in a floor-7 span named for the read
// (streams::ReadReason, Note [Reading a device tensor waits]).
void local_scalar_dense_kernel(const OpEntry& op, DispatchKeySet, Stack& s) {
  ScopedSpan span(Floor::Kernels, op.profiler_name);
  const Tensor& x = s[0].to_tensor();
  DESCENT_CHECK(x.numel() == 1, Error, "a Tensor with ", x.numel(), " elements cannot be converted to Scalar");
  begin(span, x);
  alignas(8) unsigned char element[8];
  streams::copy_bytes(element, Device{}, x.data_ptr(), x.device(), element_size(x.dtype()));
  Scalar v;
  visit_dtype(x.dtype(), [&]<typename T>() {
    T e;
    std::memcpy(&e, element, sizeof(T));
    if constexpr (std::is_same_v<T, bool>)
      v = Scalar(e);
    else if constexpr (is_int_v<T>)
      v = Scalar(int64_t(e));
    else if constexpr (is_reduced_float_v<T>)
      v = Scalar(double(float(e)));
    else
      v = Scalar(double(e));
  });
  span.arg("variant", x.device().type == DeviceType::CPU ? "read on the host" : "copied to the host");
  s.set_result(IValue(v));
}

// [SECTION] clone, _to_copy and cat -------------------------------------------------------------

// aten::clone: a row-major copy. (contiguous is a composite that calls it, composites.cpp.)
void clone_kernel(const OpEntry& op, DispatchKeySet, Stack& s) {
  ScopedSpan span(Floor::Kernels, op.profiler_name);
  const Tensor& x = s[0].to_tensor();
  Tensor out = empty_tensor(x.sizes(), x.dtype(), x.device());
  copy_into(span, x, out);
  s.set_result(std::move(out));
}

// aten::_to_copy (self, *, dtype, device): always a new tensor. aten::to is a
// composite that returns self when nothing changes and calls this otherwise.
// As aten's: aten::empty_strided makes the result on the target device and
// aten::copy_ fills it (Note [Copies between devices]). On the same device
// the result keeps a dense self's strides (x.t().double() is laid out as
// x.t()), as aten's does with its default memory format, preserve; any
// other self, and every copy between devices, gives a row-major result (Note
// [Output strides follow the inputs], layout.cpp).
void to_copy_kernel(const OpEntry& op, DispatchKeySet, Stack& s) {
  ScopedSpan span(Floor::Kernels, op.profiler_name);
  const Tensor& x = s[0].to_tensor();
  ScalarType dt = s[1].is_none() ? x.dtype() : s[1].to_scalar_type();
  Device dev = s[2].is_none() ? x.device() : s[2].to_device();
  if (span.active()) span.arg("dtype", dtype_name(dt)), span.arg("numel", x.numel());
  const bool keep = dev == x.device() && dense(x);
  Tensor out = call(Op::empty_strided, x.sizes(), keep ? x.strides() : contiguous_strides(x.sizes()), dt, dev);
  call(Op::copy_, out, x);
  const char* v = dev == x.device() ? "copy" : "between devices";
  span.arg("variant", v);
  last_variant() = v;
  s.set_result(std::move(out));
}

// Note [cat's checks]
// ~~~~~~~~~~~~~~~~~~~
// aten::cat(tensors, dim=0) joins tensors along dim, with PyTorch's checks in
// its order: no 0-d tensor ("zero-dimensional tensor (at position 1) cannot
// be concatenated"); dim wrapped by the first tensor that is not a 1-D
// tensor of size 0 (IndexError when out of range); a non-empty list
// (ValueError "torch.cat(): expected a non-empty list of Tensors"); every
// tensor on one device; then every tensor but those 1-D empty ones with the
// first one's number of dims and, but along dim, its sizes. The 1-D empty
// tensors are skipped, a rule PyTorch keeps from when a size-[0] tensor was
// the only empty one (cat([zeros(0), ones(2, 3)]) is [2, 3]); they still take
// part in the dtype, which is the list's promotion (Note [Type promotion]:
// int64 and float32 give float32). The result is contiguous; each input is
// copied into its slice of it by the copy loop of the device, which casts
// (one kernel per input, where PyTorch's CUDA cat copies several in one).
// The span says "optimized" when every copy took the fast path (dim 0 and
// contiguous inputs), else "reference"; the gradient is each input's slice
// of the result's (CatBackward0, derivatives.cpp).
void cat_kernel(const OpEntry& op, DispatchKeySet ks, Stack& s) {
  ScopedSpan span(Floor::Kernels, op.profiler_name);
  const OptionalTensorList& ts = s[0].to_tensor_list();
  int64_t dim = s[1].to_int();
  for (int i = 0; i < ts.size(); ++i)
    DESCENT_CHECK(ts[i].dim() > 0, Error, "zero-dimensional tensor (at position ", i, ") cannot be concatenated");
  auto skipped = [](const Tensor& t) { return t.dim() == 1 && t.sizes()[0] == 0; };
  int first = 0;
  while (first < ts.size() && skipped(ts[first])) ++first;
  if (first < ts.size()) dim = wrap_dim(dim, ts[first].dim(), op.python_name);
  DESCENT_CHECK(ts.size() > 0, ValueError, "torch.cat(): expected a non-empty list of Tensors");
  for (int i = 1; i < ts.size(); ++i)  // Note [Two device messages] (boxed.h)
    check_wrapper_devices(op, ks, {{"tensors", &ts[0]}, {"tensors", &ts[i]}});
  std::vector<const Tensor*> all;
  for (const Tensor& t : ts) all.push_back(&t);
  const ScalarType dt = result_type(all.data(), int(all.size()));
  DimVector sizes = {0};
  if (first < ts.size()) {
    const Tensor& ref = ts[first];
    int64_t along = 0;
    for (int i = 0; i < ts.size(); ++i) {
      const Tensor& t = ts[i];
      if (skipped(t)) continue;
      DESCENT_CHECK(t.dim() == ref.dim(), Error, "Tensors must have same number of dimensions: got ", ref.dim(),
                    " and ", t.dim());
      for (int d = 0; d < t.dim(); ++d)
        DESCENT_CHECK(d == dim || t.sizes()[d] == ref.sizes()[d], Error,
                      "Sizes of tensors must match except in "
                      "dimension ",
                      dim, ". Expected size ", ref.sizes()[d], " but got size ", t.sizes()[d], " for tensor number ", i,
                      " in the list.");
      along += t.sizes()[int(dim)];
    }
    sizes = ref.sizes();
    sizes[int(dim)] = along;
  }
  Tensor out = empty_tensor(sizes, dt, ts[0].device());
  begin(span, out);
  record_work(span, 2 * nbytes(out), 0);  // each input's elements read once, into out
  const bool on_device = out.device().type != DeviceType::CPU;
  bool all_optimized = true;
  int64_t at = 0;
  for (const Tensor& t : ts) {
    if (skipped(t) || t.numel() == 0) {
      if (!skipped(t)) at += t.sizes()[int(dim)];
      continue;
    }
    const Tensor part = out.as_strided(t.sizes(), out.strides(), out.offset() + at * out.strides()[int(dim)]);
    at += t.sizes()[int(dim)];
    if (on_device) {
      device::copy(t, part);
    } else if (!(want_optimized() && optimized_copy(t, part))) {
      reference_copy(t, part);
      all_optimized = false;
    }
  }
  const char* v = on_device                           ? device::variant(out.device())
                  : all_optimized && want_optimized() ? "optimized"
                                                      : "reference";
  last_variant() = v;
  span.arg("variant", v);
  s.set_result(std::move(out));
}

}  // namespace descent::kernels
