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
// "AccumulateGrad, None" or "[2, 2], [3]" as its items: split at the ", "
// outside brackets. An empty string has none.
std::vector<std::string> split_list(const std::string& list) {
  std::vector<std::string> out;
  if (list.empty()) return out;
  int depth = 0;
  size_t start = 0;
  for (size_t i = 0; i < list.size(); ++i) {
    depth += list[i] == '[' ? 1 : list[i] == ']' ? -1 : 0;
    if (depth == 0 && list.compare(i, 2, ", ") == 0) {
      out.push_back(list.substr(start, i - start));
      start = i + 2;
    }
  }
  out.push_back(list.substr(start));
  return out;
}
std::string nth(const std::vector<std::string>& items, size_t i, const char* fallback = "") {
  return i < items.size() ? items[i] : fallback;
}

// The trace's autograd.leaf_names, "0x5f1e2a40=x; 0x5f1e2b80=w, w2", by data_ptr (Note [Naming the leaves]).
std::map<std::string, std::string> leaf_names(const trace::Trace& t) {
  std::map<std::string, std::string> out;
  auto it = t.metadata.find("autograd.leaf_names");
  if (it == t.metadata.end()) return out;
  const std::string& s = it->second;
  for (size_t start = 0; start < s.size();) {
    size_t end = s.find("; ", start);
    if (end == std::string::npos) end = s.size();
    const std::string entry = s.substr(start, end - start);
    if (const size_t eq = entry.find('='); eq != std::string::npos) out[entry.substr(0, eq)] = entry.substr(eq + 1);
    start = end + 2;
  }
  return out;
}

constexpr const char kRunPrefix[] = "autograd::engine::evaluate_function: ";

}  // namespace

int AutogradGraph::find(int64_t id) const {
  auto it = std::lower_bound(nodes.begin(), nodes.end(), id, [](const GraphNode& n, int64_t v) { return n.id < v; });
  return it != nodes.end() && it->id == id ? int(it - nodes.begin()) : -1;
}

const char* state_word(NodeState s) {
  switch (s) {
    case NodeState::Ahead:
      return "ahead";
    case NodeState::Recorded:
      return "recorded";
    case NodeState::Running:
      return "running";
    case NodeState::Done:
      return "done";
  }
  return "";
}

const char* state_meaning(NodeState s) {
  switch (s) {
    case NodeState::Ahead:
      return "not recorded yet: its op has not run (not drawn)";
    case NodeState::Recorded:
      return "recorded on floor 4 as its op ran; backward has not run it";
    case NodeState::Running:
      return "backward is running its formula now";
    case NodeState::Done:
      return "backward has run it and sent its gradients on";
  }
  return "";
}

std::string GraphNode::title() const { return variable.empty() ? name : variable + " " + shape; }

AutogradGraph build_graph(const trace::Trace& t) {
  const std::map<std::string, std::string> names = leaf_names(t);
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
      if (n.run_span == SIZE_MAX) {
        n.run_span = i;
        n.grads_in = str_arg(s, "grads_in");
        n.grads_out = str_arg(s, "grads_out");
      }
      continue;
    }
    if (str_arg(s, "graph") != "recorded") continue;
    GraphNode& n = by_id[id];
    n.id = id;
    n.name = str_arg(s, "node");
    n.saved = str_arg(s, "saved");
    n.recorded_span = i;
    const std::vector<std::string> edges = split_list(str_arg(s, "edges"));
    n.input_shapes = split_list(str_arg(s, "input_shapes"));
    const std::vector<std::string> ptrs = split_list(str_arg(s, "edge_data_ptrs"));
    for (const char* key : {"edge0_id", "edge1_id", "edge2_id"}) {
      const int64_t to = int_arg(s, key, -2);
      if (to == -2) break;
      const size_t slot = n.next.size();
      n.next.push_back(to);
      if (to >= 0) {  // an AccumulateGrad enters the graph here, named by the edges list
        GraphNode& target = by_id[to];
        target.id = to;
        if (target.name.empty()) target.name = nth(edges, slot, "?");
        if (target.recorded_span != SIZE_MAX) continue;  // a recorded node: not a leaf
        if (target.shape.empty()) target.shape = nth(n.input_shapes, slot);
        auto named = names.find(nth(ptrs, slot));
        if (target.variable.empty() && named != names.end()) target.variable = named->second;
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
  // Every use an edge: x @ x's two edges to x's AccumulateGrad both, told apart by `parallel`.
  std::map<std::pair<size_t, size_t>, int> uses;
  for (size_t k = 0; k < n; ++k)
    for (size_t slot = 0; slot < g.nodes[k].next.size(); ++slot)
      if (const int64_t to = g.nodes[k].next[slot]; to >= 0)
        if (const int j = g.find(to); j >= 0)
          g.edges.push_back(GraphEdge{k, size_t(j), slot, uses[{k, size_t(j)}]++, 1});
  for (GraphEdge& e : g.edges) e.parallel_count = uses[{e.from, e.to}];
  std::map<int, int> used;
  for (size_t k = n; k-- > 0;) {  // the latest first in each layer
    g.nodes[k].layer = layer[k];
    g.nodes[k].column = used[layer[k]]++;
    g.layers = std::max(g.layers, layer[k] + 1);
    g.widest = std::max(g.widest, used[layer[k]]);
  }
  return g;
}

std::vector<std::string> node_details(const AutogradGraph& g, size_t k) {
  const GraphNode& n = g.nodes[k];
  std::vector<std::string> out;
  const bool leaf = n.recorded_span == SIZE_MAX;
  if (leaf) {
    out.push_back(n.name + " (node " + std::to_string(n.id) + "): a leaf" +
                  (n.shape.empty() ? std::string() : " of shape " + n.shape) + "; it adds the gradient into " +
                  (n.variable.empty() ? std::string("the leaf's .grad") : n.variable + ".grad"));
    if (n.variable.empty()) out.push_back("held by no name of the code's namespace (Note [Naming the leaves])");
  } else {
    out.push_back(n.name + " (node " + std::to_string(n.id) + ")");
    out.push_back("saved: " + (n.saved.empty() ? std::string("nothing") : n.saved));
  }
  // The gradient arriving: as backward passed it, else the shape the node above sends.
  std::vector<std::string> expected;
  for (const GraphEdge& e : g.edges) {
    const std::string sh = e.to == k ? nth(g.nodes[e.from].input_shapes, e.slot) : "";
    if (!sh.empty() && std::find(expected.begin(), expected.end(), sh) == expected.end()) expected.push_back(sh);
  }
  std::string joined;
  for (const std::string& sh : expected) joined += (joined.empty() ? "" : ", ") + sh;
  if (!n.grads_in.empty())
    out.push_back("gradient in: " + n.grads_in);
  else if (!joined.empty())
    out.push_back("gradient in: " + joined + " (once backward reaches it)");
  else
    out.push_back("gradient in: the loss's own (ones) when backward starts here");
  for (size_t slot = 0; slot < n.next.size(); ++slot) {
    const std::string sh = nth(n.input_shapes, slot);
    std::string line = "out " + std::to_string(slot) + (sh.empty() ? "" : " " + sh) + ": ";
    if (n.next[slot] < 0) {
      line += kNoGradient;
    } else {
      const int j = g.find(n.next[slot]);
      line += "to " + (j < 0 ? std::string("node ") + std::to_string(n.next[slot]) : g.nodes[size_t(j)].title());
    }
    out.push_back(line);
  }
  if (!n.grads_out.empty()) {  // the span's "None" (no gradient along that edge) in words
    std::string sent;
    for (const std::string& g_out : split_list(n.grads_out))
      sent += (sent.empty() ? "" : ", ") + (g_out == "None" ? std::string("no gradient") : g_out);
    out.push_back("gradients out, as backward sent them: " + sent);
  }
  if (n.run_span == SIZE_MAX) out.push_back("backward has not run it in this trace");
  return out;
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
