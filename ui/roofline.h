// Where a kernel span sits on its device's roofline: the work it recorded,
// the time it took, the device's peaks the trace carries, and which of them
// bound it. Plain data, no ImGui: the detail panel draws it, the explanation
// says it, the tests read it. See Note [A roofline for every kernel span]
// (floors/kernels/roofline.cpp).
#pragma once

#include <cstdint>
#include <string>

#include "ui/story.h"

namespace descent::ui {

struct RooflinePoint {
  bool known = false;  // the span recorded its work, its time is known and the trace holds its device's peaks
  std::string device;  // "cpu", "sim:0", "cuda:0"
  double bytes = 0, flops = 0;
  double seconds = 0;  // the span's inclusive time on the CPU; its kernels' time on the device's clock
  bool warm = false;   // the time is the median of warm repeats (Note [Cold and warm times])
  bool on_device_clock = false;
  double peak_bytes_per_s = 0, peak_flops_per_s = 0;
  std::string peak_flops_name;  // "the FP32 units", "the tensor cores", "the FMA units"
  std::string peak_how;         // where the peaks came from (the trace's metadata)

  enum class Bound { Overhead, Memory, Compute };
  Bound bound = Bound::Overhead;

  double intensity() const { return bytes > 0 ? flops / bytes : 0; }  // FLOP per byte
  double bytes_per_s() const { return seconds > 0 ? bytes / seconds : 0; }
  double flops_per_s() const { return seconds > 0 ? flops / seconds : 0; }
  double ridge() const { return peak_bytes_per_s > 0 ? peak_flops_per_s / peak_bytes_per_s : 0; }
  // The share of the roof over the kernel's intensity it reached: of the
  // arithmetic roof min(peak, intensity x bandwidth) when it computed, of the
  // bandwidth when it only moved bytes.
  double fraction() const;
};

// Below this share of its roof a kernel is overhead-bound: most of its time
// was not spent on its elements.
constexpr double kOverheadBelow = 0.1;

// The roofline point of the kernel span `i` (floor 5) of the story's trace;
// known = false when it recorded no work (a view, a stopped kernel, a trace
// from before descent recorded it) or its device's peaks are missing.
RooflinePoint roofline_of(const Story& s, size_t i);

// "48 B", "3.2 GB/s", "4.1 GFLOP/s": SI prefixes, three digits.
std::string si_text(double v, const char* unit);

}  // namespace descent::ui
