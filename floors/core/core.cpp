// dtypes, devices and scalars: names, parsing, printing.
#include <cmath>
#include <cstdio>

#include "floors/core/device.h"
#include "floors/core/dtype.h"
#include "floors/core/error.h"
#include "floors/core/scalar.h"

namespace descent {

const char* dtype_name(ScalarType t) {
  switch (t) {
    case ScalarType::Bool:
      return "bool";
    case ScalarType::Int64:
      return "int64";
    case ScalarType::Float32:
      return "float32";
    case ScalarType::Float64:
      return "float64";
    case ScalarType::Float16:
      return "float16";
    case ScalarType::BFloat16:
      return "bfloat16";
    case ScalarType::UInt8:
      return "uint8";
    case ScalarType::Int8:
      return "int8";
    case ScalarType::Int16:
      return "int16";
    case ScalarType::Int32:
      return "int32";
  }
  return "?";
}

const char* type_word(ScalarType t) {
  switch (t) {
    case ScalarType::Bool:
      return "Bool";
    case ScalarType::Int64:
      return "Long";
    case ScalarType::Float32:
      return "Float";
    case ScalarType::Float64:
      return "Double";
    case ScalarType::Float16:
      return "Half";
    case ScalarType::BFloat16:
      return "BFloat16";
    case ScalarType::UInt8:
      return "Byte";
    case ScalarType::Int8:
      return "Char";
    case ScalarType::Int16:
      return "Short";
    case ScalarType::Int32:
      return "Int";
  }
  return "?";
}

bool parse_dtype(std::string_view s, ScalarType* out) {
  struct Name {
    std::string_view name;
    ScalarType t;
  };
  static constexpr Name kNames[] = {
      {"bool", ScalarType::Bool},         {"int64", ScalarType::Int64},     {"long", ScalarType::Int64},
      {"float32", ScalarType::Float32},   {"float", ScalarType::Float32},   {"float64", ScalarType::Float64},
      {"double", ScalarType::Float64},    {"float16", ScalarType::Float16}, {"half", ScalarType::Float16},
      {"bfloat16", ScalarType::BFloat16}, {"int32", ScalarType::Int32},     {"int", ScalarType::Int32},
      {"int16", ScalarType::Int16},       {"short", ScalarType::Int16},     {"int8", ScalarType::Int8},
      {"uint8", ScalarType::UInt8},
  };
  for (const Name& n : kNames) {
    if (n.name == s) {
      *out = n.t;
      return true;
    }
  }
  return false;
}

const char* device_type_name(DeviceType t) {
  switch (t) {
    case DeviceType::CPU:
      return "cpu";
    case DeviceType::Sim:
      return "sim";
    case DeviceType::CUDA:
      return "cuda";
  }
  return "?";
}

std::string Device::str() const {
  if (type == DeviceType::CPU) return "cpu";
  return std::string(device_type_name(type)) + ":" + std::to_string(index);
}

// As c10::Device's constructor: a type name, then optionally ':' and an index
// written without a sign or leading zeros; every error is a RuntimeError. The
// digits are checked before they are added up, so a long run of them
// ("cuda:9999999999") is an error instead of an int overflow.
Device Device::parse(std::string_view s) {
  DESCENT_CHECK(!s.empty(), Error, "Device string must not be empty");
  std::string_view kind = s.substr(0, s.find(':'));
  Device d;
  if (kind == "cpu")
    d.type = DeviceType::CPU;
  else if (kind == "sim")
    d.type = DeviceType::Sim;
  else if (kind == "cuda")
    d.type = DeviceType::CUDA;
  else
    throw Error(descent::str("Expected one of cpu, sim, cuda device type at start of device string: ", s));
  if (kind.size() < s.size()) {
    std::string_view num = s.substr(kind.size() + 1);
    bool digits = !num.empty() && (num[0] != '0' || num.size() == 1);
    for (char c : num) digits = digits && c >= '0' && c <= '9';
    DESCENT_CHECK(digits, Error, "Invalid device string: '", s, "'");
    int64_t idx = 0;
    for (char c : num) {
      idx = idx * 10 + (c - '0');
      DESCENT_CHECK(idx <= kMaxDeviceIndex, Error, "Could not parse device index '", num, "' in device string '", s,
                    "': a device index is at most ", kMaxDeviceIndex);
    }
    DESCENT_CHECK(d.type != DeviceType::CPU || idx == 0, Error, "Invalid device string: '", s,
                  "' (the CPU has only index 0)");
    d.index = int(idx);
  }
  return d;
}

std::string Scalar::str() const {
  if (is_bool()) return v_.b ? "True" : "False";
  if (is_integral()) return std::to_string(v_.i);
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.8g", v_.d);
  return buf;
}

}  // namespace descent
