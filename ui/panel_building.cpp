// The building: the eight floors as a cross-section, and the call's token
// riding the shaft down and back up.
//
// Each floor is a band: its number and name on the left, the shaft in which
// the token moves, and what the floor did for the call on the right (the
// span's name, its time, its decisions). A floor the call is on is lit in its
// full colour; one it has left is dim; one it will reach is outlined; one it
// never reaches is grey and hatched, with the reason. See Note [A call as
// steps] (story.h) for what a step is.
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

float ease(float x) { return x * x * (3 - 2 * x); }  // smoothstep

std::string timing_line(const App& app, size_t span) {
  const Timing t = timing_of(app.story, span);
  std::string s = duration_text(t.inclusive_ns) + " inclusive, " + duration_text(t.self_ns) + " self";
  if (t.warm_samples > 0) {
    s += "  (warm median of " + std::to_string(t.warm_samples) + "; first call " +
         duration_text(t.cold_inclusive_ns) + ")";
  } else if (app.story.lines.size() < app.story.roots.size()) {
    s += "  (a single call)";
  }
  return s;
}

std::string decisions_line(const trace::Span& sp) {
  std::string s;
  for (const trace::SpanArg& a : sp.args) {
    if (!s.empty()) s += "  ";
    s += a.key + "=" + arg_text(a.value);
  }
  return s;
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
  const float band_h = (avail.y - roof) / kBuildingFloors;
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
    const ImVec2 a(o.x, o.y + roof + (f - 1) * band_h), b(x_end, a.y + band_h - 2);
    app.floor_rects[f] = ImVec4(a.x, a.y, b.x, b.y);
    const bool lit = v.state == FloorState::Active;
    ImU32 bg = IM_COL32(34, 36, 42, 255);
    if (v.state == FloorState::Active) bg = floor_color(f);
    if (v.state == FloorState::Visited) bg = floor_color(f, 0.30f);
    if (v.state == FloorState::Ahead) bg = floor_color(f, 0.12f);
    dl->AddRectFilled(a, b, bg);
    if (v.state == FloorState::Skipped) hatch(dl, ImVec2(x_shaft + shaft_w, a.y), b, IM_COL32(60, 62, 70, 255));
    if (v.state == FloorState::Ahead) dl->AddRect(a, b, floor_color(f, 0.7f));
    // The floor's own colour, always, on its label and its right edge.
    dl->AddRectFilled(a, ImVec2(a.x + 8, b.y), floor_color(f));
    dl->AddRectFilled(ImVec2(b.x - kMarginPx, a.y), b, floor_color(f, lit ? 1.0f : 0.55f));
    // Label: number and name.
    const ImU32 ink = lit ? kInk : kPaper;
    char label[48];
    std::snprintf(label, sizeof label, "%d  %s", f, floor_title(f));
    dl->AddText(ImVec2(a.x + 16, a.y + (band_h - line_h) * 0.5f - 2), ink, label);
    // The shaft.
    dl->AddRectFilled(ImVec2(x_shaft, a.y), ImVec2(x_shaft + shaft_w, b.y), IM_COL32(20, 21, 26, 255));
    // What the floor did.
    dl->PushClipRect(ImVec2(x_text, a.y), ImVec2(b.x - kMarginPx, b.y), true);
    float y = a.y + 4;
    if (v.span != SIZE_MAX) {
      const trace::Span& sp = app.trace().spans[v.span];
      std::string head = sp.name;
      if (v.state == FloorState::Ahead) head = "next: " + head;
      if (v.state == FloorState::Visited) head = "done: " + head;
      dl->AddText(ImVec2(x_text, y), ink, head.c_str());
      y += line_h;
      if (y + line_h <= b.y) {
        dl->AddText(ImVec2(x_text, y), lit ? kInk : kMuted, timing_line(app, v.span).c_str());
        y += line_h;
      }
      const std::string d = decisions_line(sp);
      if (!d.empty() && y + line_h <= b.y) {
        dl->AddText(ImVec2(x_text, y), lit ? kInk : kMuted, d.c_str());
        y += line_h;
      }
      if (v.spans_in_call > 1 && y + line_h <= b.y) {
        const std::string n = std::to_string(v.spans_in_call) + " spans on this floor in this call";
        dl->AddText(ImVec2(x_text, y), lit ? kInk : kMuted, n.c_str());
      }
    } else {
      const std::string why = "skipped: " + v.skip_reason;
      dl->AddText(nullptr, 0.0f, ImVec2(x_text, y), kMuted, why.c_str(), nullptr, b.x - kMarginPx - x_text);
    }
    dl->PopClipRect();
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
    dl->AddCircle(c, r, floor_color(std::max(f0, 1)), 32, 4.0f);
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
