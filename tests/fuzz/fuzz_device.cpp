// libFuzzer target: the device-string parser (Device::parse, floors/core/device.h),
// what descent.device("cuda:1"), device= arguments and `descent verify
// --device` read from users.
//
// For any bytes, Device::parse() either raises descent::Error (RuntimeError
// in Python, as torch.device raises), or returns a Device whose index is in
// range, whose str() is the canonical spelling of the input ("cuda" and
// "cuda:0" both print "cuda:0"), and which parses back to itself. Any other
// exception, a crash, a hang, or an ASan or UBSan report is a bug.
//
// Corpus: tests/fuzz/corpus/device; dictionary: device.dict.
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "floors/core/device.h"
#include "floors/core/error.h"
#include "tests/fuzz/fuzz.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace descent;
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  Device d;
  try {
    d = Device::parse(text);
  } catch (const Error& e) {
    FUZZ_CHECK(std::string_view(e.what()).size() > 0, "a device error without a message");
    return 0;
  }
  FUZZ_CHECK(d.index >= 0 && d.index <= kMaxDeviceIndex, "a device index out of range");
  FUZZ_CHECK(d.type != DeviceType::CPU || d.index == 0, "a CPU device with an index");
  const std::string printed = d.str();
  FUZZ_CHECK(text == printed || text == device_type_name(d.type) || text == "cpu:0",
             "a device string accepted that is not the canonical spelling, nor its type alone");
  FUZZ_CHECK(Device::parse(printed) == d, "a device's str() does not parse back to it");
  return 0;
}
