// A kernel that faults on the GPU is named by the error that reports it
// later (Note [Which op faulted]). In a binary of its own: after a device
// fault every CUDA call of the process fails.
#include <gtest/gtest.h>

#include <string>

#include "floors/core/error.h"
#include "floors/launch/launch.h"
#include "floors/streams/streams.h"

namespace {

__global__ void write_through_null(int* p) { p[threadIdx.x] = 1; }

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
