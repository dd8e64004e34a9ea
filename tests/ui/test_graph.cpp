// The graph panel's model (ui/graph.h) over a real trace of the runtime:
// Note [The graph in the trace].
#include "ui/graph.h"

#include <gtest/gtest.h>

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
  s.args = {{"graph", std::string("recorded")}, {"node", std::string("AddBackward0")}, {"node_id", int64_t{9}},
            {"edge0_id", int64_t{-1}}, {"edge1_id", int64_t{42}}};  // no edges list: the target's name is unknown
  t.spans.push_back(s);
  const AutogradGraph g = build_graph(t);
  ASSERT_EQ(g.nodes.size(), 2u);
  EXPECT_EQ(g.nodes[0].name, "AddBackward0");
  EXPECT_EQ(g.nodes[1].id, 42);
  EXPECT_EQ(g.nodes[1].name, "?");
}

}  // namespace
}  // namespace descent::ui
