// The graph panel's model (ui/graph.h) over a real trace of the runtime:
// Note [The graph in the trace].
#include "ui/graph.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>

#include "floors/autograd/engine.h"
#include "floors/dispatch/dispatcher.h"
#include "tracer/tracer.h"

namespace descent::ui {
namespace {

// loss = sum(relu(x @ w) * x), then loss.backward(), traced.
trace::Trace traced_backward() {
  Tensor x = call(Op::ones, DimVector{2, 2}, IValue(), IValue());
  Tensor w = call(Op::ones, DimVector{2, 2}, IValue(), IValue());
  autograd::set_requires_grad(x, true);
  autograd::set_requires_grad(w, true);
  trace::start();
  Tensor loss = call(Op::sum, call(Op::mul, call(Op::relu, call(Op::mm, x, w)), x), IValue());
  autograd::backward({loss}, {Tensor()}, {});
  {
    NoGradGuard no_grad;
    call(Op::neg, x);  // something after backward, outside the graph
  }
  return trace::stop();
}

size_t span_named(const trace::Trace& t, const std::string& name, size_t from = 0) {
  for (size_t i = from; i < t.spans.size(); ++i)
    if (t.spans[i].name == name) return i;
  return SIZE_MAX;
}

TEST(Graph, ReadsTheNodesEdgesAndLayersFromTheTrace) {
  const trace::Trace t = traced_backward();
  const AutogradGraph g = build_graph(t);
  std::vector<std::string> names;
  for (const GraphNode& n : g.nodes) names.push_back(n.name);
  EXPECT_EQ(names, (std::vector<std::string>{"MmBackward0", "AccumulateGrad", "AccumulateGrad", "ReluBackward0",
                                             "MulBackward0", "SumBackward0"}))
      << "in the order they were made; GraphRoot is the engine's, not the graph's";
  std::vector<int> layers;
  for (const GraphNode& n : g.nodes) layers.push_back(n.layer);
  EXPECT_EQ(layers, (std::vector<int>{3, 4, 4, 2, 1, 0})) << "the loss's node on top, the leaves at the bottom";
  EXPECT_EQ(g.layers, 5);
  EXPECT_EQ(g.widest, 2);
  const GraphNode& mul = g.nodes[size_t(g.find(g.nodes[4].id))];
  ASSERT_EQ(mul.next.size(), 2u);
  EXPECT_EQ(mul.next[0], g.nodes[3].id) << "MulBackward0 -> ReluBackward0";
  EXPECT_EQ(mul.next[1], g.nodes[1].id) << "MulBackward0 -> x's AccumulateGrad, the same one MmBackward0 uses";
  EXPECT_EQ(mul.saved, "self, other");
  for (const GraphNode& n : g.nodes) EXPECT_NE(n.run_span, SIZE_MAX) << n.name << " ran in backward";
}

TEST(Graph, StatesFollowTheStepThroughRecordingAndBackward) {
  const trace::Trace t = traced_backward();
  const AutogradGraph g = build_graph(t);
  auto states_at = [&](size_t span, bool leaving = false) {  // stepping down into `span`, or up out of it
    std::string s;
    const int64_t now = span == SIZE_MAX ? INT64_MIN : leaving ? t.spans[span].end_ns : t.spans[span].start_ns;
    for (NodeState st : graph_states(g, t, now)) s += "ARNd"[int(st)];
    return s;
  };
  // At the mm's own dispatch, nothing is recorded yet.
  EXPECT_EQ(states_at(span_named(t, "aten::mm")), "AAAAAA");
  // Once relu has run, MmBackward0 and the leaves' AccumulateGrads are there.
  EXPECT_EQ(states_at(span_named(t, "aten::mul")), "RRRRAA");
  // Backward: SumBackward0 runs first, then MulBackward0 (done: the nodes above it).
  const size_t mul_run = span_named(t, "autograd::engine::evaluate_function: MulBackward0");
  ASSERT_NE(mul_run, SIZE_MAX);
  EXPECT_EQ(states_at(mul_run), "RRRRNd");
  EXPECT_EQ(states_at(mul_run, true), "RRRRdd") << "stepping up out of its run: done";
  EXPECT_EQ(states_at(span_named(t, "aten::neg")), "dddddd") << "after backward every node has run";
  EXPECT_EQ(states_at(SIZE_MAX), "AAAAAA");
}

// "0x5f1e2a40": a data_ptr as descent._app.run writes it (Python's hex()).
std::string hex(const void* p) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "0x%llx", static_cast<unsigned long long>(reinterpret_cast<uintptr_t>(p)));
  return buf;
}

TEST(Graph, AnEdgePerUseTheLeavesNamedAndTheGradientsShapes) {
  // loss = (x @ x).sum() * c, c not requiring grad; then backward.
  Tensor x = call(Op::ones, DimVector{2, 2}, IValue(), IValue());
  Tensor c = call(Op::ones, DimVector{1}, IValue(), IValue());
  autograd::set_requires_grad(x, true);
  trace::start();
  Tensor loss = call(Op::mul, call(Op::sum, call(Op::mm, x, x), IValue()), c);
  autograd::backward({loss}, {Tensor()}, {});
  trace::Trace t = trace::stop();
  t.metadata["autograd.leaf_names"] = hex(x.data_ptr()) + "=x; 0x1=gone";  // Note [Naming the leaves]
  const AutogradGraph g = build_graph(t);
  std::vector<std::string> titles;
  for (const GraphNode& n : g.nodes) titles.push_back(n.title());
  EXPECT_EQ(titles, (std::vector<std::string>{"MmBackward0", "x [2, 2]", "SumBackward0", "MulBackward0"}));
  const GraphNode& mm = g.nodes[0];
  const GraphNode& leaf = g.nodes[1];
  EXPECT_EQ(leaf.name, "AccumulateGrad");
  EXPECT_EQ(leaf.variable, "x");
  EXPECT_EQ(leaf.shape, "[2, 2]");
  EXPECT_EQ(mm.next, (std::vector<int64_t>{leaf.id, leaf.id})) << "x @ x: two uses of x, two edges";
  EXPECT_EQ(mm.input_shapes, (std::vector<std::string>{"[2, 2]", "[2, 2]"}));
  ASSERT_EQ(g.edges.size(), 4u) << "mm's two to x, sum's to mm, mul's to sum";
  EXPECT_EQ(g.edges[0].from, 0u);
  EXPECT_EQ(g.edges[0].to, 1u);
  EXPECT_EQ(g.edges[0].parallel, 0);
  EXPECT_EQ(g.edges[1].parallel, 1);
  EXPECT_EQ(g.edges[0].parallel_count, 2);
  EXPECT_EQ(g.edges[1].parallel_count, 2);
  EXPECT_EQ(g.edges[2].parallel_count, 1);
  // The gradients as backward passed them: one in per output, one out per edge.
  EXPECT_EQ(mm.grads_in, "[2, 2]");
  EXPECT_EQ(mm.grads_out, "[2, 2], [2, 2]");
  EXPECT_EQ(leaf.grads_in, "[2, 2]");
  EXPECT_EQ(leaf.grads_out, "") << "AccumulateGrad writes .grad and sends nothing on";
  const GraphNode& mul = g.nodes[3];
  EXPECT_EQ(mul.next.size(), 2u);
  EXPECT_EQ(mul.next[1], -1) << "c does not require grad";
  EXPECT_EQ(mul.grads_out, "[], None");
  // The hover's lines say it in words, "None" never bare.
  const std::vector<std::string> details = node_details(g, 3);
  bool said = false;
  for (const std::string& line : details) {
    said |= line == "out 1 [1]: " + std::string(kNoGradient);
    EXPECT_EQ(line.find(": None"), std::string::npos) << line;
  }
  EXPECT_TRUE(said) << "the None edge explained";
  const std::vector<std::string> leaf_details = node_details(g, 1);
  EXPECT_NE(leaf_details[0].find("adds the gradient into x.grad"), std::string::npos) << leaf_details[0];
  EXPECT_EQ(leaf_details[1], "gradient in: [2, 2]");
  EXPECT_EQ(node_details(g, 0)[2], "gradient in: [2, 2]");
  EXPECT_EQ(node_details(g, 0)[3], "out 0 [2, 2]: to x [2, 2]");
}

TEST(Graph, WithoutNamesALeafKeepsItsShapeAndTheStatesTheirWords) {
  const trace::Trace t = traced_backward();  // no autograd.leaf_names: not run through descent._app
  const AutogradGraph g = build_graph(t);
  EXPECT_EQ(g.nodes[1].variable, "");
  EXPECT_EQ(g.nodes[1].shape, "[2, 2]");
  EXPECT_EQ(g.nodes[1].title(), "AccumulateGrad");
  std::vector<std::string> words, meanings;
  for (NodeState s : kNodeStates) {
    words.push_back(state_word(s));
    meanings.push_back(state_meaning(s));
  }
  EXPECT_EQ(words, (std::vector<std::string>{"ahead", "recorded", "running", "done"}));
  std::sort(meanings.begin(), meanings.end());
  EXPECT_EQ(std::unique(meanings.begin(), meanings.end()), meanings.end()) << "a meaning per state";
}

TEST(Graph, AnEmptyOrForeignTraceHasNoGraph) {
  trace::Trace t;
  EXPECT_TRUE(build_graph(t).nodes.empty());
  trace::Span s;
  s.id = 1;
  s.floor = trace::Floor::Autograd;
  s.name = "aten::add";
  s.args.push_back({"graph", std::string("none: no input requires grad")});
  t.spans.push_back(s);
  s.id = 2;
  s.args = {{"graph", std::string("recorded")},
            {"node", std::string("AddBackward0")},
            {"node_id", int64_t{9}},
            {"edge0_id", int64_t{-1}},
            {"edge1_id", int64_t{42}}};  // no edges list: the target's name is unknown
  t.spans.push_back(s);
  const AutogradGraph g = build_graph(t);
  ASSERT_EQ(g.nodes.size(), 2u);
  EXPECT_EQ(g.nodes[0].name, "AddBackward0");
  EXPECT_EQ(g.nodes[1].id, 42);
  EXPECT_EQ(g.nodes[1].name, "?");
}

}  // namespace
}  // namespace descent::ui
