// The story of a call: a Trace turned into the steps the building view plays.
//
// [SECTION] Steps
// [SECTION] Floors at a step
// [SECTION] Warm repeats
//
// Plain data, no ImGui: the app's panels read it, and tests/ui checks it
// without a window. See Note [A call as steps].
//
// Note [A call as steps]
// ~~~~~~~~~~~~~~~~~~~~~~
// A call is told as a walk over its span tree on the thread that made it:
// one step down into every span (the token arrives on the span's floor) and
// one step up out of it (the token climbs back to the parent's floor with the
// result), in the order the thread ran them. `descent.ones(2, 2) + 1` traced
// as 15 spans is 30 steps. Spans on other threads (the intra-op pool's
// workers) are not steps: the timeline shows them. A step's time is when it
// happened on the trace's clock (the span's start going down, its end coming
// up), which is what "real time" playback follows.
#pragma once

#include <array>
#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "tracer/trace.h"

namespace descent::ui {

// [SECTION] Steps ----------------------------------------------------------------

struct Step {
  size_t span = 0;    // index into Trace::spans
  bool down = true;   // entering the span (down) or leaving it (up)
  int64_t at_ns = 0;  // start going down, end coming up
};

// What a floor of the building shows; one per floor 1..8 (index 0 unused).
constexpr int kBuildingFloors = 8;

// What one call (a root span and everything under it on the told thread)
// did, in a few facts: what the building says about the floors it skips is
// derived from them (floors_at), never assumed. Span indices, SIZE_MAX for none.
struct CallFacts {
  size_t first_below_python = SIZE_MAX;     // the first span below floor 1 (where C++ was entered)
  size_t first_dispatch = SIZE_MAX;         // the first op dispatched
  size_t factory = SIZE_MAX;                // an op dispatched with no backend in its key set (a factory)
  size_t no_autograd_key = SIZE_MAX;        // an op whose key set has a backend but no Autograd key (excluded)
  size_t autograd_fell_through = SIZE_MAX;  // an op whose Autograd key fell through
  size_t cpu_kernel = SIZE_MAX;             // a kernel that ran a CPU loop (reference or optimized)
  size_t device_kernel = SIZE_MAX;          // a kernel that enqueued a device loop (sim, cuda)
  size_t view_kernel = SIZE_MAX;            // a kernel that made a view
  size_t stopped_kernel = SIZE_MAX;         // a kernel that recorded no variant (left by an exception)
  size_t free_span = SIZE_MAX;              // a caching allocator free
  size_t wait = SIZE_MAX;                   // a floor-7 wait for the device
  size_t copy = SIZE_MAX;                   // a floor-7 copy
  size_t event = SIZE_MAX;                  // a floor-7 event span
  bool device_keys = false;                 // a dispatch whose key set names a device backend (Sim, CUDA)
};

struct Story {
  const trace::Trace* trace = nullptr;
  uint32_t thread = 0;               // the thread whose calls are told
  std::vector<Step> steps;           // down and up for every span of that thread
  std::vector<size_t> parent_index;  // per span: index of its parent span, SIZE_MAX for a root
  std::vector<int64_t> self_ns;      // per span: its time minus its children's
  std::vector<int> depth;            // per span: 0 for a root
  // Per span: its children, in start order: child_list[child_begin[i] .. child_begin[i + 1]).
  std::vector<size_t> child_begin, child_list;
  std::span<const size_t> children(size_t i) const {
    return {child_list.data() + child_begin[i], child_begin[i + 1] - child_begin[i]};
  }
  std::vector<size_t> roots;      // indices of the root spans of `thread`, in start order
  std::vector<size_t> down_step;  // per span: its step going down (SIZE_MAX: not told)
  std::vector<size_t> up_step;    // per span: its step coming up
  // Per root: the down steps of its spans on each floor 1..8, in order.
  std::vector<std::array<std::vector<size_t>, kBuildingFloors + 1>> floor_steps;
  std::vector<uint32_t> child_pos;                         // per span: its position among its parent's children
  std::array<bool, kBuildingFloors + 1> floor_anywhere{};  // whether any span of the trace is on floor f
  std::vector<CallFacts> facts;                            // per root: what its call did (skip reasons)
  std::vector<size_t> line_of_root;                        // per root: its line's index in `lines`
  std::vector<std::vector<size_t>> lines;                  // per distinct line (root name): its roots' positions
  // Per told span: its group of spans with the same path of names from its
  // root (UINT32_MAX when none), and per group its first kMaxWarmSamples + 1
  // spans in story order: the repeats inside one call (a loop's body).
  std::vector<uint32_t> repeat_group;
  std::vector<std::vector<size_t>> repeats;
};

// Note [The beginner's story]
// ~~~~~~~~~~~~~~~~~~~~~~~~~~~
// A student new to the floors does not need every span the runtime opens:
// the package's own Python helpers under a statement (floor-1 spans inside a
// floor-1 span, such as Tensor.backward under `loss.backward()`) and each
// redispatch of an op (aten::add inside aten::add: PyTorch records the op
// once, Note [A span per redispatch]). Folded, such a span has no steps of
// its own: the story goes from its parent straight to its children, which
// are told as usual, and the timeline still draws it. V (View > Fold helper
// spans) switches between the whole story and the folded one: the 34 steps
// of `descent.ones(2, 2) + 1` are 30 folded, the 102 of a small backward
// pass 78.
//
// Builds the story of the trace's first thread (the one that ran the user's
// code: thread 0 when it has spans). An empty trace gives an empty story.
// `fold_helpers`: Note [The beginner's story].
Story build_story(const trace::Trace& t, bool fold_helpers = false);
// Whether span i is a helper the beginner's story folds into its parent.
bool is_helper_span(const Story& s, size_t i);

// Floor the token is on at a step: the span's floor going down; the parent's
// floor coming up (floor 1 once it has left a root: the result is back in
// Python). Floors above 8 (the device's own row) are drawn on floor 8.
int token_floor(const Story& s, size_t step);
int building_floor(trace::Floor f);  // 1..8 for a building floor, 0 for none

// [SECTION] Floors at a step ---------------------------------------------------

enum class FloorState {
  Active,   // a span on this floor is open at this step (the path from the root)
  Visited,  // the call reached the floor earlier and has left it
  Ahead,    // the call will reach it later
  Skipped,  // the call never reaches this floor
};

// At a step up out of a span, that span's floor shows the span left (as the
// detail panel does), still lit when an outer span of the same floor is open;
// every other floor shows its innermost open span, or its last or next one.
struct FloorView {
  FloorState state = FloorState::Skipped;
  size_t span = SIZE_MAX;   // the innermost open span here (Active), or the last/next one (Visited/Ahead)
  int spans_in_call = 0;    // spans of the current root call on this floor
  std::string skip_reason;  // why the call does not reach it (Skipped)
};

// The building at `step`: one view per floor, index 1..8.
std::array<FloorView, kBuildingFloors + 1> floors_at(const Story& s, size_t step);

// Index of the root call that `step` belongs to.
size_t root_of_step(const Story& s, size_t step);

// The root ancestor of span `i`.
size_t root_of_span(const Story& s, size_t i);

// [SECTION] Warm repeats --------------------------------------------------------

// Warm medians, as Note [Warm medians] (tracer/trace.h) has them for
// `descent trace --repeat`: a span is matched by its place (the same path of
// child positions and names) in the other calls of the same line, and the
// building shows the median over the warm ones (all but the first) beside the
// cold first time. Two differences: calls are grouped by their line's text,
// not by a known run count, so a loaded trace or a loop gets medians too; and
// the times are as measured, the tracer's cost included (the detail panel
// says how much). At most kMaxWarmSamples calls are read per span, so a loop
// of a million calls stays cheap to draw.
//
// Note [Cold and warm times]
// ~~~~~~~~~~~~~~~~~~~~~~~~~~
// The first call of a line is cold: its kernels' code and data are not in the
// caches yet, the allocator has no block to reuse, lazy set-up (a thread pool,
// a device context) happens inside it, and fresh pages fault in. A warm call,
// the same line run again, shows what the line costs in a loop, often ten
// times less. A span whose path of names already ran earlier in the same
// call is warm as well: the body of a loop run as one statement
// (`for i in range(1000): x + 1`), whose first pass is the cold one. The
// app labels every time cold or warm; R runs the line on
// screen kWarmRuns times so the warm median shows beside the cold time, the
// step bar says which run is on screen ("run 2 of 5"), and M goes to the run
// whose time is the median of the warm ones. Inclusive is a span with
// everything under it; self is the span alone, its children's time taken out.
//
// One rule for every view (the floor, the detail panel, the timeline, the
// roofline), decided by timing_of and worded by timing_text, so that no two
// say different things of one span:
// - A span is warm or cold by itself (is_warm): warm when it repeats, cold
//   when it is the first at its place. Its own time carries that word.
// - A warm median is over the later runs of its line at the same place (R,
//   --repeat), or, for a line run once, over the later passes of its path of
//   names inside the call when there are at least two of them (a loop). A
//   second call in one line run once is warm with its own time: one sample is
//   no median, and the first call is not given the second's time.
// - A view leads with the warm median for a warm span that has one, with the
//   span's own time otherwise (lead_inclusive_ns), and says the other beside it
//   ("cold 3 us ... (warm median of 4 runs: 1 us)").
constexpr size_t kMaxWarmSamples = 100;
constexpr int kWarmRuns = 5;
struct Timing {
  int64_t inclusive_ns = 0;  // the warm median where there is one (warm_samples > 0), else the span's own
  int64_t self_ns = 0;
  int warm_samples = 0;           // the warm calls the median is over (0: no median)
  bool across_runs = false;       // the median is over runs of the line (else over passes inside one call)
  int64_t cold_inclusive_ns = 0;  // the first call's time of the matching span (when cold_known)
  bool cold_known = false;        // whether the first call had a matching span (its structure may differ)
  bool warm = false;              // the span itself repeats (is_warm): the word its own time carries
  int64_t own_inclusive_ns = 0, own_self_ns = 0;  // the span's own times
  // The time a view leads with (see above).
  bool leads_with_median() const { return warm && warm_samples > 0; }
  int64_t lead_inclusive_ns() const { return leads_with_median() ? inclusive_ns : own_inclusive_ns; }
  int64_t lead_self_ns() const { return leads_with_median() ? self_ns : own_self_ns; }
};
Timing timing_of(const Story& s, size_t span);
// "cold" or "warm": the word of the time a view leads with (Timing::warm).
inline const char* time_word(const Timing& t) { return t.warm ? "warm" : "cold"; }
// The line every view shows for a span's time: "cold 3.0 us inclusive, 1.0 us
// self", "warm 1.0 us inclusive, 0.5 us self  (median of 4 warm runs; cold
// first call 3.0 us)", "warm 2.0 us ... (a repeat inside its line, its own
// time; the first took 3.0 us)".
std::string timing_text(const Timing& t);
// Where the lead time comes from, for a sentence: "the warm median of 4 runs",
// "a repeat's own time, warm", "a first call, cold".
std::string time_source(const Timing& t);

// Which run of its line the call at `step` is: {k, n} with k from 1 ({1, 1}
// for a line run once). Note [Cold and warm times].
struct RunOf {
  size_t k = 1, n = 1;
};
RunOf run_of_step(const Story& s, size_t step);
// Whether a span's own time is warm: its call repeats its line, or the same
// path of names ran earlier in its call (a loop's body after its first pass).
// Note [Cold and warm times].
bool is_warm(const Story& s, size_t span);
// "cold" or "warm", the word every time shown carries.
inline const char* temperature(const Story& s, size_t span) { return is_warm(s, span) ? "warm" : "cold"; }
// The step in the run of the same line whose inclusive time is the median of
// the warm runs (all but the first), at the same place in its run as `step`
// is in its own; `step` itself when the line ran fewer than three times.
size_t median_run_step(const Story& s, size_t step);

}  // namespace descent::ui
