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

// All of them, for `t` (which they point into: it outlives them).
TraceModels build_models(const trace::Trace& t, bool fold_helpers);

// Trace::flows as (from, to) span indices; a flow whose ends are not both in the trace is left out.
std::vector<std::pair<size_t, size_t>> flow_indices(const trace::Trace& t);

}  // namespace descent::ui
