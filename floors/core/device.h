// Devices: where a tensor's bytes live.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

namespace descent {

enum class DeviceType : uint8_t {
  CPU = 0,   // host memory; kernels run on the calling thread (floor 5)
  Sim = 1,   // the simulated device: a host arena and a worker thread (floors 6-8)
  CUDA = 2,  // a real NVIDIA GPU through the CUDA runtime (floors 6-8)
};

// The largest device index, c10's: its DeviceIndex is an int8_t.
constexpr int kMaxDeviceIndex = 127;

struct Device {
  DeviceType type = DeviceType::CPU;
  int index = 0;  // which device of that type; always 0 for the CPU

  bool operator==(const Device&) const = default;
  std::string str() const;  // "cpu", "sim:0", "cuda:1"
  // Parses "cpu", "sim", "sim:0", "cuda", "cuda:1"; raises Error (RuntimeError,
  // as torch.device does) naming the string, for an index past kMaxDeviceIndex too.
  static Device parse(std::string_view s);
};

const char* device_type_name(DeviceType t);  // "cpu", "sim", "cuda"

}  // namespace descent
