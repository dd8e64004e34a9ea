// descent._C's functions of the matmul ladders, one set for every device:
// the CPU's (Note [Matmul rungs], floors/kernels/cpu/matmul_rungs.h) and a
// device's (Note [The matmul ladder], floors/kernels/ladder/matmul_ladder.h):
// which rungs it runs, which one its products use, which one the last
// product ran, and the verifier over them.
#include <string>

#include "floors/binding/binding.h"
#include "floors/kernels/ladder/matmul_ladder.h"
#include "floors/kernels/cpu/matmul_rungs.h"
#include "floors/kernels/verify/verifier.h"

namespace descent::binding {

namespace {

namespace device = kernels::device;

Device device_of(PyObject* o, const char* fn) {
  DESCENT_CHECK(PyUnicode_Check(o), TypeError, fn, "(): expected a device name ('cpu', 'sim:0', 'cuda:0'), not ",
                Py_TYPE(o)->tp_name);
  return Device::parse(utf8_text(o));
}

// _matmul_rungs(device): the rungs the device runs, lowest first.
PyObject* py_matmul_rungs(PyObject*, PyObject* o) {
  DESCENT_PY_TRY
  const Device d = device_of(o, "_matmul_rungs");
  const std::vector<std::string> names =
      d.type == DeviceType::CPU ? kernels::matmul_rungs(DeviceType::CPU) : device::matmul_rungs(d);
  return py_list(names.size(), [&](size_t i) { return PyUnicode_FromString(names[i].c_str()); });
  DESCENT_PY_CATCH(nullptr)
}

// _set_matmul_rung(device, name): 'auto' or one of _matmul_rungs(device).
PyObject* py_set_matmul_rung(PyObject*, PyObject* args) {
  PyObject *dev = nullptr, *name = nullptr;
  if (!PyArg_ParseTuple(args, "OU:_set_matmul_rung", &dev, &name)) return nullptr;
  DESCENT_PY_TRY
  const Device d = device_of(dev, "_set_matmul_rung");
  if (d.type == DeviceType::CPU)
    kernels::set_matmul_rung(DeviceType::CPU, utf8_text(name));
  else
    device::set_matmul_rung(d, utf8_text(name));
  Py_RETURN_NONE;
  DESCENT_PY_CATCH(nullptr)
}

// _matmul_rung(device): the rung asked for ('auto' unless set).
PyObject* py_matmul_rung(PyObject*, PyObject* o) {
  DESCENT_PY_TRY
  const Device d = device_of(o, "_matmul_rung");
  if (d.type == DeviceType::CPU) return PyUnicode_FromString(kernels::matmul_rung(DeviceType::CPU));
  return PyUnicode_FromString(device::rung_name(device::requested_matmul_rung(d)));
  DESCENT_PY_CATCH(nullptr)
}

// _last_matmul_run(device): what this thread's last product there ran (on
// the CPU a rung and no kernel name or fallback: a rung that cannot take a
// call hands it to the rung below, and says so by naming that one).
PyObject* py_last_matmul_run(PyObject*, PyObject* o) {
  DESCENT_PY_TRY
  if (device_of(o, "_last_matmul_run").type == DeviceType::CPU)
    return Py_BuildValue("{s:s,s:s,s:s}", "rung", kernels::last_matmul_rung(), "kernel", "", "fallback", "");
  const device::RungRun& r = device::last_matmul_run();
  return Py_BuildValue("{s:s,s:s,s:s}", "rung", device::rung_name(r.rung), "kernel", r.kernel, "fallback",
                       r.fallback.c_str());
  DESCENT_PY_CATCH(nullptr)
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
  return verdicts_object(vs);
  DESCENT_PY_CATCH(nullptr)
}

// _set_cublas_allow_tf32(bool) and _get_cublas_allow_tf32(): PyTorch's
// names for whether a float32 product on CUDA may run in TF32 (Note [TF32
// matmul], floors/kernels/ladder/cuda_matmul_4_wmma.cu).
PyObject* py_set_allow_tf32(PyObject*, PyObject* o) {
  if (!PyBool_Check(o))
    return PyErr_Format(PyExc_RuntimeError, "set_allow_tf32_cublas expects a bool, but got %s", Py_TYPE(o)->tp_name);
  device::set_allow_tf32(o == Py_True);
  Py_RETURN_NONE;
}
PyObject* py_get_allow_tf32(PyObject*, PyObject*) { return PyBool_FromLong(device::allow_tf32()); }

PyMethodDef ladder_functions[] = {
    {"_set_cublas_allow_tf32", py_set_allow_tf32, METH_O, "_set_cublas_allow_tf32(bool): float32 products in TF32"},
    {"_get_cublas_allow_tf32", py_get_allow_tf32, METH_NOARGS, "whether float32 products on CUDA may run in TF32"},
    {"_matmul_rungs", py_matmul_rungs, METH_O, "_matmul_rungs(device): the matmul ladder's rungs there, lowest first"},
    {"_set_matmul_rung", py_set_matmul_rung, METH_VARARGS, "_set_matmul_rung(device, name): a rung, or 'auto'"},
    {"_matmul_rung", py_matmul_rung, METH_O, "_matmul_rung(device): the rung asked for there"},
    {"_last_matmul_run", py_last_matmul_run, METH_O,
     "_last_matmul_run(device): the rung, kernel and fallback of this thread's last product there"},
    {"_verify_matmul_rungs", py_verify_matmul_rungs, METH_VARARGS,
     "_verify_matmul_rungs(seed, device): every rung against the CPU's reference"},
    {nullptr, nullptr, 0, nullptr},
};

}  // namespace

bool init_matmul_ladder(PyObject* m) { return PyModule_AddFunctions(m, ladder_functions) == 0; }

}  // namespace descent::binding
