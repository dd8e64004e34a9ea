// The building laid out without drawing (building_layout.cpp): the panel
// draws it, the state dump reports it.
#pragma once

#include <imgui.h>

#include <array>
#include <string>
#include <vector>

#include "tracer/trace.h"
#include "ui/story.h"
#include "ui/text_fit.h"

namespace descent::ui {

// The building as laid out at a step: where each floor's band, label and
// text go, what the device strip shows and where, and where the token is.
// Computed from the App (its story, playback, streams) and the font's
// measures, without drawing: the building panel draws it, and the state
// dump reports it (the rectangles, the decision lines as fitted, the strip).

// A text fitted to its space (at word boundaries) and where its first line goes.
struct PlacedText {
  enum Ink { Main, Quiet, Muted };  // the floor's ink; the same on a lit floor, grey elsewhere; always grey
  TextFit fit;
  ImVec2 at;
  Ink ink = Main;
};

struct FloorLayout {
  FloorView view;     // the floor at the step (story.h)
  ImVec4 rect{};      // the band: x0, y0, x1, y1 in pixels
  std::string label;  // "3  dispatch", at label_at
  ImVec2 label_at;
  ImVec4 text_rect{};             // the space for its text, right of the shaft (clipped to it)
  std::vector<PlacedText> texts;  // the name and times, the decision, the count; or the skip reason
  std::string decision;           // the decision line ("" for a skipped floor)
  TextFit decision_fit;           // the decision line (or the skip reason) as fitted
  std::string full;               // everything it would say, shown on hover when `shortened`
  bool shortened = false;
};

// A stream of the device strip: its label, its shaft, its work as boxes.
struct StripLane {
  struct Box {
    std::string text;  // "running add_float32", "queued fill_float32"
    ImVec2 p0, p1, text_at;
    bool running = false;
  };
  std::string label;
  ImVec2 label_at;
  ImVec4 shaft{};          // the lane's piece of the shaft
  std::vector<Box> boxes;  // the running work first, then its queue
  bool echo = false;       // the token's echo: the running kernel, on the device's clock
  ImVec2 echo_centre;
  float echo_radius = 0;
  std::string done;  // "done: 3" ("" when nothing is done or there is no room)
  ImVec2 done_at;
};

// The basement under floor 8 (a call on a device): the streams at the
// playback's moment and a line saying what the device is doing.
struct DeviceStripLayout {
  bool shown = false;
  ImVec4 rect{};  // zero when not shown
  std::vector<StripLane> lanes;
  std::string text;   // "2 queued, not started yet; the host has moved on"
  std::string title;  // "the device, on its own clock: " + text
  TextFit title_fit;  // the title in the strip's one line
  ImVec2 title_at;
  std::vector<std::string> echoes;  // the kernels shown running
  // While the host waits on the streams floor (.item(), synchronize): a
  // bracket from that floor's middle down to the strip.
  bool host_waits = false;
  float bracket_x = 0, bracket_top = 0, bracket_bottom = 0;
};

struct TokenLayout {
  bool shown = false;  // (no steps: no token)
  ImVec2 centre;       // between this step's floor and the next one's, as far as the playback has moved
  float radius = 0;
  trace::Floor floor = trace::Floor::Python;  // its ring's colour: the floor of the step
  bool down = true;                           // which way the call is going (the arrow)
};

struct BuildingLayout {
  static constexpr float kMarginPx = 14.0f;  // right edge of each band: no text, the floor's colour only
  ImVec2 origin, size;                       // the panel's content
  float line_h = 0, roof = 0, band_h = 0;
  float x_shaft = 0, shaft_w = 0, x_text = 0, x_end = 0;
  std::string roof_text;  // the line of Python being told, and its result once back up
  TextFit roof_fit;       // as fitted to the roof's width
  ImVec2 roof_text_at;
  std::array<FloorLayout, kBuildingFloors + 1> floors;  // 1..8
  DeviceStripLayout strip;
  TokenLayout token;
  // The middle of floor f's band, where the token rides.
  float floor_middle(int f) const { return origin.y + roof + (static_cast<float>(f) - 0.5f) * band_h; }
};

// Lays the building out in the rectangle at `origin` of `size` pixels, in the current font.
struct App;
BuildingLayout layout_building(const App& app, ImVec2 origin, ImVec2 size);

}  // namespace descent::ui
