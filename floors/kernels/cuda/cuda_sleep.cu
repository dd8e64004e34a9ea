// descent.cuda._sleep(cycles), torch.cuda._sleep's twin: one thread of one
// block spins on its multiprocessor's clock for `cycles` cycles, on the
// current stream, and does nothing else. PyTorch's tests use it to keep a
// stream busy for a known while; descent's do too (the NCCL watchdog's test,
// Note [NCCL's watchdog], floors/distributed/process_group_nccl.h).
#include <cuda_runtime.h>

#include "floors/kernels/device/device_reduce.h"
#include "floors/launch/launch.h"

namespace descent::kernels::device {

namespace {

__global__ void spin_kernel(int64_t cycles) {
  const long long start = clock64();
  while (clock64() - start < cycles) {
  }
}

}  // namespace

void cuda_sleep(const streams::Stream& s, int64_t cycles) {
  launch::launch_cuda(s, launch::grid_launch("spin_kernel", "cuda._sleep", 1, 1), spin_kernel, cycles);
}

}  // namespace descent::kernels::device
