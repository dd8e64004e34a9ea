// descent._C's functions of descent.distributed (issue 20): the default
// process group (mpi or nccl, floors/distributed), and the Work handles the
// c10d:: operators return (Note [Collectives are c10d ops]), which
// _dist_wait and _dist_is_completed read (descent.distributed's Work wraps
// one). The collectives themselves are ops of the table, called through
// descent.ops.c10d as any op.
#include <algorithm>
#include <cstdint>
#include <memory>
#include <string>

#include "floors/binding/binding.h"
#include "floors/distributed/process_group.h"

namespace descent::binding {

namespace {

namespace dist = distributed;

// _dist_init(backend, timeout_seconds)
PyObject* py_init(PyObject*, PyObject* args) {
  PyObject* backend = nullptr;
  double timeout_s = 1800;  // PyTorch's default_pg_timeout for the CPU backends
  if (!PyArg_ParseTuple(args, "O|d:_dist_init", &backend, &timeout_s)) return nullptr;
  DESCENT_PY_TRY
  DESCENT_CHECK(PyUnicode_Check(backend), TypeError, "init_process_group(): backend must be a str");
  // At least a millisecond; at most a year (timedelta.max would overflow the wait's nanoseconds).
  const double ms = std::min(std::max(timeout_s * 1000, 1.0), 365.0 * 24 * 3600 * 1000);
  dist::init_process_group(utf8_text(backend), int64_t(ms));
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

// _dist_wait(handle) -> whether it is done: with mpi the host waits (the GIL
// released) until the collective ran, raising what it raised, and the handle
// is let go; with nccl the current stream waits, and the handle stays for
// _dist_is_completed until _dist_release.
PyObject* py_wait(PyObject*, PyObject* h) {
  const long long id = PyLong_AsLongLong(h);
  if (id == -1 && PyErr_Occurred()) return nullptr;
  DESCENT_PY_TRY
  std::shared_ptr<dist::Work> w = dist::work_of(id);
  {
    GilRelease release;
    w->wait();
  }
  if (!w->host_waits()) Py_RETURN_FALSE;
  dist::forget_work(id);
  Py_RETURN_TRUE;
  DESCENT_PY_CATCH(nullptr)
}
PyObject* py_release(PyObject*, PyObject* h) {
  const long long id = PyLong_AsLongLong(h);
  if (id == -1 && PyErr_Occurred()) return nullptr;
  dist::forget_work(id);
  Py_RETURN_NONE;
}
// _dist_nccl_simulate_async_error(code): Note [NCCL's watchdog]'s stand-in for a failed peer.
PyObject* py_simulate_nccl_error(PyObject*, PyObject* code) {
  const long c = PyLong_AsLong(code);
  if (c == -1 && PyErr_Occurred()) return nullptr;
  DESCENT_PY_TRY
  dist::simulate_nccl_async_error(int(c));
  Py_RETURN_NONE;
  DESCENT_PY_CATCH(nullptr)
}
PyObject* py_is_completed(PyObject*, PyObject* h) {
  const long long id = PyLong_AsLongLong(h);
  if (id == -1 && PyErr_Occurred()) return nullptr;
  DESCENT_PY_TRY return PyBool_FromLong(dist::work_of(id)->is_completed());
  DESCENT_PY_CATCH(nullptr)
}

PyMethodDef distributed_functions[] = {
    {"_dist_have_mpi", py_have_mpi, METH_NOARGS, "whether this build has the mpi backend"},
    {"_dist_have_nccl", py_have_nccl, METH_NOARGS, "whether this build has the nccl backend"},
    {"_dist_backend", py_backend, METH_NOARGS, "the default group's backend: 'mpi' or 'nccl'"},
    {"_dist_init", py_init, METH_VARARGS, "_dist_init(backend, timeout_seconds=1800): the default process group"},
    {"_dist_is_initialized", py_is_initialized, METH_NOARGS, "whether the default group exists"},
    {"_dist_rank", py_rank, METH_NOARGS, "this process's rank"},
    {"_dist_world_size", py_world_size, METH_NOARGS, "the number of processes"},
    {"_dist_destroy", py_destroy, METH_NOARGS, "ends the default group"},
    {"_dist_wait", py_wait, METH_O, "_dist_wait(handle): until the collective ran"},
    {"_dist_is_completed", py_is_completed, METH_O, "_dist_is_completed(handle)"},
    {"_dist_release", py_release, METH_O, "_dist_release(handle): forget the collective"},
    {"_dist_nccl_simulate_async_error", py_simulate_nccl_error, METH_O,
     "_dist_nccl_simulate_async_error(code): the nccl watchdog meets NCCL error `code` (a test's stand-in)"},
    {nullptr, nullptr, 0, nullptr},
};

}  // namespace

bool init_distributed(PyObject* m) { return PyModule_AddFunctions(m, distributed_functions) == 0; }

}  // namespace descent::binding
