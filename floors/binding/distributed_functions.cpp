// descent._C's functions of descent.distributed (issue 20, WORK IN
// PROGRESS): the default process group's collectives over a tensor's
// memory, each returning a handle that _dist_wait and _dist_is_completed
// read (descent.distributed's Work wraps it). Not ops of the table yet.
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <string>

#include "floors/binding/binding.h"
#include "floors/distributed/process_group.h"
#include "floors/streams/streams.h"

namespace descent::binding {

namespace {

namespace dist = distributed;

std::mutex g_works_mu;
std::map<int64_t, std::shared_ptr<dist::Work>> g_works;
int64_t g_next_work = 0;

int64_t keep(std::shared_ptr<dist::Work> w) {
  std::lock_guard<std::mutex> g(g_works_mu);
  g_works[++g_next_work] = std::move(w);
  return g_next_work;
}
std::shared_ptr<dist::Work> work_of(int64_t handle) {
  std::lock_guard<std::mutex> g(g_works_mu);
  auto it = g_works.find(handle);
  DESCENT_CHECK(it != g_works.end(), Error, "no collective with handle ", handle);
  return it->second;
}

dist::Element element_of(ScalarType t, const char* fn) {
  switch (t) {
    case ScalarType::Bool:
      return dist::Element::Bool;
    case ScalarType::UInt8:
      return dist::Element::UInt8;
    case ScalarType::Int8:
      return dist::Element::Int8;
    case ScalarType::Int16:
      return dist::Element::Int16;
    case ScalarType::Int32:
      return dist::Element::Int32;
    case ScalarType::Int64:
      return dist::Element::Int64;
    case ScalarType::Float32:
      return dist::Element::Float32;
    case ScalarType::Float64:
      return dist::Element::Float64;
    default:
      break;
  }
  throw Error(str(fn, ": the mpi backend has no type for ", dtype_name(t), " (MPI has none for 16-bit floats)"));
}

dist::ReduceOp op_of(const std::string& op) {
  if (op == "sum") return dist::ReduceOp::Sum;
  if (op == "product") return dist::ReduceOp::Product;
  if (op == "min") return dist::ReduceOp::Min;
  if (op == "max") return dist::ReduceOp::Max;
  throw ValueError(str("unknown reduce op '", op, "' (sum, product, min, max)"));
}

// The memory the mpi backend reads and writes: a contiguous CPU or sim:0
// tensor's (sim:0's memory is the host's: its stream is drained first, so
// the kernels queued before are done).
void* memory_of(const Tensor& t, const char* fn) {
  const Device d = t.device();
  DESCENT_CHECK(d.type != DeviceType::CUDA, Error, fn, ": the mpi backend takes CPU and sim:0 tensors, not ", d.str(),
                " (CUDA tensors need nccl)");
  DESCENT_CHECK(t.is_contiguous(), Error, fn, ": Tensors must be contiguous");
  if (d.type == DeviceType::Sim) streams::synchronize(d, "collective");
  return t.data_ptr();
}

PyObject* handle(std::shared_ptr<dist::Work> w) { return PyLong_FromLongLong(keep(std::move(w))); }

PyObject* py_init(PyObject*, PyObject* backend) {
  DESCENT_PY_TRY
  DESCENT_CHECK(PyUnicode_Check(backend), TypeError, "init_process_group(): backend must be a str");
  dist::init_process_group(utf8_text(backend));
  Py_RETURN_NONE;
  DESCENT_PY_CATCH(nullptr)
}
PyObject* py_is_initialized(PyObject*, PyObject*) { return PyBool_FromLong(dist::is_initialized()); }
PyObject* py_have_mpi(PyObject*, PyObject*) { return PyBool_FromLong(dist::have_mpi()); }
PyObject* py_rank(PyObject*, PyObject*) {
  DESCENT_PY_TRY return PyLong_FromLong(dist::default_group().rank());
  DESCENT_PY_CATCH(nullptr)
}
PyObject* py_world_size(PyObject*, PyObject*) {
  DESCENT_PY_TRY return PyLong_FromLong(dist::default_group().size());
  DESCENT_PY_CATCH(nullptr)
}
PyObject* py_destroy(PyObject*, PyObject*) {
  DESCENT_PY_TRY
  GilRelease release;
  dist::destroy_process_group();
  Py_RETURN_NONE;
  DESCENT_PY_CATCH(nullptr)
}

// _dist_all_reduce(tensor, op) -> handle
PyObject* py_all_reduce(PyObject*, PyObject* args) {
  PyObject* t = nullptr;
  const char* op = "sum";
  if (!PyArg_ParseTuple(args, "O|s:_dist_all_reduce", &t, &op)) return nullptr;
  DESCENT_PY_TRY
  const Tensor& x = unwrap(t);
  void* p = memory_of(x, "all_reduce");
  return handle(dist::default_group().all_reduce(p, x.numel(), element_of(x.dtype(), "all_reduce"), op_of(op)));
  DESCENT_PY_CATCH(nullptr)
}

// _dist_broadcast(tensor, src) -> handle
PyObject* py_broadcast(PyObject*, PyObject* args) {
  PyObject* t = nullptr;
  int src = 0;
  if (!PyArg_ParseTuple(args, "Oi:_dist_broadcast", &t, &src)) return nullptr;
  DESCENT_PY_TRY
  const Tensor& x = unwrap(t);
  void* p = memory_of(x, "broadcast");
  return handle(dist::default_group().broadcast(p, x.numel(), element_of(x.dtype(), "broadcast"), src));
  DESCENT_PY_CATCH(nullptr)
}

// _dist_all_gather(out, tensor) -> handle: out holds world_size x tensor.numel() elements.
PyObject* py_all_gather(PyObject*, PyObject* args) {
  PyObject *o = nullptr, *t = nullptr;
  if (!PyArg_ParseTuple(args, "OO:_dist_all_gather", &o, &t)) return nullptr;
  DESCENT_PY_TRY
  const Tensor& out = unwrap(o);
  const Tensor& x = unwrap(t);
  dist::ProcessGroupMPI& pg = dist::default_group();
  DESCENT_CHECK(out.numel() == x.numel() * pg.size() && out.dtype() == x.dtype(), ValueError,
                "all_gather: the output must hold world_size x ", x.numel(), " elements of ", dtype_name(x.dtype()));
  return handle(pg.all_gather(memory_of(x, "all_gather"), memory_of(out, "all_gather"), x.numel(),
                              element_of(x.dtype(), "all_gather")));
  DESCENT_PY_CATCH(nullptr)
}

// _dist_reduce_scatter(out, flat_input, op) -> handle: flat_input holds world_size x out.numel() elements.
PyObject* py_reduce_scatter(PyObject*, PyObject* args) {
  PyObject *o = nullptr, *t = nullptr;
  const char* op = "sum";
  if (!PyArg_ParseTuple(args, "OO|s:_dist_reduce_scatter", &o, &t, &op)) return nullptr;
  DESCENT_PY_TRY
  const Tensor& out = unwrap(o);
  const Tensor& x = unwrap(t);
  dist::ProcessGroupMPI& pg = dist::default_group();
  DESCENT_CHECK(x.numel() == out.numel() * pg.size() && out.dtype() == x.dtype(), ValueError,
                "reduce_scatter: the input must hold world_size x ", out.numel(), " elements of ",
                dtype_name(out.dtype()));
  return handle(pg.reduce_scatter(memory_of(x, "reduce_scatter"), memory_of(out, "reduce_scatter"), out.numel(),
                                  element_of(out.dtype(), "reduce_scatter"), op_of(op)));
  DESCENT_PY_CATCH(nullptr)
}

PyObject* py_barrier(PyObject*, PyObject*) {
  DESCENT_PY_TRY return handle(dist::default_group().barrier());
  DESCENT_PY_CATCH(nullptr)
}

// _dist_wait(handle): blocks (the GIL released) until the collective ran; raises what it raised.
PyObject* py_wait(PyObject*, PyObject* h) {
  const long long id = PyLong_AsLongLong(h);
  if (id == -1 && PyErr_Occurred()) return nullptr;
  DESCENT_PY_TRY
  std::shared_ptr<dist::Work> w = work_of(id);
  {
    GilRelease release;
    w->wait();
  }
  std::lock_guard<std::mutex> g(g_works_mu);
  g_works.erase(id);
  Py_RETURN_NONE;
  DESCENT_PY_CATCH(nullptr)
}
PyObject* py_is_completed(PyObject*, PyObject* h) {
  const long long id = PyLong_AsLongLong(h);
  if (id == -1 && PyErr_Occurred()) return nullptr;
  DESCENT_PY_TRY return PyBool_FromLong(work_of(id)->is_completed());
  DESCENT_PY_CATCH(nullptr)
}

PyMethodDef distributed_functions[] = {
    {"_dist_have_mpi", py_have_mpi, METH_NOARGS, "whether this build has the mpi backend"},
    {"_dist_init", py_init, METH_O, "_dist_init(backend): the default process group"},
    {"_dist_is_initialized", py_is_initialized, METH_NOARGS, "whether the default group exists"},
    {"_dist_rank", py_rank, METH_NOARGS, "this process's rank"},
    {"_dist_world_size", py_world_size, METH_NOARGS, "the number of processes"},
    {"_dist_destroy", py_destroy, METH_NOARGS, "ends the default group"},
    {"_dist_all_reduce", py_all_reduce, METH_VARARGS, "_dist_all_reduce(tensor, op='sum') -> handle"},
    {"_dist_broadcast", py_broadcast, METH_VARARGS, "_dist_broadcast(tensor, src) -> handle"},
    {"_dist_all_gather", py_all_gather, METH_VARARGS, "_dist_all_gather(out, tensor) -> handle"},
    {"_dist_reduce_scatter", py_reduce_scatter, METH_VARARGS, "_dist_reduce_scatter(out, flat, op) -> handle"},
    {"_dist_barrier", py_barrier, METH_NOARGS, "_dist_barrier() -> handle"},
    {"_dist_wait", py_wait, METH_O, "_dist_wait(handle): until the collective ran"},
    {"_dist_is_completed", py_is_completed, METH_O, "_dist_is_completed(handle)"},
    {nullptr, nullptr, 0, nullptr},
};

}  // namespace

bool init_distributed(PyObject* m) { return PyModule_AddFunctions(m, distributed_functions) == 0; }

}  // namespace descent::binding
