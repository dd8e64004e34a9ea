// descent tracer: the recording side (per-thread buffers, start, stop).
//
// [SECTION] Constants and globals
// [SECTION] Clock
// [SECTION] Thread buffers
// [SECTION] Hot path: begin, end, args
// [SECTION] Calibration
// [SECTION] The span limit
// [SECTION] Flows
// [SECTION] start and stop
//
// Interning, floor names and the table of source sites are in sites.cpp; the
// layout of a thread's buffer in thread_buffer.h; the list of flows between
// threads in flows.cpp.
// See Note [Tracer hot path] in tracer.h. Each thread appends to its own
// buffer without locks. start() and stop() never touch another thread's
// private state: a buffer is reset lazily by its owner, the first time it
// records after a start() (the global epoch tells it that its contents are
// stale). stop() reads only what an owner has published with a release store,
// so it is safe even while worker threads still record.
#include "tracer/tracer.h"

#include <algorithm>
#include <array>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <cstdio>
#include <functional>
#include <memory>
#include <mutex>
#include <span>
#include <stdexcept>
#include <string>
#include <tuple>
#include <thread>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "floors/core/log.h"
#include "tracer/cupti.h"
#include "tracer/device_spans.h"
#include "tracer/flows.h"
#include "tracer/thread_buffer.h"
#include "tracer/trace.h"

#if defined(__x86_64__)
#include <cpuid.h>
#include <x86intrin.h>
#endif

namespace descent::trace {

using namespace detail;  // thread_buffer.h

// [SECTION] Constants and globals ---------------------------------------------

std::atomic<bool> g_enabled{false};

namespace {

constexpr auto kClockCalibrationTime = std::chrono::milliseconds(3);
constexpr int kCostPairsPerRep = 16000;  // fits one chunk
constexpr int kCostReps = 5;             // median of these

// Bumped by start() and stop(). A buffer whose epoch differs holds an old
// recording; its owner resets it before recording again. Read with acquire
// order where the reader then trusts what start() set up (the clock, the
// flow list); bumped with sequentially consistent read-modify-writes.
std::atomic<uint64_t> g_epoch{0};

// [SECTION] Clock --------------------------------------------------------------

inline int64_t read_ns() {
  using std::chrono::steady_clock;
  return std::chrono::duration_cast<std::chrono::nanoseconds>(steady_clock::now().time_since_epoch()).count();
}

// Note [The tracer's clock] in tracer.h. Chosen once, by the first start();
// until then (and where the counter is not invariant) ticks are steady_clock
// ns. Relaxed: it changes only before the first recording starts.
std::atomic<bool> g_tsc{false};
constexpr const char* kTscClockName = "tsc (invariant)";
constexpr const char* kSteadyClockName = "steady_clock";
constexpr unsigned kCpuidPowerLeaf = 0x80000007;  // advanced power management
constexpr unsigned kInvariantTscBit = 1u << 8;    // its EDX bit 8: the TSC is invariant

inline bool ticks_are_ns() { return !g_tsc.load(std::memory_order_relaxed); }

inline uint64_t read_ticks() {
#if defined(__x86_64__)
  if (g_tsc.load(std::memory_order_relaxed)) [[likely]]
    return __rdtsc();  // ~20 cycles, not serializing
#endif
  return static_cast<uint64_t>(read_ns());
}

// Whether the CPU promises an invariant TSC (false off x86-64, and when
// DESCENT_TRACER_CLOCK=steady_clock asks for the fallback).
bool invariant_tsc() {
  const char* env = std::getenv("DESCENT_TRACER_CLOCK");
  if (env != nullptr && std::string_view(env) == kSteadyClockName) return false;
#if defined(__x86_64__)
  unsigned eax = 0, ebx = 0, ecx = 0, edx = 0;
  if (__get_cpuid_max(0x80000000, nullptr) < kCpuidPowerLeaf) return false;
  if (!__get_cpuid(kCpuidPowerLeaf, &eax, &ebx, &ecx, &edx)) return false;
  return (edx & kInvariantTscBit) != 0;
#else
  return false;
#endif
}

// Picks the clock, once per process (caller holds control_mutex()).
void choose_clock() {
  static const bool tsc = [] {
    const bool v = invariant_tsc();
    if (!v) log::debug("tracer clock: steady_clock (no invariant TSC, or DESCENT_TRACER_CLOCK=steady_clock)");
    return v;
  }();
  g_tsc.store(tsc, std::memory_order_relaxed);
}

const char* clock_name() { return ticks_are_ns() ? kSteadyClockName : kTscClockName; }

// The two clocks read at (nearly) the same instant.
struct ClockPair {
  uint64_t ticks = 0;
  int64_t ns = 0;
};

ClockPair read_pair() {
  ClockPair best;
  uint64_t best_gap = UINT64_MAX;
  for (int attempt = 0; attempt < 5; ++attempt) {  // keep the tightest bracket
    const uint64_t t0 = read_ticks();
    const int64_t ns = read_ns();
    const uint64_t t1 = read_ticks();
    if (t1 - t0 < best_gap) {
      best_gap = t1 - t0;
      best = {t0 + (t1 - t0) / 2, ns};
    }
  }
  return best;
}

double ns_per_tick(const ClockPair& a, const ClockPair& b) {
  if (ticks_are_ns() || b.ticks <= a.ticks) return 1.0;
  return static_cast<double>(b.ns - a.ns) / static_cast<double>(b.ticks - a.ticks);
}

// [SECTION] Thread buffers -----------------------------------------------------

// A buffer's layout, ThreadBuffer, is thread_buffer.h's; here, who owns which.

struct Registry {
  std::mutex mutex;
  std::vector<std::shared_ptr<ThreadBuffer>> buffers;  // registration order
};
Registry& registry() {
  static Registry* r = new Registry;  // never destroyed: threads may outlive statics
  return *r;
}
std::mutex& control_mutex() {  // serializes start() and stop()
  static std::mutex* m = new std::mutex;
  return *m;
}

// The initial-exec TLS model makes tl_buffer a single %fs-relative load even
// inside the shared library (global-dynamic calls __tls_get_addr: about 5 ns
// more per span). It uses a few bytes of glibc's static TLS surplus when the
// library is dlopen'ed (Python); build with
// -DDESCENT_TRACER_TLS_MODEL='"global-dynamic"' if that surplus ever runs out.
#ifndef DESCENT_TRACER_TLS_MODEL
#define DESCENT_TRACER_TLS_MODEL "initial-exec"
#endif
__attribute__((tls_model(DESCENT_TRACER_TLS_MODEL))) thread_local ThreadBuffer* tl_buffer = nullptr;
__attribute__((tls_model(DESCENT_TRACER_TLS_MODEL))) thread_local bool tl_exited = false;

// Marks the buffer when its thread ends; the registry keeps it until the next start().
struct ThreadExitGuard {
  std::shared_ptr<ThreadBuffer> buffer;
  ~ThreadExitGuard() {
    if (buffer) buffer->exited.store(true);
    tl_buffer = nullptr;
    tl_exited = true;  // spans from later thread_local destructors are dropped
  }
};

ThreadBuffer* register_thread() {
  auto b = std::make_shared<ThreadBuffer>();
  thread_local ThreadExitGuard guard;
  guard.buffer = b;
  {
    std::lock_guard lock(registry().mutex);
    registry().buffers.push_back(b);
  }
  tl_buffer = b.get();
  return b.get();
}

// Empties the buffer for recording `epoch`, keeping a few chunks for reuse.
void reset_buffer(ThreadBuffer* b, uint64_t epoch) {
  {
    std::lock_guard lock(b->mutex);
    if (b->chunks.size() > kChunksKeptOnReset) b->chunks.resize(kChunksKeptOnReset);
    if (b->chunks.empty()) b->chunks.push_back(std::make_unique_for_overwrite<SpanRecord[]>(kChunkRecords));
    if (b->arg_chunks.size() > kArgChunksKeptOnReset) b->arg_chunks.resize(kArgChunksKeptOnReset);
    b->published_count.store(0, std::memory_order_relaxed);
    b->published_args.store(0, std::memory_order_relaxed);
    b->published_epoch.store(epoch,
                             std::memory_order_release);  // after the count: recorded_spans never sums a stale one
    b->dropped = 0;
  }
  b->epoch = epoch;
  b->tag = handle_tag(epoch);
  b->cur = b->chunks[0].get();
  b->used = b->count = b->depth = 0;
  b->arg_cur = nullptr;
  b->arg_used = kArgChunkRecords;  // the first argument takes a chunk
  b->arg_count = 0;
}

// Chunk `index` of a buffer's span or argument chunks, allocated when it is
// the next one and none is kept; nullptr when memory for it cannot be had.
// Caller holds the buffer's mutex.
template <typename Record>
Record* chunk_at(std::vector<std::unique_ptr<Record[]>>& chunks, size_t index, uint32_t records) {
  if (index == chunks.size()) {
    try {
      chunks.push_back(std::make_unique_for_overwrite<Record[]>(records));
    } catch (const std::bad_alloc&) {
      return nullptr;
    }
  }
  return chunks[index].get();
}

// Moves to the next chunk. False, counting the span as dropped, when the
// buffer holds span_limit() spans already or memory for another chunk cannot
// be had (Note [Dropped spans]).
bool next_chunk(ThreadBuffer* b) {
  std::lock_guard lock(b->mutex);
  const bool full = b->count + kChunkRecords > span_limit();
  SpanRecord* next = full ? nullptr : chunk_at(b->chunks, b->count >> kChunkShift, kChunkRecords);
  if (next == nullptr) {
    ++b->dropped;
    return false;
  }
  b->cur = next;
  b->used = 0;
  return true;
}

// Moves to the next argument chunk; false (the argument is not recorded) when
// memory for it cannot be had. A buffer holds at most kMaxArgs arguments per
// span, so the span limit bounds arguments too.
bool next_arg_chunk(ThreadBuffer* b) {
  std::lock_guard lock(b->mutex);
  ArgRecord* next = chunk_at(b->arg_chunks, b->arg_count >> kArgChunkShift, kArgChunkRecords);
  if (next == nullptr) return false;
  b->arg_cur = next;
  b->arg_used = 0;
  return true;
}

// Slow path: the calling thread's buffer made ready for one more record and
// one more open span; nullptr when the span must be dropped.
ThreadBuffer* writable_buffer() {
  ThreadBuffer* b = tl_buffer;
  if (b == nullptr) {
    if (tl_exited) return nullptr;
    b = register_thread();
  }
  const uint64_t epoch = g_epoch.load(std::memory_order_acquire);  // orders against start()/stop()
  if (b->epoch != epoch) reset_buffer(b, epoch);
  if (b->used == kChunkRecords && !next_chunk(b)) return nullptr;
  if (b->depth == b->open.size()) b->open.resize(b->open.size() * 2);
  return b;
}

// Fills the next record (everything but the times) and returns its index.
inline uint32_t append_record(ThreadBuffer* b, Floor floor, const char* name, uint16_t site) {
  const uint32_t index = b->count;
  SpanRecord& r = b->cur[b->used];
  // Warm the cache line of a record a little ahead (integer math: may lie past the chunk).
  __builtin_prefetch(reinterpret_cast<const void*>(reinterpret_cast<uintptr_t>(&r) + kPrefetchAheadBytes), 1);
  r.end_ticks = 0;
  r.name = name;
  r.parent = b->depth > 0 ? static_cast<int32_t>(handle_index(b->open[b->depth - 1])) : -1;
  r.floor = floor;
  r.nargs = 0;
  r.site = site;
  ++b->used;
  ++b->count;
  return index;
}

inline void publish(ThreadBuffer* b) { b->published_count.store(b->count, std::memory_order_release); }

inline void store_end(SpanRecord& r, uint64_t ticks) {
  std::atomic_ref<uint64_t>(r.end_ticks).store(ticks, std::memory_order_relaxed);
}

void end_span_slow(ThreadBuffer* b, SpanHandle span, uint64_t ticks) {
  if (b == nullptr || span < 0) return;
  for (uint32_t i = b->depth; i-- > 0;) {  // ended out of order: find it deeper
    if (b->open[i] != span) continue;
    std::copy(b->open.begin() + i + 1, b->open.begin() + b->depth, b->open.begin() + i);
    --b->depth;
    store_end(record_at(b, handle_index(span)), ticks);
    return;
  }
  // Not open: ended twice, or begun in another recording (Note [Span handles]).
}

// Appends one argument for a span of the calling thread; `set` fills the value.
template <typename Set>
void push_arg(SpanHandle span, const char* key, ArgKind kind, Set set) {
  ThreadBuffer* b = tl_buffer;
  if (b == nullptr || span < 0 || handle_tag_of(span) != b->tag) return;  // another recording's span
  const uint32_t index = handle_index(span);
  if (index >= b->count) return;
  SpanRecord& r = record_at(b, index);
  if (r.nargs >= kMaxArgs) return;  // extra args are dropped
  if (b->arg_used == kArgChunkRecords && !next_arg_chunk(b)) return;
  ArgRecord& a = b->arg_cur[b->arg_used++];
  a.span = index;
  a.kind = kind;
  a.key = key;
  set(a);
  ++r.nargs;  // read by this thread only
  b->published_args.store(++b->arg_count, std::memory_order_release);
}

// The site of `where`, from the thread's cache; registers it on a miss.
[[gnu::noinline]] uint16_t site_slow(ThreadBuffer::CachedSite& slot, const std::source_location& where) {
  slot = {where.file_name(), where.line(), register_site(where.file_name(), where.line(), where.function_name())};
  return slot.site;
}

inline uint16_t site_of(ThreadBuffer* b, const std::source_location& where) {
  const char* file = where.file_name();
  const uint32_t line = where.line();
  const size_t at = ((reinterpret_cast<uintptr_t>(file) >> 4) ^ (line * 0x9E3779B1u)) & (kSiteCacheEntries - 1);
  ThreadBuffer::CachedSite& slot = b->sites[at];
  if (slot.file == file && slot.line == line) [[likely]]
    return slot.site;
  return site_slow(slot, where);
}

// The calling thread's buffer ready for one more span, or nullptr (dropped).
inline ThreadBuffer* buffer_for_span() {
  ThreadBuffer* b = tl_buffer;
  if (b == nullptr || b->epoch != g_epoch.load(std::memory_order_acquire) || b->used == kChunkRecords ||
      b->depth == b->open.size()) [[unlikely]] {
    b = writable_buffer();
  }
  return b;
}

inline SpanHandle open_span(ThreadBuffer* b, Floor floor, const char* name, uint16_t site) {
  const SpanHandle span = b->tag | append_record(b, floor, name, site);
  b->open[b->depth++] = span;
  b->cur[b->used - 1].start_ticks = read_ticks();  // last, so bookkeeping stays outside the span
  publish(b);
  return span;
}

}  // namespace

// [SECTION] Hot path: begin, end, args ----------------------------------------

uint64_t now_ticks() { return read_ticks(); }
int64_t now_ns() { return read_ns(); }

// noinline: callers in other files pay a call, so calibration does too.
[[gnu::noinline]] SpanHandle begin_span(Floor floor, const char* name, uint16_t site) {
  if (!enabled()) return kNoSpan;
  ThreadBuffer* b = buffer_for_span();
  return b == nullptr ? kNoSpan : open_span(b, floor, name, site);
}

[[gnu::noinline]] SpanHandle begin_span_at(Floor floor, const char* name, std::source_location where) {
  if (!enabled()) return kNoSpan;
  ThreadBuffer* b = buffer_for_span();
  return b == nullptr ? kNoSpan : open_span(b, floor, name, site_of(b, where));
}

[[gnu::noinline]] void end_span(SpanHandle span) {
  const uint64_t ticks = read_ticks();  // first, for the same reason
  ThreadBuffer* b = tl_buffer;
  // The whole handle is compared: a span of an earlier recording never matches (Note [Span handles]).
  if (b != nullptr && b->depth > 0 && b->open[b->depth - 1] == span) [[likely]] {
    --b->depth;
    store_end(record_at(b, handle_index(span)), ticks);
    return;
  }
  end_span_slow(b, span, ticks);
}

void add_arg(SpanHandle span, const char* key, int64_t v) {
  push_arg(span, key, ArgKind::Int, [&](ArgRecord& a) { a.i = v; });
}
void add_arg(SpanHandle span, const char* key, double v) {
  push_arg(span, key, ArgKind::Double, [&](ArgRecord& a) { a.d = v; });
}
void add_arg(SpanHandle span, const char* key, bool v) {
  push_arg(span, key, ArgKind::Bool, [&](ArgRecord& a) { a.b = v; });
}
void add_arg(SpanHandle span, const char* key, const char* s) {
  push_arg(span, key, ArgKind::Str, [&](ArgRecord& a) { a.s = s; });
}

void record_complete_span(Floor floor, const char* name, int64_t start_ns, int64_t end_ns, uint16_t site) {
  if (!enabled()) return;
  ThreadBuffer* b = writable_buffer();
  if (b == nullptr) return;
  // Stored as ns with the flag bit set; steady-clock ns are never negative.
  SpanRecord& r = b->cur[b->used];
  append_record(b, floor, name, site);
  r.start_ticks = kNsFlagBit | static_cast<uint64_t>(std::max<int64_t>(start_ns, 0));
  r.end_ticks = kNsFlagBit | static_cast<uint64_t>(std::max<int64_t>(end_ns, 0));
  publish(b);
}

// [SECTION] Calibration ---------------------------------------------------------

namespace {

// Guarded by control_mutex(); g_span_cost_ns is read from any thread.
ClockPair g_base;  // clocks at start()
double g_ns_per_tick = 1.0;
std::atomic<double> g_span_cost_ns{0.0};
std::atomic<double> g_span_self_cost_ns{0.0};
std::atomic<double> g_arg_cost_ns{0.0};

// The median duration, in ns, of the empty spans a calibration rep left in
// `scratch`: the part of a span's own cost that lies between its two clock
// reads (Note [Warm medians]). Needs the clock calibrated.
double median_empty_span_ns(ThreadBuffer& scratch) {
  std::vector<uint64_t> ticks(scratch.count);
  for (uint32_t i = 0; i < scratch.count; ++i) {
    const SpanRecord& r = record_at(&scratch, i);
    ticks[i] = r.end_ticks - r.start_ticks;
  }
  if (ticks.empty()) return 0.0;
  std::nth_element(ticks.begin(), ticks.begin() + ticks.size() / 2, ticks.end());
  return static_cast<double>(ticks[ticks.size() / 2]) * g_ns_per_tick;
}

// Times begin/end pairs through the public path (flag, TLS, call) into a
// scratch buffer swapped in for the calling thread. Median of a few reps.
// With `args` > 0, each span also records that many arguments (half ints,
// half strings, as the floors' spans mostly do). With `self_ns`, also the
// median empty span's own duration (of the median rep).
double measure_span_cost(int args = 0, double* self_ns = nullptr) {
  ThreadBuffer scratch;
  ThreadBuffer* saved = tl_buffer;
  tl_buffer = &scratch;
  std::array<std::pair<double, double>, kCostReps> per_pair_ns{};  // (pair cost, empty span's own duration)
  g_enabled.store(true);
  for (auto& [cost, self] : per_pair_ns) {
    reset_buffer(&scratch, g_epoch.load());
    const int64_t t0 = read_ns();
    for (int i = 0; i < kCostPairsPerRep; ++i) {
      ScopedSpan span(Floor::None, "descent.tracer.calibrate");
      for (int a = 0; a < args; ++a) {
        if (a % 2)
          span.arg("calibrate", "value");
        else
          span.arg("calibrate", int64_t{a});
      }
    }
    cost = static_cast<double>(read_ns() - t0) / kCostPairsPerRep;
    if (self_ns) self = median_empty_span_ns(scratch);
  }
  g_enabled.store(false);
  tl_buffer = saved;
  std::sort(per_pair_ns.begin(), per_pair_ns.end());
  if (self_ns) *self_ns = per_pair_ns[kCostReps / 2].second;
  return per_pair_ns[kCostReps / 2].first;
}
// What one argument adds to a span (Note [Warm medians] takes it out too).
double measure_arg_cost() {
  constexpr int kArgs = 4;
  return std::max(0.0, (measure_span_cost(kArgs) - measure_span_cost()) / kArgs);
}

// The tick -> ns ratio over a short sleep (refined at stop() over the whole recording).
void calibrate_clock() {
  g_base = ticks_are_ns() ? ClockPair{} : read_pair();  // with ns ticks, the identity
  if (!ticks_are_ns()) std::this_thread::sleep_for(kClockCalibrationTime);
  g_ns_per_tick = ns_per_tick(g_base, read_pair());
}

int64_t ticks_to_ns(uint64_t ticks) {
  if (ticks & kNsFlagBit) return static_cast<int64_t>(ticks & ~kNsFlagBit);
  const auto delta = static_cast<int64_t>(ticks - g_base.ticks);
  return g_base.ns + std::llround(static_cast<double>(delta) * g_ns_per_tick);
}

// Drops the buffers of threads that have ended (their spans are no longer wanted).
void drop_exited_buffers() {
  std::lock_guard lock(registry().mutex);
  auto& v = registry().buffers;
  v.erase(std::remove_if(v.begin(), v.end(), [](const auto& b) { return b->exited.load(); }), v.end());
}

// A record's start in ns: the clock it was recorded on, clamped to `at_ticks`.
int64_t start_ns_of(const SpanRecord& r, uint64_t at_ticks) {
  const bool measured = r.start_ticks & kNsFlagBit;
  return ticks_to_ns(measured ? r.start_ticks : std::min(r.start_ticks, at_ticks));
}

// Appends to `out` the published spans of one buffer that began at or after
// `since_ns` (all of them for INT64_MIN), closing open ones at `at_ticks`. A
// kept span whose parent began earlier becomes a root. Spans left out cost a
// compare each: nothing is built for them.
void collect_buffer(ThreadBuffer& b, uint32_t thread, uint64_t& next_id, uint64_t at_ticks, int64_t since_ns,
                    std::vector<SourceSite>& sites, Trace& out) {
  const uint32_t n = b.published_count.load(std::memory_order_acquire);
  const uint64_t first_id = next_id;
  const bool window = since_ns != INT64_MIN;
  std::vector<uint32_t> position(window ? n : 0, UINT32_MAX);  // span index -> out.spans, when kept
  const size_t first = out.spans.size();
  for (uint32_t i = 0; i < n; ++i) {
    SpanRecord& r = record_at(&b, i);
    const int64_t start_ns = start_ns_of(r, at_ticks);
    if (start_ns < since_ns) continue;
    uint64_t end = std::atomic_ref<uint64_t>(r.end_ticks).load(std::memory_order_relaxed);
    Span s;
    s.id = first_id + i;
    const bool has_parent = r.parent >= 0 && static_cast<uint32_t>(r.parent) < n;
    const bool parent_kept = has_parent && (!window || position[r.parent] != UINT32_MAX);
    s.parent = parent_kept ? first_id + r.parent : 0;
    s.floor = r.floor;
    s.name = r.name ? r.name : "";
    s.thread = thread;
    if (r.site > sites.size()) sites = sites_registered();  // registered since the copy was made
    if (r.site > 0 && r.site <= sites.size()) {             // Note [Span source sites]
      s.file = sites[r.site - 1].file;
      s.line = sites[r.site - 1].line;
    }
    // Still open: closed at `at_ticks`. A thread recording meanwhile may have
    // later ticks: clamp them, so children stay inside parents.
    const bool measured = r.start_ticks & kNsFlagBit;
    s.start_ns = start_ns;
    if (end == 0 || (!measured && end > at_ticks)) end = at_ticks;
    const int64_t end_ns = ticks_to_ns(end);
    // Measured spans keep their ns exactly; a span closed early never ends before it began.
    s.end_ns = measured ? end_ns : std::max(end_ns, s.start_ns);
    if (window) position[i] = static_cast<uint32_t>(out.spans.size() - first);
    out.spans.push_back(std::move(s));
  }
  // Arguments, in the order they were added; one for a span published after
  // `n` was read, or outside the window, is left out with its span.
  const uint64_t m = b.published_args.load(std::memory_order_acquire);
  for (uint64_t k = 0; k < m; ++k) {
    const ArgRecord& a = b.arg_chunks[k >> kArgChunkShift][k & (kArgChunkRecords - 1)];
    if (a.span >= n) continue;
    const size_t at = window ? position[a.span] : a.span;
    if (at == UINT32_MAX) continue;
    std::vector<SpanArg>& args = out.spans[first + at].args;
    const std::string key = a.key ? a.key : "";
    if (a.kind == ArgKind::Int) args.push_back({key, a.i});
    if (a.kind == ArgKind::Double) args.push_back({key, a.d});
    if (a.kind == ArgKind::Bool) args.push_back({key, a.b});
    if (a.kind == ArgKind::Str) args.push_back({key, std::string(a.s ? a.s : "")});
  }
  next_id += n;
}

}  // namespace

double span_cost_ns() { return g_span_cost_ns.load(); }

// [SECTION] The span limit ----------------------------------------------------------

namespace {

// 0 until first read: then DESCENT_TRACE_MAX_SPANS, or the default.
std::atomic<uint32_t> g_span_limit{0};

uint32_t clamp_limit(uint64_t n) {
  return static_cast<uint32_t>(std::clamp<uint64_t>(n, kChunkRecords, kMaxRecordsPerThread));
}

uint32_t limit_from_environment() {
  const char* env = std::getenv("DESCENT_TRACE_MAX_SPANS");
  if (env == nullptr || *env == '\0') return kDefaultSpanLimit;
  char* end = nullptr;
  const unsigned long long n = std::strtoull(env, &end, 10);
  if (*end != '\0' || n == 0 || env[0] == '-') {
    log::warn("DESCENT_TRACE_MAX_SPANS=", env, " is not a positive number of spans; using ", kDefaultSpanLimit);
    return kDefaultSpanLimit;
  }
  const uint32_t limit = clamp_limit(n);
  if (limit != n)
    log::warn("DESCENT_TRACE_MAX_SPANS=", env, " is taken as ", limit, " (the limit is between ", kChunkRecords,
              " and ", kMaxRecordsPerThread, " spans)");
  return limit;
}

}  // namespace

uint32_t span_limit() {
  uint32_t v = g_span_limit.load(std::memory_order_relaxed);
  if (v == 0) {
    v = limit_from_environment();
    g_span_limit.store(v, std::memory_order_relaxed);
  }
  return v;
}

void set_span_limit(uint64_t spans) { g_span_limit.store(clamp_limit(spans), std::memory_order_relaxed); }

// [SECTION] Flows ------------------------------------------------------------------

// The refs a flow joins; the list of flows and how it becomes the trace's is flows.cpp.
SpanRef span_ref(SpanHandle span) { return span < 0 ? SpanRef{} : SpanRef{tl_buffer, span}; }

SpanRef current_span() {
  const ThreadBuffer* b = tl_buffer;
  if (!enabled() || b == nullptr || b->depth == 0) return SpanRef{};
  return SpanRef{b, b->open[b->depth - 1]};
}

void add_flow(const SpanRef& from, const SpanRef& to, const char* name) {
  if (!enabled() || !from.valid() || !to.valid()) return;
  const SpanHandle tag = handle_tag(g_epoch.load(std::memory_order_acquire));
  if (handle_tag_of(from.span) != tag || handle_tag_of(to.span) != tag) return;  // another recording's span
  detail::queue_flow(from, to, name);
}

// [SECTION] start and stop ---------------------------------------------------------

void start() {
  std::lock_guard lock(control_mutex());
  g_enabled.store(false);
  choose_clock();
  drop_exited_buffers();
  detail::clear_flows();
  calibrate_clock();  // first: the empty spans' own durations are converted with its ratio
  double self_ns = 0.0;
  g_span_cost_ns.store(measure_span_cost(0, &self_ns));
  g_span_self_cost_ns.store(self_ns);
  g_arg_cost_ns.store(measure_arg_cost());
  const uint32_t limit = span_limit();    // reads DESCENT_TRACE_MAX_SPANS now, so a bad value is reported now
  detail::clear_device_spans(read_ns());  // Note [Device spans]
  cupti::detail::on_start();
  log::debug("tracing on: ", g_span_cost_ns.load(), " ns per span, ", g_ns_per_tick, " ns per ", clock_name(),
             " tick, at most ", limit, " spans per thread");
  g_epoch.fetch_add(1);  // every buffer is now stale: "cleared" before its next record
  g_enabled.store(true);
}

namespace {

// The buffers of the current recording, registration order. Caller holds control_mutex().
std::vector<std::shared_ptr<ThreadBuffer>> current_buffers() {
  std::lock_guard reg_lock(registry().mutex);
  return registry().buffers;
}

// Spans not recorded so far in this recording, all threads. Caller holds control_mutex().
uint64_t count_dropped() {
  const uint64_t epoch = g_epoch.load();
  uint64_t dropped = 0;
  for (const auto& b : current_buffers()) {
    std::lock_guard buf_lock(b->mutex);
    if (b->published_epoch == epoch) dropped += b->dropped;
  }
  return dropped;
}

// The spans of the current recording begun at or after `since_ns`, open ones
// closed at `at`; `dropped_before` is subtracted from the dropped count.
// Caller holds control_mutex().
Trace collect(const ClockPair& at, int64_t since_ns, uint64_t dropped_before) {
  const uint64_t epoch = g_epoch.load();
  Trace t;
  uint64_t next_id = 1;
  uint32_t thread = 0;
  uint64_t dropped = 0;
  std::vector<SourceSite> sites = sites_registered();  // refreshed when a span names a newer site
  std::vector<detail::BufferIds> ids;
  for (const auto& b : current_buffers()) {
    std::lock_guard buf_lock(b->mutex);
    if (b->published_epoch != epoch || b->published_count.load(std::memory_order_acquire) == 0) continue;
    dropped += b->dropped;
    const uint64_t first = next_id;
    collect_buffer(*b, thread++, next_id, at.ticks, since_ns, sites, t);
    ids.push_back({b.get(), first, next_id - first});
  }
  detail::collect_device_spans(t, thread, next_id, since_ns);  // rows after the CPU threads
  std::sort(t.spans.begin(), t.spans.end(), span_order);
  detail::resolve_flows(t, ids, epoch);
  detail::join_device_flows(t);
  if (std::string note = cupti::detail::timing_note(); !note.empty()) t.metadata["device.timing"] = std::move(note);
  t.span_cost_ns = g_span_cost_ns.load();
  t.metadata["tracer.clock"] = clock_name();  // Note [The tracer's clock]
  t.metadata["tracer.ns_per_tick"] = std::to_string(g_ns_per_tick);
  t.metadata["tracer.arg_cost_ns"] = std::to_string(g_arg_cost_ns.load());  // Note [Warm medians]
  t.metadata["tracer.span_self_cost_ns"] = std::to_string(g_span_self_cost_ns.load());
  dropped = dropped > dropped_before ? dropped - dropped_before : 0;
  if (dropped > 0) t.metadata["tracer.dropped_spans"] = std::to_string(dropped);  // Note [Dropped spans]
  add_source_fingerprints(t);                                                     // Note [Source fingerprints]
  return t;
}

// The clocks now, with the tick ratio refined over the recording so far.
ClockPair refine_clock() {
  const ClockPair now = read_pair();
  if (!ticks_are_ns()) g_ns_per_tick = ns_per_tick(g_base, now);  // longer baseline, better ratio
  return now;
}

}  // namespace

Trace stop(int64_t since_ns, uint64_t dropped_before) {
  std::lock_guard lock(control_mutex());
  if (enabled()) cupti::detail::on_collect(/*final=*/true);  // while record_device_span still records
  g_enabled.store(false);
  Trace t = collect(refine_clock(), since_ns, dropped_before);
  cupti::detail::on_stop();
  detail::clear_device_spans(INT64_MAX);  // none until the next start()
  g_epoch.fetch_add(1);                   // a second stop() returns an empty trace
  if (t.metadata.contains("tracer.dropped_spans")) {
    log::warn("the trace is missing ", t.metadata["tracer.dropped_spans"], " spans: a thread reached the limit of ",
              span_limit(), " spans per recording (DESCENT_TRACE_MAX_SPANS) or memory for its buffer ran out");
  }
  return t;
}

Trace snapshot(int64_t since_ns, uint64_t dropped_before) {
  std::lock_guard lock(control_mutex());
  if (!enabled()) throw std::logic_error("descent tracer: snapshot() needs a running recording");
  cupti::detail::on_collect(/*final=*/false);
  return collect(refine_clock(), since_ns, dropped_before);
}

uint64_t dropped_spans() {
  std::lock_guard lock(control_mutex());
  return enabled() ? count_dropped() : 0;
}

uint64_t recorded_spans() {
  if (!enabled()) return 0;
  const uint64_t epoch = g_epoch.load(std::memory_order_acquire);
  uint64_t n = 0;
  for (const auto& b : current_buffers()) {  // the registry's lock only: never a stop()'s or a thread's
    if (b->published_epoch.load(std::memory_order_acquire) == epoch) {
      n += b->published_count.load(std::memory_order_relaxed);
    }
  }
  return n;
}

}  // namespace descent::trace
