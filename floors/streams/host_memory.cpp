// Pinned host memory, for Tensor.pin_memory() (device_memory.h).
//
// Note [Pinned host memory]
// ~~~~~~~~~~~~~~~~~~~~~~~~~
// A copy between the host and a GPU goes by DMA, which needs host memory the
// operating system will not page out. From ordinary ("pageable") memory the
// CUDA runtime first copies the bytes into a page-locked staging buffer of
// its own, and cudaMemcpyAsync returns only once it has read them: the copy
// is not asynchronous for the host. From page-locked ("pinned") memory,
// cudaHostAlloc's, the device reads the bytes itself, later, and the call
// returns at once: that is what `x.pin_memory().to("cuda", non_blocking=True)`
// buys, and why the host must not write into x until the copy has run.
// The simulated device does the same: a copy from pageable memory is staged
// before the call returns (SimRuntime::copy), one from pinned memory reads the
// host bytes when its task runs.
// So freeing pinned memory first waits for the devices' queued work, which
// may still read it (PyTorch's caching host allocator records an event on the
// copy's stream and reuses the block only once it has passed; descent, which
// caches no pinned blocks, waits for the devices instead). Where no GPU is
// usable, pinned memory is ordinary aligned host memory marked pinned.
#include <cstdlib>
#include <new>

#include "floors/core/error.h"
#include "floors/streams/device_memory.h"
#include "floors/streams/sim_runtime.h"
#include "tracer/tracer.h"

#ifdef DESCENT_HAVE_CUDA
#include <cuda_runtime_api.h>
#endif

namespace descent::streams {

namespace {

// Every device that may have a copy queued that reads the block.
void wait_for_devices() {
  SimRuntime::get().synchronize_device(0);
  DeviceRuntime& cuda = runtime(DeviceType::CUDA);
  for (int i = 0, n = cuda.device_count(); i < n; ++i) cuda.synchronize_device(i);
}

void free_host(void*, void* ptr, size_t) {
  wait_for_devices();
  std::free(ptr);
}

#ifdef DESCENT_HAVE_CUDA
void free_cuda_host(void*, void* ptr, size_t) {
  wait_for_devices();
  (void)cudaFreeHost(ptr);
}
#endif

}  // namespace

DataPtr pinned_allocate(size_t nbytes) {
  trace::ScopedSpan span(trace::Floor::Allocator, "pinned_alloc");
  span.arg("bytes", int64_t(nbytes));
  if (nbytes == 0) return {};
#ifdef DESCENT_HAVE_CUDA
  if (runtime(DeviceType::CUDA).device_count() > 0) {
    span.arg("api", "cudaHostAlloc");
    void* p = nullptr;
    const cudaError_t e = cudaHostAlloc(&p, nbytes, cudaHostAllocDefault);
    if (e != cudaSuccess) {
      (void)cudaGetLastError();
      throw alloc::OutOfMemoryError(
          str("cudaHostAlloc could not pin ", alloc::format_size(nbytes), " of host memory: ", cudaGetErrorString(e)));
    }
    return DataPtr{p, nbytes, free_cuda_host, nullptr};
  }
#endif
  span.arg("api", "aligned_alloc");
  const size_t rounded = (nbytes + alloc::kAlignment - 1) / alloc::kAlignment * alloc::kAlignment;
  void* p = std::aligned_alloc(alloc::kAlignment, rounded);
  if (!p) throw std::bad_alloc();
  return DataPtr{p, nbytes, free_host, nullptr};
}

}  // namespace descent::streams
