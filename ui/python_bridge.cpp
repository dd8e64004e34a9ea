// The embedded interpreter on a thread of its own. See python_bridge.h.
//
// [SECTION] Reading descent._app.run's dict
// [SECTION] The Python thread's state
// [SECTION] Stopping the user's code
// [SECTION] On the Python thread
// [SECTION] On the window's thread
#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include "ui/python_bridge.h"

#include <pthread.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <csignal>
#include <cstdlib>
#include <mutex>
#include <optional>
#include <thread>
#include <vector>

#include "floors/binding/binding.h"
#include "tracer/tracer.h"

extern "C" PyObject* PyInit__C();

namespace descent::ui {

namespace {

// [SECTION] Reading descent._app.run's dict -------------------------------------

PyObject* g_app_module = nullptr;  // descent._app (the Python thread's)

// The current Python error as text, cleared.
std::string take_python_error() {
  const binding::PyRef value{binding::fetch_exception()};
  std::string text = "unknown Python error";
  if (value.p) {
    const binding::PyRef s{PyObject_Str(value.p)};
    if (s.p) text = std::string(Py_TYPE(value.p)->tp_name) + ": " + binding::utf8_text(s.p);
  }
  PyErr_Clear();
  return text;
}

bool run_simple(const char* code, std::string& error) {
  if (PyRun_SimpleString(code) == 0) return true;
  error = std::string("Python failed running: ") + code;
  return false;
}

std::string str_item(PyObject* d, const char* key) {
  PyObject* v = PyDict_GetItemString(d, key);  // borrowed
  return v && PyUnicode_Check(v) ? binding::utf8_text(v) : std::string();
}

MemoryStats memory_item(PyObject* d, const char* key) {
  MemoryStats m;
  PyObject* v = PyDict_GetItemString(d, key);
  if (!v || !PyDict_Check(v)) return m;
  auto get = [&](const char* k) -> int64_t {
    PyObject* x = PyDict_GetItemString(v, k);
    const long long n = x ? PyLong_AsLongLong(x) : 0;
    if (PyErr_Occurred()) PyErr_Clear();
    return n;
  };
  m.allocated_bytes = get("allocated_bytes");
  m.peak_allocated_bytes = get("peak_allocated_bytes");
  m.num_allocs = get("num_allocs");
  m.num_frees = get("num_frees");
  m.valid = true;
  return m;
}

int64_t int_item(PyObject* d, const char* key) {
  PyObject* x = PyDict_GetItemString(d, key);  // borrowed
  const long long n = x && PyLong_Check(x) ? PyLong_AsLongLong(x) : 0;
  if (PyErr_Occurred()) PyErr_Clear();
  return n;
}
uint64_t address_item(PyObject* d, const char* key) {
  PyObject* x = PyDict_GetItemString(d, key);
  const unsigned long long n = x && PyLong_Check(x) ? PyLong_AsUnsignedLongLong(x) : 0;
  if (PyErr_Occurred()) PyErr_Clear();
  return n;
}
PyObject* list_item(PyObject* d, const char* key) {
  PyObject* v = d ? PyDict_GetItemString(d, key) : nullptr;
  return v && PyList_Check(v) ? v : nullptr;
}

// memory_snapshot()'s segment dicts (see Note [Replaying the allocator's history], memory_model.h).
std::vector<MemSegment> segments_item(PyObject* side) {
  std::vector<MemSegment> out;
  PyObject* segs = list_item(side, "segments");
  for (Py_ssize_t i = 0; segs && i < PyList_GET_SIZE(segs); ++i) {
    PyObject* sd = PyList_GET_ITEM(segs, i);
    if (!PyDict_Check(sd)) continue;
    MemSegment s;
    s.address = address_item(sd, "address");
    s.size = uint64_t(int_item(sd, "total_size"));
    s.small = str_item(sd, "segment_type") == "small";
    s.stream = int_item(sd, "stream");
    PyObject* blocks = list_item(sd, "blocks");
    for (Py_ssize_t k = 0; blocks && k < PyList_GET_SIZE(blocks); ++k) {
      PyObject* bd = PyList_GET_ITEM(blocks, k);
      if (!PyDict_Check(bd)) continue;
      s.blocks.push_back(MemBlock{address_item(bd, "address"), uint64_t(int_item(bd, "size")),
                                  uint64_t(int_item(bd, "requested_size")),
                                  block_state_from_name(str_item(bd, "state"))});
    }
    out.push_back(std::move(s));
  }
  return out;
}

MemCounters counters_item(PyObject* side) {
  MemCounters c;
  PyObject* st = side ? PyDict_GetItemString(side, "stats") : nullptr;
  if (!st || !PyDict_Check(st)) return c;
  c.valid = true;
  c.allocated_bytes = int_item(st, "allocated_bytes.all.current");
  c.reserved_bytes = int_item(st, "reserved_bytes.all.current");
  c.allocations = int_item(st, "allocation.all.allocated");
  c.segments_made = int_item(st, "num_device_alloc");
  return c;
}

// descent._app.run's "devices": each device's snapshots and history.
std::vector<DeviceMemory> devices_item(PyObject* r) {
  std::vector<DeviceMemory> out;
  PyObject* devs = list_item(r, "devices");
  for (Py_ssize_t i = 0; devs && i < PyList_GET_SIZE(devs); ++i) {
    PyObject* dd = PyList_GET_ITEM(devs, i);
    if (!PyDict_Check(dd)) continue;
    DeviceMemory d;
    d.device = str_item(dd, "device");
    PyObject* b = PyDict_GetItemString(dd, "before");
    PyObject* a = PyDict_GetItemString(dd, "after");
    b = b && PyDict_Check(b) ? b : nullptr;
    a = a && PyDict_Check(a) ? a : nullptr;
    d.before = segments_item(b);
    d.after = segments_item(a);
    d.stats_before = counters_item(b);
    d.stats_after = counters_item(a);
    PyObject* h = list_item(dd, "history");
    for (Py_ssize_t k = 0; h && k < PyList_GET_SIZE(h); ++k) {
      PyObject* e = PyList_GET_ITEM(h, k);
      if (!PyDict_Check(e)) continue;
      d.history.push_back(MemEntry{entry_action_from_name(str_item(e, "action")), address_item(e, "addr"),
                                   uint64_t(int_item(e, "size")), int_item(e, "stream"), int_item(e, "time_ns")});
    }
    out.push_back(std::move(d));
  }
  return out;
}

// [SECTION] The Python thread's state --------------------------------------------

using Clock = std::chrono::steady_clock;
constexpr int kStopSignal = SIGUSR2;                         // Note [Stopping the user's code]
constexpr auto kStopResend = std::chrono::milliseconds(50);  // while a stop is not delivered
constexpr const char* kUserCodeFile = "<descent trace>";     // what descent.tracing.run compiles the code as

struct Job {
  uint64_t id;
  std::string code;
  int repeat;
  bool lesson = false;  // `code` is a lesson request (descent._app.lesson), not code to run
};

// Guarded by `m` unless said otherwise.
struct PythonThread {
  std::mutex m;
  std::condition_variable wake;  // the Python thread: a job, a release, or quit
  std::condition_variable done;  // waiters: started, a run finished, exited
  std::thread thread;
  bool started = false, start_ok = false, exited = false, quit = false;
  std::string start_error;
  std::optional<Job> job;        // submitted, not yet taken by the Python thread
  bool busy = false;             // a run submitted whose result is not produced yet
  uint64_t busy_id = 0;          // its id
  Clock::time_point submitted;   // when it was submitted
  std::optional<Loaded> result;  // produced, not yet taken
  uint64_t last_id = 0;
  Clock::time_point stop_sent;  // when the stop signal was last sent
};
PythonThread g;

// A trace's Python object, let go on any thread, released on the Python
// thread (Py_DECREF needs the GIL). Its own lock, since a Loaded can be
// destroyed while `g.m` is held.
std::mutex g_release_mutex;
std::vector<PyObject*> g_releases;  // guarded by g_release_mutex
bool g_python_alive = false;        // the same: the interpreter is up, releases are taken

void release_later(PyObject* o) {
  {
    std::lock_guard lock(g_release_mutex);
    if (!g_python_alive) return;  // after Py_FinalizeEx: nothing to release into
    g_releases.push_back(o);
  }
  g.wake.notify_one();  // a wake-up lost to a race is made up by the Python thread's timed wait
}

// The run the Python thread is inside (0 between runs), and the run a stop
// was asked for; read by the stop handler on the Python thread.
std::atomic<uint64_t> g_running_id{0};
std::atomic<uint64_t> g_stop_id{0};
std::atomic<bool> g_stop_delivered{false};

// [SECTION] Stopping the user's code ------------------------------------------------

// Whether a frame of the user's code is on the stack from `frame` down.
bool in_user_code(PyObject* frame) {
  if (!frame || !PyFrame_Check(frame)) return false;
  PyFrameObject* f = reinterpret_cast<PyFrameObject*>(frame);
  Py_INCREF(f);
  bool found = false;
  while (f && !found) {
    PyCodeObject* code = PyFrame_GetCode(f);  // new reference
    PyObject* file = PyObject_GetAttrString(reinterpret_cast<PyObject*>(code), "co_filename");
    found = file && PyUnicode_Check(file) && PyUnicode_CompareWithASCIIString(file, kUserCodeFile) == 0;
    if (!file) PyErr_Clear();
    Py_XDECREF(file);
    Py_DECREF(code);
    PyFrameObject* back = PyFrame_GetBack(f);  // new reference, or nullptr
    Py_DECREF(f);
    f = back;
  }
  Py_XDECREF(f);
  return found;
}

// The Python handler of kStopSignal, called by Python on the Python thread
// between two bytecodes as handler(signum, frame).
PyObject* on_stop_signal(PyObject*, PyObject* args) {
  PyObject* frame = PyTuple_Check(args) && PyTuple_GET_SIZE(args) == 2 ? PyTuple_GET_ITEM(args, 1) : nullptr;
  const uint64_t asked = g_stop_id.load();
  if (asked == 0 || asked != g_running_id.load() || g_stop_delivered.load() || !in_user_code(frame)) {
    Py_RETURN_NONE;  // not now: the window's thread sends it again while it is not delivered
  }
  g_stop_delivered.store(true);
  PyErr_SetNone(PyExc_KeyboardInterrupt);
  return nullptr;
}
PyMethodDef g_stop_handler_def = {"_descent_app_stop", on_stop_signal, METH_VARARGS,
                                  "the app's Stop: KeyboardInterrupt in the user's code"};

// signal.signal(kStopSignal, on_stop_signal), from Python's main thread.
bool install_stop_handler(std::string& error) {
  PyObject* handler = PyCFunction_New(&g_stop_handler_def, nullptr);
  PyObject* signal = PyImport_ImportModule("signal");
  PyObject* r = handler && signal ? PyObject_CallMethod(signal, "signal", "iO", kStopSignal, handler) : nullptr;
  Py_XDECREF(handler);
  Py_XDECREF(signal);
  if (!r) {
    error = "cannot install the Stop key's signal handler: " + take_python_error();
    return false;
  }
  Py_DECREF(r);
  return true;
}

// Sends the stop signal to the Python thread. Caller holds g.m.
void send_stop_locked() {
  if (!g.busy || g.exited || !g.start_ok || g_stop_delivered.load()) return;
  pthread_kill(g.thread.native_handle(), kStopSignal);
  g.stop_sent = Clock::now();
}

// Sends it again when a stop is outstanding and the last went unanswered. Caller holds g.m.
void resend_stop_locked() {
  if (g.busy && g_stop_id.load() == g.busy_id && !g_stop_delivered.load() &&
      Clock::now() - g.stop_sent >= kStopResend) {
    send_stop_locked();
  }
}

// [SECTION] On the Python thread ----------------------------------------------------

bool start_interpreter(std::string& error) {
  PyConfig config;
  PyConfig_InitPythonConfig(&config);
  config.install_signal_handlers = 0;  // Ctrl+C in the terminal belongs to the app, not to Python
  PyStatus st = Py_InitializeFromConfig(&config);
  PyConfig_Clear(&config);
  if (PyStatus_Exception(st)) {
    error = std::string("cannot start Python: ") + (st.err_msg ? st.err_msg : "unknown error");
    return false;
  }
  // descent._C is part of this program: put it in sys.modules before the
  // package's `from . import _C` looks for the extension's file.
  PyObject* c = PyInit__C();
  if (!c) {
    error = "cannot create descent._C: " + take_python_error();
    return false;
  }
  PyObject* modules = PyImport_GetModuleDict();  // borrowed
  const int added = PyDict_SetItemString(modules, "descent._C", c);
  Py_DECREF(c);
  if (added < 0) {
    error = take_python_error();
    return false;
  }
  const char* dir = std::getenv("DESCENT_PYTHON_DIR");
  const std::string path = dir && *dir ? dir : DESCENT_PYTHON_DIR;
  PyObject* sys_path = PySys_GetObject("path");  // borrowed
  PyObject* p = PyUnicode_DecodeFSDefault(path.c_str());
  if (!sys_path || !p || PyList_Insert(sys_path, 0, p) < 0) {
    Py_XDECREF(p);
    error = "cannot set sys.path: " + take_python_error();
    return false;
  }
  Py_DECREF(p);
  // input() in the console gets end-of-file, never a terminal the user cannot see.
  if (!run_simple("import io, sys\nsys.stdin = io.StringIO('')", error)) return false;
  if (!install_stop_handler(error)) return false;
  g_app_module = PyImport_ImportModule("descent._app");
  if (!g_app_module) {
    error = "cannot import the descent package from " + path + ": " + take_python_error();
    return false;
  }
  return true;
}

// Runs the job: code traced (descent._app.run) or a lesson request
// (descent._app.lesson, whose reply goes in Loaded::lesson); with the GIL.
Loaded run_job(const Job& job) {
  Loaded l;
  const std::string& code = job.code;
  l.label = code;
  PyObject* r = job.lesson
                    ? PyObject_CallMethod(g_app_module, "lesson", "s#", code.data(), (Py_ssize_t)code.size())
                    : PyObject_CallMethod(g_app_module, "run", "s#i", code.data(), (Py_ssize_t)code.size(), job.repeat);
  if (job.lesson)
    l.lesson = "{}";  // a lesson reply, even when the request failed
  else
    l.code = code;
  if (!r || !PyDict_Check(r)) {
    l.error = r ? "descent._app returned something other than a dict" : take_python_error();
    Py_XDECREF(r);
    l.trace = std::make_shared<trace::Trace>();
    return l;
  }
  l.output = str_item(r, "output");
  l.error = str_item(r, "error");
  l.before = memory_item(r, "before");
  l.after = memory_item(r, "after");
  l.devices = devices_item(r);
  if (job.lesson) l.lesson = str_item(r, "lesson");
  PyObject* t = PyDict_GetItemString(r, "trace");  // borrowed
  if (const trace::Trace* tr = t ? binding::trace_of(t) : nullptr) {
    // Shares the Trace inside the Python object: the object lives as long as
    // the app shows it, and is released on this thread (release_later).
    Py_INCREF(t);
    l.trace = std::shared_ptr<const trace::Trace>(tr, [t](const trace::Trace*) { release_later(t); });
  } else {
    l.trace = std::make_shared<trace::Trace>();
  }
  Py_DECREF(r);
  return l;
}

void release_pending() {  // with the GIL
  std::vector<PyObject*> objects;
  {
    std::lock_guard lock(g_release_mutex);
    objects.swap(g_releases);
  }
  for (PyObject* o : objects) Py_DECREF(o);
}

void python_thread_main() {
  std::string error;
  const bool ok = start_interpreter(error);
  {
    std::lock_guard lock(g_release_mutex);
    g_python_alive = ok;
  }
  {
    std::lock_guard lock(g.m);
    g.started = true;
    g.start_ok = ok;
    g.start_error = error;
  }
  g.done.notify_all();
  PyThreadState* saved = ok ? PyEval_SaveThread() : nullptr;  // the GIL is let go between runs
  for (;;) {
    std::unique_lock lock(g.m);
    g.wake.wait_for(lock, std::chrono::seconds(1), [] {
      std::lock_guard rl(g_release_mutex);
      return g.quit || g.job.has_value() || !g_releases.empty();
    });
    std::optional<Job> job = std::move(g.job);
    g.job.reset();
    const bool quit = g.quit;
    lock.unlock();
    Loaded result;
    if (ok) {
      PyEval_RestoreThread(saved);
      release_pending();
      if (job) {
        g_running_id.store(job->id);
        result = run_job(*job);
        g_running_id.store(0);
      }
      saved = PyEval_SaveThread();
      if (job) prepare_loaded(result);  // the story of a million spans, without the GIL and off the window's thread
    } else if (job) {
      result.label = job->code;
      result.error = "Python could not start, so no code can run: " + error;
      result.trace = std::make_shared<trace::Trace>();
    }
    if (job) {
      lock.lock();
      g.result = std::move(result);
      g.busy = false;
      lock.unlock();
      g.done.notify_all();
    }
    if (quit) break;
  }
  if (ok) {
    std::optional<Loaded> leftover;
    {
      std::lock_guard lock(g.m);
      leftover.swap(g.result);
    }
    leftover.reset();  // its trace joins the releases
    PyEval_RestoreThread(saved);
    release_pending();
    {
      std::lock_guard lock(g_release_mutex);
      g_python_alive = false;
    }
    Py_CLEAR(g_app_module);
    // Finalizing puts back SIG_DFL for the handlers Python installed, and
    // SIGUSR2's default ends the process: a stop signal still on its way must
    // find it ignored instead (Python leaves SIG_IGN as it is).
    static_assert(kStopSignal == SIGUSR2);
    std::string ignored;
    run_simple("import signal\nsignal.signal(signal.SIGUSR2, signal.SIG_IGN)", ignored);
    Py_FinalizeEx();
  }
  {
    std::lock_guard lock(g.m);
    g.exited = true;
  }
  g.done.notify_all();
}

}  // namespace

// [SECTION] On the window's thread ------------------------------------------------

void python_start() {
  if (g.thread.joinable()) return;
  g.thread = std::thread(python_thread_main);
}

bool python_started(std::string& error) {
  std::unique_lock lock(g.m);
  g.done.wait(lock, [] { return g.started; });
  error = g.start_error;
  return g.start_ok;
}

bool python_stop(double grace_s) {
  if (!g.thread.joinable()) return true;
  std::unique_lock lock(g.m);
  if (g.busy && g_stop_id.load() != g.busy_id) {
    g_stop_id.store(g.busy_id);
    g_stop_delivered.store(false);
    send_stop_locked();
  }
  g.quit = true;
  g.wake.notify_one();
  lock.unlock();
  python_wait_stopped(grace_s, grace_s);  // closing: a stopped run's trace is not waited for long
  lock.lock();
  const Clock::time_point deadline =
      Clock::now() + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(grace_s));
  g.done.wait_until(lock, deadline, [] { return g.exited; });  // the interpreter finalized
  if (!g.exited) return false;
  std::optional<Loaded> leftover;
  leftover.swap(g.result);
  lock.unlock();
  g.thread.join();
  return true;
}

namespace {
bool submit(const std::string& code, int repeat, bool lesson) {
  std::lock_guard lock(g.m);
  if (g.busy || g.quit || (g.started && !g.start_ok)) return false;
  g.busy = true;
  g.busy_id = ++g.last_id;
  g.submitted = Clock::now();
  g.job = Job{g.busy_id, code, repeat, lesson};
  g.wake.notify_one();
  return true;
}
}  // namespace

bool python_submit(const std::string& code, int repeat) { return submit(code, repeat, false); }
bool python_submit_lesson(const std::string& request) { return submit(request, 1, true); }

bool python_take_result(Loaded& out) {
  std::optional<Loaded> r;
  {
    std::lock_guard lock(g.m);
    if (!g.result) return false;
    r.swap(g.result);
  }
  out = std::move(*r);
  return true;
}

bool python_wait(double seconds) {
  std::unique_lock lock(g.m);
  const Clock::time_point deadline =
      Clock::now() + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(seconds));
  while (g.busy && Clock::now() < deadline) {
    g.done.wait_until(lock, std::min(deadline, Clock::now() + kStopResend));
    resend_stop_locked();
  }
  return !g.busy;
}

bool python_wait_stopped(double grace_s, double finish_s) {
  const auto seconds = [](double s) {
    return std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(s));
  };
  std::unique_lock lock(g.m);
  const Clock::time_point grace_end = Clock::now() + seconds(grace_s);
  Clock::time_point deadline = grace_end;
  bool delivered = false;
  while (g.busy && Clock::now() < deadline) {
    if (!delivered && g_stop_delivered.load()) {
      delivered = true;
      deadline = Clock::now() + seconds(finish_s);
    }
    g.done.wait_until(lock, std::min(deadline, Clock::now() + kStopResend));
    resend_stop_locked();
  }
  return !g.busy;
}

PythonStatus python_status() {
  PythonStatus s;
  std::lock_guard lock(g.m);
  if (!g.busy) return s;
  resend_stop_locked();
  s.running = true;
  s.stopping = g_stop_id.load() == g.busy_id;
  s.stopped = s.stopping && g_stop_delivered.load();
  s.seconds = std::chrono::duration<double>(Clock::now() - g.submitted).count();
  s.spans = trace::recorded_spans();
  return s;
}

void python_interrupt() {
  std::lock_guard lock(g.m);
  if (!g.busy) return;
  g_stop_id.store(g.busy_id);
  g_stop_delivered.store(false);
  send_stop_locked();
}

}  // namespace descent::ui
