// Floor 5: what the boxed kernels share, and their names for the registration.
//
// [SECTION] Running a variant
// [SECTION] Devices: where a result lives
// [SECTION] The boxed kernels, by family
//
// A boxed kernel reads its arguments from the stack in schema order (the op
// table in floors/dispatch/ops.h), opens a floor-5 span, checks, broadcasts,
// promotes, asks floor 6 for the output, runs a loop and leaves its result on
// the stack. The same kernels are registered for the CPU, Sim and CUDA keys
// (register_kernels.cpp): for a device tensor only the loop differs
// (run_loop below, Note [One kernel body, two devices] in device_loops.h).
// Views, factories and indexing live in views.cpp, factories.cpp and
// indexing.cpp.
#pragma once

#include <initializer_list>

#include "floors/dispatch/unboxed.h"
#include "floors/kernels/kernels.h"
#include "floors/kernels/roofline.h"
#include "tracer/tracer.h"

namespace descent::kernels {

using trace::Floor;
using trace::ScopedSpan;

// [SECTION] Running a variant ----------------------------------------------------

// Runs the optimized loop when it is wanted and applies, else the reference;
// records which ran on the span and in last_variant().
template <typename Opt, typename Ref>
void run_variant(ScopedSpan& span, Opt&& optimized, Ref&& reference) {
  const char* v = "optimized";
  if (!DESCENT_DECIDES(span, want_optimized() && optimized())) {  // Note [Where a span decided]
    reference();
    v = "reference";
  }
  last_variant() = v;
  span.arg("variant", v);
}

// Runs a device tensor's loop instead (Note [One kernel body, two devices],
// device_loops.h): one kernel enqueued on its device's current stream; the
// span and last_variant() say "sim" or "cuda". Everything before the loop
// (checks, broadcasting, promotion, the output) is the same for every device.
template <typename Dev, typename Opt, typename Ref>
void run_loop(ScopedSpan& span, const Tensor& out, Dev&& on_device, Opt&& optimized, Ref&& reference) {
  if (const char* at = DESCENT_HERE; out.device().type == DeviceType::CPU) {
    run_variant(span, optimized, reference);
  } else {
    on_device();
    const char* v = device::variant(out.device());
    last_variant() = v;
    span.arg(trace::kDecidedAt, at);  // Note [Where a span decided]
    span.arg("variant", v);
  }
}

// The kernel span's first arguments: the result's dtype and number of elements.
inline void begin(ScopedSpan& span, const Tensor& out) {
  if (!span.active()) return;
  span.arg("dtype", dtype_name(out.dtype()));
  span.arg("numel", out.numel());
}

// The work of a kernel whose loop reads each input's own elements once and
// writes out once (a broadcast operand counts its own elements, not the
// result's), with `flops_per_element` FLOP an output element when it computes
// in floating point (`compute`), for the roofline (Note [A roofline for every
// kernel span], roofline.cpp).
inline void loop_work(ScopedSpan& span, const Tensor& out, std::initializer_list<const Tensor*> in, ScalarType compute,
                      int64_t flops_per_element = 1) {
  if (!span.active()) return;
  int64_t bytes = nbytes(out);
  for (const Tensor* t : in) bytes += nbytes(*t);
  record_work(span, bytes, is_floating(compute) ? flops_per_element * out.numel() : 0);
}

// [SECTION] Devices: where a result lives ----------------------------------------

// A CPU 0-d tensor (a Python number, x + 1) may join a device tensor, as
// in PyTorch (TensorIterator's CPU scalars): the device loop reads it on the
// host and passes it by value. Any other mix of devices is an error.
// Note [Two device messages]
// ~~~~~~~~~~~~~~~~~~~~~~~~~~~
// PyTorch has two words for operands on two devices. An op that runs
// through a TensorIterator (add, mul, where, ...) names the first device
// that is not the CPU first, whatever the operands' order (compute_types):
//   Expected all tensors to be on the same device, but found at least two
//   devices, cuda:0 and cpu!
// An op whose generated backend wrapper checks its arguments one by one
// (mm, bmm, addmm, cat: c10::impl::check_and_update_common_device) names
// the argument that differs from the first one's device, and the wrapper:
//   Expected all tensors to be on the same device, but got mat2 is on cpu,
//   different from other tensors on cuda:0 (when checking argument in
//   method wrapper_CUDA_mm)
// descent's wrappers are named by its keys: wrapper_Sim_mm for the
// simulated device (c10's PrivateUse1 slot, whose wrappers are the
// out-of-tree backend's own). `op` is kept for the signature's sake: neither
// message names the op (no "mm(): " prefix, which PyTorch does not print).
bool cpu_scalar(const Tensor& t);
[[noreturn]] void devices_differ(const char* op, const Tensor& a, const Tensor& b);
void check_same_device(const char* op, const Tensor& a, const Tensor& b);
// The wrapper's check (Note [Two device messages]): each (argument name,
// tensor) in order against the first one's device; `ks` names the backend.
void check_wrapper_devices(const OpEntry& op, DispatchKeySet ks,
                           std::initializer_list<std::pair<const char*, const Tensor*>> args);
// The device of a binary op's result: the operands' device, the other one's
// when one is a CPU scalar.
Device common_device(const char* op, const Tensor& a, const Tensor& b);
// In place, self's device is the result's: only `other` may be a CPU scalar.
void check_inplace_device(const char* op, const Tensor& self, const Tensor& other);

// A dtype as c10's TypeMeta prints it (GCC's name of the C++ type), where
// aten's messages print one: mm's ("long int != float"), masked_fill_'s
// ("got mask with dtype unsigned char"), random_'s bounds.
inline const char* type_meta_name(ScalarType t) {
  switch (t) {
    case ScalarType::Bool:
      return "bool";
    case ScalarType::UInt8:
      return "unsigned char";
    case ScalarType::Int8:
      return "signed char";
    case ScalarType::Int16:
      return "short int";
    case ScalarType::Int32:
      return "int";
    case ScalarType::Int64:
      return "long int";
    case ScalarType::Float16:
      return "c10::Half";
    case ScalarType::BFloat16:
      return "c10::BFloat16";
    case ScalarType::Float32:
      return "float";
    default:
      return "double";
  }
}

// [SECTION] The boxed kernels, by family ------------------------------------------

// Elementwise (elementwise_kernels.cpp).
void unary_kernel(const OpEntry& op, DispatchKeySet, Stack& s);
void clamp_kernel(const OpEntry& op, DispatchKeySet, Stack& s);   // Note [clamp's bounds]
void clamp__kernel(const OpEntry& op, DispatchKeySet, Stack& s);  // clamp_: clamp, then copy_ into self
void binary_kernel(const OpEntry& op, DispatchKeySet, Stack& s);  // add, sub, mul, div, pow, rsub
void compare_kernel(const OpEntry& op, DispatchKeySet, Stack& s);
// The binary ops' kernel body: add, sub, mul, div, pow of two tensors.
Tensor binary_op(const OpEntry& op, const Tensor& a, const Tensor& b, const Scalar& alpha);
void check_sub(const Tensor& a, const Tensor& b);  // PyTorch's sub_check (sub and sub_)

// Reductions (reduction_kernels.cpp).
void sum_kernel(const OpEntry& op, DispatchKeySet, Stack& s);  // sum, mean and their dim overloads
void max_kernel(const OpEntry& op, DispatchKeySet, Stack& s);  // max, max.dim
void mse_loss_kernel(const OpEntry& op, DispatchKeySet, Stack& s);
void arg_kernel(const OpEntry& op, DispatchKeySet, Stack& s);      // argmax, argmin
void all_any_kernel(const OpEntry& op, DispatchKeySet, Stack& s);  // all, any and their dim overloads

// Matrix products (product_kernels.cpp).
void product_kernel(const OpEntry& op, DispatchKeySet, Stack& s);  // mm, bmm, dot, mv
void addmm_kernel(const OpEntry& op, DispatchKeySet, Stack& s);

// Copies (copy_kernels.cpp).
void local_scalar_dense_kernel(const OpEntry& op, DispatchKeySet, Stack& s);
void clone_kernel(const OpEntry& op, DispatchKeySet, Stack& s);
void to_copy_kernel(const OpEntry& op, DispatchKeySet, Stack& s);
void cat_kernel(const OpEntry& op, DispatchKeySet, Stack& s);  // Note [cat's checks]
// src (dst's sizes) into dst by the copy loop of dst's device, in `span`.
void copy_into(ScopedSpan& span, const Tensor& src, const Tensor& dst);
// x's elements, contiguous, in dtype dt on `dev` (in `into` when given: a
// contiguous tensor there of x's sizes and dtype dt): Note [Copies between devices].
Tensor move_to(const Tensor& x, Device dev, ScalarType dt, bool non_blocking = false, const Tensor* into = nullptr);

// In place (inplace_kernels.cpp, Note [In-place ops]).
void inplace_binary_kernel(const OpEntry& op, DispatchKeySet, Stack& s);  // add_, sub_, mul_, div_
void copy__kernel(const OpEntry& op, DispatchKeySet, Stack& s);
void fill__kernel(const OpEntry& op, DispatchKeySet, Stack& s);  // fill_.Scalar, zero_
void fill_tensor_kernel(const OpEntry& op, DispatchKeySet, Stack& s);

// Indexing (indexing.cpp, Note [Advanced indexing]).
void index_kernel(const OpEntry& op, DispatchKeySet, Stack& s);
void index_put_kernel(const OpEntry& op, DispatchKeySet, Stack& s);

}  // namespace descent::kernels
