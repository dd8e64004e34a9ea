// Scalar: one number that is not a tensor (alpha, fill values, exponents).
#pragma once

#include <cmath>
#include <cstdint>
#include <limits>
#include <string>
#include <type_traits>

#include "floors/core/dtype.h"
#include "floors/core/error.h"

namespace descent {

class Scalar {
 public:
  Scalar() : Scalar(int64_t{0}) {}
  Scalar(double v) : type_(ScalarType::Float64) { v_.d = v; }
  Scalar(int64_t v) : type_(ScalarType::Int64) { v_.i = v; }
  Scalar(int v) : Scalar(int64_t{v}) {}
  Scalar(bool v) : type_(ScalarType::Bool) { v_.b = v; }

  // The dtype of the Python number it came from: Float64, Int64 or Bool.
  ScalarType type() const { return type_; }
  bool is_floating() const { return type_ == ScalarType::Float64; }
  bool is_integral() const { return type_ == ScalarType::Int64; }
  bool is_bool() const { return type_ == ScalarType::Bool; }

  double to_double() const {
    return type_ == ScalarType::Float64 ? v_.d : type_ == ScalarType::Int64 ? double(v_.i) : double(v_.b);
  }
  // A float is truncated toward zero; one outside [-2^63, 2^63) (NaN and the
  // infinities included) raises, see Note [Checked scalar conversion].
  int64_t to_int(const char* op = nullptr, const char* arg = "value") const {
    if (type_ == ScalarType::Float64) {
      check_fits(v_.d >= -0x1p63 && v_.d < 0x1p63, "int64_t", op, arg);  // false for NaN
      return int64_t(v_.d);
    }
    return type_ == ScalarType::Int64 ? v_.i : int64_t(v_.b);
  }
  bool to_bool() const {
    return type_ == ScalarType::Float64 ? v_.d != 0 : type_ == ScalarType::Int64 ? v_.i != 0 : v_.b;
  }

  // Note [Checked scalar conversion]
  // ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
  // to<T>() converts the value to the C++ type T (bool, an integer type,
  // float, double, Half, BFloat16) the way PyTorch's Scalar::to does: a value T
  // cannot hold raises RuntimeError "value cannot be converted to type T
  // without overflow" instead of being undefined behaviour (a double cast to
  // int64_t) or a silent infinity (1e300 cast to float). For int64_t that is
  // NaN, the infinities and every double outside [-2^63, 2^63); for int32,
  // int16, int8 and uint8, NaN, the infinities, a double outside [lowest,
  // max] (torch 2.11: 255.9 is too much for uint8, -0.5 too little; c10
  // compares the double with the bound, and torch 2.15 takes up to max + 1),
  // and an int outside [lowest, max], except that an unsigned type
  // takes a negative int down to -max and wraps it (uint8: -1 is 255, -256
  // raises), as c10's overflows() allows, so that alpha = -1 works; for
  // float, a finite double beyond float's largest; for Half (BFloat16), a
  // finite number beyond 65504 (3.39e38), an int64 included (NaN and the
  // infinities are floats too).
  // Anything becomes a bool. `op` and `arg`, when given, name the call in the
  // message ("full(): fill_value cannot be converted ..."). Only scalars are
  // checked: casting a tensor (to(), promotion) converts as PyTorch does.
  template <typename T>
  T to(const char* op = nullptr, const char* arg = "value") const {
    if constexpr (std::is_same_v<T, bool>) {
      return to_bool();
    } else if constexpr (std::is_same_v<T, int64_t>) {
      return to_int(op, arg);
    } else if constexpr (std::is_integral_v<T>) {  // int32, int16, int8, uint8
      using L = std::numeric_limits<T>;
      if (type_ == ScalarType::Float64) {
        check_fits(v_.d >= double(L::lowest()) && v_.d <= double(L::max()), int_type_name<T>(), op, arg);  // NaN too
        return T(v_.d);
      }
      const int64_t i = to_int();
      // c10's overflows(): an unsigned type takes a negative int down to
      // -max, wrapping it (uint8: -1 is 255), so that x - 1 is x + 255.
      const bool fits = L::is_signed ? i >= int64_t(L::lowest()) && i <= int64_t(L::max())
                                     : i <= int64_t(L::max()) && i >= -int64_t(L::max());
      check_fits(fits, int_type_name<T>(), op, arg);
      return T(i);  // modulo 2**bits (C++20), so -1 is 255
    } else if constexpr (std::is_same_v<T, float>) {
      if (type_ == ScalarType::Float64)
        check_fits(!std::isfinite(v_.d) || std::fabs(v_.d) <= double(std::numeric_limits<float>::max()), "float", op,
                   arg);
      return float(to_double());
    } else if constexpr (is_reduced_float_v<T>) {     // through float, as c10's conversion goes
      constexpr bool half = std::is_same_v<T, Half>;  // an int64 can overflow float16 too (100000)
      const double v = to_double();
      check_fits(!std::isfinite(v) || std::fabs(v) <= (half ? 65504.0 : 0x1.fep127), half ? "at::Half" : "at::BFloat16",
                 op, arg);
      return T(float(v));
    } else {
      static_assert(std::is_same_v<T, double>, "a Scalar converts to bool, int64_t, float or double");
      return to_double();
    }
  }
  std::string str() const;

 private:
  // The C++ type's name as c10's Scalar accessors give it ("int" for int32).
  template <typename T>
  static constexpr const char* int_type_name() {
    if constexpr (std::is_same_v<T, int32_t>)
      return "int";
    else if constexpr (std::is_same_v<T, int16_t>)
      return "int16_t";
    else if constexpr (std::is_same_v<T, int8_t>)
      return "int8_t";
    else
      return "uint8_t";
  }
  void check_fits(bool fits, const char* type, const char* op, const char* arg) const {
    DESCENT_CHECK(fits, Error, op ? op : "", op ? "(): " : "", arg, " cannot be converted to type ", type,
                  " without overflow");
  }

  ScalarType type_;
  union {
    double d;
    int64_t i;
    bool b;
  } v_;
};

}  // namespace descent
