// The building laid out, without drawing: each floor's band, label and text
// fitted to the lines it has, the device strip, the token. The building
// panel (panel_building.cpp) draws what this computes, and the state dump
// (state.cpp) reports it. See BuildingLayout in app.h.
//
// [SECTION] Constants
// [SECTION] What a floor says
// [SECTION] The floors
// [SECTION] The device strip
// [SECTION] The building
#include <algorithm>
#include <cmath>
#include <cstdio>

#include "ui/app.h"

namespace descent::ui {

namespace {

// [SECTION] Constants -----------------------------------------------------------------

constexpr float kLabelWidth = 0.19f;  // of the panel's width
constexpr float kShaftWidth = 0.08f;
constexpr float kRoofPx = 38.0f;
constexpr float kStripMaxFraction = 0.24f;  // of the panel's height, at most, for the device strip
constexpr float kStripLaneLines = 1.5f;     // a stream's row, in text lines
constexpr float kStripBoxPx = 60.0f;        // a work box's width, at least; a box fits its text
constexpr int kStreamsFloor = static_cast<int>(trace::Floor::Streams);  // where the host waits for the device

float ease(float x) { return x * x * (3 - 2 * x); }  // smoothstep

// [SECTION] What a floor says -------------------------------------------------------------

// Every time says whether it is cold or warm, by the one rule every view
// takes (timing_of and timing_text: Note [Cold and warm times] in story.h).
std::string timing_line(const App& app, size_t span) { return timing_text(timing_of(app.story, span)); }

std::string decisions_line(const trace::Span& sp) {
  std::string s;
  for (const trace::SpanArg& a : sp.args) {
    if (a.key == trace::kDecidedAt) continue;  // a source line: the detail panel's source view shows it
    if (a.key == "edge_data_ptrs") continue;   // addresses, for naming the graph's leaves: noise on a floor
    if (!s.empty()) s += "  ";
    s += a.key + "=" + arg_text(a.value);
  }
  return s;
}

// [SECTION] The floors ------------------------------------------------------------------------

// A floor the call reaches: what it did, in the lines its band has. The
// span's name and a time come first, on every band, however short (a
// projector's 720 lines give a floor one line in presenter mode, two in a
// window): a band of one line shows the name and the inclusive time ("aten::add
// 219 us"), of two the name and the times above the decision, of three or
// more the name, the times, then the decision. What does not fit is a hover
// away.
void lay_out_span_text(const App& app, FloorLayout& fl, int lines, float y) {
  const FloorView& v = fl.view;
  const float width = fl.text_rect.z - fl.text_rect.x, x = fl.text_rect.x, line_h = ImGui::GetTextLineHeight();
  const trace::Span& sp = app.trace().spans[v.span];
  std::string head = sp.name;
  if (v.state == FloorState::Ahead) head = "next: " + head;
  if (v.state == FloorState::Visited) head = "done: " + head;
  // Floors 7 and 8 say what they decided in words (stream, queue, grid, the wait).
  std::string d = device_decision(app.trace(), app.streams, v.span);
  if (d.empty()) d = decisions_line(sp);
  std::string timing = timing_line(app, v.span);
  std::string short_time = duration_text(timing_of(app.story, v.span).lead_inclusive_ns());
  // A lesson's question waits for its answer: what lies ahead (a span's
  // name, its decisions) is not given away (Note [Lessons in the app]).
  if (v.state == FloorState::Ahead && question_waits(app)) {  // on every tab
    head = "next: ?";
    timing.clear();
    short_time.clear();
    d = "(answer the Lesson tab's question first)";
  }
  const int d_lines = d.empty() || lines == 1 ? 0 : lines >= 3 ? lines - 2 : 1;
  const int head_lines = lines - d_lines;
  auto place = [&](TextFit fit, PlacedText::Ink ink) {  // then y is under it
    const int n = lines_of(fit);
    fl.texts.push_back({std::move(fit), ImVec2(x, y), ink});
    for (int k = 0; k < n; ++k) y += line_h;
  };
  // The name and as much of the time as fits beside it: the whole timing
  // line, else the inclusive time, else (a long name) the name without its
  // "aten::" with the inclusive time.
  auto name_and_time = [&] {
    TextFit h = fit_text(timing.empty() ? head : head + "   " + timing, width, 1);
    if (!h.shortened) return h;
    fl.shortened = true;
    TextFit s = fit_text(short_time.empty() ? head : head + "  " + short_time, width, 1);
    const size_t ns = head.find("::");
    if (s.shortened && ns != std::string::npos && !short_time.empty())
      s = fit_text(head.substr(0, head.rfind(' ', ns) + 1) + head.substr(ns + 2) + "  " + short_time, width, 1);
    // Still too long (a 720p projector): without "done: " (the band's dimmed
    // colour says it), so that the op and its time stay.
    if (s.shortened && !short_time.empty() && head != sp.name && head.rfind("next: ?", 0) != 0) {
      const size_t sc = sp.name.find("::");
      for (const std::string& bare : {sp.name, sc == std::string::npos ? sp.name : sp.name.substr(sc + 2)}) {
        s = fit_text(bare + "  " + short_time, width, 1);
        if (!s.shortened) break;
      }
    }
    return s;
  };
  if (head_lines == 1) {
    place(name_and_time(), PlacedText::Main);
  } else {
    TextFit h = fit_text(head, width, 1), t = fit_text(timing, width, 1);
    fl.shortened = h.shortened || t.shortened;
    place(std::move(h), PlacedText::Main);
    place(std::move(t), PlacedText::Quiet);
  }
  fl.decision = d;
  fl.decision_fit = fit_text(d, width, std::max(1, d_lines));  // (the state dump's, when the band has no room)
  if (!d.empty() && d_lines > 0) place(fl.decision_fit, PlacedText::Quiet);
  fl.shortened = fl.shortened || fl.decision_fit.shortened || (d_lines == 0 && !d.empty());
  if (v.spans_in_call > 1 && y + line_h <= fl.rect.w) {
    TextFit n;
    n.text = n.shown = std::to_string(v.spans_in_call) + " spans on this floor in this call";
    place(std::move(n), PlacedText::Quiet);
  }
  fl.full = head + "\n" + timing + (d.empty() ? "" : "\n" + d);
}

// Floor f's band, its label, and what it says (or why the call skips it).
FloorLayout lay_out_floor(const App& app, const BuildingLayout& L, int f, const FloorView& v) {
  FloorLayout fl;
  fl.view = v;
  const ImVec2 a(L.origin.x, L.origin.y + L.roof + (f - 1) * L.band_h), b(L.x_end, a.y + L.band_h - 2);
  fl.rect = ImVec4(a.x, a.y, b.x, b.y);
  char label[48];
  std::snprintf(label, sizeof label, "%d  %s", f, floor_title(f));
  fl.label = label;
  fl.label_at = ImVec2(a.x + 16, a.y + (L.band_h - L.line_h) * 0.5f - 2);
  fl.text_rect = ImVec4(L.x_text, a.y, b.x - BuildingLayout::kMarginPx, b.y);
  const int lines = std::max(1, static_cast<int>((b.y - a.y - 2) / L.line_h));
  const float y = a.y + std::min(4.0f, (b.y - a.y - lines * L.line_h) * 0.5f);
  if (v.span != SIZE_MAX) {
    lay_out_span_text(app, fl, lines, y);
  } else {
    // Why a floor is skipped tells what a floor above decided ("CPU tensors go
    // no deeper than floor 6: aten::add ran its reference loop"): hidden while a question waits.
    fl.full = question_waits(app) ? std::string("skipped (why: after the answer)") : "skipped: " + v.skip_reason;
    fl.decision_fit = fit_text(fl.full, fl.text_rect.z - fl.text_rect.x, lines);
    fl.texts.push_back({fl.decision_fit, ImVec2(L.x_text, y), PlacedText::Muted});
    fl.shortened = fl.decision_fit.shortened;
  }
  return fl;
}

// [SECTION] The device strip ------------------------------------------------------------------

// What the strip says the device is doing at `now`, from the counts of its lanes' work.
struct StripCounts {
  size_t running = 0, queued = 0, done = 0, ahead = 0, total = 0;
  int64_t next_start = kNever;  // the next work to start after now, and its name
  std::string next_name;
};

std::string strip_text(const App& app, const StripCounts& n, bool host_waits, int64_t now) {
  const bool at_end = app.has_steps() && app.step() + 1 == app.story.steps.size();
  std::string s;
  if (n.running) s = std::to_string(n.running) + " running";
  if (n.queued) s += (s.empty() ? "" : ", ") + std::to_string(n.queued) + " queued, not started yet";
  if (s.empty()) {
    s = n.done == n.total ? "idle, all its work done" : n.ahead == n.total ? "idle, nothing launched yet" : "idle";
  }
  if (host_waits)
    s += "; the host waits for it on floor " + std::to_string(kStreamsFloor);
  else if (at_end && n.next_start != kNever) {
    s += "; the host has returned, and " + n.next_name + " starts " + duration_text(n.next_start - now) + " later";
  } else if (n.running + n.queued > 0 && app.has_steps()) {
    s += "; the host has moved on";
  }
  return s;
}

// One stream's row at `y`: its label, its piece of the shaft, the running
// kernel first (with the token's echo), then the queue behind it, then a
// count of what is done, as far as the strip's width allows.
StripLane lay_out_lane(const BuildingLayout& L, const StreamLane& lane, const LaneAt& at, float y, float row_h,
                       float right) {
  StripLane sl;
  sl.label = lane.label;
  sl.label_at = ImVec2(L.origin.x + 16, y + (row_h - L.line_h) * 0.5f);
  sl.shaft = ImVec4(L.x_shaft, y, L.x_shaft + L.shaft_w, y + row_h - 2);
  float x = L.x_shaft + L.shaft_w + 10;
  // A box fits its text; one that would not fit in the row, and every one after it, is counted instead.
  size_t left_out = 0;
  auto box = [&](const DeviceWork& w, bool running, const char* prefix) {
    const std::string text = prefix + w.name;
    const float width = std::max(kStripBoxPx, ImGui::CalcTextSize(text.c_str()).x + 10);
    if (left_out > 0 || x + width > right - BuildingLayout::kMarginPx) {
      ++left_out;
      return;
    }
    const ImVec2 p0(x, y + 2), p1(x + width, y + row_h - 4);
    sl.boxes.push_back({text, p0, p1, ImVec2(p0.x + 4, p0.y + (p1.y - p0.y - L.line_h) * 0.5f), running});
    x = p1.x + 6;
  };
  if (at.running != SIZE_MAX) {
    box(lane.work[at.running], true, "running ");
    sl.echo = true;
    sl.echo_centre = ImVec2(L.x_shaft + L.shaft_w * 0.5f, y + row_h * 0.5f - 1);
    sl.echo_radius = std::min(L.shaft_w, row_h) * 0.32f;
  }
  for (size_t k : at.queued) box(lane.work[k], false, "queued ");
  std::string rest = left_out > 0 ? "+" + std::to_string(left_out) + " more" : std::string();
  if (!at.done.empty()) rest += (rest.empty() ? "" : ", ") + std::string("done: ") + std::to_string(at.done.size());
  if (!rest.empty() && x + ImGui::CalcTextSize(rest.c_str()).x < right - BuildingLayout::kMarginPx - 4) {
    sl.done = rest;
    sl.done_at = ImVec2(x, y + (row_h - L.line_h) * 0.5f);
  }
  return sl;
}

// The strip in `rect`: a row per stream at the playback's moment, and the line saying what the device does.
DeviceStripLayout lay_out_strip(const App& app, const BuildingLayout& L, ImVec4 rect, bool host_waits) {
  DeviceStripLayout st;
  st.shown = true;
  st.rect = rect;
  st.host_waits = host_waits;
  const int64_t now = app.now_ns();
  const float row_h = L.line_h * kStripLaneLines;
  StripCounts n;
  for (size_t l = 0; l < app.streams.lanes.size(); ++l) {
    const StreamLane& lane = app.streams.lanes[l];
    const LaneAt at = lane_at(lane, now);
    const float y = rect.y + L.line_h * 1.4f + row_h * static_cast<float>(l);
    if (y + row_h > rect.w + 1) break;
    st.lanes.push_back(lay_out_lane(L, lane, at, y, row_h, rect.z));
    if (at.running != SIZE_MAX) st.echoes.push_back(lane.work[at.running].name);
    n.running += at.running != SIZE_MAX;
    n.queued += at.queued.size();
    n.done += at.done.size();
    n.ahead += at.ahead;
    n.total += lane.work.size();
    for (const DeviceWork& w : lane.work) {
      if (w.start_ns > now && w.start_ns != kNever && w.start_ns < n.next_start) {
        n.next_start = w.start_ns;
        n.next_name = w.name;
      }
    }
  }
  st.text = strip_text(app, n, host_waits, now);
  st.title = "the device, on its own clock: " + st.text;
  st.title_at = ImVec2(rect.x + 16, rect.y + 3);
  st.title_fit = fit_text(st.title, rect.z - BuildingLayout::kMarginPx - st.title_at.x, 1);
  if (host_waits) {  // from the middle of the streams floor down to the strip's first row
    st.bracket_x = L.x_end - BuildingLayout::kMarginPx - 10;
    st.bracket_top = L.floor_middle(kStreamsFloor);
    st.bracket_bottom = rect.y + L.line_h * 1.2f;
  }
  return st;
}

// [SECTION] The building ----------------------------------------------------------------------

// The token, between the floor of this step and the next one's, as far as the playback has moved.
TokenLayout lay_out_token(const App& app, const BuildingLayout& L) {
  TokenLayout t;
  if (!app.has_steps()) return t;
  const Story& s = app.story;
  const size_t k = app.step();
  const int f0 = token_floor(s, k);
  const int f1 = k + 1 < s.steps.size() ? token_floor(s, k + 1) : f0;
  const float moved = ease(static_cast<float>(app.play.fraction()));
  auto middle = [&](int f) { return L.floor_middle(std::max(f, 1)); };
  t.shown = true;
  t.centre = ImVec2(L.x_shaft + L.shaft_w * 0.5f, middle(f0) + (middle(f1) - middle(f0)) * moved);
  t.radius = std::min(L.shaft_w, L.band_h) * 0.36f;
  t.floor = static_cast<trace::Floor>(std::max(f0, 1));
  t.down = s.steps[k].down;
  return t;
}

}  // namespace

BuildingLayout layout_building(const App& app, ImVec2 origin, ImVec2 size) {
  BuildingLayout L;
  L.origin = origin;
  L.size = size;
  L.line_h = ImGui::GetTextLineHeight();
  L.roof = std::max(kRoofPx, L.line_h * 1.6f);
  const bool strip = !app.streams.empty();  // a call on a device: the basement
  const float strip_h =
      strip ? std::min(size.y * kStripMaxFraction,
                       L.line_h * (1.6f + kStripLaneLines * static_cast<float>(app.streams.lanes.size())))
            : 0.0f;
  L.band_h = (size.y - L.roof - strip_h) / kBuildingFloors;
  // The label column fits the longest floor name in the current font.
  float label_w = size.x * kLabelWidth;
  for (int f = 1; f <= kBuildingFloors; ++f) {
    label_w = std::max(label_w, ImGui::CalcTextSize(floor_title(f)).x + ImGui::CalcTextSize("8  ").x + 28);
  }
  L.shaft_w = size.x * kShaftWidth;
  L.x_shaft = origin.x + label_w;
  L.x_text = L.x_shaft + L.shaft_w + 10;
  L.x_end = origin.x + size.x;

  // The roof: the line of Python being told, and its result once back up.
  const Story& s = app.story;
  const bool at_end = app.has_steps() && app.step() + 1 == s.steps.size();
  L.roof_text =
      app.has_steps() ? app.trace().spans[s.roots[root_of_step(s, app.step())]].name : std::string("(no call)");
  if (at_end && !app.loaded.output.empty()) {
    L.roof_text += "   ->   " + app.loaded.output.substr(0, app.loaded.output.find('\n'));
  }
  // Centred on the roof, shortened at a word where the panel is narrower than the line.
  L.roof_fit = fit_text(L.roof_text, size.x - 2 * BuildingLayout::kMarginPx, 1);
  L.roof_text_at = ImVec2(origin.x + (size.x - L.roof_fit.width) * 0.5f, origin.y + L.roof - L.line_h - 4);

  std::array<FloorView, kBuildingFloors + 1> views;
  if (app.has_steps())
    views = floors_at(s, app.step());
  else
    for (int f = 1; f <= kBuildingFloors; ++f) views[f].skip_reason = "no call: nothing was traced";
  for (int f = 1; f <= kBuildingFloors; ++f) L.floors[f] = lay_out_floor(app, L, f, views[f]);

  // The basement: the device's streams at the playback's moment.
  if (strip) {
    const float y0 = origin.y + L.roof + kBuildingFloors * L.band_h;
    const FloorView& wait = views[kStreamsFloor];
    const bool waits =
        wait.state == FloorState::Active && wait.span != SIZE_MAX && is_sync_span(app.trace().spans[wait.span]);
    L.strip = lay_out_strip(app, L, ImVec4(origin.x, y0, L.x_end, y0 + strip_h - 2), waits);
  }
  L.token = lay_out_token(app, L);
  return L;
}

}  // namespace descent::ui
