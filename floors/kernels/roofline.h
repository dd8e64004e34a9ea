// The roofline of the kernels' spans: what each kernel moved and computed,
// and how fast each device could have done it. See Note [A roofline for every
// kernel span] (roofline.cpp).
#pragma once

#include <cstdint>
#include <string>

#include "floors/core/device.h"
#include "floors/core/tensor.h"
#include "tracer/roofline.h"
#include "tracer/trace.h"
#include "tracer/tracer.h"

namespace descent::kernels {

// The bytes a tensor's elements take (numel x element size).
inline int64_t nbytes(const Tensor& t) { return t.numel() * int64_t(element_size(t.dtype())); }

// Records the work of a kernel span: the bytes it read and wrote and the
// floating-point operations it did (args bytes= and flops=).
inline void record_work(trace::ScopedSpan& span, int64_t bytes, int64_t flops) {
  if (!span.active()) return;
  span.arg("bytes", bytes);
  span.arg("flops", flops);
}

// How fast a device could go: its memory bandwidth and its arithmetic peaks.
// 0 where unknown. `how` says where each number came from, in a sentence.
struct Peak {
  double bytes_per_s = 0;
  double flops_per_s = 0;         // the vector units (the CPU's FMA units, the GPU's FP32 cores)
  double tensor_flops_per_s = 0;  // the GPU's tensor cores in float16/bfloat16 (dense)
  double tf32_flops_per_s = 0;    // the same in TF32, for float32 with allow_tf32
  std::string how;
};

// The peaks of `d`'s kind: read from the device (CUDA), measured on this
// machine's CPU once per process (the CPU, with every intra-op thread; sim:0,
// one of its stream workers, which is one host thread). Cached.
Peak device_peak(Device d);

// Puts the peaks of every device whose kernels t holds into t's metadata, as
// "peak.<device>.bytes_per_s", ".flops_per_s", ".tensor_flops_per_s",
// ".tf32_flops_per_s" and ".how" (trace::roofline_metadata_key).
void add_peaks(trace::Trace& t);

// The CPU microkernel's rate on `threads` threads at once over panels that
// stay in the caches (packed_matmul.cpp): the FLOP/s this CPU reaches when
// nothing waits for memory. 0 without a microkernel (no FMA).
double microkernel_flops_per_s(int threads);

}  // namespace descent::kernels
