// Colours, names and texts the panels share.
#include <cinttypes>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <sstream>

#include "ui/theme.h"

namespace descent::ui {

namespace {

// One hue per floor, top to bottom, saturated enough to tell apart on a
// projector; the device row (9) shares the launch floor's hue.
const ImVec4 kFloorColors[] = {
    {0.45f, 0.45f, 0.45f, 1.0f},  // none
    {0.25f, 0.55f, 0.95f, 1.0f},  // 1 Python: blue
    {0.20f, 0.75f, 0.80f, 1.0f},  // 2 binding: cyan
    {0.35f, 0.80f, 0.35f, 1.0f},  // 3 dispatch: green
    {0.80f, 0.75f, 0.20f, 1.0f},  // 4 autograd: yellow
    {0.95f, 0.55f, 0.15f, 1.0f},  // 5 kernels: orange
    {0.90f, 0.30f, 0.35f, 1.0f},  // 6 allocator: red
    {0.80f, 0.35f, 0.80f, 1.0f},  // 7 streams: magenta
    {0.55f, 0.45f, 0.95f, 1.0f},  // 8 launch: violet
    {0.55f, 0.45f, 0.95f, 1.0f},  // 9 device: as launch
};

}  // namespace

ImVec4 floor_color_vec(trace::Floor floor) {
  const int i = static_cast<int>(floor);
  return kFloorColors[i >= 0 && i < trace::kNumFloors ? i : 0];
}

ImU32 floor_color(trace::Floor floor, float alpha) {
  ImVec4 c = floor_color_vec(floor);
  c.w = alpha;
  return ImGui::ColorConvertFloat4ToU32(c);
}

const char* floor_title(int floor) {
  static constexpr const char* kTitles[] = {"",        "Python",    "binding",       "dispatch",   "autograd",
                                            "kernels", "allocator", "stream queues", "GPU launch", "device"};
  return floor >= 0 && floor <= 9 ? kTitles[floor] : "?";
}

std::string duration_text(int64_t ns) { return trace::format_duration(ns); }

std::string arg_text(const trace::ArgValue& v) {
  if (const auto* i = std::get_if<int64_t>(&v)) return std::to_string(*i);
  if (const auto* d = std::get_if<double>(&v)) {
    char buf[32];
    std::snprintf(buf, sizeof buf, "%g", *d);
    return buf;
  }
  if (const auto* b = std::get_if<bool>(&v)) return *b ? "true" : "false";
  return std::get<std::string>(v);
}

std::string assets_dir() {
  const char* env = std::getenv("DESCENT_ASSETS");
  return env && *env ? env : DESCENT_ASSETS_DIR;
}

const std::string& floor_explanation(int floor) {
  static std::string texts[10];
  static bool loaded[10] = {};
  if (floor < 1 || floor > 9) floor = 0;
  if (!loaded[floor]) {
    loaded[floor] = true;
    const std::string path = assets_dir() + "/floors/" + std::to_string(floor) + ".txt";
    std::ifstream in(path);
    std::stringstream ss;
    if (in && (ss << in.rdbuf())) {
      texts[floor] = ss.str();
    } else {
      texts[floor] = "(The explanation of this floor is missing: " + path +
                     " could not be read. Set DESCENT_ASSETS to the project's assets/ folder.)";
    }
  }
  return texts[floor];
}

}  // namespace descent::ui
