// The binding of a custom autograd.Function (torch.autograd.Function): the
// graph node whose apply calls the Function's backward in Python, and
// _C._FunctionBase, the class of its ctx.
//
// [SECTION] The node
// [SECTION] _C._FunctionBase: the ctx
// [SECTION] Recording the forward
//
// Note [A custom Function's node]
// ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
// `LegendrePolynomial3.apply(x)` (descent/autograd/function.py) makes the
// ctx, an object of the class LegendrePolynomial3Backward that the
// Function's metaclass derived from _C._FunctionBase, runs
// forward(ctx, x) with grad mode off, and hands the arguments and the
// outputs to ctx._record. When grad mode is on and an argument requires
// grad, _record does what an Autograd kernel does for an op of the table
// (Note [What an Autograd kernel does], floors/autograd/variable_type.cpp):
//   1. it makes the node, a PyNode named "LegendrePolynomial3Backward",
//      with one edge per tensor argument (its grad_fn, its AccumulateGrad,
//      or None);
//   2. it makes each tensor output the node's output i: an input returned
//      unchanged becomes a new alias of it first (PyTorch makes a view), an
//      input marked dirty keeps its identity and moves its history onto the
//      node, and an output marked non-differentiable stays out of the graph;
//   3. it turns what ctx.save_for_backward kept into SavedVariables, so that
//      a saved tensor written in place afterwards is refused with PyTorch's
//      version error when backward reads ctx.saved_tensors.
// The node owns the ctx (Node::pyobj) and the ctx points back at the node
// without owning it (NodeObject::cdata, cleared when the node dies): so
// y.grad_fn *is* the ctx, as in PyTorch, with the next_functions, name()
// and hooks of any node, and the graph still points backwards only.
// The engine runs a PyNode like any node, inside its floor-4 span. Its apply
// takes the GIL, makes a missing gradient zeros (unless the forward called
// ctx.set_materialize_grads(False)), calls ctx.apply(*grads), which calls
// the Function's backward, and maps what comes back, one entry per forward
// argument, onto the tensor arguments' edges. An exception raised in
// backward stays the Python exception: PythonError unwinds the engine, and
// set_python_error keeps what Python set.
#include <algorithm>
#include <cstring>
#include <string>
#include <vector>

#include "floors/binding/binding.h"
#include "tracer/tracer.h"

namespace descent::binding {

namespace {

using autograd::Node;
using autograd::SavedVariable;
using autograd::TensorList;

// [SECTION] The node ------------------------------------------------------------------------

struct PyNode final : Node {
  // `ctx` is owned by the node from here on.
  PyNode(const char* name, PyObject* ctx) : Node(name) {
    Py_INCREF(ctx);
    pyobj = ctx;
    reinterpret_cast<NodeObject*>(ctx)->cdata = this;
  }
  ~PyNode() override {
    Gil gil;  // the last reference may go from anywhere (a kernel the GIL was released around)
    auto* ctx = static_cast<PyObject*>(pyobj);
    reinterpret_cast<NodeObject*>(ctx)->cdata = nullptr;
    Py_DECREF(ctx);
  }
  TensorList apply(TensorList&& grads) override;
  void release_saved_variables() override {
    for (SavedVariable& s : saved) s.reset();
  }
  std::string saved_names() const override {
    std::string s;
    for (size_t i = 0; i < saved.size(); ++i) s += (i ? ", " : "") + str("saved_tensors[", i, "]");
    return s;
  }

  std::vector<bool> is_tensor_input;   // one per forward argument: which of them have an edge
  std::vector<bool> is_tensor_output;  // one per forward output: which of them get a gradient
  std::vector<SavedVariable> saved;    // ctx.save_for_backward's, in order
};

// The gradient for output i as backward receives it: the one that arrived,
// zeros of the output's shape when none did (materialize), else None.
PyObject* grad_argument(const PyNode& n, size_t i, const Tensor& g, bool materialize) {
  if (g.defined()) return wrap(g);
  if (!n.is_tensor_output[i] || !materialize) Py_RETURN_NONE;
  const autograd::GradMeta& m = n.inputs[i];
  return wrap(call(Op::zeros, m.sizes, m.dtype, m.device));
}

TensorList PyNode::apply(TensorList&& grads) {
  Gil gil;
  auto* ctx = static_cast<PyObject*>(pyobj);
  PyRef flag{PyObject_GetAttrString(ctx, "materialize_grads")};
  if (!flag.p) throw PythonError();
  const int materialize = PyObject_IsTrue(flag.p);
  if (materialize < 0) throw PythonError();
  PyRef args{PyTuple_New(Py_ssize_t(grads.size()))};
  if (!args.p) throw PythonError();
  for (size_t i = 0; i < grads.size(); ++i) {
    PyObject* g = grad_argument(*this, i, grads[i], materialize);
    if (!g) throw PythonError();
    PyTuple_SET_ITEM(args.p, Py_ssize_t(i), g);
  }
  PyRef fn{PyObject_GetAttrString(ctx, "apply")};  // BackwardCFunction.apply: the Function's backward
  if (!fn.p) throw PythonError();
  PyRef r{PyObject_Call(fn.p, args.p, nullptr)};
  if (!r.p) throw PythonError();
  if (!PyTuple_Check(r.p)) {  // one gradient may come back bare
    PyObject* t = PyTuple_Pack(1, r.p);
    if (!t) throw PythonError();
    Py_SETREF(r.p, t);
  }
  // One gradient per forward argument; more is allowed when the rest are None, as in PyTorch.
  const size_t want = is_tensor_input.size();
  size_t got = size_t(PyTuple_GET_SIZE(r.p));
  if (got > want) {
    bool all_none = true;
    for (size_t i = want; i < got; ++i) all_none &= PyTuple_GET_ITEM(r.p, Py_ssize_t(i)) == Py_None;
    if (all_none) got = want;
  }
  DESCENT_CHECK(got == want, Error, "function ", name, " returned an incorrect number of gradients (expected ", want,
                ", got ", got, ")");
  TensorList out;
  out.reserve(next_edges.size());
  for (size_t i = 0; i < want; ++i) {
    PyObject* g = PyTuple_GET_ITEM(r.p, Py_ssize_t(i));
    if (!is_tensor_input[i]) {
      DESCENT_CHECK(g == Py_None, Error, "function ", name, " returned a gradient different than None at position ",
                    i + 1, ", but the corresponding forward input was not a Variable");
      continue;
    }
    if (g == Py_None) {
      out.emplace_back();
      continue;
    }
    DESCENT_CHECK(is_tensor(g), TypeError, "function ", name, " returned a ", Py_TYPE(g)->tp_name,
                  " as the gradient at position ", i + 1, ", where a Tensor or None belongs");
    out.push_back(unwrap(g));
  }
  return out;
}

// [SECTION] _C._FunctionBase: the ctx ----------------------------------------------------

PyTypeObject g_function_base = {PyVarObject_HEAD_INIT(nullptr, 0) "descent._C._FunctionBase"};

PyObject* function_new(PyTypeObject* type, PyObject*, PyObject*) {
  PyObject* o = type->tp_alloc(type, 0);
  if (!o) return nullptr;
  auto* n = reinterpret_cast<NodeObject*>(o);
  new (&n->node) Ref<Node>();
  n->cdata = nullptr;
  return o;
}

PyNode* pynode_of(PyObject* o) { return static_cast<PyNode*>(reinterpret_cast<NodeObject*>(o)->cdata); }

// ctx.saved_tensors: what save_for_backward kept, unpacked with the version
// check (Note [Version counter and view base]); () where no node was recorded.
PyObject* get_saved_tensors(PyObject* o, void*) {
  DESCENT_PY_TRY
  PyNode* n = pynode_of(o);
  if (!n) return PyTuple_New(0);
  TensorList ts;
  for (const SavedVariable& s : n->saved) ts.push_back(s.unpack(n));
  return tensor_tuple(ts);
  DESCENT_PY_CATCH(nullptr)
}

// [SECTION] Recording the forward ------------------------------------------------------

// The TensorImpls of the tensors in an attribute of ctx that holds a tuple
// (dirty_tensors, non_differentiable); the attribute is deleted, as PyTorch
// clears it. False with a Python error set when the attribute is no tuple
// of tensors.
bool take_tensor_set(PyObject* ctx, const char* attr, std::vector<const TensorImpl*>& out) {
  PyRef v{PyObject_GetAttrString(ctx, attr)};
  if (!v.p) {
    if (!PyErr_ExceptionMatches(PyExc_AttributeError)) return false;
    PyErr_Clear();
    return true;
  }
  if (PyObject_DelAttrString(ctx, attr) < 0) return false;
  PyRef seq{PySequence_Fast(v.p, attr)};
  if (!seq.p) return false;
  for (Py_ssize_t i = 0; i < PySequence_Fast_GET_SIZE(seq.p); ++i) {
    PyObject* t = PySequence_Fast_GET_ITEM(seq.p, i);
    if (!is_tensor(t)) {
      PyErr_Format(PyExc_TypeError, "%s only accepts Tensors, but argument %zd is of type %s",
                   std::string(attr) == "dirty_tensors" ? "mark_dirty" : "mark_non_differentiable", i,
                   Py_TYPE(t)->tp_name);
      return false;
    }
    out.push_back(unwrap(t).impl());
  }
  return true;
}

bool contains(const std::vector<const TensorImpl*>& v, const TensorImpl* t) {
  return std::find(v.begin(), v.end(), t) != v.end();
}

// ctx._record(args, outputs, is_executable) -> outputs: see Note [A custom
// Function's node]. `outputs` is forward's result as a tuple; what comes
// back is that tuple with an input returned unchanged replaced by its alias.
PyObject* function_record(PyObject* ctx, PyObject* a) {
  PyObject *args, *outputs;
  int executable = 0;
  if (!PyArg_ParseTuple(a, "O!O!p:_record", &PyTuple_Type, &args, &PyTuple_Type, &outputs, &executable)) return nullptr;
  DESCENT_PY_TRY
  std::vector<const TensorImpl*> dirty, non_differentiable, inputs;
  if (!take_tensor_set(ctx, "dirty_tensors", dirty) || !take_tensor_set(ctx, "non_differentiable", non_differentiable))
    return nullptr;
  PyRef to_save{PyObject_GetAttrString(ctx, "to_save")};
  if (!to_save.p) {
    if (!PyErr_ExceptionMatches(PyExc_AttributeError)) return nullptr;
    PyErr_Clear();
  } else if (PyObject_DelAttrString(ctx, "to_save") < 0) {
    return nullptr;
  }
  for (Py_ssize_t i = 0; i < PyTuple_GET_SIZE(args); ++i)
    if (is_tensor(PyTuple_GET_ITEM(args, i))) inputs.push_back(unwrap(PyTuple_GET_ITEM(args, i)).impl());
  const Py_ssize_t n_out = PyTuple_GET_SIZE(outputs);
  for (const TensorImpl* d : dirty) {
    bool returned = false;
    for (Py_ssize_t i = 0; i < n_out; ++i)
      returned |= is_tensor(PyTuple_GET_ITEM(outputs, i)) && unwrap(PyTuple_GET_ITEM(outputs, i)).impl() == d;
    DESCENT_CHECK(returned, Error,
                  "Some elements marked as dirty during the forward method were not returned as "
                  "output. The inputs that are modified inplace must all be outputs of the Function.");
  }

  Ref<PyNode> node;
  if (executable) {
    // The ctx's class is the node's name: a heap type's tp_name is its bare __name__.
    const char* type_name = Py_TYPE(ctx)->tp_name;
    if (const char* dot = std::strrchr(type_name, '.')) type_name = dot + 1;
    node = Ref<PyNode>(new PyNode(trace::intern(type_name), ctx));
    for (Py_ssize_t i = 0; i < PyTuple_GET_SIZE(args); ++i) {
      PyObject* x = PyTuple_GET_ITEM(args, i);
      node->is_tensor_input.push_back(is_tensor(x));
      if (is_tensor(x)) node->next_edges.push_back(autograd::gradient_edge(unwrap(x)));
    }
    node->inputs.resize(size_t(n_out));
    node->is_tensor_output.resize(size_t(n_out));
  }

  // 2. The outputs.
  PyRef result{PyTuple_New(n_out)};
  if (!result.p) return nullptr;
  std::vector<const TensorImpl*> final_outputs, bumped;
  for (Py_ssize_t i = 0; i < n_out; ++i) {
    PyObject* o = PyTuple_GET_ITEM(outputs, i);
    if (!is_tensor(o)) {
      Py_INCREF(o);
      PyTuple_SET_ITEM(result.p, i, o);
      continue;
    }
    Tensor t = unwrap(o);
    const bool is_input = contains(inputs, t.impl());
    const bool is_dirty = contains(dirty, t.impl());
    const bool differentiable = !contains(non_differentiable, t.impl()) && is_floating(t.dtype());
    PyObject* out = o;
    if (is_dirty && !contains(bumped, t.impl())) {  // written in place: its version moves, as PyTorch's _mark_dirty
      bump_version(t);                              // bumps it (a saved copy of it now fails backward's check)
      bumped.push_back(t.impl());
    }
    if (is_input && !is_dirty) {  // a new tensor over the same memory, so the input's own history stays its own
      t = autograd::detach(t);
      out = nullptr;
    }
    if (node) {
      node->is_tensor_output[size_t(i)] = true;
      node->inputs[size_t(i)] = autograd::GradMeta{t.sizes(), t.dtype(), t.device()};
      if (is_dirty) {
        DESCENT_CHECK(!(autograd::is_leaf(t) && t.requires_grad()), Error,
                      "a leaf Variable that requires grad has been used in an in-place operation.");
        DESCENT_CHECK(!t.is_view(), NotImplementedError,
                      "mark_dirty(): descent does not move the history of a view "
                      "written in place by a custom Function onto its base (PyTorch does, through CopySlices)");
      }
      if (differentiable) autograd::set_history(t, Ref<Node>(node.get()), uint32_t(i));
    }
    if (!out) {
      out = wrap(t);
      if (!out) return nullptr;
    } else {
      Py_INCREF(out);
    }
    PyTuple_SET_ITEM(result.p, i, out);
    if (node && differentiable) final_outputs.push_back(t.impl());
  }

  // 3. What save_for_backward kept.
  if (node && to_save.p && to_save.p != Py_None) {
    PyRef seq{PySequence_Fast(to_save.p, "to_save")};
    if (!seq.p) return nullptr;
    for (Py_ssize_t i = 0; i < PySequence_Fast_GET_SIZE(seq.p); ++i) {
      PyObject* x = PySequence_Fast_GET_ITEM(seq.p, i);
      if (x == Py_None) {
        node->saved.emplace_back();
        continue;
      }
      DESCENT_CHECK(is_tensor(x), TypeError, "save_for_backward can only save variables, but argument ", i,
                    " is of type ", Py_TYPE(x)->tp_name);
      const Tensor& t = unwrap(x);
      node->saved.emplace_back(t, contains(final_outputs, t.impl()));
    }
  }
  return result.release();
  DESCENT_PY_CATCH(nullptr)
}

PyMethodDef function_methods[] = {
    {"_record", function_record, METH_VARARGS,
     "_record(args, outputs, is_executable): the node, the outputs' history and the saved tensors of a forward"},
    {nullptr, nullptr, 0, nullptr},
};
PyGetSetDef function_getset[] = {
    {"saved_tensors", get_saved_tensors, nullptr, "the tensors save_for_backward kept, checked for in-place writes",
     nullptr},
    {nullptr, nullptr, nullptr, nullptr, nullptr},
};

}  // namespace

bool init_python_function(PyObject* m) {
  g_function_base.tp_base = &g_node_type;  // next_functions, name(), register_hook, ... (autograd_object.cpp)
  g_function_base.tp_basicsize = sizeof(NodeObject);
  g_function_base.tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_BASETYPE;
  g_function_base.tp_doc =
      "The C side of a custom autograd.Function's ctx, which is also its graph node's "
      "Python object (Note [A custom Function's node]).";
  g_function_base.tp_new = function_new;
  // Printed, compared and hashed as a plain Python object, as PyTorch's ctx is.
  g_function_base.tp_repr = PyBaseObject_Type.tp_repr;
  g_function_base.tp_hash = PyBaseObject_Type.tp_hash;
  g_function_base.tp_richcompare = PyBaseObject_Type.tp_richcompare;
  g_function_base.tp_methods = function_methods;
  g_function_base.tp_getset = function_getset;
  if (PyType_Ready(&g_function_base) < 0) return false;
  Py_INCREF(&g_function_base);
  return PyModule_AddObject(m, "_FunctionBase", reinterpret_cast<PyObject*>(&g_function_base)) == 0;
}

}  // namespace descent::binding
