// dtypes: the ten element types descent knows.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string_view>
#include <type_traits>

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
  UInt8 = 6,     // 1 byte, unsigned ("byte")
  Int8 = 7,      // 1 byte, two's complement ("char")
  Int16 = 8,     // 2 bytes, two's complement ("short")
  Int32 = 9,     // 4 bytes, two's complement ("int")
};
// The values are descent's own (appended, so a recorded dtype keeps its
// number), not c10's ScalarType numbering.
constexpr int kNumScalarTypes = 10;
constexpr ScalarType kDefaultFloat = ScalarType::Float32;

constexpr size_t element_size(ScalarType t) {
  switch (t) {
    case ScalarType::Bool:
      return 1;
    case ScalarType::Int64:
      return 8;
    case ScalarType::UInt8:
    case ScalarType::Int8:
      return 1;
    case ScalarType::Int16:
      return 2;
    case ScalarType::Int32:
    case ScalarType::Float32:
      return 4;
    case ScalarType::Float64:
      return 8;
    case ScalarType::Float16:
    case ScalarType::BFloat16:
      return 2;
  }
  return 0;
}
constexpr bool is_reduced_floating(ScalarType t) { return t == ScalarType::Float16 || t == ScalarType::BFloat16; }
constexpr bool is_floating(ScalarType t) {
  return t == ScalarType::Float32 || t == ScalarType::Float64 || is_reduced_floating(t);
}
constexpr bool is_integral(ScalarType t, bool include_bool) {
  return t == ScalarType::Int64 || t == ScalarType::Int32 || t == ScalarType::Int16 || t == ScalarType::Int8 ||
         t == ScalarType::UInt8 || (include_bool && t == ScalarType::Bool);
}

const char* dtype_name(ScalarType t);  // "float32", "int64", "uint8", ...
const char* type_word(ScalarType t);   // PyTorch's word in messages: "Float", "Long", "Int", "Byte", ...
bool parse_dtype(std::string_view s, ScalarType* out);  // accepts "float32", "float", "long", "int", "short", ...

// The C++ type stored for each dtype.
template <ScalarType T>
struct CppType;
template <>
struct CppType<ScalarType::Bool> {
  using type = bool;
};
template <>
struct CppType<ScalarType::Int64> {
  using type = int64_t;
};
template <>
struct CppType<ScalarType::Float32> {
  using type = float;
};
template <>
struct CppType<ScalarType::Float64> {
  using type = double;
};
template <>
struct CppType<ScalarType::Float16> {
  using type = Half;
};
template <>
struct CppType<ScalarType::BFloat16> {
  using type = BFloat16;
};
template <>
struct CppType<ScalarType::UInt8> {
  using type = uint8_t;
};
template <>
struct CppType<ScalarType::Int8> {
  using type = int8_t;
};
template <>
struct CppType<ScalarType::Int16> {
  using type = int16_t;
};
template <>
struct CppType<ScalarType::Int32> {
  using type = int32_t;
};

template <typename T>
constexpr ScalarType scalar_type_of();
template <>
constexpr ScalarType scalar_type_of<bool>() {
  return ScalarType::Bool;
}
template <>
constexpr ScalarType scalar_type_of<int64_t>() {
  return ScalarType::Int64;
}
template <>
constexpr ScalarType scalar_type_of<float>() {
  return ScalarType::Float32;
}
template <>
constexpr ScalarType scalar_type_of<double>() {
  return ScalarType::Float64;
}
template <>
constexpr ScalarType scalar_type_of<Half>() {
  return ScalarType::Float16;
}
template <>
constexpr ScalarType scalar_type_of<BFloat16>() {
  return ScalarType::BFloat16;
}
template <>
constexpr ScalarType scalar_type_of<uint8_t>() {
  return ScalarType::UInt8;
}
template <>
constexpr ScalarType scalar_type_of<int8_t>() {
  return ScalarType::Int8;
}
template <>
constexpr ScalarType scalar_type_of<int16_t>() {
  return ScalarType::Int16;
}
template <>
constexpr ScalarType scalar_type_of<int32_t>() {
  return ScalarType::Int32;
}

// An integer element type: int64_t and the narrower ones, not bool.
template <typename T>
inline constexpr bool is_int_v = std::is_integral_v<T> && !std::is_same_v<T, bool>;

// Calls fn.template operator()<T>() with T the C++ type of `t`:
//   visit_dtype(t, [&]<typename T>() { ... });
template <typename Fn>
decltype(auto) visit_dtype(ScalarType t, Fn&& fn) {
  switch (t) {
    case ScalarType::Bool:
      return fn.template operator()<bool>();
    case ScalarType::Int64:
      return fn.template operator()<int64_t>();
    case ScalarType::Float32:
      return fn.template operator()<float>();
    case ScalarType::Float16:
      return fn.template operator()<Half>();
    case ScalarType::BFloat16:
      return fn.template operator()<BFloat16>();
    case ScalarType::UInt8:
      return fn.template operator()<uint8_t>();
    case ScalarType::Int8:
      return fn.template operator()<int8_t>();
    case ScalarType::Int16:
      return fn.template operator()<int16_t>();
    case ScalarType::Int32:
      return fn.template operator()<int32_t>();
    case ScalarType::Float64:
      break;
  }
  return fn.template operator()<double>();
}

}  // namespace descent
