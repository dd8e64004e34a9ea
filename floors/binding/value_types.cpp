// _C.dtype, _C.device and descent.return_types: the value objects a tensor
// names (its dtype, its device) and the named tuples ops return, with
// _C.promote_types; tensor_object.cpp is the tensor that holds them.
#include <memory>
#include <string>
#include <vector>

#include "floors/binding/binding.h"
#include "floors/kernels/kernels.h"  // promote_types_of

namespace descent::binding {

namespace {

struct DtypeObject {
  PyObject_HEAD ScalarType t;
};
// Note [A device without an index]
// ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
// torch.device("cuda") names the type only: its index is None, it prints
// as "cuda", and it is not equal to torch.device("cuda:0"), though a tensor
// sent to it lands on the current device (cuda:0 here: descent selects no
// other). A tensor's device always has its index, except the CPU's
// (device(type='cpu'), index None), as in PyTorch. The Device of floor 0
// always has an index; the Python object keeps whether one was given.
struct DeviceObject {
  PyObject_HEAD Device d;
  bool has_index;
};

PyObject* dtype_repr(PyObject* o) {
  return PyUnicode_FromFormat("descent.%s", dtype_name(reinterpret_cast<DtypeObject*>(o)->t));
}
PyObject* dtype_is_floating(PyObject* o, void*) {
  return PyBool_FromLong(is_floating(reinterpret_cast<DtypeObject*>(o)->t));
}
PyObject* dtype_itemsize(PyObject* o, void*) {
  return PyLong_FromSize_t(element_size(reinterpret_cast<DtypeObject*>(o)->t));
}
PyObject* dtype_is_signed(PyObject* o, void*) {  // as torch.dtype.is_signed: false for bool and uint8
  const ScalarType t = reinterpret_cast<DtypeObject*>(o)->t;
  return PyBool_FromLong(t != ScalarType::Bool && t != ScalarType::UInt8);
}
PyGetSetDef dtype_getset[] = {
    {"is_floating_point", dtype_is_floating, nullptr, "whether the dtype is a floating point type", nullptr},
    {"is_signed", dtype_is_signed, nullptr, "whether the dtype holds negative numbers", nullptr},
    {"itemsize", dtype_itemsize, nullptr, "bytes per element", nullptr},
    {nullptr, nullptr, nullptr, nullptr, nullptr},
};

DtypeObject g_dtypes[kNumScalarTypes];

PyObject* new_device_object(Device d, bool has_index) {
  PyObject* o = device_object(d);
  if (o) reinterpret_cast<DeviceObject*>(o)->has_index = has_index;
  return o;
}
// device("cuda"), device("cuda:1"), device("cuda", 1), device(1) (a CUDA
// device, as torch's), device(another device).
PyObject* device_new(PyTypeObject*, PyObject* args, PyObject* kwargs) {
  PyObject* spec = nullptr;
  PyObject* index = Py_None;
  static const char* kw[] = {"type", "index", nullptr};
  if (!PyArg_ParseTupleAndKeywords(args, kwargs, "O|O:device", const_cast<char**>(kw), &spec, &index)) return nullptr;
  DESCENT_PY_TRY
  if (Py_TYPE(spec) == &g_device_type && index == Py_None) {
    Py_INCREF(spec);
    return spec;
  }
  if (PyLong_Check(spec) && index == Py_None) {
    const long i = PyLong_AsLong(spec);
    DESCENT_CHECK(i >= 0, Error, "Device index must not be negative");
    return new_device_object(Device::parse(str("cuda:", i)), true);
  }
  DESCENT_CHECK(PyUnicode_Check(spec), TypeError, "device() received an invalid combination of arguments - got (",
                Py_TYPE(spec)->tp_name, ")");
  const std::string text = utf8_text(spec);
  if (index == Py_None) return new_device_object(Device::parse(text), text.find(':') != std::string::npos);
  DESCENT_CHECK(PyLong_Check(index), TypeError, "device(): argument 'index' must be int, not ",
                Py_TYPE(index)->tp_name);
  DESCENT_CHECK(text.find(':') == std::string::npos, Error,
                "type (string) must not include an index because index was passed explicitly: ", text);
  const long i = PyLong_AsLong(index);
  DESCENT_CHECK(i >= 0, Error, "Device index must not be negative");
  return new_device_object(Device::parse(str(text, ":", i)), true);
  DESCENT_PY_CATCH(nullptr)
}
PyObject* device_repr(PyObject* o) {
  const auto* d = reinterpret_cast<DeviceObject*>(o);
  if (!d->has_index) return PyUnicode_FromFormat("device(type='%s')", device_type_name(d->d.type));
  return PyUnicode_FromFormat("device(type='%s', index=%d)", device_type_name(d->d.type), d->d.index);
}
PyObject* device_str(PyObject* o) {
  const auto* d = reinterpret_cast<DeviceObject*>(o);
  return PyUnicode_FromString(d->has_index ? str(device_type_name(d->d.type), ":", d->d.index).c_str()
                                           : device_type_name(d->d.type));
}
PyObject* device_type_get(PyObject* o, void*) {
  return PyUnicode_FromString(device_type_name(reinterpret_cast<DeviceObject*>(o)->d.type));
}
PyObject* device_index_get(PyObject* o, void*) {
  const auto* d = reinterpret_cast<DeviceObject*>(o);
  if (!d->has_index) Py_RETURN_NONE;
  return PyLong_FromLong(d->d.index);
}
PyObject* device_richcompare(PyObject* a, PyObject* b, int op) {
  if ((op != Py_EQ && op != Py_NE) || Py_TYPE(b) != &g_device_type) Py_RETURN_NOTIMPLEMENTED;
  const auto* x = reinterpret_cast<DeviceObject*>(a);
  const auto* y = reinterpret_cast<DeviceObject*>(b);
  const bool eq = x->d == y->d && x->has_index == y->has_index;
  return PyBool_FromLong(op == Py_EQ ? eq : !eq);
}
Py_hash_t device_hash(PyObject* o) {
  const auto* d = reinterpret_cast<DeviceObject*>(o);
  return Py_hash_t(int(d->d.type) * 1024 + (d->has_index ? d->d.index + 1 : 0));
}
PyGetSetDef device_getset[] = {
    {"type", device_type_get, nullptr, "cpu, sim or cuda", nullptr},
    {"index", device_index_get, nullptr, "which device of that type", nullptr},
    {nullptr, nullptr, nullptr, nullptr, nullptr},
};

}  // namespace

PyTypeObject g_dtype_type = {PyVarObject_HEAD_INIT(nullptr, 0) "descent.dtype"};
PyTypeObject g_device_type = {PyVarObject_HEAD_INIT(nullptr, 0) "descent.device"};

PyObject* dtype_object(ScalarType t) { return reinterpret_cast<PyObject*>(&g_dtypes[int(t)]); }

ScalarType dtype_of(PyObject* o) { return reinterpret_cast<DtypeObject*>(o)->t; }
Device device_of(PyObject* o) { return reinterpret_cast<DeviceObject*>(o)->d; }

PyObject* device_object(Device d) {
  auto* o = PyObject_New(DeviceObject, &g_device_type);
  if (o) {
    o->d = d;
    o->has_index = d.type != DeviceType::CPU;  // Note [A device without an index]
  }
  return reinterpret_cast<PyObject*>(o);
}

namespace {
// Note [return_types]
// ~~~~~~~~~~~~~~~~~~~
// An op returning (Tensor values, Tensor indices) (max.dim, min.dim, sort,
// topk) gives a named tuple of its own type, descent.return_types.<op>, as
// torch.return_types.max, .sort, .topk: a struct sequence that prints on
// several lines, one field a line (torch/csrc/utils/structseq.cpp):
//   descent.return_types.sort(
//   values=tensor([1., 2., 3.]),
//   indices=tensor([1, 2, 0]))
PyStructSequence_Field values_indices_fields[] = {
    {"values", "the values"}, {"indices", "where they were in the input"}, {nullptr, nullptr}};

PyObject* return_type_repr(PyObject* o) {
  PyTypeObject* type = Py_TYPE(o);
  std::string out = str(type->tp_name, "(\n");
  const Py_ssize_t n = PyTuple_GET_SIZE(o);
  for (Py_ssize_t i = 0; i < n; ++i) {
    PyRef r{PyObject_Repr(PyTuple_GET_ITEM(o, i))};
    if (!r.p) return nullptr;
    const char* text = PyUnicode_AsUTF8(r.p);
    if (!text) return nullptr;
    out += str(values_indices_fields[i].name, "=", text, i + 1 < n ? ",\n" : "");
  }
  return PyUnicode_FromString((out + ")").c_str());
}

}  // namespace

// descent.return_types.<name>, made once per op name; null with a Python error set.
PyTypeObject* return_type(const char* name) {
  static std::vector<std::pair<std::string, PyTypeObject*>> types;  // under the GIL
  for (const auto& [n, t] : types)
    if (n == name) return t;
  static std::vector<std::unique_ptr<std::string>> names;  // the type names outlive the types
  names.push_back(std::make_unique<std::string>(str("descent.return_types.", name)));
  PyStructSequence_Desc desc = {names.back()->c_str(), "values and indices", values_indices_fields, 2};
  PyTypeObject* t = PyStructSequence_NewType(&desc);
  if (!t) return nullptr;
  t->tp_repr = return_type_repr;
  types.emplace_back(name, t);
  return t;
}

namespace {

// _C.promote_types(type1, type2): torch.promote_types, the dtype two
// tensors of these dtypes give (Note [Type promotion], promotion.cpp).
PyObject* py_promote_types(PyObject*, PyObject* args) {
  PyObject *a, *b;
  if (!PyArg_ParseTuple(args, "OO:promote_types", &a, &b)) return nullptr;
  DESCENT_PY_TRY
  PyObject* both[2] = {a, b};
  ScalarType t[2];
  for (int i = 0; i < 2; ++i) {
    DESCENT_CHECK(Py_TYPE(both[i]) == &g_dtype_type, TypeError, "promote_types(): argument 'type", i + 1,
                  "' (position ", i + 1, ") must be descent.dtype, not ", Py_TYPE(both[i])->tp_name);
    t[i] = dtype_of(both[i]);
  }
  PyObject* r = dtype_object(kernels::promote_types_of(t[0], t[1]));
  Py_INCREF(r);
  return r;
  DESCENT_PY_CATCH(nullptr)
}

PyMethodDef dtype_functions[] = {
    {"promote_types", py_promote_types, METH_VARARGS, "promote_types(type1, type2): the dtype the two promote to"},
    {nullptr, nullptr, 0, nullptr},
};

}  // namespace

bool init_value_types(PyObject* m) {
  g_dtype_type.tp_basicsize = sizeof(DtypeObject);
  g_dtype_type.tp_flags = Py_TPFLAGS_DEFAULT;
  g_dtype_type.tp_repr = dtype_repr;
  g_dtype_type.tp_getset = dtype_getset;
  g_dtype_type.tp_doc =
      "A tensor's element type: descent.float32, float64, float16, bfloat16, int64, int32, int16, "
      "int8, uint8 or bool.";
  g_device_type.tp_basicsize = sizeof(DeviceObject);
  g_device_type.tp_flags = Py_TPFLAGS_DEFAULT;
  g_device_type.tp_new = device_new;
  g_device_type.tp_repr = device_repr;
  g_device_type.tp_str = device_str;
  g_device_type.tp_getset = device_getset;
  g_device_type.tp_richcompare = device_richcompare;
  g_device_type.tp_hash = device_hash;
  g_device_type.tp_doc = "Where a tensor lives: device('cpu'), device('sim:0'), device('cuda:0').";
  if (PyType_Ready(&g_dtype_type) < 0 || PyType_Ready(&g_device_type) < 0) return false;
  for (int t = 0; t < kNumScalarTypes; ++t) {
    PyObject* o = reinterpret_cast<PyObject*>(&g_dtypes[t]);
    PyObject_Init(o, &g_dtype_type);
    g_dtypes[t].t = ScalarType(t);
    Py_INCREF(o);  // immortal singletons
    if (PyModule_AddObject(m, dtype_name(ScalarType(t)), o) < 0) return false;
  }
  Py_INCREF(&g_dtype_type);
  Py_INCREF(&g_device_type);
  return PyModule_AddFunctions(m, dtype_functions) == 0 &&
         PyModule_AddObject(m, "dtype", reinterpret_cast<PyObject*>(&g_dtype_type)) == 0 &&
         PyModule_AddObject(m, "device", reinterpret_cast<PyObject*>(&g_device_type)) == 0;
}

}  // namespace descent::binding
