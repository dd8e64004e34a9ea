// What the panels read of a trace besides the trace itself, built in one
// place. No ImGui: the tests build it without a window.
//
// A trace is shown once it has its models: the story (story.h), the
// device's queues (streams_model.h), the timeline's index
// (timeline_index.h), its flows as span indices and the autograd graph
// (graph.h). build_models makes them all, on the Python thread after a run
// (prepare_loaded: a million spans take a while, and the window keeps
// drawing meanwhile), on the window's thread for a trace opened from a file;
// show_loaded (app.h) hands them to the App, and no panel builds a model of
// its own. The memory panel's model has nothing to build ahead: it replays
// the allocator's history, which came with the run, up to each moment
// (memory_model.h).
#pragma once

#include <array>
#include <string>
#include <utility>
#include <vector>

#include "tracer/trace.h"
#include "ui/graph.h"
#include "ui/story.h"
#include "ui/streams_model.h"
#include "ui/timeline_index.h"

namespace descent::ui {

struct TraceModels {
  bool folded = false;                           // whether `story` is the beginner's (Note [The beginner's story])
  Story story;                                   // the call as steps: every panel
  StreamsModel streams;                          // the device's streams: the building's device strip, the Streams tab
  TimelineIndex timeline;                        // the flame chart's rows, lanes and levels of detail
  std::vector<std::pair<size_t, size_t>> flows;  // Trace::flows as (from, to) span indices: the timeline's arrows
  AutogradGraph graph;                           // the nodes the floor-4 spans recorded: the Autograd graph tab
};

// [SECTION] The compare view's model (panel_compare.cpp) --------------------------------

// A floor of a trace as the compare view lists it: its spans, their self time,
// and every op (distinct name) on it with how many times it ran, in order of
// first appearance. In PyTorch's profile every aten op that calls no other op
// also counts a kernel on floor 5, named "aten::add's kernel", with no event of
// its own (Note [Placing PyTorch's events on floors], tracer/load_chrome.cpp).
struct FloorOps {
  int spans = 0;
  int64_t self_ns = 0;
  std::vector<std::pair<std::string, int>> ops;  // name, calls
  bool within_dispatch = false;                  // PyTorch's kernels: inside floor 3's self time
};
std::array<FloorOps, 10> floor_ops(const trace::Trace& t, bool kineto);

// Where a call that raised stopped: the deepest span on the last path of the
// last call the story tells (the statement that raised), leaving out the
// allocator's frees of the unwinding; its floor (1..8) and its op, and the
// exception's last line ("RuntimeError: mat1 and mat2 shapes ..."). None
// (span SIZE_MAX) when `error` is empty.
struct RaisedAt {
  size_t span = SIZE_MAX;
  int floor = 0;
  std::string op;       // the span's name ("aten::mm"; the statement for floor 1)
  std::string message;  // the exception's last line
};
RaisedAt raised_at(const Story& s, const std::string& error);

// PyTorch's source for the check that raised `message` in `op` (Note
// [PyTorch's place for a failed check]): file, function, and what it checks.
// Empty `file` when it is not known.
struct PyTorchCheck {
  std::string file, function, what;
};
PyTorchCheck pytorch_check_of(const std::string& op, const std::string& message);

// All of them, for `t` (which they point into: it outlives them).
TraceModels build_models(const trace::Trace& t, bool fold_helpers);

// Trace::flows as (from, to) span indices; a flow whose ends are not both in the trace is left out.
std::vector<std::pair<size_t, size_t>> flow_indices(const trace::Trace& t);

}  // namespace descent::ui
