// The timeline: the whole trace as a flame chart, a row per thread (and a row
// per thread's device spans), spans stacked by depth and coloured by floor.
//
// [SECTION] Layout and constants
// [SECTION] The view (fit, follow, zoom, pan)
// [SECTION] The time axis
// [SECTION] Tooltips
// [SECTION] The header
// [SECTION] Input: zoom, pan, fit
// [SECTION] The rows
// [SECTION] Flows and the ancestor path
// [SECTION] The panel
//
// The wheel zooms around the cursor, a drag (left or middle button) pans, and
// while the panel is hovered W/S zoom, A/D pan and F fits (the arrow keys,
// space and Home belong to the step-through). A double-click or the "fit"
// button shows the whole trace. A click on a span scrubs the playback to it.
// What is drawn comes from TimelineIndex::visit_lane, so a frame costs about
// the same for a thousand spans as for a million: see Note [Timeline level of
// detail] in timeline_index.h.
#include <GLFW/glfw3.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <string>

#include "ui/app.h"

namespace descent::ui {

namespace {

// [SECTION] Layout and constants -------------------------------------------------------

constexpr float kAxisPx = 22.0f;          // the time axis above the rows
constexpr float kRowHeaderPx = 17.0f;     // a row's label strip
constexpr float kLanePx = 19.0f;          // one depth of a row
constexpr float kRowGapPx = 4.0f;         // between two rows
constexpr float kLabelMinPx = 28.0f;      // a span narrower than this has no label
constexpr float kTextPadPx = 3.0f;        // label inset from the span's left edge
constexpr float kTickSpacingPx = 110.0f;  // aimed distance between two labelled ticks
constexpr float kWheelZoom = 0.8f;        // view width multiplied per wheel notch (in)
// The sizes above are at zoom 1; draw_timeline sets the type's scale (Note
// [The remembered layout]) and every size is read through px().
float g_scale = 1.0f;
float px(float at_zoom_one) { return at_zoom_one * g_scale; }
constexpr double kKeyZoomPerSecond = 4.0;  // W/S: view width divided/multiplied per second
constexpr double kKeyPanPerSecond = 1.0;   // A/D: view widths panned per second
constexpr double kMinViewNs = 20.0;        // the deepest zoom: 20 ns across the panel
constexpr double kFitMargin = 0.02;        // of the trace's duration, each side, on a fit
constexpr double kCurrentMinPx = 40.0;     // following the step: the current span never drawn narrower...
constexpr double kCurrentZoomPx = 80.0;    // ...else zoomed in around it to this width
constexpr size_t kMaxFlowsDrawn = 4000;    // arrows per frame (a million-kernel trace stays cheap)
constexpr size_t kMaxArgsShown = 16;       // tooltip lines of arguments

constexpr ImU32 kInk = IM_COL32(15, 15, 20, 255);          // label on a light span
constexpr ImU32 kPaper = IM_COL32(235, 237, 242, 255);     // label on a dark span
constexpr ImU32 kMuted = IM_COL32(150, 155, 165, 255);     // axis labels, row labels
constexpr ImU32 kGrid = IM_COL32(255, 255, 255, 18);       // tick lines across the rows
constexpr ImU32 kRowBg = IM_COL32(255, 255, 255, 10);      // a row's label strip
constexpr ImU32 kCurrent = IM_COL32(255, 255, 255, 255);   // outline of the current span
constexpr ImU32 kAncestor = IM_COL32(255, 225, 120, 200);  // outline of its ancestors
constexpr ImU32 kHover = IM_COL32(255, 255, 255, 120);     // outline of the hovered item
constexpr ImU32 kFlow = IM_COL32(240, 240, 250, 150);      // a flow arrow

// Where each row starts, in pixels from the top of the scrolled content.
struct Layout {
  std::vector<float> row_y;  // per row
  float height = 0;          // all rows
};

Layout layout_of(const TimelineIndex& x) {
  Layout l;
  l.row_y.reserve(x.rows().size());
  for (const TimelineRow& r : x.rows()) {
    l.row_y.push_back(l.height);
    l.height += px(kRowHeaderPx) + px(kLanePx) * static_cast<float>(r.depths) + px(kRowGapPx);
  }
  return l;
}

float lane_y(const TimelineIndex& x, const Layout& l, size_t lane) {
  const size_t row = x.row_of_lane(lane);
  return l.row_y[row] + px(kRowHeaderPx) + px(kLanePx) * static_cast<float>(lane - x.rows()[row].first_lane);
}

ImU32 label_colour(ImU32 fill) {  // dark ink on a light fill, light on a dark one
  const ImVec4 c = ImGui::ColorConvertU32ToFloat4(fill);
  return 0.299f * c.x + 0.587f * c.y + 0.114f * c.z > 0.55f ? kInk : kPaper;
}

// [SECTION] The view (fit, follow, zoom, pan) ---------------------------------------------

void fit(App& app) {
  const TimelineIndex& x = app.timeline;
  const double lo = static_cast<double>(x.min_ns()), hi = static_cast<double>(x.max_ns());
  const double margin = std::max(1.0, (hi - lo) * kFitMargin);
  app.view_start_ns = lo - margin;
  app.view_end_ns = hi + margin;
}

// Keeps the view's width within [kMinViewNs, 20 x the trace]; keeps `anchor` in place.
void set_width(App& app, double width, double anchor_ns, double anchor_fraction) {
  const double full = std::max(1.0, static_cast<double>(app.timeline.max_ns() - app.timeline.min_ns()));
  width = std::clamp(width, kMinViewNs, full * 20);
  app.view_start_ns = anchor_ns - anchor_fraction * width;
  app.view_end_ns = app.view_start_ns + width;
}

// Brings span `i` into view when it is not already: pans to centre it, or
// zooms out to it when it is wider than the view. Then, when it would be
// drawn narrower than kCurrentMinPx in a panel `panel_px` wide, zooms in
// around it until it is kCurrentZoomPx (a 40-ns span in a 4-ms view is a
// hundredth of a pixel: following it would follow nothing that can be seen).
void bring_into_view(App& app, size_t i, double panel_px) {
  const trace::Span& s = app.trace().spans[i];
  const double a = static_cast<double>(s.start_ns), b = static_cast<double>(s.end_ns);
  const double width = app.view_end_ns - app.view_start_ns;
  if (a < app.view_start_ns || b > app.view_end_ns) {
    if (b - a > width * 0.9) {
      const double margin = std::max(1.0, (b - a) * 0.05);
      app.view_start_ns = a - margin;
      app.view_end_ns = b + margin;
    } else {
      app.view_start_ns = (a + b) / 2 - width / 2;
      app.view_end_ns = app.view_start_ns + width;
    }
  }
  const double view_w = app.view_end_ns - app.view_start_ns;
  if (panel_px > 0 && (b - a) * panel_px / view_w < kCurrentMinPx) {
    set_width(app, (b - a) * panel_px / kCurrentZoomPx, (a + b) / 2, 0.5);
  }
}

// [SECTION] The time axis ---------------------------------------------------------------

// A tick step of 1, 2 or 5 x 10^k ns, about px(kTickSpacingPx) apart.
double tick_step(double ns_per_pixel) {
  const double raw = std::max(1.0, ns_per_pixel * px(kTickSpacingPx));
  const double decade = std::pow(10.0, std::floor(std::log10(raw)));
  for (double m : {1.0, 2.0, 5.0}) {
    if (m * decade >= raw) return m * decade;
  }
  return 10 * decade;
}

// "0", "250 ns", "1.5 us", "12 ms", "2.25 s": the unit of (ten times) the step, as many decimals as it needs.
std::string tick_label(double ns, double step) {
  if (std::fabs(ns) < step * 1e-3) return "0";
  struct Unit {
    double ns;
    const char* name;
  };
  static constexpr Unit kUnits[] = {{1e9, "s"}, {1e6, "ms"}, {1e3, "us"}, {1, "ns"}};
  Unit u = kUnits[3];
  for (const Unit& c : kUnits) {
    if (step >= c.ns / 10) {  // 500 us steps read 0.5 ms, 1 ms, 1.5 ms
      u = c;
      break;
    }
  }
  int decimals = 0;
  for (double s = step / u.ns; decimals < 3 && std::fabs(s - std::round(s)) > 1e-6; s *= 10) ++decimals;
  char buf[48];
  std::snprintf(buf, sizeof buf, "%.*f %s", decimals, ns / u.ns, u.name);
  return buf;
}

// Ticks relative to the trace's first span, labelled on the axis and drawn
// as faint lines down through the rows.
void draw_axis(ImDrawList* dl, const App& app, ImVec2 p0, float width, float rows_bottom) {
  const double v0 = app.view_start_ns, npp = (app.view_end_ns - v0) / width;
  const double origin = static_cast<double>(app.timeline.min_ns());
  const double step = tick_step(npp);
  dl->AddLine(ImVec2(p0.x, p0.y + px(kAxisPx) - 1), ImVec2(p0.x + width, p0.y + px(kAxisPx) - 1), kMuted);
  const double first = std::ceil((v0 - origin) / step) * step;
  for (double t = first; origin + t <= app.view_end_ns; t += step) {
    const float x = p0.x + static_cast<float>((origin + t - v0) / npp);
    dl->AddLine(ImVec2(x, p0.y + px(kAxisPx) - 7), ImVec2(x, p0.y + px(kAxisPx) - 1), kMuted);
    dl->AddLine(ImVec2(x, p0.y + px(kAxisPx)), ImVec2(x, rows_bottom), kGrid);
    for (int k = 1; k < 5; ++k) {  // minor ticks
      const float xm = x + static_cast<float>(step / 5 * k / npp);
      dl->AddLine(ImVec2(xm, p0.y + px(kAxisPx) - 4), ImVec2(xm, p0.y + px(kAxisPx) - 1), kMuted);
    }
    const std::string label = tick_label(t, step);
    dl->AddText(ImVec2(x + 3, p0.y + 2), kMuted, label.c_str());
  }
}

// [SECTION] Tooltips --------------------------------------------------------------------

void span_tooltip(const App& app, size_t i) {
  const trace::Span& s = app.trace().spans[i];
  ImGui::BeginTooltip();
  ImGui::PushStyleColor(ImGuiCol_Text, floor_color_vec(s.floor));
  ImGui::TextUnformatted(s.name.c_str());
  ImGui::PopStyleColor();
  ImGui::Text("floor %d: %s", static_cast<int>(s.floor), trace::floor_name(s.floor));
  // Cold or warm (Note [Cold and warm times]); inclusive and self defined where they appear.
  // The floor's and the roofline's rule and words (timing_of, timing_text), the bar's own time beside them.
  const Timing t = timing_of(app.story, i);
  ImGui::TextUnformatted(timing_text(t).c_str());
  if (t.leads_with_median()) ImGui::Text("this call's own: %s inclusive", duration_text(t.own_inclusive_ns).c_str());
  ImGui::TextDisabled("%s", t.warm ? "warm: a repeat, with caches and set-up done"
                                   : "cold: a first call, slowed by empty caches and one-time set-up (R: warm runs)");
  ImGui::TextDisabled("inclusive: with everything under it; self: its children's time taken out");
  ImGui::Text("thread %u%s", s.thread, s.floor == trace::Floor::Device ? " (device)" : "");
  if (!s.file.empty()) ImGui::Text("%s:%u", s.file.c_str(), s.line);
  for (size_t k = 0; k < s.args.size() && k < kMaxArgsShown; ++k) {
    ImGui::Text("  %s = %s", s.args[k].key.c_str(), arg_text(s.args[k].value).c_str());
  }
  if (s.args.size() > kMaxArgsShown) ImGui::Text("  ... %zu more", s.args.size() - kMaxArgsShown);
  if (s.floor == trace::Floor::Device) {  // the two clocks: how long it sat in the queue
    for (const auto& [from, to] : app.timeline_flows) {
      if (to != i || app.trace().spans[from].floor == trace::Floor::Device) continue;
      const int64_t gap = s.start_ns - app.trace().spans[from].end_ns;
      ImGui::Text(gap >= 0 ? "queued %s after its launch returned" : "started %s before its launch returned",
                  duration_text(gap >= 0 ? gap : -gap).c_str());
      break;
    }
  }
  if (i < app.story.down_step.size() && app.story.down_step[i] != SIZE_MAX) {
    ImGui::TextDisabled("click: go to its step %zu", app.story.down_step[i]);
  }
  ImGui::EndTooltip();
}

void merged_tooltip(const TimelineItem& it) {
  ImGui::BeginTooltip();
  ImGui::Text("%zu spans merged, zoom in", it.count);
  ImGui::TextDisabled("%s from the first start to the last end", duration_text(it.end_ns - it.start_ns).c_str());
  ImGui::EndTooltip();
}

// [SECTION] The header -------------------------------------------------------------------

// Fit, follow, and what is shown, with as much of the hint as fits beside the
// "N rects" at the axis's right end (app.timeline_header: what was drawn).
// Returns the x where its text begins.
float draw_header(App& app) {
  const TimelineIndex& x = app.timeline;
  if (ImGui::SmallButton("fit")) fit(app);
  ImGui::SameLine();
  if (ImGui::Checkbox("follow the step", &app.timeline_follow) && app.timeline_follow) {
    app.timeline_followed_step = SIZE_MAX;
  }
  ImGui::SameLine();
  const std::string shown = duration_text(static_cast<int64_t>(app.view_end_ns - app.view_start_ns)),
                    whole = duration_text(x.max_ns() - x.min_ns());
  const std::string headers[] = {shown + " shown of " + whole + " | wheel: zoom, drag: pan, W/S A/D F while hovered",
                                 shown + " of " + whole + " | wheel, drag, W/S A/D F", shown + " of " + whole};
  const float header_x = ImGui::GetCursorScreenPos().x;
  const float window_right = ImGui::GetWindowPos().x + ImGui::GetWindowContentRegionMax().x;
  const float room = window_right - header_x - ImGui::CalcTextSize("000000 rects").x - 12;
  const std::string* header = &headers[2];
  for (const std::string& h : headers) {
    if (ImGui::CalcTextSize(h.c_str()).x <= room) {
      header = &h;
      break;
    }
  }
  ImGui::TextDisabled("%s", header->c_str());
  app.timeline_header = TextFit{};
  app.timeline_header.text = headers[0];
  app.timeline_header.shown = *header;
  app.timeline_header.shortened = header != &headers[0];
  app.timeline_header.width = ImGui::CalcTextSize(header->c_str()).x;
  app.timeline_header.given = window_right - header_x;
  return header_x;
}

// What the level of detail drew, at the axis's right end (for the curious
// and the benchmarks), never over the header's own text.
void draw_rect_count(App& app, ImDrawList* top, ImVec2 header, ImVec2 axis_pos, float width, size_t items_drawn) {
  char status[64];
  std::snprintf(status, sizeof status, "%zu rects", items_drawn);
  const ImVec2 sz = ImGui::CalcTextSize(status);
  const float status_x = axis_pos.x + width - sz.x - 4;
  if (status_x >= header.x + app.timeline_header.width + 8) {
    top->AddText(ImVec2(status_x, header.y + 2), kMuted, status);
    app.timeline_header.given = status_x - 8 - header.x;
  }
}

// [SECTION] Input: zoom, pan, fit ---------------------------------------------------------

// Where the pointer is: only the rows and the axis take the wheel, a drag
// and the keys, never the header's buttons.
struct Pointer {
  ImVec2 mouse;
  bool over_area = false;  // over the rows
  bool hovered = false;    // over the rows or the axis
  double fraction = 0;     // across the rows' width, 0..1
};

Pointer pointer_at(ImVec2 area0, float width, ImVec2 axis_pos) {
  Pointer p;
  p.mouse = ImGui::GetIO().MousePos;
  p.over_area = ImGui::IsWindowHovered() && p.mouse.x >= area0.x && p.mouse.x < area0.x + width;
  const bool over_axis = p.mouse.x >= axis_pos.x && p.mouse.x < axis_pos.x + width && p.mouse.y >= axis_pos.y &&
                         p.mouse.y < axis_pos.y + px(kAxisPx) &&
                         ImGui::IsWindowHovered(ImGuiHoveredFlags_RootAndChildWindows);
  p.hovered = p.over_area || over_axis;
  p.fraction = std::clamp(static_cast<double>(p.mouse.x - area0.x) / width, 0.0, 1.0);
  return p;
}

// The wheel zooms around the pointer (with Shift it scrolls the rows), a
// drag pans both ways, a double-click or F fits, W/S zoom and A/D pan while
// held. Zooming or panning by hand stops following the step.
void handle_input(App& app, const Pointer& p, float width, float scroll_y) {
  ImGuiIO& io = ImGui::GetIO();
  const double view_w = app.view_end_ns - app.view_start_ns;
  if (p.hovered && io.MouseWheel != 0) {
    if (io.KeyShift) {
      ImGui::SetScrollY(scroll_y - io.MouseWheel * px(kLanePx) * 3);
    } else {
      const double anchor = app.view_start_ns + p.fraction * view_w;
      set_width(app, view_w * std::pow(kWheelZoom, io.MouseWheel), anchor, p.fraction);
      app.timeline_follow = false;
    }
  }
  if (p.hovered && (ImGui::IsMouseClicked(ImGuiMouseButton_Left) || ImGui::IsMouseClicked(ImGuiMouseButton_Middle))) {
    app.timeline_dragging = true;
  }
  if (app.timeline_dragging) {
    if (ImGui::IsMouseDown(ImGuiMouseButton_Left) || ImGui::IsMouseDown(ImGuiMouseButton_Middle)) {
      if (io.MouseDelta.x != 0 || io.MouseDelta.y != 0) {
        const double shift = -static_cast<double>(io.MouseDelta.x) * view_w / width;
        app.view_start_ns += shift;
        app.view_end_ns += shift;
        ImGui::SetScrollY(std::clamp(scroll_y - io.MouseDelta.y, 0.0f, ImGui::GetScrollMaxY()));
        if (io.MouseDelta.x != 0) app.timeline_follow = false;
      }
    } else {
      app.timeline_dragging = false;
    }
  }
  if (p.hovered && ImGui::IsMouseDoubleClicked(ImGuiMouseButton_Left)) fit(app);
  if (p.hovered && !io.WantTextInput && !io.KeyCtrl) {
    const double dt = std::min(0.1, static_cast<double>(io.DeltaTime));
    const double zoom = std::pow(kKeyZoomPerSecond, dt);
    const double anchor_fraction = p.over_area ? p.fraction : 0.5;
    const double anchor = app.view_start_ns + anchor_fraction * view_w;
    if (ImGui::IsKeyDown(GLFW_KEY_W)) set_width(app, view_w / zoom, anchor, anchor_fraction);
    if (ImGui::IsKeyDown(GLFW_KEY_S) && !app.running.active) set_width(app, view_w * zoom, anchor, anchor_fraction);
    const double pan = view_w * kKeyPanPerSecond * dt;
    if (ImGui::IsKeyDown(GLFW_KEY_A)) app.view_start_ns -= pan, app.view_end_ns -= pan;
    if (ImGui::IsKeyDown(GLFW_KEY_D)) app.view_start_ns += pan, app.view_end_ns += pan;
    if (ImGui::IsKeyPressed(GLFW_KEY_F, false)) fit(app);
    for (int k : {GLFW_KEY_W, GLFW_KEY_S, GLFW_KEY_A, GLFW_KEY_D}) {
      if (ImGui::IsKeyDown(k)) app.timeline_follow = false;
    }
  }
}

// [SECTION] The rows ----------------------------------------------------------------------

// The rows' area as this frame draws it: where it is on screen, what it
// clips to, and the view's mapping from the trace's clock to x.
struct RowsArea {
  const TimelineIndex& x;
  const trace::Trace& t;
  const Layout& layout;
  ImDrawList* dl;
  ImVec2 area0;  // top-left of the scrolled content
  float width;
  ImVec2 clip0, clip1;  // the child window's visible rectangle
  double v0, v1, npp;   // the view's window, and ns per pixel
  // While a lesson's question waits, spans that start after this time keep
  // their names to themselves (Note [Lessons in the app]); INT64_MAX: none hidden.
  int64_t hide_after_ns = INT64_MAX;
  std::vector<DrawnText>* texts = nullptr;  // the labels drawn, as fitted (App::texts_drawn)
  const Story* story = nullptr;             // for a span's cold or warm
  // x of a time, clamped just outside the panel: no float trouble deep in a zoom.
  float x_of(double ns) const {
    const double left = area0.x, right = area0.x + width;
    return static_cast<float>(std::clamp(left + (ns - v0) / npp, left - 4.0, right + 4.0));
  }
  float lane_top(size_t lane) const { return area0.y + lane_y(x, layout, lane); }
};

// The queues: work on a device row waited from its launch's end to its own
// start, drawn on the row as a stroke under the spans (what another kernel
// ran over, it waited behind): the gap between the two clocks (Note [The
// queue at time t], streams_model.h; the tooltip gives the number).
void draw_queues(const App& app, const RowsArea& r) {
  const trace::Trace& t = r.t;
  for (size_t k = 0, drawn = 0; k < app.timeline_flows.size() && drawn < kMaxFlowsDrawn; ++k) {
    const auto [from, to] = app.timeline_flows[k];
    if (t.spans[to].floor != trace::Floor::Device || t.spans[from].floor == trace::Floor::Device) continue;
    const double a = static_cast<double>(t.spans[from].end_ns), b = static_cast<double>(t.spans[to].start_ns);
    if (b <= a || b < r.v0 || a > r.v1) continue;
    const float ym = r.lane_top(r.x.lane_of_span(to)) + px(kLanePx) / 2 - 1;
    if (ym < r.clip0.y || ym > r.clip1.y) continue;
    r.dl->AddLine(ImVec2(r.x_of(a), ym), ImVec2(r.x_of(b), ym), floor_color(trace::Floor::Streams, 0.9f), 3.0f);
    ++drawn;
  }
}

// The item under the pointer, as draw_rows found it.
struct Hover {
  bool found = false;
  TimelineItem item;
  float x0 = 0, x1 = 0, y = 0;
};

// One item of a lane: a span (its label when it is wide enough) or several
// merged by the level of detail, thinner and paler.
void draw_item(const RowsArea& r, size_t lane, float y0, float y1, const TimelineItem& it, const Pointer& p,
               Hover& hover) {
  const float x0 = r.x_of(static_cast<double>(it.start_ns));
  const float x1 = std::max(x0 + 1.0f, r.x_of(static_cast<double>(it.end_ns)));
  const size_t span = r.x.span_at(lane, it.first);
  const trace::Span& first = r.t.spans[span];
  if (it.merged()) {
    r.dl->AddRectFilled(ImVec2(x0, y0 + 3), ImVec2(x1, y1 - 3), floor_color(first.floor, 0.5f));
  } else {
    const ImU32 fill = floor_color(first.floor, 1.0f);
    r.dl->AddRectFilled(ImVec2(x0, y0), ImVec2(x1 - (x1 - x0 > 3 ? 1.0f : 0.0f), y1), fill);
    if (x1 - x0 >= px(kLabelMinPx) && first.start_ns <= r.hide_after_ns) {
      const float left = r.area0.x, right = r.area0.x + r.width;
      const float tx = std::max(x0, left) + px(kTextPadPx);
      // The name and its time where both fit, else the name alone, else no label (the hover has it): never
      // a name cut mid-word.
      TextFit fit;
      fit.text = first.name + "  " + temperature(*r.story, span) + " " + duration_text(first.duration_ns());
      fit.given = std::min(x1, right) - px(kTextPadPx) - tx;
      fit.shown = fit.text;
      fit.width = ImGui::CalcTextSize(fit.shown.c_str()).x;
      if (fit.width > fit.given) {
        fit.shown = first.name;
        fit.width = ImGui::CalcTextSize(fit.shown.c_str()).x;
        fit.shortened = true;
      }
      if (fit.width > fit.given) fit.shown.clear(), fit.width = 0;
      const float font_px = ImGui::GetFontSize();
      if (!fit.shown.empty())
        r.dl->AddText(ImVec2(tx, y0 + (px(kLanePx) - font_px) / 2 - 1), label_colour(fill), fit.shown.c_str());
      if (r.texts && r.texts->size() < App::kTextsRecorded) r.texts->push_back({"timeline", std::move(fit)});
    }
  }
  if (!hover.found && p.over_area && p.mouse.y >= y0 && p.mouse.y <= y1 && p.mouse.x >= x0 - 1 && p.mouse.x <= x1 + 1) {
    hover = {true, it, x0, x1, y0};
  }
}

// Each row: its label strip, then each lane in view through the index.
// Returns the number of items drawn.
size_t draw_rows(const RowsArea& r, const Pointer& p, Hover& hover) {
  size_t items_drawn = 0;
  for (size_t row_k = 0; row_k < r.x.rows().size(); ++row_k) {
    const TimelineRow& row = r.x.rows()[row_k];
    const float ry = r.area0.y + r.layout.row_y[row_k];
    if (ry > r.clip1.y) break;
    if (ry + px(kRowHeaderPx) + px(kLanePx) * static_cast<float>(row.depths) < r.clip0.y) continue;
    r.dl->AddRectFilled(ImVec2(r.area0.x, ry), ImVec2(r.area0.x + r.width, ry + px(kRowHeaderPx) - 1), kRowBg);
    const std::string header = row.label + "  (" + std::to_string(row.spans) + " spans)";
    TextFit fit = fit_text(header, r.width - 8, 1);
    r.dl->AddText(ImVec2(r.area0.x + 4, ry + 1), kMuted, fit.shown.c_str());
    if (r.texts && r.texts->size() < App::kTextsRecorded) r.texts->push_back({"timeline", std::move(fit)});
    for (size_t d = 0; d < row.depths; ++d) {
      const size_t lane = row.first_lane + d;
      const float y0 = r.lane_top(lane), y1 = y0 + px(kLanePx) - 1;
      if (y1 < r.clip0.y || y0 > r.clip1.y) continue;
      auto visit = [&](const TimelineItem& it) {
        ++items_drawn;
        draw_item(r, lane, y0, y1, it, p, hover);
      };
      r.x.visit_lane(lane, r.v0, r.v1, r.npp, visit);
    }
  }
  return items_drawn;
}

// [SECTION] Flows and the ancestor path -----------------------------------------------------

// An arrow from each launch to what it launched (its start). Work on a device
// row is reached from the launch's end, when the host had control back (the
// queue strokes show how long it then waited).
void draw_flows(const App& app, const RowsArea& r) {
  const trace::Trace& t = r.t;
  for (size_t k = 0, drawn = 0; k < app.timeline_flows.size() && drawn < kMaxFlowsDrawn; ++k) {
    const auto [from, to] = app.timeline_flows[k];
    const bool to_device = t.spans[to].floor == trace::Floor::Device && t.spans[from].floor != trace::Floor::Device;
    const double a = static_cast<double>(to_device ? t.spans[from].end_ns : t.spans[from].start_ns);
    const double b = static_cast<double>(t.spans[to].start_ns);
    if (std::max(a, b) < r.v0 || std::min(a, b) > r.v1) continue;
    // The ends at their true places, the line then cut to the panel's width: clamping each end on its own
    // (x_of) would bend a line whose end is scrolled out of view into a stray diagonal.
    const double left = r.area0.x, right = r.area0.x + r.width;
    const double xa = left + (a - r.v0) / r.npp, xb = left + (b - r.v0) / r.npp;
    const double ya = r.lane_top(r.x.lane_of_span(from)) + px(kLanePx) / 2, yb = r.lane_top(r.x.lane_of_span(to)) + 1;
    if (std::max(ya, yb) < r.clip0.y || std::min(ya, yb) > r.clip1.y) continue;
    double t0 = 0, t1 = 1;
    if (xa == xb && (xa < left || xa > right)) continue;
    if (xa != xb) {
      const double ta = (left - xa) / (xb - xa), tb = (right - xa) / (xb - xa);
      t0 = std::max(t0, std::min(ta, tb));
      t1 = std::min(t1, std::max(ta, tb));
    }
    if (t0 > t1) continue;
    auto at = [&](double u) { return ImVec2(float(xa + (xb - xa) * u), float(ya + (yb - ya) * u)); };
    const ImVec2 p = at(t0), q = at(t1);
    r.dl->AddLine(p, q, kFlow, 1.0f);
    if (t1 == 1) r.dl->AddTriangleFilled(q, ImVec2(q.x - 4, q.y - 7), ImVec2(q.x + 4, q.y - 7), kFlow);  // its head
    ++drawn;
  }
}

// The current span outlined bright, and the path of its ancestors up to its
// root; app.timeline_current_px: its width as drawn.
void draw_ancestor_path(App& app, const RowsArea& r, size_t current) {
  app.timeline_current_px = -1;
  if (current == SIZE_MAX || current >= r.t.spans.size()) return;
  size_t i = current;
  for (int guard = 0; i != SIZE_MAX && guard < 4096; ++guard) {
    const trace::Span& s = r.t.spans[i];
    const float y0 = r.lane_top(r.x.lane_of_span(i));
    const float x0 = r.x_of(static_cast<double>(s.start_ns));
    const float x1 = std::max(x0 + 2.0f, r.x_of(static_cast<double>(s.end_ns)));
    if (i == current) {
      app.timeline_current_px = static_cast<float>(static_cast<double>(s.end_ns - s.start_ns) / r.npp);
      r.dl->AddRect(ImVec2(x0 - 1, y0 - 1), ImVec2(x1 + 1, y0 + px(kLanePx)), kCurrent, 0.0f, 0, 2.0f);
    } else {
      r.dl->AddRect(ImVec2(x0, y0), ImVec2(x1, y0 + px(kLanePx) - 1), kAncestor, 0.0f, 0, 1.0f);
    }
    i = i < app.story.parent_index.size() ? app.story.parent_index[i] : SIZE_MAX;
  }
}

// The hovered item outlined, its tooltip, and a click on a span scrubs the
// playback to the step down into it.
void hover_and_click(App& app, const RowsArea& r, const Hover& hover) {
  if (!hover.found) return;
  ImGuiIO& io = ImGui::GetIO();
  r.dl->AddRect(ImVec2(hover.x0, hover.y), ImVec2(hover.x1, hover.y + px(kLanePx) - 1), kHover);
  if (hover.item.merged()) {
    merged_tooltip(hover.item);
    return;
  }
  const size_t span = hover.item.span;
  if (r.t.spans[span].start_ns > r.hide_after_ns) {
    ImGui::SetTooltip("(answer the Lesson tab's question first)");
    return;
  }
  app.hovered_span = static_cast<int64_t>(span);
  span_tooltip(app, span);
  const bool clicked = ImGui::IsMouseReleased(ImGuiMouseButton_Left) &&
                       io.MouseDragMaxDistanceSqr[0] < io.MouseDragThreshold * io.MouseDragThreshold;
  if (clicked && span < app.story.down_step.size() && app.story.down_step[span] != SIZE_MAX) {
    app.play.scrub(app.story, app.story.down_step[span]);
    app.timeline_follow = false;  // the toolbar's step keys turn it back on
  }
}

}  // namespace

// [SECTION] The panel ---------------------------------------------------------------------

// The header, the axis, then the rows in a child that scrolls vertically:
// input first (the view this frame draws is the one it leaves), then the
// queues under the spans, the spans, the flows and the current span's path
// over them, and the hover last.
void draw_timeline(App& app, ImVec2 pos, ImVec2 size) {
  g_scale = app.ui_scale;
  ImGui::SetNextWindowPos(pos);
  ImGui::SetNextWindowSize(size);
  const ImGuiWindowFlags flags = kPanelFlags | ImGuiWindowFlags_NoScrollbar | ImGuiWindowFlags_NoScrollWithMouse;
  if (!ImGui::Begin("Timeline: every span of the call, by thread and depth##timeline", nullptr, flags)) {
    ImGui::End();
    return;
  }
  app.panels_drawn.push_back("timeline");
  app.hovered_span = -1;
  if (!app.loaded.trace || app.loaded.trace->spans.empty()) {
    ImGui::TextDisabled("No spans to show: run a line in the console or open a trace.");
    ImGui::End();
    return;
  }
  const TimelineIndex& x = app.timeline;
  if (!(app.view_end_ns - app.view_start_ns >= 1.0)) fit(app);  // an empty or reversed view

  ImDrawList* top = ImGui::GetWindowDrawList();  // the header and the axis (the rows have the child's)
  const float header_y = ImGui::GetCursorScreenPos().y;
  const float header_x = draw_header(app);
  const ImVec2 axis_pos = ImGui::GetCursorScreenPos();
  ImGui::Dummy(ImVec2(ImGui::GetContentRegionAvail().x, px(kAxisPx)));
  const ImVec2 child_size = ImGui::GetContentRegionAvail();
  const Layout layout = layout_of(x);
  const size_t current = app.current_span();

  // Follow: when the step changed, bring its span into view (both ways), at
  // a width that can be seen (the rows' width: the panel less a scrollbar).
  bool follow_now = false;
  if (app.timeline_follow && current != SIZE_MAX && app.step() != app.timeline_followed_step) {
    bring_into_view(app, current, child_size.x - ImGui::GetStyle().ScrollbarSize);
    app.timeline_followed_step = app.step();
    follow_now = true;
  }

  ImGui::BeginChild("##timeline_rows", child_size, false, ImGuiWindowFlags_NoScrollWithMouse);
  const ImVec2 area0 = ImGui::GetCursorScreenPos();
  const float width = std::max(1.0f, ImGui::GetContentRegionAvail().x);
  const ImVec2 clip0 = ImGui::GetWindowPos();
  const ImVec2 clip1(clip0.x + ImGui::GetWindowSize().x, clip0.y + ImGui::GetWindowSize().y);
  const float scroll_y = ImGui::GetScrollY();
  ImGui::Dummy(ImVec2(width, layout.height));
  if (follow_now) {  // the lane of the current span, vertically
    const float y = lane_y(x, layout, x.lane_of_span(current));
    const float view_h = clip1.y - clip0.y;
    if (y < scroll_y || y + px(kLanePx) > scroll_y + view_h) ImGui::SetScrollY(std::max(0.0f, y - view_h / 3));
  }

  const Pointer pointer = pointer_at(area0, width, axis_pos);
  handle_input(app, pointer, width, scroll_y);
  const double v0 = app.view_start_ns, v1 = app.view_end_ns;
  RowsArea rows{x,     app.trace(), layout, ImGui::GetWindowDrawList(), area0, width, clip0,
                clip1, v0,          v1,     (v1 - v0) / width};
  if (question_waits(app)) rows.hide_after_ns = app.story.steps[app.step()].at_ns;
  rows.texts = &app.texts_drawn;
  rows.story = &app.story;
  draw_axis(top, app, axis_pos, width, clip1.y);
  draw_queues(app, rows);
  Hover hover;
  const size_t items_drawn = draw_rows(rows, pointer, hover);
  draw_flows(app, rows);
  draw_ancestor_path(app, rows, current);
  hover_and_click(app, rows, hover);
  ImGui::EndChild();
  draw_rect_count(app, top, ImVec2(header_x, header_y), axis_pos, width, items_drawn);
  ImGui::End();
}

}  // namespace descent::ui
