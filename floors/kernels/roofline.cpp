// Floor 5: the roofline of the kernels' spans.
//
// Note [A roofline for every kernel span]
// ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
// A kernel is limited by one of three things: the arithmetic its device can
// do per second, the bytes its memory can move per second, or neither, when
// the work is so small that the fixed cost of getting it started (the checks,
// the allocation, the launch) is most of the time. The roofline model (Williams,
// Waterman and Patterson, 2009) says which, from two numbers a kernel knows:
// the bytes it moved and the floating-point operations it did. Their ratio,
// the arithmetic intensity (FLOP per byte), places the kernel on the x axis;
// the device's roof over it is min(peak FLOP/s, intensity x peak bytes/s): a
// slope where memory limits and a flat top where arithmetic does, meeting at
// the ridge point (peak FLOP/s / peak bytes/s).
//
// So every kernel span records bytes= and flops= (record_work, roofline.h),
// counted from the operands as the minimum the kernel must do: each input's
// elements read once (a broadcast operand counts its own elements, a Python
// number none), the output written once, one FLOP per element of an
// elementwise op or of a reduction's input, 2 M N K for a matrix product (a
// multiply and an add per term). A copy or a fill does no arithmetic. The
// real traffic may be larger (a matmul that reloads its tiles), never
// smaller, so the point the app draws is an upper bound on the intensity.
//
// The time is the kernel's own: on the CPU the kernel span's inclusive time
// (checks, output, loop), on a device the device's span of the kernel it
// launched, on the device's clock. The peaks travel with the trace (its
// metadata, add_peaks below), so a trace saved on the H200 host shows that
// device's roof wherever it is opened:
//   - CUDA: read from the device (cudaDeviceGetAttribute): SMs x the maximum
//     clock x the FLOP per clock of an SM of that compute capability (a
//     table: 256 for the FP32 units of 8.6 and later, 4096 for Hopper's
//     tensor cores in 16-bit floats), and memory clock x bus width x 2
//     (double data rate). These are the device's own maximum clocks; the
//     datasheet's round numbers use a lower one (989 TFLOP/s for the H100 and
//     H200 in bfloat16), and a kernel near the roof may sit just under it.
//   - The CPU has no such numbers to read, so descent measures them once per
//     process: the packed matmul's microkernel on panels that stay in the L1
//     cache (what the FMA units can do) and a triad over arrays far larger
//     than the caches (what memory can stream), each on every intra-op
//     thread at once.
//   - sim:0 runs a kernel on one host thread (its stream's worker), so its
//     roof is the CPU's measured on one thread.
// The app's kernels floor shows where the span sits and says which bound it
// met: a 4-element add reaches a millionth of either roof (the overhead is
// everything), a 4096^3 matmul most of the arithmetic roof.
#include "floors/kernels/roofline.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <map>
#include <mutex>
#include <set>
#include <thread>
#include <vector>

#include "floors/core/log.h"
#include "floors/kernels/cpu/parallel.h"
#include "floors/streams/streams.h"

namespace descent::kernels {

namespace {

std::string fixed(double v, int digits) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.*f", digits, v);
  return buf;
}

// The FLOP per clock of one SM, by compute capability: its FP32 units (two
// FLOP per FMA lane) and its tensor cores in float16/bfloat16 with float32
// accumulation, dense. 0: not in this table.
struct SmRate {
  int fp32, tensor16;
};
SmRate sm_rate(int major, int minor) {
  if (major == 7 && minor == 0) return {128, 1024};  // V100
  if (major == 8 && minor == 0) return {128, 2048};  // A100
  if (major == 8) return {256, 0};                   // 8.6, 8.9: FP32 doubled; tensor rates vary by part
  if (major == 9) return {256, 4096};                // H100, H200
  if (major == 10) return {256, 8192};               // B200
  if (major >= 7) return {128, 0};
  return {0, 0};
}

Peak cuda_peak(int index) {
  const streams::DeviceRuntime::Limits l = streams::runtime(DeviceType::CUDA).limits(index);
  const SmRate r = sm_rate(l.cc_major, l.cc_minor);
  Peak p;
  p.flops_per_s = double(l.sms) * l.clock_hz * r.fp32;
  p.tensor_flops_per_s = double(l.sms) * l.clock_hz * r.tensor16;
  p.tf32_flops_per_s = p.tensor_flops_per_s / 2;  // TF32 runs at half the 16-bit rate on 8.0 and later
  p.bytes_per_s = l.memory_clock_hz * l.bus_bits / 8.0 * 2.0;
  const std::string sms = std::to_string(l.sms) + " SMs x " + fixed(l.clock_hz / 1e9, 2) + " GHz x ";
  p.how = "read from the device (compute capability " + std::to_string(l.cc_major) + "." + std::to_string(l.cc_minor) +
          ", its maximum clocks): " + sms + std::to_string(r.fp32) +
          " FLOP per clock (FP32 units) = " + fixed(p.flops_per_s / 1e12, 1) + " TFLOP/s; ";
  p.how += r.tensor16
               ? sms + std::to_string(r.tensor16) +
                     " FLOP per clock (tensor cores, 16-bit) = " + fixed(p.tensor_flops_per_s / 1e12, 0) + " TFLOP/s; "
               : "tensor cores: not in descent's table; ";
  p.how += "memory " + fixed(l.memory_clock_hz / 1e9, 2) + " GHz x " + std::to_string(l.bus_bits) +
           " bits x 2 = " + fixed(p.bytes_per_s / 1e12, 2) + " TB/s";
  return p;
}

// A triad, a[i] = b[i] + 3 c[i], over arrays far larger than the caches, on
// `threads` threads at once, each on its own slice: the best of three passes,
// in bytes per second (three arrays' bytes a pass).
double triad_bytes_per_s(int threads) {
  constexpr size_t kFloats = size_t(8) << 20;  // 32 MiB an array
  std::vector<float> a(kFloats), b(kFloats, 1.0f), c(kFloats, 2.0f);
  const size_t slice = (kFloats + size_t(threads) - 1) / size_t(threads);
  double best = 0;
  for (int pass = 0; pass < 3; ++pass) {
    const auto start = std::chrono::steady_clock::now();
    std::vector<std::thread> ts;
    ts.reserve(size_t(threads));
    for (int t = 0; t < threads; ++t) {
      ts.emplace_back([&, t] {
        const size_t lo = std::min(kFloats, size_t(t) * slice), hi = std::min(kFloats, lo + slice);
        for (size_t i = lo; i < hi; ++i) a[i] = b[i] + 3.0f * c[i];
      });
    }
    for (std::thread& t : ts) t.join();
    const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    best = std::max(best, 3.0 * double(kFloats) * sizeof(float) / s);
  }
  return best;
}

Peak cpu_peak(int threads) {
  Peak p;
  p.flops_per_s = microkernel_flops_per_s(threads);
  p.bytes_per_s = triad_bytes_per_s(threads);
  const std::string on = std::to_string(threads) + (threads == 1 ? " thread" : " threads");
  p.how =
      "measured on this machine's CPU, " + on + ": " +
      (p.flops_per_s > 0 ? "the matmul microkernel over cached panels, " + fixed(p.flops_per_s / 1e9, 1) + " GFLOP/s"
                         : std::string("no FMA unit to measure the arithmetic with (no compute roof)")) +
      "; a triad over three 32 MiB arrays, " + fixed(p.bytes_per_s / 1e9, 1) + " GB/s";
  return p;
}

}  // namespace

Peak device_peak(Device d) {
  static std::mutex mu;
  static std::map<std::string, Peak> cache;
  const int threads = d.type == DeviceType::CPU ? get_num_threads() : 1;
  const std::string key = d.type == DeviceType::CPU ? "cpu/" + std::to_string(threads) : d.str();
  std::lock_guard<std::mutex> g(mu);
  if (auto it = cache.find(key); it != cache.end()) return it->second;
  Peak p;
  if (d.type == DeviceType::CUDA) {
    p = cuda_peak(d.index);
  } else if (d.type == DeviceType::Sim) {
    p = cpu_peak(1);
    p.how = "sim:0 runs a kernel on one host thread (its stream's worker), so its roof is the CPU's on one thread, " +
            p.how;
  } else {
    p = cpu_peak(threads);
  }
  return cache[key] = p;
}

void add_peaks(trace::Trace& t) {
  std::set<std::string> devices;
  for (const trace::Span& s : t.spans) {
    if (s.floor == trace::Floor::Kernels && s.find_arg("bytes")) {
      const trace::ArgValue* v = s.find_arg("variant");
      const std::string* variant = v ? std::get_if<std::string>(v) : nullptr;
      if (variant && (*variant == "reference" || *variant == "optimized")) devices.insert("cpu");
    }
    if (s.floor == trace::Floor::Device) {
      const trace::ArgValue* v = s.find_arg("device");
      if (const std::string* name = v ? std::get_if<std::string>(v) : nullptr) devices.insert(*name);
    }
  }
  for (const std::string& name : devices) {
    // A device this build does not know, or a peak that cannot be had (no
    // thread for the measurement, a device that stopped answering): no roof
    // for it, and the recording is kept whole.
    Peak p;
    try {
      p = device_peak(Device::parse(name));
    } catch (const std::exception& e) {
      log::warn("the roofline of ", name, " is left out of the trace: ", e.what());
      continue;
    }
    const auto put = [&](const char* what, double v) {
      if (v > 0) t.metadata[trace::roofline_metadata_key(name, what)] = fixed(v, 0);
    };
    put("bytes_per_s", p.bytes_per_s);
    put("flops_per_s", p.flops_per_s);
    put("tensor_flops_per_s", p.tensor_flops_per_s);
    put("tf32_flops_per_s", p.tf32_flops_per_s);
    t.metadata[trace::roofline_metadata_key(name, "how")] = p.how;
  }
}

}  // namespace descent::kernels
