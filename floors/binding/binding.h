// Floor 2, the binding: the CPython extension descent._C.
//
// [SECTION] Python objects for C++ values
// [SECTION] Argument parsing against a schema
// [SECTION] Errors
//
// A call from Python arrives here as a tuple of PyObjects; the binding parses
// it against the op's schema (positional, keyword, defaults, overloads),
// unwraps the objects into a Stack of IValues, releases the GIL, runs the
// dispatcher (floor 3), takes the GIL back and wraps the results. See
// Note [Parsing arguments] (arg_parser.cpp).
#pragma once

#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include <memory>

#include <optional>

#include <unistd.h>
#include <string>
#include <vector>

#include "floors/autograd/node.h"
#include "floors/dispatch/dispatcher.h"
#include "floors/kernels/verify/verifier.h"
#include "tracer/trace.h"

namespace descent::binding {

// [SECTION] Python objects for C++ values ---------------------------------------

// Owns one reference to a Python object, dropped at the end of its scope
// (PyTorch's THPObjectPtr): a scope that must drop a reference on every path
// holds it in this, never in a guard of its own. `p` may be null.
struct PyRef {
  explicit PyRef(PyObject* o = nullptr) : p(o) {}
  ~PyRef() { Py_XDECREF(p); }
  PyRef(const PyRef&) = delete;
  PyRef& operator=(const PyRef&) = delete;
  // Drops the reference held and owns `o` instead.
  void reset(PyObject* o = nullptr) {
    PyObject* old = p;
    p = o;
    Py_XDECREF(old);
  }
  PyObject* release() {
    PyObject* o = p;
    p = nullptr;
    return o;
  }
  PyObject* p;
};

// The instance layout of _C.TensorBase (and of descent.Tensor, its Python subclass).
// `tensor` is constructed by wrap(), the only way such an object is made
// (tp_new refuses), and destroyed by tp_dealloc.
struct TensorObject {
  PyObject_HEAD Tensor tensor;
};
extern PyTypeObject* g_tensor_base;    // _C.TensorBase
extern PyTypeObject* g_tensor_class;   // descent.Tensor, set by _C._set_tensor_class
extern PyTypeObject g_dtype_type;      // _C.dtype
extern PyTypeObject g_device_type;     // _C.device
PyObject* dtype_object(ScalarType t);  // borrowed reference to the singleton
ScalarType dtype_of(PyObject* o);      // the dtype of `o`, a _C.dtype (Py_TYPE(o) == &g_dtype_type)
Device device_of(PyObject* o);         // the device of `o`, a _C.device

bool is_tensor(PyObject* o);
// The tensor inside `o`, which must satisfy is_tensor. Borrowed: valid while
// `o` lives, so a call can push it unowned (Note [Borrowed arguments]).
const Tensor& unwrap(PyObject* o);
PyObject* wrap(Tensor t);                             // a new descent.Tensor (new reference)
PyObject* wrap_results(const OpEntry& op, Stack& s);  // a Tensor, or a named tuple for several

bool init_tensor_type(PyObject* module);
// descent.Size (size_object.cpp): a tensor's shape, a tuple of ints.
extern PyTypeObject g_size_type;
PyObject* size_object(const DimVector& sizes);  // a new Size (new reference)
bool init_size_type(PyObject* module);
// Tensor.__getitem__ and __setitem__, the type's mapping slots (python_indexing.cpp).
extern PyMappingMethods g_tensor_mapping;
// Tensor's methods and operators, generated from the op table
// (tensor_methods.cpp): `methods` with one method per op taking `Tensor self`
// added, the number slots and the comparison. Before PyType_Ready.
bool init_tensor_methods(PyTypeObject* type, PyMethodDef* methods);
bool init_value_types(PyObject* module);  // dtype, device, return types
// descent.return_types.<name> (value_types.cpp, Note [return_types]): a borrowed type, or null with an error set.
PyTypeObject* return_type(const char* name);
bool init_trace_type(PyObject* module);
// The Node type, the tensor's autograd attributes and _run_backward (autograd_object.cpp).
bool init_autograd(PyObject* module, PyTypeObject* tensor_type);
// A graph node seen from Python (torch.autograd.graph.Node): x.grad_fn and the
// nodes of its next_functions. An ordinary node's object is made anew each
// time and owns the node (`node`); a custom Function's node is instead seen
// through its ctx, an object of a subclass of _C._FunctionBase that the node
// owns and that points back at it weakly (`cdata`, cleared when the node
// dies): Note [A custom Function's node] (python_function.cpp).
struct NodeObject {
  PyObject_HEAD Ref<autograd::Node> node;
  autograd::Node* cdata = nullptr;
};
extern PyTypeObject g_node_type;  // _C.Node
// The Python object of a node (new reference): the node's own (Node::pyobj)
// when it has one, else a new _C.Node; None for a null node.
PyObject* node_object(const Ref<autograd::Node>& n);
// _C._FunctionBase and the node of a custom autograd.Function (python_function.cpp).
bool init_python_function(PyObject* module);
// A tuple of tensors, None for an undefined one (new reference).
PyObject* tensor_tuple(const std::vector<Tensor>& ts);
// The trace::Trace inside a descent._C.Trace object (borrowed: valid while `o`
// lives), or nullptr when `o` is not one. For the app, which embeds Python and
// reads the Trace objects the package returns without copying them.
const trace::Trace* trace_of(PyObject* o);
PyObject* device_object(Device d);  // new reference
// A value of a kernel's stack as Python (library_object.cpp): a tensor wrapped, numbers, lists,
// dtypes and devices as the binding gives them elsewhere; a new reference, or nullptr with an error.
PyObject* ivalue_to_python(const IValue& v);
// The device descent.set_default_device chose for this thread's factories
// (Note [The default device]); none means the CPU (settings.cpp).
std::optional<Device>& default_device();
// Devices from Python (device_object.cpp): the functions and the Event type
// descent.cuda and descent.sim are built on, and Tensor's device methods.
bool init_devices(PyObject* module);
bool init_matmul_ladder(PyObject* module);  // ladder_functions.cpp (called by init_devices)
bool init_distributed(PyObject* module);    // distributed_functions.cpp (called by init_devices)
// descent.library's functions: Python kernels, operators defined and called by name (library_object.cpp).
bool init_library(PyObject* module);
// The module functions of the binding's files, added at the module's start (module.cpp).
extern PyMethodDef g_tensor_data_functions[];   // _tensor, _scalar_tensor (tensor_from_data.cpp)
extern PyMethodDef g_settings_functions[];      // manual_seed, _set_variant, _set_matmul_isa, threads (settings.cpp)
extern PyMethodDef g_thread_state_functions[];  // key sets, grad and inference mode (thread_state.cpp)
extern PyMethodDef g_op_table_functions[];      // _ops, _verify (op_table.cpp)
extern PyMethodDef g_device_tensor_methods[];   // cpu, pin_memory, is_pinned, _record_stream, _host
extern PyGetSetDef g_device_tensor_getset[];    // is_cuda
// t itself on the CPU; else a CPU copy through aten::to, whose copy is
// queued on t's stream and then waited for in a floor-7 span named `why`
// (Note [Reading a device tensor waits]).
Tensor host_copy(const Tensor& t, const char* why, bool record_grad = false);
// t's one element through aten::item (-> aten::_local_scalar_dense), the
// device's wait named `why`: a Scalar IValue (Double, Int or Bool).
IValue read_item(const Tensor& t, const char* why);

// The verifier's verdicts as a list of dicts (op_table.cpp): _C._verify's and _C._verify_matmul_rungs' result.
PyObject* verdicts_object(const std::vector<kernels::Verdict>& vs);

// [SECTION] Argument parsing against a schema -------------------------------------

// All overloads sharing a Python name ("max" and "max.dim").
struct OverloadGroup {
  std::string name;
  std::vector<const OpEntry*> overloads;
};
const std::vector<OverloadGroup>& overload_groups();

// Parses (args, kwargs) against the group's overloads. On success fills
// `stack`, sets *chosen and returns true; otherwise sets a Python TypeError
// (or ValueError) that names the argument and what was wrong, and returns false.
// `method`: args[0] is the self of a method call, which messages leave out.
bool parse_args(const OverloadGroup& g, PyObject* const* args, Py_ssize_t nargs, PyObject* kwnames, Stack& stack,
                const OpEntry** chosen, bool method = false);
// Runs a parsed call (floor 3 on, the GIL released) and returns its result:
// for an in-place op the very object written into (x.add_(1) is x), else the
// results wrapped; a factory's result first gets requires_grad when asked.
// `args` are the ones parse_args read.
PyObject* call_parsed(const OpEntry& op, Stack& stack, PyObject* const* args, Py_ssize_t nargs, PyObject* kwnames,
                      bool requires_grad = false);

// A new CPU tensor from Python data, as descent.tensor(data, dtype) makes it:
// a tensor, an array (Note [numpy arrays descent reads], tensor_from_data.cpp),
// a number or nested sequences.
Tensor tensor_from_data(PyObject* data, std::optional<ScalarType> want);
// Converts a Python number to a 0-d "wrapped number" tensor (Note [Type promotion]).
Tensor scalar_to_tensor(PyObject* o);
// A Python number as a 0-d CPU tensor of dtype `dt` (no op runs: PyTorch's
// scalarToTensor), converted with Scalar's check and words (Note [Checked
// scalar conversion]): "value cannot be converted to type uint8_t without overflow".
Tensor scalar_tensor(PyObject* number, ScalarType dt);
bool is_python_scalar(PyObject* o);
// The element of a 0-d CPU tensor as the Scalar of its dtype.
Scalar tensor_scalar(const Tensor& t);
// An int, or anything with __index__ (numpy's ints, a one-element int tensor); not a bool.
bool is_int_like(PyObject* o);
bool is_bool_like(PyObject* o);  // True, False and numpy's bools
// float(o) for a number (numpy's too); when Python refuses (2**2000), throws
// with Python's own error left set, which DESCENT_PY_CATCH passes on.
double as_double(PyObject* o);
// The text of a str; one that is not valid UTF-8 (a lone surrogate) comes back
// with backslash escapes instead of failing.
std::string utf8_text(PyObject* s);

// [SECTION] Errors -----------------------------------------------------------------

// A new list of n items, item(i) giving each as a new reference, or nullptr
// with a Python error set (then the list is dropped and nullptr returned).
template <typename Item>
PyObject* py_list(size_t n, Item item) {
  PyObject* list = PyList_New(static_cast<Py_ssize_t>(n));
  if (!list) return nullptr;
  for (size_t i = 0; i < n; ++i) {
    PyObject* x = item(i);
    if (!x) {
      Py_DECREF(list);
      return nullptr;
    }
    PyList_SET_ITEM(list, static_cast<Py_ssize_t>(i), x);
  }
  return list;
}

// Sets the Python exception matching the C++ one currently being handled.
void set_python_error();
// True while this thread takes the GIL back after a kernel (GilRelease): the
// only moment CPython may end it with pthread_exit's forced unwind.
extern thread_local bool t_taking_gil;
extern PyObject* g_oom_error;  // descent.OutOfMemoryError, a RuntimeError

// Holds the GIL for its scope, whether or not this thread held it already:
// for C++ that calls Python from wherever it runs (the backward engine).
struct Gil {
  PyGILState_STATE g = PyGILState_Ensure();
  ~Gil() { PyGILState_Release(g); }
  Gil() = default;
  Gil(const Gil&) = delete;
  Gil& operator=(const Gil&) = delete;
};

// The Python exception now set, normalized and with its traceback attached
// (a new reference, or null when none is set), the error cleared: what
// Python 3.12's PyErr_GetRaisedException returns.
inline PyObject* fetch_exception() {
  PyObject *type, *value, *tb;
  PyErr_Fetch(&type, &value, &tb);
  PyErr_NormalizeException(&type, &value, &tb);
  if (value && tb) PyException_SetTraceback(value, tb);
  Py_XDECREF(type);
  Py_XDECREF(tb);
  return value;
}

// A Python exception raised by Python code the runtime called (a hook, a
// custom Function's backward), made where it was raised, with the GIL held:
// the exception is taken out of that thread, which may be a device's worker
// (Note [Which thread runs a node], engine.cpp), carried through the C++
// frames between as this, and raised again by restore() on the thread that
// called in (py_run_backward); set_python_error keeps a Python error that is
// still set.
struct PythonError : Error {
  PythonError() : Error("a Python function raised") {
    exception = std::shared_ptr<PyObject>(fetch_exception(), [](PyObject* o) {
      Gil gil;
      Py_XDECREF(o);
    });
  }
  // Sets it as the calling thread's Python error (the GIL held).
  void restore() const {
    PyObject* value = exception.get();
    if (!value) {
      PyErr_SetString(PyExc_RuntimeError, "a Python function raised an exception that was lost");
      return;
    }
    PyErr_SetObject(reinterpret_cast<PyObject*>(Py_TYPE(value)), value);
  }
  std::shared_ptr<PyObject> exception;
};

// Releases the GIL for its scope: other Python threads run while the kernel does.
// A daemon thread that comes back while the interpreter is exiting would be
// ended by PyEval_RestoreThread with pthread_exit, whose unwinding through
// C++ frames stops the process (std::terminate). It parks instead, as Python
// 3.14 parks such threads, until the process ends. noexcept(false) and
// DESCENT_PY_CATCH's rethrow cover the instant between the check and the call.
struct GilRelease {
  PyThreadState* state = PyEval_SaveThread();
  ~GilRelease() noexcept(false) {
    if (interpreter_exiting())
      for (;;) pause();
    t_taking_gil = true;  // the interpreter may start exiting now: PyEval_RestoreThread then never returns
    PyEval_RestoreThread(state);
    t_taking_gil = false;
  }
  static bool interpreter_exiting() {
#if PY_VERSION_HEX >= 0x030D0000
    return Py_IsFinalizing();
#else
    return _Py_IsFinalizing();
#endif
  }
};

}  // namespace descent::binding

// Wraps the body of a C function: C++ exceptions become Python exceptions.
// One thing unwinding through it is not an error: a daemon thread ended by
// pthread_exit, which CPython calls when such a thread takes the GIL back
// while the interpreter exits (GilRelease above). That forced unwind
// must go on. It is told apart by where it starts (t_taking_gil), not by
// `catch (abi::__forced_unwind&)`: that binds a reference to an object the
// runtime does not have, which UBSan rightly calls a null reference.
#define DESCENT_PY_TRY try {
#define DESCENT_PY_CATCH(ret)                    \
  }                                              \
  catch (...) {                                  \
    if (::descent::binding::t_taking_gil) throw; \
    ::descent::binding::set_python_error();      \
    return ret;                                  \
  }
