// descent tracer: spans recorded at every floor.
//
// [SECTION] Floors
// [SECTION] Arguments
// [SECTION] The span record (hot path)
// [SECTION] Source sites
// [SECTION] Flows between threads
// [SECTION] Device spans: the device's own clock
// [SECTION] Recording: start, stop, scoped spans
//
// A span is: floor, name (a string literal or an interned string), start and
// end on one monotonic clock, thread, parent, the source site that opened it
// (file, line, function), and up to kMaxArgs typed arguments. See Note
// [Tracer hot path] and Note [Span source sites].
//
// Note [Tracer hot path]
// ~~~~~~~~~~~~~~~~~~~~~~
// When tracing is off, a span costs one predictable branch on a global flag.
// When it is on, beginning a span reads the time stamp counter and appends a
// 32-byte SpanRecord to a buffer owned by the calling thread; ending it reads
// the counter again and writes the end into the same record. The record names
// the code that opened the span by a 2-byte site number, looked up in a small
// cache of the thread's own (Note [Span source sites]). An argument
// (bytes=4096) is a 24-byte ArgRecord appended to a second buffer of the same
// thread, naming its span, so a span pays only for the arguments it has, and
// many threads recording at once move as few bytes to memory as they can. No
// lock, no allocation (buffers grow in chunks reserved ahead of time), no
// string formatting: names and string arguments are literals or interned
// pointers. Ticks are converted to nanoseconds only when the recording is
// collected into a Trace (trace.h), with the ratio measured at start().
#pragma once

#include <atomic>
#include <climits>
#include <cstdint>
#include <source_location>
#include <string_view>
#include <vector>

namespace descent::trace {

// [SECTION] Floors ------------------------------------------------------------

enum class Floor : uint8_t {
  None = 0,
  Python = 1,     // the user's line and the descent package's Python code
  Binding = 2,    // descent._C: argument parsing, unwrapping, wrapping
  Dispatch = 3,   // key set computation and kernel choice
  Autograd = 4,   // graph nodes, saved tensors, backward engine
  Kernels = 5,    // checks, broadcasting, promotion, the loops themselves
  Allocator = 6,  // CPU allocator and caching allocator
  Streams = 7,    // stream queues, events
  Launch = 8,     // kernel launch and the device running it
  Device = 9,     // activity on the device's own clock (CUPTI, sim worker)
};
constexpr int kNumFloors = 10;
const char* floor_name(Floor f);  // "python", "binding", ... ; "none" for None

// [SECTION] Arguments ---------------------------------------------------------

enum class ArgKind : uint8_t { None = 0, Int, Double, Bool, Str };

// Interns a string: returns a pointer that stays valid for the life of the
// process and is equal for equal strings. Takes a lock: never on a hot path
// that runs with tracing off.
const char* intern(std::string_view s);

// [SECTION] The span record (hot path) ---------------------------------------

constexpr int kMaxArgs =
    12;  // per span; more are ignored (a recorded node: graph, node, node_id, edges, edge ids, saved, input_shapes, edge_data_ptrs, decided_at)

// One span as its thread records it: half a cache line.
struct SpanRecord {
  uint64_t start_ticks;  // time stamp counter at begin
  uint64_t end_ticks;    // at end; 0 while the span is open
  const char* name;      // literal or interned
  int32_t parent;        // index in the same thread's buffer, -1 for a root
  Floor floor;
  uint8_t nargs;  // arguments recorded for it so far
  uint16_t site;  // source site that opened it (site_info()), 0 = unknown
};
static_assert(sizeof(SpanRecord) == 32, "SpanRecord must stay half a cache line");

// One typed argument, in its thread's argument buffer. `key` and `s` are
// literals or interned.
struct ArgRecord {
  uint32_t span;  // index of its span in the same thread's buffer
  ArgKind kind;
  const char* key;  // literal, e.g. "keyset", "bytes", "variant"
  union {
    int64_t i;
    double d;
    bool b;
    const char* s;
  };
};
static_assert(sizeof(ArgRecord) == 24, "ArgRecord must stay small and fixed-size");

// The global switch. Read with relaxed order: one load and one branch.
extern std::atomic<bool> g_enabled;
inline bool enabled() { return g_enabled.load(std::memory_order_relaxed); }

// Note [The tracer's clock]
// ~~~~~~~~~~~~~~~~~~~~~~~~~
// Spans are timed with the time stamp counter (rdtsc, about 20 cycles, no
// system call) only where the CPU says its counter is invariant: CPUID leaf
// 0x80000007, EDX bit 8, which promises one constant rate on every core
// whatever the power state, so ticks from two threads compare and convert to
// ns with one ratio. Without that bit (older CPUs, some hypervisors hide it),
// and on other architectures, the tracer reads std::chrono::steady_clock
// instead (a vDSO call, about 20 ns). The choice is made once, at the first
// start(), and named in every Trace's metadata as "tracer.clock" ("tsc
// (invariant)" or "steady_clock"). DESCENT_TRACER_CLOCK=steady_clock forces
// the fallback (the tests use it).

// Reads the clock the tracer uses (Note [The tracer's clock]).
uint64_t now_ticks();
// Nanoseconds on the steady clock, for callers that need wall time.
int64_t now_ns();

// Note [Span handles]
// ~~~~~~~~~~~~~~~~~~~
// begin_span returns a handle: the record's index in its thread's buffer in
// the low 32 bits, and the recording it belongs to (the low 31 bits of the
// epoch that start() and stop() bump) above them; -1 when nothing was
// recorded. A buffer is emptied lazily when its thread first records in a new
// recording, and indices restart at 0, so an index alone could name a span of
// the new recording: a span left open across stop() and start() would then
// close (or add arguments to) whichever new span took its index. end_span and
// add_arg compare the whole handle, so a stale one matches nothing.
using SpanHandle = int64_t;
constexpr SpanHandle kNoSpan = -1;

// Low-level calls used by ScopedSpan; each acts on the calling thread's buffer.
// begin returns the span's handle, or kNoSpan when tracing is off. begin_span_at
// finds the site of `where` itself (Note [Span source sites]).
SpanHandle begin_span(Floor floor, const char* name, uint16_t site = 0);
SpanHandle begin_span_at(Floor floor, const char* name, std::source_location where);
void end_span(SpanHandle span);
void add_arg(SpanHandle span, const char* key, int64_t v);
void add_arg(SpanHandle span, const char* key, double v);
void add_arg(SpanHandle span, const char* key, bool v);
void add_arg(SpanHandle span, const char* key, const char* s);  // s literal or interned

// Records a span that was measured elsewhere (e.g. a device's own clock, or a
// Python frame timed by the profile hook), in nanoseconds on now_ns()'s clock,
// as a child of the calling thread's innermost open span.
void record_complete_span(Floor floor, const char* name, int64_t start_ns, int64_t end_ns, uint16_t site = 0);

// [SECTION] Source sites ------------------------------------------------------

// Note [Span source sites]
// ~~~~~~~~~~~~~~~~~~~~~~~~
// Every span records where in descent's code it was opened, so the app can
// show the lines that ran (tracer/sources.h embeds the text). A site is a
// {file, line, function} registered once in a process-wide, append-only table
// and named by its 2-byte index, which fills the spare bytes of SpanRecord:
// the record stays 32 bytes. Site 0 means unknown (a span opened by
// begin_span without one, a statement of the user's code, or a table that is
// full at kMaxSites).
//
// ScopedSpan and DESCENT_SPAN take the caller's std::source_location as a
// default argument: with tracing off nothing is looked up, and the constructor
// stays one branch. With tracing on, begin_span_at finds the site in a
// 256-entry cache of the thread's own, keyed by the location's file pointer
// and line (two loads and a compare, no lock); on a miss it registers the site
// under a lock, once per site and thread. A function-local static per call
// site was the other way: it needs a macro at every site (ScopedSpan is also
// used directly) and its guard runs with tracing off too.
//
// Files are relative to the repository root ("floors/dispatch/dispatcher.cpp"):
// the library is compiled with -fmacro-prefix-map=<source dir>/= and
// register_site strips the source directory from a path that still holds it.
// Spans from one line of a template share the site of the first instantiation
// that ran. The profile hook registers Python functions with their code's
// file mapped back to floors/python/descent/ and their first line.
constexpr uint32_t kMaxSites = 65535;  // sites 1..kMaxSites; past that, 0

struct SourceSite {
  const char* file = "";      // relative to the repository root; interned
  uint32_t line = 0;          // 1-based; 0 when unknown
  const char* function = "";  // as the compiler names it, or a Python qualname; interned
};

// The index of the site {file, line, function}, registering it on first use.
// Equal triples get equal indices. Takes a lock: call it once per site.
uint16_t register_site(std::string_view file, uint32_t line, std::string_view function);
// The site at `index`; {"", 0, ""} for 0 or an index never registered.
SourceSite site_info(uint16_t index);
// Sites registered so far (the largest index in use).
uint32_t site_count();
// Every registered site, site i at index i - 1 (what stop() reads to name spans' files).
std::vector<SourceSite> sites_registered();

// Note [Where a span decided]
// ~~~~~~~~~~~~~~~~~~~~~~~~~~~
// A span's site is where it was opened, which is not always where what it
// records was decided: the dispatcher opens its span in call_boxed and picks
// the kernel in run_kernel; a kernel opens its span first and picks its loop
// at the end. For the decisions a lesson asks about (the dispatcher's kernel,
// autograd's graph or none, the caching allocator's hit or miss, a kernel's
// variant) the span also records the line that decided, as the string
// argument decided_at="floors/dispatch/dispatcher.cpp:283", which the app's
// source view shows in place of the span's own line. The string is a literal
// the preprocessor makes from __FILE__ (relative to the repository root under
// -fmacro-prefix-map) and __LINE__, so recording it costs one argument record,
// no lookup and no lock, and a saved trace keeps it. The tree that `descent
// trace` prints leaves it out. DESCENT_DECIDES(span, expr) records the line
// it stands on and yields expr, so it wraps the deciding expression itself:
//   const DispatchKey key = DESCENT_DECIDES(span, live.highest());
// Where the span opens after the decision, DESCENT_HERE is the same literal:
//   if (const char* at = DESCENT_HERE; no_graph) { ...; span.arg("decided_at", at); }
constexpr const char* kDecidedAt = "decided_at";  // the argument's key

// [SECTION] Flows between threads -------------------------------------------

// Note [Flows between threads]
// ~~~~~~~~~~~~~~~~~~~~~~~~~~~~
// A span on one thread can cause spans on another: parallel_for's chunks run
// on the pool's workers (floors/kernels/cpu/parallel.cpp). A flow records that
// arrow. SpanRef names a span from any thread (its thread's buffer and its
// handle); add_flow appends {from, to} to one process-wide list under a lock,
// which is fine for arrows that are rare beside spans (one per chunk of a
// loop long enough to go parallel); the span hot path takes no lock. stop()
// and snapshot() turn the refs into span ids (Trace::flows); a flow whose ends
// are not both in the returned spans (another recording's, outside a
// snapshot's window, dropped) is left out.
struct SpanRef {
  const void* buffer = nullptr;  // the thread's buffer (opaque)
  SpanHandle span = kNoSpan;
  bool valid() const { return buffer != nullptr && span >= 0; }
};
// The calling thread's span `span` (from begin_span or ScopedSpan::handle()),
// usable on any thread; invalid for kNoSpan.
SpanRef span_ref(SpanHandle span);
// Records an arrow from `from` to `to`; nothing when either is invalid or
// tracing is off. `name` is a literal or interned ("parallel_for").
void add_flow(const SpanRef& from, const SpanRef& to, const char* name);
// The calling thread's innermost open span, usable on any thread; invalid
// when none is open or tracing is off (the cause of work handed to another
// thread: the backward engine's device threads, Note [Which thread runs a node]).
SpanRef current_span();

// [SECTION] Device spans: the device's own clock -----------------------------

// Note [Device spans]
// ~~~~~~~~~~~~~~~~~~~
// A kernel on a device runs when its stream reaches it, not when the host
// launched it (Note [Streams and the two clocks] in floors/streams/streams.h),
// so its span is measured by whoever watches the device, on another thread:
// the simulated device's stream worker (floors/streams, floors/launch) reads
// now_ns() around the work; on CUDA, CUPTI's activity records are converted
// from CUPTI's clock to now_ns()'s (tracer/cupti.cpp). Either calls
// record_device_span, from any thread. It takes a lock and copies its two
// strings: there is one such span per kernel or copy, not per function call.
//
// stop() and snapshot() give each (device, stream) a row of its own, numbered
// after the CPU threads in the order (device, stream), named in the metadata
// ("thread.5" = "cuda:0 stream 7", "thread.5.device" = "cuda:0"), and put
// the spans there as roots on Floor::Device, with the arguments device,
// stream, correlation, then grid, block, shared_bytes (kernels) or bytes
// (copies and memsets). The launch that caused the work is the span of the
// same recording, on any CPU thread and floor, whose int argument
// "correlation" equals the device span's correlation (the floor-8 launch
// span; next_correlation() hands out the ids): a flow named "ac2g" (Kineto's
// name: async CPU to GPU) goes from it to the device span. A device span
// whose launch is outside the returned spans (another window, not traced)
// gets no flow. The metadata "device.clock" names where the device times
// came from ("sim:0: simulated device worker (host clock)"), one entry per
// device; "device.timing" says whether CUPTI collected (tracer/cupti.h).
// Names follow Kineto's, so the Chrome export reads like PyTorch's: a kernel
// by its (demangled) name, a copy "Memcpy HtoD (Pageable -> Device)", a
// memset "Memset (Device)".
enum class DeviceWork : uint8_t {
  Kernel = 0,  // Chrome category "kernel"
  Memcpy = 1,  // "gpu_memcpy"; name it "Memcpy HtoD (Pageable -> Device)", "Memcpy DtoH (Device -> Pageable)", ...
  Memset = 2,  // "gpu_memset"; "Memset (Device)"
};

struct DeviceSpan {
  std::string_view name;     // kernel name or "Memcpy ..."; copied
  std::string_view device;   // "cuda:0", "sim:0"; copied
  int64_t stream = 0;        // the stream's id on that device (0: the default stream)
  int64_t start_ns = 0;      // on now_ns()'s clock
  int64_t end_ns = 0;        // >= start_ns (an earlier end is taken as start_ns)
  uint64_t correlation = 0;  // the launch span's "correlation" (next_correlation()); 0: no launch
  DeviceWork work = DeviceWork::Kernel;
  uint32_t grid[3] = {0, 0, 0};   // kernels: blocks in x, y, z; all 0 when not known
  uint32_t block[3] = {0, 0, 0};  // kernels: threads per block in x, y, z
  int64_t shared_bytes = -1;      // kernels: shared memory per block; -1 when not known
  int64_t bytes = -1;             // copies and memsets: bytes moved or set; -1 when not known
  const char* clock = "";         // literal: where the times came from ("simulated device worker (host clock)")
};

// A fresh correlation id (> 0, unique in the process) for one launch: the
// launch span records it as the int argument "correlation", the device span
// of its work carries it (DeviceSpan::correlation).
uint64_t next_correlation();
// Puts a span measured on a device into the running recording (Note [Device
// spans]); nothing when tracing is off. Thread-safe; takes a lock.
void record_device_span(const DeviceSpan& s);
// Past this many device spans in one recording, more are counted in the
// metadata "tracer.dropped_device_spans" and not kept.
constexpr uint32_t kMaxDeviceSpans = 1u << 20;  // about 150 MiB of pending spans

// [SECTION] Recording: start, stop, scoped spans -----------------------------

struct Trace;  // trace.h

// Clears every thread's buffer, calibrates the tracer's own cost, and switches
// tracing on.
void start();
// Switches tracing off and collects every thread's spans into a Trace (those
// begun at or after `since_ns` only, when given: see snapshot()). Spans still
// open at stop() are closed at the stop time.
Trace stop(int64_t since_ns = INT64_MIN, uint64_t dropped_before = 0);

// Note [Nested recordings]
// ~~~~~~~~~~~~~~~~~~~~~~~~
// There is one recording at a time, but a recording can be watched from
// inside: snapshot(since) returns the spans of the running recording that
// began at or after `since` (ns on now_ns()'s clock), with spans still open
// closed at the snapshot time, and those whose parent began earlier made
// roots. The recording goes on. Spans before `since` are skipped with a
// compare each, so a snapshot costs what its window holds plus a scan.
// `dropped_before` (dropped_spans() when the window opened) makes the
// snapshot's "tracer.dropped_spans" count only what was dropped since.
// This is how `with descent.trace()` blocks nest, on one thread or several,
// and inside DESCENT_TRACE=1: every block gets the Trace of its own window,
// and the last block to close stops the recording (tracing.py).
// std::logic_error when no recording is running.
Trace snapshot(int64_t since_ns, uint64_t dropped_before = 0);
// Spans not recorded so far in the running recording (0 when none runs).
uint64_t dropped_spans();
// Spans recorded so far in the running recording, all threads (0 when none
// runs): each thread's count as it last published it, read without stopping
// the recording or taking a lock that a recording thread or stop() holds for
// long, so a progress line can ask every frame (the app's "running, 3.2 s,
// 14,000 spans so far"). A thread that has not recorded since start() counts 0.
uint64_t recorded_spans();

// Measured cost of one begin/end pair with tracing on, in nanoseconds.
double span_cost_ns();

// Note [Dropped spans]
// ~~~~~~~~~~~~~~~~~~~~
// A recording never stops the program it watches. Each thread keeps at most
// span_limit() spans per recording (DESCENT_TRACE_MAX_SPANS, default 8388608:
// 256 MiB of span records, plus up to 768 MiB of their arguments; rounded
// down to whole 16384-span chunks); past it,
// or when memory for a chunk cannot be had, a new span is not recorded and
// only counted (its children attach to the span open above it). stop() puts
// the count in the Trace's metadata as "tracer.dropped_spans" and logs a
// warning, so a short trace is never mistaken for a complete one.
uint32_t span_limit();
void set_span_limit(uint64_t spans);  // clamped to [16384, 2^30]

// RAII span. With tracing off, the constructor is one branch and the
// destructor another. `where` is the caller's line (Note [Span source sites]).
class ScopedSpan {
 public:
  ScopedSpan(Floor floor, const char* name, std::source_location where = std::source_location::current())
      : span_(enabled() ? begin_span_at(floor, name, where) : kNoSpan) {}
  ~ScopedSpan() {
    if (span_ >= 0) end_span(span_);
  }
  ScopedSpan(const ScopedSpan&) = delete;
  ScopedSpan& operator=(const ScopedSpan&) = delete;

  bool active() const { return span_ >= 0; }
  SpanHandle handle() const { return span_; }
  template <typename T>
  void arg(const char* key, T v) {
    if (span_ >= 0) add_arg(span_, key, v);
  }

 private:
  SpanHandle span_;  // Note [Span handles]
};

}  // namespace descent::trace

#define DESCENT_STRINGIFY_INNER(x) #x
#define DESCENT_STRINGIFY(x) DESCENT_STRINGIFY_INNER(x)
// "floors/dispatch/dispatcher.cpp:283": this line, as a string literal (Note [Where a span decided]).
#define DESCENT_HERE __FILE__ ":" DESCENT_STRINGIFY(__LINE__)
// Records on the ScopedSpan `span` that this line decided what it says, and yields `expr`.
#define DESCENT_DECIDES(span, expr) ((span).arg(::descent::trace::kDecidedAt, DESCENT_HERE), (expr))

#define DESCENT_CONCAT_INNER(a, b) a##b
#define DESCENT_CONCAT(a, b) DESCENT_CONCAT_INNER(a, b)
// Opens a span named `name` (a string literal) on `floor` until the end of the scope.
#define DESCENT_SPAN(floor, name) \
  ::descent::trace::ScopedSpan DESCENT_CONCAT(descent_span_, __LINE__)(::descent::trace::Floor::floor, name)
