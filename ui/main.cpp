// descent-app: watch one call descend the floors.
//
// [SECTION] Window and fonts
// [SECTION] Layout: one frame
// [SECTION] Screenshots
// [SECTION] main
//
// The program: parse the command line, start the embedded Python, load the
// call (run the code, or open a trace file), then draw frames until the
// window closes; or, headless, draw a few frames, write a PNG and the state,
// and exit. Every path that can fail (no display, a bad file, Python that
// raises) says so in the window's banner or on stderr, never by crashing.
#include <GL/gl.h>  // OpenGL 1.1's calls (clear, viewport, read pixels); the backend loads the rest
#include <GLFW/glfw3.h>
#include <imgui_impl_glfw.h>
#include <imgui_impl_opengl3.h>
#include <stb_image_write.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <deque>
#include <fstream>
#include <future>
#include <vector>

#include "floors/core/log.h"
#include "ui/app.h"
#include "ui/damage.h"
#include "ui/python_bridge.h"

namespace descent::ui {

namespace {

using Clock = std::chrono::steady_clock;
const Clock::time_point g_process_start = Clock::now();

constexpr const char* kSampleCode = "descent.ones(2, 2) + 1";
constexpr float kFontSize = 17.0f, kMonoSize = 15.0f, kPresenterFontSize = 30.0f;  // pixels
constexpr double kHeadlessFrameSeconds = 1.0 / 30;  // of playback per frame, headless with --play

// [SECTION] Window and fonts ----------------------------------------------------

// Note [Key presses between frames]
// ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
// ImGui 1.86 keeps only whether a key is down now, read once per frame, so a
// key pressed and released between two frames (a quick tap while the app
// idles in glfwWaitEventsTimeout, or xdotool in the tests) was never seen
// down, and the step it asked for was lost. Key events are queued here
// instead and handed to ImGui's backend a frame at a time: within one frame
// each key changes state at most once, so every press is seen by the frame
// that follows it (what ImGui 1.87's own input queue does).
struct KeyEvent {
  int key, scancode, action, mods;
};
std::deque<KeyEvent> g_key_queue;

void queue_key(GLFWwindow*, int key, int scancode, int action, int mods) {
  g_key_queue.push_back({key, scancode, action, mods});
}

// Hands ImGui the queued events up to the first that would change a key
// already changed in this frame; the rest wait for the next frame.
void feed_keys(GLFWwindow* window) {
  std::vector<int> changed;
  while (!g_key_queue.empty()) {
    const KeyEvent e = g_key_queue.front();
    if (e.action != GLFW_REPEAT && std::find(changed.begin(), changed.end(), e.key) != changed.end()) break;
    if (e.action != GLFW_REPEAT) changed.push_back(e.key);
    g_key_queue.pop_front();
    ImGui_ImplGlfw_KeyCallback(window, e.key, e.scancode, e.action, e.mods);
  }
}

struct Fonts {
  ImFont* normal = nullptr;
  ImFont* presenter = nullptr;
};

Fonts load_fonts(App& app) {
  ImGuiIO& io = ImGui::GetIO();
  Fonts f;
  const char* sans = "/usr/share/fonts/truetype/dejavu/DejaVuSans.ttf";
  const char* mono = "/usr/share/fonts/truetype/dejavu/DejaVuSansMono.ttf";
  if (std::FILE* probe = std::fopen(sans, "rb")) {
    std::fclose(probe);
    f.normal = io.Fonts->AddFontFromFileTTF(sans, kFontSize);
    f.presenter = io.Fonts->AddFontFromFileTTF(sans, kPresenterFontSize);
    if (std::FILE* m = std::fopen(mono, "rb")) {
      std::fclose(m);
      io.Fonts->AddFontFromFileTTF(mono, kMonoSize);  // Fonts[2]: source and console
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

void style_colors() {
  ImGui::StyleColorsDark();
  ImGuiStyle& s = ImGui::GetStyle();
  s.WindowRounding = 0;
  s.FrameRounding = 3;
  s.WindowBorderSize = 1;
  s.Colors[ImGuiCol_WindowBg] = ImVec4(0.09f, 0.10f, 0.12f, 1.0f);
}

// [SECTION] Layout: one frame ----------------------------------------------------

constexpr ImGuiWindowFlags kPanelFlags =
    ImGuiWindowFlags_NoMove | ImGuiWindowFlags_NoResize | ImGuiWindowFlags_NoCollapse |
    ImGuiWindowFlags_NoBringToFrontOnFocus | ImGuiWindowFlags_NoSavedSettings;

void draw_right_tabs(App& app, ImVec2 pos, ImVec2 size) {
  ImGui::SetNextWindowPos(pos);
  ImGui::SetNextWindowSize(size);
  if (ImGui::Begin("Floor detail##right", nullptr, kPanelFlags)) {
    if (ImGui::BeginTabBar("##tabs")) {
      auto tab = [&](const char* name, RightTab which, void (*draw)(App&)) {
        const ImGuiTabItemFlags flags = app.right_tab == which && app.tab_request ? ImGuiTabItemFlags_SetSelected : 0;
        if (ImGui::BeginTabItem(name, nullptr, flags)) {
          if (!app.tab_request) app.right_tab = which;
          draw(app);
          ImGui::EndTabItem();
        }
      };
      tab("Detail", RightTab::Detail, draw_detail);
      tab("Memory", RightTab::Memory, draw_memory);
      tab("Compare with PyTorch", RightTab::Compare, draw_compare);
      tab("Autograd graph", RightTab::Graph, draw_graph);
      tab("Streams", RightTab::Streams, draw_streams);
      tab("Notes", RightTab::Notes, draw_notes);
      app.tab_request = false;
      ImGui::EndTabBar();
    }
  }
  ImGui::End();
}

void draw_banner(App& app, ImVec2 display) {
  if (app.banner.empty()) return;
  const float w = std::min(display.x * 0.7f, 900.0f);
  ImGui::SetNextWindowPos(ImVec2((display.x - w) * 0.5f, display.y * 0.3f));
  ImGui::SetNextWindowSize(ImVec2(w, 0));
  ImGui::PushStyleColor(ImGuiCol_WindowBg, ImVec4(0.35f, 0.08f, 0.08f, 0.97f));
  if (ImGui::Begin("Message##banner", nullptr,
                   ImGuiWindowFlags_NoMove | ImGuiWindowFlags_NoResize | ImGuiWindowFlags_NoCollapse |
                       ImGuiWindowFlags_NoSavedSettings | ImGuiWindowFlags_AlwaysAutoResize)) {
    ImGui::TextWrapped("%s", app.banner.c_str());
    if (ImGui::Button("OK (Enter)") || ImGui::IsKeyPressed(GLFW_KEY_ENTER, false)) app.banner.clear();
  }
  ImGui::End();
  ImGui::PopStyleColor();
  app.panels_drawn.push_back("banner");
}

void draw_frame(App& app, const Fonts& fonts) {
  ImGuiIO& io = ImGui::GetIO();
  app.panels_drawn.clear();
  ImGui::PushFont(app.presenter ? fonts.presenter : fonts.normal);
  handle_keys(app);
  const ImVec2 d = io.DisplaySize;
  const float bar = app.presenter ? 96.0f : 64.0f;
  draw_toolbar(app, ImVec2(0, 0), ImVec2(d.x, bar));
  const float body = d.y - bar;
  if (app.presenter) {
    const float left = d.x * 0.60f;
    draw_building(app, ImVec2(0, bar), ImVec2(left, body));
    draw_right_tabs(app, ImVec2(left, bar), ImVec2(d.x - left, body));
  } else {
    const float left = d.x * 0.56f, top = body * 0.60f;
    draw_building(app, ImVec2(0, bar), ImVec2(left, top));
    draw_right_tabs(app, ImVec2(left, bar), ImVec2(d.x - left, top));
    draw_timeline(app, ImVec2(0, bar + top), ImVec2(left, body - top));
    draw_console(app, ImVec2(left, bar + top), ImVec2(d.x - left, body - top));
  }
  draw_banner(app, d);
  ImGui::PopFont();
}

// [SECTION] Screenshots -----------------------------------------------------------

// Reads the back buffer (before the swap) into a PNG; false with a message.
bool write_png(const std::string& path, int w, int h, std::string& error) {
  std::vector<unsigned char> pixels(static_cast<size_t>(w) * h * 3);
  glPixelStorei(GL_PACK_ALIGNMENT, 1);
  glReadBuffer(GL_BACK);
  glReadPixels(0, 0, w, h, GL_RGB, GL_UNSIGNED_BYTE, pixels.data());
  stbi_flip_vertically_on_write(1);  // OpenGL's rows start at the bottom
  if (!stbi_write_png(path.c_str(), w, h, 3, pixels.data(), w * 3)) {
    error = "cannot write the screenshot to '" + path + "'";
    return false;
  }
  return true;
}

bool write_text(const std::string& path, const std::string& text) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  return static_cast<bool>(out << text);
}

double median(std::vector<double> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

// [SECTION] main ------------------------------------------------------------------

void glfw_error(int code, const char* text) { log::warn("GLFW error ", code, ": ", text); }

DamageTracker g_damage;
void swap_window(void* w) { glfwSwapBuffers(static_cast<GLFWwindow*>(w)); }
void window_exposed(GLFWwindow*) { g_damage.invalidate(); }  // the window system lost our pixels

int run(int argc, char** argv) {
  App app;
  std::string error;
  if (!parse_options(argc, argv, app.options, error)) {
    std::fprintf(stderr, "descent app: %s\n", error.c_str());
    return 2;
  }
  const Options& o = app.options;
  const bool headless = !o.screenshot.empty();
  app.presenter = o.presenter;
  if (o.panel == "memory") app.right_tab = RightTab::Memory;
  if (o.panel == "compare") app.right_tab = RightTab::Compare;
  if (o.panel == "graph") app.right_tab = RightTab::Graph;
  if (o.panel == "streams") app.right_tab = RightTab::Streams;
  if (o.panel == "notes") app.right_tab = RightTab::Notes;
  if (!o.note.empty()) open_note(app, o.note);
  app.tab_request = true;

  // A trace file is read on a second thread while the window and Python start.
  std::string read_error;
  std::future<std::shared_ptr<const trace::Trace>> reading;
  if (!o.trace_file.empty()) {
    reading = std::async(std::launch::async, [&] { return read_trace_file(o.trace_file, read_error); });
  }

  glfwSetErrorCallback(glfw_error);
  if (!glfwInit()) {
    std::fprintf(stderr,
                 "descent app: no display to open a window on (DISPLAY is not set or not reachable).\n"
                 "  Headless: xvfb-run -a descent app --screenshot out.png ...; or: descent trace \"CODE\"\n");
    return 3;
  }
  glfwWindowHint(GLFW_CONTEXT_VERSION_MAJOR, 3);
  glfwWindowHint(GLFW_CONTEXT_VERSION_MINOR, 3);
  glfwWindowHint(GLFW_OPENGL_PROFILE, GLFW_OPENGL_CORE_PROFILE);
  if (headless) glfwWindowHint(GLFW_VISIBLE, GLFW_FALSE);
  GLFWmonitor* monitor = app.presenter && !headless && o.bench_frames == 0 ? glfwGetPrimaryMonitor() : nullptr;
  int w = o.width, h = o.height;
  if (monitor) {
    const GLFWvidmode* mode = glfwGetVideoMode(monitor);
    w = mode->width;
    h = mode->height;
  }
  GLFWwindow* window = glfwCreateWindow(w, h, "descent", monitor, nullptr);
  if (!window) {
    std::fprintf(stderr, "descent app: cannot create an OpenGL 3.3 window (see the GLFW error above)\n");
    glfwTerminate();
    return 3;
  }
  glfwMakeContextCurrent(window);
  glfwSwapInterval(headless || o.bench_frames ? 0 : 1);

  IMGUI_CHECKVERSION();
  ImGui::CreateContext();
  ImGuiIO& io = ImGui::GetIO();
  io.IniFilename = nullptr;  // the layout is the app's, not a file's
  style_colors();
  const Fonts fonts = load_fonts(app);
  ImGui_ImplGlfw_InitForOpenGL(window, true);
  glfwSetKeyCallback(window, queue_key);  // replaces the backend's: Note [Key presses between frames]
  glfwSetWindowRefreshCallback(window, window_exposed);
  app.redraw_damaged = !o.redraw_full && probe_retained_back_buffer(swap_window, window);
  ImGui_ImplOpenGL3_Init("#version 330 core");

  // The call on screen: the code (the sample by default), or a trace file.
  const bool python_ok = python_start(error);
  if (!python_ok) app.banner = "Python could not start, so no code can run (trace files still open): " + error;
  if (reading.valid()) {
    if (auto t = reading.get()) {
      show_trace_file(app, o.trace_file, std::move(t));
    } else {
      app.banner = read_error;
    }
  } else if (python_ok) {
    show_loaded(app, python_run(o.code.empty() ? kSampleCode : o.code, o.repeat));
    if (!app.loaded.error.empty()) app.console.push_back({ConsoleLine::Error, app.loaded.error});
  }
  if (!app.loaded.trace) {  // nothing to show: an empty building, and the banner says why
    Loaded empty;
    empty.trace = std::make_shared<trace::Trace>();
    empty.label = "(nothing open)";
    show_loaded(app, std::move(empty));
  }
  if (!app.loaded.output.empty()) app.console.push_back({ConsoleLine::Output, app.loaded.output});
  if (!o.compare_file.empty()) open_compare_file(app, o.compare_file);
  app.tab_request = true;
  if (o.step >= 0) app.play.scrub(app.story, static_cast<size_t>(o.step));
  if (o.bench_frames) {
    app.play.playing = true;
    app.play.speed = 4;
  }
  if (o.play) app.play.playing = true;

  std::vector<double> frame_ms;
  double first_frame_s = 0;
  int frames = 0;
  std::string last_state;
  Clock::time_point last = Clock::now();
  int exit_code = 0;
  while (!glfwWindowShouldClose(window)) {
    if (headless || o.bench_frames || app.play.playing || app.focus_console || app.leave_console_frames > 0 ||
        !g_key_queue.empty()) {
      glfwPollEvents();
    } else {
      glfwWaitEventsTimeout(0.25);  // idle: no frames drawn for nothing
    }
    const Clock::time_point now = Clock::now();
    const double dt = headless ? (o.play ? kHeadlessFrameSeconds : 0.0)
                               : std::chrono::duration<double>(now - last).count();
    last = now;
    app.play.advance(app.story, dt);
    if (o.bench_frames && !app.play.playing) app.play.toggle(app.story);  // loop while benchmarking
    if (o.bench_pan) {  // pan by 2% of the view and zoom in and out around the middle
      const double span = app.view_end_ns - app.view_start_ns;
      const double shift = span * ((frames / 50) % 2 ? -0.02 : 0.02);
      app.view_start_ns += shift;
      app.view_end_ns += shift;
      app.timeline_follow = false;
    }

    feed_keys(window);
    ImGui_ImplOpenGL3_NewFrame();
    ImGui_ImplGlfw_NewFrame();
    ImGui::NewFrame();
    draw_frame(app, fonts);
    ImGui::Render();
    int fw = 0, fh = 0;
    glfwGetFramebufferSize(window, &fw, &fh);
    if (fw != app.fb_width || fh != app.fb_height) g_damage.invalidate();
    app.fb_width = fw;
    app.fb_height = fh;
    glViewport(0, 0, fw, fh);
    static constexpr float kClear[4] = {0.06f, 0.06f, 0.07f, 1.0f};
    ImDrawData* dd = ImGui::GetDrawData();
    if (app.redraw_damaged) {
      const std::vector<DamageRect> rects = g_damage.damage(dd);
      double area = 0;
      for (const DamageRect& r : rects) area += (r.x1 - r.x0) * (r.y1 - r.y0);
      app.damaged_fraction = area / std::max(1.0f, dd->DisplaySize.x * dd->DisplaySize.y);
      render_damaged(dd, rects, fh, kClear);
    } else {
      glClearColor(kClear[0], kClear[1], kClear[2], kClear[3]);
      glClear(GL_COLOR_BUFFER_BIT);
      ImGui_ImplOpenGL3_RenderDrawData(dd);
    }
    ++frames;

    if (headless && frames >= o.frames) {
      if (!write_png(o.screenshot, fw, fh, error)) {
        std::fprintf(stderr, "descent app: %s\n", error.c_str());
        exit_code = 1;
      }
      break;
    }
    glfwSwapBuffers(window);
    if (o.bench_frames) glFinish();  // the frame is drawn, not only queued
    const double ms = std::chrono::duration<double, std::milli>(Clock::now() - now).count();
    app.frame_ms = ms;
    if (frames == 1) first_frame_s = std::chrono::duration<double>(Clock::now() - g_process_start).count();
    if (o.bench_frames) {
      frame_ms.push_back(ms);
      if (frames >= o.bench_frames) break;
    }
    if (!o.state_file.empty()) {
      std::string s = state_json(app);
      if (s != last_state) {
        write_text(o.state_file + ".tmp", s);
        std::rename((o.state_file + ".tmp").c_str(), o.state_file.c_str());  // readers never see half a file
        last_state = std::move(s);
      }
    }
  }
  if (headless && !o.state_file.empty() && !write_text(o.state_file, state_json(app))) {
    std::fprintf(stderr, "descent app: cannot write the state to '%s'\n", o.state_file.c_str());
    exit_code = 1;
  }
  if (o.bench_frames) {
    std::vector<double> sorted = frame_ms;
    std::sort(sorted.begin(), sorted.end());
    std::printf("redraw %s  frames %zu  spans %zu  first frame %.3f s after start  median %.2f ms  p90 %.2f ms  max %.2f ms\n",
                app.redraw_damaged ? "damaged" : "full", frame_ms.size(), app.trace().spans.size(), first_frame_s, median(frame_ms),
                sorted.empty() ? 0.0 : sorted[sorted.size() * 9 / 10], sorted.empty() ? 0.0 : sorted.back());
  }
  ImGui_ImplOpenGL3_Shutdown();
  ImGui_ImplGlfw_Shutdown();
  ImGui::DestroyContext();
  glfwDestroyWindow(window);
  glfwTerminate();
  // Traces shared with Python objects go before the interpreter does.
  app.loaded = Loaded{};
  app.story = Story{};
  app.compare.reset();
  python_stop();
  return exit_code;
}

}  // namespace

}  // namespace descent::ui

int main(int argc, char** argv) { return descent::ui::run(argc, argv); }
