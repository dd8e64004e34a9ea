// _C.TensorBase: the C side of descent.Tensor (its dtype and device objects
// are value_types.cpp's).
//
// [SECTION] Wrapping and unwrapping
// [SECTION] Properties and methods
// [SECTION] The buffer protocol (numpy interop)
#include <cstring>

#include <unistd.h>
#include <iterator>
#include <memory>
#include <vector>

#include "floors/autograd/node.h"
#include "floors/binding/binding.h"

namespace descent::binding {

PyTypeObject* g_tensor_base = nullptr;
PyTypeObject* g_tensor_class = nullptr;

// [SECTION] Wrapping and unwrapping --------------------------------------------------

bool is_tensor(PyObject* o) { return PyObject_TypeCheck(o, g_tensor_base); }

const Tensor& unwrap(PyObject* o) {
  const Tensor& t = reinterpret_cast<TensorObject*>(o)->tensor;
  DESCENT_CHECK(t.defined(), ValueError, "this Tensor object was not initialised by descent");
  return t;
}

// Note [One Python object per tensor]
// ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
// A TensorImpl has at most one Python object, as in PyTorch (its
// PyObjectSlot): wrapping a tensor that already has one hands back that
// object, so `x.contiguous() is x`, `x.to(x.dtype) is x`, `x.add_(1) is x`
// and `leaf.grad_fn.next_functions[0][0].variable is leaf` hold, and an
// nn.Parameter stays a Parameter whichever op hands it back. The slot is a
// borrowed pointer, cleared when the object dies. PyTorch goes one step
// further and keeps the object alive while C++ still holds the tensor (so an
// attribute set on it survives a round trip through C++ alone); descent
// makes a fresh object then.
PyObject* wrap(Tensor t) {
  if (!t.defined()) Py_RETURN_NONE;
  if (auto* existing = static_cast<PyObject*>(t.impl()->pyobj)) {
    Py_INCREF(existing);
    return existing;
  }
  PyTypeObject* cls = g_tensor_class ? g_tensor_class : g_tensor_base;
  PyObject* o = cls->tp_alloc(cls, 0);
  if (!o) return nullptr;
  t.impl()->pyobj = o;
  new (&reinterpret_cast<TensorObject*>(o)->tensor) Tensor(std::move(t));
  return o;
}

// A Scalar result (item, _local_scalar_dense) as the Python number of its type.
PyObject* scalar_to_py(const IValue& v) {
  switch (v.tag()) {
    case IValue::Tag::Bool:
      return PyBool_FromLong(v.to_bool());
    case IValue::Tag::Int:
      return PyLong_FromLongLong(v.to_int());
    default:
      return PyFloat_FromDouble(v.to_double());
  }
}

PyObject* wrap_results(const OpEntry& op, Stack& s) {
  if (s.size() == 1 && s[0].is_scalar()) return scalar_to_py(s[0]);
  if (s.size() == 1) return wrap(std::move(s[0].owned_tensor()));
  if (op.schema.returns.size() != 2 || op.schema.returns[1].name != "indices") {
    // Several results without max.dim's names (native_layer_norm's three,
    // nll_loss_forward's two): a plain tuple of them.
    PyObject* plain = PyTuple_New(s.size());
    if (!plain) return nullptr;
    for (int i = 0; i < s.size(); ++i) {
      PyObject* t = wrap(std::move(s[i].owned_tensor()));
      if (!t) {
        Py_DECREF(plain);
        return nullptr;
      }
      PyTuple_SET_ITEM(plain, i, t);
    }
    return plain;
  }
  PyTypeObject* type = return_type(op.python_name);  // Note [return_types]
  if (!type) return nullptr;
  PyObject* tup = PyStructSequence_New(type);
  if (!tup) return nullptr;
  DESCENT_CHECK(op.schema.returns.size() == 2, Error, op.name, ": unexpected number of results");
  for (int i = 0; i < 2; ++i) {
    PyObject* t = wrap(std::move(s[i].owned_tensor()));
    if (!t) {
      Py_DECREF(tup);
      return nullptr;
    }
    PyStructSequence_SET_ITEM(tup, i, t);
  }
  return tup;
}

// [SECTION] Properties and methods -----------------------------------------------------

namespace {

void tensor_dealloc(PyObject* o) {
  auto* t = reinterpret_cast<TensorObject*>(o);
  if (t->tensor.defined() && t->tensor.impl()->pyobj == o)
    t->tensor.impl()->pyobj = nullptr;  // Note [One Python object per tensor]
  t->tensor.~Tensor();                  // drops our reference
  Py_TYPE(o)->tp_free(o);
}

// Note [The legacy constructor]
// ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
// descent.Tensor(...) is PyTorch's legacy constructor, which old tutorials
// still call: always of the default float dtype, float32 (ints in the data
// become floats), on the CPU unless device= names another:
//   Tensor()                    an empty tensor, shape [0];
//   Tensor(2, 3), Tensor(Size)  uninitialized memory of those sizes (empty);
//   Tensor([1, 2]), Tensor(arr) a copy of the data (a tuple is data too);
//   Tensor(t)                   t itself viewed again (alias), when t is float32.
// torch.FloatTensor, LongTensor, ... are the same with their own dtype
// (descent/_legacy.py).
PyObject* tensor_new(PyTypeObject* type, PyObject* args, PyObject* kwargs) {
  DESCENT_PY_TRY
  Device device{};
  if (kwargs) {
    PyObject *key, *value;
    Py_ssize_t pos = 0;
    while (PyDict_Next(kwargs, &pos, &key, &value)) {
      const std::string k = PyUnicode_Check(key) ? utf8_text(key) : "";
      DESCENT_CHECK(k == "device", TypeError,
                    "new() received an invalid combination of arguments - got an "
                    "unexpected keyword argument '",
                    k, "'");
      if (value != Py_None)
        device = Py_TYPE(value) == &g_device_type ? device_of(value) : Device::parse(utf8_text(value));
    }
  }
  const Py_ssize_t n = PyTuple_GET_SIZE(args);
  PyObject* first = n > 0 ? PyTuple_GET_ITEM(args, 0) : nullptr;
  bool all_ints = n > 0;
  for (Py_ssize_t i = 0; i < n; ++i)
    all_ints = all_ints && PyLong_Check(PyTuple_GET_ITEM(args, i)) && !PyBool_Check(PyTuple_GET_ITEM(args, i));
  Tensor t;
  if (n == 0) {
    t = empty_tensor({0}, ScalarType::Float32, device);
  } else if (all_ints || (n == 1 && PyObject_TypeCheck(first, &g_size_type))) {
    DimVector sizes;
    PyObject* list = all_ints ? args : first;
    for (Py_ssize_t i = 0; i < PyTuple_GET_SIZE(list); ++i) {
      const long long v = PyLong_AsLongLong(PyTuple_GET_ITEM(list, i));
      if (v == -1 && PyErr_Occurred()) return nullptr;
      DESCENT_CHECK(
          v >= 0, Error, "Trying to create tensor with negative dimension ", v, ": ", "[",
          [&] {
            std::string d;
            for (Py_ssize_t j = 0; j < PyTuple_GET_SIZE(list); ++j)
              d += (j ? ", " : "") + std::to_string(PyLong_AsLongLong(PyTuple_GET_ITEM(list, j)));
            return d;
          }(),
          "]");
      sizes.push_back(v);
    }
    t = empty_tensor(sizes, ScalarType::Float32, device);
  } else if (n == 1 && is_tensor(first)) {
    const Tensor& x = unwrap(first);
    DESCENT_CHECK(x.dtype() == ScalarType::Float32, TypeError, "expected Float (got ", type_word(x.dtype()), ")");
    t = call(Op::alias, x);
  } else if (n == 1) {
    t = tensor_from_data(first, ScalarType::Float32);
    if (device.type != DeviceType::CPU) t = call(Op::to, t, IValue(), device);
  } else {
    throw TypeError(str("new() received an invalid combination of arguments - got (", Py_TYPE(first)->tp_name,
                        ", ...): expected sizes (ints), a sequence of numbers, an array or a Tensor"));
  }
  if (type == g_tensor_class || type == g_tensor_base) return wrap(std::move(t));
  PyObject* o = type->tp_alloc(type, 0);  // a subclass of Tensor: an object of its own type
  if (!o) return nullptr;
  t.impl()->pyobj = o;
  new (&reinterpret_cast<TensorObject*>(o)->tensor) Tensor(std::move(t));
  return o;
  DESCENT_PY_CATCH(nullptr)
}

PyObject* sizes_tuple(const DimVector& v) {
  PyObject* t = PyTuple_New(v.size());
  if (!t) return nullptr;
  for (int i = 0; i < v.size(); ++i) {
    PyObject* x = PyLong_FromLongLong(v[i]);
    if (!x) {
      Py_DECREF(t);
      return nullptr;
    }
    PyTuple_SET_ITEM(t, i, x);
  }
  return t;
}

PyObject* get_shape(PyObject* o, void*) {
  DESCENT_PY_TRY return size_object(unwrap(o).sizes());
  DESCENT_PY_CATCH(nullptr)
}
PyObject* get_ndim(PyObject* o, void*) {
  DESCENT_PY_TRY return PyLong_FromLong(unwrap(o).dim());
  DESCENT_PY_CATCH(nullptr)
}
PyObject* get_dtype(PyObject* o, void*) {
  DESCENT_PY_TRY PyObject* d = dtype_object(unwrap(o).dtype());
  Py_INCREF(d);
  return d;
  DESCENT_PY_CATCH(nullptr)
}
PyObject* get_device(PyObject* o, void*) {
  DESCENT_PY_TRY return device_object(unwrap(o).device());
  DESCENT_PY_CATCH(nullptr)
}
PyObject* get_requires_grad(PyObject* o, void*) {
  DESCENT_PY_TRY return PyBool_FromLong(autograd::requires_grad(unwrap(o)));
  DESCENT_PY_CATCH(nullptr)
}
int set_requires_grad(PyObject* o, PyObject* v, void*) {
  if (!v || !PyBool_Check(v)) {
    PyErr_SetString(PyExc_TypeError, "requires_grad must be a bool");
    return -1;
  }
  DESCENT_PY_TRY autograd::set_requires_grad(unwrap(o), v == Py_True);
  return 0;
  DESCENT_PY_CATCH(-1)
}

PyObject* m_dim(PyObject* o, PyObject*) {
  DESCENT_PY_TRY return PyLong_FromLong(unwrap(o).dim());
  DESCENT_PY_CATCH(nullptr)
}
PyObject* m_numel(PyObject* o, PyObject*) {
  DESCENT_PY_TRY return PyLong_FromLongLong(unwrap(o).numel());
  DESCENT_PY_CATCH(nullptr)
}
// x.size(dim=None) and x.stride(dim=None), C as THPVariable_size and
// THPVariable_stride: the whole shape (a Size) or strides (a tuple), or
// one dim's, the dim wrapped as c10's maybe_wrap_dim wraps it, with its words.
int64_t wrap_dim(const Tensor& t, PyObject* dim_obj) {
  PyRef index(PyNumber_Index(dim_obj));
  if (!index.p) throw PythonError();
  const int64_t dim = PyLong_AsLongLong(index.p);
  if (dim == -1 && PyErr_Occurred()) throw PythonError();
  DESCENT_CHECK(t.dim() != 0, IndexError, "Dimension specified as ", dim, " but tensor has no dimensions");
  DESCENT_CHECK(-t.dim() <= dim && dim < t.dim(), IndexError, "Dimension out of range (expected to be in range of [",
                -t.dim(), ", ", t.dim() - 1, "], but got ", dim, ")");
  return dim < 0 ? dim + t.dim() : dim;
}
PyObject* size_or_stride(PyObject* o, PyObject* args, PyObject* kwargs, bool size) {
  static const char* size_kw[] = {"dim", nullptr};
  PyObject* dim = Py_None;
  if (!PyArg_ParseTupleAndKeywords(args, kwargs, size ? "|O:size" : "|O:stride", const_cast<char**>(size_kw), &dim))
    return nullptr;
  DESCENT_PY_TRY
  const Tensor& t = unwrap(o);
  const DimVector& v = size ? t.sizes() : t.strides();
  if (dim == Py_None) return size ? size_object(v) : sizes_tuple(v);
  return PyLong_FromLongLong(v[int(wrap_dim(t, dim))]);
  DESCENT_PY_CATCH(nullptr)
}
PyObject* m_size(PyObject* o, PyObject* args, PyObject* kwargs) { return size_or_stride(o, args, kwargs, true); }
PyObject* m_stride(PyObject* o, PyObject* args, PyObject* kwargs) { return size_or_stride(o, args, kwargs, false); }
PyObject* m_storage_offset(PyObject* o, PyObject*) {
  DESCENT_PY_TRY return PyLong_FromLongLong(unwrap(o).offset());
  DESCENT_PY_CATCH(nullptr)
}
PyObject* m_is_contiguous(PyObject* o, PyObject*) {
  DESCENT_PY_TRY return PyBool_FromLong(unwrap(o).is_contiguous());
  DESCENT_PY_CATCH(nullptr)
}
PyObject* m_data_ptr(PyObject* o, PyObject*) {
  DESCENT_PY_TRY return PyLong_FromVoidPtr(unwrap(o).data_ptr());
  DESCENT_PY_CATCH(nullptr)
}

PyObject* element_to_py(const Tensor& t, int64_t off) {
  switch (t.dtype()) {
    case ScalarType::Bool:
      return PyBool_FromLong(t.data<bool>()[off]);
    case ScalarType::Int64:
      return PyLong_FromLongLong(t.data<int64_t>()[off]);
    case ScalarType::Float32:
      return PyFloat_FromDouble(t.data<float>()[off]);
    case ScalarType::Float64:
      return PyFloat_FromDouble(t.data<double>()[off]);
    case ScalarType::Float16:
      return PyFloat_FromDouble(float(t.data<Half>()[off]));
    case ScalarType::BFloat16:
      return PyFloat_FromDouble(float(t.data<BFloat16>()[off]));
    case ScalarType::UInt8:
      return PyLong_FromLong(t.data<uint8_t>()[off]);
    case ScalarType::Int8:
      return PyLong_FromLong(t.data<int8_t>()[off]);
    case ScalarType::Int16:
      return PyLong_FromLong(t.data<int16_t>()[off]);
    case ScalarType::Int32:
      return PyLong_FromLong(t.data<int32_t>()[off]);
  }
  return nullptr;
}

// Tensor.item(): aten::item, which reads the element through
// aten::_local_scalar_dense (Note [Reading a device tensor waits], device_object.cpp).
PyObject* m_item(PyObject* o, PyObject*) {
  DESCENT_PY_TRY
  return scalar_to_py(read_item(unwrap(o), ".item()"));
  DESCENT_PY_CATCH(nullptr)
}

// Every CPython allocation is checked: zeros(2**40, 0).tolist() asks for a
// list of 2**40 empty lists, and PyList_New's MemoryError comes back as one.
// Where the kernel overcommits memory (vm.overcommit_memory=1, as on the H200
// host), that first 8 TiB list is granted untouched and the 2**40 lists put
// in it are what runs the machine out: so the objects tolist() would make are
// counted first, and more than the machine's memory could hold is a
// MemoryError before any is made.
bool tolist_fits(const Tensor& t) {
  static const double kMemory = double(sysconf(_SC_PHYS_PAGES)) * double(sysconf(_SC_PAGESIZE));
  constexpr double kBytesPerObject = 32;  // a list slot and the smallest object: an underestimate
  double objects = 0, level = 1;
  for (int d = 0; d < t.dim() && level > 0; ++d) {
    level *= double(t.sizes()[d]);
    objects += level;
  }
  return objects * kBytesPerObject <= kMemory;
}

PyObject* tolist_rec(const Tensor& t, int d, int64_t off) {
  if (d == t.dim()) return element_to_py(t, off);
  PyObject* l = PyList_New(t.sizes()[d]);
  if (!l) return nullptr;
  for (int64_t i = 0; i < t.sizes()[d]; ++i) {
    PyObject* e = tolist_rec(t, d + 1, off + i * t.strides()[d]);
    if (!e) {
      Py_DECREF(l);
      return nullptr;
    }
    PyList_SET_ITEM(l, i, e);
  }
  return l;
}
PyObject* m_tolist(PyObject* o, PyObject*) {
  DESCENT_PY_TRY
  Tensor t = unwrap(o);
  t = host_copy(t, ".tolist()");  // Note [Reading a device tensor waits] (device_object.cpp)
  if (!tolist_fits(t)) {
    PyErr_Format(PyExc_MemoryError,
                 "tolist(): a tensor of shape %s would make more Python objects than this "
                 "machine's memory holds",
                 t.shape_str().c_str());
    return nullptr;
  }
  return tolist_rec(t, 0, 0);
  DESCENT_PY_CATCH(nullptr)
}

PyObject* m_requires_grad_(PyObject* o, PyObject* args) {
  int r = 1;
  if (!PyArg_ParseTuple(args, "|p:requires_grad_", &r)) return nullptr;
  DESCENT_PY_TRY
  const Tensor& t = unwrap(o);
  // A non-leaf requires grad already: requires_grad_() is a no-op there, and only turning it off is refused.
  if (!(r && !autograd::is_leaf(t))) autograd::set_requires_grad(t, r);
  Py_INCREF(o);
  return o;
  DESCENT_PY_CATCH(nullptr)
}

PyObject* m_is_inference(PyObject* o, PyObject*) { return PyBool_FromLong(unwrap(o).impl()->inference); }

// t._version and t._base: Note [Version counter and view base] (tensor.h).
PyObject* get_data(PyObject* o, void*) {
  DESCENT_PY_TRY return wrap(autograd::variable_data(unwrap(o)));
  DESCENT_PY_CATCH(nullptr)
}
PyObject* get_version(PyObject* o, void*) {
  DESCENT_PY_TRY
  const Tensor& t = unwrap(o);
  DESCENT_CHECK(!t.impl()->inference, Error,
                "Inference tensors do not track version counter.");  // Note [Inference tensors outside inference mode]
  return PyLong_FromUnsignedLong(t.version());
  DESCENT_PY_CATCH(nullptr)
}
// A new Python object over the base's TensorImpl each time (descent keeps no
// Python object on a TensorImpl): `v._base is x` is False where torch says
// True; `v._base._is_same(x)` says whether they are one tensor.
PyObject* get_base(PyObject* o, void*) {
  DESCENT_PY_TRY
  const Tensor& t = unwrap(o);
  if (!t.is_view()) Py_RETURN_NONE;
  return wrap(Tensor(t.impl()->base));
  DESCENT_PY_CATCH(nullptr)
}
PyObject* m_is_same(PyObject* o, PyObject* other) {
  DESCENT_PY_TRY
  DESCENT_CHECK(is_tensor(other), TypeError, "_is_same(): expected a Tensor, not ", Py_TYPE(other)->tp_name);
  return PyBool_FromLong(unwrap(o).is_same(unwrap(other)));
  DESCENT_PY_CATCH(nullptr)
}

// Tensor._make_subclass(cls, data, require_grad=False): a new object of
// `cls`, a subclass of Tensor (nn.Parameter), over data's memory and version
// counter, outside any graph, requiring grad as asked: what torch's
// Parameter.__new__ calls.
PyObject* m_make_subclass(PyObject*, PyObject* args) {
  PyObject *cls, *data;
  int requires_grad = 0;
  if (!PyArg_ParseTuple(args, "OO|p:_make_subclass", &cls, &data, &requires_grad)) return nullptr;
  if (!PyType_Check(cls) || !PyType_IsSubtype(reinterpret_cast<PyTypeObject*>(cls), g_tensor_base)) {
    PyErr_Format(PyExc_TypeError, "cls must be a type (got %s)", Py_TYPE(cls)->tp_name);
    return nullptr;
  }
  if (!is_tensor(data)) {
    PyErr_Format(PyExc_TypeError, "_make_subclass(): data must be a Tensor, not %s", Py_TYPE(data)->tp_name);
    return nullptr;
  }
  DESCENT_PY_TRY
  Tensor t = autograd::detach(unwrap(data));
  autograd::set_requires_grad(t, requires_grad);
  auto* type = reinterpret_cast<PyTypeObject*>(cls);
  PyObject* o = type->tp_alloc(type, 0);
  if (!o) return nullptr;
  new (&reinterpret_cast<TensorObject*>(o)->tensor) Tensor(std::move(t));
  return o;
  DESCENT_PY_CATCH(nullptr)
}

PyGetSetDef tensor_getset[] = {
    {"data", get_data, nullptr, "the same memory outside the graph, with a version counter of its own", nullptr},
    {"_version", get_version, nullptr, "how many in-place writes its memory has had (shared with its views)", nullptr},
    {"_base", get_base, nullptr, "the tensor a view looks into; None when it is not a view", nullptr},
    {"shape", get_shape, nullptr, "the sizes, as a descent.Size", nullptr},
    {"ndim", get_ndim, nullptr, "the number of dimensions (dim())", nullptr},
    {"dtype", get_dtype, nullptr, "the element type", nullptr},
    {"device", get_device, nullptr, "where the elements live", nullptr},
    {"requires_grad", get_requires_grad, set_requires_grad, "whether autograd records ops on it", nullptr},
    {nullptr, nullptr, nullptr, nullptr, nullptr},
};

PyMethodDef tensor_methods[] = {
    {"dim", m_dim, METH_NOARGS, "number of dimensions"},
    {"numel", m_numel, METH_NOARGS, "number of elements"},
    {"size", reinterpret_cast<PyCFunction>(reinterpret_cast<void (*)()>(m_size)), METH_VARARGS | METH_KEYWORDS,
     "size(dim=None): the shape (a descent.Size), or one dim's size"},
    {"stride", reinterpret_cast<PyCFunction>(reinterpret_cast<void (*)()>(m_stride)), METH_VARARGS | METH_KEYWORDS,
     "stride(dim=None): the strides in elements (a tuple), or one dim's"},
    {"storage_offset", m_storage_offset, METH_NOARGS, "offset of the first element in the storage, in elements"},
    {"is_contiguous", m_is_contiguous, METH_NOARGS, "whether the strides are the row-major ones"},
    {"data_ptr", m_data_ptr, METH_NOARGS, "address of the first element"},
    {"item", m_item, METH_NOARGS, "the one element, as a Python number"},
    {"tolist", m_tolist, METH_NOARGS, "the elements as nested lists"},
    {"_is_same", m_is_same, METH_O, "whether both are one tensor (one TensorImpl)"},
    {"requires_grad_", m_requires_grad_, METH_VARARGS, "sets requires_grad in place"},
    {"is_inference", m_is_inference, METH_NOARGS, "whether it was made in inference mode (no autograd keys)"},
    {"_make_subclass", m_make_subclass, METH_VARARGS | METH_STATIC,
     "_make_subclass(cls, data, require_grad=False): data's memory as a new object of a Tensor subclass"},
    {nullptr, nullptr, 0, nullptr},
};

// [SECTION] The buffer protocol --------------------------------------------------------

const char* buffer_format(ScalarType t) {
  switch (t) {
    case ScalarType::Bool:
      return "?";
    case ScalarType::Int64:
      return "q";
    case ScalarType::Int32:
      return "i";
    case ScalarType::Int16:
      return "h";
    case ScalarType::Int8:
      return "b";
    case ScalarType::UInt8:
      return "B";
    case ScalarType::Float32:
      return "f";
    case ScalarType::Float64:
      return "d";
    case ScalarType::Float16:
      return "e";
    case ScalarType::BFloat16:
      break;  // no buffer format: tensor_getbuffer refuses it, as PyTorch's numpy() does
  }
  return "B";
}

struct BufferShape {  // shape and strides in bytes, alive while the buffer is exported
  Py_ssize_t shape[kMaxDims], strides[kMaxDims];
};

// numpy.asarray(t) sees the tensor's own memory, strides included: no copy.
int tensor_getbuffer(PyObject* o, Py_buffer* view, int flags) {
  DESCENT_PY_TRY
  Tensor t = unwrap(o);
  // PyTorch's words; no hidden copy (Note [Reading a device tensor waits], device_object.cpp).
  DESCENT_CHECK(t.device().type == DeviceType::CPU, TypeError, "can't convert ", t.device().str(),
                " device type tensor to numpy. Use Tensor.cpu() to copy the tensor to host memory first.");
  DESCENT_CHECK(t.dtype() != ScalarType::BFloat16, TypeError, "Got unsupported ScalarType BFloat16");
  // As Tensor.numpy() (PyTorch's words): an array over the memory would leave the graph unseen.
  DESCENT_CHECK(!t.requires_grad(), Error,
                "Can't call numpy() on Tensor that requires grad. Use tensor.detach().numpy() instead.");
  // A consumer that cannot take strides (hashlib, file.write) or asks for
  // C order gets the elements in order or an error, never the raw storage.
  const bool wants_flat =
      (flags & PyBUF_STRIDES) != PyBUF_STRIDES || (flags & PyBUF_C_CONTIGUOUS) == PyBUF_C_CONTIGUOUS ||
      (flags & PyBUF_F_CONTIGUOUS) == PyBUF_F_CONTIGUOUS || (flags & PyBUF_ANY_CONTIGUOUS) == PyBUF_ANY_CONTIGUOUS;
  if (wants_flat && !t.is_contiguous()) {
    PyErr_Format(PyExc_BufferError,
                 "this %s tensor of shape %s is not contiguous, and the reader asked for contiguous memory: "
                 "pass x.contiguous() instead",
                 dtype_name(t.dtype()), t.shape_str().c_str());
    return -1;
  }
  if ((flags & PyBUF_F_CONTIGUOUS) == PyBUF_F_CONTIGUOUS && t.dim() > 1) {
    PyErr_SetString(PyExc_BufferError, "descent tensors are laid out in C order, not Fortran order");
    return -1;
  }
  // Byte strides and length, overflow-checked: a zero-size tensor may have
  // sizes and strides near 2**62 (zeros(0, 2**62)), an expanded one more
  // elements than bytes an address can count (zeros(1).expand(2**61)). A
  // stride that does not fit is 0 when there are no elements (nothing is
  // read through it); anything else that does not fit is an error.
  const int64_t es = int64_t(element_size(t.dtype()));
  Py_ssize_t len = 0;
  DESCENT_CHECK(!__builtin_mul_overflow(t.numel(), es, &len), Error, "can't export a ", dtype_name(t.dtype()),
                " tensor of shape ", t.shape_str(), " as a buffer: its ", t.numel(),
                " elements are more bytes than a Py_ssize_t can count");
  auto sh = std::make_unique<BufferShape>();
  for (int d = 0; d < t.dim(); ++d) {
    sh->shape[d] = t.sizes()[d];
    const bool overflow = __builtin_mul_overflow(t.strides()[d], es, &sh->strides[d]);
    if (overflow && t.numel() == 0) sh->strides[d] = 0;
    DESCENT_CHECK(!overflow || t.numel() == 0, Error, "can't export a ", dtype_name(t.dtype()), " tensor of shape ",
                  t.shape_str(), " and strides ", t.strides().str(), " as a buffer: stride ", t.strides()[d],
                  " of dim ", d, " is more bytes than a Py_ssize_t can count");
  }
  view->buf = t.data_ptr();
  view->obj = o;
  Py_INCREF(o);
  view->len = len;
  view->readonly = 0;
  view->itemsize = Py_ssize_t(es);
  view->format = (flags & PyBUF_FORMAT) ? const_cast<char*>(buffer_format(t.dtype())) : nullptr;
  // Without PyBUF_ND the reader sees plain bytes: one dimension, as
  // PyBuffer_FillInfo gives (hashlib wants that).
  view->ndim = (flags & PyBUF_ND) == PyBUF_ND ? t.dim() : 1;
  view->shape = (flags & PyBUF_ND) == PyBUF_ND ? sh->shape : nullptr;
  view->strides = (flags & PyBUF_STRIDES) == PyBUF_STRIDES ? sh->strides : nullptr;
  view->suboffsets = nullptr;
  view->internal = sh.release();
  return 0;
  DESCENT_PY_CATCH(-1)
}
void tensor_releasebuffer(PyObject*, Py_buffer* view) { delete static_cast<BufferShape*>(view->internal); }

PyBufferProcs tensor_buffer = {tensor_getbuffer, tensor_releasebuffer};

}  // namespace

bool init_tensor_type(PyObject* m) {
  if (!init_size_type(m)) return false;
  static PyTypeObject type = {PyVarObject_HEAD_INIT(nullptr, 0) "descent._C.TensorBase"};
  type.tp_basicsize = sizeof(TensorObject);
  type.tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_BASETYPE;
  type.tp_doc = "The C side of descent.Tensor: a reference to a TensorImpl (floors/core/tensor.h).";
  type.tp_new = tensor_new;
  type.tp_dealloc = tensor_dealloc;
  // These and the device ones (device_object.cpp).
  static std::vector<PyGetSetDef> getset(std::begin(tensor_getset), std::end(tensor_getset) - 1);
  static std::vector<PyMethodDef> methods(std::begin(tensor_methods), std::end(tensor_methods) - 1);
  for (PyGetSetDef* g = g_device_tensor_getset; g->name; ++g) getset.push_back(*g);
  for (PyMethodDef* d = g_device_tensor_methods; d->ml_name; ++d) methods.push_back(*d);
  getset.push_back({nullptr, nullptr, nullptr, nullptr, nullptr});
  methods.push_back({nullptr, nullptr, 0, nullptr});
  type.tp_getset = getset.data();
  type.tp_as_buffer = &tensor_buffer;
  type.tp_as_mapping = &g_tensor_mapping;  // x[i], x[i] = v (python_indexing.cpp)
  // tp_methods: these and one per op of the table; the operators (tensor_methods.cpp).
  if (!init_tensor_methods(&type, methods.data()) || PyType_Ready(&type) < 0) return false;
  g_tensor_base = &type;
  Py_INCREF(&type);
  return PyModule_AddObject(m, "TensorBase", reinterpret_cast<PyObject*>(&type)) == 0;
}

}  // namespace descent::binding
