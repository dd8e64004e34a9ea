// Scalar: one number that is not a tensor (alpha, fill values, exponents).
#pragma once

#include <cstdint>
#include <string>

#include "floors/core/dtype.h"

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

  double to_double() const { return type_ == ScalarType::Float64 ? v_.d : type_ == ScalarType::Int64 ? double(v_.i) : double(v_.b); }
  int64_t to_int() const { return type_ == ScalarType::Float64 ? int64_t(v_.d) : type_ == ScalarType::Int64 ? v_.i : int64_t(v_.b); }
  bool to_bool() const { return type_ == ScalarType::Float64 ? v_.d != 0 : type_ == ScalarType::Int64 ? v_.i != 0 : v_.b; }
  // The value converted to the C++ type T (bool, int64_t, float, double).
  template <typename T>
  T to() const {
    if constexpr (std::is_same_v<T, bool>) return to_bool();
    else if constexpr (std::is_integral_v<T>) return T(to_int());
    else return T(to_double());
  }
  std::string str() const;

 private:
  ScalarType type_;
  union {
    double d;
    int64_t i;
    bool b;
  } v_;
};

}  // namespace descent
