// The Python key's C side: how a TorchDispatchMode (descent.utils._python_dispatch)
// sees every op that reaches the dispatcher beneath autograd.
//
// [SECTION] The fallback at the Python key
// [SECTION] The thread's keys by name
//
// Note [The Python key]
// ~~~~~~~~~~~~~~~~~~~~~
// PyTorch's extension point for Python code that wants to see (or replace)
// every aten call is the Python dispatch key and its one fallback kernel
// (aten/src/ATen/core/PythonFallbackKernel.cpp). descent has the same key in
// the same place: above BackendSelect, below ADInplaceOrView and the
// Autograd keys (Note [Dispatch key priority], floors/core/dispatch_key.h).
// So a mode sees a call after autograd has recorded its node and after a
// composite (matmul, linear) has decomposed into the ops beneath it: `x @ w`
// reaches a mode as aten.mm.default, never as aten.matmul.
//
// No tensor carries the key. Entering the first mode adds it to the thread's
// included set and leaving the last takes it out again, as
// TorchDispatchModeTLS does (descent/utils/_python_dispatch.py). While it is
// out, every op falls through it at no cost; while it is in, every op's
// call reaches python_key_fallback below, which
//   1. excludes every key above Python for its scope (c10's
//      after_Python_keyset): the ops the mode calls, func(*args) included,
//      go straight to the keys beneath, so autograd records nothing twice;
//   2. hands the handler (descent.utils._python_dispatch._dispatch) the
//      operator's name, its arguments as Python objects (positional, and
//      the keyword-only ones as keywords, as PyTorch's
//      parseIValuesToPyArgsKwargs), and calls it with the GIL held;
//   3. puts what the handler returns on the stack: a Tensor, a tuple of
//      them, or a number for an op returning a Scalar (_local_scalar_dense).
// The handler pops the innermost mode for the length of its
// __torch_dispatch__, so the mode's own func(*args) reaches the next mode
// out, or, with none left, the backend kernel.
//
// descent has no PythonTLSSnapshot key: PyTorch's snapshots the thread's
// key sets at the top of a call so that the Python key can restore them
// (its pythonFallback no longer does); descent's fallback excludes the keys
// above Python itself and needs no snapshot. A tensor subclass with its own
// __torch_dispatch__ (which carries the key in its own key set) is not
// supported: modes only.
#include <string>

#include "floors/binding/binding.h"
#include "floors/dispatch/dispatcher.h"

namespace descent::binding {

namespace {

// [SECTION] The fallback at the Python key -----------------------------------------

PyObject* g_handler = nullptr;  // owned; set by _set_torch_dispatch_handler

// Whether an argument holds its schema default (c10's IValue ==: numbers by value).
bool is_default(const SchemaArg& a, const IValue& v) {
  if (!a.has_default) return false;
  const IValue& d = a.default_value;
  auto number = [](const IValue& x, double* out) {
    if (x.tag() == IValue::Tag::Int)
      *out = double(x.to_int());
    else if (x.tag() == IValue::Tag::Double)
      *out = x.to_double();
    else if (x.tag() == IValue::Tag::Bool)
      *out = x.to_bool();
    else
      return false;
    return true;
  };
  double dv = 0, vv = 0;
  if (number(d, &dv) && number(v, &vv))
    return d.tag() == v.tag() || (d.tag() != IValue::Tag::Bool && v.tag() != IValue::Tag::Bool) ? dv == vv : false;
  if (d.tag() != v.tag()) return false;
  switch (d.tag()) {
    case IValue::Tag::None:
      return true;
    case IValue::Tag::IntList:
      return d.to_int_list() == v.to_int_list();
    case IValue::Tag::ScalarType:
      return d.to_scalar_type() == v.to_scalar_type();
    case IValue::Tag::Device:
      return d.to_device() == v.to_device();
    default:
      return false;
  }
}

// One result the handler returned, as the stack holds it.
IValue result_value(const OpEntry& op, PyObject* o, size_t i) {
  if (is_tensor(o)) return IValue(unwrap(o));
  if (PyBool_Check(o)) return IValue(o == Py_True);
  if (PyLong_Check(o)) return IValue(int64_t(PyLong_AsLongLong(o)));
  if (PyFloat_Check(o)) return IValue(PyFloat_AsDouble(o));
  throw TypeError(std::string("__torch_dispatch__ of '") + op.name + "' returned " + Py_TYPE(o)->tp_name +
                  " where result " + std::to_string(i) + ", a Tensor, belongs");
}

void python_key_fallback(const OpEntry& op, DispatchKeySet, Stack& stack) {
  trace::ScopedSpan span(trace::Floor::Binding, op.profiler_name);
  if (span.active()) span.arg("variant", "torch_dispatch");
  Gil gil;
  ExcludeKeyGuard above(kAbovePythonKeys);  // Note [The Python key], step 1
  DESCENT_CHECK(g_handler != nullptr, Error, "'", op.name, "' reached the Python key with no mode handler set");
  PyRef handler{(Py_INCREF(g_handler), g_handler)};
  // Arguments equal to their defaults are left out, trailing positional ones
  // and keyword-only ones, as parseIValuesToPyArgsKwargs leaves them out:
  // a mode sees aten.add.Tensor(x, y), not (x, y, alpha=1).
  const auto& schema_args = op.schema.args;
  const size_t n = schema_args.size();
  const size_t positional_all = size_t(op.schema.num_positional());
  size_t positional = positional_all;
  while (positional > 0 && is_default(schema_args[positional - 1], stack[int(positional - 1)])) --positional;
  PyRef args{PyTuple_New(Py_ssize_t(positional))};
  PyRef kwargs{PyDict_New()};
  if (!args.p || !kwargs.p) throw PythonError();
  for (size_t i = 0; i < n; ++i) {
    if (i >= positional && (i < positional_all || is_default(schema_args[i], stack[int(i)]))) continue;
    PyObject* a = ivalue_to_python(stack[int(i)]);
    if (!a) throw PythonError();
    if (i < positional) {
      PyTuple_SET_ITEM(args.p, Py_ssize_t(i), a);
    } else {
      const int failed = PyDict_SetItemString(kwargs.p, schema_args[i].name.c_str(), a);
      Py_DECREF(a);
      if (failed) throw PythonError();
    }
  }
  PyRef name{PyUnicode_FromString(op.name)};
  if (!name.p) throw PythonError();
  PyRef r{PyObject_CallFunctionObjArgs(handler.p, name.p, args.p, kwargs.p, nullptr)};
  if (!r.p) throw PythonError();
  const size_t want = op.schema.returns.size();
  stack.clear();
  if (want == 1) {
    stack.push(result_value(op, r.p, 0));
    return;
  }
  DESCENT_CHECK(PyTuple_Check(r.p) && size_t(PyTuple_GET_SIZE(r.p)) == want, TypeError, "__torch_dispatch__ of '",
                op.name, "' must return a tuple of ", want, " results");
  for (size_t i = 0; i < want; ++i) stack.push(result_value(op, PyTuple_GET_ITEM(r.p, Py_ssize_t(i)), i));
}

// _set_torch_dispatch_handler(fn or None): fn(name, args, kwargs) runs every op that reaches the Python key;
// None makes the key a fallthrough again.
PyObject* py_set_handler(PyObject*, PyObject* fn) {
  if (fn != Py_None && !PyCallable_Check(fn))
    return PyErr_Format(PyExc_TypeError, "the handler must be callable, not %s", Py_TYPE(fn)->tp_name);
  DESCENT_PY_TRY
  PyObject* old = g_handler;
  g_handler = fn == Py_None ? nullptr : (Py_INCREF(fn), fn);
  swap_fallback(DispatchKey::Python, g_handler ? Kernel(python_key_fallback) : Kernel::Fallthrough());
  Py_XDECREF(old);
  Py_RETURN_NONE;
  DESCENT_PY_CATCH(nullptr)
}

// [SECTION] The thread's keys by name ------------------------------------------------

DispatchKey runtime_key_named(PyObject* o) {
  DESCENT_CHECK(PyUnicode_Check(o), TypeError, "a dispatch key is named by a str");
  const std::string name = utf8_text(o);
  for (int k = 1; k <= kNumRuntimeKeys; ++k)
    if (name == dispatch_key_name(DispatchKey(k))) return DispatchKey(k);
  throw ValueError("no runtime dispatch key named '" + name + "'");
}

// torch._C._dispatch_tls_set_dispatch_key_included(key, bool), with the key named by a str.
PyObject* py_set_included(PyObject*, PyObject* args) {
  PyObject* key;
  int on;
  if (!PyArg_ParseTuple(args, "Op", &key, &on)) return nullptr;
  DESCENT_PY_TRY
  LocalKeys& local = local_keys();
  const DispatchKey k = runtime_key_named(key);
  local.included = on ? local.included.add(k) : local.included.remove(k);
  Py_RETURN_NONE;
  DESCENT_PY_CATCH(nullptr)
}
PyObject* py_is_included(PyObject*, PyObject* key) {
  DESCENT_PY_TRY
  return PyBool_FromLong(local_keys().included.has(runtime_key_named(key)));
  DESCENT_PY_CATCH(nullptr)
}

// _wrapped_number(t): the Python number a 0-d tensor was made from (the binding wraps `x * 2`'s 2 so:
// Note [Type promotion]), or None for any other tensor. A capture writes the number, not a tensor
// constant, into its graph, as make_fx does.
PyObject* py_wrapped_number(PyObject*, PyObject* o) {
  DESCENT_PY_TRY
  DESCENT_CHECK(is_tensor(o), TypeError, "_wrapped_number expects a Tensor");
  const Tensor& t = unwrap(o);
  if (!t.impl()->wrapped_number || t.dim() != 0 || t.device().type != DeviceType::CPU) Py_RETURN_NONE;
  switch (t.dtype()) {
    case ScalarType::Float64:
      return PyFloat_FromDouble(t.data<double>()[0]);
    case ScalarType::Int64:
      return PyLong_FromLongLong(t.data<int64_t>()[0]);
    case ScalarType::Bool:
      return PyBool_FromLong(t.data<bool>()[0]);
    default:
      Py_RETURN_NONE;
  }
  DESCENT_PY_CATCH(nullptr)
}

PyMethodDef python_dispatch_methods[] = {
    {"_wrapped_number", py_wrapped_number, METH_O,
     "_wrapped_number(t): the Python number a wrapped-number tensor holds, else None"},
    {"_set_torch_dispatch_handler", py_set_handler, METH_O,
     "_set_torch_dispatch_handler(fn or None): fn(name, args, kwargs) runs every op reaching the Python key"},
    {"_dispatch_tls_set_dispatch_key_included", py_set_included, METH_VARARGS,
     "_dispatch_tls_set_dispatch_key_included(key, on): adds the key to (or takes it from) this thread's calls"},
    {"_dispatch_tls_is_dispatch_key_included", py_is_included, METH_O, "whether this thread adds the key to its calls"},
    {nullptr, nullptr, 0, nullptr},
};

}  // namespace

bool init_dispatch_introspection(PyObject* module);  // dispatch_introspection.cpp: DispatchKeySet, _dispatch_dump

bool init_python_dispatch(PyObject* module) {
  return PyModule_AddFunctions(module, python_dispatch_methods) == 0 && init_dispatch_introspection(module);
}

}  // namespace descent::binding
