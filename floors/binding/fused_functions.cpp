// descent._C's functions of descent.compile's fused kernels on a device
// (descent/_compile/device_kernel.py calls them): on sim:0 the fusion IR
// parsed into a program and launched, interpreted, on the current stream
// (Note [An interpreted fused kernel on sim:0],
// floors/kernels/fused/sim_fused.h). A program is held by a handle, an
// index into this file's table, for the life of the process.
#include <mutex>
#include <string>
#include <vector>

#include "floors/binding/binding.h"
#include "floors/kernels/fused/sim_fused.h"

namespace descent::binding {

namespace {

namespace device = kernels::device;

std::mutex g_programs_mutex;
std::vector<std::shared_ptr<const device::FusedProgram>> g_programs;

std::shared_ptr<const device::FusedProgram> program_of(long long handle) {
  std::lock_guard<std::mutex> lock(g_programs_mutex);
  DESCENT_CHECK(handle >= 0 && handle < (long long)g_programs.size(), ValueError, "no fused program has handle ",
                handle);
  return g_programs[size_t(handle)];
}

std::vector<int64_t> ints_of(PyObject* seq, const char* what) {
  PyRef fast(PySequence_Fast(seq, what));
  if (!fast.p) throw PythonError();
  std::vector<int64_t> out;
  for (Py_ssize_t i = 0; i < PySequence_Fast_GET_SIZE(fast.p); ++i) {
    const long long v = PyLong_AsLongLong(PySequence_Fast_GET_ITEM(fast.p, i));
    if (v == -1 && PyErr_Occurred()) throw PythonError();
    out.push_back(v);
  }
  return out;
}

// _fused_sim_load(ir, shape, dtype, name) -> handle: the IR parsed into a program.
PyObject* py_fused_sim_load(PyObject*, PyObject* args) {
  const char *ir = nullptr, *dtype = nullptr, *name = nullptr;
  PyObject* shape = nullptr;
  if (!PyArg_ParseTuple(args, "sOss:_fused_sim_load", &ir, &shape, &dtype, &name)) return nullptr;
  DESCENT_PY_TRY
  auto p = device::parse_fused(ir, ints_of(shape, "_fused_sim_load: shape must be a sequence of ints"), dtype, name);
  std::lock_guard<std::mutex> lock(g_programs_mutex);
  g_programs.push_back(std::move(p));
  return PyLong_FromSize_t(g_programs.size() - 1);
  DESCENT_PY_CATCH(nullptr)
}

// _fused_sim_ir(handle) -> str: the program printed back as IR.
PyObject* py_fused_sim_ir(PyObject*, PyObject* o) {
  DESCENT_PY_TRY
  const long long h = PyLong_AsLongLong(o);
  if (h == -1 && PyErr_Occurred()) return nullptr;
  return PyUnicode_FromString(device::fused_ir(*program_of(h)).c_str());
  DESCENT_PY_CATCH(nullptr)
}

// _fused_sim_launch(handle, pointers, device_index): one launch on sim:<index>'s current stream.
PyObject* py_fused_sim_launch(PyObject*, PyObject* args) {
  long long h = 0;
  PyObject* ptrs = nullptr;
  int index = 0;
  if (!PyArg_ParseTuple(args, "LOi:_fused_sim_launch", &h, &ptrs, &index)) return nullptr;
  DESCENT_PY_TRY
  const std::vector<int64_t> raw = ints_of(ptrs, "_fused_sim_launch: pointers must be a sequence of ints");
  std::vector<void*> p(raw.size());
  for (size_t i = 0; i < raw.size(); ++i) p[i] = reinterpret_cast<void*>(uintptr_t(raw[i]));
  device::launch_fused(program_of(h), Device{DeviceType::Sim, index}, p);
  Py_RETURN_NONE;
  DESCENT_PY_CATCH(nullptr)
}

PyMethodDef fused_functions[] = {
    {"_fused_sim_load", py_fused_sim_load, METH_VARARGS,
     "_fused_sim_load(ir, shape, dtype, name): a fused kernel's IR as a program for sim:0; its handle"},
    {"_fused_sim_ir", py_fused_sim_ir, METH_O, "_fused_sim_ir(handle): the program printed back as IR"},
    {"_fused_sim_launch", py_fused_sim_launch, METH_VARARGS,
     "_fused_sim_launch(handle, pointers, index): the program launched on sim:<index>'s current stream"},
    {nullptr, nullptr, 0, nullptr},
};

}  // namespace

bool init_fused(PyObject* m) { return PyModule_AddFunctions(m, fused_functions) == 0; }

}  // namespace descent::binding
