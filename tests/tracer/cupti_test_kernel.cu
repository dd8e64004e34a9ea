// A trivial kernel for test_cupti.cpp: the one thing there that needs nvcc.
#include <cuda_runtime.h>

#include "tests/tracer/cupti_test_kernel.h"

__global__ void descent_test_fill_kernel(float* p, int n, float value) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) p[i] = value;
}

int descent_test_fill(float* p, int n, float value, void* stream) {
  constexpr int kThreads = 256;
  descent_test_fill_kernel<<<(n + kThreads - 1) / kThreads, kThreads, 0, static_cast<cudaStream_t>(stream)>>>(p, n,
                                                                                                              value);
  return static_cast<int>(cudaGetLastError());
}
