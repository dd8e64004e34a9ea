// descent Trace: a finished recording as plain data (no UI types).
//
// [SECTION] Model
// [SECTION] Source fingerprints
// [SECTION] Queries
// [SECTION] Export and load
//
// The app, the CLI, the exporters and the tests all read this one model.
#pragma once

#include <cstdint>
#include <map>
#include <stdexcept>
#include <string>
#include <string_view>
#include <tuple>
#include <unordered_map>
#include <variant>
#include <vector>

#include "tracer/tracer.h"

namespace descent::trace {

// [SECTION] Model -------------------------------------------------------------

using ArgValue = std::variant<int64_t, double, bool, std::string>;

struct SpanArg {
  std::string key;
  ArgValue value;
  bool operator==(const SpanArg&) const = default;
};

struct Span {
  uint64_t id = 0;      // unique in the trace, > 0
  uint64_t parent = 0;  // id of the enclosing span, 0 for a root
  Floor floor = Floor::None;
  std::string name;
  int64_t start_ns = 0;  // on one monotonic clock for the whole trace
  int64_t end_ns = 0;
  uint32_t thread = 0;  // small dense thread number, 0 = first thread seen
  std::vector<SpanArg> args;
  std::string file{};  // the source that opened it, relative to the repository root; "" when unknown
  uint32_t line = 0;   // its line in `file`, 0 when unknown (Note [Span source sites] in tracer.h)
  bool operator==(const Span&) const = default;

  // end - start, saturated: a loaded file may hold any two int64 times.
  int64_t duration_ns() const {
    int64_t d = 0;
    if (__builtin_sub_overflow(end_ns, start_ns, &d)) d = end_ns < start_ns ? INT64_MIN : INT64_MAX;
    return d;
  }
  const ArgValue* find_arg(const std::string& key) const;  // nullptr when absent
};

// An arrow from one span to another, e.g. from a kernel launch on a CPU
// thread to the kernel on the device (Chrome's flow events "s" and "f").
struct Flow {
  uint64_t from = 0;  // id of the span the arrow leaves
  uint64_t to = 0;    // id of the span it reaches
  std::string name;   // e.g. "ac2g" (PyTorch: async CPU to GPU)
  bool operator==(const Flow&) const = default;
};

// The order of a Trace's spans: by thread, then start, then id.
inline bool span_order(const Span& a, const Span& b) {
  return std::tie(a.thread, a.start_ns, a.id) < std::tie(b.thread, b.start_ns, b.id);
}

struct Trace {
  std::vector<Span> spans;                      // sorted by span_order: (thread, start_ns, id)
  std::vector<Flow> flows;                      // ends name spans of this trace
  double span_cost_ns = 0;                      // tracer's own cost per span, measured at start
  std::map<std::string, std::string> metadata;  // e.g. "device" -> "sim:0 (simulated)"
  bool operator==(const Trace&) const = default;
};

// [SECTION] Source fingerprints -----------------------------------------------

// Note [Source fingerprints]
// ~~~~~~~~~~~~~~~~~~~~~~~~~~
// A span names the file and line that opened it (and where it decided), and
// the app shows that line from the sources it embeds. A trace saved by one
// build and opened by another would show whatever that line holds now: after
// an edit, a different function. So libdescent carries a fingerprint of each
// of its source files (the first 16 hex digits of its SHA-256, written at
// build time by tools/hash_sources.cmake), and a recording puts the
// fingerprint of every file its spans name in its metadata, as
// "fingerprint.<path>" (saved and loaded with the trace, in descent's format and
// in Chrome JSON's otherData). The app shows a line only when the trace's
// fingerprint of its file is the one of the sources it embeds; otherwise it
// says that the file has changed since the recording, or that the trace,
// made before fingerprints or elsewhere, cannot say which version it saw.
namespace fingerprints {  // written by tools/hash_sources.cmake
struct Entry {
  std::string_view path, fingerprint;
};
extern const Entry kEntries[];
extern const size_t kCount;
}  // namespace fingerprints
constexpr std::string_view kSourceMetaPrefix = "fingerprint.";
// This build's fingerprint of `path` ("floors/dispatch/dispatcher.cpp"); ""
// when the file is not one of its sources.
std::string_view source_fingerprint(std::string_view path);
// Puts the fingerprint of every file t's spans name (their site and their
// decided_at) in t.metadata.
void add_source_fingerprints(Trace& t);
// Whether this build's text of `file` is the one t was recorded with.
enum class SourceMatch {
  Same,     // the fingerprints agree: this build's lines are the trace's
  Changed,  // they differ: the file has changed since the recording
  Unknown,  // t holds no fingerprint of the file (recorded before fingerprints, or elsewhere)
  NotOurs,  // this build has no such source
};
SourceMatch source_match(const Trace& t, std::string_view file);

// [SECTION] Queries -----------------------------------------------------------

// Finds a span's index from its id in O(1). descent numbers the spans of a
// recording 1, 2, 3, ..., so ids below a bound proportional to the spans
// added go in a table; any other id (a loaded file may use any) goes in a
// hash map. The table never grows past 4 entries a span plus 65536.
class SpanIndex {
 public:
  SpanIndex() = default;
  explicit SpanIndex(const Trace& t);   // every span of t; ids assumed unique (the first one wins)
  bool add(uint64_t id, size_t index);  // false when the id is there already
  size_t find(uint64_t id) const;       // the index, or SIZE_MAX when absent
  size_t size() const { return count_; }

 private:
  std::vector<uint32_t> dense_;  // id -> index + 1; 0 for none
  std::unordered_map<uint64_t, size_t> sparse_;
  size_t count_ = 0;
};

// Indices of the children of `parent_id` (0: the roots), in start order.
std::vector<size_t> children_of(const Trace& t, uint64_t parent_id);

// A duration as people read it: 850 ns, 12.3 us, 1.05 ms, 2.00 s.
std::string format_duration(int64_t ns);

// Human-readable tree: one line per span, indented by depth, with the floor,
// the name, the duration and the arguments, e.g.
//   [1 python   ] descent.ones(2, 2) + 1                  12.3 us
//     [2 binding  ] add                                    1.1 us
//       [3 dispatch ] add  keyset=CPU kernel=CPU           0.4 us
// A trace with device spans (Note [Device spans] in tracer.h) opens with the
// clock their times came from ("device clock: cuda:0: CUPTI, converted to
// host"), shows each one again under the launch its "ac2g" flow leaves,
// timed from the launch's start, with its own duration:
//       [8 launch   ] cudaLaunchKernel  kernel=add correlation=7   4.1 us
//         -> device: add  cuda:0 stream 7, 12.3 us after the launch began   1.2 us
// and names the device rows in their headers ("thread 2 (cuda:0 stream 7)").
std::string format_tree(const Trace& t);

// Note [Warm medians]
// ~~~~~~~~~~~~~~~~~~~
// The first call of a line is not what the line costs: it pays for cold
// caches and branch predictors, first-touch page faults, sites and strings
// registered on first use. `descent trace --repeat N` (tracing.run(code,
// repeat=N)) runs the code N times in one recording, so the roots of the
// code's thread (the one whose root starts first) are N runs of its
// statements, in order. A span of the last run is matched in every earlier
// run by its place: the same statement, the same path of child positions
// from it, the same names along the path (a run that went another way has no
// match there). Its warm time is the median over runs 2..N of the matching
// spans; its cold time is run 1's. The app's building (ui/story.h,
// timing_of) matches spans the same way, over calls grouped by line.
//
// Both have the tracer's own cost taken out: what the tracer ran between the
// span's two clock reads. That is, for a span with its descendants on its
// thread: corrected = measured - self - span_cost_ns * descendants - arg_cost
// * (arguments they and it recorded), floored at 0. span_cost_ns (what a
// span costs the spans around it: the whole of a begin and an end) is timed
// at start() on a hot loop of begin/end pairs; self (the metadata
// "tracer.span_self_cost_ns": what a span costs itself, only the part of its
// begin and end between its two clock reads) is the median duration of that
// loop's empty spans; arg_cost ("tracer.arg_cost_ns") is timed beside them.
// A statement's span (a floor-1 root, opened around the statement's frame
// by descent.tracing.run through _C._run_statement) costs itself more than a
// C++ span: the profile hook's call and return events for its frame. run(...,
// repeat=N) measures that before recording, on a no-op statement run the
// same way: its span's median duration less the same statement's median time
// untraced, timed alone as a span times it (_C._time_statement), and the
// trace's metadata "tracer.statement_self_cost_ns" takes the place of self
// for statements. (Traces saved before self costs were measured hold
// "tracer.statement_cost_ns", the excess over a whole span, and take
// span_cost_ns for self.) tests/bench/bench.py sets a repeated traced
// statement's corrected time beside the statement timed untraced that way.
// What is not taken out: the profile hook's events for Python frames other
// than the statement's and the package's (a C function called from the
// statement's Python code, a function of the user's), and whatever a span
// site computes only for its arguments; and span_cost_ns is a hot loop's
// cost, where the spans of real code run among other work.

// The floor-7 span in which a recording that ends waits for the work it
// queued on the devices (floors/streams/device_memory.h,
// synchronize_devices_in_use): it belongs to the recording, not to the code,
// so warm medians leave it out of the code's runs.
constexpr const char* kEndOfRecordingWait = "wait for the devices (end of recording)";

// Durations with the tracer's cost taken out, one per span of t.spans (Note [Warm medians]).
std::vector<int64_t> corrected_durations(const Trace& t);

// A span of the last run, timed over the runs (Note [Warm medians]).
struct WarmTime {
  int64_t warm_ns = -1;  // median of the corrected durations of the warm runs' matches; -1 when none matched
  int64_t cold_ns = -1;  // the first run's match, corrected; -1 when it has none
  int warm_samples = 0;  // warm runs that had a match
};

// One entry per span of t.spans; only spans of the last of `runs` runs on the
// code's thread are filled (the others keep -1s). std::invalid_argument when
// runs < 1 or that thread's roots do not split into `runs` equal runs (the
// code raised part way through).
std::vector<WarmTime> warm_medians(const Trace& t, size_t runs);

// The last run's tree, as format_tree prints it, with two time columns: the
// warm median and the cold first run, both corrected; then a line counting
// the last run's spans on other threads (parallel_for's chunks), which the
// tree does not show. Throws as warm_medians does.
std::string format_tree_repeated(const Trace& t, size_t runs);

// Checks the structure: ids unique, parents exist, children nested in time
// inside their parent, end >= start. Returns "" when sound, else what is wrong.
std::string check_structure(const Trace& t);

// [SECTION] Export and load ---------------------------------------------------

// Raised by the loaders for a malformed file; the message names the file, the
// line and what was wrong.
struct TraceFormatError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

// Writes `text` to the file at `path` whole or not at all: through a temporary
// file beside it, fsynced and renamed over it, so a full disk or a kill keeps
// the old file (Note [Saving a file whole], trace.cpp). std::runtime_error
// naming the file and the reason ("No space left on device") when it cannot;
// both savers below, the app's layout and its --state file use it.
void write_text_file(const std::string& path, const std::string& text);

// Appends `s` as a JSON string literal (quotes, escapes; bytes that are not
// UTF-8 become U+FFFD, so any parser accepts it). The Chrome export and the
// app's state dump both write strings with it.
void append_json_string(std::string& out, const std::string& s);
// Appends an argument's value as JSON: a number written to read back exactly,
// true/false, a string; nan and inf, which JSON has no numbers for, as strings.
void append_json_value(std::string& out, const ArgValue& v);

// Chrome Trace Event JSON (complete "X" events; loads in Perfetto).
std::string to_chrome_json(const Trace& t);
void save_chrome_json(const Trace& t, const std::string& path);

// descent's own text format: round-trips exactly (load(save(t)) == t).
std::string to_descent_format(const Trace& t);
Trace from_descent_format(const std::string& text, const std::string& source_name = "<string>");
void save(const Trace& t, const std::string& path);
Trace load(const std::string& path);

// Chrome Trace Event JSON as written by to_chrome_json() ("descent-chrome")
// or by other tools, PyTorch's profiler (Kineto) above all: an object with a
// "traceEvents" array, or a bare array of events. Rebuilds parents from time
// containment per thread, floors from PyTorch's categories and flows from
// "s"/"f" events; see Note [Placing PyTorch's events on floors] in
// load_chrome.cpp. TraceFormatError naming the source and the event for
// malformed input.
Trace from_chrome_json(const std::string& text, const std::string& source_name = "<string>");

// Note [Memory a loaded trace needs]
// ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
// A loaded span is a Span (its name, args and source file as std::strings,
// its args in a vector): measured on a 5.1M-span trace that descent wrote
// (1.06 GB), the loaded spans took 3.6 bytes of memory per byte of the file,
// and the text read in took one more while it was parsed. A file too large
// for this machine used to end in std::bad_alloc, or in the kernel's OOM
// killer, minutes in; so the loaders first compare the memory a file needs
// (kLoadBytesPerFileByte times its size) with what the machine has free
// (MemAvailable in /proc/meminfo, and RLIMIT_AS's room where a limit is
// set), and refuse a file that cannot fit with both numbers. Chrome JSON
// spends more bytes of the file on each span, so the same factor holds it
// to less memory than it needs, never more.
inline constexpr double kLoadBytesPerFileByte = 4.7;
// TraceFormatError naming the file, its size and the memory it would need,
// when that is more than this machine has free (Note [Memory a loaded trace needs]).
void check_memory_to_load(const std::string& path, uintmax_t file_bytes);

// Reads the file at `path` in whichever format it holds: descent's own (it
// starts with "descent-trace") or Chrome JSON (it starts with '{' or '[').
// TraceFormatError naming the file otherwise, or when it cannot be read.
Trace load_any(const std::string& path);

// Note [Merging the ranks' traces]
// ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
// `descent run --nproc N --trace DIR` records one trace per rank; this puts
// them on one timeline. The ranks run on one machine, and every trace's times
// are already on its steady clock (Note [The tracer's clock]: ticks convert
// to steady_clock ns), so the times are kept as they are. Each rank's threads
// become rows of their own, named "rank r: thread k" (or "rank r: sim:0
// stream 0") in the metadata, with "thread.M.rank"; ids are shifted so that
// they stay unique; and the k-th call of each collective (an MPI call's span,
// "MPI_Allreduce", NCCL's launch) on rank r is joined to the k-th on rank
// r + 1 by a "collective" flow: every rank calls collectives in the same
// order, so these are the same collective. Metadata "ranks" says how many;
// rank 0's metadata is kept as it is, another rank's under "rank<r>." (its
// dropped spans, its device's clock).
Trace merge_ranks(const std::vector<Trace>& ranks);

}  // namespace descent::trace
