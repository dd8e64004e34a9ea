// Floor 5 on CUDA: the kernels of advanced indexing, gather (aten::index)
// and scatter (aten::index_put_): device_reduce.h's per-element bodies
// (Note [Advanced indexing], indexing.cpp, builds their plans), one thread
// an element or a segment, in a grid-stride loop.
#include <algorithm>

#include <cuda_runtime.h>

#include "floors/core/error.h"
#include "floors/kernels/device/device_reduce.h"
#include "floors/launch/launch.h"

namespace descent::kernels::device {

namespace {

template <class T>
__global__ void gather_kernel(GatherPlan p, const T* self, T* out) {
  const int64_t stride = int64_t(gridDim.x) * blockDim.x;
  for (int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < p.numel; i += stride) out[i] = self[p.offset(i)];
}

template <class T>
__global__ void scatter_kernel(ScatterPlan p, T* self, const T* values) {
  const int64_t stride = int64_t(gridDim.x) * blockDim.x;
  for (int64_t s = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; s < p.segments; s += stride)
    scatter_segment(p, self, values, s);
}

constexpr int64_t kMaxGrid = 65536;  // a grid-stride loop covers the rest

}  // namespace

void cuda_gather(const streams::Stream& s, ScalarType dt, const void* self, void* out, const GatherPlan& p) {
  const char* kernel = kernel_name("index_gather", Op::index, dt, dt);
  visit_dtype(dt, [&]<typename T>() {
    launch::launch_cuda(s, launch::grid_launch(kernel, "aten::index", std::min(kMaxGrid, ceil_div(p.numel, 256)), 256),
                        gather_kernel<T>, p, static_cast<const T*>(self), static_cast<T*>(out));
  });
}

void cuda_scatter(const streams::Stream& s, ScalarType dt, void* self, const void* values, const ScatterPlan& p) {
  const char* kernel = kernel_name("index_scatter", Op::index_put_, dt, dt);
  visit_dtype(dt, [&]<typename T>() {
    launch::launch_cuda(
        s, launch::grid_launch(kernel, "aten::index_put_", std::min(kMaxGrid, ceil_div(p.segments, 256)), 256),
        scatter_kernel<T>, p, static_cast<T*>(self), static_cast<const T*>(values));
  });
}

}  // namespace descent::kernels::device
