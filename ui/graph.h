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
// A recorded node also carries input_shapes (one per edge: the shape of the
// forward input, so of the gradient sent along that edge) and edge_data_ptrs;
// a run node carries grads_in and grads_out, the shapes of the gradients that
// arrived and that it sent on ("None" where there was none). An edge per use:
// x @ x records two edges to x's AccumulateGrad, and the panel draws both.
//
// Note [Naming the leaves]
// ~~~~~~~~~~~~~~~~~~~~~~~~
// A student knows a leaf as `x`, not as "AccumulateGrad". C++ cannot know a
// Python name, so the name is joined on afterwards, by the leaf's data_ptr():
// the recording span's edge_data_ptrs gives, per edge, the data_ptr of the
// leaf an AccumulateGrad edge reaches ("0x5f1e2a40, -"), and descent.tracing.run
// (which the app, the lessons and `descent trace` run code through), once the
// code has run, looks through the code's namespace for the names
// that hold a leaf requiring grad (the variables, and the parameters of the
// modules there: "model.weight") and writes them into the trace's metadata
// as autograd.leaf_names ("0x5f1e2a40=x; 0x5f1e2b80=w"), so a saved trace
// keeps them. This is the simplest join that survives backward freeing the
// graph (a leaf's AccumulateGrad dies with it, its id with it). What it
// cannot see: a leaf no name holds any more (reassigned, or made inline), a
// leaf freed whose memory a later leaf reuses (the later one's name is
// shown), and code traced by other means (a `with descent.trace()` block):
// those leaves stay "AccumulateGrad" with their shape.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "tracer/trace.h"

namespace descent::ui {

struct GraphNode {
  int64_t id = 0;
  std::string name;                       // "MulBackward0", "AccumulateGrad"
  std::string saved;                      // what its formula saved: "self, other"
  size_t recorded_span = SIZE_MAX;        // the span that recorded it (SIZE_MAX for AccumulateGrad)
  size_t run_span = SIZE_MAX;             // the span in which backward ran it (SIZE_MAX: never ran)
  std::vector<int64_t> next;              // where its gradients go: node ids, -1 for None, one per use
  std::vector<std::string> input_shapes;  // per edge: the forward input's shape, "[2, 2]" ("" unknown)
  std::string variable;                   // AccumulateGrad: the Python names holding the leaf, "x" ("" none)
  std::string shape;                      // AccumulateGrad: the leaf's shape, "[2, 2]" ("" unknown)
  std::string grads_in;                   // as backward ran it: the gradients that arrived, "[2, 2]"
  std::string grads_out;                  // and those it sent on, one per edge, "[2, 2], None"
  int layer = 0;                          // 0: the last op's node (the loss); leaves at the bottom
  int column = 0;                         // place in its layer
  std::string title() const;              // "x [2, 2]" for a named leaf, else the name
};

// One use of an input: a line from a node to the node its gradient flows to.
struct GraphEdge {
  size_t from = 0, to = 0;  // indices in nodes
  size_t slot = 0;          // which of from's edges (next[slot])
  int parallel = 0;         // among the edges from `from` to `to`: 0, 1, ...
  int parallel_count = 1;   // how many edges join the same two nodes (x @ x: 2)
};

struct AutogradGraph {
  std::vector<GraphNode> nodes;  // by id: the order they were made
  std::vector<GraphEdge> edges;  // every edge between two kept nodes, in nodes' and slots' order
  int layers = 0;
  int widest = 0;              // nodes in the fullest layer
  bool truncated = false;      // more nodes were recorded than the panel keeps (kMaxGraphNodes)
  int find(int64_t id) const;  // index in nodes, -1 when absent
};

constexpr size_t kMaxGraphNodes = 48;  // the most recent nodes kept (a traced loop records thousands)

AutogradGraph build_graph(const trace::Trace& t);

// A node at one moment of the call: not yet recorded, recorded, running in
// backward (the current span is inside its run), or done.
enum class NodeState { Ahead, Recorded, Running, Done };
constexpr NodeState kNodeStates[] = {NodeState::Ahead, NodeState::Recorded, NodeState::Running, NodeState::Done};
const char* state_word(NodeState s);     // "ahead", "recorded", "running", "done"
const char* state_meaning(NodeState s);  // the legend's line: "recorded on floor 4; backward has not run it"

// What an edge to None means (an input that does not require grad), in words.
constexpr const char kNoGradient[] = "no gradient: the input does not require grad";

// The lines shown on hovering over node k: what it saved, each edge with its
// shape and target, the gradients in and out as far as the trace has them.
std::vector<std::string> node_details(const AutogradGraph& g, size_t k);
// Each node's state at the moment `now_ns` on the trace's clock: a step
// down into a span is at its start, a step up out of it at its end.
std::vector<NodeState> graph_states(const AutogradGraph& g, const trace::Trace& t, int64_t now_ns);

}  // namespace descent::ui
