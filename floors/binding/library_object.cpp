// descent.library's C side: operators defined from Python, Python functions
// as kernels, and calling any operator by its name (descent.ops).
//
// [SECTION] Python kernels
// [SECTION] Defining and calling operators by name
//
// Note [Python kernels]
// ~~~~~~~~~~~~~~~~~~~~~
// torch.library lets Python register a kernel for an operator at a dispatch
// key: Library("aten", "IMPL").impl("add.Tensor", fn, "CPU") makes every CPU
// add run fn. descent does the same. A kernel here is a plain function
// pointer, so every Python kernel is one C function, python_kernel, which
// finds its Python function in a table by the operator and the key it runs
// for (the highest key of the key set it is handed). It takes the GIL back
// (the binding released it for the dispatcher), turns the stack's arguments
// into Python objects in the schema's order, the keyword-only ones as
// keywords (a tensor is the caller's very Python object), calls the function, and puts the tensor (or tuple of
// tensors) it returns on the stack. Its span is floor 5's, named for the op,
// with variant=python and the function's name: a Python kernel is a kernel.
// An exception the function raises is left set in the interpreter and
// unwinds the dispatcher as a C++ exception; the binding then hands Python's
// own exception to the caller. A kernel registered over a built-in one
// (aten::add.Tensor at CPU) replaces it, as torch.library does with a
// warning; the built-in comes back when the Library is removed
// (swap_op_kernel, floors/dispatch/dispatcher.h). A fallback,
// Library("_", "IMPL").fallback(fn, "CPU"), is the same for every operator
// without a kernel of its own at the key: python_fallback hands fn the
// operator (a descent.ops OpOverload) before its arguments, as PyTorch's
// boxed Python fallback does, and descent.library.fallthrough_kernel makes
// the key one the dispatcher skips (swap_fallback).
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "floors/binding/binding.h"
#include "floors/dispatch/library.h"

namespace descent::binding {

namespace {

// A Python kernel's exception, left set in the interpreter (set_python_error keeps it).
struct PythonKernelError : Error {
  PythonKernelError() : Error("a Python kernel raised") {}
};

// [SECTION] Python kernels ----------------------------------------------------------------

struct PythonKernel {
  int64_t handle;
  OpEntry* op;                       // nullptr for a fallback (every operator without a kernel of its own at its keys)
  std::vector<DispatchKey> keys;     // runtime keys it is registered at
  std::vector<KernelSlot> previous;  // what each held before, put back on removal
  std::vector<Kernel> previous_fallbacks;  // for a fallback: the key's fallback before
  PyObject* fn;                            // owned
  const char* name;                        // interned: the function's qualified name, for the span
};

std::mutex& kernels_mutex() {
  static std::mutex m;
  return m;
}
std::vector<std::unique_ptr<PythonKernel>>& python_kernels() {
  static std::vector<std::unique_ptr<PythonKernel>> k;
  return k;
}
int64_t g_next_handle = 1;

// The entry registered for `op` (nullptr: a fallback) at `key`, or nullptr:
// at most one, as registering checks. Under kernels_mutex.
const PythonKernel* registered(const OpEntry* op, DispatchKey key) {
  for (const auto& k : python_kernels()) {
    if (k->op != op) continue;
    for (DispatchKey rk : k->keys)
      if (rk == key) return k.get();
  }
  return nullptr;
}

// The Python function registered for `op` (nullptr: the fallback) at `key`,
// with a new reference, and its name; nullptr for none (or a fallthrough).
PyObject* python_function(const OpEntry* op, DispatchKey key, const char** name) {
  std::lock_guard<std::mutex> lock(kernels_mutex());
  const PythonKernel* k = registered(op, key);
  if (k == nullptr || k->fn == nullptr) return nullptr;
  Py_INCREF(k->fn);
  *name = k->name;
  return k->fn;
}

// Keeps `k`, its function owned from now on, and returns its handle. Under kernels_mutex.
PyObject* keep(std::unique_ptr<PythonKernel> k) {
  Py_XINCREF(k->fn);
  k->handle = g_next_handle++;
  const int64_t handle = k->handle;
  python_kernels().push_back(std::move(k));
  return PyLong_FromLongLong(handle);
}

// The operator as descent.ops names it (an OpOverload): a fallback's first argument.
PyObject* op_overload(const OpEntry& op) {
  PyRef ops{PyImport_ImportModule("descent.ops")};
  if (!ops.p) return nullptr;
  return PyObject_CallMethod(ops.p, "OpOverload", "s", op.name);
}

// The kernel every Python kernel and fallback is (Note [Python kernels]).
void run_python(const OpEntry& op, DispatchKeySet keys, Stack& stack, bool fallback) {
  const DispatchKey key = keys.highest();
  trace::ScopedSpan span(trace::Floor::Kernels, op.profiler_name);
  Gil gil;
  const char* name = "";
  PyObject* fn = python_function(fallback ? nullptr : &op, key, &name);
  DESCENT_CHECK(fn != nullptr, Error, "'", op.name, "' has no Python ", fallback ? "fallback" : "kernel", " at ",
                dispatch_key_name(key));
  PyRef owned_fn{fn};
  if (span.active()) {
    span.arg("variant", fallback ? "python fallback" : "python");
    span.arg("python", name);
  }
  // The positional arguments in order, the keyword-only ones (after `*`) as
  // keywords, as PyTorch hands a Python kernel its IValues
  // (parseIValuesToPyArgsKwargs): add.Tensor's kernel gets alpha=...
  const size_t n = op.schema.args.size(), first = fallback ? 1 : 0;
  const size_t positional = size_t(op.schema.num_positional());
  PyObject* args = PyTuple_New(Py_ssize_t(positional + first));
  if (!args) throw PythonKernelError();
  PyRef owned_args{args};
  PyRef kwargs{positional < n ? PyDict_New() : nullptr};
  if (positional < n && !kwargs.p) throw PythonKernelError();
  if (fallback) {
    PyObject* o = op_overload(op);
    if (!o) throw PythonKernelError();
    PyTuple_SET_ITEM(args, 0, o);
  }
  for (size_t i = 0; i < n; ++i) {
    PyObject* a = ivalue_to_python(stack[int(i)]);
    if (!a) throw PythonKernelError();
    if (i < positional) {
      PyTuple_SET_ITEM(args, Py_ssize_t(i + first), a);
    } else {
      const int failed = PyDict_SetItemString(kwargs.p, op.schema.args[i].name.c_str(), a);
      Py_DECREF(a);
      if (failed) throw PythonKernelError();
    }
  }
  PyObject* r = PyObject_Call(fn, args, kwargs.p);
  if (!r) throw PythonKernelError();
  PyRef owned_r{r};
  const size_t want = op.schema.returns.size();
  stack.clear();
  auto push = [&](PyObject* o, size_t i) {
    DESCENT_CHECK(is_tensor(o), TypeError, "the Python kernel ", name, " of '", op.name, "' returned ",
                  Py_TYPE(o)->tp_name, " where ", want > 1 ? "result " + std::to_string(i) + ", a Tensor," : "a Tensor",
                  " belongs");
    stack.push(IValue(unwrap(o)));
  };
  if (want == 1) {
    push(r, 0);
    return;
  }
  DESCENT_CHECK(PyTuple_Check(r) && size_t(PyTuple_GET_SIZE(r)) == want, TypeError, "the Python kernel ", name, " of '",
                op.name, "' must return a tuple of ", want, " tensors");
  for (size_t i = 0; i < want; ++i) push(PyTuple_GET_ITEM(r, Py_ssize_t(i)), i);
}
void python_kernel(const OpEntry& op, DispatchKeySet keys, Stack& stack) { run_python(op, keys, stack, false); }
void python_fallback(const OpEntry& op, DispatchKeySet keys, Stack& stack) { run_python(op, keys, stack, true); }

std::vector<DispatchKey> runtime_keys_of(DispatchKey key) {
  std::vector<DispatchKey> out;
  if (is_alias(key)) {
    const DispatchKeySet runtime = alias_runtime_keys(key);
    for (int i = 1; i <= kNumRuntimeKeys; ++i)
      if (runtime.has(DispatchKey(i))) out.push_back(DispatchKey(i));
  } else {
    out.push_back(key);
  }
  return out;
}

DispatchKey key_named(const std::string& name) {
  for (int k = 1; k <= kNumDispatchKeys; ++k)
    if (name == dispatch_key_name(DispatchKey(k))) return DispatchKey(k);
  throw ValueError("no dispatch key named '" + name +
                   "' (descent's keys: CPU, Sim, CUDA, AutogradCPU, Autograd, "
                   "CompositeImplicitAutograd, BackendSelect, ADInplaceOrView, ...)");
}

// _library_impl(operator name, key name, fn, fn's name) -> handle: fn becomes the operator's kernel at the key
// (at each of its runtime keys, for an alias key such as Autograd); None makes the key a fallthrough for it.
PyObject* py_library_impl(PyObject*, PyObject* args) {
  const char *name, *key_name, *fn_name;
  PyObject* fn;
  if (!PyArg_ParseTuple(args, "ssOs", &name, &key_name, &fn, &fn_name)) return nullptr;
  if (fn != Py_None && !PyCallable_Check(fn))
    return PyErr_Format(PyExc_TypeError, "impl(): the kernel must be callable, not %s", Py_TYPE(fn)->tp_name);
  DESCENT_PY_TRY
  const OpEntry* e = find_operator(name);
  DESCENT_CHECK(e != nullptr, ValueError, "impl(): no operator named '", name, "' (descent ops lists the table's)");
  const DispatchKey key = key_named(key_name);
  auto k = std::make_unique<PythonKernel>();
  k->op = const_cast<OpEntry*>(e);
  k->keys = runtime_keys_of(key);
  k->fn = fn == Py_None ? nullptr : fn;  // None: fallthrough_kernel, the op skips the key
  k->name = trace::intern(fn_name);
  std::lock_guard<std::mutex> lock(kernels_mutex());
  for (DispatchKey rk : k->keys)
    DESCENT_CHECK(!registered(e, rk), ValueError, "impl(): '", e->name, "' already has a Python kernel at ",
                  dispatch_key_name(rk), " (remove its library first)");
  KernelSlot slot;
  slot.boxed = k->fn ? python_kernel : nullptr;
  slot.fallthrough = k->fn ? -1 : 1;  // a kernel of its own is never skipped; a fallthrough always is
  for (DispatchKey rk : k->keys) k->previous.push_back(swap_op_kernel(*k->op, rk, slot));
  return keep(std::move(k));
  DESCENT_PY_CATCH(nullptr)
}

// _library_fallback(key name, fn or None, fn's name) -> handle: fn becomes the key's fallback for every
// operator without a kernel of its own there (None: the key falls through).
PyObject* py_library_fallback(PyObject*, PyObject* args) {
  const char *key_name, *fn_name;
  PyObject* fn;
  if (!PyArg_ParseTuple(args, "sOs", &key_name, &fn, &fn_name)) return nullptr;
  if (fn != Py_None && !PyCallable_Check(fn))
    return PyErr_Format(PyExc_TypeError, "fallback(): the kernel must be callable, not %s", Py_TYPE(fn)->tp_name);
  DESCENT_PY_TRY
  auto k = std::make_unique<PythonKernel>();
  k->op = nullptr;
  k->keys = runtime_keys_of(key_named(key_name));
  k->fn = fn == Py_None ? nullptr : fn;
  k->name = trace::intern(fn_name);
  const Kernel slot = fn == Py_None ? Kernel::Fallthrough() : Kernel(python_fallback);
  std::lock_guard<std::mutex> lock(kernels_mutex());
  for (DispatchKey rk : k->keys)
    DESCENT_CHECK(!registered(nullptr, rk), ValueError, "fallback(): ", dispatch_key_name(rk),
                  " already has a fallback from Python (remove its library first)");
  for (DispatchKey rk : k->keys) k->previous_fallbacks.push_back(swap_fallback(rk, slot));
  return keep(std::move(k));
  DESCENT_PY_CATCH(nullptr)
}

// _library_remove(handle): the kernel goes, and what it replaced comes back.
PyObject* py_library_remove(PyObject*, PyObject* arg) {
  const long long handle = PyLong_AsLongLong(arg);
  if (handle == -1 && PyErr_Occurred()) return nullptr;
  DESCENT_PY_TRY
  PyObject* fn = nullptr;
  {
    std::lock_guard<std::mutex> lock(kernels_mutex());
    auto& all = python_kernels();
    for (auto it = all.begin(); it != all.end(); ++it) {
      if ((*it)->handle != handle) continue;
      PythonKernel& k = **it;
      for (size_t i = 0; i < k.keys.size(); ++i) {
        if (k.op != nullptr)
          swap_op_kernel(*k.op, k.keys[i], k.previous[i]);
        else
          swap_fallback(k.keys[i], k.previous_fallbacks[i]);
      }
      fn = k.fn;
      all.erase(it);
      break;
    }
  }
  Py_XDECREF(fn);
  Py_RETURN_NONE;
  DESCENT_PY_CATCH(nullptr)
}

// [SECTION] Defining and calling operators by name -------------------------------------------

// The overloads of one operator name ("mylib::myop", or "aten::add.Tensor" for one), built on first use
// and dropped whenever an operator is defined.
std::map<std::string, OverloadGroup>& groups() {
  static std::map<std::string, OverloadGroup> g;
  return g;
}

const OverloadGroup& group_of(const std::string& name) {
  auto& all = groups();
  auto it = all.find(name);
  if (it != all.end()) return it->second;
  OverloadGroup g;
  const std::string suffix = ".default";  // torch.ops.aten.sum.default: the overload without a name
  const bool plain =
      name.size() > suffix.size() && name.compare(name.size() - suffix.size(), suffix.size(), suffix) == 0;
  if (plain || name.find('.') != std::string::npos) {
    const OpEntry* e = find_operator(plain ? name.substr(0, name.size() - suffix.size()) : name);
    if (e) g.overloads.push_back(e);
  } else {
    g.overloads = find_overloads(name);
  }
  DESCENT_CHECK(!g.overloads.empty(), ValueError, "no operator named '", name, "'");
  g.name = g.overloads[0]->schema.name;
  return all.emplace(name, std::move(g)).first->second;
}

// _library_define(namespace, schema) -> the operator's full name.
PyObject* py_library_define(PyObject*, PyObject* args) {
  const char *ns, *schema;
  if (!PyArg_ParseTuple(args, "ss", &ns, &schema)) return nullptr;
  DESCENT_PY_TRY
  Library lib(Library::DEF, ns);
  lib.def(schema);
  groups().clear();
  Schema parsed = parse_schema(schema);
  if (parsed.ns.empty()) parsed.ns = ns;
  return PyUnicode_FromString(parsed.full_name().c_str());
  DESCENT_PY_CATCH(nullptr)
}

// _call_operator(name, *args, **kwargs): the operator (or the overloads) called `name`, parsed and dispatched
// as descent.add is. What descent.ops.<ns>.<name> calls.
PyObject* py_call_operator(PyObject*, PyObject* const* args, Py_ssize_t nargs, PyObject* kwnames) {
  nargs = PyVectorcall_NARGS(nargs);
  if (nargs < 1 || !PyUnicode_Check(args[0]))
    return PyErr_Format(PyExc_TypeError, "_call_operator(name, *args, **kwargs): the name must be a str");
  DESCENT_PY_TRY
  const OverloadGroup& g = group_of(utf8_text(args[0]));
  trace::ScopedSpan span(trace::Floor::Binding, g.overloads[0]->schema.name.c_str());
  Stack stack;
  const OpEntry* op = nullptr;
  if (!parse_args(g, args + 1, nargs - 1, kwnames, stack, &op)) return nullptr;
  if (span.active()) span.arg("overload", op->name);
  {
    GilRelease release;
    call_boxed(*op, stack);
  }
  return wrap_results(*op, stack);
  DESCENT_PY_CATCH(nullptr)
}

PyMethodDef library_methods[] = {
    {"_library_impl", py_library_impl, METH_VARARGS,
     "_library_impl(operator, key, fn, fn_name) -> handle: fn is the operator's kernel at the key"},
    {"_library_remove", py_library_remove, METH_O,
     "_library_remove(handle): the kernel goes, the one it replaced comes back"},
    {"_library_define", py_library_define, METH_VARARGS, "_library_define(namespace, schema) -> the operator's name"},
    {"_library_fallback", py_library_fallback, METH_VARARGS,
     "_library_fallback(key, fn or None, name) -> handle: the key's fallback (None: a fallthrough)"},
    {"_call_operator", reinterpret_cast<PyCFunction>(reinterpret_cast<void (*)()>(py_call_operator)),
     METH_FASTCALL | METH_KEYWORDS, "_call_operator(name, *args, **kwargs): calls an operator by its name"},
    {nullptr, nullptr, 0, nullptr},
};

}  // namespace

// A stack value as Python: a tensor wrapped, numbers and lists as Python's (binding.h).
PyObject* ivalue_to_python(const IValue& v) {
  switch (v.tag()) {
    case IValue::Tag::None:
      Py_RETURN_NONE;
    case IValue::Tag::Tensor:
      return wrap(v.to_tensor());
    case IValue::Tag::Double:
      return PyFloat_FromDouble(v.to_double());
    case IValue::Tag::Int:
      return PyLong_FromLongLong(v.to_int());
    case IValue::Tag::Bool:
      return PyBool_FromLong(v.to_bool());
    case IValue::Tag::IntList: {
      const DimVector& l = v.to_int_list();
      return py_list(l.size(), [&](size_t i) { return PyLong_FromLongLong(l[i]); });
    }
    case IValue::Tag::ScalarType: {
      PyObject* d = dtype_object(v.to_scalar_type());
      Py_INCREF(d);
      return d;
    }
    case IValue::Tag::Device:
      return device_object(v.to_device());
    case IValue::Tag::TensorList: {
      const OptionalTensorList& l = v.to_tensor_list();
      return py_list(size_t(l.size()),
                     [&](size_t i) { return l[int(i)].defined() ? wrap(l[int(i)]) : (Py_INCREF(Py_None), Py_None); });
    }
  }
  Py_RETURN_NONE;
}

bool init_library(PyObject* module) { return PyModule_AddFunctions(module, library_methods) == 0; }

}  // namespace descent::binding
