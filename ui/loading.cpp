// The call the app opens with, and headless, waiting for it.
#include "ui/loading.h"

#include <cstdio>
#include <cstdlib>

#include <unistd.h>  // access()

#include "ui/app.h"
#include "ui/python_bridge.h"

namespace descent::ui {

namespace {

constexpr const char* kSampleCode = "descent.ones(2, 2) + 1";

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

}  // namespace

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
    // Headless, --panel puts that tab in front of the lesson's (what a student
    // sees on switching tab while a question waits: test_lesson_tabs_app.py).
    if (headless && !o.panel.empty()) {
      const RightTab tabs[] = {RightTab::Detail, RightTab::Memory,  RightTab::Compare,
                               RightTab::Graph,  RightTab::Streams, RightTab::Notes};
      const char* names[] = {"detail", "memory", "compare", "graph", "streams", "notes"};
      for (size_t k = 0; k < 6; ++k)
        if (o.panel == names[k]) app.right_tab = tabs[k];
    }
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

}  // namespace descent::ui
