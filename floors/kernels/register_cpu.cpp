// The boxed kernels of floor 5: check, broadcast, promote, allocate, run.
//
// [SECTION] Running a variant
// [SECTION] Elementwise
// [SECTION] Reductions
// [SECTION] Matrix product
// [SECTION] Copies
// [SECTION] In place: overlap, then writing into self
// [SECTION] Registration
//
// Each kernel reads its arguments from the stack in schema order (the op
// table in floors/dispatch/ops.h), opens a floor-5 span, and leaves its
// result on the stack. Views, factories and indexing live in views.cpp,
// factories.cpp and indexing.cpp. The same kernels are registered for the
// Sim and CUDA keys: for a device tensor only the loop differs (run_loop,
// Note [One kernel body, two devices] in device_loops.h).
#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>

#include "floors/dispatch/unboxed.h"
#include "floors/kernels/kernels.h"
#include "floors/kernels/matmul_ladder.h"
#include "floors/kernels/matmul_rungs.h"
#include "floors/streams/streams.h"
#include "tracer/tracer.h"

namespace descent::kernels {

Variant& requested_variant() {
  thread_local Variant v = Variant::Auto;
  return v;
}
const char*& last_variant() {
  thread_local const char* v = "none";
  return v;
}

// Defined in views.cpp, factories.cpp and indexing.cpp.
void register_view_kernels(Library& m);
void register_factory_kernels(Library& m);
void index_kernel(const OpEntry& op, DispatchKeySet, Stack& s);
void index_put_kernel(const OpEntry& op, DispatchKeySet, Stack& s);

namespace {

// [SECTION] Running a variant ----------------------------------------------------

using trace::Floor;
using trace::ScopedSpan;

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

// A CPU 0-d tensor (a Python number, x + 1) may join a device tensor, as
// in PyTorch (TensorIterator's CPU scalars): the device loop reads it on the
// host and passes it by value. Any other mix of devices is an error.
bool cpu_scalar(const Tensor& t) { return t.device().type == DeviceType::CPU && t.dim() == 0; }

[[noreturn]] void devices_differ(const char* op, const Tensor& a, const Tensor& b) {
  throw Error(str(op, "(): Expected all tensors to be on the same device, but found at least two devices, ",
                  a.device().str(), " and ", b.device().str(), "!"));
}

void check_same_device(const char* op, const Tensor& a, const Tensor& b) {
  if (!(a.device() == b.device())) devices_differ(op, a, b);
}

// The device of a binary op's result: the operands' device, the other one's
// when one is a CPU scalar.
Device common_device(const char* op, const Tensor& a, const Tensor& b) {
  if (a.device() == b.device() || cpu_scalar(b)) return a.device();
  if (cpu_scalar(a)) return b.device();
  devices_differ(op, a, b);
}

// In place, self's device is the result's: only `other` may be a CPU scalar.
void check_inplace_device(const char* op, const Tensor& self, const Tensor& other) {
  if (!(self.device() == other.device() || cpu_scalar(other))) devices_differ(op, self, other);
}

void begin(ScopedSpan& span, const Tensor& out) {
  if (!span.active()) return;
  span.arg("dtype", dtype_name(out.dtype()));
  span.arg("numel", out.numel());
}

// [SECTION] Elementwise ------------------------------------------------------------

void unary_kernel(const OpEntry& op, DispatchKeySet, Stack& s) {
  ScopedSpan span(Floor::Kernels, op.profiler_name);
  Tensor x = s[0].to_tensor();
  DESCENT_CHECK(!(op.id == Op::neg && x.dtype() == ScalarType::Bool), Error,
                "Negation, the `-` operator, on a bool tensor is not supported. If you are trying to invert a mask, "
                "use the `~` or `logical_not()` operator instead.");
  DESCENT_CHECK(!(op.id == Op::relu && x.dtype() == ScalarType::Bool), Error, "Boolean inputs not supported for relu");
  DESCENT_CHECK(!(op.id == Op::abs && x.dtype() == ScalarType::Bool), NotImplementedError,
                "\"abs_cpu\" not implemented for 'Bool'");
  // A float-only op over an integral tensor computes in the default float:
  // on the CPU x is cast first (aten::to, as TensorIterator's CPU path makes
  // a temporary), on a device the loop converts as it loads (Note [A CPU
  // scalar on a device op], device_loops.h).
  const ScalarType dt = float_only(op.id) && !is_floating(x.dtype()) ? kDefaultFloat : x.dtype();
  if (dt != x.dtype() && x.device().type == DeviceType::CPU) x = cast(x, dt);
  Tensor out = empty_output(x.sizes(), dt, x.device(), {&x});  // Note [Output strides follow the inputs]
  begin(span, out);
  run_loop(span, out, [&] { device::unary(op.id, x, out); }, [&] { return optimized_unary(op.id, x, out); },
           [&] { reference_unary(op.id, x, out); });
  s.set_result(std::move(out));
}

// Note [clamp's bounds]
// ~~~~~~~~~~~~~~~~~~~~~
// clamp(self, min=None, max=None), clamp_min(self, min) and clamp_max(self,
// max) take their bounds as Scalars, as PyTorch 2.11's do:
//   - at least one bound must be given ("torch.clamp: At least one of 'min'
//     or 'max' must not be None");
//   - the result's dtype is self's when self is floating; otherwise the
//     bounds join the promotion as Python numbers do (Note [Type
//     promotion]): an int64 tensor clamped at 0.5 is float32, a bool tensor
//     clamped at 0 is int64;
//   - a NaN bound makes every element NaN where PyTorch's kernels fill with
//     it: clamp with both bounds given, clamp_min and clamp_max; clamp with
//     one bound runs that bound's kernel, which keeps every element as it is
//     (x < NaN is false);
//   - otherwise each element is PyTorch's CPU expression (ClampF,
//     elementwise.h), the bounds converted to the result's dtype with
//     Scalar's check first (a float16 tensor cannot be clamped at 1e6:
//     "cannot be converted to type at::Half without overflow"), on every
//     device alike (PyTorch's CUDA kernel instead compares in float32 and
//     propagates NaN by a test of its own; the results are the same);
//   - bool has no kernel: "clamp_scalar_cpu" not implemented for 'Bool'
//     (clamp_min_scalar_cpu, clamp_max_scalar_cpu for one bound).
// The gradient (ClampBackward1, ClampMinBackward0, ClampMaxBackward0) passes
// where min <= self <= max, bounds included (derivatives.cpp).
void clamp_kernel(const OpEntry& op, DispatchKeySet, Stack& s) {
  ScopedSpan span(Floor::Kernels, op.profiler_name);
  const Tensor& x = s[0].to_tensor();
  ClampBounds b;
  if (op.id != Op::clamp_max && !s[1].is_none()) b.lo = s[1].to_scalar(), b.has_lo = true;
  if (op.id == Op::clamp && !s[2].is_none()) b.hi = s[2].to_scalar(), b.has_hi = true;
  if (op.id == Op::clamp_max) b.hi = s[1].to_scalar(), b.has_hi = true;
  DESCENT_CHECK(b.has_lo || b.has_hi, Error, "torch.clamp: At least one of 'min' or 'max' must not be None");
  ScalarType dt = x.dtype();
  if (!is_floating(dt)) {  // the bounds promote as Python numbers do
    const Tensor lo = scalar_tensor(b.lo), hi = scalar_tensor(b.hi);
    const Tensor* ts[3] = {&x};
    int n = 1;
    if (b.has_lo) ts[n++] = &lo;
    if (b.has_hi) ts[n++] = &hi;
    dt = result_type(ts, n);
  }
  const auto is_nan = [](const Scalar& v) { return v.is_floating() && std::isnan(v.to_double()); };
  const bool nan_fill = (op.id == Op::clamp && b.has_lo && b.has_hi && (is_nan(b.lo) || is_nan(b.hi))) ||
                        (op.id == Op::clamp_min && is_nan(b.lo)) || (op.id == Op::clamp_max && is_nan(b.hi));
  if (nan_fill) {
    Tensor out = empty_output(x.sizes(), dt, x.device(), {&x});
    begin(span, out);
    const Scalar nan(std::numeric_limits<double>::quiet_NaN());
    run_loop(span, out, [&] { device::fill(out, nan); }, [&] { return optimized_fill(out, nan); },
             [&] { reference_fill(out, nan); });
    s.set_result(std::move(out));
    return;
  }
  DESCENT_CHECK(dt != ScalarType::Bool, NotImplementedError, "\"",
                b.has_lo && b.has_hi ? "clamp_scalar_cpu" : b.has_lo ? "clamp_min_scalar_cpu" : "clamp_max_scalar_cpu",
                "\" not implemented for 'Bool'");
  visit_dtype(dt, [&]<typename T>() { visit_unary<T>(op.id, b, [](auto) {}); });  // the bounds' checks, before any launch
  const Tensor xc = cast(x, dt);  // keeps x's layout when x is dense (_to_copy)
  Tensor out = empty_output(x.sizes(), dt, x.device(), {&xc});
  begin(span, out);
  run_loop(span, out, [&] { device::unary(op.id, xc, out, b); }, [&] { return optimized_unary(op.id, xc, out, b); },
           [&] { reference_unary(op.id, xc, out, b); });
  s.set_result(std::move(out));
}

// PyTorch's sub_check: a bool operand on either side, a Python bool too.
void check_sub(const Tensor& a, const Tensor& b) {
  const bool ba = a.dtype() == ScalarType::Bool, bb = b.dtype() == ScalarType::Bool;
  DESCENT_CHECK(!(ba && bb), Error,
                "Subtraction, the `-` operator, with two bool tensors is not supported. Use the `^` or "
                "`logical_xor()` operator instead.");
  DESCENT_CHECK(!(ba || bb), Error,
                "Subtraction, the `-` operator, with a bool tensor is not supported. If you are trying to invert a "
                "mask, use the `~` or `logical_not()` operator instead.");
}

// PyTorch's pow checks. A Python number as the exponent (pow.Tensor_Scalar,
// here a wrapped number) may not be a negative int when the base is integral;
// a tensor of them may (pow.Tensor_Tensor): PowF gives PyTorch's powi
// results, 0 for |base| > 1 (elementwise.h). Two bool tensors have no pow.
void check_pow(const Tensor& a, const Tensor& b, ScalarType ct) {
  const bool int_base = is_integral(a.dtype(), true);
  DESCENT_CHECK(!(b.impl()->wrapped_number && int_base && b.dtype() == ScalarType::Int64 && *b.data<int64_t>() < 0),
                Error, "Integers to negative integer powers are not allowed.");
  DESCENT_CHECK(!(ct == ScalarType::Bool && !a.impl()->wrapped_number && !b.impl()->wrapped_number),
                NotImplementedError, "\"pow\" not implemented for 'Bool'");
}

Tensor binary_op(const OpEntry& op, const Tensor& a, const Tensor& b, const Scalar& alpha) {
  ScopedSpan span(Floor::Kernels, op.profiler_name);
  const Device dev = common_device(op.python_name, a, b);
  ScalarType ct = result_type(a, b);
  if (op.id == Op::sub) check_sub(a, b);
  if (op.id == Op::pow) check_pow(a, b, ct);
  if (op.id == Op::div && !is_floating(ct)) ct = kDefaultFloat;  // true division
  DESCENT_CHECK(!(alpha.is_floating() && !is_floating(ct)), Error, op.python_name,
                "(): For integral input tensors, argument alpha must not be a floating point number.");
  visit_dtype(ct, [&]<typename T>() { (void)alpha.to<opmath_t<T>>(op.python_name, "alpha"); });  // Note [Checked scalar conversion]
  DimVector shape = broadcast_shapes(a.sizes(), b.sizes(), op.python_name);
  Operand ca(a, ct, shape, dev), cb(b, ct, shape, dev);
  Tensor out = empty_output(shape, ct, dev, {&ca.unexpanded(), &cb.unexpanded()});
  begin(span, out);
  run_loop(span, out, [&] { device::binary(op.id, ca.get(), cb.get(), out, alpha); },
           [&] { return optimized_binary(op.id, ca.get(), cb.get(), out, alpha); },
           [&] { reference_binary(op.id, ca.get(), cb.get(), out, alpha); });
  return out;
}

// The boxed kernel of add, sub, mul, div, pow (three overloads) and rsub:
// arguments from the stack. A Scalar operand becomes a 0-d wrapped number
// (Note [Reflected operators], tensor_methods.cpp): x ** 2 and 2 ** x run
// pow's loop here, as aten's pow.Tensor_Scalar and pow.Scalar kernels do;
// rsub(x, 2, alpha), 2 - alpha * x, calls aten::sub through the dispatcher,
// as aten's rsub.Scalar kernel does, so the trace shows sub beneath it.
void binary_kernel(const OpEntry& op, DispatchKeySet, Stack& s) {
  const Scalar one(int64_t{1});
  if (op.id == Op::pow_scalar || op.id == Op::pow_scalar_base) {
    const bool base = op.id == Op::pow_scalar_base;
    const Tensor a = base ? scalar_tensor(s[0].to_scalar()) : s[0].to_tensor();
    const Tensor b = base ? s[1].to_tensor() : scalar_tensor(s[1].to_scalar());
    s.set_result(binary_op(op_entry(Op::pow), a, b, one));
    return;
  }
  if (op.id == Op::rsub) {
    ScopedSpan span(Floor::Kernels, op.profiler_name);
    Tensor out = call(Op::sub, scalar_tensor(s[1].to_scalar()), s[0].to_tensor(), s[2].to_scalar());
    s.set_result(std::move(out));
    return;
  }
  const Scalar alpha = op.schema.args.size() > 2 ? s[2].to_scalar() : Scalar(int64_t{1});
  Tensor out = binary_op(op, s[0].to_tensor(), s[1].to_tensor(), alpha);
  s.set_result(std::move(out));
}

// The same kernels unboxed (Note [Boxed and unboxed calls], unboxed.h), in
// the schemas' signatures: add.Tensor and sub.Tensor take alpha, mul and div do not.
using BinaryAlphaSig = Tensor(const Tensor&, const Tensor&, const Scalar&);
using BinarySig = Tensor(const Tensor&, const Tensor&);
template <Op kOp>
Tensor typed_binary_alpha(DispatchKeySet, const Tensor& a, const Tensor& b, const Scalar& alpha) {
  return binary_op(op_entry(kOp), a, b, alpha);
}
template <Op kOp>
Tensor typed_binary(DispatchKeySet, const Tensor& a, const Tensor& b) {
  return binary_op(op_entry(kOp), a, b, Scalar(int64_t{1}));
}

void compare_kernel(const OpEntry& op, DispatchKeySet, Stack& s) {
  ScopedSpan span(Floor::Kernels, op.profiler_name);
  const Tensor& a = s[0].to_tensor();
  const Tensor& b = s[1].to_tensor();
  const Device dev = common_device(op.python_name, a, b);
  ScalarType ct = result_type(a, b);
  DimVector shape = broadcast_shapes(a.sizes(), b.sizes(), op.python_name);
  Operand ca(a, ct, shape, dev), cb(b, ct, shape, dev);
  Tensor out = empty_output(shape, ScalarType::Bool, dev, {&ca.unexpanded(), &cb.unexpanded()});
  begin(span, out);
  // One CPU loop only: comparisons are not a hot path.
  run_loop(span, out, [&] { device::compare(op.id, ca.get(), cb.get(), out, ct); }, [] { return false; },
           [&] { reference_compare(op.id, ca.get(), cb.get(), out); });
  s.set_result(std::move(out));
}

// [SECTION] Reductions ------------------------------------------------------------

// Which dims `dims` names (all of them when None or empty); raises on repeats.
void reduced_mask(const char* op, const Tensor& x, const IValue& dims, bool* reduced) {
  std::fill(reduced, reduced + kMaxDims, dims.is_none() || dims.to_int_list().empty());
  if (dims.is_none()) return;
  for (int64_t d : dims.to_int_list()) {
    int w = wrap_dim(d, x.dim(), op);
    if (x.dim() == 0) continue;
    DESCENT_CHECK(!reduced[w], Error, op, "(): dim ", w, " appears multiple times in the list of dims");
    reduced[w] = true;
  }
}

DimVector keep_shape(const Tensor& x, const bool* reduced) {
  DimVector k = x.sizes();
  for (int d = 0; d < k.size(); ++d)
    if (reduced[d]) k[d] = 1;
  return k;
}

// The keepdim result, or a view of it without the reduced dims.
Tensor finish_reduction(const Tensor& keep, const bool* reduced, bool keepdim) {
  if (keepdim) return keep;
  DimVector sizes;
  for (int d = 0; d < keep.dim(); ++d)
    if (!reduced[d]) sizes.push_back(keep.sizes()[d]);
  return keep.as_strided(sizes, contiguous_strides(sizes), 0);
}

// aten::sum and aten::mean (every element; args self, dtype) and their
// dim overloads sum.dim_IntList and mean.dim (self, dim, keepdim, dtype).
// With a dtype the input is converted to it first, as PyTorch does.
void sum_kernel(const OpEntry& op, DispatchKeySet, Stack& s) {
  ScopedSpan span(Floor::Kernels, op.profiler_name);
  const bool by_dim = op.id == Op::sum_dim || op.id == Op::mean_dim;
  const bool mean = op.id == Op::mean || op.id == Op::mean_dim;
  const IValue& dtype = s[by_dim ? 3 : 1];
  Tensor x = s[0].to_tensor();
  bool reduced[kMaxDims];
  reduced_mask(op.python_name, x, by_dim ? s[1] : IValue(), reduced);
  DESCENT_CHECK(!mean || is_floating(dtype.is_none() ? x.dtype() : dtype.to_scalar_type()), Error,
                "mean(): could not infer output dtype. ", dtype.is_none() ? "Input" : "Optional",
                " dtype must be either a floating point or complex dtype. Got: ",
                type_word(dtype.is_none() ? x.dtype() : dtype.to_scalar_type()));
  if (!dtype.is_none()) x = cast(x, dtype.to_scalar_type());
  // Integers and bool sum into int64 (sum of an int32 tensor is int64), as
  // PyTorch's promote_integers does, unless a dtype was asked for: then the
  // sum is of that dtype, int32 wrapping in int32 (bool: descent still sums
  // it into int64).
  ScalarType dt = is_floating(x.dtype()) || (!dtype.is_none() && x.dtype() != ScalarType::Bool) ? x.dtype()
                                                                                                 : ScalarType::Int64;
  // A CPU mean of float16 or bfloat16 sums into float32, divides there and
  // rounds once, as PyTorch's mean_out does (a device divides in its own
  // loop, in float32 too: SumOut, device_reduce.h).
  const bool cpu_mean = mean && x.device().type == DeviceType::CPU;
  const bool via_float = cpu_mean && is_reduced_floating(dt);
  Tensor keep = empty_tensor(keep_shape(x, reduced), via_float ? ScalarType::Float32 : dt, x.device());
  begin(span, keep);
  run_loop(span, keep, [&] { device::sum(x, keep, reduced, mean); }, [&] { return optimized_sum(x, keep, reduced); },
           [&] { reference_sum(x, keep, reduced); });
  if (cpu_mean) {
    int64_t count = keep.numel() == 0 ? 0 : x.numel() / keep.numel();
    visit_dtype(keep.dtype(), [&]<typename T>() {
      if constexpr (std::is_floating_point_v<T>) {
        T* y = keep.data<T>();
        for (int64_t i = 0; i < keep.numel(); ++i) y[i] = count ? y[i] / T(count) : T(NAN);
      }
    });
    if (via_float) keep = cast(keep, dt);
  }
  s.set_result(finish_reduction(keep, reduced, by_dim && s[2].to_bool()));
}

void max_kernel(const OpEntry& op, DispatchKeySet, Stack& s) {
  ScopedSpan span(Floor::Kernels, op.profiler_name);
  const Tensor& x = s[0].to_tensor();
  bool reduced[kMaxDims];
  if (op.id == Op::max) {
    DESCENT_CHECK(x.numel() > 0, Error, "max(): Expected reduction dim to be specified for input.numel() == 0. "
                  "Specify the reduction dim with the 'dim' argument.");
    std::fill(reduced, reduced + kMaxDims, true);
    Tensor keep = empty_tensor(keep_shape(x, reduced), x.dtype(), x.device());
    begin(span, keep);
    run_loop(span, keep, [&] { device::max(x, keep, nullptr, reduced); }, [&] { return optimized_max(x, keep, reduced); },
             [&] { reference_max(x, keep, nullptr, reduced); });
    s.set_result(finish_reduction(keep, reduced, false));
    return;
  }
  int d = wrap_dim(s[1].to_int(), x.dim(), op.python_name);
  bool keepdim = s[2].to_bool();
  std::fill(reduced, reduced + kMaxDims, false);
  reduced[d] = x.dim() > 0;
  DESCENT_CHECK(x.dim() == 0 || x.sizes()[d] > 0, IndexError, "max(): Expected reduction dim ", d,
                " to have non-zero size.");
  Tensor keep = empty_tensor(keep_shape(x, reduced), x.dtype(), x.device());
  Tensor idx = empty_tensor(keep.sizes(), ScalarType::Int64, x.device());
  begin(span, keep);
  run_loop(span, keep, [&] { device::max(x, keep, &idx, reduced); }, [] { return false; },
           [&] { reference_max(x, keep, &idx, reduced); });
  s.clear();
  s.push(finish_reduction(keep, reduced, keepdim));
  s.push(finish_reduction(idx, reduced, keepdim));
}

// aten::mse_loss(self, target, reduction=Mean): as PyTorch's kernel, the
// squared differences (a binary loop of MseF, elementwise.h: broadcast and
// promoted as a binary op, floats only: "mse_cpu" not implemented for
// 'Long'), then for reduction 1 or 2 aten::mean or aten::sum of them, called
// through the dispatcher, so the trace shows them beneath this kernel.
// PyTorch asserts reduction is 0, 1 or 2 (an internal assert); descent says
// so in words.
void mse_loss_kernel(const OpEntry& op, DispatchKeySet, Stack& s) {
  ScopedSpan span(Floor::Kernels, op.profiler_name);
  const Tensor& a = s[0].to_tensor();
  const Tensor& b = s[1].to_tensor();
  const int64_t reduction = s[2].to_int();
  DESCENT_CHECK(reduction >= 0 && reduction <= 2, Error, "mse_loss(): reduction must be 0 (none), 1 (mean) or 2 "
                "(sum), but got ", reduction);
  const Device dev = common_device(op.python_name, a, b);
  const ScalarType ct = result_type(a, b);
  DESCENT_CHECK(is_floating(ct), NotImplementedError, "\"mse_cpu\" not implemented for '", type_word(ct), "'");
  const DimVector shape = broadcast_shapes(a.sizes(), b.sizes(), op.python_name);
  Operand ca(a, ct, shape, dev), cb(b, ct, shape, dev);
  Tensor loss = empty_output(shape, ct, dev, {&ca.unexpanded(), &cb.unexpanded()});
  begin(span, loss);
  const Scalar one(int64_t{1});
  run_loop(span, loss, [&] { device::binary(op.id, ca.get(), cb.get(), loss, one); },
           [&] { return optimized_binary(op.id, ca.get(), cb.get(), loss, one); },
           [&] { reference_binary(op.id, ca.get(), cb.get(), loss, one); });
  if (reduction == 0) {
    s.set_result(std::move(loss));
    return;
  }
  const char* ran = last_variant();
  Tensor r = call(reduction == 1 ? Op::mean : Op::sum, loss, IValue());
  if (std::strcmp(ran, "optimized") != 0) last_variant() = ran;  // "optimized" only when both loops were
  s.set_result(std::move(r));
}

// [SECTION] Matrix product -------------------------------------------------------

// A dtype as c10's TypeMeta prints it (GCC's name of the C++ type), which is
// how aten::mm names the dtypes it refuses: "long int != float".
const char* type_meta_name(ScalarType t) {
  switch (t) {
    case ScalarType::Bool: return "bool";
    case ScalarType::Int64: return "long int";
    case ScalarType::Float32: return "float";
    case ScalarType::Float64: return "double";
    case ScalarType::Float16: return "c10::Half";
    case ScalarType::BFloat16: return "c10::BFloat16";
    case ScalarType::UInt8: return "unsigned char";
    case ScalarType::Int8: return "signed char";
    case ScalarType::Int16: return "short int";
    case ScalarType::Int32: return "int";
  }
  return "?";
}

// out[B, M, N] = A[B, M, K] x Bm[B, K, N] (views of the operands, any
// strides), in dtype ct on `dev`: the register tiles when they apply (Note
// [Register-blocked matmul]), else the reference loop, or the device's.
Tensor batched_product(ScopedSpan& span, const Tensor& A, const Tensor& Bm, ScalarType ct, Device dev) {
  Tensor out = empty_tensor({A.sizes()[0], A.sizes()[1], Bm.sizes()[2]}, ct, dev);
  begin(span, out);
  run_loop(span, out, [&] { device::matmul(A, Bm, out); },  // any strides (Note [Device matmul], device_reduce.h)
           [&] { return cpu_matmul(A, Bm, out); },  // the rung chosen (Note [Matmul rungs], matmul_rungs.cpp)
           [&] { reference_matmul(A, Bm, out); });
  // Every device names the rung that ran (Note [Matmul rungs], Note [The matmul ladder]):
  // the CPU its vector unit too, a GPU the kernel and why the rung asked for could not take it.
  if (dev.type == DeviceType::CPU) {
    const bool optimized = std::strcmp(last_variant(), "optimized") == 0;
    if (!optimized) last_matmul_rung() = "reference";
    span.arg("rung", last_matmul_rung());
    if (optimized) span.arg("isa", matmul_isa());
  } else if (span.active() && out.numel() > 0) {
    const device::RungRun& r = device::last_matmul_run();
    span.arg("rung", device::rung_name(r.rung));
    span.arg("kernel", r.kernel);
    if (!r.fallback.empty()) span.arg("rung_fallback", trace::intern(r.fallback));
  }
  return out;
}

// bmm and mv have no dtype check of their own in PyTorch: their CPU kernels
// read the second operand as the first's type, and that read refuses it.
void check_read_as(const Tensor& a, const Tensor& b) {
  DESCENT_CHECK(a.dtype() == b.dtype(), Error, "expected scalar type ", type_word(a.dtype()), " but found ",
                type_word(b.dtype()));
}

// aten::mm, bmm, dot and mv: PyTorch's checks and messages for each, then
// one batched product out[B, M, N] = A[B, M, K] x Bm[B, K, N] over views of
// the operands (no copy), by the register tiles when they apply (Note
// [Register-blocked matmul]) or the reference loop. aten::matmul is a
// composite of these four (composites.cpp, Note [Composite ops decompose]).
// Two dtypes are refused, as PyTorch refuses them: a product does not promote.
void product_kernel(const OpEntry& op, DispatchKeySet, Stack& s) {
  ScopedSpan span(Floor::Kernels, op.profiler_name);
  const Tensor& a = s[0].to_tensor();
  const Tensor& b = s[1].to_tensor();
  check_same_device(op.python_name, a, b);
  switch (op.id) {
    case Op::mm:
      DESCENT_CHECK(a.dim() == 2, Error, "self must be a matrix");
      DESCENT_CHECK(b.dim() == 2, Error, "mat2 must be a matrix");
      DESCENT_CHECK(a.sizes()[1] == b.sizes()[0], Error, "mat1 and mat2 shapes cannot be multiplied (", a.sizes()[0],
                    "x", a.sizes()[1], " and ", b.sizes()[0], "x", b.sizes()[1], ")");
      DESCENT_CHECK(a.dtype() == b.dtype(), Error, "expected m1 and m2 to have the same dtype, but got: ",
                    type_meta_name(a.dtype()), " != ", type_meta_name(b.dtype()));
      break;
    case Op::bmm:
      DESCENT_CHECK(a.dim() == 3, Error, "batch1 must be a 3D tensor");
      DESCENT_CHECK(b.dim() == 3, Error, "batch2 must be a 3D tensor");
      DESCENT_CHECK(a.sizes()[0] == b.sizes()[0], Error, "batch1 and batch2 must have same number of batches, got ",
                    a.sizes()[0], " and ", b.sizes()[0]);
      DESCENT_CHECK(a.sizes()[2] == b.sizes()[1], Error, "Expected size for first two dimensions of batch2 tensor to be: [",
                    a.sizes()[0], ", ", a.sizes()[2], "] but got: [", b.sizes()[0], ", ", b.sizes()[1], "].");
      check_read_as(a, b);
      break;
    case Op::dot:
      DESCENT_CHECK(a.dim() == 1 && b.dim() == 1, Error, "1D tensors expected, but got ", a.dim(), "D and ", b.dim(),
                    "D tensors");
      DESCENT_CHECK(a.dtype() == b.dtype(), Error, "dot : expected both vectors to have same dtype, but found ",
                    type_word(a.dtype()), " and ", type_word(b.dtype()));
      DESCENT_CHECK(a.numel() == b.numel(), Error, "inconsistent tensor size, expected tensor [", a.numel(),
                    "] and src [", b.numel(), "] to have the same number of elements, but got ", a.numel(), " and ",
                    b.numel(), " elements respectively");
      break;
    case Op::mv:
      DESCENT_CHECK(a.dim() == 2 && b.dim() == 1, Error, "vector + matrix @ vector expected, got 1, ", a.dim(), ", ",
                    b.dim());
      DESCENT_CHECK(a.sizes()[1] == b.sizes()[0], Error, "size mismatch, got input (", a.sizes()[0], "), mat (",
                    a.sizes()[0], "x", a.sizes()[1], "), vec (", b.sizes()[0], ")");
      check_read_as(a, b);
      break;
    default: throw Error(str("product_kernel: ", op.name, " is not a matrix product"));
  }
  const ScalarType ct = result_type(a, b);
  DESCENT_CHECK(ct != ScalarType::Bool, Error, "\"", op.python_name, "\" not implemented for 'Bool'");
  const Tensor a2 = cast(a, ct), b2 = cast(b, ct);
  // Both operands as [B, M, K] and [B, K, N] views; an added dim has size 1
  // (its stride, 0, is never stepped).
  Tensor A, Bm;
  DimVector result;  // the op's own result shape: [] for dot
  const DimVector &sa = a2.strides(), &sb = b2.strides();
  switch (op.id) {
    case Op::mm:
      A = a2.as_strided({1, a2.sizes()[0], a2.sizes()[1]}, {0, sa[0], sa[1]}, a2.offset());
      Bm = b2.as_strided({1, b2.sizes()[0], b2.sizes()[1]}, {0, sb[0], sb[1]}, b2.offset());
      result = {a2.sizes()[0], b2.sizes()[1]};
      break;
    case Op::bmm:
      A = a2, Bm = b2;
      result = {a2.sizes()[0], a2.sizes()[1], b2.sizes()[2]};
      break;
    case Op::dot:
      A = a2.as_strided({1, 1, a2.sizes()[0]}, {0, 0, sa[0]}, a2.offset());
      Bm = b2.as_strided({1, b2.sizes()[0], 1}, {0, sb[0], 0}, b2.offset());
      break;
    default:  // mv
      A = a2.as_strided({1, a2.sizes()[0], a2.sizes()[1]}, {0, sa[0], sa[1]}, a2.offset());
      Bm = b2.as_strided({1, b2.sizes()[0], 1}, {0, sb[0], 0}, b2.offset());
      result = {a2.sizes()[0]};
      break;
  }
  const Tensor out = batched_product(span, A, Bm, ct, a.device());
  s.set_result(out.as_strided(result, contiguous_strides(result), 0));
}

// The elementwise loop of `f` (add or mul, elementwise.h) without a span of
// its own: the part of a kernel that runs after its main loop (addmm's
// epilogue), which reports that loop's variant. b may be a CPU scalar.
void elementwise_step(Op f, const Tensor& a, const Tensor& b, const Tensor& out, Scalar alpha) {
  if (out.device().type != DeviceType::CPU) return device::binary(f, a, b, out, alpha);
  if (!(want_optimized() && optimized_binary(f, a, b, out, alpha))) reference_binary(f, a, b, out, alpha);
}

// A 0-d CPU tensor of dtype t holding v (converted with Scalar's check): a
// Python number as the loops take it.
Tensor scalar_of(const Scalar& v, ScalarType t) {
  Tensor r = empty_tensor({}, t, Device{});
  visit_dtype(t, [&]<typename T>() { *r.data<T>() = v.to<T>(); });
  r.impl()->wrapped_number = true;
  return r;
}

// aten::addmm(self, mat1, mat2, *, beta=1, alpha=1): beta * self + alpha *
// (mat1 @ mat2), self broadcast to the product's [n, p], with PyTorch's checks
// in its order (addmm's meta function, then the expand of self). The product
// is mm's loop, into the output; then, in place there, out = term + alpha *
// out by add's element function, where term is self (beta 1), beta * self
// (mul's), or nothing (beta 0: self is not read, so its NaNs do not spread,
// as PyTorch documents). PyTorch's CPU addmm hands all of it to a BLAS gemm,
// whose order of roundings differs: its values agree to the last bits, not
// bit for bit; the integer ones exactly (beta and alpha converted to int64
// as PyTorch converts them, truncated).
void addmm_kernel(const OpEntry& op, DispatchKeySet, Stack& s) {
  ScopedSpan span(Floor::Kernels, op.profiler_name);
  const Tensor& self = s[0].to_tensor();
  const Tensor& m1 = s[1].to_tensor();
  const Tensor& m2 = s[2].to_tensor();
  const Scalar beta = s[3].to_scalar(), alpha = s[4].to_scalar();
  check_same_device(op.python_name, m1, m2);
  check_same_device(op.python_name, self, m1);
  DESCENT_CHECK(self.dtype() == m2.dtype(), Error, "self and mat2 must have the same dtype, but got ",
                type_word(self.dtype()), " and ", type_word(m2.dtype()));
  DESCENT_CHECK(m1.dtype() == m2.dtype(), Error, "mat1 and mat2 must have the same dtype, but got ",
                type_word(m1.dtype()), " and ", type_word(m2.dtype()));
  DESCENT_CHECK(m1.dim() == 2, Error, "mat1 must be a matrix, got ", m1.dim(), "-D tensor");
  DESCENT_CHECK(m2.dim() == 2, Error, "mat2 must be a matrix, got ", m2.dim(), "-D tensor");
  const int64_t n = m1.sizes()[0], k = m1.sizes()[1], p = m2.sizes()[1];
  DESCENT_CHECK(k == m2.sizes()[0], Error, "mat1 and mat2 shapes cannot be multiplied (", n, "x", k, " and ",
                m2.sizes()[0], "x", p, ")");
  const ScalarType ct = m1.dtype();
  DESCENT_CHECK(ct != ScalarType::Bool, NotImplementedError, "\"addmm_impl_cpu_\" not implemented for 'Bool'");
  const Tensor term = call(Op::expand, self, DimVector{n, p});
  // beta and alpha as the loops take them, checked before anything runs (Note [Checked scalar conversion]).
  const Tensor beta_t = expand_to(scalar_of(beta, ct), {n, p}), alpha_t = expand_to(scalar_of(alpha, ct), {n, p});
  visit_dtype(ct, [&]<typename T>() { (void)alpha.to<opmath_t<T>>(op.python_name, "alpha"); });
  const DimVector &sa = m1.strides(), &sb = m2.strides();
  const Tensor A = m1.as_strided({1, n, k}, {0, sa[0], sa[1]}, m1.offset());
  const Tensor Bm = m2.as_strided({1, k, p}, {0, sb[0], sb[1]}, m2.offset());
  const Tensor prod = batched_product(span, A, Bm, ct, m1.device());
  Tensor out = prod.as_strided({n, p}, {p, 1}, 0);
  const Scalar one(int64_t{1});
  const double b = beta.to_double();
  if (b == 0) {  // alpha * product
    if (alpha.to_double() != 1) elementwise_step(Op::mul, out, alpha_t, out, one);
  } else {  // (beta * self) + alpha * product
    Tensor scaled = term;
    if (b != 1) {
      scaled = empty_tensor({n, p}, ct, m1.device());
      elementwise_step(Op::mul, term, beta_t, scaled, one);
    }
    elementwise_step(Op::add, scaled, out, out, alpha);
  }
  s.set_result(std::move(out));
}

// [SECTION] Copies --------------------------------------------------------------------

// src (dst's sizes) into dst, on dst's device; src there too, or a CPU scalar.
void copy_into(ScopedSpan& span, const Tensor& src, const Tensor& dst) {
  begin(span, dst);
  run_loop(span, dst, [&] { device::copy(src, dst); }, [&] { return optimized_copy(src, dst); },
           [&] { reference_copy(src, dst); });
}

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
Tensor move_to(const Tensor& x, Device dev, ScalarType dt, bool non_blocking = false, const Tensor* into = nullptr) {
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
    if constexpr (std::is_same_v<T, bool>) v = Scalar(e);
    else if constexpr (is_int_v<T>) v = Scalar(int64_t(e));
    else if constexpr (is_reduced_float_v<T>) v = Scalar(double(float(e)));
    else v = Scalar(double(e));
  });
  span.arg("variant", x.device().type == DeviceType::CPU ? "read on the host" : "copied to the host");
  s.set_result(IValue(v));
}

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
void cat_kernel(const OpEntry& op, DispatchKeySet, Stack& s) {
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
  for (int i = 1; i < ts.size(); ++i) check_same_device(op.python_name, ts[0], ts[i]);
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
        DESCENT_CHECK(d == dim || t.sizes()[d] == ref.sizes()[d], Error, "Sizes of tensors must match except in "
                      "dimension ", dim, ". Expected size ", ref.sizes()[d], " but got size ", t.sizes()[d],
                      " for tensor number ", i, " in the list.");
      along += t.sizes()[int(dim)];
    }
    sizes = ref.sizes();
    sizes[int(dim)] = along;
  }
  Tensor out = empty_tensor(sizes, dt, ts[0].device());
  begin(span, out);
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
  const char* v = on_device                          ? device::variant(out.device())
                  : all_optimized && want_optimized() ? "optimized"
                                                      : "reference";
  last_variant() = v;
  span.arg("variant", v);
  s.set_result(std::move(out));
}

// [SECTION] In place ----------------------------------------------------------------

// Note [In-place ops]
// ~~~~~~~~~~~~~~~~~~~
// add_, sub_, mul_, div_, copy_, fill_ and zero_ (Tensor(a!) self) write
// their result into self's own memory, through self's strides, so every view
// of that memory sees it, and return self. The loops are the out-of-place
// ones with `out` = self: an element of self is read (as the first operand)
// and written at the same position, so no temporary is needed. Before any
// write, PyTorch's checks, in PyTorch's order (TensorIterator's build):
//   1. memory overlap (ATen/MemoryOverlap.cpp): self may not have internal
//      overlap (two elements at one address: an expanded tensor), and each
//      input must be, relative to self, either
//        full     the very same elements in the same layout (x += x): allowed,
//                 each element is read before it is written;
//        none     byte ranges that do not meet (or another storage): allowed;
//        partial  ranges that meet otherwise (x[1:] += x[:-1]): refused, the
//                 result would depend on the loop's order;
//        too hard a layout with gaps or repeats (strided views), which
//                 PyTorch does not analyse and lets through: so do we.
//      fill_ and zero_ skip the check: writing one value is idempotent.
//   2. the shape: self's shape must be the broadcast shape ("output with
//      shape [2] doesn't match the broadcast shape [3, 2]");
//   3. the dtype: the ops compute in the promoted dtype of self and other,
//      which must be castable to self's (can_cast: "result type Float can't
//      be cast to the desired output type Long").
// When the promoted dtype is self's (nearly always) the loop writes into
// self; when it is wider (a float32 self += a float64 tensor) the loop runs
// in the wider dtype into a temporary that the copy loop casts into self, as
// the loops compute in one dtype. The ADInplaceOrView kernel above them then
// bumps self's version (Note [ADInplaceOrView], dispatch/inplace_or_view.cpp).

enum class InternalOverlap { No, Yes, TooHard };
enum class OverlapStatus { Full, Partial, No, TooHard };

// Whether the elements tile a block of memory exactly, in some order of dims
// (PyTorch's is_non_overlapping_and_dense): sorted by stride, ignoring dims of
// size 0 or 1, each stride is the product of the sizes below it.
bool non_overlapping_and_dense(const Tensor& t) {
  int n = t.dim();
  if (n == 1) return t.sizes()[0] < 2 || t.strides()[0] == 1;
  auto before = [&](int a, int b) {  // dims of size 0 and 1 go last, the others by stride
    if (t.sizes()[a] < 2) return false;
    if (t.sizes()[b] < 2) return true;
    return t.strides()[a] < t.strides()[b];
  };
  int perm[kMaxDims];
  for (int i = 0; i < n; ++i) {  // insertion sort: at most kMaxDims dims
    int j = i;
    for (; j > 0 && before(i, perm[j - 1]); --j) perm[j] = perm[j - 1];
    perm[j] = i;
  }
  int64_t want = 1;
  for (int i = 0; i < n; ++i) {
    int64_t size = t.sizes()[perm[i]];
    if (size < 2) return true;
    if (t.strides()[perm[i]] != want) return false;
    want *= size;
  }
  return true;
}

InternalOverlap internal_overlap(const Tensor& t) {
  if (non_overlapping_and_dense(t)) return InternalOverlap::No;
  for (int d = 0; d < t.dim(); ++d)
    if (t.strides()[d] == 0 && t.sizes()[d] > 1) return InternalOverlap::Yes;
  return InternalOverlap::TooHard;
}

OverlapStatus overlap_status(const Tensor& a, const Tensor& b) {
  if (a.is_same(b)) return OverlapStatus::Full;
  if (a.numel() == 0 || b.numel() == 0) return OverlapStatus::No;
  if (!non_overlapping_and_dense(a) || !non_overlapping_and_dense(b)) return OverlapStatus::TooHard;
  if (a.storage() != b.storage()) return OverlapStatus::No;
  const char* a0 = static_cast<const char*>(a.data_ptr());
  const char* b0 = static_cast<const char*>(b.data_ptr());
  const char* a1 = a0 + a.numel() * int64_t(element_size(a.dtype()));
  const char* b1 = b0 + b.numel() * int64_t(element_size(b.dtype()));
  if (a0 == b0 && a1 == b1) return a.strides() == b.strides() ? OverlapStatus::Full : OverlapStatus::Partial;
  return a0 < b1 && b0 < a1 ? OverlapStatus::Partial : OverlapStatus::No;
}

void check_no_internal_overlap(const Tensor& self) {
  DESCENT_CHECK(internal_overlap(self) != InternalOverlap::Yes, Error,
                "unsupported operation: more than one element of the written-to tensor refers to a single memory "
                "location. Please clone() the tensor before performing the operation.");
}

void check_no_partial_overlap(const Tensor& self, const Tensor& input) {
  DESCENT_CHECK(overlap_status(self, input) != OverlapStatus::Partial, Error,
                "unsupported operation: some elements of the input tensor and the written-to tensor refer to a single "
                "memory location. Please clone() the tensor before performing the operation.");
}

// Step 2 of Note [In-place ops]: the inputs broadcast to self's shape, no larger.
void check_output_shape(const char* op, const Tensor& self, const Tensor& other) {
  DimVector shape = broadcast_shapes(self.sizes(), other.sizes(), op);
  DESCENT_CHECK(shape == self.sizes(), Error, "output with shape ", self.shape_str(),
                " doesn't match the broadcast shape ", shape.str());
}

Op functional_of(Op op) {
  switch (op) {
    case Op::add_: return Op::add;
    case Op::sub_: return Op::sub;
    case Op::mul_: return Op::mul;
    case Op::div_: return Op::div;
    default: throw Error("functional_of: not an in-place binary op");
  }
}

// add_, sub_, mul_, div_: Note [In-place ops].
void inplace_binary_kernel(const OpEntry& op, DispatchKeySet, Stack& s) {
  ScopedSpan span(Floor::Kernels, op.profiler_name);
  const Tensor& self = s[0].to_tensor();
  const Tensor& other = s[1].to_tensor();
  const Op f = functional_of(op.id);
  check_inplace_device(op.python_name, self, other);
  check_no_internal_overlap(self);
  check_no_partial_overlap(self, other);
  check_output_shape(op.python_name, self, other);
  ScalarType ct = result_type(self, other);
  if (f == Op::sub) check_sub(self, other);
  if (f == Op::div && !is_floating(ct)) ct = kDefaultFloat;  // true division
  DESCENT_CHECK(can_cast(ct, self.dtype()), Error, "result type ", type_word(ct),
                " can't be cast to the desired output type ", type_word(self.dtype()));
  Scalar alpha = op.schema.args.size() > 2 ? s[2].to_scalar() : Scalar(int64_t{1});
  DESCENT_CHECK(!(alpha.is_floating() && !is_floating(ct)), Error,
                "For integral input tensors, argument alpha must not be a floating point number.");
  visit_dtype(ct, [&]<typename T>() { (void)alpha.to<opmath_t<T>>(op.python_name, "alpha"); });  // Note [Checked scalar conversion]
  Operand ca(self, ct, self.sizes()), cb(other, ct, self.sizes(), self.device());
  Tensor out = ct == self.dtype() ? self : empty_tensor(self.sizes(), ct, self.device());
  begin(span, self);
  run_loop(span, out, [&] { device::binary(f, ca.get(), cb.get(), out, alpha); },
           [&] { return optimized_binary(f, ca.get(), cb.get(), out, alpha); },
           [&] { reference_binary(f, ca.get(), cb.get(), out, alpha); });
  if (!out.is_same(self)) {
    ScopedSpan cast_span(Floor::Kernels, "cast into self");
    copy_into(cast_span, out, self);
  }
  s.set_result(Tensor(self));
}

void copy__kernel(const OpEntry& op, DispatchKeySet, Stack& s) {
  ScopedSpan span(Floor::Kernels, op.profiler_name);
  const Tensor& self = s[0].to_tensor();
  const Tensor& src = s[1].to_tensor();
  if (!(self.device() == src.device())) {  // Note [Copies between devices]: move src over, then copy there
    check_no_internal_overlap(self);
    check_output_shape(op.python_name, self, src);
    const bool direct = self.is_contiguous() && self.sizes() == src.sizes();  // the bytes land in self
    if (direct) {
      move_to(src, self.device(), self.dtype(), s[2].to_bool(), &self);
      span.arg("variant", "between devices");
      last_variant() = "between devices";
    } else {
      Tensor moved = move_to(src, self.device(), src.dtype(), s[2].to_bool());
      copy_into(span, expand_to(moved, self.sizes()), self);
    }
    s.set_result(Tensor(self));
    return;
  }
  // PyTorch's copy_ returns at once, before any overlap check, when src is
  // self or views the very same elements in the same layout and dtype
  // (copy_impl's is_same_data): an expanded x.copy_(x) is no error.
  const bool same_data = self.storage() == src.storage() && self.offset() == src.offset() &&
                         self.sizes() == src.sizes() && self.strides() == src.strides() && self.dtype() == src.dtype();
  if (same_data) {
    span.arg("variant", "none (same memory)");
    last_variant() = "none";
    s.set_result(Tensor(self));
    return;
  }
  check_no_internal_overlap(self);
  check_no_partial_overlap(self, src);
  check_output_shape(op.python_name, self, src);
  copy_into(span, expand_to(src, self.sizes()), self);
  s.set_result(Tensor(self));
}

// fill_ and zero_: one value into every element; no overlap check (Note [In-place ops]).
void fill__kernel(const OpEntry& op, DispatchKeySet, Stack& s) {
  ScopedSpan span(Floor::Kernels, op.profiler_name);
  const Tensor& self = s[0].to_tensor();
  Scalar value = op.id == Op::zero_ ? Scalar(int64_t{0}) : s[1].to_scalar();
  visit_dtype(self.dtype(), [&]<typename T>() { (void)value.to<T>(op.python_name, "value"); });
  begin(span, self);
  run_loop(span, self, [&] { device::fill(self, value); }, [&] { return optimized_fill(self, value); },
           [&] { reference_fill(self, value); });
  s.set_result(Tensor(self));
}

// aten::fill_.Tensor(self, value): value's one element into every element of
// self, as PyTorch's kernel (Fill.cpp) does it: value must be 0-d; on self's
// device it is copied in by aten::copy_, which broadcasts it (a clone of it
// first when it shares self's memory); from another device (a CPU number
// into a sim:0 or cuda:0 self) it is read by aten::item and filled.
void fill_tensor_kernel(const OpEntry& op, DispatchKeySet, Stack& s) {
  ScopedSpan span(Floor::Kernels, op.profiler_name);
  const Tensor& self = s[0].to_tensor();
  const Tensor& value = s[1].to_tensor();
  DESCENT_CHECK(value.dim() == 0, Error, "fill_ only supports 0-dimension value tensor but got tensor with ",
                value.dim(), " dimensions.");
  if (self.device() == value.device()) {
    call(Op::copy_, self, self.storage() == value.storage() ? call(Op::clone, value) : value);
    s.set_result(Tensor(self));
    return;
  }
  Stack read;
  read.push(value);
  call_boxed(Op::item, read);
  const Scalar v = read[0].to_scalar();
  visit_dtype(self.dtype(), [&]<typename T>() { (void)v.to<T>(op.python_name, "value"); });
  begin(span, self);
  run_loop(span, self, [&] { device::fill(self, v); }, [&] { return optimized_fill(self, v); },
           [&] { reference_fill(self, v); });
  s.set_result(Tensor(self));
}

}  // namespace

// [SECTION] Registration -----------------------------------------------------------

// The boxed kernel of each row of the op table, chosen by the row's kind:
// registered at CPU, Sim and CUDA alike, for the keys the row declares.
BoxedKernel cpu_kernel(Op op, OpKind kind) {
  switch (kind) {
    case OpKind::Unary:
      return op == Op::clamp || op == Op::clamp_min || op == Op::clamp_max ? clamp_kernel : unary_kernel;
    case OpKind::Binary: return binary_kernel;
    case OpKind::Comparison: return compare_kernel;
    case OpKind::Matmul: return op == Op::addmm ? addmm_kernel : product_kernel;
    case OpKind::Reduction:
      return op == Op::max || op == Op::max_dim ? max_kernel : op == Op::mse_loss ? mse_loss_kernel : sum_kernel;
    case OpKind::Copy:
      switch (op) {
        case Op::_to_copy: return to_copy_kernel;
        case Op::index: return index_kernel;
        case Op::cat: return cat_kernel;
        default: return clone_kernel;
      }
    case OpKind::InPlace:
      switch (op) {
        case Op::copy_: return copy__kernel;
        case Op::fill_:
        case Op::zero_: return fill__kernel;
        case Op::fill_tensor_: return fill_tensor_kernel;
        case Op::index_put_: return index_put_kernel;
        default: return inplace_binary_kernel;
      }
    case OpKind::Read: return local_scalar_dense_kernel;  // item is a composite (composites.cpp)
    case OpKind::View:
    case OpKind::Factory: break;  // views.cpp, factories.cpp
  }
  return nullptr;
}

// The kernel to register: both conventions where the op has a typed form.
Kernel with_typed(Op op, BoxedKernel k) {
  switch (op) {
    case Op::add: return Kernel::both(k, &typed_binary_alpha<Op::add>, signature_id<BinaryAlphaSig>());
    case Op::sub: return Kernel::both(k, &typed_binary_alpha<Op::sub>, signature_id<BinaryAlphaSig>());
    case Op::mul: return Kernel::both(k, &typed_binary<Op::mul>, signature_id<BinarySig>());
    case Op::div: return Kernel::both(k, &typed_binary<Op::div>, signature_id<BinarySig>());
    default: return Kernel(k);
  }
}

}  // namespace descent::kernels

namespace descent {

namespace {
bool declares(const char* dispatch, DispatchKey key) {
  for (DispatchKey k : declared_keys(dispatch))
    if (k == key) return true;
  return false;
}

// Every row of the op table that declares m's key (Note [One op table]) gets
// the boxed kernel of its kind: one kernel for every backend, whose loop
// alone depends on the device (Note [One kernel body, two devices]).
void register_backend_kernels(Library& m) {
#define DESCENT_REGISTER_BACKEND(id, schema, dispatch, kind, exact, domain, module, sample) \
  if (declares(dispatch, m.key()))                                                        \
    if (auto k = kernels::cpu_kernel(Op::id, OpKind::kind)) m.impl(Op::id, kernels::with_typed(Op::id, k));
  DESCENT_FORALL_OPS(DESCENT_REGISTER_BACKEND)
#undef DESCENT_REGISTER_BACKEND
  kernels::register_view_kernels(m);
  kernels::register_factory_kernels(m);
}
}  // namespace

void register_cpu_kernels(Library& m) { register_backend_kernels(m); }
void register_device_kernels(Library& m) { register_backend_kernels(m); }

}  // namespace descent
