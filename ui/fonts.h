// The app's type: the fonts and the style at the scale the monitor, the
// zoom (Note [The remembered layout]) and presenter mode ask for
// (fonts.cpp).
#pragma once

#include <imgui.h>

struct GLFWwindow;

namespace descent::ui {

struct App;

struct Fonts {
  ImFont* normal = nullptr;
  ImFont* presenter = nullptr;
  ImFont* mono = nullptr;            // the source view and the console (null without DejaVu Sans Mono)
  ImFont* presenter_mono = nullptr;  // the presenter's console
  ImFont *bold = nullptr, *oblique = nullptr, *presenter_bold = nullptr, *presenter_oblique = nullptr;  // prose
  float built_scale = 0;  // the scale they were built at (0: not yet)
};

// The monospaced font (`large`: the presenter console's); null without one.
ImFont* mono_font(bool large);
// A face of the normal or the presenter's size (null when its file is missing).
enum class FontStyle { Regular, Bold, Oblique, Mono };
ImFont* styled_font(bool presenter, FontStyle style);
// Follows the window onto a monitor of another density (a laptop's panel to
// the projector): the type changes at the next apply_scale.
void watch_content_scale(GLFWwindow* window);
// Fonts and style at the scale asked for now, rebuilt when it changed
// (between frames: with `device_ready` the font texture is remade too).
void apply_scale(App& app, GLFWwindow* window, Fonts& fonts, bool device_ready);

}  // namespace descent::ui
