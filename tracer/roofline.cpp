// A kernel span's place on its device's roofline (Note [A roofline for every
// kernel span], floors/kernels/roofline.cpp).
#include "tracer/roofline.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <vector>

namespace descent::trace {

namespace {

double num_arg(const Span& s, const char* key, double fallback = -1) {
  const ArgValue* v = s.find_arg(key);
  if (!v) return fallback;
  if (const auto* x = std::get_if<int64_t>(v)) return double(*x);
  if (const auto* x = std::get_if<double>(v)) return *x;
  return fallback;
}
std::string str_arg(const Span& s, const char* key) {
  const ArgValue* v = s.find_arg(key);
  const std::string* x = v ? std::get_if<std::string>(v) : nullptr;
  return x ? *x : "";
}
double meta(const trace::Trace& t, const std::string& device, const char* what) {
  const auto it = t.metadata.find(roofline_metadata_key(device, what));
  if (it == t.metadata.end()) return 0;
  return std::strtod(it->second.c_str(), nullptr);
}

// The device spans of the kernels that span i launched (its floor-8 launch
// spans, on its thread and inside its time, joined by correlation), in trace order.
std::vector<size_t> device_spans_of(const Trace& t, size_t i) {
  const Span& sp = t.spans[i];
  std::vector<uint64_t> inside{sp.id};  // span i and its descendants so far
  std::vector<int64_t> correlations;
  for (size_t k = i + 1; k < t.spans.size(); ++k) {  // sorted by (thread, start): the descendants follow it
    const Span& s = t.spans[k];
    if (s.thread != sp.thread || s.start_ns > sp.end_ns) break;
    if (std::find(inside.begin(), inside.end(), s.parent) == inside.end()) continue;
    inside.push_back(s.id);
    if (s.floor == Floor::Launch && num_arg(s, "correlation") > 0)
      correlations.push_back(int64_t(num_arg(s, "correlation")));
  }
  std::vector<size_t> out;
  if (correlations.empty()) return out;
  for (size_t k = 0; k < t.spans.size(); ++k) {
    if (t.spans[k].floor != Floor::Device) continue;
    const int64_t c = int64_t(num_arg(t.spans[k], "correlation"));
    if (std::find(correlations.begin(), correlations.end(), c) != correlations.end()) out.push_back(k);
  }
  return out;
}

}  // namespace

std::string roofline_metadata_key(const std::string& device, const char* what) { return "peak." + device + "." + what; }

double RooflinePoint::fraction() const {
  if (flops > 0) {
    const double roof = std::min(peak_flops_per_s, intensity() * peak_bytes_per_s);
    return roof > 0 ? flops_per_s() / roof : 0;
  }
  return peak_bytes_per_s > 0 ? bytes_per_s() / peak_bytes_per_s : 0;
}

const char* RooflinePoint::bound_word() const {
  return bound == Bound::Overhead ? "overhead" : bound == Bound::Memory ? "memory" : "compute";
}

RooflinePoint roofline_of(const Trace& t, size_t i, const TimeOf& time_of) {
  RooflinePoint p;
  const auto time = [&](size_t k) { return time_of ? time_of(k) : SpanTime{t.spans[k].duration_ns(), false}; };
  if (i >= t.spans.size() || t.spans[i].floor != Floor::Kernels) return p;
  const Span& sp = t.spans[i];
  p.bytes = num_arg(sp, "bytes");
  p.flops = num_arg(sp, "flops");
  if (p.bytes <= 0 || p.flops < 0) return p;
  const std::string variant = str_arg(sp, "variant");
  if (variant == "reference" || variant == "optimized") {
    p.device = "cpu";
    const SpanTime tm = time(i);
    p.seconds = double(tm.ns) * 1e-9;
    p.warm = tm.warm;
  } else if (variant == "sim" || variant == "cuda") {
    int64_t ns = 0;
    for (size_t k : device_spans_of(t, i)) {
      if (p.device.empty()) p.device = str_arg(t.spans[k], "device");
      const SpanTime tm = time(k);
      ns += tm.ns;
      p.warm = tm.warm;
    }
    p.seconds = double(ns) * 1e-9;
    p.on_device_clock = true;
  }
  if (p.device.empty() || p.seconds <= 0) return p;
  p.peak_bytes_per_s = meta(t, p.device, "bytes_per_s");
  p.peak_flops_per_s = meta(t, p.device, "flops_per_s");
  p.peak_flops_name = p.device == "cpu" || p.device.rfind("sim", 0) == 0 ? "the FMA units" : "the FP32 units";
  const std::string rung = str_arg(sp, "rung");
  const double tensor = meta(t, p.device, "tensor_flops_per_s"), tf32 = meta(t, p.device, "tf32_flops_per_s");
  if ((rung == "wmma" || rung == "wgmma") && tensor > 0) {
    p.peak_flops_per_s = tensor;
    p.peak_flops_name = "the tensor cores";
  } else if (str_arg(sp, "math") == "tf32" && tf32 > 0) {
    p.peak_flops_per_s = tf32;
    p.peak_flops_name = "the TF32 tensor cores";
  }
  const auto how = t.metadata.find(roofline_metadata_key(p.device, "how"));
  if (how != t.metadata.end()) p.peak_how = how->second;
  if (p.peak_bytes_per_s <= 0 || (p.flops > 0 && p.peak_flops_per_s <= 0)) return p;
  p.known = true;
  if (p.fraction() < kOverheadBelow)
    p.bound = RooflinePoint::Bound::Overhead;
  else if (p.flops > 0 && p.intensity() >= p.ridge())
    p.bound = RooflinePoint::Bound::Compute;
  else
    p.bound = RooflinePoint::Bound::Memory;
  return p;
}

}  // namespace descent::trace
