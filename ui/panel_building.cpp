// The building: the eight floors as a cross-section, and the call's token
// riding the shaft down and back up.
//
// Each floor is a band: its number and name on the left, the shaft in which
// the token moves, and what the floor did for the call on the right (the
// span's name, its time, its decisions). A floor the call is on is lit in its
// full colour; one it has left is dim; one it will reach is outlined; one it
// never reaches is grey and hatched, with the reason. See Note [A call as
// steps] (story.h) for what a step is.
//
// A call on a device also has a basement: the device strip under floor 8,
// one row per stream, on the device's own clock. The token stops at the
// launch and climbs back up with the host; the kernel it launched shows in
// the strip only when the playback's moment reaches the kernel's own start
// (the token's "echo"), queued until then, so the host is seen returning
// before the kernel runs (Note [The queue at time t], streams_model.h). While
// the host waits on floor 7 (".item()", "synchronize") a bracket joins the
// floor to the strip.
#include <algorithm>
#include <cmath>

#include "ui/app.h"

namespace descent::ui {

namespace {

constexpr float kLabelWidth = 0.19f;    // of the panel's width
constexpr float kShaftWidth = 0.08f;
constexpr float kMarginPx = 14.0f;      // right edge of each band: no text, the floor's colour only
constexpr float kRoofPx = 38.0f;
constexpr ImU32 kInk = IM_COL32(15, 15, 20, 255);       // text on a lit floor
constexpr ImU32 kPaper = IM_COL32(225, 228, 235, 255);  // text elsewhere
constexpr ImU32 kMuted = IM_COL32(150, 155, 165, 255);
constexpr float kStripMaxFraction = 0.24f;  // of the panel's height, at most, for the device strip
constexpr float kStripLaneLines = 1.5f;     // a stream's row, in text lines

float ease(float x) { return x * x * (3 - 2 * x); }  // smoothstep

// Every time says whether it is cold (a first call: Note [Cold and warm
// times] in story.h) or a warm median.
std::string timing_line(const App& app, size_t span) {
  const Timing t = timing_of(app.story, span);
  const std::string times = duration_text(t.inclusive_ns) + " inclusive, " + duration_text(t.self_ns) + " self";
  if (t.warm_samples > 0) {
    return "warm " + times + "  (median of " + std::to_string(t.warm_samples) + "; cold first call " +
           duration_text(t.cold_inclusive_ns) + ")";
  }
  return "cold " + times;
}

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

// A text in at most `max_lines` lines of at most `width` pixels: lines break
// after a space, or inside a word too wide for a line after one of ",|=/(:";
// when the text needs more lines, the last one ends at a whole word with
// "..." (the building shows the full text on hover). Never cut mid-word: a
// single word wider than the line stays whole, and the TextFit says clipped.
TextFit fit_text(const std::string& text, float width, int max_lines) {
  TextFit fit;
  fit.text = text;
  fit.given = width;
  auto w = [](const std::string& t) { return ImGui::CalcTextSize(t.c_str()).x; };
  auto trimmed = [](std::string t) {
    while (!t.empty() && t.back() == ' ') t.pop_back();
    return t;
  };
  // The pieces a line may break after.
  std::vector<std::string> pieces;
  std::string cur;
  for (char c : text) {
    cur += c;
    if (c == ' ') {
      pieces.push_back(cur);
      cur.clear();
    }
  }
  if (!cur.empty()) pieces.push_back(cur);
  std::vector<std::string> split;
  for (const std::string& p : pieces) {
    if (w(trimmed(p)) <= width) {
      split.push_back(p);
      continue;
    }
    std::string part;
    for (char c : p) {
      part += c;
      if (std::string(",|=/(:").find(c) != std::string::npos) {
        split.push_back(part);
        part.clear();
      }
    }
    if (!part.empty()) split.push_back(part);
  }
  std::vector<std::vector<std::string>> lines;
  std::string line;
  for (const std::string& p : split) {
    if (!lines.empty() && w(trimmed(line + p)) <= width) {
      lines.back().push_back(p);
      line += p;
    } else {
      lines.push_back({p});
      line = p;
    }
  }
  if (static_cast<int>(lines.size()) > max_lines) {
    lines.resize(static_cast<size_t>(std::max(max_lines, 1)));
    fit.shortened = true;
    std::vector<std::string>& last = lines.back();
    auto joined = [&] {
      std::string t;
      for (const std::string& p : last) t += p;
      return trimmed(t);
    };
    while (last.size() > 1 && w(joined() + " ...") > width) last.pop_back();
    if (w(joined() + " ...") > width) last.clear();  // not even one word: the dots alone
    while (!last.empty() && trimmed(last.back()).empty()) last.pop_back();  // "a  b": the second space
    if (!last.empty()) last.back() = trimmed(last.back()) + " ";
    last.push_back("...");
  }
  for (const std::vector<std::string>& l : lines) {
    std::string t;
    for (const std::string& p : l) t += p;
    t = trimmed(t);
    fit.width = std::max(fit.width, w(t));
    fit.shown += (fit.shown.empty() ? "" : "\n") + t;
  }
  return fit;
}

// Draws a fitted text's lines from `y` down; returns the y below them.
float draw_fit(ImDrawList* dl, const TextFit& fit, float x, float y, ImU32 col) {
  const float line_h = ImGui::GetTextLineHeight();
  size_t start = 0;
  while (start <= fit.shown.size() && !fit.shown.empty()) {
    const size_t end = std::min(fit.shown.find('\n', start), fit.shown.size());
    dl->AddText(ImVec2(x, y), col, fit.shown.c_str() + start, fit.shown.c_str() + end);
    y += line_h;
    start = end + 1;
  }
  return y;
}

void hatch(ImDrawList* dl, ImVec2 a, ImVec2 b, ImU32 col) {
  const float step = 14.0f;
  for (float x = a.x - (b.y - a.y); x < b.x; x += step) {
    ImVec2 p0(x, b.y), p1(x + (b.y - a.y), a.y);
    // Clip the diagonal to the band.
    if (p0.x < a.x) {
      p0.y -= a.x - p0.x;
      p0.x = a.x;
    }
    if (p1.x > b.x) {
      p1.y += p1.x - b.x;
      p1.x = b.x;
    }
    dl->AddLine(p0, p1, col, 1.0f);
  }
}

// The device strip: what each stream holds at the playback's moment, the
// running kernel with the token's echo beside it, and a line saying so.
void draw_device_strip(App& app, ImDrawList* dl, ImVec2 a, ImVec2 b, float x_shaft, float shaft_w, bool host_waits) {
  const float line_h = ImGui::GetTextLineHeight();
  const int64_t now = app.now_ns();
  const bool at_end = app.has_steps() && app.step() + 1 == app.story.steps.size();
  app.device_strip_rect = ImVec4(a.x, a.y, b.x, b.y);
  app.echoes.clear();
  dl->AddRectFilled(a, b, IM_COL32(24, 22, 36, 255));
  dl->AddLine(a, ImVec2(b.x, a.y), floor_color(trace::Floor::Launch), 2.0f);
  dl->AddRectFilled(a, ImVec2(a.x + 8, b.y), floor_color(trace::Floor::Device, 0.6f));

  size_t running = 0, queued = 0, done = 0, ahead = 0, total = 0;
  int64_t next_start = kNever;
  std::string next_name;
  const float row_h = line_h * kStripLaneLines;
  const float box_w = 60.0f;  // at least; a box fits its text
  for (size_t l = 0; l < app.streams.lanes.size(); ++l) {
    const StreamLane& lane = app.streams.lanes[l];
    const LaneAt at = lane_at(lane, now);
    const float y = a.y + line_h * 1.4f + row_h * static_cast<float>(l);
    if (y + row_h > b.y + 1) break;
    dl->AddText(ImVec2(a.x + 16, y + (row_h - line_h) * 0.5f), kPaper, lane.label.c_str());
    dl->AddRectFilled(ImVec2(x_shaft, y), ImVec2(x_shaft + shaft_w, y + row_h - 2), IM_COL32(20, 21, 26, 255));
    // The running kernel first, then the queue behind it, then what is done.
    float x = x_shaft + shaft_w + 10;
    auto box = [&](const DeviceWork& w, ImU32 fill, ImU32 ink, const char* prefix) {
      const std::string text = prefix + w.name;
      const float width = std::max(box_w, ImGui::CalcTextSize(text.c_str()).x + 10);
      const ImVec2 p0(x, y + 2), p1(std::min(x + width, b.x - kMarginPx), y + row_h - 4);
      if (p1.x - p0.x < 12) return;
      dl->AddRectFilled(p0, p1, fill, 3.0f);
      dl->PushClipRect(p0, p1, true);
      dl->AddText(ImVec2(p0.x + 4, p0.y + (p1.y - p0.y - line_h) * 0.5f), ink, text.c_str());
      dl->PopClipRect();
      x = p1.x + 6;
    };
    if (at.running != SIZE_MAX) {
      const DeviceWork& w = lane.work[at.running];
      box(w, floor_color(trace::Floor::Device), kInk, "running ");
      app.echoes.push_back(w.name);
      // The token's echo: the call's kernel, down here on the device's clock.
      const ImVec2 c(x_shaft + shaft_w * 0.5f, y + row_h * 0.5f - 1);
      const float r = std::min(shaft_w, row_h) * 0.32f;
      dl->AddCircleFilled(c, r, IM_COL32(250, 250, 250, 110), 24);
      dl->AddCircle(c, r, floor_color(trace::Floor::Device), 24, 3.0f);
    }
    for (size_t k : at.queued) box(lane.work[k], floor_color(trace::Floor::Device, 0.22f), kPaper, "queued ");
    if (!at.done.empty() && x < b.x - kMarginPx - 40) {
      const std::string d = "done: " + std::to_string(at.done.size());
      dl->AddText(ImVec2(x, y + (row_h - line_h) * 0.5f), kMuted, d.c_str());
    }
    running += at.running != SIZE_MAX;
    queued += at.queued.size();
    done += at.done.size();
    ahead += at.ahead;
    total += lane.work.size();
    for (const DeviceWork& w : lane.work) {
      if (w.start_ns > now && w.start_ns != kNever && w.start_ns < next_start) {
        next_start = w.start_ns;
        next_name = w.name;
      }
    }
  }
  std::string s;
  if (running) s = std::to_string(running) + " running";
  if (queued) s += (s.empty() ? "" : ", ") + std::to_string(queued) + " queued, not started yet";
  if (s.empty()) s = done == total ? "idle, all its work done" : ahead == total ? "idle, nothing launched yet" : "idle";
  if (host_waits) s += "; the host waits for it on floor 7";
  else if (at_end && next_start != kNever) {
    s += "; the host has returned, and " + next_name + " starts " + duration_text(next_start - now) + " later";
  } else if (running + queued > 0 && app.has_steps()) {
    s += "; the host has moved on";
  }
  app.device_strip_text = s;
  const std::string title = "the device, on its own clock: " + s;
  dl->PushClipRect(a, ImVec2(b.x - kMarginPx, b.y), true);
  dl->AddText(ImVec2(a.x + 16, a.y + 3), kPaper, title.c_str());
  dl->PopClipRect();
}

}  // namespace

void draw_building(App& app, ImVec2 pos, ImVec2 size) {
  ImGui::SetNextWindowPos(pos);
  ImGui::SetNextWindowSize(size);
  const ImGuiWindowFlags flags = ImGuiWindowFlags_NoMove | ImGuiWindowFlags_NoResize | ImGuiWindowFlags_NoCollapse |
                                 ImGuiWindowFlags_NoSavedSettings | ImGuiWindowFlags_NoScrollbar |
                                 ImGuiWindowFlags_NoBringToFrontOnFocus;
  if (!ImGui::Begin("The building: one call, floor by floor##building", nullptr, flags)) {
    ImGui::End();
    return;
  }
  app.panels_drawn.push_back("building");
  ImDrawList* dl = ImGui::GetWindowDrawList();
  const ImVec2 o = ImGui::GetCursorScreenPos();
  const ImVec2 avail = ImGui::GetContentRegionAvail();
  const float line_h = ImGui::GetTextLineHeight();
  const float roof = std::max(kRoofPx, line_h * 1.6f);
  const bool strip = !app.streams.empty();  // a call on a device: the basement
  const float strip_h =
      strip ? std::min(avail.y * kStripMaxFraction,
                       line_h * (1.6f + kStripLaneLines * static_cast<float>(app.streams.lanes.size())))
            : 0.0f;
  const float band_h = (avail.y - roof - strip_h) / kBuildingFloors;
  // The label column fits the longest floor name in the current font.
  float label_w = avail.x * kLabelWidth;
  for (int f = 1; f <= kBuildingFloors; ++f) {
    label_w = std::max(label_w, ImGui::CalcTextSize(floor_title(f)).x + ImGui::CalcTextSize("8  ").x + 28);
  }
  const float shaft_w = avail.x * kShaftWidth;
  const float x_shaft = o.x + label_w, x_text = x_shaft + shaft_w + 10, x_end = o.x + avail.x;

  // The roof: the line of Python being told, and its result once back up.
  const Story& s = app.story;
  const bool at_end = app.has_steps() && app.step() + 1 == s.steps.size();
  dl->AddTriangleFilled(ImVec2(o.x, o.y + roof), ImVec2(o.x + avail.x * 0.5f, o.y), ImVec2(x_end, o.y + roof),
                        IM_COL32(45, 50, 62, 255));
  std::string roof_text = app.has_steps() ? app.trace().spans[s.roots[root_of_step(s, app.step())]].name
                                          : std::string("(no call)");
  if (at_end && !app.loaded.output.empty()) {
    roof_text += "   ->   " + app.loaded.output.substr(0, app.loaded.output.find('\n'));
  }
  const ImVec2 ts = ImGui::CalcTextSize(roof_text.c_str());
  dl->AddText(ImVec2(o.x + (avail.x - ts.x) * 0.5f, o.y + roof - line_h - 4), kPaper, roof_text.c_str());

  std::array<FloorView, kBuildingFloors + 1> views;
  if (app.has_steps()) views = floors_at(s, app.step());
  else
    for (int f = 1; f <= kBuildingFloors; ++f) views[f].skip_reason = "no call: nothing was traced";

  for (int f = 1; f <= kBuildingFloors; ++f) {
    const FloorView& v = views[f];
    const trace::Floor floor = static_cast<trace::Floor>(f);
    const ImVec2 a(o.x, o.y + roof + (f - 1) * band_h), b(x_end, a.y + band_h - 2);
    app.floor_rects[f] = ImVec4(a.x, a.y, b.x, b.y);
    const bool lit = v.state == FloorState::Active;
    ImU32 bg = IM_COL32(34, 36, 42, 255);
    if (v.state == FloorState::Active) bg = floor_color(floor);
    if (v.state == FloorState::Visited) bg = floor_color(floor, 0.30f);
    if (v.state == FloorState::Ahead) bg = floor_color(floor, 0.12f);
    dl->AddRectFilled(a, b, bg);
    if (v.state == FloorState::Skipped) hatch(dl, ImVec2(x_shaft + shaft_w, a.y), b, IM_COL32(60, 62, 70, 255));
    if (v.state == FloorState::Ahead) dl->AddRect(a, b, floor_color(floor, 0.7f));
    // The floor's own colour, always, on its label and its right edge.
    dl->AddRectFilled(a, ImVec2(a.x + 8, b.y), floor_color(floor));
    dl->AddRectFilled(ImVec2(b.x - kMarginPx, a.y), b, floor_color(floor, lit ? 1.0f : 0.55f));
    // Label: number and name.
    const ImU32 ink = lit ? kInk : kPaper;
    char label[48];
    std::snprintf(label, sizeof label, "%d  %s", f, floor_title(f));
    dl->AddText(ImVec2(a.x + 16, a.y + (band_h - line_h) * 0.5f - 2), ink, label);
    // The shaft.
    dl->AddRectFilled(ImVec2(x_shaft, a.y), ImVec2(x_shaft + shaft_w, b.y), IM_COL32(20, 21, 26, 255));
    // What the floor did, in the lines the band has: each text fitted at
    // word boundaries (fit_text), and whatever was shortened shows whole on hover.
    const float text_w = b.x - kMarginPx - x_text;
    const int lines = std::max(1, static_cast<int>((b.y - a.y - 2) / line_h));
    float y = a.y + std::min(4.0f, (b.y - a.y - lines * line_h) * 0.5f);
    dl->PushClipRect(ImVec2(x_text, a.y), ImVec2(b.x - kMarginPx, b.y), true);
    std::string full;  // the tooltip's text, when something was shortened
    bool shortened = false;
    if (v.span != SIZE_MAX) {
      const trace::Span& sp = app.trace().spans[v.span];
      std::string head = sp.name;
      if (v.state == FloorState::Ahead) head = "next: " + head;
      if (v.state == FloorState::Visited) head = "done: " + head;
      // Floors 7 and 8 say what they decided in words (stream, queue, grid, the wait).
      std::string d = device_decision(app.trace(), app.streams, v.span);
      if (d.empty()) d = decisions_line(sp);
      std::string timing = timing_line(app, v.span);
      // A lesson's question waits for its answer: what lies ahead (a span's
      // name, its decisions) is not given away (Note [Lessons in the app]).
      if (v.state == FloorState::Ahead && app.right_tab == RightTab::Lesson && app.lesson.asking()) {
        head = "next: ?";
        timing.clear();
        d = "(answer the Lesson tab's question first)";
      }
      // The decision first: a band of one line shows it alone (the name and
      // the times are a hover away), of two the name (with the times if they
      // fit) above it, of three or more the name, the times, then the decision.
      const int d_lines = d.empty() ? 0 : lines >= 3 ? lines - 2 : 1;
      const int head_lines = lines - d_lines;
      shortened = head_lines == 0;
      if (head_lines == 1) {
        TextFit h = fit_text(head + "   " + timing, text_w, 1);
        shortened = h.shortened;
        if (h.shortened) h = fit_text(head, text_w, 1);  // no room for the times beside it
        y = draw_fit(dl, h, x_text, y, ink);
      } else if (head_lines >= 2) {
        const TextFit h = fit_text(head, text_w, 1), t = fit_text(timing, text_w, 1);
        y = draw_fit(dl, h, x_text, y, ink);
        y = draw_fit(dl, t, x_text, y, lit ? kInk : kMuted);
        shortened = h.shortened || t.shortened;
      }
      app.floor_texts[f] = d;
      TextFit df = fit_text(d, text_w, d_lines);
      if (!d.empty()) y = draw_fit(dl, df, x_text, y, lit ? kInk : kMuted);
      shortened = shortened || df.shortened;
      app.floor_fits[f] = std::move(df);
      if (v.spans_in_call > 1 && y + line_h <= b.y) {
        const std::string n = std::to_string(v.spans_in_call) + " spans on this floor in this call";
        dl->AddText(ImVec2(x_text, y), lit ? kInk : kMuted, n.c_str());
      }
      full = head + "\n" + timing + (d.empty() ? "" : "\n" + d);
    } else {
      app.floor_texts[f].clear();
      full = "skipped: " + v.skip_reason;
      app.floor_fits[f] = fit_text(full, text_w, lines);
      draw_fit(dl, app.floor_fits[f], x_text, y, kMuted);
      shortened = app.floor_fits[f].shortened;
    }
    dl->PopClipRect();
    if (shortened && ImGui::IsWindowHovered() && ImGui::IsMouseHoveringRect(ImVec2(x_text, a.y), b)) {
      ImGui::BeginTooltip();
      ImGui::PushTextWrapPos(ImGui::GetFontSize() * 30);
      ImGui::TextUnformatted(full.c_str());
      ImGui::PopTextWrapPos();
      ImGui::EndTooltip();
    }
  }

  // The basement: the device's streams at the playback's moment, and while
  // the host waits on floor 7, a bracket from that floor down to it.
  app.device_strip_rect = ImVec4(0, 0, 0, 0);
  app.device_strip_text.clear();
  app.echoes.clear();
  if (strip) {
    const float y0 = o.y + roof + kBuildingFloors * band_h;
    const FloorView& f7 = views[7];
    const bool waits = f7.state == FloorState::Active && f7.span != SIZE_MAX && is_sync_span(app.trace().spans[f7.span]);
    draw_device_strip(app, dl, ImVec2(o.x, y0), ImVec2(x_end, y0 + strip_h - 2), x_shaft, shaft_w, waits);
    if (waits) {
      const float xb = x_end - kMarginPx - 10;
      const float top = o.y + roof + 6.5f * band_h;
      dl->AddLine(ImVec2(xb, top), ImVec2(xb, y0 + line_h * 1.2f), floor_color(trace::Floor::Streams), 3.0f);
      dl->AddLine(ImVec2(xb - 14, top), ImVec2(xb, top), floor_color(trace::Floor::Streams), 3.0f);
      dl->AddTriangleFilled(ImVec2(xb - 6, y0 + line_h * 1.2f - 10), ImVec2(xb + 6, y0 + line_h * 1.2f - 10),
                            ImVec2(xb, y0 + line_h * 1.2f), floor_color(trace::Floor::Streams));
    }
  }

  // The token, between the floor of this step and the next one's.
  if (app.has_steps()) {
    const size_t k = app.step();
    const int f0 = token_floor(s, k);
    const int f1 = k + 1 < s.steps.size() ? token_floor(s, k + 1) : f0;
    const float t = ease(static_cast<float>(app.play.fraction()));
    auto centre = [&](int f) { return o.y + roof + (static_cast<float>(std::max(f, 1)) - 0.5f) * band_h; };
    const float y = centre(f0) + (centre(f1) - centre(f0)) * t;
    const float r = std::min(shaft_w, band_h) * 0.36f;
    const ImVec2 c(x_shaft + shaft_w * 0.5f, y);
    dl->AddCircleFilled(c, r, IM_COL32(250, 250, 250, 255), 32);
    dl->AddCircle(c, r, floor_color(static_cast<trace::Floor>(std::max(f0, 1))), 32, 4.0f);
    const bool down = s.steps[k].down;
    const float h = r * 0.45f;  // an arrow: which way the call is going
    if (down) dl->AddTriangleFilled(ImVec2(c.x - h, c.y - h * 0.6f), ImVec2(c.x + h, c.y - h * 0.6f),
                                    ImVec2(c.x, c.y + h), kInk);
    else dl->AddTriangleFilled(ImVec2(c.x - h, c.y + h * 0.6f), ImVec2(c.x + h, c.y + h * 0.6f),
                               ImVec2(c.x, c.y - h), kInk);
  }
  ImGui::End();
}

}  // namespace descent::ui
