// descent-app: watch one call descend the floors.
//
// [SECTION] Input between frames
// [SECTION] Fonts and the type's scale
// [SECTION] Screenshots and the state dump
// [SECTION] The benchmark modes
// [SECTION] Setup: the window, ImGui, the call
// [SECTION] The frame loop
// [SECTION] Shutdown and the exit status
// [SECTION] main
//
// The program reads as Dear ImGui's example_glfw_opengl3 does, run() at the
// end: setup (parse the command line, open the window, set up ImGui, start
// the embedded Python on its own thread, Note [The Python thread] in
// python_bridge.h, and load the call: run the code there, or open a trace
// file), the frame loop (draw frames until the window closes, at full rate
// while code runs; headless, after waiting for the code, at most --timeout,
// a few frames and a PNG), then shutdown (headless, the state and the exit
// status). The panels of one frame are placed by frame.cpp.
// Every path that can fail (no display, a bad file, Python that raises, code
// that never ends) says so in the window's banner or in one line on stderr
// with a non-zero exit status (Note [Headless exit statuses]), never by
// crashing.
#include <GL/gl.h>  // OpenGL 1.1's calls (clear, viewport, read pixels); the backend loads the rest
#include <GLFW/glfw3.h>
#include <imgui_impl_glfw.h>
#include <imgui_impl_opengl3.h>
#include <stb_image_write.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <deque>
#include <fstream>
#include <future>
#include <sstream>
#include <vector>

#include <unistd.h>  // access()

#include "floors/core/log.h"
#include "floors/registration.h"
#include "ui/app.h"
#include "ui/damage.h"
#include "ui/layout.h"
#include "ui/python_bridge.h"

namespace descent::ui {

namespace {

using Clock = std::chrono::steady_clock;
const Clock::time_point g_process_start = Clock::now();

constexpr const char* kSampleCode = "descent.ones(2, 2) + 1";
constexpr float kFontSize = 17.0f, kMonoSize = 15.0f, kPresenterFontSize = 30.0f;  // pixels
constexpr float kPresenterLines = 1080.0f;          // the window height the presenter's type is sized for (apply_scale)
constexpr double kHeadlessFrameSeconds = 1.0 / 30;  // of playback per frame, headless with --play
constexpr double kRunningFrameSeconds = 1.0 / 60;   // a frame at least this often while code runs
constexpr double kStopGraceSeconds = 2.0;           // for code to answer a stop (headless timeout, closing)
constexpr double kFinishAfterStopSeconds = 60.0;    // then for its trace to be collected (millions of spans)
constexpr auto kStateThrottle = std::chrono::milliseconds(100);  // --state: rewrites for the clock alone

// Note [Headless exit statuses]
// ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
// A headless run (--screenshot) is a check a script or a test relies on, so
// every way it can fall short ends it non-zero, with one line on stderr that
// says why ("descent app: ..."); the picture and the state are still written
// where they can be, to show what went wrong:
//   0    the picture (and state) written, the code ran as expected
//   1    the code raised (unless --expect-error; with it, the code raised
//        nothing), Python could not start, or the picture or state could not
//        be written
//   2    a bad command line, or a --trace or --compare file that cannot be opened
//   3    no display to draw on
//   124  the code still ran after --timeout seconds (default 60): it was stopped
// In a window none of these ends the app: the banner and the console say it.

// [SECTION] Input between frames ------------------------------------------------

// Note [Key presses between frames]
// ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
// ImGui 1.86 keeps only whether a key is down now, read once per frame, so a
// key pressed and released between two frames (a quick tap while the app
// idles in glfwWaitEventsTimeout, or xdotool in the tests) was never seen
// down, and the step it asked for was lost. Key events are queued here
// instead and handed to ImGui's backend a frame at a time: within one frame
// each key changes state at most once, so every press is seen by the frame
// that follows it (what ImGui 1.87's own input queue does). A modifier (Ctrl,
// Shift, Alt, Super) never changes in the same frame as another key: under
// load X can deliver "c down, Ctrl up" together, and ImGui, which reads Ctrl
// once a frame, would see a plain C where Ctrl+C was pressed (the Stop key
// lost, as the tests saw in the sanitizer build).
struct KeyEvent {
  int key, scancode, action, mods;
};
std::deque<KeyEvent> g_key_queue;

void queue_key(GLFWwindow*, int key, int scancode, int action, int mods) {
  g_key_queue.push_back({key, scancode, action, mods});
}

// Hands ImGui the queued events up to the first that would change a key
// already changed in this frame; the rest wait for the next frame.
bool is_modifier(int key) {
  return key >= GLFW_KEY_LEFT_SHIFT && key <= GLFW_KEY_RIGHT_SUPER;  // GLFW numbers the eight together
}

void feed_keys(GLFWwindow* window) {
  std::vector<int> changed;
  bool modifier_changed = false, other_changed = false;
  while (!g_key_queue.empty()) {
    const KeyEvent e = g_key_queue.front();
    if (e.action != GLFW_REPEAT) {
      if (std::find(changed.begin(), changed.end(), e.key) != changed.end()) break;
      if (is_modifier(e.key) ? other_changed : modifier_changed) break;
      changed.push_back(e.key);
      (is_modifier(e.key) ? modifier_changed : other_changed) = true;
    }
    g_key_queue.pop_front();
    ImGui_ImplGlfw_KeyCallback(window, e.key, e.scancode, e.action, e.mods);
  }
}

// The mouse, the same way. Under load X can deliver "move onto the border,
// press, move on" between two frames; ImGui 1.86 reads the pointer once a
// frame, where it is now, so the press landed where the pointer had gone
// and a border's drag never began (the layout test under CI's load). Moves
// and button changes are queued; a frame takes the moves up to and
// including one button change, and sees the pointer where that press or
// release happened. The moves after it wait for the next frame.
struct MouseEvent {
  bool move;
  double x, y;               // a move: where the pointer went
  int button, action, mods;  // a button change
};
std::deque<MouseEvent> g_mouse_queue;
struct {
  bool known = false;
  double x = 0, y = 0;
  bool down[3] = {false, false, false};
} g_mouse;

void queue_move(GLFWwindow*, double x, double y) { g_mouse_queue.push_back({true, x, y, 0, 0, 0}); }
void queue_button(GLFWwindow*, int button, int action, int mods) {
  g_mouse_queue.push_back({false, 0, 0, button, action, mods});
}

void feed_mouse(GLFWwindow* window) {
  while (!g_mouse_queue.empty()) {
    const MouseEvent e = g_mouse_queue.front();
    g_mouse_queue.pop_front();
    if (e.move) {
      g_mouse = {true, e.x, e.y, {g_mouse.down[0], g_mouse.down[1], g_mouse.down[2]}};
      continue;
    }
    if (e.button >= 0 && e.button < 3) g_mouse.down[e.button] = e.action == GLFW_PRESS;
    ImGui_ImplGlfw_MouseButtonCallback(window, e.button, e.action, e.mods);
    break;
  }
}

// After the backend's NewFrame, which read the pointer and the buttons as
// they are now: what the queue says they were at this frame's event.
void apply_mouse() {
  ImGuiIO& io = ImGui::GetIO();
  if (!g_mouse.known || io.MousePos.x == -FLT_MAX) return;  // not over a focused window
  io.MousePos = ImVec2(static_cast<float>(g_mouse.x), static_cast<float>(g_mouse.y));
  for (int b = 0; b < 3; ++b) io.MouseDown[b] = g_mouse.down[b];
}

bool input_waiting() { return !g_key_queue.empty() || !g_mouse_queue.empty(); }

// [SECTION] Fonts and the type's scale -----------------------------------------------

struct Fonts {
  ImFont* normal = nullptr;
  ImFont* presenter = nullptr;
};

// The fonts at `scale` (the monitor's content scale times the zoom: Note
// [The remembered layout]), built at that size so they stay sharp.
Fonts load_fonts(App& app, float scale) {
  ImGuiIO& io = ImGui::GetIO();
  io.Fonts->Clear();
  Fonts f;
  const char* sans = "/usr/share/fonts/truetype/dejavu/DejaVuSans.ttf";
  const char* mono = "/usr/share/fonts/truetype/dejavu/DejaVuSansMono.ttf";
  if (std::FILE* probe = std::fopen(sans, "rb")) {
    std::fclose(probe);
    f.normal = io.Fonts->AddFontFromFileTTF(sans, std::round(kFontSize * scale));
    f.presenter = io.Fonts->AddFontFromFileTTF(sans, std::round(kPresenterFontSize * scale));
    if (std::FILE* m = std::fopen(mono, "rb")) {
      std::fclose(m);
      io.Fonts->AddFontFromFileTTF(mono, std::round(kMonoSize * scale));  // Fonts[2]: source and console
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

// The window moved to a monitor of another density (a laptop's panel to the
// projector): its content scale changes, and the type follows at the next
// frame.
float g_moved_content_scale = 0;
void content_scale_changed(GLFWwindow*, float sx, float) { g_moved_content_scale = sx; }

// Fonts and style at the scale the monitor and the zoom ask for, rebuilt
// when it changes (between frames: the font texture is remade). A presenter's
// type keeps the share of the screen it has at 1080 lines whatever the
// projector's resolution (a 4K projector reporting no content scale would
// otherwise show it at half the height): its scale is at least the window's
// height over 1080.
void apply_scale(App& app, GLFWwindow* window, Fonts& fonts, float& built_scale, bool device_ready) {
  int w = 0, h = 0;
  glfwGetWindowSize(window, &w, &h);
  const float screen = app.presenter ? std::max(app.dpi_scale, static_cast<float>(h) / kPresenterLines) : app.dpi_scale;
  const float scale = screen * app.layout.zoom;
  if (std::abs(scale - built_scale) < 1e-3f) return;
  built_scale = scale;
  app.ui_scale = scale;
  style_colors(scale);
  fonts = load_fonts(app, scale);
  if (device_ready) {
    ImGui_ImplOpenGL3_DestroyFontsTexture();
    ImGui_ImplOpenGL3_CreateFontsTexture();
  }
}

// [SECTION] Screenshots and the state dump -------------------------------------------

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

// The state file, whole or not at all (Note [Saving a file whole] in
// tracer/trace.cpp: readers never see half a file, a full disk keeps the last
// good one); false with `error` naming the file and the reason.
bool write_text(const std::string& path, const std::string& text, std::string& error) {
  try {
    trace::write_text_file(path, text);
    return true;
  } catch (const std::runtime_error& e) {
    error = e.what();
    return false;
  }
}

// The --state file in a window, rewritten when the state changes; when only
// the clock in it changes (the frame counter, a run's seconds), at most
// every kStateThrottle. Headless, the state is written once, at the end
// (headless_exit_status). A write that fails is said once on stderr, until
// one succeeds again (headless, at the end only, with the exit status).
struct StateWriter {
  StateWriter(std::string p, bool headless) : path(std::move(p)), quiet(headless) {}
  std::string path, last_stable, last_full;
  Clock::time_point last_write{};
  bool quiet, failing = false;
  void update(const App& app) {
    if (path.empty()) return;
    std::string stable;
    std::string full = state_json(app, &stable);
    const Clock::time_point now = Clock::now();
    if (stable == last_stable && (full == last_full || now - last_write < kStateThrottle)) return;
    std::string error;
    const bool ok = write_text(path, full, error);
    if (!ok && !failing && !quiet) log::warn("cannot write the state: ", error);
    failing = !ok;
    last_stable = std::move(stable);
    last_full = std::move(full);
    last_write = now;
  }
};

// [SECTION] The benchmark modes ---------------------------------------------------------

double median(std::vector<double> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

// --bench-frames N: the call played at 4x in a loop for N frames (with
// --bench-pan, the timeline panned and zoomed each frame; with --bench-jump,
// a far step opened each frame, as a click on the timeline or a search does
// in a long story), each frame timed
// to its glFinish; --bench-stop: N frames while the code runs, then Stop, and
// the frames until the prompt is back (bench_app.py reads what report prints).
struct Benchmark {
  explicit Benchmark(const Options& opts) : o(opts) {}
  const Options& o;
  std::vector<double> frame_ms;
  std::vector<double> stopping_ms;  // --bench-stop: frames between Stop and the prompt
  bool stopping = false;            // --bench-stop: Stop has been pressed
  double first_frame_s = 0;

  void start(App& app) const {
    if (!o.bench_frames || o.bench_jump) return;
    app.play.playing = true;
    app.play.speed = 4;
  }
  // Before frame number `frames` is drawn: the playback looped, the timeline panned.
  void before_frame(App& app, int frames) const {
    if (o.bench_jump && app.has_steps()) {  // a step far from the last: a prime stride through the story
      app.play.scrub(app.story, (static_cast<size_t>(frames) * 7919) % app.story.steps.size());
      return;
    }
    if (o.bench_frames && !app.play.playing) app.play.toggle(app.story);  // loop while benchmarking
    if (o.bench_pan) {  // pan by 2% of the view and zoom in and out around the middle
      const double span = app.view_end_ns - app.view_start_ns;
      const double shift = span * ((frames / 50) % 2 ? -0.02 : 0.02);
      app.view_start_ns += shift;
      app.view_end_ns += shift;
      app.timeline_follow = false;
    }
  }
  // After frame number `frames`, drawn in `ms`: true when the benchmark is over.
  bool after_frame(App& app, int frames, double ms, bool run_ended, bool was_running) {
    if (frames == 1) first_frame_s = std::chrono::duration<double>(Clock::now() - g_process_start).count();
    if (o.bench_stop) {  // frames while the code runs, then Stop, then the time until the prompt is back
      if (run_ended || (!was_running && !app.running.active)) return true;
      (stopping ? stopping_ms : frame_ms).push_back(ms);
      if (!stopping && static_cast<int>(frame_ms.size()) >= o.bench_frames) {
        stopping = true;
        stop_run(app);
      }
    } else if (o.bench_frames) {
      frame_ms.push_back(ms);
      if (frames >= o.bench_frames) return true;
    }
    return false;
  }
  void report(const App& app) const {
    std::vector<double> sorted = frame_ms;
    std::sort(sorted.begin(), sorted.end());
    const double p90 = sorted.empty() ? 0.0 : sorted[sorted.size() * 9 / 10],
                 max = sorted.empty() ? 0.0 : sorted.back();
    if (o.bench_stop) {
      const double stopping_max = stopping_ms.empty() ? 0.0 : *std::max_element(stopping_ms.begin(), stopping_ms.end());
      std::printf(
          "while the code ran: frames %zu  median %.2f ms  p90 %.2f ms  max %.2f ms  stop to prompt %.1f ms  "
          "frames meanwhile %zu, max %.2f ms  spans %zu\n",
          frame_ms.size(), median(frame_ms), p90, max, app.last_stop_ms, stopping_ms.size(), stopping_max,
          app.trace().spans.size());
    } else if (o.bench_frames) {
      std::printf(
          "redraw %s  frames %zu  spans %zu  first frame %.3f s after start  median %.2f ms  p90 %.2f ms  max %.2f "
          "ms\n",
          app.redraw_damaged ? "damaged" : "full", frame_ms.size(), app.trace().spans.size(), first_frame_s,
          median(frame_ms), p90, max);
    }
  }
};

// [SECTION] Setup: the window, ImGui, the call ---------------------------------------------

void glfw_error(int code, const char* text) { log::warn("GLFW error ", code, ": ", text); }

DamageTracker g_damage;
void swap_window(void* w) { glfwSwapBuffers(static_cast<GLFWwindow*>(w)); }
void window_exposed(GLFWwindow*) { g_damage.invalidate(); }  // the window system lost our pixels

// What the command line asks of the App before anything is shown.
void apply_options(App& app) {
  const Options& o = app.options;
  app.presenter = o.presenter;
  app.fold_helpers = o.fold_helpers;  // before the first story is built
  if (o.panel == "memory") app.right_tab = RightTab::Memory;
  if (o.panel == "compare") app.right_tab = RightTab::Compare;
  if (o.panel == "graph") app.right_tab = RightTab::Graph;
  if (o.panel == "streams") app.right_tab = RightTab::Streams;
  if (o.panel == "notes") app.right_tab = RightTab::Notes;
  if (!o.note.empty()) open_note(app, o.note);
}

// An OpenGL 3.3 window (full screen on the primary monitor for a presenter);
// nullptr, said on stderr, when there is no display or no such context.
GLFWwindow* open_window(const App& app, bool headless) {
  const Options& o = app.options;
  glfwSetErrorCallback(glfw_error);
  if (!glfwInit()) {
    std::fprintf(stderr,
                 "descent app: no display to open a window on (DISPLAY is not set or not reachable).\n"
                 "  Headless: xvfb-run -a descent app --screenshot out.png ...; or: descent trace \"CODE\"\n");
    return nullptr;
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
  }
  return window;
}

// ImGui's context, the type at the monitor's scale and the zoom, the
// backends, and the input queued between frames (Note [Key presses between
// frames]).
void setup_imgui(App& app, GLFWwindow* window, bool headless, Fonts& fonts, float& built_scale) {
  IMGUI_CHECKVERSION();
  ImGui::CreateContext();
  ImGuiIO& io = ImGui::GetIO();
  io.IniFilename = nullptr;  // the layout is the app's, not a file's
  // The type follows the monitor (its content scale) and the zoom (Note [The
  // remembered layout]); headless, only --zoom.
  if (!headless) {
    float sx = 1, sy = 1;
    glfwGetWindowContentScale(window, &sx, &sy);
    app.dpi_scale = std::clamp(sx, 0.5f, 4.0f);
    glfwSetWindowContentScaleCallback(window, content_scale_changed);
    std::string problem;
    app.layout = load_layout(problem);
    if (!problem.empty()) log::warn(problem);
  }
  if (app.options.zoom > 0) app.layout.zoom = app.options.zoom;
  app.layout = clamped(app.layout);
  apply_scale(app, window, fonts, built_scale, /*device_ready=*/false);
  ImGui_ImplGlfw_InitForOpenGL(window, true);
  glfwSetKeyCallback(window, queue_key);             // replaces the backend's: Note [Key presses between frames]
  glfwSetMouseButtonCallback(window, queue_button);  // and the mouse's, the same way
  glfwSetCursorPosCallback(window, queue_move);
  glfwSetWindowRefreshCallback(window, window_exposed);
  app.redraw_damaged = !app.options.redraw_full && probe_retained_back_buffer(swap_window, window);
  ImGui_ImplOpenGL3_Init("#version 330 core");
}

// How loading the call went, for the banner and the headless exit status.
struct Loading {
  bool python_ok = false;
  std::string python_error;
  bool from_file = false;    // --trace
  std::string trace_error;   // a --trace or --compare file that could not be opened
  bool run_code = false;     // --code (or the sample) was run
  bool timed_out = false;    // headless: it ran past --timeout
  std::string lesson_error;  // --lesson: a lesson that could not be opened, an answer or check that failed
};

// Headless: waits for the run in progress (code, or a lesson's request) and
// takes its result. False when it ran past `timeout_s` and was stopped; a run
// that does not stop when asked ends the process (exit 124).
bool finish_run(App& app, double timeout_s) {
  bool in_time = true;
  if (!python_wait(timeout_s)) {
    in_time = false;
    stop_run(app);
    if (!python_wait_stopped(kStopGraceSeconds, kFinishAfterStopSeconds)) {
      std::fprintf(stderr,
                   "descent app: the code still ran after --timeout %g s and did not stop when asked "
                   "(it is inside C code that does not return, or it caught KeyboardInterrupt); exiting\n",
                   timeout_s);
      std::fflush(nullptr);
      std::_Exit(124);  // the Python thread cannot be ended: no orderly exit
    }
  }
  poll_run(app);
  return in_time;
}

// --lesson, headless: each request in turn, waited for: the step, then the
// answers (--answer), then the check (--check).
void serve_lesson_headless(App& app, Loading& l) {
  const Options& o = app.options;
  auto serve = [&] {
    while (!l.timed_out && (app.running.active || lesson_pump(app))) l.timed_out = !finish_run(app, o.timeout_s);
  };
  serve();
  const int first = app.lesson.open() ? app.lesson.next_question() : -1;
  for (size_t a = 0; a < o.answers.size(); ++a) {
    const int k = first + static_cast<int>(a);
    if (first < 0 || k >= static_cast<int>(app.lesson.predictions.size())) {
      l.lesson_error = "--answer: the step has " + std::to_string(app.lesson.predictions.size()) +
                       " question(s), not " + std::to_string(o.answers.size());
      break;
    }
    lesson_answer(app, k, o.answers[a]);
    serve();
  }
  if (!o.check_file.empty()) {
    // Not a plain ifstream: a named pipe at the path would block for ever (Note [Reading app.conf safely]).
    std::string problem;
    const std::string code = read_small_file(o.check_file, 1 << 20, "the code to check", problem);
    if (!problem.empty() || (code.empty() && ::access(o.check_file.c_str(), F_OK) != 0)) {
      l.lesson_error = "--check: " + (problem.empty() ? o.check_file + ": no such file" : problem);
    } else if (!app.lesson.exercise) {
      l.lesson_error = "--check: the step has no exercise";
    } else {
      app.lesson.exercise->editor = code;
      lesson_check(app, code);
      serve();
    }
  }
  if (!app.lesson.problem.empty()) l.lesson_error = app.lesson.problem;
  if (!app.lesson.open() && l.lesson_error.empty()) l.lesson_error = "--lesson: the lesson did not open";
  if (!l.lesson_error.empty()) app.banner = l.lesson_error;
}

// The call on screen: the code (the sample by default) run on the Python
// thread, a trace file read on the reading thread, or a lesson's step (and,
// benchmarking a Stop, both a file and code: the trace plays while the code
// runs); then the step and the playback the command line asks for.
Loading load_call(App& app, std::future<std::shared_ptr<const trace::Trace>>& reading, const std::string& read_error,
                  bool headless) {
  const Options& o = app.options;
  Loading l;
  l.python_ok = python_started(l.python_error);
  if (!l.python_ok)
    app.banner = "Python could not start, so no code can run (trace files still open): " + l.python_error;
  l.from_file = reading.valid();  // (get() below leaves the future invalid)
  if (l.from_file) {
    if (auto t = reading.get()) {
      show_trace_file(app, o.trace_file, std::move(t));
    } else {
      app.banner = l.trace_error = read_error;
    }
  }
  l.run_code = l.python_ok && o.lesson.empty() && (!l.from_file || (o.bench_stop && !o.code.empty()));
  if (l.run_code) {
    const std::string code = o.code.empty() ? kSampleCode : o.code;
    start_run(app, code, o.repeat, /*from_console=*/false);
    if (!app.loaded.trace) app.loaded.label = code;  // on the toolbar while it runs
    // Headless, and benchmarking frames of the call, the code's end is waited
    // for; in a window it runs while the window draws.
    if (headless || (o.bench_frames && !o.bench_stop)) {
      l.timed_out = !finish_run(app, headless ? o.timeout_s : 1e7);
    }
  }
  if (l.python_ok && !o.lesson.empty()) {
    app.right_tab = RightTab::Lesson;
    lesson_catalog(app);
    lesson_open(app, o.lesson, o.lesson_step - 1);
    if (headless) serve_lesson_headless(app, l);
  }
  if (!app.loaded.trace) {  // nothing to show yet: an empty building, and the banner or the status line says why
    Loaded empty;
    empty.trace = std::make_shared<trace::Trace>();
    empty.label = app.loaded.label.empty() ? "(nothing open)" : app.loaded.label;
    show_loaded(app, std::move(empty));
  }
  if (!o.compare_file.empty() && !open_compare_file(app, o.compare_file)) l.trace_error = app.banner;
  if (o.step >= 0) app.play.scrub(app.story, static_cast<size_t>(o.step));
  return l;
}

// [SECTION] The frame loop ------------------------------------------------------------------

// Until the next frame is due: at once headless, benchmarking, playing, or
// with the keyboard going to a field or input queued; a frame every
// kRunningFrameSeconds while code runs (the status line's clock moves),
// sooner when a key or the mouse wakes the loop, the wait leaving the cores
// to the code; idle, up to a quarter second (no frames drawn for nothing).
void wait_for_events(const App& app, bool headless, Clock::time_point last_frame) {
  if (app.running.active && !headless) {
    const double wait = kRunningFrameSeconds - std::chrono::duration<double>(Clock::now() - last_frame).count();
    if (wait > 0 && !input_waiting()) {
      glfwWaitEventsTimeout(wait);
    } else {
      glfwPollEvents();
    }
  } else if (headless || app.options.bench_frames || app.play.playing || app.focus_console ||
             app.leave_console_frames > 0 || app.search.focus || input_waiting()) {
    glfwPollEvents();
  } else {
    glfwWaitEventsTimeout(0.25);
  }
}

// One frame into the back buffer: this frame's input, the type rebuilt if
// its scale changed, every panel (draw_frame, frame.cpp), then drawn whole
// or only where it changed (Note [Redrawing only what changed]).
void render_frame(App& app, GLFWwindow* window, Fonts& fonts, float& built_scale) {
  feed_keys(window);
  feed_mouse(window);
  if (g_moved_content_scale > 0) app.dpi_scale = std::clamp(std::exchange(g_moved_content_scale, 0.0f), 0.5f, 4.0f);
  apply_scale(app, window, fonts, built_scale, /*device_ready=*/true);  // a zoom asked for last frame, or a new monitor
  ImGui_ImplOpenGL3_NewFrame();
  ImGui_ImplGlfw_NewFrame();
  apply_mouse();
  ImGui::NewFrame();
  draw_frame(app, app.presenter ? fonts.presenter : fonts.normal);
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
}

// The layout, remembered as soon as the user changes it (a window's only).
void remember_layout(App& app, bool headless) {
  if (!app.layout_changed || headless) return;
  app.layout_changed = false;
  std::string problem;
  if (!save_layout(app.layout, problem)) log::warn(problem);
}

// [SECTION] Shutdown and the exit status ------------------------------------------------------

// The first line of `text` (an error can be a traceback or a list of problems).
std::string first_line(const std::string& text) { return text.substr(0, text.find('\n')); }
// The last non-empty line: "ZeroDivisionError: division by zero" from a traceback.
std::string last_line(const std::string& text) {
  size_t end = text.find_last_not_of("\n ");
  if (end == std::string::npos) return text;
  const size_t start = text.rfind('\n', end);
  return text.substr(start == std::string::npos ? 0 : start + 1,
                     end + 1 - (start == std::string::npos ? 0 : start + 1));
}

// Headless: the state written, then every way the run fell short said on
// stderr, the first deciding the exit status (Note [Headless exit statuses]).
int headless_exit_status(const App& app, const Loading& l, int exit_code) {
  const Options& o = app.options;
  std::string state_error;
  if (!o.state_file.empty() && !write_text(o.state_file, state_json(app), state_error)) {
    std::fprintf(stderr, "descent app: cannot write the state: %s\n", state_error.c_str());
    exit_code = 1;
  }
  auto fail = [&](int status, const std::string& why) {
    std::fprintf(stderr, "descent app: %s\n", why.c_str());
    if (exit_code == 0) exit_code = status;
  };
  if (l.timed_out) {
    char why[160];
    std::snprintf(why, sizeof why,
                  "the code still ran after --timeout %g s, so it was stopped (give a larger "
                  "--timeout for longer code)",
                  o.timeout_s);
    fail(124, why);
  }
  if (!l.trace_error.empty()) fail(2, first_line(l.trace_error));
  if (!l.lesson_error.empty()) fail(2, first_line(l.lesson_error));
  if (!l.python_ok && !l.from_file) fail(1, "Python could not start: " + first_line(l.python_error));
  if (l.run_code && !l.timed_out) {
    if (!app.loaded.error.empty() && !o.expect_error) {
      fail(1, "the code raised " + last_line(app.loaded.error) + " (--expect-error if that is what it should do)");
    } else if (app.loaded.error.empty() && o.expect_error) {
      fail(1, "--expect-error: the code raised nothing");
    }
  }
  return exit_code;
}

// ImGui, the window, then Python: traces shared with Python objects go
// before the interpreter does. Code still running that will not stop gets
// no orderly end.
int shutdown(App& app, GLFWwindow* window, int exit_code) {
  ImGui_ImplOpenGL3_Shutdown();
  ImGui_ImplGlfw_Shutdown();
  ImGui::DestroyContext();
  glfwDestroyWindow(window);
  glfwTerminate();
  app.loaded = Loaded{};
  app.story = Story{};
  app.compare.reset();
  if (!python_stop(kStopGraceSeconds)) {
    std::fflush(nullptr);
    std::_Exit(exit_code);
  }
  return exit_code;
}

// [SECTION] main ------------------------------------------------------------------------------

// Setup, the frame loop, shutdown, as Dear ImGui's example_glfw_opengl3 reads.
int run(int argc, char** argv) {
  // Setup: the command line, the window and ImGui, then the call to show.
  App app;
  std::string error;
  if (!parse_options(argc, argv, app.options, error)) {
    std::fprintf(stderr, "descent app: %s\n", error.c_str());
    return 2;
  }
  const Options& o = app.options;
  const bool headless = !o.screenshot.empty();
  apply_options(app);
  // Note [The app's span limit]
  // ~~~~~~~~~~~~~~~~~~~~~~~~~~~
  // Code typed into the console or a lesson's exercise may loop for ever.
  // The tracer's own limit (Note [Dropped spans], 8M spans a thread) is
  // sized for a profiling run; in the app each span also becomes a story's
  // steps, its text and its layout, about 600 bytes in all, so 8M spans
  // would take a classroom laptop's 5 GB before Stop is pressed. The app
  // keeps 1M spans a thread (a 1000-pass training loop is 17,000; a lesson
  // step under 3,000); past it spans are counted, not kept, and the trace
  // says so. DESCENT_TRACE_MAX_SPANS, when set, is taken as given.
  setenv("DESCENT_TRACE_MAX_SPANS", "1048576", /*overwrite=*/0);
  // A trace file is read on a second thread while the window and Python start.
  std::string read_error;
  std::future<std::shared_ptr<const trace::Trace>> reading;
  if (!o.trace_file.empty()) {
    reading = std::async(std::launch::async, [&] { return read_trace_file(o.trace_file, read_error); });
  }
  GLFWwindow* window = open_window(app, headless);
  if (!window) return 3;
  // Python starts on its own thread (Note [The Python thread]) while ImGui and
  // the fonts are set up, not sooner: its start calls setlocale(), which is
  // not thread-safe, and glfwInit reads the locale (X11's input method).
  descent::register_floors();  // before any op runs (Note [Registering the floors])
  python_start();
  glfwMakeContextCurrent(window);
  glfwSwapInterval(headless || o.bench_frames ? 0 : 1);
  Fonts fonts;
  float built_scale = 0;
  setup_imgui(app, window, headless, fonts, built_scale);
  const Loading loading = load_call(app, reading, read_error, headless);
  Benchmark bench{o};
  bench.start(app);
  if (o.play) app.play.playing = true;

  // The frame loop: events, the run's progress, the playback, then a frame;
  // headless, the picture of the last frame.
  StateWriter state_writer{o.state_file, headless};
  Clock::time_point last = Clock::now();
  int frames = 0, exit_code = 0;
  while (!glfwWindowShouldClose(window)) {
    wait_for_events(app, headless, last);
    const Clock::time_point now = Clock::now();
    const bool was_running = app.running.active;
    const bool run_ended = poll_run(app);
    lesson_pump(app);  // the Lesson tab's next request, when the Python thread is free
    const double dt =
        headless ? (o.play ? kHeadlessFrameSeconds : 0.0) : std::chrono::duration<double>(now - last).count();
    last = now;
    app.play.advance(app.story, dt);
    hold_at_question(app);
    bench.before_frame(app, frames);
    render_frame(app, window, fonts, built_scale);
    app.frames = static_cast<uint64_t>(++frames);
    if (headless && frames >= o.frames) {
      if (!write_png(o.screenshot, app.fb_width, app.fb_height, error)) {
        std::fprintf(stderr, "descent app: %s\n", error.c_str());
        exit_code = 1;
      }
      break;
    }
    glfwSwapBuffers(window);
    if (o.bench_frames) glFinish();  // the frame is drawn, not only queued
    app.frame_ms = std::chrono::duration<double, std::milli>(Clock::now() - now).count();
    if (bench.after_frame(app, frames, app.frame_ms, run_ended, was_running)) break;
    state_writer.update(app);
    remember_layout(app, headless);
  }

  // Shutdown: the state and the exit status, the benchmark's numbers, then
  // ImGui, the window and Python.
  if (headless) exit_code = headless_exit_status(app, loading, exit_code);
  bench.report(app);
  return shutdown(app, window, exit_code);
}

}  // namespace

}  // namespace descent::ui

int main(int argc, char** argv) { return descent::ui::run(argc, argv); }
