// The autograd graph a trace recorded, for the graph panel: read from the
// floor-4 spans, laid out in layers, and given a state at each step.
//
// Note [The graph in the trace]
// ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
// The runtime's Autograd kernels (floors/autograd/variable_type.cpp) open a
// floor-4 span per op; when they record a node it carries graph=recorded,
// node (its name), node_id, saved, and edge0_id/edge1_id: the ids of the
// nodes its edges lead to, -1 for None. The engine opens one span per node it
// runs, "autograd::engine::evaluate_function: <name>", with the node's id. So
// the graph needs no side channel: it is in the trace, and a saved trace
// file shows it as well as a live run. AccumulateGrad nodes are never
// recorded by a kernel (a leaf's is made the first time an edge needs it);
// they enter the graph as the targets of edges, named from the edges list.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "tracer/trace.h"

namespace descent::ui {

struct GraphNode {
  int64_t id = 0;
  std::string name;                  // "MulBackward0", "AccumulateGrad"
  std::string saved;                 // what its formula saved: "self, other"
  size_t recorded_span = SIZE_MAX;   // the span that recorded it (SIZE_MAX for AccumulateGrad)
  size_t run_span = SIZE_MAX;        // the span in which backward ran it (SIZE_MAX: never ran)
  std::vector<int64_t> next;         // where its gradients go: node ids, -1 for None
  int layer = 0;                     // 0: the last op's node (the loss); leaves at the bottom
  int column = 0;                    // place in its layer
};

struct AutogradGraph {
  std::vector<GraphNode> nodes;      // by id: the order they were made
  int layers = 0;
  int widest = 0;                    // nodes in the fullest layer
  bool truncated = false;            // more nodes were recorded than the panel keeps (kMaxGraphNodes)
  int find(int64_t id) const;        // index in nodes, -1 when absent
};

constexpr size_t kMaxGraphNodes = 48;  // the most recent nodes kept (a traced loop records thousands)

AutogradGraph build_graph(const trace::Trace& t);

// A node at one moment of the call: not yet recorded, recorded, running in
// backward (the current span is inside its run), or done.
enum class NodeState { Ahead, Recorded, Running, Done };
// Each node's state at the moment `now_ns` on the trace's clock: a step
// down into a span is at its start, a step up out of it at its end.
std::vector<NodeState> graph_states(const AutogradGraph& g, const trace::Trace& t, int64_t now_ns);

}  // namespace descent::ui
