// Floor 2: the runtime's settings from Python: the random generator's seed,
// which kernel variant runs (reference or optimized), the vector unit of the
// optimized matmul, and the number of intra-op threads.
#include <climits>
#include <cstring>
#include <string>
#include <vector>

#include "floors/binding/binding.h"
#include "floors/kernels/kernels.h"
#include "floors/kernels/cpu/parallel.h"
#include "floors/kernels/device/random.h"

namespace descent::binding {

namespace {

// Seeds in [-2**63, 2**64 - 1], as PyTorch takes them (a negative one is its
// two's complement); anything else is refused, not wrapped.
PyObject* py_manual_seed(PyObject*, PyObject* arg) {
  if (PyBool_Check(arg) || !PyIndex_Check(arg))
    return PyErr_Format(PyExc_TypeError, "manual_seed(): seed must be an int, not %s", Py_TYPE(arg)->tp_name);
  PyObject* index = PyNumber_Index(arg);
  if (!index) return nullptr;
  int overflow = 0;
  unsigned long long seed = static_cast<unsigned long long>(PyLong_AsLongLongAndOverflow(index, &overflow));
  if (overflow > 0) seed = PyLong_AsUnsignedLongLong(index);
  Py_DECREF(index);
  if (overflow < 0 || PyErr_Occurred()) {
    PyErr_Clear();
    return PyErr_Format(PyExc_RuntimeError,
                        "manual_seed(): Overflow when unpacking long: a seed must be in [-2**63, 2**64 - 1]");
  }
  kernels::manual_seed(seed);
  Py_RETURN_NONE;
}

PyObject* py_set_variant(PyObject*, PyObject* arg) {
  if (!PyUnicode_Check(arg))
    return PyErr_Format(PyExc_TypeError, "set_kernel_variant(): expected 'auto', 'reference' or 'optimized', not %s",
                        Py_TYPE(arg)->tp_name);
  const std::string text = utf8_text(arg);
  const char* v = text.c_str();
  using kernels::Variant;
  if (!std::strcmp(v, "auto"))
    kernels::requested_variant() = Variant::Auto;
  else if (!std::strcmp(v, "reference"))
    kernels::requested_variant() = Variant::Reference;
  else if (!std::strcmp(v, "optimized"))
    kernels::requested_variant() = Variant::Optimized;
  else
    return PyErr_Format(PyExc_ValueError, "kernel variant must be 'auto', 'reference' or 'optimized', not '%s'", v);
  Py_RETURN_NONE;
}
PyObject* py_last_variant(PyObject*, PyObject*) { return PyUnicode_FromString(kernels::last_variant()); }

// descent.set_num_threads(n) / get_num_threads(): PyTorch's names for the
// intra-op thread count (Note [Intra-op parallelism]).
PyObject* py_set_num_threads(PyObject*, PyObject* arg) {
  if (!PyLong_Check(arg) || PyBool_Check(arg))
    return PyErr_Format(PyExc_TypeError, "set_num_threads(): argument 'n' must be int, not %s", Py_TYPE(arg)->tp_name);
  int overflow = 0;
  long long n = PyLong_AsLongLongAndOverflow(arg, &overflow);
  if (n == -1 && PyErr_Occurred()) return nullptr;
  if (overflow || n < INT_MIN || n > INT_MAX)  // the C++ check below names every other bad value
    return PyErr_Format(PyExc_ValueError, "set_num_threads(): expected a number of threads from 1 to %d, but got %S",
                        kernels::kMaxThreads, arg);
  DESCENT_PY_TRY
  kernels::set_num_threads(int(n));
  Py_RETURN_NONE;
  DESCENT_PY_CATCH(nullptr)
}
PyObject* py_get_num_threads(PyObject*, PyObject*) { return PyLong_FromLong(kernels::get_num_threads()); }

PyObject* py_matmul_isas(PyObject*, PyObject*) {
  DESCENT_PY_TRY
  const std::vector<std::string> names = kernels::matmul_isas();
  return py_list(names.size(), [&](size_t i) { return PyUnicode_FromString(names[i].c_str()); });
  DESCENT_PY_CATCH(nullptr)
}
PyObject* py_matmul_isa(PyObject*, PyObject*) { return PyUnicode_FromString(kernels::matmul_isa()); }
PyObject* py_set_matmul_isa(PyObject*, PyObject* arg) {
  if (!PyUnicode_Check(arg))
    return PyErr_Format(PyExc_TypeError, "_set_matmul_isa(): expected a str, not %s", Py_TYPE(arg)->tp_name);
  DESCENT_PY_TRY
  kernels::set_matmul_isa(utf8_text(arg));
  Py_RETURN_NONE;
  DESCENT_PY_CATCH(nullptr)
}

}  // namespace

// Note [The default device]
// ~~~~~~~~~~~~~~~~~~~~~~~~~
// torch.set_default_device("cuda") makes a factory called without a device
// (torch.zeros(3), torch.linspace(...), torch.tensor(data)) make its tensor
// there; PyTorch's tutorials start with it. PyTorch does it in Python, with
// a TorchFunctionMode (torch/utils/_device.py, DeviceContext) that writes
// device= into the call's keywords before the binding parses them; it is
// thread-local. descent fills the same argument one step later, in the
// binding, once the call has been parsed against its schema (op_function,
// module.cpp): the trace shows the factory's device argument as PyTorch's
// op receives it. Only a factory (an op whose last argument is `Device?
// device`) reads it; an op on tensors stays on its tensors' device.
std::optional<Device>& default_device() {
  static thread_local std::optional<Device> d;
  return d;
}

PyObject* py_set_default_device(PyObject*, PyObject* arg) {
  DESCENT_PY_TRY
  if (arg == Py_None) {
    default_device().reset();
  } else {
    DESCENT_CHECK(PyUnicode_Check(arg) || Py_TYPE(arg) == &g_device_type, TypeError,
                  "set_default_device(): expected a device, a str or None, not ", Py_TYPE(arg)->tp_name);
    const Device d = PyUnicode_Check(arg) ? Device::parse(utf8_text(arg)) : device_of(arg);
    if (d.type == DeviceType::CPU)
      default_device().reset();
    else
      default_device() = d;
  }
  Py_RETURN_NONE;
  DESCENT_PY_CATCH(nullptr)
}
PyObject* py_get_default_device(PyObject*, PyObject*) { return device_object(default_device().value_or(Device{})); }

PyMethodDef g_settings_functions[] = {
    {"set_default_device", py_set_default_device, METH_O,
     "set_default_device(device): where factories called without a device make their tensors (None: the CPU)"},
    {"get_default_device", py_get_default_device, METH_NOARGS, "the device factories use when given none"},
    {"manual_seed", py_manual_seed, METH_O,
     "seeds the CPU's generator (PyTorch's mt19937 stream) and the devices' counter-based ones"},
    {"_set_variant", py_set_variant, METH_O, "'auto', 'reference' or 'optimized' kernels for this thread"},
    {"_last_variant", py_last_variant, METH_NOARGS, "which loop the last kernel on this thread ran"},
    {"_matmul_isas", py_matmul_isas, METH_NOARGS,
     "the vector units the optimized matmul can use here, narrowest first"},
    {"_matmul_isa", py_matmul_isa, METH_NOARGS, "the vector unit the optimized matmul uses"},
    {"_set_matmul_isa", py_set_matmul_isa, METH_O, "_set_matmul_isa(name): one of _matmul_isas()"},
    {"set_num_threads", py_set_num_threads, METH_O, "set_num_threads(n): threads a large CPU kernel uses, >= 1"},
    {"get_num_threads", py_get_num_threads, METH_NOARGS,
     "threads a large CPU kernel uses (DESCENT_NUM_THREADS, else all)"},
    {nullptr, nullptr, 0, nullptr},
};

}  // namespace descent::binding
