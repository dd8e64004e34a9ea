// The binding of floor 4: a tensor's autograd attributes (grad, grad_fn,
// is_leaf, retain_grad, detach, hooks), the graph's nodes as Python objects,
// and the engine's entry point, _C._run_backward.
//
// [SECTION] Nodes
// [SECTION] Python functions as hooks
// [SECTION] Node methods
// [SECTION] Tensor attributes
// [SECTION] The engine's entry point
#include <cctype>
#include <memory>
#include <string>
#include <string_view>
#include <unordered_map>

#include "floors/autograd/engine.h"
#include "floors/binding/binding.h"

namespace descent::binding {

using autograd::Node;

// [SECTION] Nodes -----------------------------------------------------------------------

PyTypeObject g_node_type = {PyVarObject_HEAD_INIT(nullptr, 0) "descent._C.Node"};

// Note [A class per node]
// ~~~~~~~~~~~~~~~~~~~~~~~
// In PyTorch every kind of node has a Python class of its own, named as the
// node: type(y.grad_fn) is <class 'MulBackward0'>, a subclass of
// torch.autograd.graph.Node, and a node has one Python object, so
// `y.grad_fn is y.grad_fn`. descent makes a node's class the first time a
// node of that name is wrapped (a subclass of _C.Node made from a spec, kept
// for the life of the process), and keeps a borrowed pointer to the node's
// object on the node (Node::py_weak), cleared when the object dies. A custom
// Function's node is its ctx instead (Note [A custom Function's node]).
namespace {
void node_class_dealloc(PyObject* o);
}

PyTypeObject* node_class(const char* name) {
  // Keyed "builtins.MulBackward0": the class's __module__ is builtins, so it prints as <class 'MulBackward0'>, as
  // PyTorch's do, and its tp_name (error messages) is the part after the dot. The key outlives the class.
  static constexpr std::string_view kModule = "builtins.";
  static auto* classes = new std::unordered_map<std::string, PyTypeObject*>;
  auto [it, made] = classes->try_emplace(std::string(kModule) + name, nullptr);
  if (!made) return it->second;
  PyType_Slot slots[] = {{Py_tp_dealloc, reinterpret_cast<void*>(node_class_dealloc)}, {0, nullptr}};
  PyType_Spec spec{it->first.c_str(), 0, 0, Py_TPFLAGS_DEFAULT, slots};
  PyObject* bases = PyTuple_Pack(1, reinterpret_cast<PyObject*>(&g_node_type));
  PyObject* cls = bases ? PyType_FromSpecWithBases(&spec, bases) : nullptr;
  Py_XDECREF(bases);
  if (!cls) {
    classes->erase(it);
    return nullptr;
  }
  it->second = reinterpret_cast<PyTypeObject*>(cls);  // the map's reference
  it->second->tp_name = it->first.c_str() + kModule.size();
  return it->second;
}

PyObject* node_object(const Ref<Node>& n) {
  if (!n) Py_RETURN_NONE;
  if (n->pyobj) {  // a custom Function's node: its ctx (Note [A custom Function's node])
    auto* o = static_cast<PyObject*>(n->pyobj);
    Py_INCREF(o);
    return o;
  }
  if (n->py_weak) {  // Note [A class per node]
    auto* o = static_cast<PyObject*>(n->py_weak);
    Py_INCREF(o);
    return o;
  }
  PyTypeObject* cls = node_class(n->name);
  if (!cls) return nullptr;
  auto* o = reinterpret_cast<NodeObject*>(cls->tp_alloc(cls, 0));
  if (!o) return nullptr;
  new (&o->node) Ref<Node>(n);
  o->cdata = nullptr;
  n->py_weak = o;
  return reinterpret_cast<PyObject*>(o);
}

// A tuple of tensors (None for an undefined one), as node hooks receive them.
PyObject* tensor_tuple(const autograd::TensorList& ts) {
  PyObject* t = PyTuple_New(Py_ssize_t(ts.size()));
  if (!t) return nullptr;
  for (size_t i = 0; i < ts.size(); ++i) {
    PyObject* o = ts[i].defined() ? wrap(ts[i]) : (Py_INCREF(Py_None), Py_None);
    if (!o) {
      Py_DECREF(t);
      return nullptr;
    }
    PyTuple_SET_ITEM(t, Py_ssize_t(i), o);
  }
  return t;
}

namespace {

// [SECTION] Python functions as hooks ---------------------------------------------------

// Owns a Python callable for a hook that may run, and be dropped, without
// the GIL held (backward releases it): both take it first.
struct PyCallable {
  explicit PyCallable(PyObject* f) : fn(f) { Py_INCREF(f); }
  ~PyCallable() {
    PyGILState_STATE g = PyGILState_Ensure();
    Py_DECREF(fn);
    PyGILState_Release(g);
  }
  PyObject* fn;
};

// What a hook returned: None keeps the gradient, a Tensor replaces it.
Tensor hook_result(PyObject* r, const char* what) {
  if (!r) throw PythonError();
  PyRef owned{r};
  if (r == Py_None) return Tensor();
  DESCENT_CHECK(is_tensor(r), TypeError, what, " must return None or a Tensor, not ", Py_TYPE(r)->tp_name);
  return unwrap(r);
}

// A hook's name in its errors: its __name__ ("<lambda>"), as PyTorch's hook_name.
std::string hook_name(PyObject* fn) {
  PyRef name{PyObject_GetAttrString(fn, "__name__")};
  if (!name.p || !PyUnicode_Check(name.p)) {
    PyErr_Clear();
    return "<unknown>";
  }
  const char* s = PyUnicode_AsUTF8(name.p);
  return s ? s : "<unknown>";
}

// "CPUFloatType", "CUDAHalfType": PyTorch's Tensor.toString() in a hook's type error.
std::string type_string(const Tensor& t) {
  std::string backend = device_type_name(t.device().type);
  for (char& c : backend) c = char(std::toupper(static_cast<unsigned char>(c)));
  return backend + type_word(t.dtype()) + "Type";
}

// Note [A hook may not change what a gradient is]
// ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
// A tensor hook may replace the gradient, but only by one of the same
// dtype, device and shape: the engine has already checked the gradient
// against what the node takes (Note [Validating a node's outputs]), and a
// leaf's .grad must keep the leaf's shape. PyTorch checks the hook's result
// where it calls a Python hook (check_variable_result, one check for a leaf's
// hook and a non-leaf's), with these messages, as a RuntimeError.
void check_hook_result(const Tensor& original, const Tensor& result, PyObject* fn) {
  DESCENT_CHECK(original.dtype() == result.dtype() && original.device().type == result.device().type, Error, "hook '",
                hook_name(fn), "' has changed the type of value (was ", type_string(original), " got ",
                type_string(result), ")");
  DESCENT_CHECK(original.sizes() == result.sizes(), Error, "hook '", hook_name(fn), "' has changed the size of value");
}

autograd::GradHook tensor_hook(PyObject* fn) {
  auto f = std::make_shared<PyCallable>(fn);
  return [f](const Tensor& g) -> Tensor {
    if (!g.defined()) return Tensor();
    Gil gil;
    PyObject* arg = wrap(g);
    if (!arg) throw PythonError();
    PyObject* r = PyObject_CallOneArg(f->fn, arg);
    Py_DECREF(arg);
    Tensor out = hook_result(r, "a tensor hook");
    if (out.defined()) check_hook_result(g, out, f->fn);  // Note [A hook may not change what a gradient is]
    return out;
  };
}

// A hook's returned tuple replacing `ts` element by element (None keeps one).
void replace_from(PyObject* r, autograd::TensorList& ts, const char* what) {
  if (!r) throw PythonError();
  PyRef owned{r};
  if (r == Py_None) return;
  DESCENT_CHECK(PyTuple_Check(r) && size_t(PyTuple_GET_SIZE(r)) == ts.size(), TypeError, what,
                " must return None or a tuple of ", ts.size(), " gradients");
  for (size_t i = 0; i < ts.size(); ++i) {
    PyObject* o = PyTuple_GET_ITEM(r, Py_ssize_t(i));
    if (o == Py_None) continue;
    DESCENT_CHECK(is_tensor(o), TypeError, what, " returned a ", Py_TYPE(o)->tp_name,
                  " where a Tensor or None belongs");
    ts[i] = unwrap(o);
  }
}

// [SECTION] Node methods ----------------------------------------------------------------

Node& node_of(PyObject* o) {
  auto* n = reinterpret_cast<NodeObject*>(o);
  if (n->node) return *n->node;
  // A custom Function's ctx whose forward recorded no node, or whose graph is gone.
  DESCENT_CHECK(n->cdata, Error, "this ", Py_TYPE(o)->tp_name,
                " object is no node of a graph: its Function's "
                "forward recorded none (no input required grad), or the graph it belonged to is gone");
  return *n->cdata;
}

void node_dealloc(PyObject* o) {
  Ref<Node>& n = reinterpret_cast<NodeObject*>(o)->node;
  if (n && n->py_weak == o) n->py_weak = nullptr;  // Note [A class per node]
  n.~Ref<Node>();
  Py_TYPE(o)->tp_free(o);
}
void node_class_dealloc(PyObject* o) {  // an instance of a class made by node_class: a heap type's own reference
  PyTypeObject* type = Py_TYPE(o);
  node_dealloc(o);
  Py_DECREF(type);
}
// As torch prints one: <AddBackward0 object at 0x7f...>
PyObject* node_repr(PyObject* o) { return PyUnicode_FromFormat("<%s object at %p>", node_of(o).name, &node_of(o)); }
// PyTorch's Node::name(): the class's name, or the C++ one of a node written by hand (torch::autograd::AccumulateGrad).
PyObject* node_name(PyObject* o, PyObject*) {
  DESCENT_PY_TRY return PyUnicode_FromString(node_of(o).full_name());
  DESCENT_PY_CATCH(nullptr)
}
PyObject* node_sequence_nr(PyObject* o, PyObject*) {
  DESCENT_PY_TRY return PyLong_FromUnsignedLongLong(node_of(o).sequence_nr);
  DESCENT_PY_CATCH(nullptr)
}
// grad_fn._saved_self, ._saved_other, ._saved_result, ...: what the node saved, by its schema name, as PyTorch's
// generated nodes expose it.
PyObject* node_getattro(PyObject* o, PyObject* attr) {
  PyObject* found = PyObject_GenericGetAttr(o, attr);
  if (found || !PyErr_ExceptionMatches(PyExc_AttributeError) || !PyUnicode_Check(attr)) return found;
  const char* a = PyUnicode_AsUTF8(attr);
  if (!a || std::string_view(a).substr(0, 7) != "_saved_") return nullptr;
  PyErr_Clear();
  DESCENT_PY_TRY
  Tensor t;
  if (!node_of(o).saved_value(std::string_view(a).substr(7), t)) {
    PyErr_Format(PyExc_AttributeError, "'%s' object has no attribute '%s'", Py_TYPE(o)->tp_name, a);
    return nullptr;
  }
  return wrap(t);
  DESCENT_PY_CATCH(nullptr)
}
PyObject* node_richcompare(PyObject* a, PyObject* b, int op) {
  if ((op != Py_EQ && op != Py_NE) || !PyObject_TypeCheck(b, &g_node_type)) Py_RETURN_NOTIMPLEMENTED;
  const bool eq = &node_of(a) == &node_of(b);
  return PyBool_FromLong(op == Py_EQ ? eq : !eq);
}
Py_hash_t node_hash(PyObject* o) { return Py_hash_t(reinterpret_cast<uintptr_t>(&node_of(o)) >> 4); }

// ((node or None, input_nr), ...): where each input's gradient goes next.
PyObject* node_next_functions(PyObject* o, void*) {
  DESCENT_PY_TRY
  const auto& edges = node_of(o).next_edges;
  PyObject* t = PyTuple_New(Py_ssize_t(edges.size()));
  if (!t) return nullptr;
  for (size_t i = 0; i < edges.size(); ++i) {
    PyObject* n = node_object(edges[i].fn);
    PyObject* pair = n ? Py_BuildValue("(NI)", n, unsigned(edges[i].input_nr)) : nullptr;
    if (!pair) {
      Py_DECREF(t);
      return nullptr;
    }
    PyTuple_SET_ITEM(t, Py_ssize_t(i), pair);
  }
  return t;
  DESCENT_PY_CATCH(nullptr)
}
// AccumulateGrad.variable: the leaf it writes .grad into.
PyObject* node_variable(PyObject* o, void*) {
  DESCENT_PY_TRY
  Node& n = node_of(o);
  if (!n.is_accumulate_grad()) {
    PyErr_Format(PyExc_AttributeError, "'%s' object has no attribute 'variable'", n.name);
    return nullptr;
  }
  return wrap(Tensor(static_cast<autograd::AccumulateGrad&>(n).variable));
  DESCENT_PY_CATCH(nullptr)
}
PyObject* node_saved(PyObject* o, void*) {
  DESCENT_PY_TRY return PyUnicode_FromString(node_of(o).saved_names().c_str());
  DESCENT_PY_CATCH(nullptr)
}

// descent.autograd.RemovableHandle, set by descent/autograd/__init__.py: what register_hook returns.
PyObject* g_handle_class = nullptr;
PyObject* handle(PyObject* owner, int id) {
  if (!g_handle_class) return PyLong_FromLong(id);
  return PyObject_CallFunction(g_handle_class, "Oi", owner, id);
}

PyObject* node_register_hook(PyObject* o, PyObject* fn) {
  DESCENT_PY_TRY
  DESCENT_CHECK(PyCallable_Check(fn), TypeError, "register_hook expects a callable");
  auto f = std::make_shared<PyCallable>(fn);
  const int id = autograd::next_hook_id();
  node_of(o).post_hooks.emplace_back(id,
                                     [f](autograd::TensorList& grad_inputs, const autograd::TensorList& grad_outputs) {
                                       Gil gil;
                                       PyObject* a = tensor_tuple(grad_inputs);
                                       PyObject* b = a ? tensor_tuple(grad_outputs) : nullptr;
                                       PyObject* r = b ? PyObject_CallFunctionObjArgs(f->fn, a, b, nullptr) : nullptr;
                                       Py_XDECREF(a);
                                       Py_XDECREF(b);
                                       replace_from(r, grad_inputs, "a Node hook");
                                     });
  return handle(o, id);
  DESCENT_PY_CATCH(nullptr)
}
PyObject* node_register_prehook(PyObject* o, PyObject* fn) {
  DESCENT_PY_TRY
  DESCENT_CHECK(PyCallable_Check(fn), TypeError, "register_prehook expects a callable");
  auto f = std::make_shared<PyCallable>(fn);
  const int id = autograd::next_hook_id();
  node_of(o).pre_hooks.emplace_back(id, [f](autograd::TensorList& grad_outputs) {
    Gil gil;
    PyObject* a = tensor_tuple(grad_outputs);
    PyObject* r = a ? PyObject_CallOneArg(f->fn, a) : nullptr;
    Py_XDECREF(a);
    replace_from(r, grad_outputs, "a Node pre-hook");
  });
  return handle(o, id);
  DESCENT_PY_CATCH(nullptr)
}
PyObject* node_remove_hook(PyObject* o, PyObject* id) {
  DESCENT_PY_TRY
  return PyBool_FromLong(node_of(o).remove_hook(int(PyLong_AsLong(id))));
  DESCENT_PY_CATCH(nullptr)
}

PyMethodDef node_methods[] = {
    {"name", node_name, METH_NOARGS,
     "the node's name, as PyTorch names it: AddBackward0, torch::autograd::AccumulateGrad"},
    {"_sequence_nr", node_sequence_nr, METH_NOARGS,
     "the node's creation order on its thread (backward runs the later first)"},
    {"register_hook", node_register_hook, METH_O,
     "hook(grad_inputs, grad_outputs) after the node runs; returns a handle"},
    {"register_prehook", node_register_prehook, METH_O, "hook(grad_outputs) before the node runs; returns a handle"},
    {"_remove_hook", node_remove_hook, METH_O, "removes a hook by id"},
    {nullptr, nullptr, 0, nullptr},
};
PyGetSetDef node_getset[] = {
    {"next_functions", node_next_functions, nullptr, "((node, input_nr), ...): where each input's gradient goes",
     nullptr},
    {"variable", node_variable, nullptr, "AccumulateGrad only: the leaf whose .grad it writes", nullptr},
    {"_saved", node_saved, nullptr, "the names of the values this node saved for its formula", nullptr},
    {nullptr, nullptr, nullptr, nullptr, nullptr},
};

// [SECTION] Tensor attributes -------------------------------------------------------------

// t.grad: a non-leaf's, unless retain_grad() was called, is never filled in,
// and reading it warns, with aten's words (TensorBase::grad(), TensorBody.h).
//
// Note [Warnings without aten's source line]
// ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
// A warning PyTorch gives from C++ (TORCH_WARN) ends with where it was
// raised: "... (Triggered internally at /pytorch/aten/src/ATen/core/TensorBody.h:494.)".
// descent's warnings carry aten's words without that tail: the file and
// line would be aten's, which descent is not.
PyObject* get_grad(PyObject* o, void*) {
  DESCENT_PY_TRY
  const Tensor& t = unwrap(o);
  const autograd::AutogradMeta* m = autograd::meta(t);
  if (m && m->grad.defined()) return wrap(m->grad);
  if (!autograd::is_leaf(t) && !(m && m->retains_grad) &&
      PyErr_WarnEx(PyExc_UserWarning,
                   "The .grad attribute of a Tensor that is not a leaf Tensor is being accessed. Its .grad attribute "
                   "won't be populated during autograd.backward(). If you indeed want the .grad field to be populated "
                   "for a non-leaf Tensor, use .retain_grad() on the non-leaf Tensor. If you access the non-leaf "
                   "Tensor by mistake, make sure you access the leaf Tensor instead. See "
                   "github.com/pytorch/pytorch/pull/30531 for more informations.",
                   1) < 0)
    return nullptr;
  Py_RETURN_NONE;
  DESCENT_PY_CATCH(nullptr)
}
int set_grad(PyObject* o, PyObject* v, void*) {
  DESCENT_PY_TRY
  const Tensor& t = unwrap(o);
  if (!v || v == Py_None) {
    if (autograd::AutogradMeta* m = autograd::meta(t)) m->grad = Tensor();
    return 0;
  }
  DESCENT_CHECK(is_tensor(v), TypeError, "assigned grad expected to be a Tensor or None but got grad of type ",
                Py_TYPE(v)->tp_name);
  const Tensor& g = unwrap(v);
  DESCENT_CHECK(g.dtype() == t.dtype(), Error, "attempting to assign a gradient with dtype '", dtype_name(g.dtype()),
                "' to a tensor with dtype '", dtype_name(t.dtype()),
                "'. Please ensure that the gradient and the tensor "
                "have the same dtype");
  DESCENT_CHECK(g.sizes() == t.sizes(), Error, "attempting to assign a gradient of size '", g.sizes().str(),
                "' to a tensor of size '", t.sizes().str(),
                "'. Please ensure that the gradient and the tensor are the "
                "same size");
  autograd::ensure_meta(t).grad = g;
  return 0;
  DESCENT_PY_CATCH(-1)
}
PyObject* get_grad_fn(PyObject* o, void*) {
  DESCENT_PY_TRY return node_object(autograd::grad_fn(unwrap(o)));
  DESCENT_PY_CATCH(nullptr)
}
PyObject* get_is_leaf(PyObject* o, void*) {
  DESCENT_PY_TRY return PyBool_FromLong(autograd::is_leaf(unwrap(o)));
  DESCENT_PY_CATCH(nullptr)
}
PyObject* get_retains_grad(PyObject* o, void*) {
  DESCENT_PY_TRY
  const autograd::AutogradMeta* m = autograd::meta(unwrap(o));
  return PyBool_FromLong(m && m->retains_grad);
  DESCENT_PY_CATCH(nullptr)
}
PyObject* m_retain_grad(PyObject* o, PyObject*) {
  DESCENT_PY_TRY autograd::retain_grad(unwrap(o));
  Py_RETURN_NONE;
  DESCENT_PY_CATCH(nullptr)
}
PyObject* m_detach(PyObject* o, PyObject*) {
  DESCENT_PY_TRY return wrap(autograd::detach(unwrap(o)));
  DESCENT_PY_CATCH(nullptr)
}
PyObject* m_detach_(PyObject* o, PyObject*) {
  DESCENT_PY_TRY
  const Tensor& t = unwrap(o);
  DESCENT_CHECK(!t.is_view(), Error, "Can't detach views in-place. Use detach() instead.");
  if (autograd::AutogradMeta* m = autograd::meta(t)) {
    m->grad_fn = Ref<Node>();
    m->output_nr = 0;
  }
  t.impl()->requires_grad = false;
  Py_INCREF(o);
  return o;
  DESCENT_PY_CATCH(nullptr)
}
PyObject* m_register_hook(PyObject* o, PyObject* fn) {
  DESCENT_PY_TRY
  DESCENT_CHECK(PyCallable_Check(fn), TypeError, "register_hook expects a callable");
  return PyLong_FromLong(autograd::register_hook(unwrap(o), tensor_hook(fn)));
  DESCENT_PY_CATCH(nullptr)
}
// hook(tensor) -> None, run on the leaf once AccumulateGrad has set its .grad
// (PyTorch's PyFunctionTensorPostAccGradHooks, with its message for a hook
// that returns something else; PyTorch runs the leaf's other hooks first).
PyObject* m_register_post_accumulate_grad_hook(PyObject* o, PyObject* fn) {
  DESCENT_PY_TRY
  DESCENT_CHECK(PyCallable_Check(fn), TypeError, "register_post_accumulate_grad_hook expects a callable");
  auto f = std::make_shared<PyCallable>(fn);
  auto hook = [f](const Tensor& leaf) {
    Gil gil;
    PyObject* arg = wrap(leaf);
    if (!arg) throw PythonError();
    PyObject* r = PyObject_CallOneArg(f->fn, arg);
    PyRef owned_arg{arg};
    if (!r) throw PythonError();
    PyRef owned{r};
    // The leaf itself counts as None (_call_hooks: `p.add_(...)` returns p).
    DESCENT_CHECK(r == Py_None || r == arg, Error, "Tensor post accumulate grad hooks should return None.");
  };
  return PyLong_FromLong(autograd::register_post_accumulate_grad_hook(unwrap(o), hook));
  DESCENT_PY_CATCH(nullptr)
}
PyObject* m_remove_hook(PyObject* o, PyObject* id) {
  DESCENT_PY_TRY autograd::remove_tensor_hook(unwrap(o), int(PyLong_AsLong(id)));
  Py_RETURN_NONE;
  DESCENT_PY_CATCH(nullptr)
}

PyGetSetDef autograd_getset[] = {
    {"grad", get_grad, set_grad, "the gradient backward accumulated here (None until then)", nullptr},
    {"grad_fn", get_grad_fn, nullptr, "the node that made this tensor (None for a leaf)", nullptr},
    {"is_leaf", get_is_leaf, nullptr, "True unless autograd recorded the op that made it", nullptr},
    {"retains_grad", get_retains_grad, nullptr, "whether retain_grad() was called on this non-leaf", nullptr},
    {nullptr, nullptr, nullptr, nullptr, nullptr},
};
PyMethodDef autograd_methods[] = {
    {"retain_grad", m_retain_grad, METH_NOARGS, "keep this non-leaf's gradient in .grad during backward"},
    {"detach", m_detach, METH_NOARGS, "the same memory, outside the graph"},
    {"detach_", m_detach_, METH_NOARGS, "takes this tensor out of the graph, in place"},
    {"_register_hook", m_register_hook, METH_O,
     "hook(grad) -> Tensor or None, run when its gradient is computed; returns an id"},
    {"_register_post_accumulate_grad_hook", m_register_post_accumulate_grad_hook, METH_O,
     "hook(tensor) -> None, run on this leaf after its .grad is updated; returns an id"},
    {"_remove_hook", m_remove_hook, METH_O, "removes a hook by id"},
    {nullptr, nullptr, 0, nullptr},
};

// [SECTION] The engine's entry point -----------------------------------------------------

// A list of tensors from a sequence (None entries allowed where `none_ok`).
bool tensor_list(PyObject* seq, autograd::TensorList& out, bool none_ok, const char* what) {
  PyObject* fast = PySequence_Fast(seq, what);
  if (!fast) return false;
  PyRef owned{fast};
  for (Py_ssize_t i = 0; i < PySequence_Fast_GET_SIZE(fast); ++i) {
    PyObject* o = PySequence_Fast_GET_ITEM(fast, i);
    if (o == Py_None && none_ok) {
      out.emplace_back();
    } else if (is_tensor(o)) {
      out.push_back(unwrap(o));
    } else {
      PyErr_Format(PyExc_TypeError, "%s: expected a Tensor%s at index %zd, got %s", what, none_ok ? " or None" : "", i,
                   Py_TYPE(o)->tp_name);
      return false;
    }
  }
  return true;
}

// _run_backward(tensors, grad_tensors, retain_graph, create_graph, inputs, allow_unused):
// inputs None: backward into .grad, returns None; else the gradients, as a tuple.
PyObject* py_run_backward(PyObject*, PyObject* args) {
  PyObject *tensors, *grads, *inputs;
  int retain = 0, create = 0, allow_unused = 0;
  if (!PyArg_ParseTuple(args, "OOppOp:_run_backward", &tensors, &grads, &retain, &create, &inputs, &allow_unused))
    return nullptr;
  DESCENT_PY_TRY
  // The crossing into C++ of loss.backward() (torch: Variable._execution_engine.run_backward).
  trace::ScopedSpan span(trace::Floor::Binding, "_run_backward");
  autograd::TensorList roots, root_grads, in;
  if (!tensor_list(tensors, roots, false, "backward(): tensors") ||
      !tensor_list(grads, root_grads, true, "backward(): grad_tensors"))
    return nullptr;
  if (inputs != Py_None && !tensor_list(inputs, in, false, "grad(): inputs")) return nullptr;
  autograd::BackwardOptions opts{bool(retain), bool(create), bool(allow_unused)};
  autograd::TensorList out;
  try {
    GilRelease release;  // device threads run nodes too, and Python hooks take the GIL where they run
    if (inputs == Py_None)
      autograd::backward(roots, root_grads, opts);
    else
      out = autograd::grad(roots, root_grads, in, opts);
  } catch (const PythonError& e) {
    e.restore();
    return nullptr;
  }
  if (inputs == Py_None) Py_RETURN_NONE;
  return tensor_tuple(out);
  DESCENT_PY_CATCH(nullptr)
}

PyObject* py_set_handle_class(PyObject*, PyObject* cls) {
  Py_INCREF(cls);
  Py_XSETREF(g_handle_class, cls);
  Py_RETURN_NONE;
}

PyMethodDef module_functions[] = {
    {"_set_handle_class", py_set_handle_class, METH_O, "registers descent.autograd.RemovableHandle"},
    {"_run_backward", py_run_backward, METH_VARARGS,
     "_run_backward(tensors, grad_tensors, retain_graph, create_graph, inputs, allow_unused): the backward engine"},
    {nullptr, nullptr, 0, nullptr},
};

}  // namespace

bool init_autograd(PyObject* m, PyTypeObject* tensor_type) {
  g_node_type.tp_basicsize = sizeof(NodeObject);
  g_node_type.tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_BASETYPE;  // _C._FunctionBase derives from it
  g_node_type.tp_doc = "A node of the autograd graph (torch.autograd.graph.Node): x.grad_fn.";
  g_node_type.tp_dealloc = node_dealloc;
  g_node_type.tp_repr = node_repr;
  g_node_type.tp_getattro = node_getattro;
  g_node_type.tp_richcompare = node_richcompare;
  g_node_type.tp_hash = node_hash;
  g_node_type.tp_methods = node_methods;
  g_node_type.tp_getset = node_getset;
  if (PyType_Ready(&g_node_type) < 0) return false;
  Py_INCREF(&g_node_type);
  if (PyModule_AddObject(m, "Node", reinterpret_cast<PyObject*>(&g_node_type)) < 0) return false;
  // The tensor's autograd attributes join TensorBase's own.
  PyObject* dict = tensor_type->tp_dict;
  for (PyGetSetDef* d = autograd_getset; d->name; ++d) {
    PyObject* descr = PyDescr_NewGetSet(tensor_type, d);
    if (!descr || PyDict_SetItemString(dict, d->name, descr) < 0) return false;
    Py_DECREF(descr);
  }
  for (PyMethodDef* d = autograd_methods; d->ml_name; ++d) {
    PyObject* descr = PyDescr_NewMethod(tensor_type, d);
    if (!descr || PyDict_SetItemString(dict, d->ml_name, descr) < 0) return false;
    Py_DECREF(descr);
  }
  PyType_Modified(tensor_type);
  for (PyMethodDef* d = module_functions; d->ml_name; ++d) {
    PyObject* fn = PyCFunction_NewEx(d, nullptr, nullptr);
    if (!fn || PyModule_AddObject(m, d->ml_name, fn) < 0) return false;
  }
  return true;
}

}  // namespace descent::binding
