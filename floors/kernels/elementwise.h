// The element functions of the elementwise ops, shared by the reference and
// the optimized loops: both variants compute each element with the very same
// expression, which is why the verifier can demand bit-for-bit equality.
//
// visit_unary<T>(op, bounds, fn) calls fn(f) with f the functor of `op` for
// elements of type T, so a loop is written once and instantiated per op and
// dtype (visit_dtype gives T). Each functor writes its expression once, as
// eval(); the base it derives from computes a float16 or bfloat16 element in
// float32 and rounds it once (Note [Reduced-precision floats], half.h).
// Most functors are empty; clamp's carries its bounds, converted to T on the
// host before the loop starts (a kernel never reads host memory, Note [One
// kernel body, two devices]). DESCENT_HD (half.h) compiles them for the GPU
// as well.
#pragma once

#include <cmath>
#include <cstdint>
#include <string_view>
#include <type_traits>

#include "floors/core/dtype.h"
#include "floors/core/error.h"
#include "floors/core/scalar.h"
#include "floors/dispatch/ops.h"

namespace descent::kernels {

// Integer arithmetic wraps around (two's complement), as PyTorch's does,
// instead of being undefined behaviour on overflow.
DESCENT_HD inline int64_t wrap_add(int64_t a, int64_t b) { return int64_t(uint64_t(a) + uint64_t(b)); }
DESCENT_HD inline int64_t wrap_mul(int64_t a, int64_t b) { return int64_t(uint64_t(a) * uint64_t(b)); }
// a + b and a * b in T, wrapping for every integer type: the one place where
// the loops (elementwise, sums, matrix products) choose between the two. A
// narrower integer wraps in int64 and keeps its low bits (C++20 converts
// modulo 2**bits), which are the bits it would wrap to on its own: uint8's
// 255 + 1 is 0, int32's 2**31 - 1 + 1 is -2**31, as in C and PyTorch.
template <class T>
DESCENT_HD T plus(T a, T b) {
  if constexpr (is_int_v<T>)
    return T(wrap_add(a, b));
  else
    return T(a + b);
}
template <class T>
DESCENT_HD T times(T a, T b) {
  if constexpr (is_int_v<T>)
    return T(wrap_mul(a, b));
  else
    return T(a * b);
}

// An element converted to D the way a tensor cast converts it (to(), copy_,
// type promotion): unchecked, as PyTorch's casts are (only Scalars are
// checked, Note [Checked scalar conversion]), but never undefined behaviour.
// A float outside int64's range, NaN included, becomes INT64_MIN: what x86's
// cvttsd2si gives, and so what PyTorch gives on x86 (a C++ cast of such a
// value is undefined, and may give anything once the compiler knows it).
// The narrower integers follow what x86 code compiled from PyTorch's casts
// does: int32, int16 and int8 convert through a 32-bit cvttss2si (outside
// int32's range, INT32_MIN) and keep the low bits (300.0 as int8 is 44);
// uint8 converts through int64 as c10's static_cast_with_inter_type does
// (-1.0 as uint8 is 255). A GPU's own conversion saturates instead; descent
// casts alike on every device, so the verifier can hold them bit for bit.
template <class D, class S>
DESCENT_HD D cast_element(S x) {
  if constexpr (is_reduced_float_v<S> && !std::is_same_v<D, S>) {
    return cast_element<D>(float(x));
  } else if constexpr (std::is_same_v<D, int64_t> && std::is_floating_point_v<S>) {
    return x >= S(-0x1p63) && x < S(0x1p63) ? int64_t(x) : INT64_MIN;
  } else if constexpr (std::is_same_v<D, uint8_t> && std::is_floating_point_v<S>) {
    return uint8_t(cast_element<int64_t>(x));
  } else if constexpr (is_int_v<D> && std::is_floating_point_v<S>) {
    return D(x >= S(-0x1p31) && x < S(0x1p31) ? int32_t(x) : INT32_MIN);
  } else {
    return static_cast<D>(x);
  }
}

// [SECTION] Unary ---------------------------------------------------------------

template <class F>
struct UnaryFn {
  template <class T>
  DESCENT_HD T operator()(T x) const {
    const F& f = static_cast<const F&>(*this);
    if constexpr (is_reduced_float_v<T>)
      return T(f.eval(float(x)));
    else
      return f.eval(x);
  }
};

// The element functions defined for floats only: a kernel casts an integer or
// bool input to float32 first (PyTorch's "int to float" unary ops: exp(int) is float32).
struct FloatOnly {};
template <class F>
inline constexpr bool is_float_only_v = std::is_base_of_v<FloatOnly, F>;

// -x of an integer wraps: -(-128) is -128 in int8, -1 is 255 in uint8, as in PyTorch.
struct NegF : UnaryFn<NegF> {
  template <class T>
  DESCENT_HD T eval(T x) const {
    if constexpr (std::is_same_v<T, bool>)
      return x;
    else if constexpr (std::is_integral_v<T>)
      return T(wrap_mul(x, -1));
    else
      return -x;
  }
};
// abs clears the sign bit of a float, so abs(-0.0) is +0.0 (x < 0 is false for -0.0).
struct AbsF : UnaryFn<AbsF> {
  template <class T>
  DESCENT_HD T eval(T x) const {
    if constexpr (std::is_unsigned_v<T>)
      return x;  // bool and uint8
    else if constexpr (std::is_floating_point_v<T>)
      return std::fabs(x);
    else
      return x < 0 ? NegF{}(x) : x;
  }
};
struct ExpF : UnaryFn<ExpF>, FloatOnly {
  template <class T>
  DESCENT_HD T eval(T x) const {
    return std::exp(x);
  }
};
struct LogF : UnaryFn<LogF>, FloatOnly {
  template <class T>
  DESCENT_HD T eval(T x) const {
    return std::log(x);
  }
};
struct SqrtF : UnaryFn<SqrtF>, FloatOnly {
  template <class T>
  DESCENT_HD T eval(T x) const {
    return std::sqrt(x);
  }
};
// log10 and log2: the C library's own functions, as aten's kernels call them
// (not log(x) / log(10), which rounds twice).
struct Log10F : UnaryFn<Log10F>, FloatOnly {
  template <class T>
  DESCENT_HD T eval(T x) const {
    return std::log10(x);
  }
};
struct Log2F : UnaryFn<Log2F>, FloatOnly {
  template <class T>
  DESCENT_HD T eval(T x) const {
    return std::log2(x);
  }
};
// relu propagates NaN, like PyTorch's clamp_min(0).
struct ReluF : UnaryFn<ReluF> {
  template <class T>
  DESCENT_HD T eval(T x) const {
    return x > T(0) || x != x ? x : T(0);
  }
};
struct SigmoidF : UnaryFn<SigmoidF>, FloatOnly {
  template <class T>
  DESCENT_HD T eval(T x) const {
    return T(1) / (T(1) + std::exp(-x));
  }
};
struct TanhF : UnaryFn<TanhF>, FloatOnly {
  template <class T>
  DESCENT_HD T eval(T x) const {
    return std::tanh(x);
  }
};
struct SinF : UnaryFn<SinF>, FloatOnly {
  template <class T>
  DESCENT_HD T eval(T x) const {
    return std::sin(x);
  }
};
struct CosF : UnaryFn<CosF>, FloatOnly {
  template <class T>
  DESCENT_HD T eval(T x) const {
    return std::cos(x);
  }
};
// reciprocal: 1 / x, as PyTorch's kernel divides (exact IEEE division, so no ulps
// between devices); an integer input is float32 first, as aten's reciprocal(int) is.
struct ReciprocalF : UnaryFn<ReciprocalF>, FloatOnly {
  template <class T>
  DESCENT_HD T eval(T x) const {
    return T(1) / x;
  }
};

// Note [gelu and silu as aten computes them]
// ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
// aten's scalar expressions (aten/src/ATen/native/cpu/Activation.cpp,
// GeluKernelImpl and GeluBackwardKernelImpl, and silu's kernels), in the
// element's type (float32 for float16 and bfloat16, rounded once):
//   gelu, approximate='none':  x * 0.5 * (1 + erf(x / sqrt(2)))
//   gelu, approximate='tanh':  0.5 * x * (1 + tanh(sqrt(2 / pi) * (x + 0.044715 x^3)))
//   silu:                      x / (1 + exp(-x))
// and their derivatives, which gelu_backward and silu_backward compute from
// the gradient and self. aten's CPU kernels are vectorized with their own
// polynomial erf, exp and tanh, so descent's values (glibc's functions) may
// differ from torch's CPU values in the last bits, and more where gelu's sum
// cancels: float32 over linspace(-10, 10, 20001) beside torch 2.15's, gelu
// is bit-equal for 78% of the elements and within 9.5e-7, silu for 96% and
// within 2 ulps, and below about x = -5.5 torch's gelu is -0 where glibc's
// erf leaves -1.7e-7. The devices hold each other to Exactness::DeviceMath
// (ops.h; Note [Element functions that cancel], verifier.cpp). Integers and bool have no kernel,
// as in aten ("GeluKernelImpl" not implemented for 'Long').
constexpr double kSqrtHalf = 0.70710678118654752440;    // 1 / sqrt(2)
constexpr double kGeluBeta = 0.79788456080286535588;    // sqrt(2 / pi)
constexpr double kGeluKappa = 0.044715;                 // the tanh form's cubic term
constexpr double kInvSqrt2Pi = 0.39894228040143267794;  // 1 / sqrt(2 pi): the normal density's factor
struct GeluF : UnaryFn<GeluF> {
  template <class T>
  DESCENT_HD T eval(T x) const {
    if constexpr (std::is_floating_point_v<T>)
      return x * T(0.5) * (T(1) + std::erf(x * T(kSqrtHalf)));
    else
      return x;  // refused by the kernel
  }
};
struct GeluTanhF : UnaryFn<GeluTanhF> {
  template <class T>
  DESCENT_HD T eval(T x) const {
    if constexpr (std::is_floating_point_v<T>) {
      const T inner = T(kGeluBeta) * (x + T(kGeluKappa) * x * x * x);
      return T(0.5) * x * (T(1) + std::tanh(inner));
    } else {
      return x;
    }
  }
};
struct SiluF : UnaryFn<SiluF> {
  template <class T>
  DESCENT_HD T eval(T x) const {
    if constexpr (std::is_floating_point_v<T>)
      return x / (T(1) + std::exp(-x));
    else
      return x;
  }
};

// The Scalars a unary op takes besides self, converted to T on the host:
// clamp's, clamp_min's and clamp_max's bounds that were given (Note
// [clamp's bounds], elementwise_kernels.cpp) and gelu's approximation.
struct ClampBounds {
  Scalar lo, hi;
  bool has_lo = false, has_hi = false;
  bool gelu_tanh = false;  // gelu's approximate='tanh' (GeluTanhF), else erf's GeluF
};
// PyTorch's CPU expression, min(max(x, lo), hi) with std::max(a, b) = a < b ?
// b : a and std::min(a, b) = b < a ? b : a, one bound or both: a NaN element
// stays NaN, -0.0 is kept against a bound of +0.0, and lo > hi gives hi.
// The bounds are T (converted with Scalar's check), compared as the float32
// a float16 or bfloat16 element computes in.
template <class T>
struct ClampF {
  T lo, hi;
  bool has_lo, has_hi;
  DESCENT_HD T operator()(T x) const {
    if constexpr (is_reduced_float_v<T>) {
      const float v = float(x), l = float(lo), h = float(hi);
      const float y = has_lo && v < l ? l : v;
      return T(has_hi && h < y ? h : y);
    } else {
      const T y = has_lo && x < lo ? lo : x;
      return has_hi && hi < y ? hi : y;
    }
  }
};

// Note [Each row's element function]
// ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
// The op table (ops.h) names no functor: these tables, one for each of the
// unary, binary and comparison families, map a row to the functor every
// loop on every device computes it with, and the static_asserts at the end
// of this file check them against the table. A Unary, Binary or Comparison
// row that has kernels of its own (not a composite) and no functor here
// fails to compile, naming the row; so does a functor entry whose row is
// not of its family. Rows whose kernel runs another row's loop are named
// at the checks (runs_another_rows_loop). The ops whose functor takes
// arguments are cased by hand in the visit functions: clamp's bounds, gelu's
// approximation.
#define DESCENT_FORALL_UNARY_FNS(_) \
  _(neg, NegF)                      \
  _(abs, AbsF)                      \
  _(exp, ExpF)                      \
  _(log, LogF)                      \
  _(log10, Log10F)                  \
  _(log2, Log2F)                    \
  _(sqrt, SqrtF)                    \
  _(relu, ReluF)                    \
  _(sigmoid, SigmoidF)              \
  _(tanh, TanhF)                    \
  _(sin, SinF)                      \
  _(cos, CosF)                      \
  _(reciprocal, ReciprocalF)        \
  _(silu, SiluF)
// (and by hand: clamp, clamp_min, clamp_max: ClampF; gelu: GeluF or GeluTanhF)

// Calls fn(f) with f the functor of unary op `op` for elements of type T;
// `bounds` are clamp's, converted to T (checked: Note [Checked scalar
// conversion]), or gelu's approximation, and ignored by every other op.
template <class T, typename Fn>
void visit_unary(Op op, const ClampBounds& bounds, Fn&& fn) {
  switch (op) {
#define DESCENT_UNARY_CASE(id, F) \
  case Op::id:                    \
    return fn(F{});
    DESCENT_FORALL_UNARY_FNS(DESCENT_UNARY_CASE)
#undef DESCENT_UNARY_CASE
    case Op::gelu:
      if (bounds.gelu_tanh) return fn(GeluTanhF{});
      return fn(GeluF{});
    case Op::clamp:
    case Op::clamp_min:
    case Op::clamp_max:
      // Converted as c10's Scalar::to converts, in its words ("value cannot be
      // converted to type int8_t without overflow": torch 2.11's clamp_max(200)).
      return fn(ClampF<T>{bounds.has_lo ? bounds.lo.to<T>() : T(), bounds.has_hi ? bounds.hi.to<T>() : T(),
                          bounds.has_lo, bounds.has_hi});
    default:
      throw Error("visit_unary: not a unary op");
  }
}
// Whether op's element function is defined for floats only (FloatOnly above).
inline bool float_only(Op op) {
  bool r = false;
  visit_unary<float>(op, ClampBounds{}, [&](auto f) { r = is_float_only_v<decltype(f)>; });
  return r;
}

// [SECTION] Binary ----------------------------------------------------------------

// Binary functors take alpha (only add and sub use it), in the type they
// compute in: float for a float16 or bfloat16 tensor, as PyTorch's kernels
// take it (alpha = 0.1 is not rounded to float16 first). On bool, add is
// logical or and mul logical and, as in PyTorch.
template <class F>
struct BinaryFn {
  template <class T>
  DESCENT_HD T operator()(T a, T b, opmath_t<T> alpha) const {
    const F& f = static_cast<const F&>(*this);
    if constexpr (is_reduced_float_v<T>)
      return T(f.eval(float(a), float(b), alpha));
    else
      return f.eval(a, b, alpha);
  }
};

struct AddF : BinaryFn<AddF> {
  template <class T>
  DESCENT_HD T eval(T a, T b, T alpha) const {
    if constexpr (std::is_same_v<T, bool>)
      return a || (alpha && b);
    else
      return plus(a, times(alpha, b));
  }
};
struct SubF : BinaryFn<SubF> {
  template <class T>
  DESCENT_HD T eval(T a, T b, T alpha) const {
    if constexpr (std::is_same_v<T, bool>)
      return a;
    else if constexpr (std::is_integral_v<T>)
      return T(wrap_add(a, wrap_mul(wrap_mul(alpha, b), -1)));
    else
      return a - alpha * b;
  }
};
struct MulF : BinaryFn<MulF> {
  template <class T>
  DESCENT_HD T eval(T a, T b, T) const {
    if constexpr (std::is_same_v<T, bool>)
      return a && b;
    else
      return times(a, b);
  }
};
struct DivF : BinaryFn<DivF> {
  template <class T>
  DESCENT_HD T eval(T a, T b, T) const {
    return a / b;
  }
};  // floats only
// Note [pow's special exponents]
// ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
// aten's pow with one number as the exponent (pow.Tensor_Scalar: x ** 2)
// does not call std::pow for the common ones: 2 is base * base, 3 base *
// base * base, -2 1 / (base * base), 0.5 sqrt, -0.5 1 / sqrt, -1 1 / base
// (aten/src/ATen/native/cpu/PowKernel.cpp, pow_tensor_scalar_kernel; the
// CUDA kernel in PowKernel.cu does the same). They are faster (x * x
// vectorizes, std::pow does not) and their results are not always
// std::pow's: x ** 2 here gives PyTorch's bits because it multiplies as
// PyTorch does (2, 3, -2, -1: plain arithmetic; 0.5 and -0.5 are std::sqrt's
// correctly rounded root, where PyTorch's vector sqrt may differ in the last
// bit), and the edges follow the forms: (-inf) ** 0.5 is sqrt(-inf), NaN,
// where std::pow gives inf. PowScalarF is that kernel; binary_kernel picks it
// for pow.Tensor_Scalar alone. A tensor of exponents (pow.Tensor_Tensor) and
// a number raised to a tensor (pow.Scalar) run PowF, std::pow for every
// element, as aten's pow_tensor_tensor_kernel does: torch.pow(x, full(0.5))
// of -inf is inf. The exponent is one number, so the choice does not depend
// on the loop's index and the compiler takes it out of the loop.
struct PowF : BinaryFn<PowF> {
  template <class T>
  DESCENT_HD T eval(T a, T b, T) const {
    if constexpr (std::is_floating_point_v<T>) {
      return std::pow(a, b);
    } else if constexpr (std::is_same_v<T, bool>) {
      return a || !b;
    } else {  // integer power by squaring; a negative exponent as PyTorch's powi
      if constexpr (std::is_signed_v<T>)
        if (b < 0) return T(a == 1 ? 1 : a == -1 ? ((b & 1) ? -1 : 1) : 0);
      T r = 1;
      for (T base = a, e = b; e > 0; e >>= 1, base = times(base, base))
        if (e & 1) r = times(r, base);
      return r;
    }
  }
};
// pow.Tensor_Scalar's element (Note [pow's special exponents]).
struct PowScalarF : BinaryFn<PowScalarF> {
  template <class T>
  DESCENT_HD T eval(T a, T b, T alpha) const {
    if constexpr (std::is_floating_point_v<T>) {
      if (b == T(2)) return a * a;
      if (b == T(3)) return a * a * a;
      if (b == T(-2)) return T(1) / (a * a);
      if (b == T(0.5)) return std::sqrt(a);
      if (b == T(-0.5)) return T(1) / std::sqrt(a);
      if (b == T(-1)) return T(1) / a;
    }
    return PowF{}.eval(a, b, alpha);
  }
};

// mse_loss's element, (a - b)^2, as PyTorch's mse kernel computes it: in the
// element's own type, so a float16 or bfloat16 difference is rounded before
// it is squared. (Floats only: the kernel refuses the other dtypes.)
struct MseF {
  template <class T>
  DESCENT_HD T operator()(T a, T b, opmath_t<T>) const {
    if constexpr (is_reduced_float_v<T>) {
      const T d = T(float(a) - float(b));
      return T(float(d) * float(d));
    } else if constexpr (std::is_same_v<T, bool>) {
      return a != b;
    } else {
      const T d = plus(a, times(b, T(-1)));
      return times(d, d);
    }
  }
};

// Note [floor_divide rounds as Python's //]
// ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
// a // b rounds the quotient toward -inf, as Python's and aten's div_floor:
// for floats c10's div_floor_floating, which takes fmod's remainder, divides
// what is left, steps down by one where the remainder and b have opposite
// signs, and rounds that to the nearest integer (so 7.0 // 0.1 is 69.0, as
// Python says, where floor(7.0 / 0.1) is 70.0); b == 0 gives a / b (inf or
// NaN) and a zero quotient keeps the sign of a / b. Integers divide and
// step down where the remainder is nonzero and the signs differ; the CPU
// kernel refuses a zero divisor first ("ZeroDivisionError", as aten's), so
// the element's 0 for it is only what a device gives. INT_MIN // -1 wraps.
struct FloorDivideF : BinaryFn<FloorDivideF> {
  template <class T>
  DESCENT_HD T eval(T a, T b, T) const {
    if constexpr (std::is_floating_point_v<T>) {
      if (b == T(0)) return a / b;
      const T mod = std::fmod(a, b);
      T div = (a - mod) / b;
      if (mod != T(0) && (b < T(0)) != (mod < T(0))) div -= T(1);
      if (div == T(0)) return std::copysign(T(0), a / b);
      T floordiv = std::floor(div);
      if (div - floordiv > T(0.5)) floordiv += T(1);
      return floordiv;
    } else if constexpr (std::is_same_v<T, bool>) {
      return a;  // refused by the kernel ("div_floor_cpu" for 'Bool')
    } else {
      if (b == 0) return T(0);
      if constexpr (std::is_signed_v<T>)
        if (b == T(-1)) return NegF{}(a);
      const T q = T(a / b);
      return (a % b != 0) && ((a < 0) != (b < 0)) ? T(q - 1) : q;
    }
  }
};

// threshold_backward's element: the gradient where self is above the
// threshold, 0 where it is not (a NaN self passes the gradient: NaN <= t is
// false), as PyTorch's threshold kernel: relu's backward, with threshold 0
// and self relu's result. The threshold comes as `alpha`.
struct ThresholdBackwardF : BinaryFn<ThresholdBackwardF> {
  template <class T>
  DESCENT_HD T eval(T grad, T self, T threshold) const {
    return self <= threshold ? T(0) : grad;
  }
};

// gelu_backward's element (Note [gelu and silu as aten computes them]): the
// gradient times gelu's derivative at self; the approximation comes as
// `alpha` (0: erf's, 1: tanh's), one number, so the choice leaves the loop.
struct GeluBackwardF : BinaryFn<GeluBackwardF> {
  template <class T>
  DESCENT_HD T eval(T grad, T x, T approximate) const {
    if constexpr (std::is_floating_point_v<T>) {
      if (approximate != T(0)) {
        const T x_sq = x * x;
        const T inner = T(kGeluBeta) * (x + T(kGeluKappa) * x_sq * x);
        const T tanh_inner = std::tanh(inner);
        const T left = T(0.5) * x;
        const T right = T(1) + tanh_inner;
        const T left_derivative = T(0.5) * right;
        const T right_derivative =
            left * (T(1) - tanh_inner * tanh_inner) * (T(kGeluBeta) * (T(1) + T(3) * T(kGeluKappa) * x_sq));
        return grad * (left_derivative + right_derivative);
      }
      const T cdf = T(0.5) * (T(1) + std::erf(x * T(kSqrtHalf)));
      const T pdf = T(kInvSqrt2Pi) * std::exp(T(-0.5) * x * x);
      return grad * (cdf + x * pdf);
    } else {
      return grad;  // refused by the kernel
    }
  }
};
// silu_backward's element: grad * s * (1 + self * (1 - s)), s = sigmoid(self).
struct SiluBackwardF : BinaryFn<SiluBackwardF> {
  template <class T>
  DESCENT_HD T eval(T grad, T x, T) const {
    if constexpr (std::is_floating_point_v<T>) {
      const T sig = T(1) / (T(1) + std::exp(-x));
      return grad * sig * (T(1) + x * (T(1) - sig));
    } else {
      return grad;
    }
  }
};

// The binary rows' functors (Note [Each row's element function]); mse_loss,
// a Reduction, squares its differences with MseF.
#define DESCENT_FORALL_BINARY_FNS(_)        \
  _(add, AddF)                              \
  _(sub, SubF)                              \
  _(mul, MulF)                              \
  _(div, DivF)                              \
  _(pow, PowF)                              \
  _(pow_scalar, PowScalarF)                 \
  _(threshold_backward, ThresholdBackwardF) \
  _(floor_divide, FloorDivideF)             \
  _(gelu_backward, GeluBackwardF)           \
  _(silu_backward, SiluBackwardF)

template <typename Fn>
void visit_binary(Op op, Fn&& fn) {
  switch (op) {
#define DESCENT_BINARY_CASE(id, F) \
  case Op::id:                     \
    return fn(F{});
    DESCENT_FORALL_BINARY_FNS(DESCENT_BINARY_CASE)
#undef DESCENT_BINARY_CASE
    case Op::mse_loss:
      return fn(MseF{});
    default:
      throw Error("visit_binary: not a binary op");
  }
}

// [SECTION] Comparison ------------------------------------------------------------

// A float16 or bfloat16 compares as the float32 it converts to (exactly).
template <class F>
struct CompareFn {
  template <class T>
  DESCENT_HD bool operator()(T a, T b) const {
    if constexpr (is_reduced_float_v<T>)
      return static_cast<const F&>(*this).eval(float(a), float(b));
    else
      return static_cast<const F&>(*this).eval(a, b);
  }
};
struct EqF : CompareFn<EqF> {
  template <class T>
  DESCENT_HD bool eval(T a, T b) const {
    return a == b;
  }
};
struct LtF : CompareFn<LtF> {
  template <class T>
  DESCENT_HD bool eval(T a, T b) const {
    return a < b;
  }
};
struct GtF : CompareFn<GtF> {
  template <class T>
  DESCENT_HD bool eval(T a, T b) const {
    return a > b;
  }
};
struct NeF : CompareFn<NeF> {
  template <class T>
  DESCENT_HD bool eval(T a, T b) const {
    return a != b;
  }
};  // true when either is NaN
struct LeF : CompareFn<LeF> {
  template <class T>
  DESCENT_HD bool eval(T a, T b) const {
    return a <= b;
  }
};
struct GeF : CompareFn<GeF> {
  template <class T>
  DESCENT_HD bool eval(T a, T b) const {
    return a >= b;
  }
};

// The comparison rows' functors (Note [Each row's element function]).
#define DESCENT_FORALL_COMPARE_FNS(_) \
  _(eq, EqF)                          \
  _(lt, LtF)                          \
  _(gt, GtF)                          \
  _(ne, NeF)                          \
  _(le, LeF)                          \
  _(ge, GeF)

template <typename Fn>
void visit_compare(Op op, Fn&& fn) {
  switch (op) {
#define DESCENT_COMPARE_CASE(id, F) \
  case Op::id:                      \
    return fn(F{});
    DESCENT_FORALL_COMPARE_FNS(DESCENT_COMPARE_CASE)
#undef DESCENT_COMPARE_CASE
    default:
      throw Error("visit_compare: not a comparison op");
  }
}

// [SECTION] linspace ------------------------------------------------------------------

// Element i of linspace(start, end, steps), steps >= 2, filled from both ends
// as PyTorch's CPU kernel fills it (Note [linspace fills from both ends],
// factories.cpp): float32 and float64 step in their own type with one fused
// multiply-add, the integers step in double (and truncate), float16 and bfloat16
// round every operation to their 16 bits, as c10::Half's operators do.
template <class T>
struct LinspaceF {
  using Step = std::conditional_t<std::is_integral_v<T>, double, T>;
  T start, end;
  Step step;
  int64_t steps;
  DESCENT_HD T operator()(int64_t i) const {
    const bool first_half = i < steps / 2;
    const int64_t k = first_half ? i : steps - i - 1;  // steps from the nearer end
    if constexpr (is_reduced_float_v<T>) {
      const T d = T(float(step) * float(T(float(k))));
      return first_half ? T(float(start) + float(d)) : T(float(end) - float(d));
    } else if constexpr (std::is_integral_v<T>) {
      const double v = first_half ? std::fma(step, double(k), double(start)) : std::fma(-step, double(k), double(end));
      return T(v);
    } else {
      return first_half ? std::fma(step, T(k), start) : std::fma(-step, T(k), end);
    }
  }
};
// The functor for a dtype: start and end converted with Scalar's check
// (Note [Checked scalar conversion]), the step computed once, on the host.
template <class T>
LinspaceF<T> linspace_fn(const Scalar& start, const Scalar& end, int64_t steps) {
  LinspaceF<T> f{start.to<T>("linspace", "start"), end.to<T>("linspace", "end"), {}, steps};
  if constexpr (is_reduced_float_v<T>)
    f.step = T(float(T(float(f.end) - float(f.start))) / float(T(float(steps - 1))));
  else if constexpr (std::is_integral_v<T>)
    f.step = (double(f.end) - double(f.start)) / double(steps - 1);
  else
    f.step = (f.end - f.start) / T(steps - 1);
  return f;
}

// [SECTION] The functor tables against the op table ----------------------------------

// Note [Each row's element function]: the checks. A row runs another row's
// loop where its boxed kernel says so: pow.Scalar runs pow's (2 ** x),
// rsub runs sub through the dispatcher.
namespace element_fn_check {
constexpr bool runs_another_rows_loop(Op op) { return op == Op::pow_scalar_base || op == Op::rsub; }
constexpr bool in_unary_table(Op op) {
#define DESCENT_IS(id, F) op == Op::id ||
  return DESCENT_FORALL_UNARY_FNS(DESCENT_IS) op == Op::gelu || op == Op::clamp || op == Op::clamp_min ||
         op == Op::clamp_max;
}
constexpr bool in_binary_table(Op op) { return DESCENT_FORALL_BINARY_FNS(DESCENT_IS) false; }
constexpr bool in_compare_table(Op op) { return DESCENT_FORALL_COMPARE_FNS(DESCENT_IS) false; }
#undef DESCENT_IS
constexpr bool composite(std::string_view dispatch) { return dispatch.find("Composite") != std::string_view::npos; }
constexpr bool has_its_functor(Op op, OpKind kind, std::string_view dispatch) {
  if (composite(dispatch) || runs_another_rows_loop(op)) return true;
  switch (kind) {
    case OpKind::Unary:
      return in_unary_table(op);
    case OpKind::Binary:
      return in_binary_table(op);
    case OpKind::Comparison:
      return in_compare_table(op);
    default:
      return true;
  }
}
#define DESCENT_CHECK_ROW(id, schema, dispatch, kind, exact, domain, module, sample)            \
  static_assert(has_its_functor(Op::id, OpKind::kind, dispatch),                                \
                "the op table's row " #id                                                       \
                " has no element function: add it to DESCENT_FORALL_UNARY_FNS, _BINARY_FNS or " \
                "_COMPARE_FNS (elementwise.h)");
DESCENT_FORALL_OPS(DESCENT_CHECK_ROW)
#undef DESCENT_CHECK_ROW
#define DESCENT_CHECK_FN(family, kind_)               \
  static_assert(op_kind(Op::family) == OpKind::kind_, \
                "the functor table's " #family " is not a " #kind_ " row of the op table");
#define DESCENT_UNARY_FN_KIND(id, F) DESCENT_CHECK_FN(id, Unary)
#define DESCENT_BINARY_FN_KIND(id, F) DESCENT_CHECK_FN(id, Binary)
#define DESCENT_COMPARE_FN_KIND(id, F) DESCENT_CHECK_FN(id, Comparison)
DESCENT_FORALL_UNARY_FNS(DESCENT_UNARY_FN_KIND)
DESCENT_FORALL_BINARY_FNS(DESCENT_BINARY_FN_KIND)
DESCENT_FORALL_COMPARE_FNS(DESCENT_COMPARE_FN_KIND)
#undef DESCENT_UNARY_FN_KIND
#undef DESCENT_BINARY_FN_KIND
#undef DESCENT_COMPARE_FN_KIND
#undef DESCENT_CHECK_FN
}  // namespace element_fn_check

}  // namespace descent::kernels
