// descent._C's functions of descent.distributed (issue 20, WORK IN
// PROGRESS): the default process group's collectives (mpi or nccl,
// floors/distributed), each returning a handle that _dist_wait and
// _dist_is_completed read (descent.distributed's Work wraps it). Not ops of
// the table yet.
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <string>

#include "floors/binding/binding.h"
#include "floors/distributed/process_group.h"

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

dist::ReduceOp op_of(const std::string& op) {
  if (op == "sum") return dist::ReduceOp::Sum;
  if (op == "product") return dist::ReduceOp::Product;
  if (op == "min") return dist::ReduceOp::Min;
  if (op == "max") return dist::ReduceOp::Max;
  if (op == "avg") return dist::ReduceOp::Avg;
  throw ValueError(str("unknown reduce op '", op, "' (sum, product, min, max, avg)"));
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
PyObject* py_have_nccl(PyObject*, PyObject*) { return PyBool_FromLong(dist::have_nccl()); }
PyObject* py_backend(PyObject*, PyObject*) {
  DESCENT_PY_TRY return PyUnicode_FromString(dist::default_group().backend());
  DESCENT_PY_CATCH(nullptr)
}
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
  return handle(dist::default_group().all_reduce(unwrap(t), op_of(op)));
  DESCENT_PY_CATCH(nullptr)
}

// _dist_broadcast(tensor, src) -> handle
PyObject* py_broadcast(PyObject*, PyObject* args) {
  PyObject* t = nullptr;
  int src = 0;
  if (!PyArg_ParseTuple(args, "Oi:_dist_broadcast", &t, &src)) return nullptr;
  DESCENT_PY_TRY
  return handle(dist::default_group().broadcast(unwrap(t), src));
  DESCENT_PY_CATCH(nullptr)
}

// _dist_all_gather(out, tensor) -> handle: out holds world_size x tensor.numel() elements.
PyObject* py_all_gather(PyObject*, PyObject* args) {
  PyObject *o = nullptr, *t = nullptr;
  if (!PyArg_ParseTuple(args, "OO:_dist_all_gather", &o, &t)) return nullptr;
  DESCENT_PY_TRY
  return handle(dist::default_group().all_gather(unwrap(o), unwrap(t)));
  DESCENT_PY_CATCH(nullptr)
}

// _dist_reduce_scatter(out, flat_input, op) -> handle: flat_input holds world_size x out.numel() elements.
PyObject* py_reduce_scatter(PyObject*, PyObject* args) {
  PyObject *o = nullptr, *t = nullptr;
  const char* op = "sum";
  if (!PyArg_ParseTuple(args, "OO|s:_dist_reduce_scatter", &o, &t, &op)) return nullptr;
  DESCENT_PY_TRY
  return handle(dist::default_group().reduce_scatter(unwrap(o), unwrap(t), op_of(op)));
  DESCENT_PY_CATCH(nullptr)
}

PyObject* py_barrier(PyObject*, PyObject*) {
  DESCENT_PY_TRY return handle(dist::default_group().barrier());
  DESCENT_PY_CATCH(nullptr)
}

// _dist_wait(handle) -> whether it is done: with mpi the host waits (the GIL
// released) until the collective ran, raising what it raised, and the handle
// is let go; with nccl the current stream waits, and the handle stays for
// _dist_is_completed until _dist_release.
PyObject* py_wait(PyObject*, PyObject* h) {
  const long long id = PyLong_AsLongLong(h);
  if (id == -1 && PyErr_Occurred()) return nullptr;
  DESCENT_PY_TRY
  std::shared_ptr<dist::Work> w = work_of(id);
  {
    GilRelease release;
    w->wait();
  }
  if (!w->host_waits()) Py_RETURN_FALSE;
  std::lock_guard<std::mutex> g(g_works_mu);
  g_works.erase(id);
  Py_RETURN_TRUE;
  DESCENT_PY_CATCH(nullptr)
}
PyObject* py_release(PyObject*, PyObject* h) {
  const long long id = PyLong_AsLongLong(h);
  if (id == -1 && PyErr_Occurred()) return nullptr;
  std::lock_guard<std::mutex> g(g_works_mu);
  g_works.erase(id);
  Py_RETURN_NONE;
}
PyObject* py_is_completed(PyObject*, PyObject* h) {
  const long long id = PyLong_AsLongLong(h);
  if (id == -1 && PyErr_Occurred()) return nullptr;
  DESCENT_PY_TRY return PyBool_FromLong(work_of(id)->is_completed());
  DESCENT_PY_CATCH(nullptr)
}

PyMethodDef distributed_functions[] = {
    {"_dist_have_mpi", py_have_mpi, METH_NOARGS, "whether this build has the mpi backend"},
    {"_dist_have_nccl", py_have_nccl, METH_NOARGS, "whether this build has the nccl backend"},
    {"_dist_backend", py_backend, METH_NOARGS, "the default group's backend: 'mpi' or 'nccl'"},
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
    {"_dist_release", py_release, METH_O, "_dist_release(handle): forget the collective"},
    {nullptr, nullptr, 0, nullptr},
};

}  // namespace

bool init_distributed(PyObject* m) { return PyModule_AddFunctions(m, distributed_functions) == 0; }

}  // namespace descent::binding
