// The autograd graph of a trace: Note [The graph in the trace] (graph.h).
#include "ui/graph.h"

#include <algorithm>
#include <map>
#include <variant>

namespace descent::ui {

namespace {

int64_t int_arg(const trace::Span& s, const char* key, int64_t fallback) {
  const trace::ArgValue* v = s.find_arg(key);
  return v && std::holds_alternative<int64_t>(*v) ? std::get<int64_t>(*v) : fallback;
}
std::string str_arg(const trace::Span& s, const char* key) {
  const trace::ArgValue* v = s.find_arg(key);
  return v && std::holds_alternative<std::string>(*v) ? std::get<std::string>(*v) : std::string();
}
// The i-th name of "AccumulateGrad, None".
std::string nth_name(const std::string& list, size_t i) {
  size_t start = 0;
  for (size_t k = 0; k < i; ++k) {
    start = list.find(", ", start);
    if (start == std::string::npos) return "?";
    start += 2;
  }
  return list.substr(start, list.find(", ", start) - start);
}

constexpr const char kRunPrefix[] = "autograd::engine::evaluate_function: ";

}  // namespace

int AutogradGraph::find(int64_t id) const {
  auto it = std::lower_bound(nodes.begin(), nodes.end(), id, [](const GraphNode& n, int64_t v) { return n.id < v; });
  return it != nodes.end() && it->id == id ? int(it - nodes.begin()) : -1;
}

AutogradGraph build_graph(const trace::Trace& t) {
  std::map<int64_t, GraphNode> by_id;  // ids grow with creation (a leaf's AccumulateGrad: when first needed)
  for (size_t i = 0; i < t.spans.size(); ++i) {
    const trace::Span& s = t.spans[i];
    if (s.floor != trace::Floor::Autograd) continue;
    const int64_t id = int_arg(s, "node_id", -1);
    if (id < 0) continue;
    if (s.name.rfind(kRunPrefix, 0) == 0) {  // backward ran it
      GraphNode& n = by_id[id];
      n.id = id;
      if (n.name.empty()) n.name = s.name.substr(sizeof kRunPrefix - 1);
      if (n.run_span == SIZE_MAX) n.run_span = i;
      continue;
    }
    if (str_arg(s, "graph") != "recorded") continue;
    GraphNode& n = by_id[id];
    n.id = id;
    n.name = str_arg(s, "node");
    n.saved = str_arg(s, "saved");
    n.recorded_span = i;
    const std::string edges = str_arg(s, "edges");
    for (const char* key : {"edge0_id", "edge1_id"}) {
      const int64_t to = int_arg(s, key, -2);
      if (to == -2) break;
      n.next.push_back(to);
      if (to >= 0) {  // an AccumulateGrad enters the graph here, named by the edges list
        GraphNode& target = by_id[to];
        target.id = to;
        if (target.name.empty()) target.name = nth_name(edges, n.next.size() - 1);
      }
    }
  }
  AutogradGraph g;
  for (auto& [id, n] : by_id) g.nodes.push_back(std::move(n));
  // GraphRoot (the engine's start) is not a node of the recorded graph.
  std::erase_if(g.nodes, [](const GraphNode& n) { return n.name == "GraphRoot"; });
  if (g.nodes.size() > kMaxGraphNodes) {
    g.nodes.erase(g.nodes.begin(), g.nodes.end() - kMaxGraphNodes);
    g.truncated = true;
  }
  // Layers: a node sits one below every node whose edge leads to it (the
  // longest path from a node nothing points at), found in topological order.
  const size_t n = g.nodes.size();
  std::vector<std::vector<size_t>> children(n);
  std::vector<int> incoming(n, 0), layer(n, 0);
  for (size_t k = 0; k < n; ++k)
    for (int64_t to : g.nodes[k].next)
      if (const int j = to >= 0 ? g.find(to) : -1; j >= 0) {
        children[k].push_back(size_t(j));
        ++incoming[size_t(j)];
      }
  std::vector<size_t> ready;
  for (size_t k = n; k-- > 0;)
    if (incoming[k] == 0) ready.push_back(k);  // the earliest-made node is taken first
  while (!ready.empty()) {
    const size_t k = ready.back();
    ready.pop_back();
    for (size_t c : children[k]) {
      layer[c] = std::max(layer[c], layer[k] + 1);
      if (--incoming[c] == 0) ready.push_back(c);
    }
  }
  std::map<int, int> used;
  for (size_t k = n; k-- > 0;) {  // the latest first in each layer
    g.nodes[k].layer = layer[k];
    g.nodes[k].column = used[layer[k]]++;
    g.layers = std::max(g.layers, layer[k] + 1);
    g.widest = std::max(g.widest, used[layer[k]]);
  }
  return g;
}

std::vector<NodeState> graph_states(const AutogradGraph& g, const trace::Trace& t, int64_t now_ns) {
  std::vector<NodeState> out(g.nodes.size(), NodeState::Ahead);
  auto begun = [&](size_t s) { return s != SIZE_MAX && t.spans[s].start_ns <= now_ns; };
  for (size_t k = 0; k < g.nodes.size(); ++k) {
    const GraphNode& n = g.nodes[k];
    NodeState st = begun(n.recorded_span) ? NodeState::Recorded : NodeState::Ahead;
    if (begun(n.run_span)) st = now_ns < t.spans[n.run_span].end_ns ? NodeState::Running : NodeState::Done;
    out[k] = st;
  }
  // An AccumulateGrad is there as soon as a recorded node's edge leads to it.
  for (size_t k = 0; k < g.nodes.size(); ++k) {
    if (out[k] == NodeState::Ahead) continue;
    for (int64_t to : g.nodes[k].next) {
      const int j = to >= 0 ? g.find(to) : -1;
      if (j >= 0 && out[size_t(j)] == NodeState::Ahead && g.nodes[size_t(j)].recorded_span == SIZE_MAX)
        out[size_t(j)] = NodeState::Recorded;
    }
  }
  return out;
}

}  // namespace descent::ui
