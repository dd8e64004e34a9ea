// descent._C's functions of the matmul ladder (Note [The matmul ladder],
// floors/kernels/matmul_ladder.h): which rungs a device runs, which one its
// products use, which one the last product ran, and the verifier over them.
#include <string>

#include "floors/binding/binding.h"
#include "floors/kernels/matmul_ladder.h"
#include "floors/kernels/verifier.h"

namespace descent::binding {

namespace {

namespace device = kernels::device;

Device device_of(PyObject* o, const char* fn) {
  DESCENT_CHECK(PyUnicode_Check(o), TypeError, fn, "(): expected a device name ('sim:0', 'cuda:0'), not ",
                Py_TYPE(o)->tp_name);
  return Device::parse(utf8_text(o));
}

// _matmul_rungs(device): the rungs the device runs, lowest first.
PyObject* py_matmul_rungs(PyObject*, PyObject* o) {
  DESCENT_PY_TRY
  const std::vector<std::string> names = device::matmul_rungs(device_of(o, "_matmul_rungs"));
  return py_list(names.size(), [&](size_t i) { return PyUnicode_FromString(names[i].c_str()); });
  DESCENT_PY_CATCH(nullptr)
}

// _set_matmul_rung(device, name): 'auto' or one of _matmul_rungs(device).
PyObject* py_set_matmul_rung(PyObject*, PyObject* args) {
  PyObject *dev = nullptr, *name = nullptr;
  if (!PyArg_ParseTuple(args, "OU:_set_matmul_rung", &dev, &name)) return nullptr;
  DESCENT_PY_TRY
  device::set_matmul_rung(device_of(dev, "_set_matmul_rung"), utf8_text(name));
  Py_RETURN_NONE;
  DESCENT_PY_CATCH(nullptr)
}

// _matmul_rung(device): the rung asked for ('auto' unless set).
PyObject* py_matmul_rung(PyObject*, PyObject* o) {
  DESCENT_PY_TRY
  return PyUnicode_FromString(device::rung_name(device::requested_matmul_rung(device_of(o, "_matmul_rung"))));
  DESCENT_PY_CATCH(nullptr)
}

// _last_matmul_run(): what this thread's last device product ran.
PyObject* py_last_matmul_run(PyObject*, PyObject*) {
  const device::RungRun& r = device::last_matmul_run();
  return Py_BuildValue("{s:s,s:s,s:s}", "rung", device::rung_name(r.rung), "kernel", r.kernel, "fallback",
                       r.fallback.c_str());
}

// _verify_matmul_rungs(seed, device): the verdicts of every rung (verifier.h), as _verify's dicts.
PyObject* py_verify_matmul_rungs(PyObject*, PyObject* args) {
  unsigned long long seed = 1;
  const char* name = nullptr;
  if (!PyArg_ParseTuple(args, "Ks:_verify_matmul_rungs", &seed, &name)) return nullptr;
  DESCENT_PY_TRY
  const Device d = Device::parse(name);
  std::vector<kernels::Verdict> vs;
  {
    GilRelease release;
    vs = kernels::verify_matmul_rungs(seed, d);
  }
  return py_list(vs.size(), [&](size_t i) {
    const kernels::Verdict& v = vs[i];
    return Py_BuildValue("{s:s,s:s,s:s,s:s,s:O,s:d,s:d,s:s}", "op", v.op.c_str(), "dtype", dtype_name(v.dtype),
                         "claim", v.claim.c_str(), "variants", v.variants.c_str(), "passed",
                         v.passed ? Py_True : Py_False, "max_abs_diff", v.max_abs_diff, "bound", v.bound, "detail",
                         v.detail.c_str());
  });
  DESCENT_PY_CATCH(nullptr)
}

PyMethodDef ladder_functions[] = {
    {"_matmul_rungs", py_matmul_rungs, METH_O, "_matmul_rungs(device): the matmul ladder's rungs there, lowest first"},
    {"_set_matmul_rung", py_set_matmul_rung, METH_VARARGS, "_set_matmul_rung(device, name): a rung, or 'auto'"},
    {"_matmul_rung", py_matmul_rung, METH_O, "_matmul_rung(device): the rung asked for there"},
    {"_last_matmul_run", py_last_matmul_run, METH_NOARGS, "the rung, kernel and fallback of the last device product"},
    {"_verify_matmul_rungs", py_verify_matmul_rungs, METH_VARARGS,
     "_verify_matmul_rungs(seed, device): every rung against the CPU's reference"},
    {nullptr, nullptr, 0, nullptr},
};

}  // namespace

bool init_matmul_ladder(PyObject* m) { return PyModule_AddFunctions(m, ladder_functions) == 0; }

}  // namespace descent::binding
