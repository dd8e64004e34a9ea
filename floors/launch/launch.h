// Floor 8, the launch: a kernel put on a stream, with its grid and block.
//
// [SECTION] A launch
// [SECTION] The simulated device
// [SECTION] CUDA (in .cu files only)
//
// See floors/launch/README.md for the floor in a paragraph, and
// Note [What a launch is] below.
//
// Note [What a launch is]
// ~~~~~~~~~~~~~~~~~~~~~~~
// A GPU runs one function, the kernel, many times at once: over a *grid* of
// *blocks*, each block a group of threads that share fast on-chip memory and
// can wait for each other. The kernel floor (5) chose the kernel and sized
// the grid (how many blocks) and the block (how many threads each) from the
// number of elements; this floor hands that to the device: cudaLaunchKernel
// for CUDA, which copies the arguments into a launch record for the stream
// and returns, or, on sim:0, a task on the stream's worker that calls the
// same kernel body once per block. Either way the host gets control back
// before the kernel has run (Note [Streams and the two clocks]).
//
// The floor-8 span ("cudaLaunchKernel", or "simLaunchKernel" on sim:0, as
// PyTorch's profiler names the runtime call) records the kernel's name, grid,
// block, shared memory, the stream and a correlation id. The device's own
// span of that kernel carries the same id, and the trace joins the two by a
// flow arrow ("ac2g", as Kineto names it): on CUDA the device span comes from
// CUPTI's activity records (tracer/cupti.h), on sim:0 from the worker.
// A launch that fails (a bad configuration, a device fault found at launch)
// raises RuntimeError naming the op and the kernel.
#pragma once

#include <cstdint>
#include <functional>
#include <tuple>
#include <type_traits>

#include "floors/streams/streams.h"

namespace descent::launch {

// [SECTION] A launch ------------------------------------------------------------------

struct Dim3 {
  uint32_t x = 1, y = 1, z = 1;
  uint64_t count() const { return uint64_t(x) * y * z; }
};

struct KernelLaunch {
  const char* kernel = "";  // a literal: "elementwise_add_float32", ...
  const char* op = "";      // the op that launched it ("aten::add"), for errors
  Dim3 grid, block;
  uint32_t shared_bytes = 0;
};

// Threads per block and blocks for a one-dimensional loop over n elements,
// each thread taking `per_thread` elements; at least one block.
KernelLaunch linear_launch(const char* kernel, const char* op, int64_t n, uint32_t threads = 256,
                           uint32_t per_thread = 1);
// `blocks` blocks of `threads` threads in x; RuntimeError naming `op` past
// CUDA's limit on grid.x (a launch the kernel floor sized itself).
KernelLaunch grid_launch(const char* kernel, const char* op, int64_t blocks, uint32_t threads);

// [SECTION] The simulated device --------------------------------------------------------

// The kernel body for one block: called with the block's index, once per
// block of the grid, in order, on the stream's worker thread.
using SimBody = std::function<void(const Dim3& block_idx)>;

// Puts the kernel on sim stream `s` and returns: the floor-8 span, then the
// worker's device-row span around every block's body.
void launch_sim(const streams::Stream& s, const KernelLaunch& k, SimBody body);

// [SECTION] CUDA ----------------------------------------------------------------------

// The floor-8 span and the correlation around one CUDA launch; the .cu file
// launches inside its scope (launch_cuda below), then check()s the result.
// Note [A launch's host cost] says what a launch pays when tracing is off.
class CudaLaunchScope {
 public:
  CudaLaunchScope(const streams::Stream& s, const KernelLaunch& k);
  ~CudaLaunchScope();
  void* stream() const { return native_; }  // the cudaStream_t
  // The launch of `kernel_fn` (a __global__ function) with `args` (one
  // pointer to each argument, as cudaLaunchKernel takes them); returns a
  // cudaError_t. Note [A launch's host cost] says which call makes it. A
  // launch with more than 48 KiB of dynamic shared memory first raises the
  // kernel's limit on this device, once (allow_shared_bytes, launch.cpp).
  int launch(const void* kernel_fn, void** args);
  // After the launch, with what launch() returned: raises RuntimeError
  // naming the op and kernel when the launch failed.
  void check(int launch_error);
  CudaLaunchScope(const CudaLaunchScope&) = delete;
  CudaLaunchScope& operator=(const CudaLaunchScope&) = delete;

 private:
  const KernelLaunch& k_;
  void* native_;
  int64_t span_;
  int64_t enqueue_ = -1;
  bool correlated_;
  int saved_device_ = -1;  // the thread's device before the launch, when it was another; -1 otherwise
  int device_;             // the stream's, current during the launch
};

#ifdef __CUDACC__
// launch_cuda(s, k, kernel_fn, args...): kernel_fn<<<k.grid, k.block, k.shared_bytes, s>>>(args...), traced.
// It launches itself (CudaLaunchScope::launch), with the arguments converted
// to the kernel's parameter types as <<<...>>> converts them: <<<...>>> is
// three runtime calls (push and pop of the configuration, then
// cudaLaunchKernel) and its error needs a fourth (cudaGetLastError).
template <typename... Params, typename... Args>
void launch_cuda(const streams::Stream& s, const KernelLaunch& k, void (*kernel_fn)(Params...), Args&&... args) {
  static_assert(sizeof...(Params) == sizeof...(Args), "launch_cuda: one argument for each kernel parameter");
  CudaLaunchScope scope(s, k);
  std::tuple<std::remove_cvref_t<Params>...> converted(std::forward<Args>(args)...);
  const int e = std::apply(
      [&](auto&... a) {
        void* pointers[] = {static_cast<void*>(&a)..., nullptr};  // the launch reads sizeof...(Params)
        return scope.launch(reinterpret_cast<const void*>(kernel_fn), pointers);
      },
      converted);
  scope.check(e);
}
#endif

}  // namespace descent::launch
