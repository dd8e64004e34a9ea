// A kernel that faults on the GPU is named by the error that reports it
// later (Note [Which op faulted]), and a launch the device refuses by the
// launch itself. In a binary of its own: after a device fault every CUDA
// call of the process fails.
#include <gtest/gtest.h>

#include <cuda_runtime_api.h>

#include <string>

#include "floors/core/error.h"
#include "floors/launch/launch.h"
#include "floors/streams/streams.h"

namespace {

__global__ void write_through_null(int* p) { p[threadIdx.x] = 1; }

__global__ void write_one(int* p) { p[threadIdx.x] = 1; }

// A launch the device refuses (more threads in a block than it has) is
// reported by the launch itself, in the runtime's words (a driver launch
// that fails is made again through cudaLaunchKernel: Note [A launch's host
// cost]), naming the op and the kernel; the error is not sticky: the next
// launch works. Before the
// fault below, which ends every later call.
TEST(CudaLaunchError, ARefusedLaunchNamesTheOpAndKernelAndTheNextLaunchWorks) {
  using namespace descent;
  if (streams::runtime(DeviceType::CUDA).device_count() == 0)
    GTEST_SKIP() << streams::runtime(DeviceType::CUDA).unavailable_reason();
  const Device cuda{DeviceType::CUDA, 0};
  const streams::Stream s = streams::current_stream(cuda);
  int* p = nullptr;
  ASSERT_EQ(cudaMalloc(&p, 64 * sizeof(int)), cudaSuccess);
  const launch::KernelLaunch bad{"write_one", "aten::test_launch", {1, 1, 1}, {4096, 1, 1}, 0};
  try {
    launch::launch_cuda(s, bad, write_one, p);
    FAIL() << "a block of 4096 threads should be refused";
  } catch (const Error& e) {
    const std::string m = e.what();
    EXPECT_NE(m.find("aten::test_launch: launching kernel write_one (grid 1x1x1, block 4096x1x1) failed: CUDA error: "),
              std::string::npos)
        << m;
    EXPECT_NE(m.find("(cudaError"), std::string::npos) << m;  // the runtime's name of the error
  }
  const launch::KernelLaunch good{"write_one", "aten::test_launch", {1, 1, 1}, {64, 1, 1}, 0};
  EXPECT_NO_THROW(launch::launch_cuda(s, good, write_one, p));
  EXPECT_NO_THROW(streams::synchronize(cuda));
  int host[64] = {};
  ASSERT_EQ(cudaMemcpy(host, p, sizeof host, cudaMemcpyDeviceToHost), cudaSuccess);
  EXPECT_EQ(host[63], 1);
  cudaFree(p);
}

TEST(CudaFault, TheNextCallNamesTheOpAndKernelThatFaulted) {
  using namespace descent;
  if (streams::runtime(DeviceType::CUDA).device_count() == 0)
    GTEST_SKIP() << streams::runtime(DeviceType::CUDA).unavailable_reason();
  const Device cuda{DeviceType::CUDA, 0};
  const streams::Stream s = streams::current_stream(cuda);
  const launch::KernelLaunch k{"write_through_null", "aten::test_fault", {1, 1, 1}, {32, 1, 1}, 0};
  launch::launch_cuda(s, k, write_through_null, static_cast<int*>(nullptr));  // the launch itself succeeds
  try {
    streams::synchronize(cuda);
    FAIL() << "the fault should be reported by the synchronize";
  } catch (const Error& e) {
    const std::string m = e.what();
    EXPECT_NE(m.find("cudaErrorIllegalAddress"), std::string::npos) << m;
    EXPECT_NE(m.find("aten::test_fault (write_through_null)"), std::string::npos) << m;
  }
}

}  // namespace
