// The device loops on CUDA: the kernel bodies of device_loops.h, run by the GPU.
//
// One __global__ template, elementwise_kernel<Loop>, is the whole of the
// CUDA side: every GPU thread calls run_thread with its own block and thread
// index, the very function the simulated device calls in a loop (Note [One
// kernel body, two devices], device_loops.h). nvcc instantiates it once per
// loop type (op x dtype), and launch::launch_cuda puts it on the current
// stream, inside the floor-8 span. Compiled with --fmad=false (CMakeLists.txt),
// so a * b + c is two roundings as on the CPU.
#include "floors/kernels/device/device_loops.h"

namespace descent::kernels::device {

namespace {

template <class Loop>
__global__ void __launch_bounds__(kThreadsPerBlock) elementwise_kernel(Loop loop) {
  run_thread(loop, blockIdx.x, gridDim.x, blockDim.x, threadIdx.x);
}

struct CudaLaunch {
  Device device;
  template <class Loop>
  void operator()(const launch::KernelLaunch& k, const Loop& loop) const {
    if (loop.n == 0) return;
    launch::launch_cuda(streams::current_stream(device), k, elementwise_kernel<Loop>, loop);
  }
};

using CudaBuild = Build<CudaLaunch>;

}  // namespace

namespace cuda {
void unary(Op op, const Tensor& in, const Tensor& out, const ClampBounds& bounds) {
  CudaBuild::unary({out.device()}, op, in, out, bounds);
}
void binary(Op op, const Tensor& a, const Tensor& b, const Tensor& out, Scalar alpha) {
  CudaBuild::binary({out.device()}, op, a, b, out, alpha);
}
void compare(Op op, const Tensor& a, const Tensor& b, const Tensor& out, ScalarType ct) {
  CudaBuild::compare({out.device()}, op, a, b, out, ct);
}
void copy(const Tensor& src, const Tensor& dst) { CudaBuild::copy({dst.device()}, src, dst); }
void fill(const Tensor& out, Scalar value) { CudaBuild::fill({out.device()}, out, value); }
void arange(const Tensor& out, double start, double step, int64_t istart, int64_t istep) {
  CudaBuild::arange({out.device()}, out, start, step, istart, istep);
}
void linspace(const Tensor& out, const Scalar& start, const Scalar& end) {
  CudaBuild::linspace({out.device()}, out, start, end);
}
void random(const Tensor& out, bool normal, uint64_t seed, uint64_t offset) {
  CudaBuild::random({out.device()}, out, normal, seed, offset);
}
}  // namespace cuda

}  // namespace descent::kernels::device
