// The graph panel: the autograd graph being recorded as the forward runs,
// then backward climbing it node by node (Note [The graph in the trace], graph.h).
// A legend names the states; each is told apart by its fill's hue, its
// outline, a mark and its word, not by shades of one colour. Hovering over a
// node shows node_details(): what it saved and the gradients' shapes.
#include <algorithm>

#include "ui/app.h"
#include "ui/graph.h"
#include "ui/lesson.h"

namespace descent::ui {

namespace {

// How a node in each state is drawn: fill, outline, outline width, ink.
struct StateStyle {
  ImU32 fill, outline;
  float width;
  ImU32 ink;
};
StateStyle style_of(NodeState s) {
  switch (s) {
    case NodeState::Running:
      return {floor_color(trace::Floor::Autograd), IM_COL32(255, 255, 255, 255), 3.0f, IM_COL32(20, 20, 20, 255)};
    case NodeState::Done:
      return {IM_COL32(38, 104, 84, 255), IM_COL32(120, 210, 170, 255), 1.0f, IM_COL32(235, 235, 235, 255)};
    default:
      return {IM_COL32(60, 60, 70, 255), floor_color(trace::Floor::Autograd), 1.0f, IM_COL32(235, 235, 235, 255)};
  }
}

// The state's mark in a box's corner: a hollow ring (recorded), a triangle
// pointing up the graph (running), a tick (done).
void draw_mark(ImDrawList* dl, NodeState s, ImVec2 c, float r, ImU32 col) {
  switch (s) {
    case NodeState::Recorded:
      dl->AddCircle(c, r * 0.8f, col, 12, 1.5f);
      break;
    case NodeState::Running:
      dl->AddTriangleFilled(ImVec2(c.x, c.y - r), ImVec2(c.x - r, c.y + r * 0.8f), ImVec2(c.x + r, c.y + r * 0.8f),
                            col);
      break;
    case NodeState::Done:
      dl->AddLine(ImVec2(c.x - r, c.y), ImVec2(c.x - r * 0.3f, c.y + r * 0.7f), col, 2.0f);
      dl->AddLine(ImVec2(c.x - r * 0.3f, c.y + r * 0.7f), ImVec2(c.x + r, c.y - r * 0.8f), col, 2.0f);
      break;
    case NodeState::Ahead:
      break;
  }
}

void draw_box(ImDrawList* dl, NodeState s, ImVec2 a, ImVec2 b) {
  const StateStyle st = style_of(s);
  dl->AddRectFilled(a, b, st.fill, 4.0f);
  dl->AddRect(a, b, st.outline, 4.0f, 0, st.width);
}

// The legend: a small box per state as the graph draws it, its word, its
// meaning on hover; wrapped where the panel is narrow.
void draw_legend(App& app) {
  app.graph_legend.clear();
  const float h = ImGui::GetTextLineHeight(), gap = h, swatch = h * 1.6f;
  const float avail = ImGui::GetContentRegionAvail().x;
  const ImGuiStyle& style = ImGui::GetStyle();
  float line_w = 0.0f;
  for (NodeState s : {NodeState::Recorded, NodeState::Running, NodeState::Done, NodeState::Ahead}) {
    const std::string label = s == NodeState::Ahead ? "ahead: not drawn until recorded" : state_word(s);
    const float w =
        (s == NodeState::Ahead ? 0.0f : swatch + style.ItemSpacing.x) + ImGui::CalcTextSize(label.c_str()).x;
    if (line_w > 0.0f && line_w + gap + w <= avail) {
      ImGui::SameLine(0.0f, gap);
      line_w += gap + w;
    } else {
      line_w = w;
    }
    if (s != NodeState::Ahead) {
      ImGui::Dummy(ImVec2(swatch, h));
      const ImVec2 a = ImGui::GetItemRectMin(), b = ImGui::GetItemRectMax();
      ImDrawList* dl = ImGui::GetWindowDrawList();
      draw_box(dl, s, a, b);
      draw_mark(dl, s, ImVec2(a.x + h * 0.8f, a.y + h * 0.5f), h * 0.3f, style_of(s).ink);
      ImGui::SameLine();
    }
    ImGui::TextUnformatted(label.c_str());
    if (ImGui::IsItemHovered()) ImGui::SetTooltip("%s", state_meaning(s));
    app.graph_legend.push_back(label);
  }
}

// A node's None edges (inputs that get no gradient): a short stub ending in a
// bar under its box `r`, and what it means, as far as its column has room.
void draw_none_edges(App& app, size_t k, const ImVec4& r, float col_w, float box_w, float line_h) {
  const GraphNode& n = app.graph.nodes[k];
  ImDrawList* dl = ImGui::GetWindowDrawList();
  int none = 0;
  for (int64_t to : n.next) none += to < 0;
  if (none) {
    const ImU32 grey = IM_COL32(170, 170, 170, 255);
    const ImVec2 s0(r.z - line_h * 0.6f, r.w), s1(s0.x, r.w + line_h * 0.7f);
    dl->AddLine(s0, s1, grey, 1.5f);
    dl->AddLine(ImVec2(s1.x - 4, s1.y), ImVec2(s1.x + 4, s1.y), grey, 2.0f);
    std::string label = std::string(kNoGradient) + (none > 1 ? " (x" + std::to_string(none) + ")" : "");
    const float room = col_w - 8.0f;
    if (ImGui::CalcTextSize(label.c_str()).x > room)
      label = none > 1 ? "no gradient (x" + std::to_string(none) + ")" : "no gradient";
    // In the column's room (shortened at a word past it), on a dark ground: legible over an edge.
    const TextFit fit = fit_text(label, room, 1);
    const float w = fit.width;
    const float lo = r.x - (col_w - box_w) * 0.5f + 2.0f, hi = r.z + (col_w - box_w) * 0.5f - w - 2.0f;
    const float x = std::max(lo, std::min(s1.x - w * 0.5f, hi));  // inside the node's column
    dl->AddRectFilled(ImVec2(x - 2, s1.y + 2), ImVec2(x + w + 2, s1.y + 2 + line_h), IM_COL32(30, 30, 36, 230), 3.0f);
    dl->AddText(ImVec2(x, s1.y + 2), grey, fit.shown.c_str());
    record_text(app, "graph", fit);
    app.graph_none_labels[k] = fit.shown;
  }
}

}  // namespace

void draw_graph(App& app) {
  app.panels_drawn.push_back("graph");
  const AutogradGraph& g = app.graph;
  app.graph_edges_drawn.clear();
  app.graph_none_labels.assign(g.nodes.size(), std::string());
  app.graph_legend.clear();
  if (draw_question_waits_instead(app, "the autograd graph (its nodes, what each saved)")) return;
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
                       running->title().c_str(), static_cast<long long>(running->id));
  } else {
    ImGui::TextWrapped("%d of %zu nodes recorded so far; backward has run %d.%s", recorded, g.nodes.size(), done,
                       g.truncated ? " (the most recent nodes only)" : "");
  }
  draw_legend(app);
  // Layers top to bottom: the loss's node first, the leaves' AccumulateGrad last.
  ImDrawList* dl = ImGui::GetWindowDrawList();
  const ImVec2 origin = ImGui::GetCursorScreenPos();
  const float avail = std::max(200.0f, ImGui::GetContentRegionAvail().x);
  const float line_h = ImGui::GetTextLineHeight();
  // A box: its title, then its state and what it saved in up to two lines; room under it for a None edge's label.
  const float box_h = line_h * 3.3f, gap_y = line_h * 2.2f;
  const float col_w = avail / float(std::max(1, g.widest));
  const float box_w = std::min(col_w - 10.0f, ImGui::GetFontSize() * 11.0f);
  auto box_of = [&](const GraphNode& n) {
    const float x = origin.x + col_w * (float(n.column) + 0.5f) - box_w * 0.5f;
    const float y = origin.y + 6.0f + float(n.layer) * (box_h + gap_y);
    return ImVec4(x, y, x + box_w, y + box_h);
  };
  // Edges first, under the boxes: from a node down to where its gradient goes,
  // one line per use, parallel ones side by side with a count ("x2").
  const float spread = std::max(6.0f, line_h * 0.5f);
  for (const GraphEdge& e : g.edges) {
    if (states[e.from] == NodeState::Ahead) continue;
    const ImVec4 a = box_of(g.nodes[e.from]), b = box_of(g.nodes[e.to]);
    const float dx = (float(e.parallel) - float(e.parallel_count - 1) * 0.5f) * spread;
    const bool flowed = states[e.from] == NodeState::Done || states[e.from] == NodeState::Running;
    const ImVec2 p0((a.x + a.z) * 0.5f + dx, a.w), p1((b.x + b.z) * 0.5f + dx, b.y);
    dl->AddLine(p0, p1, flowed ? floor_color(trace::Floor::Autograd) : IM_COL32(150, 150, 150, 200),
                flowed ? 3.0f : 1.5f);
    if (e.parallel_count > 1 && e.parallel == e.parallel_count - 1) {  // once per pair of nodes
      // (not "x" + std::to_string(...), where GCC 12 warns of a -Wrestrict overlap that cannot happen)
      const std::string count = std::string("x").append(std::to_string(e.parallel_count));
      const ImVec2 sz = ImGui::CalcTextSize(count.c_str());
      const ImVec2 at((p0.x + p1.x) * 0.5f + spread, (p0.y + p1.y) * 0.5f - sz.y * 0.5f);
      dl->AddRectFilled(ImVec2(at.x - 2, at.y), ImVec2(at.x + sz.x + 2, at.y + sz.y), IM_COL32(30, 30, 36, 230), 3.0f);
      dl->AddText(at, IM_COL32(235, 235, 235, 255), count.c_str());
    }
    app.graph_edges_drawn.push_back(e);
  }
  int hovered = -1;
  for (size_t k = 0; k < g.nodes.size(); ++k) {
    if (states[k] == NodeState::Ahead) continue;
    const GraphNode& n = g.nodes[k];
    const ImVec4 r = box_of(n);
    const bool leaf = n.recorded_span == SIZE_MAX;
    draw_box(dl, states[k], ImVec2(r.x, r.y), ImVec2(r.z, r.w));
    const ImU32 ink = style_of(states[k]).ink;
    draw_mark(dl, states[k], ImVec2(r.z - line_h * 0.6f, r.y + line_h * 0.6f), line_h * 0.3f, ink);
    // Left of the state's mark, shortened at a word where the box is narrow (the hover has all).
    const float text_w = r.z - line_h * 1.1f - (r.x + 6);
    draw_fitted(app, "graph", dl, ImVec2(r.x + 6, r.y + 3), text_w, ink, n.title());
    std::string sub = state_word(states[k]);
    if (leaf)
      sub = (n.variable.empty() ? n.shape : std::string("AccumulateGrad")) + "  " + sub;
    else if (!n.saved.empty())
      sub += "  saved: " + n.saved;
    draw_fitted(app, "graph", dl, ImVec2(r.x + 6, r.y + 3 + line_h), text_w, ink, sub, 2);
    draw_none_edges(app, k, r, col_w, box_w, line_h);
    if (ImGui::IsMouseHoveringRect(ImVec2(r.x, r.y), ImVec2(r.z, r.w))) hovered = int(k);
  }
  ImGui::Dummy(ImVec2(avail, float(g.layers) * (box_h + gap_y) + 10.0f));
  if (hovered >= 0 && ImGui::IsWindowHovered(ImGuiHoveredFlags_AllowWhenBlockedByActiveItem)) {
    ImGui::BeginTooltip();
    for (const std::string& line : node_details(g, size_t(hovered))) ImGui::TextUnformatted(line.c_str());
    ImGui::EndTooltip();
  }
  ImGui::Separator();
  ImGui::TextWrapped(
      "Each box is a node autograd recorded on floor 4 as an op ran (its name is PyTorch's); a line goes from a "
      "node to where its gradient flows next: the node that made that input, or the AccumulateGrad of a leaf, "
      "which writes .grad, named by the variable that holds it. A tensor used twice gets two lines (x2). "
      "loss.backward() runs the nodes from the top down, each once all its gradients have arrived. Hover over a "
      "node for what it saved and its gradients' shapes.");
}

}  // namespace descent::ui
