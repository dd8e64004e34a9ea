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
//
// Where everything goes is computed first, without drawing (layout_building,
// building_layout.cpp); this file draws that layout, which the state dump
// reports as drawn.
#include <algorithm>

#include "ui/app.h"

namespace descent::ui {

namespace {

constexpr ImU32 kInk = IM_COL32(15, 15, 20, 255);       // text on a lit floor
constexpr ImU32 kPaper = IM_COL32(225, 228, 235, 255);  // text elsewhere
constexpr ImU32 kMuted = IM_COL32(150, 155, 165, 255);
constexpr ImU32 kShaft = IM_COL32(20, 21, 26, 255);
constexpr float kMarginPx = BuildingLayout::kMarginPx;

// Draws a fitted text's lines from `at` down.
void draw_fit(ImDrawList* dl, const TextFit& fit, ImVec2 at, ImU32 col) {
  const float line_h = ImGui::GetTextLineHeight();
  float y = at.y;
  size_t start = 0;
  while (start <= fit.shown.size() && !fit.shown.empty()) {
    const size_t end = std::min(fit.shown.find('\n', start), fit.shown.size());
    dl->AddText(ImVec2(at.x, y), col, fit.shown.c_str() + start, fit.shown.c_str() + end);
    y += line_h;
    start = end + 1;
  }
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

void draw_roof(ImDrawList* dl, const BuildingLayout& L) {
  const ImVec2 o = L.origin;
  dl->AddTriangleFilled(ImVec2(o.x, o.y + L.roof), ImVec2(o.x + L.size.x * 0.5f, o.y), ImVec2(L.x_end, o.y + L.roof),
                        IM_COL32(45, 50, 62, 255));
  dl->AddText(L.roof_text_at, kPaper, L.roof_fit.shown.c_str());
  if (L.roof_fit.shortened && ImGui::IsWindowHovered() &&
      ImGui::IsMouseHoveringRect(ImVec2(o.x, o.y), ImVec2(L.x_end, o.y + L.roof)))
    ImGui::SetTooltip("%s", L.roof_text.c_str());
}

// Every text of the building as laid out, for the state dump's clipping report (App::texts_drawn).
void record_texts(App& app, const BuildingLayout& L) {
  auto whole = [](const std::string& text, float given) {
    TextFit f;
    f.text = f.shown = text;
    f.width = ImGui::CalcTextSize(text.c_str()).x;
    f.given = given;
    return f;
  };
  record_text(app, "building", L.roof_fit);
  for (int f = 1; f <= kBuildingFloors; ++f) {
    const FloorLayout& fl = L.floors[f];
    record_text(app, "building", whole(fl.label, L.x_shaft - fl.label_at.x));
    for (const PlacedText& t : fl.texts) record_text(app, "building", t.fit);
  }
  if (!L.strip.shown) return;
  record_text(app, "building", L.strip.title_fit);
  for (const StripLane& lane : L.strip.lanes) {
    record_text(app, "building", whole(lane.label, L.x_shaft - lane.label_at.x));
    for (const StripLane::Box& box : lane.boxes)
      record_text(app, "building", whole(box.text, box.p1.x - box.text_at.x));
    if (!lane.done.empty()) record_text(app, "building", whole(lane.done, L.x_end - kMarginPx - lane.done_at.x));
  }
}

// One floor's band in the colour of its state, its label, its piece of the
// shaft and its text; the whole text on hover where it was shortened.
void draw_floor(ImDrawList* dl, const BuildingLayout& L, int f) {
  const FloorLayout& fl = L.floors[f];
  const trace::Floor floor = static_cast<trace::Floor>(f);
  const ImVec2 a(fl.rect.x, fl.rect.y), b(fl.rect.z, fl.rect.w);
  const FloorState state = fl.view.state;
  const bool lit = state == FloorState::Active;
  ImU32 bg = IM_COL32(34, 36, 42, 255);
  if (state == FloorState::Active) bg = floor_color(floor);
  if (state == FloorState::Visited) bg = floor_color(floor, 0.30f);
  if (state == FloorState::Ahead) bg = floor_color(floor, 0.12f);
  dl->AddRectFilled(a, b, bg);
  if (state == FloorState::Skipped) hatch(dl, ImVec2(L.x_shaft + L.shaft_w, a.y), b, IM_COL32(60, 62, 70, 255));
  if (state == FloorState::Ahead) dl->AddRect(a, b, floor_color(floor, 0.7f));
  // The floor's own colour, always, on its label and its right edge.
  dl->AddRectFilled(a, ImVec2(a.x + 8, b.y), floor_color(floor));
  dl->AddRectFilled(ImVec2(b.x - kMarginPx, a.y), b, floor_color(floor, lit ? 1.0f : 0.55f));
  const ImU32 ink = lit ? kInk : kPaper;
  dl->AddText(fl.label_at, ink, fl.label.c_str());
  dl->AddRectFilled(ImVec2(L.x_shaft, a.y), ImVec2(L.x_shaft + L.shaft_w, b.y), kShaft);
  dl->PushClipRect(ImVec2(fl.text_rect.x, fl.text_rect.y), ImVec2(fl.text_rect.z, fl.text_rect.w), true);
  for (const PlacedText& t : fl.texts) {
    const ImU32 col = t.ink == PlacedText::Main ? ink : t.ink == PlacedText::Quiet && lit ? kInk : kMuted;
    draw_fit(dl, t.fit, t.at, col);
  }
  dl->PopClipRect();
  if (fl.shortened && ImGui::IsWindowHovered() && ImGui::IsMouseHoveringRect(ImVec2(L.x_text, a.y), b)) {
    ImGui::BeginTooltip();
    ImGui::PushTextWrapPos(ImGui::GetFontSize() * 30);
    ImGui::TextUnformatted(fl.full.c_str());
    ImGui::PopTextWrapPos();
    ImGui::EndTooltip();
  }
}

// The device strip: what each stream holds at the playback's moment, the
// running kernel with the token's echo beside it, and a line saying so;
// while the host waits on floor 7, a bracket from that floor down to it.
void draw_device_strip(ImDrawList* dl, const BuildingLayout& L) {
  const DeviceStripLayout& st = L.strip;
  const ImVec2 a(st.rect.x, st.rect.y), b(st.rect.z, st.rect.w);
  dl->AddRectFilled(a, b, IM_COL32(24, 22, 36, 255));
  dl->AddLine(a, ImVec2(b.x, a.y), floor_color(trace::Floor::Launch), 2.0f);
  dl->AddRectFilled(a, ImVec2(a.x + 8, b.y), floor_color(trace::Floor::Device, 0.6f));
  for (const StripLane& lane : st.lanes) {
    dl->AddText(lane.label_at, kPaper, lane.label.c_str());
    dl->AddRectFilled(ImVec2(lane.shaft.x, lane.shaft.y), ImVec2(lane.shaft.z, lane.shaft.w), kShaft);
    // The running kernel with the token's echo (the call's kernel, down here
    // on the device's clock), then the queue behind it.
    for (const bool running : {true, false}) {
      for (const StripLane::Box& box : lane.boxes) {
        if (box.running != running) continue;
        dl->AddRectFilled(box.p0, box.p1, floor_color(trace::Floor::Device, running ? 1.0f : 0.22f), 3.0f);
        dl->PushClipRect(box.p0, box.p1, true);
        dl->AddText(box.text_at, running ? kInk : kPaper, box.text.c_str());
        dl->PopClipRect();
      }
      if (running && lane.echo) {
        dl->AddCircleFilled(lane.echo_centre, lane.echo_radius, IM_COL32(250, 250, 250, 110), 24);
        dl->AddCircle(lane.echo_centre, lane.echo_radius, floor_color(trace::Floor::Device), 24, 3.0f);
      }
    }
    if (!lane.done.empty()) dl->AddText(lane.done_at, kMuted, lane.done.c_str());
  }
  dl->PushClipRect(a, ImVec2(b.x - kMarginPx, b.y), true);
  dl->AddText(st.title_at, kPaper, st.title_fit.shown.c_str());
  dl->PopClipRect();
  if (st.title_fit.shortened && ImGui::IsWindowHovered() &&
      ImGui::IsMouseHoveringRect(st.title_at, ImVec2(b.x, st.title_at.y + ImGui::GetTextLineHeight()))) {
    ImGui::SetTooltip("%s", st.title.c_str());
  }
  if (st.host_waits) {
    const ImU32 col = floor_color(trace::Floor::Streams);
    const float xb = st.bracket_x, top = st.bracket_top, bottom = st.bracket_bottom;
    dl->AddLine(ImVec2(xb, top), ImVec2(xb, bottom), col, 3.0f);
    dl->AddLine(ImVec2(xb - 14, top), ImVec2(xb, top), col, 3.0f);
    dl->AddTriangleFilled(ImVec2(xb - 6, bottom - 10), ImVec2(xb + 6, bottom - 10), ImVec2(xb, bottom), col);
  }
}

// The token: a white disc ringed in its floor's colour, with an arrow for the way the call goes.
void draw_token(ImDrawList* dl, const TokenLayout& t) {
  const ImVec2 c = t.centre;
  const float r = t.radius;
  dl->AddCircleFilled(c, r, IM_COL32(250, 250, 250, 255), 32);
  dl->AddCircle(c, r, floor_color(t.floor), 32, 4.0f);
  const float h = r * 0.45f;
  if (t.down)
    dl->AddTriangleFilled(ImVec2(c.x - h, c.y - h * 0.6f), ImVec2(c.x + h, c.y - h * 0.6f), ImVec2(c.x, c.y + h), kInk);
  else
    dl->AddTriangleFilled(ImVec2(c.x - h, c.y + h * 0.6f), ImVec2(c.x + h, c.y + h * 0.6f), ImVec2(c.x, c.y - h), kInk);
}

}  // namespace

void draw_building(App& app, ImVec2 pos, ImVec2 size) {
  ImGui::SetNextWindowPos(pos);
  ImGui::SetNextWindowSize(size);
  if (!ImGui::Begin("The building: one call, floor by floor##building", nullptr,
                    kPanelFlags | ImGuiWindowFlags_NoScrollbar)) {
    ImGui::End();
    return;
  }
  app.panels_drawn.push_back("building");
  app.building = layout_building(app, ImGui::GetCursorScreenPos(), ImGui::GetContentRegionAvail());
  const BuildingLayout& L = app.building;
  record_texts(app, L);
  ImDrawList* dl = ImGui::GetWindowDrawList();
  draw_roof(dl, L);
  for (int f = 1; f <= kBuildingFloors; ++f) draw_floor(dl, L, f);
  if (L.strip.shown) draw_device_strip(dl, L);
  if (L.token.shown) draw_token(dl, L.token);
  ImGui::End();
}

}  // namespace descent::ui
