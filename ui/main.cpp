// descent-app: watch one call descend the floors.
//
// [SECTION] Setup: the window, ImGui, the call
// [SECTION] The frame loop
// [SECTION] Shutdown and the exit status
// [SECTION] main
//
// The program reads as Dear ImGui's example_glfw_opengl3 does, run() at the
// end: setup (parse the command line, open the window, set up ImGui, start
// the embedded Python on its own thread, Note [The Python thread] in
// python_bridge.h, and load the call: run the code there, or open a trace
// file, loading.cpp), the frame loop (draw frames until the window closes, at
// full rate while code runs; headless, after waiting for the code, at most
// --timeout, a few frames and a PNG), then shutdown (headless, the state and
// the exit status). The panels of one frame are placed by frame.cpp; the
// input queued between frames is input_queue.cpp's, the type fonts.cpp's, the
// picture and the state file screenshot.cpp's, the benchmark modes bench.cpp's.
// Every path that can fail (no display, a bad file, Python that raises, code
// that never ends) says so in the window's banner or in one line on stderr
// with a non-zero exit status (Note [Headless exit statuses]), never by
// crashing.
#include <GL/gl.h>  // OpenGL 1.1's calls (clear, viewport); the backend loads the rest
#include <GLFW/glfw3.h>
#include <imgui_impl_glfw.h>
#include <imgui_impl_opengl3.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <future>
#include <vector>

#include "floors/core/log.h"
#include "floors/registration.h"
#include "ui/app.h"
#include "ui/bench.h"
#include "ui/damage.h"
#include "ui/fonts.h"
#include "ui/input_queue.h"
#include "ui/layout.h"
#include "ui/loading.h"
#include "ui/python_bridge.h"
#include "ui/screenshot.h"

namespace descent::ui {

namespace {

using Clock = std::chrono::steady_clock;

constexpr double kHeadlessFrameSeconds = 1.0 / 30;  // of playback per frame, headless with --play
constexpr double kRunningFrameSeconds = 1.0 / 60;   // a frame at least this often while code runs

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
void setup_imgui(App& app, GLFWwindow* window, bool headless, Fonts& fonts) {
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
    watch_content_scale(window);
    std::string problem;
    app.layout = load_layout(problem);
    if (!problem.empty()) log::warn(problem);
  }
  if (app.options.zoom > 0) app.layout.zoom = app.options.zoom;
  app.layout = clamped(app.layout);
  apply_scale(app, window, fonts, /*device_ready=*/false);
  ImGui_ImplGlfw_InitForOpenGL(window, true);
  install_input_queue(window);  // replaces the backend's callbacks: Note [Key presses between frames]
  glfwSetWindowRefreshCallback(window, window_exposed);
  app.redraw_damaged = !app.options.redraw_full && probe_retained_back_buffer(swap_window, window);
  ImGui_ImplOpenGL3_Init("#version 330 core");
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
void render_frame(App& app, GLFWwindow* window, Fonts& fonts) {
  feed_input(window);
  apply_scale(app, window, fonts, /*device_ready=*/true);  // a zoom asked for last frame, or a new monitor
  ImGui_ImplOpenGL3_NewFrame();
  ImGui_ImplGlfw_NewFrame();
  apply_queued_mouse();
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
  setup_imgui(app, window, headless, fonts);
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
    render_frame(app, window, fonts);
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
