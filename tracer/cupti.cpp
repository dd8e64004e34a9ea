// The device's own clock on CUDA: CUPTI's activity records, joined to launches.
//
// [SECTION] Without CUDA
// [SECTION] State
// [SECTION] The two clocks
// [SECTION] CUPTI's buffers
// [SECTION] From records to device spans
// [SECTION] Start, collect, stop
// [SECTION] Correlation around a launch
//
// Note [Device activity from CUPTI]
// ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
// CUPTI (the CUDA Profiling Tools Interface, libcupti) can record what the
// GPU did: for every kernel, copy and memset, a record with its start and end
// on CUPTI's clock in ns, its device, stream, grid and block, and a
// correlation id that it also gives the runtime call (cudaLaunchKernel) that
// caused it. PyTorch's profiler (Kineto) reads the same records. descent:
//   - at trace::start(), when a CUDA device is present, enables the activity
//     kinds CONCURRENT_KERNEL, MEMCPY, MEMSET, RUNTIME and
//     EXTERNAL_CORRELATION. CUPTI asks for buffers to fill (buffer_requested)
//     and hands them back full (buffer_completed, maybe on its own thread);
//     their records are parsed then and kept here.
//   - around each launch, the launch floor pushes an id of descent's own
//     (next_correlation(), the floor-8 span's "correlation") on CUPTI's
//     per-thread stack of external ids (kind CUSTOM0). CUPTI writes, before
//     the runtime call's record, an EXTERNAL_CORRELATION record pairing its
//     correlation id with ours: the map from one to the other.
//   - CUPTI's clock is not now_ns()'s. start() reads both clocks side by
//     side (cuptiGetTimestamp between two now_ns()) and each collection reads
//     them again; a device time is carried over by the line through the two
//     readings (an offset, and a rate when the readings are 100 ms or more
//     apart, for clocks that drift), as Kineto converts CUPTI's times to its
//     own.
//   - at stop() (and snapshot()), cuptiActivityFlushAll hands back the
//     buffers; each kernel, copy and memset becomes a device span
//     (record_device_span, Note [Device spans] in tracer.h) carrying our id,
//     which the tracer joins by an "ac2g" flow to the launch span. A record
//     whose EXTERNAL_CORRELATION has not arrived yet waits for the next
//     collection; at stop() it goes in without a launch. Records CUPTI could
//     not time (work not finished at stop: start and end 0) are counted, not
//     shown.
// Where CUPTI cannot be used (cuptiActivityEnable refused, e.g.
// CUPTI_ERROR_INSUFFICIENT_PRIVILEGES when the driver restricts profiling to
// administrators), nothing is enabled, launches go on untimed, and status()
// says why: it goes in the trace's metadata "device.timing".
// DESCENT_CUPTI=0 switches the collector off.
#include "tracer/cupti.h"

#include <cstdint>
#include <cstdlib>
#include <string>
#include <string_view>

#include "tracer/tracer.h"

#if DESCENT_HAVE_CUDA
#include <cuda_runtime_api.h>
#include <cupti.h>
#include <cxxabi.h>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <memory>
#include <mutex>
#include <pthread.h>
#include <unordered_map>
#include <vector>

#include "floors/core/log.h"
#endif

namespace descent::trace::cupti {

// [SECTION] Without CUDA -----------------------------------------------------------

#if !DESCENT_HAVE_CUDA

bool active() { return false; }
uint64_t push_correlation(int64_t) { return 0; }
void pop_correlation() {}
std::string status() { return "unavailable: descent was built without the CUDA toolkit"; }
namespace detail {
void on_start() {}
void on_collect(bool) {}
void on_stop() {}
std::string timing_note() { return ""; }
}  // namespace detail

#else

namespace {

// [SECTION] State ------------------------------------------------------------------

constexpr size_t kBufferBytes = size_t{4} << 20;     // one buffer handed to CUPTI: 4 MiB
constexpr size_t kRecordAlignment = 8;               // CUPTI's ACTIVITY_RECORD_ALIGNMENT
constexpr int64_t kMinRateBaselineNs = 100'000'000;  // fit a clock rate over 100 ms or more
constexpr int kClockReadings = 7;                    // keep the tightest of these
constexpr const char* kClockName = "CUPTI, converted to host";
constexpr const char* kActiveStatus = "cupti (kernels, memcpy, memset, runtime)";

constexpr CUpti_ActivityKind kKinds[] = {
    CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL,
    CUPTI_ACTIVITY_KIND_MEMCPY,
    CUPTI_ACTIVITY_KIND_MEMSET,
    CUPTI_ACTIVITY_KIND_RUNTIME,
    CUPTI_ACTIVITY_KIND_EXTERNAL_CORRELATION,  // needs an API kind (RUNTIME) to precede
};
constexpr CUpti_ExternalCorrelationKind kExternalKind = CUPTI_EXTERNAL_CORRELATION_KIND_CUSTOM0;

// One kernel, copy or memset, as CUPTI recorded it (times on CUPTI's clock).
struct DeviceRecord {
  DeviceWork work = DeviceWork::Kernel;
  std::string name;
  uint32_t device = 0;
  uint32_t stream = 0;
  uint64_t start = 0, end = 0;
  uint32_t correlation = 0;          // CUPTI's
  uint32_t runtime_correlation = 0;  // copies: the runtime call's, when CUPTI gives it apart
  uint32_t grid[3] = {0, 0, 0}, block[3] = {0, 0, 0};
  int64_t shared_bytes = -1;
  int64_t bytes = -1;
};

// Both clocks read at one moment: now_ns() and cuptiGetTimestamp().
struct ClockPair {
  int64_t host_ns = 0;
  uint64_t cupti_ns = 0;
};

struct State {
  std::mutex mutex;         // guards everything below
  bool registered = false;  // buffer callbacks given to CUPTI (once per process)
  bool tried = false;       // this recording tried CUPTI (timing_note)
  std::string status = "unavailable: tracing has not started";
  ClockPair base;                                   // at start()
  std::vector<DeviceRecord> records;                // parsed, not yet made spans
  std::unordered_map<uint32_t, uint64_t> external;  // CUPTI correlation -> our id
  std::unordered_map<uint64_t, int64_t> stream_of;  // our id -> descent's stream id (push_correlation)
  uint64_t untimed = 0;                             // records without times (not finished)
  uint64_t dropped = 0;                             // records CUPTI dropped (buffers full)
};
std::atomic<bool> g_active{false};
std::atomic<bool> g_registered{false};  // CUPTI has been set up in this process: pops may reach it
std::atomic<bool> g_cuda_asked{false};  // this process has called into CUDA (device_present)
std::atomic<bool> g_forked{false};      // ...and this is a child forked after it did

// Note [CUPTI after fork]
// ~~~~~~~~~~~~~~~~~~~~~~~
// A recording asks CUDA whether a device is present, which initializes the
// driver, and may leave CUPTI's buffer thread running. A child forked after
// that has neither: CUDA refuses a forked child (Note [Devices after fork],
// floors/streams/streams.cpp), and a recording that called CUPTI there never
// ended on the GPU machine (test_fork.py's child of a traced parent).
// So the child handler below marks the child and gives it a fresh State (the
// parent's mutex may have been held by CUPTI's thread at the fork, and that
// thread is gone): a recording in the child never calls CUPTI, and says why
// in its device timing note, as PyTorch's profiler in such a child records
// no CUDA activity.
State*& state_slot() {
  static State* s = [] {
    pthread_atfork(nullptr, nullptr, [] {
      if (!g_cuda_asked.load(std::memory_order_relaxed)) return;  // a parent that never asked: the child is fresh
      g_forked.store(true, std::memory_order_relaxed);
      g_active.store(false, std::memory_order_relaxed);
      g_registered.store(false, std::memory_order_relaxed);
      state_slot() = new State;  // the parent's is left as it was, never touched again
    });
    return new State;  // never destroyed: CUPTI's thread may call back at exit
  }();
  return s;
}
State& state() { return *state_slot(); }

std::string result_text(CUptiResult r) {
  const char* text = nullptr;
  if (cuptiGetResultString(r, &text) != CUPTI_SUCCESS || text == nullptr) return "CUPTI error " + std::to_string(r);
  return text;
}

// [SECTION] The two clocks -----------------------------------------------------------

// The tightest of a few readings: CUPTI's time between two of now_ns()'s,
// taken as read at their midpoint.
ClockPair read_clocks() {
  ClockPair best;
  int64_t best_gap = INT64_MAX;
  for (int i = 0; i < kClockReadings; ++i) {
    uint64_t c = 0;
    const int64_t t0 = now_ns();
    if (cuptiGetTimestamp(&c) != CUPTI_SUCCESS) continue;
    const int64_t t1 = now_ns();
    if (t1 - t0 < best_gap) {
      best_gap = t1 - t0;
      best = {t0 + (t1 - t0) / 2, c};
    }
  }
  return best;
}

// Carries CUPTI times over to now_ns()'s clock along the line through two readings.
struct ClockMap {
  ClockPair base;
  double rate = 1.0;  // host ns per CUPTI ns
  ClockMap(const ClockPair& a, const ClockPair& b) : base(a) {
    const int64_t host_span = b.host_ns - a.host_ns;
    const double cupti_span = static_cast<double>(b.cupti_ns) - static_cast<double>(a.cupti_ns);
    if (host_span >= kMinRateBaselineNs && cupti_span > 0) rate = static_cast<double>(host_span) / cupti_span;
  }
  int64_t host(uint64_t cupti_ns) const {
    const double delta = static_cast<double>(cupti_ns) - static_cast<double>(base.cupti_ns);
    return base.host_ns + std::llround(delta * rate);
  }
};

// [SECTION] CUPTI's buffers --------------------------------------------------------------

void CUPTIAPI buffer_requested(uint8_t** buffer, size_t* size, size_t* max_records) {
  *buffer = static_cast<uint8_t*>(std::aligned_alloc(kRecordAlignment, kBufferBytes));
  *size = *buffer ? kBufferBytes : 0;  // no buffer: CUPTI drops records and counts them
  *max_records = 0;                    // as many as fit
}

// A kernel's name as people read it: "add_kernel(float*, float const*, int)".
std::string demangled(const char* name) {
  if (name == nullptr) return "(unnamed kernel)";
  int status = 0;
  std::unique_ptr<char, void (*)(void*)> d(abi::__cxa_demangle(name, nullptr, nullptr, &status), std::free);
  return status == 0 && d ? std::string(d.get()) : std::string(name);
}

// Kineto's words for copy directions and memory kinds, so names match PyTorch's traces.
const char* copy_direction(uint8_t kind) {
  switch (kind) {
    case CUPTI_ACTIVITY_MEMCPY_KIND_HTOD:
      return "HtoD";
    case CUPTI_ACTIVITY_MEMCPY_KIND_DTOH:
      return "DtoH";
    case CUPTI_ACTIVITY_MEMCPY_KIND_HTOA:
      return "HtoA";
    case CUPTI_ACTIVITY_MEMCPY_KIND_ATOH:
      return "AtoH";
    case CUPTI_ACTIVITY_MEMCPY_KIND_ATOA:
      return "AtoA";
    case CUPTI_ACTIVITY_MEMCPY_KIND_ATOD:
      return "AtoD";
    case CUPTI_ACTIVITY_MEMCPY_KIND_DTOA:
      return "DtoA";
    case CUPTI_ACTIVITY_MEMCPY_KIND_DTOD:
      return "DtoD";
    case CUPTI_ACTIVITY_MEMCPY_KIND_HTOH:
      return "HtoH";
    case CUPTI_ACTIVITY_MEMCPY_KIND_PTOP:
      return "PtoP";
    default:
      return "Unknown";
  }
}
const char* memory_kind(unsigned kind) {
  switch (kind) {
    case CUPTI_ACTIVITY_MEMORY_KIND_PAGEABLE:
      return "Pageable";
    case CUPTI_ACTIVITY_MEMORY_KIND_PINNED:
      return "Pinned";
    case CUPTI_ACTIVITY_MEMORY_KIND_DEVICE:
      return "Device";
    case CUPTI_ACTIVITY_MEMORY_KIND_ARRAY:
      return "Array";
    case CUPTI_ACTIVITY_MEMORY_KIND_MANAGED:
      return "Managed";
    case CUPTI_ACTIVITY_MEMORY_KIND_DEVICE_STATIC:
      return "Device Static";
    case CUPTI_ACTIVITY_MEMORY_KIND_MANAGED_STATIC:
      return "Managed Static";
    default:
      return "Unknown";
  }
}

// Parses one record into `s` (caller holds the lock).
void take_record(State& s, const CUpti_Activity* record) {
  switch (record->kind) {
    case CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL:
    case CUPTI_ACTIVITY_KIND_KERNEL: {
      const auto* k = reinterpret_cast<const CUpti_ActivityKernel10*>(record);
      DeviceRecord r;
      r.name = demangled(k->name);  // CUPTI's string is shared between records: copied
      r.device = k->deviceId;
      r.stream = k->streamId;
      r.start = k->start;
      r.end = k->end;
      r.correlation = k->correlationId;
      r.grid[0] = static_cast<uint32_t>(k->gridX), r.grid[1] = static_cast<uint32_t>(k->gridY);
      r.grid[2] = static_cast<uint32_t>(k->gridZ);
      r.block[0] = static_cast<uint32_t>(k->blockX), r.block[1] = static_cast<uint32_t>(k->blockY);
      r.block[2] = static_cast<uint32_t>(k->blockZ);
      r.shared_bytes = int64_t{k->staticSharedMemory} + k->dynamicSharedMemory;
      s.records.push_back(std::move(r));
      break;
    }
    case CUPTI_ACTIVITY_KIND_MEMCPY: {
      const auto* m = reinterpret_cast<const CUpti_ActivityMemcpy6*>(record);
      DeviceRecord r;
      r.work = DeviceWork::Memcpy;
      r.name = std::string("Memcpy ") + copy_direction(m->copyKind) + " (" + memory_kind(m->srcKind) + " -> " +
               memory_kind(m->dstKind) + ")";
      r.device = m->deviceId;
      r.stream = m->streamId;
      r.start = m->start;
      r.end = m->end;
      r.correlation = m->correlationId;
      r.runtime_correlation = m->runtimeCorrelationId;
      r.bytes = static_cast<int64_t>(m->bytes);
      s.records.push_back(std::move(r));
      break;
    }
    case CUPTI_ACTIVITY_KIND_MEMSET: {
      const auto* m = reinterpret_cast<const CUpti_ActivityMemset4*>(record);
      DeviceRecord r;
      r.work = DeviceWork::Memset;
      r.name = std::string("Memset (") + memory_kind(m->memoryKind) + ")";
      r.device = m->deviceId;
      r.stream = m->streamId;
      r.start = m->start;
      r.end = m->end;
      r.correlation = m->correlationId;
      r.bytes = static_cast<int64_t>(m->bytes);
      s.records.push_back(std::move(r));
      break;
    }
    case CUPTI_ACTIVITY_KIND_EXTERNAL_CORRELATION: {
      const auto* e = reinterpret_cast<const CUpti_ActivityExternalCorrelation*>(record);
      if (e->externalKind == kExternalKind) s.external[e->correlationId] = e->externalId;
      break;
    }
    default:  // RUNTIME: the launch span on floor 8 already times the call on the host
      break;
  }
}

void CUPTIAPI buffer_completed(CUcontext context, uint32_t stream, uint8_t* buffer, size_t size, size_t valid) {
  (void)size;
  State& s = state();
  {
    std::lock_guard lock(s.mutex);
    CUpti_Activity* record = nullptr;
    try {
      while (cuptiActivityGetNextRecord(buffer, valid, &record) == CUPTI_SUCCESS) take_record(s, record);
    } catch (const std::bad_alloc&) {  // the rest of the buffer is lost, never the program
    }
    size_t dropped = 0;
    if (cuptiActivityGetNumDroppedRecords(context, stream, &dropped) == CUPTI_SUCCESS) s.dropped += dropped;
  }
  std::free(buffer);
}

// [SECTION] From records to device spans ---------------------------------------------------

// Records the device spans of `s.records` whose launch is known (all of them
// when `final`), and keeps the others. Caller holds the lock.
void emit(State& s, bool final) {
  const ClockMap clock(s.base, read_clocks());
  std::vector<DeviceRecord> waiting;
  for (DeviceRecord& r : s.records) {
    if (r.start == 0 || r.end == 0) {  // CUPTI could not time it (not finished when flushed)
      if (final)
        ++s.untimed;
      else
        waiting.push_back(std::move(r));
      continue;
    }
    // The EXTERNAL_CORRELATION records name runtime calls (the API kind
    // enabled): a copy's runtime id first, when CUPTI gives it apart.
    auto ext = r.runtime_correlation != 0 ? s.external.find(r.runtime_correlation) : s.external.end();
    if (ext == s.external.end()) ext = s.external.find(r.correlation);
    if (ext == s.external.end() && !final) {  // its EXTERNAL_CORRELATION may be in a later buffer
      waiting.push_back(std::move(r));
      continue;
    }
    const std::string device = "cuda:" + std::to_string(r.device);
    DeviceSpan d;
    d.name = r.name;
    d.device = device;
    d.stream = r.stream;
    d.start_ns = clock.host(r.start);
    d.end_ns = clock.host(r.end);
    d.correlation = ext != s.external.end() ? ext->second : 0;
    if (d.correlation != 0) {  // descent's number for the stream, as the launch span names it
      const auto st = s.stream_of.find(d.correlation);
      if (st != s.stream_of.end()) d.stream = st->second;
    }
    d.work = r.work;
    std::copy(std::begin(r.grid), std::end(r.grid), d.grid);
    std::copy(std::begin(r.block), std::end(r.block), d.block);
    d.shared_bytes = r.shared_bytes;
    d.bytes = r.bytes;
    d.clock = kClockName;
    record_device_span(d);  // takes the device list's lock, never this one
  }
  s.records = std::move(waiting);
}

void disable_kinds() {
  for (CUpti_ActivityKind k : kKinds) cuptiActivityDisable(k);
}

// Whether a CUDA device is present; else why not, in `why`. Asked once per process.
bool device_present(std::string& why) {
  static const std::string reason = [] {
    g_cuda_asked.store(true, std::memory_order_relaxed);
    int n = 0;
    const cudaError_t e = cudaGetDeviceCount(&n);
    if (e != cudaSuccess) {
      cudaGetLastError();  // clear it, so no later CUDA call reports it
      return std::string("no CUDA device (cudaGetDeviceCount: ") + cudaGetErrorString(e) + ")";
    }
    return n > 0 ? std::string() : std::string("no CUDA device");
  }();
  why = reason;
  return reason.empty();
}

}  // namespace

// [SECTION] Start, collect, stop ------------------------------------------------------

bool active() { return g_active.load(std::memory_order_relaxed); }

std::string status() {
  State& s = state();
  std::lock_guard lock(s.mutex);
  return s.status;
}

namespace detail {

void on_start() {
  State& s = state();
  std::lock_guard lock(s.mutex);
  g_active.store(false);
  s.tried = false;
  s.records.clear();
  s.external.clear();
  s.stream_of.clear();
  s.untimed = s.dropped = 0;
  if (const char* env = std::getenv("DESCENT_CUPTI"); env != nullptr && std::string_view(env) == "0") {
    s.status = "off (DESCENT_CUPTI=0)";
    return;
  }
  if (g_forked.load(std::memory_order_relaxed)) {  // Note [CUPTI after fork]
    s.status = "unavailable: this process was forked after it initialized CUDA (Note [CUPTI after fork])";
    return;
  }
  std::string why;
  if (!device_present(why)) {
    s.status = "unavailable: " + why;
    return;
  }
  s.tried = true;
  if (!s.registered) {
    const CUptiResult r = cuptiActivityRegisterCallbacks(buffer_requested, buffer_completed);
    if (r != CUPTI_SUCCESS) {
      s.status = "unavailable: cuptiActivityRegisterCallbacks failed: " + result_text(r);
      return;
    }
    s.registered = true;
    g_registered.store(true);
  }
  for (CUpti_ActivityKind k : kKinds) {
    const CUptiResult r = cuptiActivityEnable(k);
    if (r == CUPTI_SUCCESS) continue;
    disable_kinds();
    s.status =
        "unavailable: cuptiActivityEnable(" + std::to_string(static_cast<int>(k)) + ") failed: " + result_text(r);
    if (r == CUPTI_ERROR_INSUFFICIENT_PRIVILEGES) {
      s.status += " (the driver lets only administrators profile: NVreg_RestrictProfilingToAdminUsers=0 lifts it)";
    }
    log::warn("device timing off: ", s.status);
    return;
  }
  s.base = read_clocks();
  s.status = kActiveStatus;
  g_active.store(true);
}

void on_collect(bool final) {
  if (!active()) return;
  // Not under the lock: CUPTI calls buffer_completed from inside, which takes it.
  const CUptiResult r = cuptiActivityFlushAll(final ? CUPTI_ACTIVITY_FLAG_FLUSH_FORCED : 0);
  State& s = state();
  std::lock_guard lock(s.mutex);
  if (r != CUPTI_SUCCESS) log::warn("cuptiActivityFlushAll failed: ", result_text(r));
  emit(s, final);
  if (final && s.status == kActiveStatus && (s.untimed > 0 || s.dropped > 0)) {
    s.status += "; " + std::to_string(s.untimed) + " records not finished at stop, " + std::to_string(s.dropped) +
                " dropped by CUPTI";
  }
}

void on_stop() {
  if (!g_active.exchange(false)) return;
  disable_kinds();
  State& s = state();
  std::lock_guard lock(s.mutex);
  s.records.clear();
  s.external.clear();
  s.stream_of.clear();
}

std::string timing_note() {
  State& s = state();
  std::lock_guard lock(s.mutex);
  return s.tried ? s.status : std::string();
}

}  // namespace detail

// [SECTION] Correlation around a launch --------------------------------------------------

uint64_t push_correlation(int64_t stream) {
  if (!active()) return 0;
  const uint64_t id = next_correlation();
  {
    State& st = state();
    std::lock_guard lock(st.mutex);
    st.stream_of[id] = stream;
  }
  return cuptiActivityPushExternalCorrelationId(kExternalKind, id) == CUPTI_SUCCESS ? id : 0;
}

void pop_correlation() {
  if (!g_registered.load(std::memory_order_relaxed)) return;  // never pushed: CUPTI stays unloaded
  uint64_t last = 0;
  cuptiActivityPopExternalCorrelationId(kExternalKind, &last);  // CUPTI_ERROR_QUEUE_EMPTY when none was pushed
}

#endif  // DESCENT_HAVE_CUDA

}  // namespace descent::trace::cupti
