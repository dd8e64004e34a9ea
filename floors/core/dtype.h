// dtypes: the six element types descent knows.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string_view>

#include "floors/core/half.h"

namespace descent {

// How two dtypes promote is Note [Type promotion] in promotion.cpp; the
// 16-bit floats are Note [Reduced-precision floats] in half.h.
enum class ScalarType : uint8_t {
  Bool = 0,      // 1 byte, true/false
  Int64 = 1,     // 8 bytes, two's complement ("long" in PyTorch)
  Float32 = 2,   // 4 bytes, IEEE binary32 (the default float dtype)
  Float64 = 3,   // 8 bytes, IEEE binary64
  Float16 = 4,   // 2 bytes, IEEE binary16 ("half")
  BFloat16 = 5,  // 2 bytes, the top half of a float32
};
constexpr int kNumScalarTypes = 6;
constexpr ScalarType kDefaultFloat = ScalarType::Float32;

constexpr size_t element_size(ScalarType t) {
  switch (t) {
    case ScalarType::Bool: return 1;
    case ScalarType::Int64: return 8;
    case ScalarType::Float32: return 4;
    case ScalarType::Float64: return 8;
    case ScalarType::Float16:
    case ScalarType::BFloat16: return 2;
  }
  return 0;
}
constexpr bool is_reduced_floating(ScalarType t) { return t == ScalarType::Float16 || t == ScalarType::BFloat16; }
constexpr bool is_floating(ScalarType t) {
  return t == ScalarType::Float32 || t == ScalarType::Float64 || is_reduced_floating(t);
}
constexpr bool is_integral(ScalarType t, bool include_bool) {
  return t == ScalarType::Int64 || (include_bool && t == ScalarType::Bool);
}

const char* dtype_name(ScalarType t);             // "float32", "int64", ...
const char* type_word(ScalarType t);              // PyTorch's word in messages: "Float", "Long", "Half", "BFloat16"
bool parse_dtype(std::string_view s, ScalarType* out);  // accepts "float32", "float", "long", ...

// The C++ type stored for each dtype.
template <ScalarType T> struct CppType;
template <> struct CppType<ScalarType::Bool> { using type = bool; };
template <> struct CppType<ScalarType::Int64> { using type = int64_t; };
template <> struct CppType<ScalarType::Float32> { using type = float; };
template <> struct CppType<ScalarType::Float64> { using type = double; };
template <> struct CppType<ScalarType::Float16> { using type = Half; };
template <> struct CppType<ScalarType::BFloat16> { using type = BFloat16; };

template <typename T> constexpr ScalarType scalar_type_of();
template <> constexpr ScalarType scalar_type_of<bool>() { return ScalarType::Bool; }
template <> constexpr ScalarType scalar_type_of<int64_t>() { return ScalarType::Int64; }
template <> constexpr ScalarType scalar_type_of<float>() { return ScalarType::Float32; }
template <> constexpr ScalarType scalar_type_of<double>() { return ScalarType::Float64; }
template <> constexpr ScalarType scalar_type_of<Half>() { return ScalarType::Float16; }
template <> constexpr ScalarType scalar_type_of<BFloat16>() { return ScalarType::BFloat16; }

// Calls fn.template operator()<T>() with T the C++ type of `t`:
//   visit_dtype(t, [&]<typename T>() { ... });
template <typename Fn>
decltype(auto) visit_dtype(ScalarType t, Fn&& fn) {
  switch (t) {
    case ScalarType::Bool: return fn.template operator()<bool>();
    case ScalarType::Int64: return fn.template operator()<int64_t>();
    case ScalarType::Float32: return fn.template operator()<float>();
    case ScalarType::Float16: return fn.template operator()<Half>();
    case ScalarType::BFloat16: return fn.template operator()<BFloat16>();
    case ScalarType::Float64: break;
  }
  return fn.template operator()<double>();
}

}  // namespace descent
