// The graph panel: the autograd graph being recorded as the forward runs,
// then backward climbing it node by node (Note [The graph in the trace], graph.h).
#include <algorithm>

#include "ui/app.h"
#include "ui/graph.h"

namespace descent::ui {

void draw_graph(App& app) {
  app.panels_drawn.push_back("graph");
  if (app.graph_of.lock() != app.loaded.trace) {  // built once per trace
    app.graph = build_graph(app.trace());
    app.graph_of = app.loaded.trace;
  }
  const AutogradGraph& g = app.graph;
  if (g.nodes.empty()) {
    ImGui::TextWrapped(
        "No autograd graph in this call: nothing required grad. Try\n"
        "  x = descent.ones(2, 2, requires_grad=True); loss = (x * x).sum(); loss.backward()\n"
        "to watch the graph being recorded on the way down (floor 4), then backward walking it back up.");
    return;
  }
  // The moment of the step: a step down into a span is at its start, a step up out of it at its end.
  int64_t now_ns = INT64_MIN;
  if (app.has_steps()) {
    const Step& st = app.story.steps[app.step()];
    const trace::Span& sp = app.trace().spans[st.span];
    now_ns = st.down ? sp.start_ns : sp.end_ns;
  }
  const std::vector<NodeState> states = graph_states(g, app.trace(), now_ns);
  app.graph_states.clear();
  for (NodeState s : states) app.graph_states.push_back(state_word(s));
  int recorded = 0, done = 0;
  const GraphNode* running = nullptr;
  for (size_t k = 0; k < g.nodes.size(); ++k) {
    recorded += states[k] != NodeState::Ahead;
    done += states[k] == NodeState::Done;
    if (states[k] == NodeState::Running) running = &g.nodes[k];  // the innermost is the last made
  }
  if (running) {
    ImGui::TextWrapped("backward is running %s (node %lld): its formula's kernels run beneath it on floors 3 and 5",
                       running->name.c_str(), static_cast<long long>(running->id));
  } else {
    ImGui::TextWrapped("%d of %zu nodes recorded so far; backward has run %d.%s", recorded, g.nodes.size(), done,
                       g.truncated ? " (the most recent nodes only)" : "");
  }
  // Layers top to bottom: the loss's node first, the leaves' AccumulateGrad last.
  ImDrawList* dl = ImGui::GetWindowDrawList();
  const ImVec2 origin = ImGui::GetCursorScreenPos();
  const float avail = std::max(200.0f, ImGui::GetContentRegionAvail().x);
  const float box_h = ImGui::GetTextLineHeight() * 2.3f, gap_y = box_h * 0.55f;
  const float col_w = avail / float(std::max(1, g.widest));
  const float box_w = std::min(col_w - 10.0f, ImGui::GetFontSize() * 11.0f);
  auto box_of = [&](const GraphNode& n) {
    const float x = origin.x + col_w * (float(n.column) + 0.5f) - box_w * 0.5f;
    const float y = origin.y + 6.0f + float(n.layer) * (box_h + gap_y);
    return ImVec4(x, y, x + box_w, y + box_h);
  };
  // Edges first, under the boxes: from a node down to where its gradient goes.
  for (size_t k = 0; k < g.nodes.size(); ++k) {
    if (states[k] == NodeState::Ahead) continue;
    const ImVec4 a = box_of(g.nodes[k]);
    for (int64_t to : g.nodes[k].next) {
      const int j = to >= 0 ? g.find(to) : -1;
      if (j < 0) continue;
      const ImVec4 b = box_of(g.nodes[size_t(j)]);
      const bool flowed = states[k] == NodeState::Done || states[k] == NodeState::Running;
      dl->AddLine(ImVec2((a.x + a.z) * 0.5f, a.w), ImVec2((b.x + b.z) * 0.5f, b.y),
                  flowed ? floor_color(4) : IM_COL32(150, 150, 150, 160), flowed ? 3.0f : 1.5f);
    }
  }
  for (size_t k = 0; k < g.nodes.size(); ++k) {
    if (states[k] == NodeState::Ahead) continue;
    const GraphNode& n = g.nodes[k];
    const ImVec4 r = box_of(n);
    const ImU32 fill = states[k] == NodeState::Running ? floor_color(4)
                       : states[k] == NodeState::Done  ? floor_color(4, 0.45f)
                                                       : IM_COL32(60, 60, 70, 255);
    dl->AddRectFilled(ImVec2(r.x, r.y), ImVec2(r.z, r.w), fill, 4.0f);
    dl->AddRect(ImVec2(r.x, r.y), ImVec2(r.z, r.w), floor_color(4), 4.0f, 0, states[k] == NodeState::Running ? 3.0f : 1.0f);
    const ImU32 ink = states[k] == NodeState::Running ? IM_COL32(20, 20, 20, 255) : IM_COL32(235, 235, 235, 255);
    dl->PushClipRect(ImVec2(r.x, r.y), ImVec2(r.z, r.w), true);
    dl->AddText(ImVec2(r.x + 6, r.y + 3), ink, n.name.c_str());
    const std::string sub = std::string(state_word(states[k])) + (n.saved.empty() ? "" : "  saved: " + n.saved);
    dl->AddText(ImVec2(r.x + 6, r.y + 3 + ImGui::GetTextLineHeight()), ink, sub.c_str());
    dl->PopClipRect();
    // None edges: a short stub, labelled, as next_functions prints them.
    int none = 0;
    for (int64_t to : n.next) none += to < 0;
    if (none) dl->AddText(ImVec2(r.z - ImGui::CalcTextSize("None").x - 4, r.w + 2), IM_COL32(170, 170, 170, 255), "None");
  }
  ImGui::Dummy(ImVec2(avail, float(g.layers) * (box_h + gap_y) + 10.0f));
  ImGui::Separator();
  ImGui::TextWrapped(
      "Each box is a node autograd recorded on floor 4 as an op ran (its name is PyTorch's); a line goes from a "
      "node to where its gradient flows next: the node that made that input, or the AccumulateGrad of a leaf, "
      "which writes .grad. loss.backward() runs them from the top down, each once all its gradients have arrived.");
}

}  // namespace descent::ui
