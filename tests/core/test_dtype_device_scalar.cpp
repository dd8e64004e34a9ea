// Tests for floors/core/{dtype.h,device.h,scalar.h} and core.cpp: dtype names,
// parsing, sizes and categories; Device::parse and str; Scalar's
// conversions and printing.
//
// [SECTION] dtypes
// [SECTION] Devices
// [SECTION] Scalars
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <iterator>
#include <limits>
#include <string>
#include <type_traits>
#include <typeinfo>

#include "floors/core/device.h"
#include "floors/core/dtype.h"
#include "floors/core/error.h"
#include "floors/core/scalar.h"

namespace descent {
namespace {

constexpr ScalarType kAllDtypes[] = {
    ScalarType::Bool,     ScalarType::Int64, ScalarType::Float32, ScalarType::Float64, ScalarType::Float16,
    ScalarType::BFloat16, ScalarType::UInt8, ScalarType::Int8,    ScalarType::Int16,   ScalarType::Int32};

// [SECTION] dtypes --------------------------------------------------------------------

TEST(Dtype, NamesAndSizes) {
  EXPECT_STREQ(dtype_name(ScalarType::Bool), "bool");
  EXPECT_STREQ(dtype_name(ScalarType::Int64), "int64");
  EXPECT_STREQ(dtype_name(ScalarType::Float32), "float32");
  EXPECT_STREQ(dtype_name(ScalarType::Float64), "float64");
  EXPECT_STREQ(dtype_name(ScalarType::Float16), "float16");
  EXPECT_STREQ(dtype_name(ScalarType::BFloat16), "bfloat16");
  static_assert(element_size(ScalarType::Float16) == 2 && sizeof(Half) == 2);
  static_assert(element_size(ScalarType::BFloat16) == 2 && sizeof(BFloat16) == 2);
  static_assert(element_size(ScalarType::Bool) == 1);
  static_assert(element_size(ScalarType::Int64) == 8);
  static_assert(element_size(ScalarType::Float32) == 4);
  static_assert(element_size(ScalarType::Float64) == 8);
  static_assert(kDefaultFloat == ScalarType::Float32);
  static_assert(kNumScalarTypes == 10);
  static_assert(std::size(kAllDtypes) == kNumScalarTypes);
}

TEST(Dtype, TheNarrowIntegers) {
  // torch.uint8, int8, int16 (short) and int32 (int): names, sizes, PyTorch's words.
  struct Case {
    ScalarType t;
    const char* name;
    size_t size;
    const char* word;
  };
  for (Case c : {Case{ScalarType::UInt8, "uint8", 1, "Byte"}, Case{ScalarType::Int8, "int8", 1, "Char"},
                 Case{ScalarType::Int16, "int16", 2, "Short"}, Case{ScalarType::Int32, "int32", 4, "Int"},
                 Case{ScalarType::Int64, "int64", 8, "Long"}}) {
    EXPECT_STREQ(dtype_name(c.t), c.name);
    EXPECT_EQ(element_size(c.t), c.size) << c.name;
    EXPECT_STREQ(type_word(c.t), c.word);
    EXPECT_TRUE(is_integral(c.t, false)) << c.name;
    EXPECT_FALSE(is_floating(c.t)) << c.name;
  }
  static_assert(std::is_same_v<CppType<ScalarType::UInt8>::type, uint8_t>);
  static_assert(std::is_same_v<CppType<ScalarType::Int8>::type, int8_t>);
  static_assert(std::is_same_v<CppType<ScalarType::Int16>::type, int16_t>);
  static_assert(std::is_same_v<CppType<ScalarType::Int32>::type, int32_t>);
  static_assert(scalar_type_of<uint8_t>() == ScalarType::UInt8 && scalar_type_of<int32_t>() == ScalarType::Int32);
  static_assert(is_int_v<int8_t> && is_int_v<int64_t> && !is_int_v<bool> && !is_int_v<float>);
}

TEST(Dtype, ParseAcceptsNamesAndAliases) {
  struct Case {
    const char* text;
    ScalarType want;
  };
  for (Case c :
       {Case{"bool", ScalarType::Bool}, Case{"int64", ScalarType::Int64}, Case{"long", ScalarType::Int64},
        Case{"float32", ScalarType::Float32}, Case{"float", ScalarType::Float32}, Case{"float64", ScalarType::Float64},
        Case{"double", ScalarType::Float64}, Case{"float16", ScalarType::Float16}, Case{"half", ScalarType::Float16},
        Case{"bfloat16", ScalarType::BFloat16}, Case{"int32", ScalarType::Int32}, Case{"int", ScalarType::Int32},
        Case{"int16", ScalarType::Int16}, Case{"short", ScalarType::Int16}, Case{"int8", ScalarType::Int8},
        Case{"uint8", ScalarType::UInt8}}) {
    ScalarType got = ScalarType::Bool;
    EXPECT_TRUE(parse_dtype(c.text, &got)) << c.text;
    EXPECT_EQ(got, c.want) << c.text;
  }
  // Every name round-trips.
  for (ScalarType t : kAllDtypes) {
    ScalarType got = ScalarType::Bool;
    EXPECT_TRUE(parse_dtype(dtype_name(t), &got));
    EXPECT_EQ(got, t);
  }
}

TEST(Dtype, ParseRejectsUnknownNamesWithoutWriting) {
  for (const char* bad : {"", "Int", "uint16", "int128", "float8", "Float32", "float32 ", "torch.float32", "bool8",
                          "bf16", "byte", "char"}) {
    ScalarType got = ScalarType::Float64;
    EXPECT_FALSE(parse_dtype(bad, &got)) << "'" << bad << "'";
    EXPECT_EQ(got, ScalarType::Float64) << "'" << bad << "' wrote the output";
  }
}

TEST(Dtype, Categories) {
  EXPECT_TRUE(is_floating(ScalarType::Float32));
  EXPECT_TRUE(is_floating(ScalarType::Float64));
  EXPECT_TRUE(is_floating(ScalarType::Float16));
  EXPECT_TRUE(is_floating(ScalarType::BFloat16));
  EXPECT_TRUE(is_reduced_floating(ScalarType::BFloat16));
  EXPECT_FALSE(is_reduced_floating(ScalarType::Float32));
  EXPECT_FALSE(is_floating(ScalarType::Int64));
  EXPECT_FALSE(is_floating(ScalarType::Bool));
  EXPECT_TRUE(is_integral(ScalarType::Int64, false));
  EXPECT_FALSE(is_integral(ScalarType::Bool, false));
  EXPECT_TRUE(is_integral(ScalarType::Bool, true));
  EXPECT_FALSE(is_integral(ScalarType::Float32, true));
}

TEST(Dtype, CppTypesAndVisit) {
  static_assert(std::is_same_v<CppType<ScalarType::Bool>::type, bool>);
  static_assert(std::is_same_v<CppType<ScalarType::Int64>::type, int64_t>);
  static_assert(std::is_same_v<CppType<ScalarType::Float32>::type, float>);
  static_assert(std::is_same_v<CppType<ScalarType::Float64>::type, double>);
  static_assert(scalar_type_of<float>() == ScalarType::Float32);
  for (ScalarType t : kAllDtypes) {
    ScalarType seen = visit_dtype(t, []<typename T>() { return scalar_type_of<T>(); });
    EXPECT_EQ(seen, t);
    size_t sz = visit_dtype(t, []<typename T>() { return sizeof(T); });
    EXPECT_EQ(sz, element_size(t));
  }
}

// [SECTION] Devices -------------------------------------------------------------------

TEST(Device, ParsesTheDocumentedForms) {
  struct Case {
    const char* text;
    DeviceType type;
    int index;
    const char* str;
  };
  for (Case c : {Case{"cpu", DeviceType::CPU, 0, "cpu"}, Case{"cpu:0", DeviceType::CPU, 0, "cpu"},
                 Case{"sim", DeviceType::Sim, 0, "sim:0"}, Case{"sim:0", DeviceType::Sim, 0, "sim:0"},
                 Case{"sim:3", DeviceType::Sim, 3, "sim:3"}, Case{"cuda", DeviceType::CUDA, 0, "cuda:0"},
                 Case{"cuda:1", DeviceType::CUDA, 1, "cuda:1"}, Case{"cuda:123", DeviceType::CUDA, 123, "cuda:123"}}) {
    Device d = Device::parse(c.text);
    EXPECT_EQ(d.type, c.type) << c.text;
    EXPECT_EQ(d.index, c.index) << c.text;
    EXPECT_EQ(d.str(), c.str) << c.text;
    EXPECT_EQ(Device::parse(d.str()), d) << "str() must parse back: " << c.text;
  }
  EXPECT_EQ(Device::parse("cpu"), Device{});
  EXPECT_NE(Device::parse("sim:0"), Device::parse("sim:1"));
  EXPECT_STREQ(device_type_name(DeviceType::CPU), "cpu");
  EXPECT_STREQ(device_type_name(DeviceType::Sim), "sim");
  EXPECT_STREQ(device_type_name(DeviceType::CUDA), "cuda");
}

TEST(Device, BadStringsRaiseRuntimeErrorNamingTheString) {
  // As torch.device: every bad string is a RuntimeError (descent's Error, not
  // one of its subclasses); an index past 127 (c10's int8 DeviceIndex) and
  // digit runs that do not fit any integer too, without overflowing the parser.
  for (const char* bad : {"", "gpu", "CPU", "cuda0", "cpu:1", "sim:", "cuda:-1", "cuda:x", "cuda:1:2", "sim:1234", ":0",
                          " cpu", "cuda: 1", "cuda:01", "cuda:128", "cuda:9999999999", "sim:4294967296",
                          "sim:18446744073709551617", "cuda:99999999999999999999999999999999999999"}) {
    try {
      Device::parse(bad);
      ADD_FAILURE() << "no error for '" << bad << "'";
    } catch (const Error& e) {
      EXPECT_EQ(typeid(e), typeid(Error)) << bad << ": " << e.what();
      if (*bad) {
        EXPECT_NE(std::string(e.what()).find(bad), std::string::npos) << e.what();
      }
    }
  }
  EXPECT_EQ(Device::parse("cuda:127").index, 127);
}

// [SECTION] Scalars ---------------------------------------------------------------------

TEST(Scalar, KeepsTheTypeItCameFrom) {
  EXPECT_EQ(Scalar(2.5).type(), ScalarType::Float64);
  EXPECT_EQ(Scalar(int64_t{3}).type(), ScalarType::Int64);
  EXPECT_EQ(Scalar(3).type(), ScalarType::Int64);
  EXPECT_EQ(Scalar(true).type(), ScalarType::Bool);
  EXPECT_EQ(Scalar().type(), ScalarType::Int64);
  EXPECT_EQ(Scalar().to_int(), 0);
  EXPECT_TRUE(Scalar(2.5).is_floating());
  EXPECT_TRUE(Scalar(3).is_integral());
  EXPECT_TRUE(Scalar(false).is_bool());
  EXPECT_FALSE(Scalar(false).is_integral());
}

TEST(Scalar, ConvertsBetweenKinds) {
  EXPECT_EQ(Scalar(2.7).to_int(), 2);  // truncation toward zero, as C++
  EXPECT_EQ(Scalar(-2.7).to_int(), -2);
  EXPECT_DOUBLE_EQ(Scalar(7).to_double(), 7.0);
  EXPECT_DOUBLE_EQ(Scalar(true).to_double(), 1.0);
  EXPECT_EQ(Scalar(true).to_int(), 1);
  EXPECT_TRUE(Scalar(0.5).to_bool());
  EXPECT_FALSE(Scalar(0.0).to_bool());
  EXPECT_TRUE(Scalar(-3).to_bool());
  EXPECT_FALSE(Scalar(0).to_bool());
  const int64_t big = (int64_t(1) << 53) + 1;  // not representable in a double
  EXPECT_EQ(Scalar(big).to_int(), big);
  EXPECT_EQ(Scalar(big).to<int64_t>(), big);
  EXPECT_EQ(Scalar(1.5).to<float>(), 1.5f);
  EXPECT_EQ(Scalar(3).to<double>(), 3.0);
  EXPECT_EQ(Scalar(2.0).to<bool>(), true);
  EXPECT_EQ(Scalar(2.9).to<int64_t>(), 2);
}

TEST(Scalar, ToRaisesForValuesTheTypeCannotHold) {
  // Note [Checked scalar conversion]: [-2^63, 2^63) for int64_t, NaN and the
  // infinities never; float's range for a finite double; bool takes anything.
  auto message = [](auto fn) -> std::string {
    try {
      fn();
    } catch (const ValueError& e) {
      return std::string("ValueError: ") + e.what();
    } catch (const Error& e) {
      return e.what();
    }
    return "no error";
  };
  for (double v : {double(NAN), double(INFINITY), -double(INFINITY), 0x1p63, -0x1p63 * 1.0000001, 1e300}) {
    EXPECT_EQ(
        message([&] { Scalar(v).to<int64_t>(); }).find("value cannot be converted to type int64_t without overflow"),
        0u)
        << v;
    EXPECT_NE(message([&] { Scalar(v).to_int(); }), "no error") << v;
  }
  EXPECT_EQ(message([&] { Scalar(1e20).to<int64_t>("full", "fill_value"); }),
            "full(): fill_value cannot be converted to type int64_t without overflow");
  EXPECT_EQ(Scalar(-0x1p63).to<int64_t>(), std::numeric_limits<int64_t>::min());
  EXPECT_EQ(Scalar(0x1p63 - 1024).to<int64_t>(), int64_t((uint64_t(1) << 63) - 1024));
  EXPECT_EQ(Scalar(-0.99).to<int64_t>(), 0);
  // The narrow integers, as c10's checked_convert: an int in [lowest, max]
  // (uint8 also down to -255, wrapped), a double in [lowest, max].
  EXPECT_EQ(Scalar(int64_t{127}).to<int8_t>(), 127);
  EXPECT_EQ(Scalar(int64_t{-128}).to<int8_t>(), -128);
  EXPECT_EQ(Scalar(int64_t{-1}).to<uint8_t>(), 255) << "uint8 takes -1 as 255 (x - 1 is x + 255)";
  EXPECT_EQ(Scalar(int64_t{-255}).to<uint8_t>(), 1);
  EXPECT_EQ(Scalar(int64_t{255}).to<uint8_t>(), 255);
  EXPECT_EQ(Scalar(int64_t{-2147483648LL}).to<int32_t>(), INT32_MIN);
  EXPECT_EQ(Scalar(2.9).to<int16_t>(), 2);
  EXPECT_EQ(Scalar(true).to<uint8_t>(), 1);
  EXPECT_EQ(message([&] {
              Scalar(int64_t{128}).to<int8_t>();
            }).find("value cannot be converted to type int8_t without overflow"),
            0u);
  EXPECT_EQ(message([&] { Scalar(int64_t{256}).to<uint8_t>(); }).find("value cannot be converted to type uint8_t"), 0u);
  EXPECT_EQ(message([&] { Scalar(int64_t{-256}).to<uint8_t>(); }).find("value cannot be converted to type uint8_t"),
            0u);
  EXPECT_EQ(message([&] { Scalar(int64_t{40000}).to<int16_t>(); }).find("value cannot be converted to type int16_t"),
            0u);
  EXPECT_EQ(message([&] { Scalar(int64_t{1} << 31).to<int32_t>("fill_", "value"); }),
            "fill_(): value cannot be converted to type int without overflow");
  // A double fits an int8 when -128 <= v <= 127 (torch 2.11: 127.5 raises), truncated toward zero.
  for (double v : {double(NAN), double(INFINITY), 127.5, -128.5, 1e10})
    EXPECT_EQ(message([&] { Scalar(v).to<int8_t>(); }).find("value cannot be converted to type int8_t"), 0u) << v;
  EXPECT_EQ(Scalar(126.9).to<int8_t>(), 126);
  EXPECT_EQ(Scalar(-128.0).to<int8_t>(), -128);
  EXPECT_EQ(message([&] { Scalar(-1.0).to<uint8_t>(); }).find("value cannot be converted to type uint8_t"), 0u)
      << "a negative float does not wrap";
  for (double v : {1e300, -1e300, 3.5e38})
    EXPECT_EQ(message([&] { Scalar(v).to<float>(); }).find("value cannot be converted to type float without overflow"),
              0u)
        << v;
  EXPECT_EQ(Scalar(double(std::numeric_limits<float>::max())).to<float>(), std::numeric_limits<float>::max());
  EXPECT_TRUE(std::isinf(Scalar(double(INFINITY)).to<float>()));
  EXPECT_TRUE(std::isnan(Scalar(double(NAN)).to<float>()));
  EXPECT_EQ(Scalar(1e300).to<double>(), 1e300);
  EXPECT_TRUE(Scalar(double(NAN)).to<bool>());
  EXPECT_EQ(Scalar(std::numeric_limits<int64_t>::max()).to<int64_t>(), std::numeric_limits<int64_t>::max());
  EXPECT_EQ(Scalar(std::numeric_limits<int64_t>::max()).to<float>(), 0x1p63f) << "an int64 always fits a float";
}

TEST(Scalar, PrintsLikePython) {
  EXPECT_EQ(Scalar(true).str(), "True");
  EXPECT_EQ(Scalar(false).str(), "False");
  EXPECT_EQ(Scalar(42).str(), "42");
  EXPECT_EQ(Scalar(int64_t{-7}).str(), "-7");
  EXPECT_EQ(Scalar(2.5).str(), "2.5");
  EXPECT_EQ(Scalar(0.1).str(), "0.1");
}

TEST(Errors, KindsDeriveFromErrorAndStrConcatenates) {
  EXPECT_EQ(str("a", 1, "b", 2.5), "a1b2.5");
  auto raise = [](int which) {
    switch (which) {
      case 0:
        DESCENT_CHECK(false, TypeError, "t", 0);
        break;
      case 1:
        DESCENT_CHECK(false, ValueError, "v", 1);
        break;
      case 2:
        DESCENT_CHECK(false, IndexError, "i", 2);
        break;
      default:
        DESCENT_CHECK(false, NotImplementedError, "n", 3);
        break;
    }
  };
  for (int k = 0; k < 4; ++k) EXPECT_THROW(raise(k), Error);
  EXPECT_THROW(raise(1), ValueError);
  try {
    raise(2);
  } catch (const IndexError& e) {
    EXPECT_STREQ(e.what(), "i2");
  }
  EXPECT_NO_THROW(DESCENT_CHECK(true, ValueError, "never"));
}

}  // namespace
}  // namespace descent
