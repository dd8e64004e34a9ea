// The embedded interpreter, on a thread of its own: the same `descent`
// package a user imports, with descent._C built into the app rather than
// loaded from its .so, so the app and the runtime it shows are one program
// over one libdescent.
//
// Note [The Python thread]
// ~~~~~~~~~~~~~~~~~~~~~~~~
// The user's code can run for ever (`while True: pass`), so it never runs on
// the thread that draws the window. One thread, started by python_start(),
// owns the interpreter: it initializes it (so it is Python's main thread,
// which Note [Stopping the user's code] needs), runs each submitted piece of
// code through descent._app.run holding the GIL, and lets the GIL go while it
// waits for the next. The window's thread never takes the GIL: it submits
// code, asks for the status each frame (seconds so far, and the recording's
// spans so far, read from the tracer without stopping it:
// trace::recorded_spans), and takes the result, a Loaded, once it is ready.
// A Loaded's trace lives inside a Python Trace object; the last reference to
// it, dropped on the window's thread, hands the object back to the Python
// thread, which releases it with the GIL. One run at a time: the console
// shows no prompt while one runs, as a terminal does.
//
// Note [Stopping the user's code]
// ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
// Stop (a key, a button, Ctrl+C) must raise KeyboardInterrupt in the user's
// code, from the window's thread, which does not hold the GIL and must not
// wait for it. What CPython offers, and why the app uses a signal:
// - PyThreadState_SetAsyncExc needs the GIL. The window's thread would wait
//   for the Python thread to let it go: up to the switch interval (5 ms) in a
//   Python loop, for as long as C code that holds it runs (sum(range(10**10))):
//   a frozen window.
// - Py_AddPendingCall needs no GIL, but in CPython 3.11 a call added from a
//   thread that is not Python's main thread does not set the eval loop's
//   "something to do" flag (COMPUTE_EVAL_BREAKER asks whether the *calling*
//   thread can handle pending calls), so `while True: pass` never looks.
// - PyErr_SetInterrupt has the same flaw, and needs Python's SIGINT handler,
//   which would also take the terminal's Ctrl+C away from the app.
// - A real signal sent to the Python thread itself (pthread_kill) works: its
//   handler, Python's own, runs on that thread, so the eval loop is told, and
//   a blocking call (time.sleep, a read) returns with EINTR and checks signals
//   at once. At start the Python thread installs, through signal.signal, a
//   handler for SIGUSR2 (kStopSignal), a C function of the app's; Python calls
//   it between two bytecodes with the frame running. It raises
//   KeyboardInterrupt only when the run it was asked for is the one running
//   and a frame of the user's code (compiled as "<descent trace>") is on the
//   stack; otherwise (the run has ended, or descent._app.run is between two
//   statements or tidying up) it returns, and the window's thread sends the
//   signal again 50 ms later while the stop is not delivered. So the app's own
//   Python never sees an interrupt that would leave the tracer recording.
// What it cannot do: a C++ kernel in progress finishes first (the GIL is let
// go there; the exception is raised when the kernel returns to Python), and C
// code that holds the GIL and neither checks signals nor returns (a huge
// builtin sum) runs to its end. Signals are process-wide in name only here:
// SIGUSR2 is sent to the Python thread alone, and the terminal's Ctrl+C still
// ends the app as it did.
#pragma once

#include <cstdint>
#include <string>

#include "ui/loaded.h"

namespace descent::ui {

// Starts the Python thread (Note [The Python thread]), which starts Python,
// registers the built-in descent._C and imports descent and descent._app.
// Returns at once; call once.
void python_start();
// Waits until the interpreter is up: false with `error` set when it could not
// start (e.g. the package's Python files are not found).
bool python_started(std::string& error);
// Ends the interpreter and its thread. A run still going is stopped first
// and given `grace_s` seconds for the stop to reach it and as long again to
// end; false when it did not end, or the interpreter did not finish within
// `grace_s` more (a thread of the user's code that never ends), in which case
// the thread is left as it is (the caller leaves with std::_Exit). Every
// Loaded whose trace came from Python must be gone first.
bool python_stop(double grace_s = 2.0);

// Queues `code` to run traced (descent._app.run) on the Python thread. False
// when a run is still in progress (one at a time) or Python did not start.
bool python_submit(const std::string& code, int repeat = 1);
// Queues a lesson request (JSON, descent._app.lesson: open a step, answer,
// check an exercise) the same way: one job at a time, its reply in
// Loaded::lesson, with the trace of the code it ran (an empty trace when none).
bool python_submit_lesson(const std::string& request);
// The finished run's result, taken once: true with `out` filled when ready.
// Never a Python exception: a syntax error, a raising statement or a stop
// (KeyboardInterrupt) comes back in Loaded::error, with the trace of what ran.
bool python_take_result(Loaded& out);
// Waits up to `seconds` for the run in progress to finish; true when none is
// in progress any more (its result may be waiting for python_take_result).
bool python_wait(double seconds);
// After python_interrupt: waits for the run to end, at most `grace_s` seconds
// for the stop to reach the user's code, then at most `finish_s` more for
// what follows it (the code's except and finally blocks, and the recording
// collected into a trace, which takes a while for millions of spans). True
// when the run ended.
bool python_wait_stopped(double grace_s, double finish_s);

struct PythonStatus {
  bool running = false;   // submitted, and its result not produced yet
  bool stopping = false;  // Stop was asked for during this run
  bool stopped = false;   // and KeyboardInterrupt was raised in the user's code: the run is ending
  double seconds = 0;     // since it was submitted
  uint64_t spans = 0;     // spans recorded so far (trace::recorded_spans)
};
// Each frame: cheap, never waits for the GIL. Also sends a stop again when
// one is outstanding (Note [Stopping the user's code]).
PythonStatus python_status();
// Stop: KeyboardInterrupt in the running code (Note [Stopping the user's code]).
void python_interrupt();

}  // namespace descent::ui
