// descent.Size, a tensor's shape: a tuple of ints, in C as torch.Size is
// (torch/csrc/Size.cpp), so that `x.shape[0]` runs no Python of descent's.
// It prints as descent.Size([2, 3]); a slice of it, a Size + a tuple and a
// Size * n are Sizes, as torch.Size's (its sq_concat and sq_repeat wrap
// tuple's); numel() multiplies it out; everything else is tuple's.
#include "floors/binding/binding.h"

namespace descent::binding {

PyTypeObject g_size_type = {PyVarObject_HEAD_INIT(nullptr, 0)};

namespace {

PyMappingMethods size_mapping;  // tuple's, with a slice giving a Size

PyObject* size_repr(PyObject* self) {
  PyRef list(PySequence_List(self));
  if (!list.p) return nullptr;
  return PyUnicode_FromFormat("descent.Size(%R)", list.p);
}

PyObject* size_subscript(PyObject* self, PyObject* key) {
  PyObject* item = PyTuple_Type.tp_as_mapping->mp_subscript(self, key);
  if (!item || !PySlice_Check(key)) return item;
  PyRef tuple(item);
  return PyObject_CallOneArg(reinterpret_cast<PyObject*>(&g_size_type), tuple.p);
}

PySequenceMethods size_sequence;  // tuple's, with + and * giving a Size

PyObject* as_size(PyObject* result) {  // tuple's result, made a Size
  if (!result) return nullptr;
  PyRef tuple(result);
  return PyObject_CallOneArg(reinterpret_cast<PyObject*>(&g_size_type), tuple.p);
}
PyObject* size_concat(PyObject* self, PyObject* other) {
  return as_size(PyTuple_Type.tp_as_sequence->sq_concat(self, other));
}
PyObject* size_repeat(PyObject* self, Py_ssize_t n) { return as_size(PyTuple_Type.tp_as_sequence->sq_repeat(self, n)); }

PyObject* size_numel(PyObject* self, PyObject*) {
  PyObject* n = PyLong_FromLong(1);
  for (Py_ssize_t k = 0; n && k < PyTuple_GET_SIZE(self); ++k) {
    PyObject* product = PyNumber_Multiply(n, PyTuple_GET_ITEM(self, k));
    Py_DECREF(n);
    n = product;
  }
  return n;
}

PyMethodDef size_methods[] = {
    {"numel", size_numel, METH_NOARGS, "the number of elements a tensor of this shape holds"},
    {nullptr, nullptr, 0, nullptr},
};

}  // namespace

PyObject* size_object(const DimVector& sizes) {
  PyRef tuple(PyTuple_New(sizes.size()));
  if (!tuple.p) return nullptr;
  for (int i = 0; i < sizes.size(); ++i) {
    PyObject* x = PyLong_FromLongLong(sizes[i]);
    if (!x) return nullptr;
    PyTuple_SET_ITEM(tuple.p, i, x);
  }
  return PyObject_CallOneArg(reinterpret_cast<PyObject*>(&g_size_type), tuple.p);
}

bool init_size_type(PyObject* module) {
  size_mapping = *PyTuple_Type.tp_as_mapping;
  size_sequence = *PyTuple_Type.tp_as_sequence;
  size_sequence.sq_concat = size_concat;
  size_sequence.sq_repeat = size_repeat;
  size_mapping.mp_subscript = size_subscript;
  g_size_type.tp_name = "descent.Size";
  g_size_type.tp_basicsize = PyTuple_Type.tp_basicsize;
  g_size_type.tp_itemsize = PyTuple_Type.tp_itemsize;
  g_size_type.tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_TUPLE_SUBCLASS;
  g_size_type.tp_doc = "A tensor's shape, as torch.Size: a tuple of ints that prints as descent.Size([2, 3]).";
  g_size_type.tp_base = &PyTuple_Type;
  g_size_type.tp_repr = size_repr;
  g_size_type.tp_as_mapping = &size_mapping;
  g_size_type.tp_as_sequence = &size_sequence;
  g_size_type.tp_methods = size_methods;
  if (PyType_Ready(&g_size_type) < 0) return false;
  Py_INCREF(&g_size_type);
  return PyModule_AddObject(module, "Size", reinterpret_cast<PyObject*>(&g_size_type)) == 0;
}

}  // namespace descent::binding
