// The call the app opens with (loading.cpp): the code run (the sample by
// default), a trace file shown, or a lesson's step; headless, waited for,
// and what went wrong kept for the exit status (Note [Headless exit
// statuses], main.cpp).
#pragma once

#include <future>
#include <memory>
#include <string>

namespace descent::trace {
struct Trace;
}

namespace descent::ui {

struct App;

constexpr double kStopGraceSeconds = 2.0;         // for code to answer a stop (headless timeout, closing)
constexpr double kFinishAfterStopSeconds = 60.0;  // then for its trace to be collected (millions of spans)

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

// The call on screen: the code (the sample by default) run on the Python
// thread, a trace file read on the reading thread (`reading`, which failed
// with `read_error`), or a lesson's step (and, benchmarking a Stop, both a
// file and code: the trace plays while the code runs); then the step and
// the playback the command line asks for. Headless, the run is waited for.
Loading load_call(App& app, std::future<std::shared_ptr<const trace::Trace>>& reading, const std::string& read_error,
                  bool headless);

}  // namespace descent::ui
