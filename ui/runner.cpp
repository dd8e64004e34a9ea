// Running the user's code: each run goes to the Python thread (Note [The
// Python thread], python_bridge.h) while the window goes on drawing; its
// status is read each frame, its result shown when it comes, and Stop asks
// for a KeyboardInterrupt (Note [Stopping the user's code]).
#include <algorithm>
#include <chrono>
#include <cstdio>

#include "ui/app.h"
#include "ui/python_bridge.h"

namespace descent::ui {

namespace {

using Clock = std::chrono::steady_clock;

// 14000 -> "14,000"
std::string with_commas(uint64_t n) {
  std::string digits = std::to_string(n), out;
  for (size_t i = 0; i < digits.size(); ++i) {
    if (i > 0 && (digits.size() - i) % 3 == 0) out += ',';
    out += digits[i];
  }
  return out;
}

}  // namespace

bool start_run(App& app, const std::string& code, int repeat, bool from_console) {
  if (app.running.active) {
    app.console.push_back({ConsoleLine::Info, "(not run: the code above is still running; Stop it first)"});
    return false;
  }
  if (!python_submit(code, repeat)) {
    app.console.push_back({ConsoleLine::Error, "(not run: Python could not start; the message on start said why)"});
    return false;
  }
  app.running = Running{};
  app.running.active = true;
  app.running.from_console = from_console;
  app.running.code = code;
  return true;
}

bool poll_run(App& app) {
  if (!app.running.active) return false;
  const PythonStatus st = python_status();
  app.running.seconds = st.seconds;
  app.running.spans = std::max(app.running.spans, st.spans);
  app.running.stopped = st.stopped;
  Loaded l;
  if (!python_take_result(l)) return false;
  const Running r = app.running;
  app.running.active = false;
  if (r.stop_asked) app.last_stop_ms = std::chrono::duration<double, std::milli>(Clock::now() - r.stop_at).count();
  if (r.lesson) {  // the Lesson tab asked: its reply fills the tab (lesson.cpp)
    lesson_apply(app, std::move(l));
    return true;
  }
  if (!l.output.empty()) app.console.push_back({ConsoleLine::Output, l.output});
  if (!l.error.empty()) app.console.push_back({ConsoleLine::Error, l.error});
  // A statement that ran nothing (an assignment of a constant, a syntax
  // error) leaves the call on screen as it was; --code always replaces it.
  if (!r.from_console || !l.trace->spans.empty()) show_loaded(app, std::move(l));
  if (r.from_console) app.focus_console = true;  // the prompt is back, with the keyboard
  app.console_scroll = true;
  return true;
}

void stop_run(App& app) {
  if (!app.running.active) return;
  if (!app.running.stop_asked) {
    app.running.stop_asked = true;
    app.running.stop_at = Clock::now();
  }
  python_interrupt();  // again on a second press: code that caught the first goes on
}

std::string run_status(const App& app) {
  if (!app.running.active) return "";
  const Running& r = app.running;
  char text[128];
  if (r.stopped) {  // the code has stopped; what is left is making the trace of what it did
    std::snprintf(text, sizeof text, "stopped, %.1f s: making the trace of %s spans", r.seconds,
                  with_commas(r.spans).c_str());
  } else {
    std::snprintf(text, sizeof text, "%s, %.1f s, %s spans so far", r.stop_asked ? "stopping" : "running", r.seconds,
                  with_commas(r.spans).c_str());
  }
  return text;
}

}  // namespace descent::ui
