// Tensor.__getitem__ and __setitem__, in C as PyTorch's
// torch/csrc/autograd/python_variable_indexing.cpp has them
// (THPVariable_getitem, THPVariable_setitem): the type's mapping slots.
//
// [SECTION] Reading the index
// [SECTION] Applying it: views, then the advanced indices
// [SECTION] __getitem__
// [SECTION] __setitem__
//
// Note [Indexing in C]
// ~~~~~~~~~~~~~~~~~~~~
// `x[0]` runs no Python of torch's: Tensor's mp_subscript slot is
// THPVariable_getitem, which reads the index and calls the ops itself
// (at::indexing::applySlicing): aten::select for an int, aten::slice for a
// slice that is not `:`, aten::unsqueeze for None and True/False, nothing
// for `:` and `...`; integer and bool tensors (and lists, made tensors) are
// advanced indices, left for one aten::index call after the views (or
// aten::index_put_ for x[i] = v). When nothing was applied, x[...] is
// aten::alias; a lone slice, even `:`, is aten::slice. descent does the
// same here: one floor-2 span, `__getitem__` or `__setitem__`, where the
// call crosses into C++, and under it the dispatcher's spans of those ops
// (floor 3 on), with no floor-1 span of descent's in between. The GIL is
// held while the views are made, as in PyTorch, and released around the
// ops that run kernels (index, index_put_, copy_, fill_). The ops x[i] = v
// runs, in order, are Note [x[i] = v as PyTorch writes it] below.
#include <optional>
#include <utility>
#include <vector>

#include "floors/binding/binding.h"

namespace descent::binding {

namespace {

// [SECTION] Reading the index ------------------------------------------------------

// A numpy array (not a tensor): what numpy's __array_interface__ marks.
bool is_array(PyObject* o) {
  return !is_tensor(o) && PyObject_HasAttrString(reinterpret_cast<PyObject*>(Py_TYPE(o)), "__array_interface__");
}

// An index tensor that masks (covers as many dims as it has): bool, and
// uint8, PyTorch's older mask dtype (floors/kernels/indexing.cpp).
bool is_mask(const Tensor& t) { return t.dtype() == ScalarType::Bool || t.dtype() == ScalarType::UInt8; }

// Whether a list index is a tuple of indices (x[[0, slice(None)]]) or one
// index (x[[0, 1]]): numpy's old rule, which PyTorch's treatSequenceAsTuple keeps.
bool sequence_is_tuple(PyObject* index) {
  if (!PyList_Check(index) && !PyRange_Check(index)) return false;
  const Py_ssize_t n = PySequence_Size(index);
  if (n < 0 || n >= 32) {
    PyErr_Clear();
    return false;
  }
  for (Py_ssize_t k = 0; k < n; ++k) {
    PyRef i(PySequence_GetItem(index, k));
    if (!i.p) throw PythonError();
    if (is_tensor(i.p) || PyList_Check(i.p) || PyTuple_Check(i.p) || PySlice_Check(i.p) || is_array(i.p) ||
        i.p == Py_None || i.p == Py_Ellipsis)
      return true;
  }
  return false;
}

// A list, tuple, range or array used as one index, as a tensor: bool when all
// its elements are bools, uint8 for a uint8 array (a mask, as a bool one),
// else int64 (floats truncated, through aten::to), as PyTorch's
// indexing_tensor_from_data makes it.
Tensor index_tensor(PyObject* i) {
  Tensor t;
  if (is_array(i) || PyList_Check(i)) {
    t = tensor_from_data(i, std::nullopt);
  } else {
    PyRef list(PySequence_List(i));
    if (!list.p) throw PythonError();
    t = tensor_from_data(list.p, std::nullopt);
  }
  const ScalarType dt = t.dtype();
  if (dt == ScalarType::Bool || dt == ScalarType::UInt8 || dt == ScalarType::Int64) return t;
  return call(Op::to, t, IValue(ScalarType::Int64), IValue(), false);
}

// One entry of the index, read from its Python object.
struct Entry {
  enum Kind : uint8_t { Int, Bool, Slice, None, Ellipsis, TensorIndex, Bad } kind = Bad;
  int64_t value = 0;            // Int: the index; Bool: 0 or 1
  PyObject* obj = nullptr;      // Slice and Bad: borrowed from the index tuple
  Tensor tensor;                // TensorIndex: a tensor, or the list or array made one
  int64_t dims_named() const {  // the dims of self it names (a mask names as many as it has)
    if (kind == TensorIndex) return is_mask(tensor) ? tensor.dim() : 1;
    return kind == None || kind == Ellipsis || kind == Bool ? 0 : 1;
  }
};

// An int index or a slice's bound (an int, numpy's ints, anything with __index__).
int64_t index_value(PyObject* o) {
  PyRef i(PyNumber_Index(o));
  if (!i.p) throw PythonError();
  const int64_t v = PyLong_AsLongLong(i.p);
  if (v == -1 && PyErr_Occurred()) throw PythonError();
  return v;
}

Entry read_entry(PyObject* o) {
  Entry e;
  e.obj = o;
  if (o == Py_Ellipsis) {
    e.kind = Entry::Ellipsis;
  } else if (o == Py_None) {
    e.kind = Entry::None;
  } else if (is_bool_like(o)) {  // True and np.True_ are masks in PyTorch, not the index 1
    e.kind = Entry::Bool, e.value = PyObject_IsTrue(o) == 1;
  } else if (is_tensor(o)) {
    const Tensor& t = unwrap(o);
    if (t.dim() == 0 && !is_floating(t.dtype())) {
      // A 0-d integer tensor is an int, a 0-d bool (or uint8, a byte mask) tensor a bool, as in PyTorch.
      const IValue v = read_item(t, ".item()");
      if (is_mask(t))
        e.kind = Entry::Bool, e.value = v.tag() == IValue::Tag::Bool ? v.to_bool() : v.to_int() != 0;
      else
        e.kind = Entry::Int, e.value = v.to_int();
    } else {
      e.kind = Entry::TensorIndex, e.tensor = t;
    }
  } else if (PySlice_Check(o)) {
    e.kind = Entry::Slice;
  } else if (PyUnicode_Check(o) || PyBytes_Check(o)) {  // a sequence to PyTorch, which cannot make it a tensor
    throw TypeError(str("new(): invalid data type '", Py_TYPE(o)->tp_name, "'"));
  } else if (PyList_Check(o) || PyTuple_Check(o) || PyRange_Check(o) || is_array(o)) {
    e.kind = Entry::TensorIndex, e.tensor = index_tensor(o);
  } else if (PyIndex_Check(o)) {  // ints, numpy's ints
    e.kind = Entry::Int, e.value = index_value(o);
  }
  return e;
}

// The index as entries: a tuple's items, a list read as a tuple, or one entry.
// `tuple` keeps the entries' borrowed objects alive.
std::vector<Entry> entries_of(PyObject* index, PyRef& tuple) {
  if (PyTuple_Check(index)) {
    Py_INCREF(index);
    tuple.p = index;
  } else if (sequence_is_tuple(index)) {
    tuple.p = PySequence_Tuple(index);
  } else {
    tuple.p = PyTuple_Pack(1, index);
  }
  if (!tuple.p) throw PythonError();
  std::vector<Entry> out;
  for (Py_ssize_t k = 0; k < PyTuple_GET_SIZE(tuple.p); ++k) out.push_back(read_entry(PyTuple_GET_ITEM(tuple.p, k)));
  return out;
}

[[noreturn]] void bad_index(PyObject* o) {
  throw IndexError(
      str("only integers, slices (`:`), ellipsis (`...`), None and long or byte Variables are valid indices (got ",
          Py_TYPE(o)->tp_name, ")"));
}

// A slice's start, stop and step: None or an int.
std::optional<int64_t> bound(PyObject* o) {
  if (o == Py_None) return std::nullopt;
  return index_value(o);
}
IValue as_ivalue(std::optional<int64_t> v) { return v ? IValue(*v) : IValue(); }

// [SECTION] Applying it: views, then the advanced indices ----------------------------

// What the index gave: the view the ints, slices, None and ... made, and the
// advanced indices left for aten::index or index_put_, one entry per dim of
// the view from the first (undefined where a dim is taken whole).
struct Applied {
  Tensor view;
  OptionalTensorList indices;
  bool advanced = false;  // whether `indices` holds any
};

// True or False as an index: a new dim of size 1, taken whole (an int64
// tensor [0] on self's device) or not at all (an empty one), as PyTorch's
// boolToIndexingTensor makes them: aten::empty, then fill_ for True.
Tensor bool_index(const Tensor& self, bool value) {
  Tensor t = call(Op::empty, DimVector{value ? 1 : 0}, IValue(ScalarType::Int64), IValue(self.device()));
  if (value) call(Op::fill_, t, Scalar(0.0));
  return t;
}

// PyTorch's applySlicing: the entries applied to self, left to right.
Applied apply_index(const Tensor& self, const std::vector<Entry>& index) {
  int ellipses = 0;
  int64_t used = 0;
  for (const Entry& e : index) ellipses += e.kind == Entry::Ellipsis, used += e.dims_named();
  if (ellipses > 1) throw IndexError("an index can only have a single ellipsis ('...')");
  if (used > self.dim()) throw IndexError(str("too many indices for tensor of dimension ", self.dim()));
  Applied a;
  a.view = self;
  int64_t d = 0, src = 0;  // d: the dim of the view reached; src: the dim of self it came from
  int64_t covered = 0;     // the dims of the view that `indices` reaches
  auto advanced = [&](Tensor t) {
    for (; covered < d; ++covered) a.indices.push_back(Tensor());
    const int64_t k = is_mask(t) ? t.dim() : 1;
    a.indices.push_back(std::move(t));
    d = covered = d + k;
    a.advanced = true;
  };
  for (const Entry& e : index) {
    switch (e.kind) {
      case Entry::Ellipsis:
        d += self.dim() - used;
        src += self.dim() - used;
        break;
      case Entry::None:
        a.view = call(Op::unsqueeze, a.view, d);
        d += 1;
        break;
      case Entry::Bool:
        a.view = call(Op::unsqueeze, a.view, d);
        advanced(bool_index(self, e.value != 0));
        break;
      case Entry::TensorIndex:
        src += e.dims_named();
        advanced(e.tensor);
        break;
      case Entry::Slice: {
        PySliceObject* s = reinterpret_cast<PySliceObject*>(e.obj);
        const std::optional<int64_t> start = bound(s->start), stop = bound(s->stop), step = bound(s->step);
        if (step && *step == 0) throw ValueError("slice step cannot be zero");  // PySlice_Unpack's words
        if (step && *step < 0) throw ValueError("step must be greater than zero");
        const bool whole = (!start || *start == 0) && !stop && (!step || *step == 1);
        if (!whole)  // `:` is no slice, as in PyTorch
          a.view = call(Op::slice, a.view, d, as_ivalue(start), as_ivalue(stop), step.value_or(1));
        d += 1;
        src += 1;
        break;
      }
      case Entry::Int: {
        const int64_t n = a.view.sizes()[int(d)];
        if (e.value < -n || e.value >= n)  // named by the dim of self, not of the partly indexed view
          throw IndexError(str("index ", e.value, " is out of bounds for dimension ", src, " with size ", n));
        a.view = call(Op::select, a.view, d, e.value);
        src += 1;
        break;
      }
      case Entry::Bad:
        bad_index(e.obj);
    }
  }
  return a;
}

// The checks PyTorch makes before applySlicing when the index is one int or
// one slice (THPVariable_getitem's and THPVariable_setitem's fast paths).
void check_lone_index(const Tensor& self, PyObject* index) {
  if (self.dim() != 0) return;
  if (is_int_like(index) && !is_tensor(index))
    throw IndexError(
        "invalid index of a 0-dim tensor. Use `tensor.item()` in Python or `tensor.item<T>()` in C++ "
        "to convert a 0-dim tensor to a number");
  if (PySlice_Check(index)) throw IndexError("slice() cannot be applied to a 0-dim tensor.");
}

// [SECTION] __getitem__ ---------------------------------------------------------------

// Tensor.__getitem__ (mp_subscript): Note [Indexing in C].
PyObject* tensor_getitem(PyObject* self, PyObject* index) {
  DESCENT_PY_TRY
  trace::ScopedSpan span(trace::Floor::Binding, "__getitem__");
  span.arg("python", "Tensor.__getitem__");
  const Tensor& t = unwrap(self);
  check_lone_index(t, index);
  PyRef tuple;
  const std::vector<Entry> entries = entries_of(index, tuple);
  Applied a = apply_index(t, entries);
  if (a.advanced) {
    GilRelease release;
    a.view = call(Op::index, a.view, a.indices);
  } else if (a.view.impl() == t.impl()) {
    // Nothing applied: a lone slice (`x[:]`) is still aten::slice; anything else (x[...], x[()]) is aten::alias.
    a.view = PySlice_Check(index) ? call(Op::slice, t, int64_t{0}, IValue(), IValue(), int64_t{1}) : call(Op::alias, t);
  }
  return wrap(std::move(a.view));
  DESCENT_PY_CATCH(nullptr)
}

// [SECTION] __setitem__ ---------------------------------------------------------------

// A value's shape without its leading 1-dims, as PyTorch's slicePrefix1sSize
// drops them (t[0] = ones(1, 3) into a (2, 3) tensor).
DimVector drop_leading_ones(const Tensor& v) {
  DimVector shape;
  int64_t k = 0;
  while (k < v.dim() && v.sizes()[int(k)] == 1) ++k;
  for (; k < v.dim(); ++k) shape.push_back(v.sizes()[int(k)]);
  return shape;
}

// The value of x[i] = v as a tensor (PyTorch's valueToTensor): a tensor as
// it is; an array read as tensor() reads it; a Python or numpy number a 0-d
// CPU tensor of x's dtype (made without an op, scalarToTensor), then passed
// through aten::lift_fresh.
Tensor value_tensor(const Tensor& self, PyObject* value) {
  if (is_tensor(value)) return unwrap(value);
  if (is_array(value)) return tensor_from_data(value, std::nullopt);
  if (!is_python_scalar(value) && !PyIndex_Check(value) &&
      !(Py_TYPE(value)->tp_as_number && Py_TYPE(value)->tp_as_number->nb_float))
    throw TypeError(str("can't assign a ", Py_TYPE(value)->tp_name, " to a descent.Tensor"));
  return call(Op::lift_fresh, scalar_tensor(value, self.dtype()));
}

// Tensor.__setitem__ (mp_ass_subscript). Note [x[i] = v as PyTorch writes it]
// ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
// torch/csrc/autograd/python_variable_indexing.cpp (THPVariable_setitem,
// valueToTensor) and aten/src/ATen/TensorIndexing.h (set_item, copy_to):
//   1. a Python number becomes a 0-d CPU tensor of t's dtype (made without
//      an op: scalar_tensor_static), then goes through aten::lift_fresh,
//      before the index is read; a tensor value is taken as it is;
//   2. the index's views: aten::select for an int, aten::slice for a slice
//      that is not `:`, aten::unsqueeze for None (applySlicing);
//   3. copy_to(view, value): aten::copy_ when the shapes are equal; else
//      aten::fill_ (its Tensor overload) for a 0-d CPU value, whose kernel
//      copies it in with aten::copy_ (Fill.cpp); else aten::view to drop the
//      value's leading 1-dims, aten::expand to the view's shape when they
//      differ, then aten::copy_.
// So x[0] = 5 on a (2, 3) tensor is lift_fresh, select, fill_ (copy_ below
// it); on a (3,) tensor lift_fresh, select, copy_; x[1:3] = 0 lift_fresh,
// slice, fill_; x[0] = t select, then copy_ (t of the row's shape) or view,
// expand, copy_. Advanced indices: the value, its leading 1-dims dropped by
// aten::view when it has any, goes to aten::index_put_.
int tensor_setitem(PyObject* self, PyObject* index, PyObject* value) {
  if (value == nullptr) {
    PyErr_SetString(PyExc_TypeError, "Tensor does not support deleting items");
    return -1;
  }
  DESCENT_PY_TRY
  trace::ScopedSpan span(trace::Floor::Binding, "__setitem__");
  span.arg("python", "Tensor.__setitem__");
  const Tensor& t = unwrap(self);
  Tensor v = value_tensor(t, value);
  check_lone_index(t, index);
  PyRef tuple;
  const std::vector<Entry> entries = entries_of(index, tuple);
  Applied a = apply_index(t, entries);
  GilRelease release;
  if (a.advanced) {
    const DimVector shape = drop_leading_ones(v);
    if (int64_t(shape.size()) < v.dim()) v = call(Op::view, v, shape);
    call(Op::index_put_, a.view, a.indices, v, false);
  } else if (a.view.sizes() == v.sizes()) {
    call(Op::copy_, a.view, v, false);
  } else if (v.dim() == 0 && v.device().type == DeviceType::CPU) {
    call(Op::fill_tensor_, a.view, v);
  } else {
    v = call(Op::view, v, drop_leading_ones(v));
    if (!(a.view.sizes() == v.sizes())) v = call(Op::expand, v, a.view.sizes(), false);
    call(Op::copy_, a.view, v, false);
  }
  return 0;
  DESCENT_PY_CATCH(-1)
}

}  // namespace

PyMappingMethods g_tensor_mapping = {nullptr, tensor_getitem, tensor_setitem};

}  // namespace descent::binding
