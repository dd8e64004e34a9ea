// The embedded interpreter. See python_bridge.h.
#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include "ui/python_bridge.h"

#include <cstdlib>

#include "floors/binding/binding.h"

extern "C" PyObject* PyInit__C();

namespace descent::ui {

namespace {

PyObject* g_app_module = nullptr;  // descent._app

// The current Python error as text, cleared.
std::string take_python_error() {
  PyObject *type, *value, *tb;
  PyErr_Fetch(&type, &value, &tb);
  PyErr_NormalizeException(&type, &value, &tb);
  std::string text = "unknown Python error";
  if (value) {
    PyObject* s = PyObject_Str(value);
    if (s) {
      text = std::string(type ? reinterpret_cast<PyTypeObject*>(type)->tp_name : "Error") + ": " +
             binding::utf8_text(s);
      Py_DECREF(s);
    }
  }
  PyErr_Clear();
  Py_XDECREF(type);
  Py_XDECREF(value);
  Py_XDECREF(tb);
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

}  // namespace

bool python_start(std::string& error) {
  PyConfig config;
  PyConfig_InitPythonConfig(&config);
  config.install_signal_handlers = 0;  // Ctrl+C belongs to the app's window, not to Python
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
  g_app_module = PyImport_ImportModule("descent._app");
  if (!g_app_module) {
    error = "cannot import the descent package from " + path + ": " + take_python_error();
    return false;
  }
  return true;
}

void python_stop() {
  if (!Py_IsInitialized()) return;
  Py_CLEAR(g_app_module);
  Py_FinalizeEx();
}

Loaded python_run(const std::string& code, int repeat) {
  Loaded l;
  l.label = code;
  PyObject* r = PyObject_CallMethod(g_app_module, "run", "s#i", code.data(), (Py_ssize_t)code.size(), repeat);
  if (!r || !PyDict_Check(r)) {
    l.error = r ? "descent._app.run returned something other than a dict" : take_python_error();
    Py_XDECREF(r);
    l.trace = std::make_shared<trace::Trace>();
    return l;
  }
  l.output = str_item(r, "output");
  l.error = str_item(r, "error");
  l.before = memory_item(r, "before");
  l.after = memory_item(r, "after");
  l.devices = devices_item(r);
  PyObject* t = PyDict_GetItemString(r, "trace");  // borrowed
  if (const trace::Trace* tr = t ? binding::trace_of(t) : nullptr) {
    // Shares the Trace inside the Python object: the object lives as long as
    // the app shows it (Py_DECREF with the GIL, which the main thread holds).
    Py_INCREF(t);
    l.trace = std::shared_ptr<const trace::Trace>(tr, [t](const trace::Trace*) { Py_DECREF(t); });
  } else {
    l.trace = std::make_shared<trace::Trace>();
  }
  Py_DECREF(r);
  return l;
}

}  // namespace descent::ui
