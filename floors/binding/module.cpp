// The module descent._C: one Python function per op of the table, and the
// module's start, which adds the types and the functions of the binding's
// other files: tensors from Python data (tensor_from_data.cpp), the
// runtime's settings (settings.cpp), the thread's state (thread_state.cpp),
// the op table and the verifier (op_table.cpp), devices (device_object.cpp),
// tracing (trace_object.cpp), autograd (autograd_object.cpp) and
// descent.library (library_object.cpp). A C++ error becomes a Python one in
// errors.cpp.
//
// [SECTION] Op functions
// [SECTION] Module init
#include <array>
#include <utility>
#include <vector>

#include "floors/autograd/node.h"
#include "floors/binding/binding.h"
#include "floors/registration.h"

namespace descent::binding {

// [SECTION] Op functions ---------------------------------------------------------

namespace {

// GilRelease (binding.h) releases the GIL around every kernel call.

// An in-place op (-> Tensor(a!)) returns the very Python object it wrote
// into, as PyTorch's bindings do: x.add_(1) is x, and `x += 1` keeps x.
PyObject* written_argument(const OpEntry& op, PyObject* const* args, Py_ssize_t nargs, PyObject* kwnames) {
  size_t j = 0;
  while (j < op.schema.args.size() && !op.schema.args[j].is_write) ++j;
  PyObject* o = nullptr;
  if (Py_ssize_t(j) < nargs) {
    o = args[j];
  } else {
    Py_ssize_t nkw = kwnames ? PyTuple_GET_SIZE(kwnames) : 0;
    for (Py_ssize_t k = 0; k < nkw && !o; ++k)
      if (utf8_text(PyTuple_GET_ITEM(kwnames, k)) == op.schema.args[j].name) o = args[nargs + k];
  }
  DESCENT_CHECK(o != nullptr, Error, op.name, ": the written-to argument was not found");
  Py_INCREF(o);
  return o;
}

// A factory's `requires_grad=` keyword, which is not in aten's schema: as in
// PyTorch's generated binding, the binding takes it off the call and sets it
// on the result. Returns -1 with a Python error set when it is not a bool.
int take_requires_grad(PyObject* const* args, Py_ssize_t nargs, PyObject*& kwnames, PyObject** rest) {
  int requires_grad = 0;
  const Py_ssize_t nkw = PyTuple_GET_SIZE(kwnames);
  PyObject* kept = PyTuple_New(nkw - 1);
  if (!kept) return -1;
  Py_ssize_t j = 0;
  for (Py_ssize_t k = 0; k < nkw; ++k) {
    PyObject* name = PyTuple_GET_ITEM(kwnames, k);
    if (utf8_text(name) == "requires_grad") {
      PyObject* v = args[nargs + k];
      if (!PyBool_Check(v)) {
        Py_DECREF(kept);
        PyErr_Format(PyExc_TypeError, "argument 'requires_grad' must be bool, not %s", Py_TYPE(v)->tp_name);
        return -1;
      }
      requires_grad = v == Py_True;
      continue;
    }
    Py_INCREF(name);
    PyTuple_SET_ITEM(kept, j, name);
    rest[j++] = args[nargs + k];
  }
  kwnames = kept;
  return requires_grad;
}

bool has_keyword(PyObject* kwnames, const char* name) {
  for (Py_ssize_t k = 0; kwnames && k < PyTuple_GET_SIZE(kwnames); ++k)
    if (utf8_text(PyTuple_GET_ITEM(kwnames, k)) == name) return true;
  return false;
}

// The function behind _C.add, _C.max, ...: group `index` of the overloads.
PyObject* op_function(size_t index, PyObject* const* args, Py_ssize_t nargs, PyObject* kwnames) {
  const OverloadGroup& g = overload_groups()[index];
  DESCENT_PY_TRY
  trace::ScopedSpan span(trace::Floor::Binding, g.overloads[0]->schema.name.c_str());
  nargs = PyVectorcall_NARGS(nargs);
  int requires_grad = 0;
  PyObject* call_args[kMaxStack * 2];
  PyRef own_kwnames;
  if (g.overloads[0]->kind == OpKind::Factory && has_keyword(kwnames, "requires_grad")) {
    if (nargs + PyTuple_GET_SIZE(kwnames) > Py_ssize_t(std::size(call_args))) {
      PyErr_Format(PyExc_TypeError, "%s() got too many arguments", g.name.c_str());
      return nullptr;
    }
    std::copy(args, args + nargs, call_args);
    requires_grad = take_requires_grad(args, nargs, kwnames, call_args + nargs);
    if (requires_grad < 0) return nullptr;
    own_kwnames.reset(kwnames);
    args = call_args;
  }
  Stack stack;
  const OpEntry* op = nullptr;
  if (!parse_args(g, args, nargs, kwnames, stack, &op)) return nullptr;
  if (default_device() && op->kind == OpKind::Factory && stack.size() == int(op->schema.args.size()) &&
      op->schema.args.back().name == "device" && stack[stack.size() - 1].is_none())
    stack[stack.size() - 1] = IValue(*default_device());  // Note [The default device]
  if (span.active()) span.arg("overload", op->name);
  return call_parsed(*op, stack, args, nargs, kwnames, requires_grad);
  DESCENT_PY_CATCH(nullptr)
}

}  // namespace

PyObject* call_parsed(const OpEntry& op, Stack& stack, PyObject* const* args, Py_ssize_t nargs, PyObject* kwnames,
                      bool requires_grad) {
  {
    GilRelease release;
    call_boxed(op.id, stack);
  }
  if (op.schema.returns[0].is_write) return written_argument(op, args, nargs, kwnames);
  if (requires_grad) autograd::set_requires_grad(stack[0].to_tensor(), true);
  return wrap_results(op, stack);
}

namespace {

std::vector<PyMethodDef>& op_defs() {
  static std::vector<PyMethodDef> defs;
  return defs;
}

// Note [Module functions of a type object]
// ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
// PyTorch's torch.randn is a method of a class, torch._C._VariableFunctions,
// bound to the class object: repr(torch.randn) is "<built-in method randn of
// type object at 0x...>", and lesson 0 shows it. descent binds its op
// functions to a class of the same name the same way; torch._C._nn's are
// the module's functions ("<built-in function linear>"), as descent._C._nn's.
// With the class (or the module) as `self`, a function finds its overload
// group by its own address: one small C function per group, made from a
// template (op_function_at<I>), at most kNumOps of them.
template <size_t I>
PyObject* op_function_at(PyObject*, PyObject* const* args, Py_ssize_t nargs, PyObject* kwnames) {
  return op_function(I, args, nargs, kwnames);
}
using FastFunction = PyObject* (*)(PyObject*, PyObject* const*, Py_ssize_t, PyObject*);
template <size_t... I>
constexpr std::array<FastFunction, sizeof...(I)> op_function_table(std::index_sequence<I...>) {
  return {&op_function_at<I>...};
}
constexpr auto kOpFunctions = op_function_table(std::make_index_sequence<kNumOps>{});

PyTypeObject g_variable_functions = {PyVarObject_HEAD_INIT(nullptr, 0) "descent._C._VariableFunctionsClass"};

PyModuleDef nn_module_def = {PyModuleDef_HEAD_INIT,
                             "descent._C._nn",
                             "the ops PyTorch keeps in torch._C._nn (python_module: nn), which "
                             "torch.nn.functional calls",
                             -1,
                             nullptr,
                             nullptr,
                             nullptr,
                             nullptr,
                             nullptr};

// One function per overload group: in _C, or in _C._nn for the rows whose
// Python module is NN (Note [One op table]), as PyTorch's torch._C._nn.
bool add_op_functions(PyObject* m) {
  PyObject* nn = PyModule_Create(&nn_module_def);
  if (!nn || PyModule_AddObject(m, "_nn", nn) < 0) {
    Py_XDECREF(nn);
    return false;
  }
  // `import descent._C._nn` finds it too.
  if (PyDict_SetItemString(PyImport_GetModuleDict(), "descent._C._nn", nn) < 0) return false;
  g_variable_functions.tp_flags = Py_TPFLAGS_DEFAULT;
  g_variable_functions.tp_doc = "the class whose methods are descent's op functions (torch._C._VariableFunctionsClass)";
  if (PyType_Ready(&g_variable_functions) < 0) return false;
  Py_INCREF(&g_variable_functions);
  if (PyModule_AddObject(m, "_VariableFunctions", reinterpret_cast<PyObject*>(&g_variable_functions)) < 0) return false;
  const auto& groups = overload_groups();
  DESCENT_CHECK(groups.size() <= kOpFunctions.size(), Error, "more overload groups than op functions");
  op_defs().resize(groups.size());
  for (size_t i = 0; i < groups.size(); ++i) {
    if (groups[i].overloads[0]->python_module == PythonModule::Hidden) continue;  // descent.ops.aten.<name> only
    PyMethodDef& d = op_defs()[i];
    d.ml_name = groups[i].overloads[0]->schema.name.c_str();  // lives as long as the op table
    d.ml_meth = reinterpret_cast<PyCFunction>(reinterpret_cast<void (*)()>(kOpFunctions[i]));
    d.ml_flags = METH_FASTCALL | METH_KEYWORDS;
    d.ml_doc = groups[i].overloads[0]->schema.text.c_str();
    const bool in_nn = groups[i].overloads[0]->python_module == PythonModule::NN;
    // Note [Module functions of a type object]
    PyObject* fn = PyCFunction_NewEx(&d, in_nn ? nn : reinterpret_cast<PyObject*>(&g_variable_functions), nullptr);
    PyObject* home = in_nn ? nn : m;
    if (!fn || PyModule_AddObject(home, d.ml_name, fn) < 0) {
      Py_XDECREF(fn);
      return false;
    }
  }
  return true;
}

// [SECTION] Module init -----------------------------------------------------------------

PyObject* py_set_tensor_class(PyObject*, PyObject* cls) {
  if (!PyType_Check(cls) || !PyType_IsSubtype(reinterpret_cast<PyTypeObject*>(cls), g_tensor_base)) {
    PyErr_SetString(PyExc_TypeError, "_set_tensor_class expects a subclass of TensorBase");
    return nullptr;
  }
  Py_INCREF(cls);
  g_tensor_class = reinterpret_cast<PyTypeObject*>(cls);
  Py_RETURN_NONE;
}

PyMethodDef module_methods[] = {
    {"_set_tensor_class", py_set_tensor_class, METH_O, "registers descent.Tensor as the class of new tensors"},
    {nullptr, nullptr, 0, nullptr},
};

// The functions of the binding's other files, added to the module at its start.
bool add_function_tables(PyObject* m) {
  for (PyMethodDef* functions :
       {g_tensor_data_functions, g_settings_functions, g_thread_state_functions, g_op_table_functions})
    if (PyModule_AddFunctions(m, functions) < 0) return false;
  return true;
}

PyModuleDef module_def = {PyModuleDef_HEAD_INIT,
                          "descent._C",
                          "descent's compiled floors 2 to 8",
                          -1,
                          module_methods,
                          nullptr,
                          nullptr,
                          nullptr,
                          nullptr};

}  // namespace

}  // namespace descent::binding

namespace descent::binding {
bool init_python_dispatch(PyObject* module);  // python_dispatch.cpp: the Python key (Note [The Python key])
bool init_fused(PyObject* module);            // fused_functions.cpp: descent.compile's kernels on devices
}  // namespace descent::binding

PyMODINIT_FUNC PyInit__C() {
  using namespace descent::binding;
  DESCENT_PY_TRY descent::register_floors();
  DESCENT_PY_CATCH(nullptr)  // Note [Registering the floors]
  PyObject* m = PyModule_Create(&module_def);
  if (!m) return nullptr;
  g_oom_error = PyErr_NewExceptionWithDoc("descent.OutOfMemoryError",
                                          "Raised when an allocator cannot find memory even after freeing its cache.",
                                          PyExc_RuntimeError, nullptr);
  Py_XINCREF(g_oom_error);
  if (!g_oom_error || PyModule_AddObject(m, "OutOfMemoryError", g_oom_error) < 0 || !add_function_tables(m) ||
      !init_value_types(m) || !init_tensor_type(m) || !init_autograd(m, g_tensor_base) || !init_python_function(m) ||
      !init_trace_type(m) || !init_devices(m) || !init_library(m) || !init_python_dispatch(m) || !init_fused(m)) {
    Py_DECREF(m);
    return nullptr;
  }
  try {
    if (!add_op_functions(m)) {
      Py_DECREF(m);
      return nullptr;
    }
  } catch (...) {
    set_python_error();
    Py_DECREF(m);
    return nullptr;
  }
  return m;
}
