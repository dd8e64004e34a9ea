// Where a kernel span sits on its device's roofline: the work it recorded
// (bytes=, flops=), the time it took, the device's peaks the trace carries
// (its metadata, peak.<device>.*), and which of them bound it. Plain data:
// the app's detail panel draws it (ui/roofline.h), the explanation says it,
// Trace.roofline(i) gives it to Python and the lessons. See Note [A roofline
// for every kernel span] (floors/kernels/roofline.cpp).
#pragma once

#include <cstdint>
#include <functional>
#include <string>

#include "tracer/trace.h"

namespace descent::trace {

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
  const char* bound_word() const;  // "overhead", "memory", "compute"
};

// The trace's metadata key of one of a device's peaks: "peak.<device>.<what>"
// (what: bytes_per_s, flops_per_s, tensor_flops_per_s, tf32_flops_per_s,
// how). floors/kernels/roofline.cpp writes them (add_peaks); roofline_of reads them.
std::string roofline_metadata_key(const std::string& device, const char* what);

// Below this share of its roof a kernel is overhead-bound: most of its time
// was not spent on its elements.
constexpr double kOverheadBelow = 0.1;

// The time of span k as the roofline takes it: its duration, unless the
// caller knows better (the app passes the warm median of a repeated line).
struct SpanTime {
  int64_t ns = 0;
  bool warm = false;
};
using TimeOf = std::function<SpanTime(size_t)>;

// The roofline point of the kernel span `i` (floor 5) of t; known = false
// when it recorded no work (a view, a stopped kernel, a trace from before
// descent recorded it), its time is unknown, or its device's peaks are
// missing. On a device, the time is its launches' device spans (joined by
// correlation).
RooflinePoint roofline_of(const Trace& t, size_t i, const TimeOf& time_of = nullptr);

}  // namespace descent::trace
