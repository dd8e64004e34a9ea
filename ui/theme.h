// Colours and texts every panel shares (theme.cpp).
#pragma once

#include <imgui.h>

#include <cstdint>
#include <string>

#include "tracer/trace.h"

namespace descent::ui {

// Each floor's colour (the device's own row shares the launch floor's hue; None is grey).
ImU32 floor_color(trace::Floor floor, float alpha = 1.0f);
ImVec4 floor_color_vec(trace::Floor floor);
const char* floor_title(int floor);  // "Python", "binding", ... as the building labels them
// 850 ns, 12.3 us: trace::format_duration.
std::string duration_text(int64_t ns);
// An argument's value as text.
std::string arg_text(const trace::ArgValue& v);
// The explanation of a floor from assets/floors/<n>.txt (a clear message when missing).
const std::string& floor_explanation(int floor);
// The directory of the app's assets (DESCENT_ASSETS, else the source tree's assets/).
std::string assets_dir();

}  // namespace descent::ui
