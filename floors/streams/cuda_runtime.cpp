// cuda:N: the CUDA runtime's devices, streams and events behind DeviceRuntime.
//
// In a build without the CUDA toolkit the same runtime exists and reports no
// device, with the reason, so that asking for cuda says so in one line.
// With the toolkit but no GPU (or no driver), cudaGetDeviceCount fails with
// cudaErrorInsufficientDriver or cudaErrorNoDevice: that is "no CUDA
// device", never a crash. Stream 0 is the legacy default stream (the one
// PyTorch's default stream is); other streams are created non-blocking, as
// PyTorch's pool streams are.
#include <map>
#include <mutex>
#include <string>
#include <vector>

#include "floors/core/error.h"
#include "floors/streams/streams.h"
#include "tracer/cupti.h"
#include "tracer/tracer.h"

#ifdef DESCENT_HAVE_CUDA
#include <cuda_runtime_api.h>
#endif

namespace descent::streams {

#ifdef DESCENT_HAVE_CUDA

// Note [Devices after fork] (streams.cpp): the driver's state does not
// survive a fork, so a child forked after the probe found a GPU raises
// PyTorch's RuntimeError at every use of cuda instead of CUDA's
// "initialization error".
void poison_fork(DeviceType t);
bool in_bad_fork(DeviceType t);
void check_fork(DeviceType t);

namespace {

// Raises RuntimeError for a failed CUDA call, naming the call and CUDA's words.
// Errors a kernel causes on the device, reported by whichever call comes
// next (Note [Which op faulted], streams.h).
bool device_fault(cudaError_t e) {
  return e == cudaErrorIllegalAddress || e == cudaErrorLaunchFailure || e == cudaErrorAssert ||
         e == cudaErrorIllegalInstruction || e == cudaErrorMisalignedAddress || e == cudaErrorInvalidAddressSpace ||
         e == cudaErrorInvalidPc || e == cudaErrorHardwareStackError || e == cudaErrorLaunchTimeout;
}

void check(cudaError_t e, const char* what) {
  if (e == cudaSuccess) return;
  (void)cudaGetLastError();      // clears a non-sticky error so the next call starts clean
  check_fork(DeviceType::CUDA);  // a forked child's call failed because of the fork: say so
  std::string m = str("CUDA error: ", cudaGetErrorString(e), " (", cudaGetErrorName(e), ", in ", what, ")");
  if (device_fault(e)) {
    int dev = 0;
    (void)cudaGetDevice(&dev);
    const Device d{DeviceType::CUDA, dev};
    const std::string recent = recent_launches(d);
    m += str(". The device faulted running work launched before this call",
             recent.empty() ? std::string(".") : str("; the last launched on ", d.str(), ", newest first: ", recent),
             ". Every later call on ", d.str(), " fails too: the process must restart.");
  }
  throw Error(m);
}

// Makes `index` the calling thread's current CUDA device for a scope.
struct DeviceScope {
  explicit DeviceScope(int index) {
    check(cudaGetDevice(&saved), "cudaGetDevice");
    if (saved != index) check(cudaSetDevice(index), "cudaSetDevice");
  }
  ~DeviceScope() {
    int now = saved;
    if (cudaGetDevice(&now) == cudaSuccess && now != saved) (void)cudaSetDevice(saved);
  }
  int saved = 0;
};

// Raw memory: cudaMalloc and cudaFree on one device.
class CudaMemory final : public alloc::RawBackend {
 public:
  explicit CudaMemory(int index) : index_(index), name_(intern_name(index)) {}
  void* raw_malloc(size_t nbytes) override {
    check_fork(DeviceType::CUDA);
    DeviceScope d(index_);
    void* p = nullptr;
    const cudaError_t e = cudaMalloc(&p, nbytes);
    if (e == cudaErrorMemoryAllocation) {
      (void)cudaGetLastError();
      return nullptr;  // out of memory: the caching allocator frees its cache and retries, then raises
    }
    check(e, "cudaMalloc");
    return p;
  }
  // In a forked child (Note [Devices after fork]) the parent's memory and
  // events are not the child's to free or wait for: the calls the allocator
  // makes on its own return quietly there.
  void raw_free(void* ptr, size_t) override {
    if (in_bad_fork(DeviceType::CUDA)) return;
    DeviceScope d(index_);
    check(cudaFree(ptr), "cudaFree");
  }
  const char* name() const override { return name_; }

  // Events for the caching allocator's deferred frees (Note [Deferred frees]).
  void* record_event(alloc::StreamId stream) override;
  bool event_done(void* event) override {
    if (in_bad_fork(DeviceType::CUDA)) return true;
    const cudaError_t e = cudaEventQuery(static_cast<cudaEvent_t>(event));
    if (e == cudaErrorNotReady) {
      (void)cudaGetLastError();
      return false;
    }
    check(e, "cudaEventQuery");
    return true;
  }
  void release_event(void* event) override {
    if (!in_bad_fork(DeviceType::CUDA)) (void)cudaEventDestroy(static_cast<cudaEvent_t>(event));
  }
  void synchronize_device() override {
    if (in_bad_fork(DeviceType::CUDA)) return;
    DeviceScope d(index_);
    check(cudaDeviceSynchronize(), "cudaDeviceSynchronize");
  }
  size_t total_memory() override {
    DeviceScope d(index_);
    size_t free = 0, total = 0;
    return cudaMemGetInfo(&free, &total) == cudaSuccess ? total : 0;
  }
  size_t free_memory() override {
    DeviceScope d(index_);
    size_t free = 0, total = 0;
    return cudaMemGetInfo(&free, &total) == cudaSuccess ? free : 0;
  }

 private:
  static const char* intern_name(int index) { return trace::intern("cuda:" + std::to_string(index)); }
  int index_;
  const char* name_;
};

struct CudaEvent : EventImpl {
  CudaEvent(int index, bool timing) : index_(index) {
    DeviceScope d(index);
    check(cudaEventCreateWithFlags(&ev_, timing ? cudaEventDefault : cudaEventDisableTiming), "cudaEventCreate");
  }
  ~CudaEvent() override { (void)cudaEventDestroy(ev_); }
  void record(const Stream& s) override;
  void block(const Stream& s) override;
  bool query() override {
    if (!recorded) return true;
    const cudaError_t e = cudaEventQuery(ev_);
    if (e == cudaErrorNotReady) {
      (void)cudaGetLastError();
      return false;
    }
    check(e, "cudaEventQuery");
    return true;
  }
  void synchronize() override {
    if (recorded) check(cudaEventSynchronize(ev_), "cudaEventSynchronize");
  }
  double elapsed_ms(EventImpl& end) override {
    DESCENT_CHECK(recorded && end.recorded, Error, "Both events must be recorded before calculating elapsed time.");
    float ms = 0;
    check(cudaEventElapsedTime(&ms, ev_, static_cast<CudaEvent&>(end).ev_), "cudaEventElapsedTime");
    return ms;
  }
  int index_;
  cudaEvent_t ev_ = nullptr;
};

}  // namespace

class CudaRuntime final : public DeviceRuntime {
 public:
  DeviceType type() const override { return DeviceType::CUDA; }

  int device_count() override {
    std::call_once(probed_, [&] {
      int n = 0;
      const cudaError_t e = cudaGetDeviceCount(&n);
      if (e != cudaSuccess) {
        (void)cudaGetLastError();
        count_ = 0;
        reason_ = str("Found no NVIDIA driver on your system (cudaGetDeviceCount: ", cudaGetErrorString(e),
                      "). cuda needs an NVIDIA GPU and its driver; the simulated device sim:0 works everywhere.");
      } else {
        count_ = n;
        if (n == 0) reason_ = "No CUDA GPUs are available; the simulated device sim:0 works everywhere.";
        if (n > 0) poison_fork(DeviceType::CUDA);  // the driver is initialized from here on
      }
    });
    return count_;
  }
  std::string unavailable_reason() override {
    device_count();
    return reason_;
  }
  std::string device_name(int index) override {
    check_fork(DeviceType::CUDA);
    cudaDeviceProp p{};
    check(cudaGetDeviceProperties(&p, index), "cudaGetDeviceProperties");
    return p.name;
  }
  Limits limits(int index) override {
    check_fork(DeviceType::CUDA);
    const auto attr = [&](cudaDeviceAttr a) {
      int v = 0;
      check(cudaDeviceGetAttribute(&v, a, index), "cudaDeviceGetAttribute");
      return v;
    };
    Limits l;
    l.sms = attr(cudaDevAttrMultiProcessorCount);
    l.cc_major = attr(cudaDevAttrComputeCapabilityMajor);
    l.cc_minor = attr(cudaDevAttrComputeCapabilityMinor);
    l.bus_bits = attr(cudaDevAttrGlobalMemoryBusWidth);
    l.clock_hz = attr(cudaDevAttrClockRate) * 1e3;  // kHz
    l.memory_clock_hz = attr(cudaDevAttrMemoryClockRate) * 1e3;
    return l;
  }

  alloc::RawBackend& memory(int index) override {
    check_fork(DeviceType::CUDA);
    std::lock_guard<std::mutex> g(mu_);
    auto& m = memories_[index];
    if (!m) m = std::make_unique<CudaMemory>(index);
    return *m;
  }

  int64_t create_stream(int index) override {
    check_fork(DeviceType::CUDA);
    DeviceScope d(index);
    cudaStream_t s = nullptr;
    check(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking), "cudaStreamCreateWithFlags");
    std::lock_guard<std::mutex> g(mu_);
    const int64_t id = ++next_stream_;
    streams_[{index, id}] = s;
    return id;
  }
  // Every launch asks for its stream here (floors/launch/launch.cpp).
  void* native(const Stream& s) override {
    check_fork(DeviceType::CUDA);
    if (s.id == 0) return nullptr;  // the legacy default stream
    std::lock_guard<std::mutex> g(mu_);
    auto it = streams_.find({s.device.index, s.id});
    DESCENT_CHECK(it != streams_.end(), Error, s.device.str(), " has no stream ", s.id);
    return it->second;
  }
  void synchronize(const Stream& s) override {
    check_fork(DeviceType::CUDA);
    DeviceScope d(s.device.index);
    check(cudaStreamSynchronize(static_cast<cudaStream_t>(native(s))), "cudaStreamSynchronize");
  }
  bool query(const Stream& s) override {
    check_fork(DeviceType::CUDA);
    DeviceScope d(s.device.index);
    const cudaError_t e = cudaStreamQuery(static_cast<cudaStream_t>(native(s)));
    if (e == cudaErrorNotReady) {
      (void)cudaGetLastError();
      return false;
    }
    check(e, "cudaStreamQuery");
    return true;
  }
  // CUDA does not say how many launches wait on a stream; the trace shows the
  // queue from each launch's enqueue time and its kernel's device span instead.
  int64_t queue_depth(const Stream&) override { return -1; }
  void synchronize_device(int index) override {
    if (in_bad_fork(DeviceType::CUDA)) return;  // as sim:0's (Note [Devices after fork]): deleters call it
    DeviceScope d(index);
    check(cudaDeviceSynchronize(), "cudaDeviceSynchronize");
  }
  bool idle(int index) override {
    if (in_bad_fork(DeviceType::CUDA)) return true;  // nothing of the child's runs there
    std::vector<cudaStream_t> streams = {nullptr};   // the legacy default stream, then the device's own
    {
      std::lock_guard<std::mutex> g(mu_);
      for (const auto& [key, s] : streams_)
        if (key.first == index) streams.push_back(s);
    }
    DeviceScope d(index);
    for (cudaStream_t s : streams) {
      const cudaError_t e = cudaStreamQuery(s);
      if (e == cudaErrorNotReady) {
        (void)cudaGetLastError();
        return false;
      }
      check(e, "cudaStreamQuery");
    }
    return true;
  }
  std::unique_ptr<EventImpl> create_event(int index, bool timing) override {
    check_fork(DeviceType::CUDA);
    return std::make_unique<CudaEvent>(index, timing);
  }
  void copy(void* dst, const void* src, size_t nbytes, CopyKind kind, const Stream& s, bool pinned) override {
    if (nbytes == 0) return;
    check_fork(DeviceType::CUDA);
    static constexpr cudaMemcpyKind kKinds[] = {cudaMemcpyHostToDevice, cudaMemcpyDeviceToHost,
                                                cudaMemcpyDeviceToDevice};
    DeviceScope d(s.device.index);
    trace::ScopedSpan span(trace::Floor::Streams, "cudaMemcpyAsync");
    span.arg("bytes", int64_t(nbytes));
    span.arg("stream", s.id);
    span.arg("pinned", pinned);
    const auto stream = static_cast<cudaStream_t>(native(s));
    const uint64_t correlation = span.active() ? trace::cupti::push_correlation(s.id) : 0;  // joins CUPTI's copy record
    span.arg("correlation", int64_t(correlation));
    const cudaError_t e = cudaMemcpyAsync(dst, src, nbytes, kKinds[int(kind)], stream);
    if (correlation != 0) trace::cupti::pop_correlation();
    check(e, "cudaMemcpyAsync");
  }

 private:
  std::once_flag probed_;
  int count_ = 0;
  std::string reason_;
  std::mutex mu_;
  std::map<int, std::unique_ptr<CudaMemory>> memories_;
  std::map<std::pair<int, int64_t>, cudaStream_t> streams_;
  int64_t next_stream_ = 0;
};

namespace {
CudaRuntime& cuda_runtime_instance() {
  static CudaRuntime* rt = new CudaRuntime;  // never destroyed: CUDA may be torn down first at exit
  return *rt;
}
}  // namespace

void* CudaMemory::record_event(alloc::StreamId stream) {
  if (in_bad_fork(DeviceType::CUDA)) return nullptr;  // the allocator takes a null event as passed
  DeviceScope d(index_);
  cudaEvent_t ev = nullptr;
  check(cudaEventCreateWithFlags(&ev, cudaEventDisableTiming), "cudaEventCreateWithFlags");
  check(cudaEventRecord(ev, static_cast<cudaStream_t>(
                                cuda_runtime_instance().native(Stream{Device{DeviceType::CUDA, index_}, stream}))),
        "cudaEventRecord");
  return ev;
}

void CudaEvent::record(const Stream& s) {
  DeviceScope d(s.device.index);
  check(cudaEventRecord(ev_, static_cast<cudaStream_t>(cuda_runtime_instance().native(s))), "cudaEventRecord");
  recorded = true;
  stream = s;
}
void CudaEvent::block(const Stream& s) {
  if (!recorded) return;
  DeviceScope d(s.device.index);
  check(cudaStreamWaitEvent(static_cast<cudaStream_t>(cuda_runtime_instance().native(s)), ev_, 0),
        "cudaStreamWaitEvent");
}

DeviceRuntime& cuda_runtime() { return cuda_runtime_instance(); }

#else  // no CUDA toolkit at build time

namespace {
class NoCudaRuntime final : public DeviceRuntime {
 public:
  DeviceType type() const override { return DeviceType::CUDA; }
  int device_count() override { return 0; }
  std::string unavailable_reason() override {
    return "descent was built without CUDA (configured with DESCENT_CUDA=OFF, or no CUDA toolkit was found); the "
           "simulated device sim:0 works everywhere.";
  }
  [[noreturn]] void fail() { throw Error(unavailable_reason()); }
  std::string device_name(int) override { fail(); }
  alloc::RawBackend& memory(int) override { fail(); }
  int64_t create_stream(int) override { fail(); }
  void* native(const Stream&) override { fail(); }
  void synchronize(const Stream&) override { fail(); }
  bool query(const Stream&) override { fail(); }
  int64_t queue_depth(const Stream&) override { fail(); }
  void synchronize_device(int) override { fail(); }
  bool idle(int) override { fail(); }
  std::unique_ptr<EventImpl> create_event(int, bool) override { fail(); }
  void copy(void*, const void*, size_t, CopyKind, const Stream&, bool) override { fail(); }
};
}  // namespace

DeviceRuntime& cuda_runtime() {
  static NoCudaRuntime rt;
  return rt;
}

#endif

}  // namespace descent::streams
