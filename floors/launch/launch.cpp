// Floor 8: launches on both device kinds (Note [What a launch is], launch.h).
#include "floors/launch/launch.h"

#include <algorithm>
#include <atomic>
#include <map>
#include <mutex>
#include <utility>

#include "floors/core/error.h"
#include "tracer/cupti.h"
#include "tracer/tracer.h"

#ifdef DESCENT_HAVE_CUDA
#include <cuda.h>  // CUfunction and CUresult; the driver's cuLaunchKernel comes through the runtime
#include <cuda_runtime_api.h>
#endif

namespace descent::launch {

using trace::Floor;

KernelLaunch linear_launch(const char* kernel, const char* op, int64_t n, uint32_t threads, uint32_t per_thread) {
  KernelLaunch k;
  k.kernel = kernel;
  k.op = op;
  const int64_t per_block = int64_t(threads) * per_thread;
  const int64_t blocks = std::max<int64_t>(1, (n + per_block - 1) / per_block);
  k.grid.x = uint32_t(std::min<int64_t>(blocks, (int64_t(1) << 31) - 1));  // CUDA's limit for grid.x
  k.block.x = threads;
  return k;
}

KernelLaunch grid_launch(const char* kernel, const char* op, int64_t blocks, uint32_t threads) {
  DESCENT_CHECK(blocks < (int64_t(1) << 31), Error, op, "(): ", blocks, " blocks are more than a launch takes");
  KernelLaunch k;
  k.kernel = kernel;
  k.op = op;
  k.grid.x = uint32_t(blocks);
  k.block.x = threads;
  return k;
}

namespace {

// The launch's arguments on the floor-8 span (and the device's span).
void launch_args(trace::ScopedSpan& span, const KernelLaunch& k, const streams::Stream& s) {
  if (!span.active()) return;
  span.arg("kernel", k.kernel);
  span.arg("grid", int64_t(k.grid.x));
  if (k.grid.y * k.grid.z > 1) {
    span.arg("grid_y", int64_t(k.grid.y));
    span.arg("grid_z", int64_t(k.grid.z));
  }
  span.arg("block", int64_t(k.block.x * k.block.y * k.block.z));
  span.arg("shared_bytes", int64_t(k.shared_bytes));
  span.arg("stream", s.id);
}

}  // namespace

// [SECTION] The simulated device --------------------------------------------------------

void launch_sim(const streams::Stream& s, const KernelLaunch& k, SimBody body) {
  trace::ScopedSpan enqueue(Floor::Streams, "enqueue");  // floor 7: which stream, how deep its queue is
  enqueue.arg("stream", s.id);
  trace::ScopedSpan span(Floor::Launch, "simLaunchKernel");
  launch_args(span, k, s);
  const uint64_t correlation = span.active() ? trace::next_correlation() : 0;
  span.arg("correlation", int64_t(correlation));
  const KernelLaunch launch = k;
  enqueue.arg(trace::kDecidedAt, DESCENT_HERE);  // onto stream s, the caller's current stream:
  span.arg(trace::kDecidedAt, DESCENT_HERE);     // the kernel is queued, not run, and the host goes on
  const int64_t depth = streams::sim_enqueue(s, [=, body = std::move(body)] {
    // The device's clock: when the worker got to the kernel, and when it finished.
    const int64_t start = trace::enabled() ? trace::now_ns() : 0;
    Dim3 b;
    try {
      for (b.z = 0; b.z < launch.grid.z; ++b.z)
        for (b.y = 0; b.y < launch.grid.y; ++b.y)
          for (b.x = 0; b.x < launch.grid.x; ++b.x) body(b);
    } catch (const std::exception& e) {  // a device fault: the next synchronization raises it (Note [Which op faulted])
      throw Error(str(launch.op, ": kernel ", launch.kernel, " faulted on sim:0 in block (", b.x, ", ", b.y, ", ", b.z,
                      "): ", e.what()));
    }
    trace::DeviceSpan d;
    d.name = launch.kernel;
    d.work = trace::DeviceWork::Kernel;
    d.grid[0] = launch.grid.x, d.grid[1] = launch.grid.y, d.grid[2] = launch.grid.z;
    d.block[0] = launch.block.x, d.block[1] = launch.block.y, d.block[2] = launch.block.z;
    d.shared_bytes = launch.shared_bytes;
    streams::record_sim_span(d, s, start, correlation);
  });
  enqueue.arg("queue_depth", depth);
}

// [SECTION] CUDA ----------------------------------------------------------------------

// Note [A launch's host cost]
// ~~~~~~~~~~~~~~~~~~~~~~~~~~~
// Every CUDA op pays this floor once, so what it does when tracing is off is
// kept to what the launch needs. With one GPU: one launch call, a store of
// two pointers for Note [Which op faulted], and the stream's handle (none for
// the default stream). With more GPUs, cudaGetDevice too, and cudaSetDevice
// before and after when the stream's device is not the thread's (c10's
// CUDAGuard); with one, the thread's device can only be it. The launch call
// is the driver's cuLaunchKernel on the kernel's handle, found once per
// kernel (cudaGetFuncBySymbol, kept in a table without a lock): the
// runtime's cudaLaunchKernel looks that handle up from the host function on
// every launch before it calls the driver (on the H200 host, a raw
// cuLaunchKernel took 3.10-3.59 µs where cudaLaunchKernel took 3.34-3.59
// and <<<...>>> 3.42-3.82, four runs of tests/bench/bench_launch.cu; the
// launch itself, in the driver, is most of a CUDA op's host time). While
// tracing, and with more than one GPU (a handle belongs to one device), it
// is cudaLaunchKernel, so that the trace shows the call PyTorch's profiler
// shows for its own kernels (not because a driver launch could not be
// correlated: CUPTI joins a cuLaunchKernel(Ex) to its kernel too, as the
// H200 host's Triton kernels show); a driver launch
// that fails is made again through cudaLaunchKernel, whose error names it in
// the runtime's words. launch_cuda makes the call itself: <<<...>>> would be
// three runtime calls, and a fourth, cudaGetLastError, to learn whether it
// failed. The spans, their arguments and CUPTI's correlation id (a lock and
// a map) exist only for the trace, and are made only while tracing.
#ifdef DESCENT_HAVE_CUDA
namespace {
bool several_gpus() {
  static const bool several = streams::runtime(DeviceType::CUDA).device_count() > 1;
  return several;
}

using DriverLaunch = CUresult (*)(CUfunction, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned,
                                  CUstream, void**, void**);
DriverLaunch driver_launch() {  // cuLaunchKernel, or nullptr where the driver does not give it
  static const DriverLaunch fn = [] {
    void* p = nullptr;
    cudaDriverEntryPointQueryResult found{};
    if (cudaGetDriverEntryPointByVersion("cuLaunchKernel", &p, 12000, cudaEnableDefault, &found) != cudaSuccess ||
        found != cudaDriverEntryPointSuccess) {
      (void)cudaGetLastError();
      p = nullptr;
    }
    return reinterpret_cast<DriverLaunch>(p);
  }();
  return fn;
}

// Each kernel's driver handle, found on its first launch: an open-addressed
// table that only grows, read without a lock (descent has a few hundred kernels).
constexpr size_t kHandleSlots = 4096;
struct HandleSlot {
  std::atomic<const void*> kernel{nullptr};
  std::atomic<CUfunction> handle{nullptr};  // null for a moment after `kernel` is claimed
};
HandleSlot g_handles[kHandleSlots];

CUfunction handle_of(const void* kernel) {
  auto look_up = [kernel] {
    cudaFunction_t f = nullptr;
    if (cudaGetFuncBySymbol(&f, kernel) != cudaSuccess) {
      (void)cudaGetLastError();
      return CUfunction(nullptr);
    }
    return reinterpret_cast<CUfunction>(f);
  };
  const size_t start = size_t((reinterpret_cast<uintptr_t>(kernel) >> 4) * 0x9E3779B97F4A7C15ull >> 52);
  for (size_t probe = 0; probe < kHandleSlots; ++probe) {
    HandleSlot& slot = g_handles[(start + probe) % kHandleSlots];
    const void* k = slot.kernel.load(std::memory_order_acquire);
    if (k == kernel) {
      if (CUfunction f = slot.handle.load(std::memory_order_acquire)) return f;
      return look_up();  // another thread is filling it in
    }
    if (k != nullptr) continue;
    const CUfunction f = look_up();
    if (f == nullptr) return nullptr;
    const void* expected = nullptr;
    if (slot.kernel.compare_exchange_strong(expected, kernel, std::memory_order_acq_rel)) {
      slot.handle.store(f, std::memory_order_release);
      return f;
    }
    if (expected == kernel) return f;
  }
  return look_up();  // a full table still launches
}
}  // namespace
#endif

#ifdef DESCENT_HAVE_CUDA
namespace {
// A kernel may use 48 KiB of dynamic shared memory unless it asks for more
// (cudaFuncAttributeMaxDynamicSharedMemorySize), once per device: asked on
// the launch's device, which is current, and remembered, a kernel and device
// at a time, so that later launches pay a lookup only.
constexpr uint32_t kSharedWithoutAsking = 48 * 1024;

cudaError_t allow_shared_bytes(const void* kernel_fn, int device, uint32_t bytes) {
  static std::mutex mu;
  static std::map<std::pair<const void*, int>, uint32_t> allowed;  // the most asked for, by kernel and device
  std::lock_guard<std::mutex> g(mu);
  uint32_t& most = allowed[{kernel_fn, device}];
  if (most >= bytes) return cudaSuccess;
  const cudaError_t e = cudaFuncSetAttribute(kernel_fn, cudaFuncAttributeMaxDynamicSharedMemorySize, int(bytes));
  if (e == cudaSuccess) most = bytes;
  return e;
}
}  // namespace
#endif

CudaLaunchScope::CudaLaunchScope(const streams::Stream& s, const KernelLaunch& k)
    : k_(k),
      native_(streams::runtime(DeviceType::CUDA).native(s)),
      span_(trace::kNoSpan),
      correlated_(false),
      device_(s.device.index) {
  streams::note_launch(s.device, k.op, k.kernel);
#ifdef DESCENT_HAVE_CUDA
  // A kernel runs on the calling thread's current device: make it the
  // stream's for the launch (c10's CUDAGuard), and put the old one back after.
  if (several_gpus() && cudaGetDevice(&saved_device_) == cudaSuccess && saved_device_ != s.device.index) {
    if (cudaSetDevice(s.device.index) != cudaSuccess) saved_device_ = -1;
  } else {
    saved_device_ = -1;
  }
#endif
  if (!trace::enabled()) return;
  enqueue_ = trace::begin_span(Floor::Streams, "enqueue");
  trace::add_arg(enqueue_, "stream", s.id);
  span_ = trace::begin_span(Floor::Launch, "cudaLaunchKernel");
  trace::add_arg(span_, "kernel", k.kernel);
  trace::add_arg(span_, "grid", int64_t(k.grid.x));
  if (k.grid.y * k.grid.z > 1) {
    trace::add_arg(span_, "grid_y", int64_t(k.grid.y));
    trace::add_arg(span_, "grid_z", int64_t(k.grid.z));
  }
  trace::add_arg(span_, "block", int64_t(k.block.x * k.block.y * k.block.z));
  trace::add_arg(span_, "shared_bytes", int64_t(k.shared_bytes));
  trace::add_arg(span_, "stream", s.id);
  const uint64_t correlation = trace::cupti::push_correlation(s.id);  // 0 when CUPTI is not collecting
  correlated_ = correlation != 0;
  trace::add_arg(span_, "correlation", int64_t(correlation));
}

CudaLaunchScope::~CudaLaunchScope() {
#ifdef DESCENT_HAVE_CUDA
  if (saved_device_ >= 0) (void)cudaSetDevice(saved_device_);
#endif
  if (correlated_) trace::cupti::pop_correlation();
  if (span_ >= 0) trace::end_span(span_);
  if (enqueue_ >= 0) trace::end_span(enqueue_);
}

int CudaLaunchScope::launch(const void* kernel_fn, void** args) {
#ifdef DESCENT_HAVE_CUDA
  if (k_.shared_bytes > kSharedWithoutAsking) {
    const cudaError_t e = allow_shared_bytes(kernel_fn, device_, k_.shared_bytes);
    if (e != cudaSuccess) return int(e);
  }
  if (span_ < 0 && !correlated_ && !several_gpus()) {  // not tracing: Note [A launch's host cost]
    const DriverLaunch driver = driver_launch();
    const CUfunction f = driver != nullptr ? handle_of(kernel_fn) : nullptr;
    if (f != nullptr && driver(f, k_.grid.x, k_.grid.y, k_.grid.z, k_.block.x, k_.block.y, k_.block.z, k_.shared_bytes,
                               static_cast<CUstream>(native_), args, nullptr) == CUDA_SUCCESS)
      return int(cudaSuccess);
  }
  if (span_ >= 0) {  // the launch on the next line is what both spans record (Note [Where a span decided])
    trace::add_arg(enqueue_, trace::kDecidedAt, DESCENT_HERE);
    trace::add_arg(span_, trace::kDecidedAt, DESCENT_HERE);
  }
  return int(cudaLaunchKernel(kernel_fn, dim3(k_.grid.x, k_.grid.y, k_.grid.z),
                              dim3(k_.block.x, k_.block.y, k_.block.z), args, k_.shared_bytes,
                              static_cast<cudaStream_t>(native_)));
#else
  (void)kernel_fn;
  (void)args;
  return 1;  // no launch without CUDA (no CudaLaunchScope is made in such a build)
#endif
}

void CudaLaunchScope::check(int launch_error) {
#ifdef DESCENT_HAVE_CUDA
  const auto e = static_cast<cudaError_t>(launch_error);
  if (e == cudaSuccess) return;
  (void)cudaGetLastError();  // the runtime keeps a failed launch's error for the next call: clear it
  throw Error(str(k_.op, ": launching kernel ", k_.kernel, " (grid ", k_.grid.x, "x", k_.grid.y, "x", k_.grid.z,
                  ", block ", k_.block.x, "x", k_.block.y, "x", k_.block.z,
                  ") failed: CUDA error: ", cudaGetErrorString(e), " (", cudaGetErrorName(e), ")"));
#else
  (void)launch_error;
#endif
}

}  // namespace descent::launch
