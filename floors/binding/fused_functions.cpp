// descent._C's functions of descent.compile's fused kernels on a device
// (descent/_compile/device_kernel.py calls them): on sim:0 the fusion IR
// parsed into a program and launched, interpreted, on the current stream
// (Note [An interpreted fused kernel on sim:0],
// floors/kernels/fused/sim_fused.h); on cuda generated CUDA C++ compiled by
// NVRTC (Note [A fused kernel on cuda through NVRTC],
// floors/kernels/fused/cuda_fused.h). A program or kernel is held by a
// handle, an index into this file's tables, for the life of the process.
#include <mutex>
#include <string>
#include <vector>

#include "floors/binding/binding.h"
#include "floors/kernels/fused/cuda_fused.h"
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

std::vector<std::shared_ptr<const device::CudaFused>> g_cuda_kernels;  // under g_programs_mutex too

std::shared_ptr<const device::CudaFused> cuda_kernel_of(long long handle) {
  std::lock_guard<std::mutex> lock(g_programs_mutex);
  DESCENT_CHECK(handle >= 0 && handle < (long long)g_cuda_kernels.size(), ValueError,
                "no fused cuda kernel has handle ", handle);
  return g_cuda_kernels[size_t(handle)];
}

// _fused_cuda_built() -> bool: whether this build has NVRTC.
PyObject* py_fused_cuda_built(PyObject*, PyObject*) { return PyBool_FromLong(device::cuda_fused_built()); }

// _fused_nvrtc_compile(source, arch) -> int: the cubin's size; NVRTC alone, no GPU needed.
PyObject* py_fused_nvrtc_compile(PyObject*, PyObject* args) {
  const char* source = nullptr;
  int arch = 0;
  if (!PyArg_ParseTuple(args, "si:_fused_nvrtc_compile", &source, &arch)) return nullptr;
  DESCENT_PY_TRY
  size_t n = 0;
  {
    GilRelease nogil;
    n = device::nvrtc_compile_only(source, arch);
  }
  return PyLong_FromSize_t(n);
  DESCENT_PY_CATCH(nullptr)
}

// _fused_cuda_load(source, name, arity, device_index) -> (handle, seconds): compiled by NVRTC and loaded.
PyObject* py_fused_cuda_load(PyObject*, PyObject* args) {
  const char *source = nullptr, *name = nullptr;
  int arity = 0, index = 0;
  if (!PyArg_ParseTuple(args, "ssii:_fused_cuda_load", &source, &name, &arity, &index)) return nullptr;
  DESCENT_PY_TRY
  std::shared_ptr<const device::CudaFused> k;
  {
    GilRelease nogil;
    k = device::load_cuda_fused(source, name, arity, Device{DeviceType::CUDA, index});
  }
  const double seconds = device::cuda_fused_compile_s(*k);
  std::lock_guard<std::mutex> lock(g_programs_mutex);
  g_cuda_kernels.push_back(std::move(k));
  return Py_BuildValue("(nd)", Py_ssize_t(g_cuda_kernels.size() - 1), seconds);
  DESCENT_PY_CATCH(nullptr)
}

// _fused_cuda_launch(handle, pointers, numel, device_index): one launch on cuda:<index>'s current stream.
PyObject* py_fused_cuda_launch(PyObject*, PyObject* args) {
  long long h = 0, numel = 0;
  PyObject* ptrs = nullptr;
  int index = 0;
  if (!PyArg_ParseTuple(args, "LOLi:_fused_cuda_launch", &h, &ptrs, &numel, &index)) return nullptr;
  DESCENT_PY_TRY
  const std::vector<int64_t> raw = ints_of(ptrs, "_fused_cuda_launch: pointers must be a sequence of ints");
  std::vector<void*> p(raw.size());
  for (size_t i = 0; i < raw.size(); ++i) p[i] = reinterpret_cast<void*>(uintptr_t(raw[i]));
  device::launch_cuda_fused(*cuda_kernel_of(h), Device{DeviceType::CUDA, index}, p, numel);
  Py_RETURN_NONE;
  DESCENT_PY_CATCH(nullptr)
}

PyMethodDef fused_functions[] = {
    {"_fused_sim_load", py_fused_sim_load, METH_VARARGS,
     "_fused_sim_load(ir, shape, dtype, name): a fused kernel's IR as a program for sim:0; its handle"},
    {"_fused_sim_ir", py_fused_sim_ir, METH_O, "_fused_sim_ir(handle): the program printed back as IR"},
    {"_fused_sim_launch", py_fused_sim_launch, METH_VARARGS,
     "_fused_sim_launch(handle, pointers, index): the program launched on sim:<index>'s current stream"},
    {"_fused_cuda_built", py_fused_cuda_built, METH_NOARGS, "_fused_cuda_built(): whether this build has NVRTC"},
    {"_fused_nvrtc_compile", py_fused_nvrtc_compile, METH_VARARGS,
     "_fused_nvrtc_compile(source, arch): the source compiled by NVRTC for sm_<arch>; the cubin's size"},
    {"_fused_cuda_load", py_fused_cuda_load, METH_VARARGS,
     "_fused_cuda_load(source, name, arity, index): the kernel compiled by NVRTC and loaded; (handle, seconds)"},
    {"_fused_cuda_launch", py_fused_cuda_launch, METH_VARARGS,
     "_fused_cuda_launch(handle, pointers, numel, index): one launch on cuda:<index>'s current stream"},
    {nullptr, nullptr, 0, nullptr},
};

}  // namespace

bool init_fused(PyObject* m) { return PyModule_AddFunctions(m, fused_functions) == 0; }

}  // namespace descent::binding
