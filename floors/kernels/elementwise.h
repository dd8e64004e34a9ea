// The element functions of the elementwise ops, shared by the reference and
// the optimized loops: both variants compute each element with the very same
// expression, which is why the verifier can demand bit-for-bit equality.
//
// visit_unary(op, fn) calls fn(F{}) with F the functor of `op`, so a loop is
// written once and instantiated per op (and per dtype by visit_dtype).
// Each functor writes its expression once, as eval(); the base it derives
// from computes a float16 or bfloat16 element in float32 and rounds it once
// (Note [Reduced-precision floats], half.h). DESCENT_HD (half.h) compiles
// them for the GPU as well.
#pragma once

#include <cmath>
#include <cstdint>
#include <type_traits>

#include "floors/core/dtype.h"
#include "floors/core/error.h"
#include "floors/dispatch/ops.h"

namespace descent::kernels {

// Integer arithmetic wraps around (two's complement), as PyTorch's does,
// instead of being undefined behaviour on overflow.
DESCENT_HD inline int64_t wrap_add(int64_t a, int64_t b) { return int64_t(uint64_t(a) + uint64_t(b)); }
DESCENT_HD inline int64_t wrap_mul(int64_t a, int64_t b) { return int64_t(uint64_t(a) * uint64_t(b)); }
// a + b and a * b in T, wrapping for int64: the one place where the loops
// (elementwise, sums, matrix products) choose between the two.
template <class T> DESCENT_HD T plus(T a, T b) { if constexpr (std::is_same_v<T, int64_t>) return wrap_add(a, b); else return T(a + b); }
template <class T> DESCENT_HD T times(T a, T b) { if constexpr (std::is_same_v<T, int64_t>) return wrap_mul(a, b); else return T(a * b); }

// An element converted to D the way a tensor cast converts it (to(), copy_,
// type promotion): unchecked, as PyTorch's casts are (only Scalars are
// checked, Note [Checked scalar conversion]), but never undefined behaviour.
// A float outside int64's range, NaN included, becomes INT64_MIN: what x86's
// cvttsd2si gives, and so what PyTorch gives on x86 (a C++ cast of such a
// value is undefined, and may give anything once the compiler knows it).
template <class D, class S>
DESCENT_HD D cast_element(S x) {
  if constexpr (is_reduced_float_v<S> && !std::is_same_v<D, S>) {
    return cast_element<D>(float(x));
  } else if constexpr (std::is_same_v<D, int64_t> && std::is_floating_point_v<S>) {
    return x >= S(-0x1p63) && x < S(0x1p63) ? int64_t(x) : INT64_MIN;
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
    if constexpr (is_reduced_float_v<T>) return T(f.eval(float(x)));
    else return f.eval(x);
  }
};

struct NegF : UnaryFn<NegF> { template <class T> DESCENT_HD T eval(T x) const {
  if constexpr (std::is_same_v<T, bool>) return x; else if constexpr (std::is_integral_v<T>) return wrap_mul(x, -1); else return -x; } };
// abs clears the sign bit of a float, so abs(-0.0) is +0.0 (x < 0 is false for -0.0).
struct AbsF : UnaryFn<AbsF> { template <class T> DESCENT_HD T eval(T x) const {
  if constexpr (std::is_same_v<T, bool>) return x;
  else if constexpr (std::is_floating_point_v<T>) return std::fabs(x);
  else return x < 0 ? NegF{}(x) : x; } };
struct ExpF : UnaryFn<ExpF> { template <class T> DESCENT_HD T eval(T x) const { return std::exp(x); } };
struct LogF : UnaryFn<LogF> { template <class T> DESCENT_HD T eval(T x) const { return std::log(x); } };
struct SqrtF : UnaryFn<SqrtF> { template <class T> DESCENT_HD T eval(T x) const { return std::sqrt(x); } };
// relu propagates NaN, like PyTorch's clamp_min(0).
struct ReluF : UnaryFn<ReluF> { template <class T> DESCENT_HD T eval(T x) const { return x > T(0) || x != x ? x : T(0); } };
struct SigmoidF : UnaryFn<SigmoidF> { template <class T> DESCENT_HD T eval(T x) const { return T(1) / (T(1) + std::exp(-x)); } };
struct TanhF : UnaryFn<TanhF> { template <class T> DESCENT_HD T eval(T x) const { return std::tanh(x); } };

template <typename Fn>
void visit_unary(Op op, Fn&& fn) {
  switch (op) {
    case Op::neg: return fn(NegF{});
    case Op::abs: return fn(AbsF{});
    case Op::exp: return fn(ExpF{});
    case Op::log: return fn(LogF{});
    case Op::sqrt: return fn(SqrtF{});
    case Op::relu: return fn(ReluF{});
    case Op::sigmoid: return fn(SigmoidF{});
    case Op::tanh: return fn(TanhF{});
    default: throw Error("visit_unary: not a unary op");
  }
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
    if constexpr (is_reduced_float_v<T>) return T(f.eval(float(a), float(b), alpha));
    else return f.eval(a, b, alpha);
  }
};

struct AddF : BinaryFn<AddF> { template <class T> DESCENT_HD T eval(T a, T b, T alpha) const {
  if constexpr (std::is_same_v<T, bool>) return a || (alpha && b); else return plus(a, times(alpha, b)); } };
struct SubF : BinaryFn<SubF> { template <class T> DESCENT_HD T eval(T a, T b, T alpha) const {
  if constexpr (std::is_same_v<T, bool>) return a;
  else if constexpr (std::is_integral_v<T>) return wrap_add(a, wrap_mul(wrap_mul(alpha, b), -1)); else return a - alpha * b; } };
struct MulF : BinaryFn<MulF> { template <class T> DESCENT_HD T eval(T a, T b, T) const {
  if constexpr (std::is_same_v<T, bool>) return a && b; else return times(a, b); } };
struct DivF : BinaryFn<DivF> { template <class T> DESCENT_HD T eval(T a, T b, T) const { return a / b; } };  // floats only
struct PowF : BinaryFn<PowF> {
  template <class T> DESCENT_HD T eval(T a, T b, T) const {
    if constexpr (std::is_floating_point_v<T>) {
      return std::pow(a, b);
    } else if constexpr (std::is_same_v<T, bool>) {
      return a || !b;
    } else {  // integer power by squaring; a negative exponent as PyTorch's powi
      if (b < 0) return a == 1 ? 1 : a == -1 ? ((b & 1) ? -1 : 1) : 0;
      T r = 1;
      for (T base = a, e = b; e > 0; e >>= 1, base = wrap_mul(base, base))
        if (e & 1) r = wrap_mul(r, base);
      return r;
    }
  }
};

template <typename Fn>
void visit_binary(Op op, Fn&& fn) {
  switch (op) {
    case Op::add: return fn(AddF{});
    case Op::sub: return fn(SubF{});
    case Op::mul: return fn(MulF{});
    case Op::div: return fn(DivF{});
    case Op::pow: return fn(PowF{});
    default: throw Error("visit_binary: not a binary op");
  }
}

// [SECTION] Comparison ------------------------------------------------------------

// A float16 or bfloat16 compares as the float32 it converts to (exactly).
template <class F>
struct CompareFn {
  template <class T>
  DESCENT_HD bool operator()(T a, T b) const {
    if constexpr (is_reduced_float_v<T>) return static_cast<const F&>(*this).eval(float(a), float(b));
    else return static_cast<const F&>(*this).eval(a, b);
  }
};
struct EqF : CompareFn<EqF> { template <class T> DESCENT_HD bool eval(T a, T b) const { return a == b; } };
struct LtF : CompareFn<LtF> { template <class T> DESCENT_HD bool eval(T a, T b) const { return a < b; } };
struct GtF : CompareFn<GtF> { template <class T> DESCENT_HD bool eval(T a, T b) const { return a > b; } };
struct NeF : CompareFn<NeF> { template <class T> DESCENT_HD bool eval(T a, T b) const { return a != b; } };  // true when either is NaN
struct LeF : CompareFn<LeF> { template <class T> DESCENT_HD bool eval(T a, T b) const { return a <= b; } };
struct GeF : CompareFn<GeF> { template <class T> DESCENT_HD bool eval(T a, T b) const { return a >= b; } };

template <typename Fn>
void visit_compare(Op op, Fn&& fn) {
  switch (op) {
    case Op::eq: return fn(EqF{});
    case Op::lt: return fn(LtF{});
    case Op::gt: return fn(GtF{});
    case Op::ne: return fn(NeF{});
    case Op::le: return fn(LeF{});
    case Op::ge: return fn(GeF{});
    default: throw Error("visit_compare: not a comparison op");
  }
}

}  // namespace descent::kernels
