// The values view: at the top of the Memory tab, the tensors the statement on
// screen left in the namespace, as Note [A view as a window onto cells]
// (values_model.h) draws them: each storage once, as a row of numbered cells
// with their values, a strip per tensor under it marking the cells that
// tensor reads (x4 where it reads one cell four times), then each tensor's
// sizes, strides, offset and version counter, and its elements as a grid
// whose every box says which cell it reads (@3). Cells the statement wrote
// and version counters it bumped are lit; hovering a cell or an element
// outlines that cell everywhere it is read.
//
// [SECTION] Colours and sizes
// [SECTION] A storage and its tensors
// [SECTION] The view
#include "ui/panel_values.h"

#include <algorithm>
#include <map>

namespace descent::ui {

namespace {

// [SECTION] Colours and sizes --------------------------------------------------------------------

constexpr ImU32 kCell = IM_COL32(42, 45, 54, 255);
constexpr ImU32 kCellEdge = IM_COL32(95, 100, 115, 255);
constexpr ImU32 kInk = IM_COL32(232, 234, 240, 255);
constexpr ImU32 kMuted = IM_COL32(150, 155, 168, 255);
constexpr ImU32 kLit = IM_COL32(250, 196, 60, 255);  // written by this statement
constexpr ImU32 kLitInk = IM_COL32(20, 18, 10, 255);
constexpr ImU32 kHover = IM_COL32(255, 255, 255, 255);
constexpr size_t kMaxCellsDrawn = 128;    // a storage's cells drawn; past them a count
constexpr size_t kMaxElementsDrawn = 96;  // a tensor's elements drawn as boxes
// Each tensor's colour, its strip and swatch: distinct hues, readable on the dark panel.
constexpr ImU32 kTensorColors[] = {IM_COL32(90, 170, 250, 255),  IM_COL32(120, 210, 120, 255),
                                   IM_COL32(235, 120, 200, 255), IM_COL32(90, 215, 215, 255),
                                   IM_COL32(200, 160, 250, 255), IM_COL32(240, 140, 90, 255)};
ImU32 tensor_color(size_t k) { return kTensorColors[k % (sizeof kTensorColors / sizeof kTensorColors[0])]; }

// Which cell the mouse is over (an element or a storage cell), from the last frame: outlined everywhere.
struct Hovered {
  std::string storage;
  int64_t cell = -1;
};
Hovered g_hovered, g_hovering;

// The model of the trace on screen, kept while it stays.
struct Cached {
  std::weak_ptr<const trace::Trace> of;
  const trace::Trace* raw = nullptr;
  ValuesModel model;
};
Cached g_cached;

float cell_width(const ValueStorage& g) {
  float w = ImGui::CalcTextSize("@00").x;
  const size_t n = std::min(g.values.size(), kMaxCellsDrawn);
  for (size_t c = 0; c < n; ++c) w = std::max(w, ImGui::CalcTextSize(g.values[c].c_str()).x);
  if (g.cells > 99) w = std::max(w, ImGui::CalcTextSize("@000").x);
  return w + ImGui::GetStyle().FramePadding.x * 2;
}

// One box: its value on top, a second text (the cell it is, or reads) under it in grey.
void cell_box(App& app, ImDrawList* dl, ImVec2 p, ImVec2 size, const std::string& value, const std::string& sub,
              bool lit, bool outlined, const std::string& storage, int64_t cell) {
  const ImVec2 q(p.x + size.x, p.y + size.y);
  dl->AddRectFilled(p, q, lit ? kLit : kCell, 3.0f);
  dl->AddRect(p, q, outlined ? kHover : kCellEdge, 3.0f, 0, outlined ? 2.5f : 1.0f);
  const float line = ImGui::GetTextLineHeight(), pad = ImGui::GetStyle().FramePadding.x;
  draw_fitted(app, "values", dl, ImVec2(p.x + pad, p.y + 2), size.x - 2 * pad, lit ? kLitInk : kInk, value);
  if (!sub.empty()) {
    ImGui::SetWindowFontScale(0.8f);
    dl->AddText(ImVec2(p.x + pad, p.y + 2 + line), lit ? kLitInk : kMuted, sub.c_str());
    ImGui::SetWindowFontScale(1.0f);
  }
  if (cell >= 0 && ImGui::IsWindowHovered() && ImGui::IsMouseHoveringRect(p, q)) g_hovering = {storage, cell};
}

bool is_outlined(const std::string& storage, int64_t cell) {
  return g_hovered.cell >= 0 && g_hovered.cell == cell && g_hovered.storage == storage;
}

// [SECTION] A storage and its tensors -------------------------------------------------------------

// "A", "B", ... for the storages in the order drawn.
std::string storage_letter(size_t k) {
  return k < 26 ? std::string(1, static_cast<char>('A' + k)) : "S" + std::to_string(k + 1);
}

// A tensor's elements as boxes: a grid of its last two dimensions (one row for a vector, one box for a
// scalar), one grid per index of the dimensions before them, labelled "[1]" or "[0, 2]".
void draw_elements(App& app, const ValueTensor& t, const ValueStorage& g, const ValuesDiff::Storage& gd, float cw) {
  ImDrawList* dl = ImGui::GetWindowDrawList();
  const float line = ImGui::GetTextLineHeight(), gap = 3.0f, box_h = line * 1.8f + 4;
  const std::vector<int64_t> cells = cells_of(t, kMaxElementsDrawn);
  const size_t nd = t.sizes.size();
  const int64_t cols = nd >= 1 ? t.sizes[nd - 1] : 1, rows = nd >= 2 ? t.sizes[nd - 2] : 1;
  const int64_t per_grid = std::max<int64_t>(1, rows * cols);
  const float avail = ImGui::GetContentRegionAvail().x;
  const int64_t fit_cols = std::max<int64_t>(1, static_cast<int64_t>((avail + gap) / (cw + gap)));
  for (size_t e = 0; e < cells.size();) {
    if (nd > 2) {  // the grid's leading index
      std::string idx = "[";
      int64_t rest = static_cast<int64_t>(e) / per_grid;
      std::vector<int64_t> lead(nd - 2);
      for (size_t d = nd - 2; d-- > 0;) {
        lead[d] = rest % t.sizes[d];
        rest /= t.sizes[d];
      }
      for (size_t d = 0; d < lead.size(); ++d) idx += (d ? ", " : "") + std::to_string(lead[d]);
      text_fitted(app, "values", t.name + idx + "]");
    }
    const ImVec2 origin = ImGui::GetCursorScreenPos();
    int64_t drawn_rows = 0;
    const size_t grid_end = std::min(cells.size(), e + static_cast<size_t>(per_grid));
    for (size_t k = e; k < grid_end; ++k) {
      const int64_t in_grid = static_cast<int64_t>(k - e), r = in_grid / cols, c = in_grid % cols;
      // A row wider than the panel wraps onto the next lines.
      const int64_t wrap = c / fit_cols, col = c % fit_cols;
      const int64_t row = r * ((cols + fit_cols - 1) / fit_cols) + wrap;
      drawn_rows = std::max(drawn_rows, row + 1);
      const int64_t cell = cells[k];
      const bool known = cell >= 0 && static_cast<size_t>(cell) < g.values.size();
      const ImVec2 p(origin.x + static_cast<float>(col) * (cw + gap),
                     origin.y + static_cast<float>(row) * (box_h + gap));
      cell_box(app, dl, p, ImVec2(cw, box_h), known ? g.values[static_cast<size_t>(cell)] : "",
               "@" + std::to_string(cell), known && gd.changed[static_cast<size_t>(cell)], is_outlined(g.id, cell),
               g.id, cell);
    }
    ImGui::Dummy(ImVec2(std::min(avail, static_cast<float>(std::min(cols, fit_cols)) * (cw + gap)),
                        static_cast<float>(drawn_rows) * (box_h + gap)));
    e = grid_end;
  }
  const int64_t n = numel_of(t);
  if (n > static_cast<int64_t>(cells.size()))
    text_fitted(app, "values", "+" + std::to_string(n - static_cast<int64_t>(cells.size())) + " more elements");
}

void draw_storage(App& app, size_t letter, const ValueStorage& g, const ValuesDiff::Storage& gd,
                  const ValuesSnapshot& snap, const ValuesDiff& diff) {
  ImDrawList* dl = ImGui::GetWindowDrawList();
  const float line = ImGui::GetTextLineHeight(), gap = 3.0f;
  std::string head = "storage " + storage_letter(letter) + ": " + std::to_string(g.cells) + " cells of " + g.dtype +
                     " (" + std::to_string(g.itemsize) + " B each) on " + g.device;
  if (gd.fresh) head += ", new";
  if (gd.changed_count > 0) {
    head += ", this line wrote " + std::to_string(gd.changed_count) + (gd.changed_count == 1 ? " cell:" : " cells:");
    int listed = 0;
    for (size_t c = 0; c < gd.changed.size() && listed < 8; ++c)
      if (gd.changed[c]) head += (listed++ ? ", @" : " @") + std::to_string(c);
    if (gd.changed_count > listed) head += ", ...";
  }
  text_fitted(app, "values", head, 2);
  if (!g.why.empty()) ImGui::TextDisabled("%s", g.why.c_str());

  // The tensors on this storage, each with its colour.
  std::vector<size_t> on;
  for (size_t k = 0; k < snap.tensors.size(); ++k)
    if (snap.tensors[k].storage == g.id) on.push_back(k);

  // The cells, wrapped to the panel's width; under each row, a strip per tensor.
  const float cw = cell_width(g), box_h = line * 1.8f + 4, strip_h = std::max(6.0f, line * 0.75f);
  const float label_w = [&] {
    float w = ImGui::CalcTextSize("cells").x;
    for (size_t k : on) w = std::max(w, ImGui::CalcTextSize(snap.tensors[k].name.c_str()).x);
    return std::min(w, ImGui::GetContentRegionAvail().x * 0.3f) + 8;
  }();
  const float avail = ImGui::GetContentRegionAvail().x - label_w;
  const size_t per_row = std::max<size_t>(1, static_cast<size_t>((avail + gap) / (cw + gap)));
  const size_t shown = std::min<size_t>(kMaxCellsDrawn, static_cast<size_t>(std::max<int64_t>(g.cells, 0)));
  // Per tensor, how many of its elements read each cell.
  std::vector<std::map<int64_t, int>> uses(on.size());
  for (size_t i = 0; i < on.size(); ++i)
    for (int64_t c : cells_of(snap.tensors[on[i]])) ++uses[i][c];
  for (size_t row0 = 0; row0 < shown; row0 += per_row) {
    ImVec2 p = ImGui::GetCursorScreenPos();
    draw_fitted(app, "values", dl, ImVec2(p.x, p.y + 2), label_w - 6, kMuted, "cells");
    const size_t row1 = std::min(shown, row0 + per_row);
    for (size_t c = row0; c < row1; ++c) {
      const ImVec2 at(p.x + label_w + static_cast<float>(c - row0) * (cw + gap), p.y);
      const bool has = c < g.values.size();
      cell_box(app, dl, at, ImVec2(cw, box_h), has ? g.values[c] : "", "@" + std::to_string(c), has && gd.changed[c],
               is_outlined(g.id, static_cast<int64_t>(c)), g.id, static_cast<int64_t>(c));
    }
    float y = p.y + box_h + gap;
    for (size_t i = 0; i < on.size(); ++i) {
      const ImU32 col = tensor_color(on[i]);
      draw_fitted(app, "values", dl, ImVec2(p.x, y - 2), label_w - 6, col, snap.tensors[on[i]].name);
      for (size_t c = row0; c < row1; ++c) {
        const auto u = uses[i].find(static_cast<int64_t>(c));
        if (u == uses[i].end()) continue;
        const ImVec2 a(p.x + label_w + static_cast<float>(c - row0) * (cw + gap), y);
        dl->AddRectFilled(a, ImVec2(a.x + cw, a.y + strip_h), col, 2.0f);
        if (u->second > 1) {  // one cell read as several elements: an expand's stride 0
          const std::string times = "x" + std::to_string(u->second);
          ImGui::SetWindowFontScale(0.8f);
          dl->AddText(ImVec2(a.x + 3, a.y + (strip_h - ImGui::GetTextLineHeight()) / 2), kLitInk, times.c_str());
          ImGui::SetWindowFontScale(1.0f);
        }
      }
      y += std::max(strip_h, line) + 1;
    }
    ImGui::Dummy(ImVec2(label_w + static_cast<float>(row1 - row0) * (cw + gap), y - p.y));
  }
  if (static_cast<size_t>(std::max<int64_t>(g.cells, 0)) > shown)
    text_fitted(app, "values", "+" + std::to_string(g.cells - static_cast<int64_t>(shown)) + " more cells");

  // Each tensor: what it is, then its elements.
  for (size_t i = 0; i < on.size(); ++i) {
    const ValueTensor& t = snap.tensors[on[i]];
    const ValuesDiff::Tensor& td = diff.tensors[on[i]];
    ImGui::Spacing();
    const ImVec2 p = ImGui::GetCursorScreenPos();
    dl->AddRectFilled(ImVec2(p.x, p.y + 2), ImVec2(p.x + line * 0.7f, p.y + line - 2), tensor_color(on[i]), 2.0f);
    ImGui::Dummy(ImVec2(line * 0.7f, line));
    ImGui::SameLine();
    std::string what = t.name + (t.base.empty() ? "" : ", a view of " + t.base) + ":  sizes " + dims_text(t.sizes) +
                       "  strides " + dims_text(t.strides) + "  offset " + std::to_string(t.offset);
    if (td.fresh) what += "  (new)";
    if (!t.grad_fn.empty()) what += "  grad_fn=" + t.grad_fn;
    text_fitted(app, "values", what, 2);
    const std::string version = td.bumped ? "_version " + std::to_string(td.version_before) + " -> " +
                                                std::to_string(t.version) + " (an in-place write bumped it)"
                                          : "_version " + std::to_string(t.version);
    if (td.bumped) ImGui::PushStyleColor(ImGuiCol_Text, kLit);
    text_fitted(app, "values", version, 2);
    if (td.bumped) ImGui::PopStyleColor();
    draw_elements(app, t, g, gd, cw);
  }
}

}  // namespace

// [SECTION] The view -----------------------------------------------------------------------------

const ValuesModel& values_model(const App& app) {
  const auto& t = app.loaded.trace;
  if (!t) {
    g_cached = {};
    return g_cached.model;
  }
  if (g_cached.raw != t.get() || g_cached.of.expired()) {
    g_cached.of = t;
    g_cached.raw = t.get();
    g_cached.model = build_values(*t, app.story);
  }
  return g_cached.model;
}

void draw_values(App& app) {
  g_hovered = g_hovering;
  g_hovering = {};
  const ValuesModel& m = values_model(app);
  ImGui::PushStyleColor(ImGuiCol_Text, kInk);
  ImGui::TextUnformatted("Values: the tensors your names reach, and the memory they share");
  ImGui::PopStyleColor();
  if (m.empty()) {
    ImGui::TextDisabled("(%s)", m.error.empty() ? "no values recorded" : m.error.c_str());
    return;
  }
  const ValuesAt at = values_at(m, app.story, app.has_steps() ? app.step() : 0);
  const ValuesSnapshot* shown = at.shown();
  if (!shown) return;
  std::string when;
  if (at.statement == SIZE_MAX)
    when = "before the first line";
  else if (at.after_shown)
    when = "after line " + std::to_string(at.statement + 1) + ":  " + at.after->statement +
           (at.after->raised ? "  (it raised)" : "");
  else
    when = "before line " + std::to_string(at.statement + 1) + ":  " + at.after->statement +
           "  (running: its writes show once the call is back up)";
  text_fitted(app, "values", when, 2);
  if (shown->tensors.empty()) {
    ImGui::TextDisabled("(no tensor in the namespace yet)");
    return;
  }
  // Lit: what the statement on screen changed, once its result is back.
  const ValuesSnapshot& before = at.after_shown && at.before ? *at.before : *shown;
  const ValuesDiff diff = diff_values(before, *shown);
  for (size_t k = 0; k < shown->storages.size(); ++k) {
    ImGui::Separator();
    draw_storage(app, k, shown->storages[k], diff.storages[k], *shown, diff);
  }
  if (shown->left_out > 0)
    ImGui::TextDisabled("(%lld more tensors not recorded)", static_cast<long long>(shown->left_out));
  ImGui::Separator();
  ImGui::PushTextWrapPos(0);
  ImGui::TextDisabled(
      "A view owns no cells: its sizes, strides and offset say which cells of its base's storage each element "
      "reads (@n under each box). Lit: cells this line wrote, and the version counters it bumped.");
  ImGui::PopTextWrapPos();
}

}  // namespace descent::ui
