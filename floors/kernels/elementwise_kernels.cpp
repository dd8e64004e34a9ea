// Floor 5's boxed elementwise kernels: unary ops, clamp, the binary
// arithmetic ops and the comparisons (see boxed.h for what they share).
//
// [SECTION] Unary ops and clamp
// [SECTION] Binary ops
// [SECTION] Comparisons
#include <cmath>
#include <limits>

#include "floors/kernels/boxed.h"

namespace descent::kernels {

// [SECTION] Unary ops and clamp ------------------------------------------------------

void unary_kernel(const OpEntry& op, DispatchKeySet, Stack& s) {
  ScopedSpan span(Floor::Kernels, op.profiler_name);
  Tensor x = s[0].to_tensor();
  DESCENT_CHECK(!(op.id == Op::neg && x.dtype() == ScalarType::Bool), Error,
                "Negation, the `-` operator, on a bool tensor is not supported. If you are trying to invert a mask, "
                "use the `~` or `logical_not()` operator instead.");
  DESCENT_CHECK(!(op.id == Op::relu && x.dtype() == ScalarType::Bool), Error, "Boolean inputs not supported for relu");
  DESCENT_CHECK(!(op.id == Op::abs && x.dtype() == ScalarType::Bool), NotImplementedError,
                "\"abs_cpu\" not implemented for 'Bool'");
  // gelu and silu: floats only, named as aten's CPU or CUDA kernel dispatches (Note [gelu and silu as aten
  // computes them]), and gelu's approximation.
  ClampBounds b;
  if (op.id == Op::gelu || op.id == Op::silu) {
    const bool cuda = x.device().type == DeviceType::CUDA;
    DESCENT_CHECK(
        is_floating(x.dtype()), NotImplementedError, "\"",
        op.id == Op::gelu ? (cuda ? "GeluCUDAKernelImpl" : "GeluKernelImpl") : (cuda ? "silu_cuda" : "silu_cpu"),
        "\" not implemented for '", type_word(x.dtype()), "'");
    if (op.id == Op::gelu) {
      const int64_t approximate = s[1].to_int();
      DESCENT_CHECK(approximate == 0 || approximate == 1, Error, "approximate argument must be either none or tanh.");
      b.gelu_tanh = approximate == 1;
    }
  }
  // A float-only op over an integral tensor computes in the default float:
  // on the CPU x is cast first (aten::to, as TensorIterator's CPU path makes
  // a temporary), on a device the loop converts as it loads (Note [A CPU
  // scalar on a device op], device_loops.h).
  const ScalarType dt = float_only(op.id) && !is_floating(x.dtype()) ? kDefaultFloat : x.dtype();
  if (dt != x.dtype() && x.device().type == DeviceType::CPU) x = cast(x, dt);
  Tensor out = empty_output(x.sizes(), dt, x.device(), {&x});  // Note [Output strides follow the inputs]
  begin(span, out);
  loop_work(span, out, {&x}, dt);
  run_loop(
      span, out, [&] { device::unary(op.id, x, out, b); }, [&] { return optimized_unary(op.id, x, out, b); },
      [&] { reference_unary(op.id, x, out, b); });
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
    loop_work(span, out, {}, dt, 0);
    const Scalar nan(std::numeric_limits<double>::quiet_NaN());
    run_loop(
        span, out, [&] { device::fill(out, nan); }, [&] { return optimized_fill(out, nan); },
        [&] { reference_fill(out, nan); });
    s.set_result(std::move(out));
    return;
  }
  DESCENT_CHECK(dt != ScalarType::Bool, NotImplementedError, "\"",
                b.has_lo && b.has_hi ? "clamp_scalar_cpu"
                : b.has_lo           ? "clamp_min_scalar_cpu"
                                     : "clamp_max_scalar_cpu",
                "\" not implemented for 'Bool'");
  visit_dtype(dt,
              [&]<typename T>() { visit_unary<T>(op.id, b, [](auto) {}); });  // the bounds' checks, before any launch
  const Tensor xc = cast(x, dt);  // keeps x's layout when x is dense (_to_copy)
  Tensor out = empty_output(x.sizes(), dt, x.device(), {&xc});
  begin(span, out);
  loop_work(span, out, {&xc}, dt, int64_t(b.has_lo) + int64_t(b.has_hi));
  run_loop(
      span, out, [&] { device::unary(op.id, xc, out, b); }, [&] { return optimized_unary(op.id, xc, out, b); },
      [&] { reference_unary(op.id, xc, out, b); });
  s.set_result(std::move(out));
}

// aten::clamp_(self, min, max): clamp's result written back into self.
// aten runs clamp's structured kernel with self as its output; here clamp
// runs and copy_ writes its result into self, so the trace shows both
// beneath clamp_ (the gradient is ClampBackward1 either way). A result
// dtype self cannot hold is refused first, in aten's words (clamp_ of an
// int64 self with a float bound).
void clamp__kernel(const OpEntry& op, DispatchKeySet, Stack& s) {
  ScopedSpan span(Floor::Kernels, op.profiler_name);
  const Tensor& self = s[0].to_tensor();
  const Tensor r = call(Op::clamp, self, s[1], s[2]);
  DESCENT_CHECK(can_cast(r.dtype(), self.dtype()), Error, "result type ", type_word(r.dtype()),
                " can't be cast to the desired output type ", type_word(self.dtype()));
  const char* ran = last_variant();
  call(Op::copy_, self, r, false);
  last_variant() = ran;
  s.set_result(Tensor(self));
}

// [SECTION] Binary ops ----------------------------------------------------------------

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

namespace {

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

// floor_divide's checks (Note [floor_divide rounds as Python's //], elementwise.h):
// bool has no kernel, as in aten ("div_floor_cpu" not implemented for
// 'Bool'), and on the CPU an integer divisor of 0 raises aten's
// "ZeroDivisionError" (a RuntimeError) before anything is written.
void check_floor_divide(const Tensor& b, ScalarType ct, Device dev) {
  DESCENT_CHECK(ct != ScalarType::Bool, NotImplementedError, "\"div_floor_",
                dev.type == DeviceType::CUDA ? "cuda" : "cpu", "\" not implemented for 'Bool'");
  if (is_floating(ct) || b.device().type != DeviceType::CPU) return;
  visit_dtype(b.dtype(), [&]<typename T>() {
    const T* p = b.data<T>();
    for (int64_t i = 0; i < b.numel(); ++i)
      DESCENT_CHECK(p[strided_offset(i, b.sizes(), b.strides())] != T(0), Error, "ZeroDivisionError");
  });
}

}  // namespace

Tensor binary_op(const OpEntry& op, const Tensor& a, const Tensor& b, const Scalar& alpha) {
  ScopedSpan span(Floor::Kernels, op.profiler_name);
  const Device dev = common_device(op.python_name, a, b);
  ScalarType ct = result_type(a, b);
  if (op.id == Op::sub) check_sub(a, b);
  if (op.id == Op::pow || op.id == Op::pow_scalar) check_pow(a, b, ct);
  if (op.id == Op::div && !is_floating(ct)) ct = kDefaultFloat;  // true division
  if (op.id == Op::floor_divide) check_floor_divide(b, ct, dev);
  if (op.id == Op::gelu_backward || op.id == Op::silu_backward) {
    const bool cuda = dev.type == DeviceType::CUDA;
    DESCENT_CHECK(is_floating(ct), NotImplementedError, "\"",
                  op.id == Op::gelu_backward ? (cuda ? "GeluBackwardCUDAKernelImpl" : "GeluBackwardKernelImpl")
                                             : (cuda ? "silu_backward_cuda" : "silu_backward_cpu"),
                  "\" not implemented for '", type_word(ct), "'");
    // gelu_backward's approximation comes as alpha (GeluBackwardF, elementwise.h): 0 or 1.
    DESCENT_CHECK(op.id != Op::gelu_backward || alpha.to_double() == 0 || alpha.to_double() == 1, Error,
                  "approximate argument must be either none or tanh.");
  }
  DESCENT_CHECK(!(alpha.is_floating() && !is_floating(ct)), Error, op.python_name,
                "(): For integral input tensors, argument alpha must not be a floating point number.");
  visit_dtype(ct, [&]<typename T>() {
    (void)alpha.to<opmath_t<T>>(op.python_name, "alpha");
  });  // Note [Checked scalar conversion]
  DimVector shape = broadcast_shapes(a.sizes(), b.sizes(), op.python_name);
  Operand ca(a, ct, shape, dev), cb(b, ct, shape, dev);
  Tensor out = empty_output(shape, ct, dev, {&ca.unexpanded(), &cb.unexpanded()});
  begin(span, out);
  const bool scaled = (op.id == Op::add || op.id == Op::sub) && alpha.to_double() != 1.0;  // a multiply more
  loop_work(span, out, {&ca.unexpanded(), &cb.unexpanded()}, ct, scaled ? 2 : 1);
  run_loop(
      span, out, [&] { device::binary(op.id, ca.get(), cb.get(), out, alpha); },
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
    // x ** 2 runs pow.Tensor_Scalar's loop (Note [pow's special exponents]); 2 ** x pow's own.
    s.set_result(binary_op(op_entry(base ? Op::pow : Op::pow_scalar), a, b, one));
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

// [SECTION] Comparisons ----------------------------------------------------------------

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
  loop_work(span, out, {&ca.unexpanded(), &cb.unexpanded()}, ct);
  // One CPU loop only: comparisons are not a hot path.
  run_loop(
      span, out, [&] { device::compare(op.id, ca.get(), cb.get(), out, ct); }, [] { return false; },
      [&] { reference_compare(op.id, ca.get(), cb.get(), out); });
  s.set_result(std::move(out));
}

}  // namespace descent::kernels
