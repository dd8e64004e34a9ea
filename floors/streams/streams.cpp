// Floor 7: the device runtimes behind one interface, each thread's current
// stream, synchronization as spans of its own, and copies between memories.
// (Note [Streams and the two clocks], streams.h.)
#include "floors/streams/streams.h"

#include <pthread.h>

#include <atomic>
#include <cstring>
#include <memory>

#include "floors/core/error.h"
#include "floors/streams/sim_runtime.h"
#include "tracer/tracer.h"

namespace descent::streams {

DeviceRuntime& cuda_runtime();  // cuda_runtime.cpp

// Note [Devices after fork], below; called by both runtimes (sim_runtime.cpp, cuda_runtime.cpp).
void poison_fork(DeviceType t);  // a fork from now on leaves the child without devices of kind t
void check_fork(DeviceType t);   // RuntimeError, PyTorch's message, when in_bad_fork(t)

std::string Stream::str() const { return descent::str(device.str(), " stream ", id); }

DeviceRuntime& runtime(DeviceType t) {
  switch (t) {
    case DeviceType::Sim:
      return SimRuntime::get();
    case DeviceType::CUDA:
      return cuda_runtime();
    case DeviceType::CPU:
      break;
  }
  throw std::logic_error("streams::runtime: the CPU has no device runtime");
}

void check_device(Device d) {
  DESCENT_CHECK(d.type != DeviceType::CPU, Error, "the CPU is not a device with streams");
  DeviceRuntime& rt = runtime(d.type);
  check_fork(d.type);
  const int n = rt.device_count();
  if (n == 0) throw Error(str(d.str(), " is not available: ", rt.unavailable_reason()));
  DESCENT_CHECK(d.index >= 0 && d.index < n, Error, d.str(), " is not available: this machine has ", n, " ",
                device_type_name(d.type), " device", n == 1 ? "" : "s", " (", device_type_name(d.type), ":0",
                n > 1 ? str(" to ", device_type_name(d.type), ":", n - 1) : std::string(), ")");
}

// [SECTION] Devices after fork ------------------------------------------------------

// Note [Devices after fork]
// ~~~~~~~~~~~~~~~~~~~~~~~~~
// fork() copies a process's memory but only the thread that called it. A
// child forked after sim:0 started a stream's worker thread inherits the
// queue, its mutex and its counters, but no worker: a task it enqueues is
// never run, and the wait for it never ends (`multiprocessing` with the
// "fork" start method and DataLoader workers fork this way). A GPU is the
// same: the CUDA driver's state does not survive a fork, and every call of
// the child fails with "initialization error". So, as PyTorch does
// (torch/csrc/cuda/Module.cpp, poison_fork), a runtime calls poison_fork(t)
// when it first starts what a fork cannot copy (sim:0 its first worker,
// SimQueue; CUDA the driver, its probe found a GPU), which registers, once, a
// pthread_atfork handler for the child; in a child forked after that the
// handler marks the device kind "in bad fork", and the runtime's every use of
// it (a stream, an enqueue, a wait, an event, an allocation) first calls
// check_fork(t), which raises PyTorch's RuntimeError: "Cannot re-initialize
// CUDA in forked subprocess. To use CUDA with multiprocessing, you must use
// the 'spawn' start method" (sim's says sim). The check is a relaxed load of
// a flag. What is not a use keeps working in the child: device_count() and
// is_available() (the count the parent found), and the CPU, whose thread pool
// starts over (the pool's policy, floors/kernels/cpu/parallel.cpp). A
// child forked before the device was used has nothing to lose and uses it as
// a fresh process would. The calls made on the program's behalf rather than
// by it return quietly in a child in bad fork instead of raising: the
// allocator's event for a deferred free (none: the block is free at once),
// the runtime's synchronize_device (nothing of the child's can be queued;
// the free of pinned memory and a raw free call it from deleters, where
// nothing may throw) and idle() (true, so the end of a recording does not
// wait); synchronize() from Python still raises, in check_device.

namespace {
std::atomic<bool> g_poisoned[3] = {};  // per DeviceType: a fork from here on leaves the child without the device
std::atomic<bool> g_bad_fork[3] = {};  // per DeviceType: this process is such a child
void forked_child() {                  // pthread_atfork's child handler: only stores
  for (int t = 0; t < 3; ++t)
    if (g_poisoned[t].load(std::memory_order_relaxed)) g_bad_fork[t].store(true, std::memory_order_relaxed);
}
}  // namespace

void poison_fork(DeviceType t) {
  static const bool registered = [] {
    pthread_atfork(nullptr, nullptr, forked_child);
    return true;
  }();
  (void)registered;
  g_poisoned[int(t)].store(true, std::memory_order_relaxed);
}

bool in_bad_fork(DeviceType t) { return g_bad_fork[int(t)].load(std::memory_order_relaxed); }

void check_fork(DeviceType t) {
  if (!in_bad_fork(t)) [[likely]]
    return;
  const char* name = t == DeviceType::CUDA ? "CUDA" : device_type_name(t);
  throw Error(str("Cannot re-initialize ", name, " in forked subprocess. To use ", name,
                  " with multiprocessing, you must use the 'spawn' start method"));
}

// [SECTION] Current stream ----------------------------------------------------------

namespace {
// Per thread, per device type and index: the current stream's id (0, the
// default stream, until set), as PyTorch keeps the current stream per thread.
// The table lives on the heap, made on a thread's first set_current_stream:
// a module loaded with dlopen (the Python extension) has only a small static
// TLS block, so a thread_local must stay a pointer's size.
constexpr int kTypes = 3;
thread_local std::unique_ptr<int64_t[]> tl_current;

int64_t& current_slot(Device d) {
  if (!tl_current) tl_current = std::make_unique<int64_t[]>(kTypes * (kMaxDeviceIndex + 1));  // zeros
  return tl_current[int(d.type) * (kMaxDeviceIndex + 1) + d.index];
}
}  // namespace

Stream current_stream(Device d) { return Stream{d, tl_current ? current_slot(d) : 0}; }
Stream default_stream(Device d) { return Stream{d, 0}; }
void set_current_stream(const Stream& s) {
  DESCENT_CHECK(s.device.type != DeviceType::CPU, Error, "the CPU has no streams");
  current_slot(s.device) = s.id;
}

// [SECTION] Synchronization -----------------------------------------------------------

void synchronize(Device d, const char* why) {
  check_device(d);
  trace::ScopedSpan span(trace::Floor::Streams, why);
  span.arg("device", trace::enabled() ? trace::intern(d.str()) : "");
  span.arg("api", d.type == DeviceType::CUDA ? "cudaDeviceSynchronize" : "simDeviceSynchronize");
  DESCENT_DECIDES(span, runtime(d.type).synchronize_device(d.index));  // the host waits for every stream here
}

void synchronize(const Stream& s, const char* why) {
  trace::ScopedSpan span(trace::Floor::Streams, why);
  span.arg("stream", s.id);
  span.arg("api", s.device.type == DeviceType::CUDA ? "cudaStreamSynchronize" : "simStreamSynchronize");
  if (span.active()) span.arg("queue_depth", runtime(s.device.type).queue_depth(s));
  DESCENT_DECIDES(span, runtime(s.device.type).synchronize(s));  // the host waits for this stream here
}

// [SECTION] Which op faulted ----------------------------------------------------------

namespace {
constexpr int kRecent = 8;
struct RecentLaunches {
  std::atomic<uint32_t> next{0};
  std::atomic<const char*> op[kRecent] = {}, kernel[kRecent] = {};
};
RecentLaunches* recent_table() {  // [type][index], never destroyed
  static RecentLaunches* t = new RecentLaunches[3 * (kMaxDeviceIndex + 1)];
  return t;
}
RecentLaunches* recent_of(Device d) {
  if (d.type == DeviceType::CPU || d.index < 0 || d.index > kMaxDeviceIndex) return nullptr;
  return &recent_table()[int(d.type) * (kMaxDeviceIndex + 1) + d.index];
}
}  // namespace

void note_launch(Device d, const char* op, const char* kernel) {
  RecentLaunches* r = recent_of(d);
  if (r == nullptr) return;
  const uint32_t i = r->next.fetch_add(1, std::memory_order_relaxed) % kRecent;
  r->op[i].store(op, std::memory_order_relaxed);
  r->kernel[i].store(kernel, std::memory_order_relaxed);
}

std::string recent_launches(Device d) {
  RecentLaunches* r = recent_of(d);
  if (r == nullptr) return "";
  const uint32_t n = r->next.load(std::memory_order_relaxed);
  std::string out;
  for (uint32_t k = 0; k < kRecent && k < n; ++k) {
    const uint32_t i = (n - 1 - k) % kRecent;
    const char* op = r->op[i].load(std::memory_order_relaxed);
    const char* kernel = r->kernel[i].load(std::memory_order_relaxed);
    if (op == nullptr || kernel == nullptr) continue;
    out += str(out.empty() ? "" : ", ", op, " (", kernel, ")");
  }
  return out;
}

void record_sim_span(trace::DeviceSpan d, const Stream& s, int64_t start_ns, uint64_t correlation) {
  if (start_ns == 0 || !trace::enabled()) return;
  d.device = "sim:0";
  d.stream = s.id;
  d.start_ns = start_ns;
  d.end_ns = trace::now_ns();
  d.correlation = correlation;
  d.clock = "simulated device worker (host clock)";
  trace::record_device_span(d);
}

int64_t sim_enqueue(const Stream& s, std::function<void()> task) {
  return SimRuntime::get().enqueue(s, std::move(task));
}

// [SECTION] Copies --------------------------------------------------------------------

namespace {
thread_local const char* t_read_reason = nullptr;
}  // namespace

ReadReason::ReadReason(const char* why) : previous_(t_read_reason) { t_read_reason = why; }
ReadReason::~ReadReason() { t_read_reason = previous_; }
const char* ReadReason::current() { return t_read_reason ? t_read_reason : "synchronize"; }

void copy_bytes(void* dst, Device dst_device, const void* src, Device src_device, size_t nbytes, bool pinned,
                const char* why) {
  using Kind = DeviceRuntime::CopyKind;
  if (nbytes == 0) return;
  if (why == nullptr) why = ReadReason::current();
  const bool dst_host = dst_device.type == DeviceType::CPU, src_host = src_device.type == DeviceType::CPU;
  if (dst_host && src_host) {
    std::memcpy(dst, src, nbytes);
    return;
  }
  if (dst_host) {  // device to host: the host waits for the bytes unless they go to pinned memory
    const Stream s = current_stream(src_device);
    runtime(src_device.type).copy(dst, src, nbytes, Kind::DeviceToHost, s, pinned);
    if (!pinned) synchronize(s, why);
    return;
  }
  if (src_host) {
    runtime(dst_device.type).copy(dst, src, nbytes, Kind::HostToDevice, current_stream(dst_device), pinned);
    return;
  }
  if (dst_device == src_device) {
    runtime(dst_device.type).copy(dst, src, nbytes, Kind::DeviceToDevice, current_stream(dst_device), false);
    return;
  }
  // Between two devices (sim:0 and cuda:0, or two GPUs): through the host.
  std::unique_ptr<char[]> staging(new char[nbytes]);
  copy_bytes(staging.get(), Device{}, src, src_device, nbytes, false, why);
  copy_bytes(dst, dst_device, staging.get(), Device{}, nbytes, false, why);
}

}  // namespace descent::streams
