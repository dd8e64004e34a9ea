// The fonts and the style, at the scale of the monitor, the zoom and the
// presenter's projector.
#include "ui/fonts.h"

#include <GLFW/glfw3.h>
#include <imgui_impl_opengl3.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <string>
#include <utility>

#include "ui/app.h"

namespace descent::ui {

namespace {

constexpr float kFontSize = 17.0f, kMonoSize = 15.0f, kPresenterFontSize = 30.0f, kPresenterMonoSize = 28.0f;  // px
constexpr float kPresenterLines = 1080.0f;  // the window height the presenter's type is sized for (apply_scale)

// The fonts at `scale` (the monitor's content scale times the zoom: Note
// [The remembered layout]), built at that size so they stay sharp.
Fonts load_fonts(App& app, float scale) {
  ImGuiIO& io = ImGui::GetIO();
  io.Fonts->Clear();
  Fonts f;
  const char* sans = "/usr/share/fonts/truetype/dejavu/DejaVuSans.ttf";
  const char* mono = "/usr/share/fonts/truetype/dejavu/DejaVuSansMono.ttf";
  const char* bold = "/usr/share/fonts/truetype/dejavu/DejaVuSans-Bold.ttf";
  const char* oblique = "/usr/share/fonts/truetype/dejavu/DejaVuSans-Oblique.ttf";
  if (std::FILE* probe = std::fopen(sans, "rb")) {
    std::fclose(probe);
    f.normal = io.Fonts->AddFontFromFileTTF(sans, std::round(kFontSize * scale));
    f.presenter = io.Fonts->AddFontFromFileTTF(sans, std::round(kPresenterFontSize * scale));
    if (std::FILE* m = std::fopen(mono, "rb")) {
      std::fclose(m);
      f.mono = io.Fonts->AddFontFromFileTTF(mono, std::round(kMonoSize * scale));  // Fonts[2]: source and console
      f.presenter_mono = io.Fonts->AddFontFromFileTTF(mono, std::round(kPresenterMonoSize * scale));  // Fonts[3]
    }
    // A lesson's **strong** and *emphasis* (Note [Markdown in the Lesson tab]), at both sizes.
    for (int k = 0; k < 2; ++k) {
      const char* file = k == 0 ? bold : oblique;
      if (std::FILE* probe_style = std::fopen(file, "rb")) {
        std::fclose(probe_style);
        (k == 0 ? f.bold : f.oblique) = io.Fonts->AddFontFromFileTTF(file, std::round(kFontSize * scale));
        (k == 0 ? f.presenter_bold : f.presenter_oblique) =
            io.Fonts->AddFontFromFileTTF(file, std::round(kPresenterFontSize * scale));
      }
    }
  }
  if (!f.normal) {
    app.banner = std::string("The DejaVu font is missing (") + sans +
                 "; Debian's fonts-dejavu-core): using ImGui's small built-in font.";
    f.normal = io.Fonts->AddFontDefault();
    f.presenter = f.normal;
  }
  return f;
}

// The style at `scale`: paddings and spacings grow with the type.
void style_colors(float scale) {
  ImGuiStyle s;
  ImGui::StyleColorsDark(&s);
  s.WindowRounding = 0;
  s.FrameRounding = 3;
  s.WindowBorderSize = 1;
  s.Colors[ImGuiCol_WindowBg] = ImVec4(0.09f, 0.10f, 0.12f, 1.0f);
  s.ScaleAllSizes(scale);
  ImGui::GetStyle() = s;
}

Fonts g_fonts;  // the fonts built last (mono_font)
float g_moved_content_scale = 0;
void content_scale_changed(GLFWwindow*, float sx, float) { g_moved_content_scale = sx; }

}  // namespace

ImFont* styled_font(bool presenter, FontStyle style) {
  const Fonts& f = g_fonts;
  switch (style) {
    case FontStyle::Bold:
      return presenter ? f.presenter_bold : f.bold;
    case FontStyle::Oblique:
      return presenter ? f.presenter_oblique : f.oblique;
    case FontStyle::Mono:
      return mono_font(presenter);
    case FontStyle::Regular:
      break;
  }
  return presenter ? f.presenter : f.normal;
}

ImFont* mono_font(bool large) { return large && g_fonts.presenter_mono ? g_fonts.presenter_mono : g_fonts.mono; }

void watch_content_scale(GLFWwindow* window) { glfwSetWindowContentScaleCallback(window, content_scale_changed); }

// A presenter's type keeps the share of the screen it has at 1080 lines
// whatever the projector's resolution (a 4K projector reporting no content
// scale would otherwise show it at half the height): its scale is at least
// the window's height over 1080.
void apply_scale(App& app, GLFWwindow* window, Fonts& fonts, bool device_ready) {
  if (g_moved_content_scale > 0) app.dpi_scale = std::clamp(std::exchange(g_moved_content_scale, 0.0f), 0.5f, 4.0f);
  int w = 0, h = 0;
  glfwGetWindowSize(window, &w, &h);
  const float screen = app.presenter ? std::max(app.dpi_scale, static_cast<float>(h) / kPresenterLines) : app.dpi_scale;
  const float scale = screen * app.layout.zoom;
  if (std::abs(scale - fonts.built_scale) < 1e-3f) return;
  app.ui_scale = scale;
  style_colors(scale);
  fonts = load_fonts(app, scale);
  fonts.built_scale = scale;
  g_fonts = fonts;
  if (device_ready) {
    ImGui_ImplOpenGL3_DestroyFontsTexture();
    ImGui_ImplOpenGL3_CreateFontsTexture();
  }
}

}  // namespace descent::ui
