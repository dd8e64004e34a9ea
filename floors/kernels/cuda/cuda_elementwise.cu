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

using DeviceBuild = Build<CudaLaunch>;

}  // namespace

namespace cuda {
DESCENT_DEVICE_LOOP_TABLE(DESCENT_DEVICE_LOOP_DEFINE)
DESCENT_DEVICE_LOOP_TABLE(DESCENT_DEVICE_LOOP_SAME_TYPE)
}  // namespace cuda

}  // namespace descent::kernels::device
