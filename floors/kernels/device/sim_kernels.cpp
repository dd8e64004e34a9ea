// The device loops on the simulated device, and the choice between devices.
//
// [SECTION] Kernel names
// [SECTION] The simulated device's launcher
// [SECTION] Choosing the device
//
// Each loop of device_loops.h is put on sim:0's current stream by
// launch::launch_sim; the stream's worker later calls the block body once per
// block of the grid, and the block body runs the one kernel body, run_thread,
// for thread 0, 1, ..., 255 of the block in turn: what a GPU does with 256
// threads at once, done one after the other. See Note [One kernel body, two
// devices] (device_loops.h). This file is compiled with -ffp-contract=off, as
// the CPU loops are, so the results are the CPU's bit for bit.
#include <atomic>
#include <mutex>

#include "floors/kernels/device/device_loops.h"
#include "floors/kernels/kernels.h"
#include "floors/streams/streams.h"
#include "tracer/tracer.h"

namespace descent::kernels::device {

// [SECTION] Kernel names ---------------------------------------------------------------

const char* kernel_name(const char* kind, Op op, ScalarType a, ScalarType b) {
  // Interned once per (op, a, b): a launch reads a pointer. Each kind uses its own op.
  static std::atomic<const char*> names[kNumOps][kNumScalarTypes][kNumScalarTypes];
  std::atomic<const char*>& slot = names[int(op)][int(a)][int(b)];
  if (const char* n = slot.load(std::memory_order_acquire)) return n;
  std::string s;
  if (*kind == 0)
    s = str(op_entry(op).python_name, "_", dtype_name(a));
  else if (a == b)
    s = str(kind, "_", dtype_name(a));
  else
    s = str(kind, "_", dtype_name(a), "_to_", dtype_name(b));
  const char* n = trace::intern(s);
  slot.store(n, std::memory_order_release);
  return n;
}

// [SECTION] The simulated device's launcher ----------------------------------------------

namespace {

struct SimLaunch {
  Device device;
  template <class Loop>
  void operator()(const launch::KernelLaunch& k, const Loop& loop) const {
    if (loop.n == 0) return;
    launch::launch_sim(streams::current_stream(device), k,
                       [loop, grid = k.grid.x, threads = k.block.x](const launch::Dim3& block) {
                         for (uint32_t t = 0; t < threads; ++t) run_thread(loop, block.x, grid, threads, t);
                       });
  }
};

using SimBuild = Build<SimLaunch>;

}  // namespace

namespace sim {
void unary(Op op, const Tensor& in, const Tensor& out, const ClampBounds& bounds) {
  SimBuild::unary({out.device()}, op, in, out, bounds);
}
void binary(Op op, const Tensor& a, const Tensor& b, const Tensor& out, Scalar alpha) {
  SimBuild::binary({out.device()}, op, a, b, out, alpha);
}
void compare(Op op, const Tensor& a, const Tensor& b, const Tensor& out, ScalarType ct) {
  SimBuild::compare({out.device()}, op, a, b, out, ct);
}
void copy(const Tensor& src, const Tensor& dst) { SimBuild::copy({dst.device()}, src, dst); }
void fill(const Tensor& out, Scalar value) { SimBuild::fill({out.device()}, out, value); }
void arange(const Tensor& out, double start, double step, int64_t istart, int64_t istep) {
  SimBuild::arange({out.device()}, out, start, step, istart, istep);
}
void linspace(const Tensor& out, const Scalar& start, const Scalar& end) {
  SimBuild::linspace({out.device()}, out, start, end);
}
void random(const Tensor& out, bool normal, uint64_t seed, uint64_t offset) {
  SimBuild::random({out.device()}, out, normal, seed, offset);
}
}  // namespace sim

// [SECTION] Choosing the device ----------------------------------------------------------

const char* variant(Device d) { return d.type == DeviceType::CUDA ? "cuda" : "sim"; }

#ifdef DESCENT_HAVE_CUDA
#define DESCENT_ON_DEVICE(d, call) return (d).type == DeviceType::CUDA ? cuda::call : sim::call
#else
// Without the CUDA toolkit no CUDA tensor can exist (the runtime reports no
// device), so every device loop is sim's.
#define DESCENT_ON_DEVICE(d, call)                                                                       \
  DESCENT_CHECK((d).type != DeviceType::CUDA, NotImplementedError, "this build of descent has no CUDA"); \
  return sim::call
#endif

void unary(Op op, const Tensor& in, const Tensor& out, const ClampBounds& bounds) {
  DESCENT_ON_DEVICE(out.device(), unary(op, in, out, bounds));
}
void binary(Op op, const Tensor& a, const Tensor& b, const Tensor& out, Scalar alpha) {
  DESCENT_ON_DEVICE(out.device(), binary(op, a, b, out, alpha));
}
void compare(Op op, const Tensor& a, const Tensor& b, const Tensor& out, ScalarType ct) {
  DESCENT_ON_DEVICE(out.device(), compare(op, a, b, out, ct));
}
// A copy between two contiguous tensors of one dtype on one device moves
// bytes, not elements: a device-to-device memcpy on the current stream
// (cudaMemcpyAsync; a copy task on sim:0), as PyTorch's copy_ does when it
// may; its device span is "Memcpy DtoD (Device -> Device)", not a kernel.
void copy(const Tensor& src, const Tensor& dst) {
  if (src.dtype() == dst.dtype() && src.device() == dst.device() && src.sizes() == dst.sizes() && src.is_contiguous() &&
      dst.is_contiguous() && dst.numel() > 0) {
    streams::copy_bytes(dst.data_ptr(), dst.device(), src.data_ptr(), src.device(),
                        size_t(dst.numel()) * element_size(dst.dtype()));
    return;
  }
  DESCENT_ON_DEVICE(dst.device(), copy(src, dst));
}
void fill(const Tensor& out, Scalar value) { DESCENT_ON_DEVICE(out.device(), fill(out, value)); }
void arange(const Tensor& out, double start, double step, int64_t istart, int64_t istep) {
  DESCENT_ON_DEVICE(out.device(), arange(out, start, step, istart, istep));
}
void linspace(const Tensor& out, const Scalar& start, const Scalar& end) {
  DESCENT_ON_DEVICE(out.device(), linspace(out, start, end));
}
void random(const Tensor& out, bool normal, uint64_t seed, uint64_t offset) {
  DESCENT_ON_DEVICE(out.device(), random(out, normal, seed, offset));
}

}  // namespace descent::kernels::device
