// Tracing from Python: start and stop a recording, the Trace object, spans
// opened by the Python package (floor 1), and the profile hook that times the
// descent package's own Python functions.
#include <algorithm>
#include <climits>
#include <cstring>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "floors/binding/binding.h"
#include "floors/kernels/roofline.h"
#include "tracer/roofline.h"
#include "tracer/trace.h"

namespace descent::binding {

namespace {

// [SECTION] The Trace object ------------------------------------------------------

struct TraceObject {
  PyObject_HEAD trace::Trace* trace;
};
PyTypeObject g_trace_type = {PyVarObject_HEAD_INIT(nullptr, 0) "descent._C.Trace"};

PyObject* new_trace_object(trace::Trace t) {
  auto* o = PyObject_New(TraceObject, &g_trace_type);
  if (o) o->trace = new trace::Trace(std::move(t));
  return reinterpret_cast<PyObject*>(o);
}
trace::Trace& T(PyObject* o) { return *reinterpret_cast<TraceObject*>(o)->trace; }

void trace_dealloc(PyObject* o) {
  delete reinterpret_cast<TraceObject*>(o)->trace;
  PyObject_Free(o);
}

// Text from a trace as a Python str. A loaded file may hold bytes that are
// not UTF-8 in a name or an argument: they are shown as \xNN, never refused.
PyObject* py_text(const std::string& s) {
  return PyUnicode_DecodeUTF8(s.data(), static_cast<Py_ssize_t>(s.size()), "backslashreplace");
}

// A file path argument (str or os.PathLike) as UTF-8; nullptr with a TypeError set otherwise.
bool path_arg(const char* fn, PyObject* path, std::string& out) {
  PyObject* fs = PyOS_FSPath(path);
  if (fs == nullptr || !PyUnicode_Check(fs)) {
    PyErr_Clear();
    Py_XDECREF(fs);
    PyErr_Format(PyExc_TypeError, "%s(): expected a file path (str or os.PathLike), got %s", fn,
                 Py_TYPE(path)->tp_name);
    return false;
  }
  out = utf8_text(fs);
  Py_DECREF(fs);
  return true;
}

PyObject* t_format_tree(PyObject* o, PyObject*) {
  DESCENT_PY_TRY return py_text(trace::format_tree(T(o)));
  DESCENT_PY_CATCH(nullptr)
}
// format_tree_repeated(runs) and warm_medians(runs): Note [Warm medians] in tracer/trace.h.
bool runs_arg(PyObject* arg, size_t& runs) {
  const long long n = PyLong_AsLongLong(arg);
  if (n == -1 && PyErr_Occurred()) return false;
  if (n < 1) {
    PyErr_Format(PyExc_ValueError, "runs must be at least 1, got %lld", n);
    return false;
  }
  runs = static_cast<size_t>(n);
  return true;
}
PyObject* t_format_tree_repeated(PyObject* o, PyObject* arg) {
  size_t runs = 0;
  if (!runs_arg(arg, runs)) return nullptr;
  DESCENT_PY_TRY
  try {
    return py_text(trace::format_tree_repeated(T(o), runs));
  } catch (const std::invalid_argument& e) {
    return PyErr_Format(PyExc_ValueError, "%s", e.what());
  }
  DESCENT_PY_CATCH(nullptr)
}
// A list with one entry per span (as spans() orders them): None outside the
// last run, else (warm_ns, cold_ns, warm_samples) with -1 for a missing time.
PyObject* t_warm_medians(PyObject* o, PyObject* arg) {
  size_t runs = 0;
  if (!runs_arg(arg, runs)) return nullptr;
  DESCENT_PY_TRY
  std::vector<trace::WarmTime> times;
  try {
    times = trace::warm_medians(T(o), runs);
  } catch (const std::invalid_argument& e) {
    return PyErr_Format(PyExc_ValueError, "%s", e.what());
  }
  return py_list(times.size(), [&](size_t i) {
    const trace::WarmTime& w = times[i];
    return w.warm_ns < 0 && w.cold_ns < 0 ? Py_NewRef(Py_None)
                                          : Py_BuildValue("(LLi)", static_cast<long long>(w.warm_ns),
                                                          static_cast<long long>(w.cold_ns), w.warm_samples);
  });
  DESCENT_PY_CATCH(nullptr)
}
// The flows as a list of (from_id, to_id, name).
PyObject* t_flows(PyObject* o, PyObject*) {
  DESCENT_PY_TRY
  const std::vector<trace::Flow>& flows = T(o).flows;
  return py_list(flows.size(), [&](size_t i) {
    return Py_BuildValue("(KKs)", static_cast<unsigned long long>(flows[i].from),
                         static_cast<unsigned long long>(flows[i].to), flows[i].name.c_str());
  });
  DESCENT_PY_CATCH(nullptr)
}
// roofline(span_id): where that kernel span sits on its device's roofline
// (tracer/roofline.h), as a dict; known is False when it cannot say.
PyObject* t_roofline(PyObject* o, PyObject* arg) {
  const unsigned long long id = PyLong_AsUnsignedLongLong(arg);
  if (id == static_cast<unsigned long long>(-1) && PyErr_Occurred()) return nullptr;
  DESCENT_PY_TRY
  const trace::Trace& t = T(o);
  size_t i = 0;
  while (i < t.spans.size() && t.spans[i].id != id) ++i;
  DESCENT_CHECK(i < t.spans.size(), IndexError, "roofline(): the trace has no span ", id);
  const trace::RooflinePoint p = trace::roofline_of(t, i);
  return Py_BuildValue("{s:O,s:s,s:s,s:d,s:d,s:d,s:d,s:d,s:d,s:d,s:s}", "known", p.known ? Py_True : Py_False, "device",
                       p.device.c_str(), "bound", p.known ? p.bound_word() : "", "bytes", p.bytes, "flops", p.flops,
                       "seconds", p.seconds, "intensity", p.intensity(), "ridge", p.ridge(), "fraction", p.fraction(),
                       "peak_flops_per_s", p.peak_flops_per_s, "peak_flops_name", p.peak_flops_name.c_str());
  DESCENT_PY_CATCH(nullptr)
}
PyObject* t_chrome_json(PyObject* o, PyObject*) {
  DESCENT_PY_TRY return py_text(trace::to_chrome_json(T(o)));
  DESCENT_PY_CATCH(nullptr)
}
PyObject* t_check(PyObject* o, PyObject*) {
  DESCENT_PY_TRY return py_text(trace::check_structure(T(o)));
  DESCENT_PY_CATCH(nullptr)
}
PyObject* t_save(PyObject* o, PyObject* path) {
  std::string p;
  if (!path_arg("save", path, p)) return nullptr;
  DESCENT_PY_TRY trace::save(T(o), p);
  Py_RETURN_NONE;
  DESCENT_PY_CATCH(nullptr)
}
PyObject* t_save_chrome(PyObject* o, PyObject* path) {
  std::string p;
  if (!path_arg("save_chrome", path, p)) return nullptr;
  DESCENT_PY_TRY trace::save_chrome_json(T(o), p);
  Py_RETURN_NONE;
  DESCENT_PY_CATCH(nullptr)
}
PyObject* t_equals(PyObject* o, PyObject* other) {
  if (Py_TYPE(other) != &g_trace_type) Py_RETURN_FALSE;
  return PyBool_FromLong(T(o) == T(other));
}

PyObject* arg_value(const trace::ArgValue& v) {
  if (auto* i = std::get_if<int64_t>(&v)) return PyLong_FromLongLong(*i);
  if (auto* d = std::get_if<double>(&v)) return PyFloat_FromDouble(*d);
  if (auto* b = std::get_if<bool>(&v)) return PyBool_FromLong(*b);
  return py_text(std::get<std::string>(v));
}

// d[key] = value, taking the reference to value; false (Python error set) on failure.
bool set_item(PyObject* d, const std::string& key, PyObject* value) {
  PyObject* k = py_text(key);
  const bool ok = k && value && PyDict_SetItem(d, k, value) == 0;
  Py_XDECREF(k);
  Py_XDECREF(value);
  return ok;
}

// The spans as a list of dicts: id, parent, floor, name, start_ns, end_ns, thread, args, file, line.
PyObject* t_spans(PyObject* o, PyObject*) {
  PyObject* list = PyList_New(0);
  if (!list) return nullptr;
  for (const trace::Span& s : T(o).spans) {
    PyObject* args = PyDict_New();
    bool ok = args != nullptr;
    for (size_t k = 0; ok && k < s.args.size(); ++k) ok = set_item(args, s.args[k].key, arg_value(s.args[k].value));
    PyObject* d = ok ? Py_BuildValue("{s:K,s:K,s:i,s:s,s:N,s:L,s:L,s:I,s:N,s:N,s:I}", "id", (unsigned long long)s.id,
                                     "parent", (unsigned long long)s.parent, "floor", int(s.floor), "floor_name",
                                     trace::floor_name(s.floor), "name", py_text(s.name), "start_ns",
                                     (long long)s.start_ns, "end_ns", (long long)s.end_ns, "thread", s.thread, "args",
                                     args, "file", py_text(s.file), "line", s.line)
                     : nullptr;
    if (!ok) Py_XDECREF(args);  // on success Py_BuildValue's N took it
    if (!d || PyList_Append(list, d) < 0) {
      Py_XDECREF(d);
      Py_DECREF(list);
      return nullptr;
    }
    Py_DECREF(d);
  }
  return list;
}
PyObject* t_span_cost(PyObject* o, void*) { return PyFloat_FromDouble(T(o).span_cost_ns); }
PyObject* t_span_count(PyObject* o, void*) { return PyLong_FromSize_t(T(o).spans.size()); }
PyObject* t_metadata(PyObject* o, void*) {
  PyObject* d = PyDict_New();
  if (!d) return nullptr;
  for (const auto& [k, v] : T(o).metadata) {
    if (!set_item(d, k, py_text(v))) {
      Py_DECREF(d);
      return nullptr;
    }
  }
  return d;
}
PyObject* t_set_metadata(PyObject* o, PyObject* args) {
  const char *k, *v;
  if (!PyArg_ParseTuple(args, "ss", &k, &v)) return nullptr;
  T(o).metadata[k] = v;
  Py_RETURN_NONE;
}

PyMethodDef trace_methods[] = {
    {"format_tree", t_format_tree, METH_NOARGS, "the spans as an indented tree with times and decisions"},
    {"roofline", t_roofline, METH_O, "roofline(span_id): where a kernel span sits on its device's roofline"},
    {"format_tree_repeated", t_format_tree_repeated, METH_O,
     "format_tree_repeated(runs): the last run's tree with warm medians and the cold run, the tracer's cost taken out"},
    {"warm_medians", t_warm_medians, METH_O,
     "warm_medians(runs): per span, None or (warm_ns, cold_ns, warm_samples) for the last run's spans"},
    {"flows", t_flows, METH_NOARGS, "the flows (arrows between spans) as (from_id, to_id, name)"},
    {"chrome_json", t_chrome_json, METH_NOARGS, "Chrome Trace Event JSON (opens in Perfetto)"},
    {"check", t_check, METH_NOARGS, "'' when spans nest properly, else what is wrong"},
    {"save", t_save, METH_O, "writes descent's own trace format (round-trips exactly)"},
    {"save_chrome", t_save_chrome, METH_O, "writes Chrome Trace Event JSON"},
    {"spans", t_spans, METH_NOARGS, "the spans as a list of dicts"},
    {"equals", t_equals, METH_O, "whether two traces are identical"},
    {"set_metadata", t_set_metadata, METH_VARARGS, "set_metadata(key, value)"},
    {nullptr, nullptr, 0, nullptr},
};
PyGetSetDef trace_getset[] = {
    {"span_cost_ns", t_span_cost, nullptr, "the tracer's own cost per span, measured at start", nullptr},
    {"metadata", t_metadata, nullptr, "a copy of the metadata", nullptr},
    {"span_count", t_span_count, nullptr, "how many spans (without making spans()' dicts)", nullptr},
    {nullptr, nullptr, nullptr, nullptr, nullptr},
};

// [SECTION] Recording -----------------------------------------------------------------

PyObject* py_trace_start(PyObject*, PyObject*) {
  DESCENT_PY_TRY trace::start();
  Py_RETURN_NONE;
  DESCENT_PY_CATCH(nullptr)
}
// _trace_stop(since_ns=None, dropped_before=0) and _trace_snapshot(since_ns, dropped_before=0): the Trace of
// one window (Note [Nested recordings]).
PyObject* window_trace(PyObject* args, bool stop) {
  PyObject* since = Py_None;
  unsigned long long dropped_before = 0;
  if (!PyArg_ParseTuple(args, stop ? "|OK" : "O|K", &since, &dropped_before)) return nullptr;
  long long since_ns = LLONG_MIN;
  if (since != Py_None) {
    since_ns = PyLong_AsLongLong(since);
    if (since_ns == -1 && PyErr_Occurred()) return nullptr;
  }
  DESCENT_PY_TRY
  trace::Trace t = stop ? trace::stop(since_ns, dropped_before) : trace::snapshot(since_ns, dropped_before);
  {
    GilRelease release;
    kernels::add_peaks(t);  // the roofs of its devices (Note [A roofline for every kernel span])
  }
  return new_trace_object(std::move(t));
  DESCENT_PY_CATCH(nullptr)
}
PyObject* py_trace_stop(PyObject*, PyObject* args) { return window_trace(args, true); }
PyObject* py_trace_snapshot(PyObject*, PyObject* args) { return window_trace(args, false); }
PyObject* py_trace_enabled(PyObject*, PyObject*) { return PyBool_FromLong(trace::enabled()); }
PyObject* py_trace_now_ns(PyObject*, PyObject*) { return PyLong_FromLongLong(trace::now_ns()); }
PyObject* py_trace_dropped(PyObject*, PyObject*) { return PyLong_FromUnsignedLongLong(trace::dropped_spans()); }
PyObject* py_load_trace(PyObject*, PyObject* path) {
  std::string p;
  if (!path_arg("_load_trace", path, p)) return nullptr;
  DESCENT_PY_TRY return new_trace_object(trace::load_any(p));
  DESCENT_PY_CATCH(nullptr)
}

// _merge_traces([path, ...]) -> Trace: the ranks' traces on one timeline (Note [Merging the ranks' traces]).
PyObject* py_merge_traces(PyObject*, PyObject* paths) {
  DESCENT_PY_TRY
  DESCENT_CHECK(PyList_Check(paths), TypeError, "_merge_traces(): expected a list of paths");
  std::vector<trace::Trace> ranks;
  for (Py_ssize_t k = 0; k < PyList_GET_SIZE(paths); ++k) {
    std::string p;
    if (!path_arg("_merge_traces", PyList_GET_ITEM(paths, k), p)) return nullptr;
    ranks.push_back(trace::load_any(p));
  }
  return new_trace_object(trace::merge_ranks(ranks));
  DESCENT_PY_CATCH(nullptr)
}

// _span_begin(floor, name, site=0) -> index (-1 when tracing is off); _span_end(index).
// `site` is what _register_site returned for the Python code opening the span.
PyObject* py_span_begin(PyObject*, PyObject* args) {
  int floor;
  const char* name;
  unsigned int site = 0;
  if (!PyArg_ParseTuple(args, "is|I", &floor, &name, &site)) return nullptr;
  if (floor < 1 || floor >= trace::kNumFloors) return PyErr_Format(PyExc_ValueError, "no floor %d", floor);
  if (site > trace::site_count()) return PyErr_Format(PyExc_ValueError, "no source site %u", site);
  if (!trace::enabled()) return PyLong_FromLong(-1);
  return PyLong_FromLongLong(trace::begin_span(trace::Floor(floor), trace::intern(name), uint16_t(site)));
}
// _register_site(file, line, function) -> site: a source site for spans opened
// from Python (Note [Span source sites]); `file` relative to the repository.
PyObject* py_register_site(PyObject*, PyObject* args) {
  const char *file, *function;
  unsigned int line;
  if (!PyArg_ParseTuple(args, "sIs:_register_site", &file, &line, &function)) return nullptr;
  DESCENT_PY_TRY return PyLong_FromUnsignedLong(trace::register_site(file, line, function));
  DESCENT_PY_CATCH(nullptr)
}
PyObject* py_span_end(PyObject*, PyObject* arg) {
  const long long i = PyLong_AsLongLong(arg);
  if (i == -1 && PyErr_Occurred()) return nullptr;
  if (i >= 0 && trace::enabled()) trace::end_span(trace::SpanHandle(i));
  Py_RETURN_NONE;
}

// [SECTION] Statements: run as spans, and timed untraced -------------------------

// The globals a statement runs in, with __builtins__ put in as eval() puts it;
// false (TypeError set) when `globals` is not a dict or `code` not a code object.
bool statement_args(const char* fn, PyObject* code, PyObject* globals) {
  if (!PyCode_Check(code) || !PyDict_Check(globals)) {
    PyErr_Format(PyExc_TypeError, "%s(): expected a code object and a dict, got %s and %s", fn, Py_TYPE(code)->tp_name,
                 Py_TYPE(globals)->tp_name);
    return false;
  }
  return PyDict_GetItemString(globals, "__builtins__") != nullptr ||
         PyDict_SetItemString(globals, "__builtins__", PyEval_GetBuiltins()) == 0;
}

// _run_statement(floor, name, code, globals) -> the code's value. Runs a
// compiled statement (descent.tracing.run) inside a span of its own, opened
// and closed here, so that nothing of the Python loop around it is inside:
// the span holds the statement's frame and the profile hook's two events for
// it (Note [Warm medians]). Tracing off: one branch, then the statement.
PyObject* py_run_statement(PyObject*, PyObject* const* args, Py_ssize_t nargs) {
  if (nargs != 4 || !PyUnicode_Check(args[1])) {
    return PyErr_Format(PyExc_TypeError, "_run_statement(floor, name, code, globals): takes 4 arguments, a str name");
  }
  const long floor = PyLong_AsLong(args[0]);
  if (floor == -1 && PyErr_Occurred()) return nullptr;
  if (floor < 1 || floor >= trace::kNumFloors) return PyErr_Format(PyExc_ValueError, "no floor %ld", floor);
  if (!statement_args("_run_statement", args[2], args[3])) return nullptr;
  trace::SpanHandle span = trace::kNoSpan;
  if (trace::enabled()) {
    const char* name = PyUnicode_AsUTF8(args[1]);
    if (!name) return nullptr;
    span = trace::begin_span(trace::Floor(floor), trace::intern(name));
  }
  PyObject* value = PyEval_EvalCode(args[2], args[3], args[3]);
  if (span >= 0) trace::end_span(span);  // a stale handle (a stop in the statement) matches nothing
  return value;
}

// _time_statement(code, globals, runs) -> [ns, ...]: the statement run
// `runs` times untraced, each run timed alone on the tracer's clock as a
// statement's span times it (from before the statement's frame to after),
// less two back-to-back clock reads; each value is released after the next
// run, as run() holds a statement's value. What a statement costs without
// the tracer (Note [Warm medians]).
PyObject* py_time_statement(PyObject*, PyObject* const* args, Py_ssize_t nargs) {
  if (nargs != 3) return PyErr_Format(PyExc_TypeError, "_time_statement(code, globals, runs): takes 3 arguments");
  const long runs = PyLong_AsLong(args[2]);
  if (runs == -1 && PyErr_Occurred()) return nullptr;
  if (runs < 1) return PyErr_Format(PyExc_ValueError, "runs must be at least 1, got %ld", runs);
  if (!statement_args("_time_statement", args[0], args[1])) return nullptr;
  std::vector<uint64_t> ticks(static_cast<size_t>(runs)), empty(static_cast<size_t>(runs));
  const int64_t ns0 = trace::now_ns();
  const uint64_t ticks0 = trace::now_ticks();
  PyObject* held = nullptr;
  for (long i = 0; i < runs; ++i) {
    const uint64_t e0 = trace::now_ticks();
    const uint64_t e1 = trace::now_ticks();
    empty[i] = e1 - e0;
    const uint64_t t0 = trace::now_ticks();
    PyObject* value = PyEval_EvalCode(args[0], args[1], args[1]);
    const uint64_t t1 = trace::now_ticks();
    ticks[i] = t1 - t0;
    Py_XDECREF(held);
    held = value;
    if (!value) return nullptr;
  }
  Py_XDECREF(held);
  const uint64_t ticks1 = trace::now_ticks();
  const int64_t ns1 = trace::now_ns();
  const double ns_per_tick =
      ticks1 > ticks0 ? static_cast<double>(ns1 - ns0) / static_cast<double>(ticks1 - ticks0) : 1.0;
  std::vector<uint64_t> sorted = empty;
  std::nth_element(sorted.begin(), sorted.begin() + runs / 2, sorted.end());
  const double clock_ns = static_cast<double>(sorted[runs / 2]) * ns_per_tick;
  return py_list(ticks.size(), [&](size_t i) {
    return PyFloat_FromDouble(std::max(0.0, static_cast<double>(ticks[i]) * ns_per_tick - clock_ns));
  });
}

// [SECTION] The profile hook: floor-1 spans for the descent package's functions ----

std::string g_package_dir;                                                // functions in files under it are floor 1 ...
std::string g_skip_file;                                                  // ... except the tracing module's own
thread_local std::vector<trace::SpanHandle> t_open;                       // span per Python frame (-1: not ours)
constexpr std::string_view kPackageSourceDir = "floors/python/descent/";  // where build/python/descent is copied from

// A code object's span: its qualname (nullptr: not ours) and its source site.
struct CodeSpan {
  const char* name = nullptr;
  uint16_t site = 0;
};
std::unordered_map<PyCodeObject*, CodeSpan> g_code_spans;  // guarded by the GIL

// The site of a package function: its file as it lies in the repository
// (floors/python/descent/_tensor.py, not the copy under build/python) and the
// line of its `def` (Note [Span source sites]).
uint16_t package_site(const char* file, PyCodeObject* code, const char* qualname) {
  const std::string relative = std::string(kPackageSourceDir) + (file + g_package_dir.size());
  return trace::register_site(relative, static_cast<uint32_t>(std::max(code->co_firstlineno, 0)), qualname);
}

int profile(PyObject*, PyFrameObject* frame, int what, PyObject*) {
  if (what == PyTrace_CALL) {
    PyCodeObject* code = PyFrame_GetCode(frame);
    trace::SpanHandle idx = trace::kNoSpan;
    auto it = g_code_spans.find(code);
    if (it == g_code_spans.end()) {
      const char* file = PyUnicode_AsUTF8(code->co_filename);
      if (!file) PyErr_Clear();  // a file name that is not UTF-8 is not ours
      CodeSpan span;
      if (file && std::strncmp(file, g_package_dir.c_str(), g_package_dir.size()) == 0 && g_skip_file != file) {
        PyObject* q = PyObject_GetAttrString(reinterpret_cast<PyObject*>(code), "co_qualname");
        if (!q) PyErr_Clear();
        const char* qs = q ? PyUnicode_AsUTF8(q) : nullptr;
        if (q && !qs) PyErr_Clear();
        // Comprehensions and lambdas (<genexpr>, <lambda>) are part of their function's span.
        if (qs && !std::strchr(qs, '<')) span = {trace::intern(qs), package_site(file, code, qs)};
        Py_XDECREF(q);
      }
      it = g_code_spans.emplace(code, span).first;
    }
    if (it->second.name && trace::enabled()) {
      idx = trace::begin_span(trace::Floor::Python, it->second.name, it->second.site);
    }
    Py_DECREF(code);
    t_open.push_back(idx);
  } else if (what == PyTrace_RETURN) {
    if (t_open.empty()) return 0;  // a frame entered before the hook was set
    trace::SpanHandle idx = t_open.back();
    t_open.pop_back();
    if (idx >= 0 && trace::enabled()) trace::end_span(idx);
  }
  return 0;
}

PyObject* py_set_profile_hook(PyObject*, PyObject* args) {
  int on;
  const char *dir = "", *skip = "";
  if (!PyArg_ParseTuple(args, "p|ss", &on, &dir, &skip)) return nullptr;
  if (on && (g_package_dir != dir || g_skip_file != skip)) {  // shared by every thread's hook: only ever set
    g_package_dir = dir;
    g_skip_file = skip;
    g_code_spans.clear();
  }
  t_open.clear();
  PyEval_SetProfile(on ? profile : nullptr, nullptr);  // this thread's hook only
  Py_RETURN_NONE;
}

PyMethodDef trace_functions[] = {
    {"_trace_start", py_trace_start, METH_NOARGS, "clears the buffers, calibrates, and switches tracing on"},
    {"_trace_stop", py_trace_stop, METH_VARARGS,
     "_trace_stop(since_ns=None, dropped_before=0): switches tracing off and returns the Trace (of a window)"},
    {"_trace_enabled", py_trace_enabled, METH_NOARGS, "whether tracing is on"},
    {"_trace_now_ns", py_trace_now_ns, METH_NOARGS, "now on the clock of the trace's times, in ns"},
    {"_trace_snapshot", py_trace_snapshot, METH_VARARGS,
     "_trace_snapshot(since_ns, dropped_before=0): the running recording's spans begun since then "
     "(Note [Nested recordings])"},
    {"_trace_dropped", py_trace_dropped, METH_NOARGS, "spans the running recording has dropped so far"},
    {"_load_trace", py_load_trace, METH_O,
     "reads a trace file: descent's format or Chrome JSON (PyTorch profiler too)"},
    {"_merge_traces", py_merge_traces, METH_O,
     "_merge_traces([path, ...]): the ranks' traces on one timeline, a row group per rank"},
    {"_span_begin", py_span_begin, METH_VARARGS, "_span_begin(floor, name, site=0) -> index"},
    {"_register_site", py_register_site, METH_VARARGS,
     "_register_site(file, line, function) -> a source site for _span_begin"},
    {"_span_end", py_span_end, METH_O, "_span_end(index)"},
    {"_set_profile_hook", py_set_profile_hook, METH_VARARGS, "_set_profile_hook(on, package_dir, skip_file)"},
    {"_run_statement", reinterpret_cast<PyCFunction>(reinterpret_cast<void (*)()>(py_run_statement)), METH_FASTCALL,
     "_run_statement(floor, name, code, globals) -> value: the compiled statement run in a span of its own"},
    {"_time_statement", reinterpret_cast<PyCFunction>(reinterpret_cast<void (*)()>(py_time_statement)), METH_FASTCALL,
     "_time_statement(code, globals, runs) -> [ns]: each run of the statement timed alone, untraced"},
    {nullptr, nullptr, 0, nullptr},
};

}  // namespace

const trace::Trace* trace_of(PyObject* o) { return Py_TYPE(o) == &g_trace_type ? &T(o) : nullptr; }

bool init_trace_type(PyObject* m) {
  g_trace_type.tp_basicsize = sizeof(TraceObject);
  g_trace_type.tp_flags = Py_TPFLAGS_DEFAULT;
  g_trace_type.tp_dealloc = trace_dealloc;
  g_trace_type.tp_methods = trace_methods;
  g_trace_type.tp_getset = trace_getset;
  g_trace_type.tp_doc = "A finished recording: spans from every floor (tracer/trace.h).";
  if (PyType_Ready(&g_trace_type) < 0) return false;
  Py_INCREF(&g_trace_type);
  if (PyModule_AddObject(m, "Trace", reinterpret_cast<PyObject*>(&g_trace_type)) < 0) return false;
  return PyModule_AddFunctions(m, trace_functions) == 0;
}

}  // namespace descent::binding
