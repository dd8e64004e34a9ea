// Floor 2: tensors built from Python data. descent.tensor(data) reads a
// number, nested lists and tuples, a descent tensor, or anything with the
// buffer protocol (numpy arrays and scalars), as torch.tensor does;
// _scalar_tensor makes the 0-d tensor of one Python number.
//
// [SECTION] Nested sequences of numbers
// [SECTION] numpy arrays and other buffers
// [SECTION] The module's functions
#include <climits>
#include <cstring>
#include <optional>
#include <string>

#include "floors/binding/binding.h"
#include "floors/kernels/kernels.h"

namespace descent::binding {

namespace {

// [SECTION] Nested sequences of numbers ---------------------------------------------

// A leaf that is not a Python number but has .item() -- a one-element descent
// tensor, a numpy scalar or 0-d array -- stands for that number, as in
// PyTorch; a many-element one raises item()'s error. New reference.
PyObject* leaf_number(PyObject* o) {
  if (PyBool_Check(o) || PyLong_Check(o) || PyFloat_Check(o) || !PyObject_HasAttrString(o, "item")) {
    Py_INCREF(o);
    return o;
  }
  PyObject* v = PyObject_CallMethod(o, "item", nullptr);
  if (v == nullptr) throw ValueError("");  // keeps item()'s Python error
  return v;
}

// A list or tuple level of the data (not a str, bytes, tensor or 0-d array): its length, or -1.
Py_ssize_t sequence_length(PyObject* o) {
  if (!PySequence_Check(o) || PyUnicode_Check(o) || PyBytes_Check(o) || PyByteArray_Check(o) || is_tensor(o)) return -1;
  Py_ssize_t n = PySequence_Size(o);
  if (n < 0) PyErr_Clear();  // numpy's 0-d arrays have no len(): a number
  return n;
}

bool numpy_scalar_dtype(PyObject* o, ScalarType* dt);

// Walks nested lists/tuples: finds the shape and the dtype the values need.
// A list or tuple where a number belongs is only noted in `misplaced`: torch
// reads the dtype first and refuses it when storing, in the dtype's words.
void infer(PyObject* o, int depth, DimVector& shape, ScalarType& dtype, bool& any, PyTypeObject*& misplaced) {
  if (Py_ssize_t n = sequence_length(o); n >= 0) {
    DESCENT_CHECK(depth < kMaxDims, ValueError, "tensor(): the data is nested deeper than descent's ", kMaxDims,
                  " dimensions");
    if (any && shape.size() == depth) {  // [1, [2]]
      if (!misplaced) misplaced = Py_TYPE(o);
      return;
    }
    if (shape.size() == depth) shape.push_back(n);
    DESCENT_CHECK(shape[depth] == n, ValueError, "expected sequence of length ", shape[depth], " at dim ", depth,
                  " (got ", n, ")");  // torch/csrc/utils/tensor_new.cpp's words, from here to the leaf's
    for (Py_ssize_t i = 0; i < n; ++i) {
      PyRef item{PySequence_GetItem(o, i)};
      if (!item.p) throw PythonError();
      infer(item.p, depth + 1, shape, dtype, any, misplaced);
    }
    return;
  }
  DESCENT_CHECK(!PyBytes_Check(o) && !PyByteArray_Check(o) && !PyUnicode_Check(o), TypeError,
                "new(): invalid data type '", Py_TYPE(o)->tp_name, "'");
  DESCENT_CHECK(shape.size() == depth, TypeError, "not a sequence");  // [[1], 2]
  // A numpy scalar counts as its own dtype, a Python number as the default
  // one of its kind, and they promote as tensors do: [np.int32(1)] is int32,
  // [np.int32(1), 2] int64, [np.int8(1), np.uint8(2)] int16, as in torch.
  ScalarType t;
  if (!numpy_scalar_dtype(o, &t)) {
    PyRef leaf{leaf_number(o)};
    o = leaf.p;
    if (PyBool_Check(o))
      t = ScalarType::Bool;
    else if (is_int_like(o))
      t = ScalarType::Int64;
    else if (PyFloat_Check(o) || PyNumber_Check(o))
      t = kDefaultFloat;
    else
      throw Error(str("Could not infer dtype of ", Py_TYPE(o)->tp_name));
  }
  dtype = any ? kernels::promote_types_of(dtype, t) : t;
  any = true;
}

// A number as an element of dtype dt, checked as Scalar::to checks it (Note
// [Checked scalar conversion]), in torch.tensor's words when it does not
// fit: "value cannot be converted to type uint8 without overflow", the dtype
// named as Python names it.
template <typename T>
T element_of(const Scalar& v, ScalarType dt) {
  try {
    return v.to<T>();
  } catch (const Error&) {
    throw Error(str("value cannot be converted to type ", dtype_name(dt), " without overflow"));
  }
}

// One number into element pos, read the way the tensor's dtype needs it, as
// PyTorch does: an int64 tensor takes an int exactly (and refuses one past
// int64), a narrower integer tensor one that fits it (a uint8 tensor also a
// negative one down to -255, wrapped: tensor([-1], dtype=uint8) is 255; Note
// [Checked scalar conversion]), a bool tensor takes the number's truth, and a floating tensor reads
// every number as a double, so that an int past int64 among floats still fits:
// tensor([1.5, 2**70]) is float32 1.1806e+21.
void store_number(PyObject* obj, const Tensor& t, int64_t pos) {
  PyRef leaf{leaf_number(obj)};
  PyObject* o = leaf.p;
  const bool integral = PyBool_Check(o) || is_int_like(o);
  if (is_integral(t.dtype(), false) && integral) {
    long long i = PyLong_AsLongLong(o);
    if (i == -1 && PyErr_Occurred()) {
      if (!PyErr_ExceptionMatches(PyExc_OverflowError)) throw ValueError("tensor(): could not read an int");
      PyErr_Clear();
      throw ValueError(str("Overflow when unpacking long long (tensor(): element ", pos,
                           " is an int that does not fit in int64)"));  // PyTorch's class and words
    }
    visit_dtype(t.dtype(), [&]<typename T>() {
      if constexpr (is_int_v<T>) t.data<T>()[pos] = element_of<T>(Scalar(int64_t(i)), t.dtype());
    });
  } else if (t.dtype() == ScalarType::Bool) {
    int truth = PyObject_IsTrue(o);
    if (truth < 0) throw ValueError("tensor(): could not read a bool");  // the Python error is kept
    t.data<bool>()[pos] = truth != 0;
  } else {
    const double d = as_double(o);  // 10**400: Python's OverflowError
    // A float into an int64 tensor is checked as torch.tensor checks it
    // (1e300, nan and inf raise; Note [Checked scalar conversion]); into a
    // float32 one it is rounded, 1e300 to inf, as torch.tensor does.
    visit_dtype(t.dtype(), [&]<typename T>() {
      if constexpr (std::is_integral_v<T>)
        t.data<T>()[pos] = element_of<T>(Scalar(d), t.dtype());
      else
        t.data<T>()[pos] = T(d);
    });
  }
}

void fill(PyObject* o, const Tensor& t, int depth, int64_t& pos) {
  if (depth < t.dim()) {
    // The data is read twice (infer, then fill); a __float__ or __getitem__
    // that changes it in between must not send us past its end.
    DESCENT_CHECK(sequence_length(o) == t.sizes()[depth], ValueError,
                  "tensor(): the data changed while it was being read (dim ", depth, ")");
    for (int64_t i = 0; i < t.sizes()[depth]; ++i) {
      PyRef item{PySequence_GetItem(o, i)};
      DESCENT_CHECK(item.p != nullptr, ValueError, "tensor(): could not read element ", i, " at dim ", depth);
      fill(item.p, t, depth + 1, pos);
    }
    return;
  }
  DESCENT_CHECK(sequence_length(o) < 0, ValueError, "tensor(): the data changed while it was being read (dim ", depth,
                ")");
  store_number(o, t, pos);
  ++pos;
}

// [SECTION] numpy arrays and other buffers ----------------------------------------------

// Note [numpy arrays descent reads]
// ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
// tensor(array) reads an array of every integer and float dtype numpy has,
// as PyTorch does, into the nearest dtype descent has: bool, uint8, int8,
// int16, int32, int64, float16, float32 and float64 as they are; uint16,
// uint32 and uint64 as int64 (exactly: a uint64 past 2**63 - 1 is an error
// naming it). PyTorch 2.3 and later keep those three as torch.uint16,
// uint32 and uint64, dtypes with few kernels; descent has no such dtypes,
// so the values are kept and the width is not. Any other
// dtype (complex, object, datetime, strings) is a TypeError naming it, with
// PyTorch's words ("can't convert np.ndarray of type numpy.complex64"); an
// array in the other byte order is a ValueError, as in PyTorch.

// "numpy.complex64": the array's dtype as PyTorch names it, or the buffer's format.
std::string array_type_name(PyObject* data, const std::string& fmt) {
  std::string name = "a buffer of format '" + fmt + "'";
  if (PyObject* dt = PyObject_GetAttrString(data, "dtype")) {
    if (PyObject* type = PyObject_GetAttrString(dt, "type")) {
      if (PyType_Check(type)) name = reinterpret_cast<PyTypeObject*>(type)->tp_name;
      Py_DECREF(type);
    }
    Py_DECREF(dt);
  }
  PyErr_Clear();
  return name;
}

[[noreturn]] void refuse_array(PyObject* data, const std::string& fmt) {
  throw TypeError(str("can't convert np.ndarray of type ", array_type_name(data, fmt),
                      ". The only supported types are: float64, float32, float16, int64, int32, int16, int8, uint64, "
                      "uint32, uint16, uint8, and bool."));
}

// The elements of a buffer of C type Src into `out` (row-major), converted to
// Dst, through the buffer's byte strides.
template <typename Src, typename Dst, typename Convert>
void read_buffer(const Py_buffer& v, const Tensor& out, Convert convert) {
  DimVector sizes, strides;
  for (int d = 0; d < v.ndim; ++d) sizes.push_back(v.shape[d]), strides.push_back(v.strides[d]);
  Dst* p = out.data<Dst>();
  for (int64_t k = 0; k < out.numel(); ++k) {
    Src x;
    std::memcpy(&x, static_cast<const char*>(v.buf) + kernels::strided_offset(k, sizes, strides), sizeof x);
    p[k] = convert(x, k);
  }
}

// A buffer's format without its byte order mark ('<', '=', '@'); ValueError,
// PyTorch's words, for a byte order other than the machine's ('>', '!').
std::string native_format(const Py_buffer& view) {
  std::string fmt = view.format ? view.format : "B";
  if (!fmt.empty() && (fmt[0] == '>' || fmt[0] == '!'))
    throw ValueError(
        "given numpy array has byte order different from the native byte order. Conversion between "
        "byte orders is currently not supported.");
  if (!fmt.empty() && (fmt[0] == '<' || fmt[0] == '=' || fmt[0] == '@')) fmt = fmt.substr(1);
  return fmt;
}

// Whether a buffer of format `fmt` holds its elements as dtype `dt` stores
// them (bool, the floats, uint8, and signed integers of dt's width), so its
// memory can be viewed as a tensor; a wider or unsigned integer is read
// element by element instead.
bool holds_elements_as(const std::string& fmt, Py_ssize_t itemsize, ScalarType dt) {
  const char code = fmt.size() == 1 ? fmt[0] : '\0';
  const bool is_signed = code && std::strchr("bhilq", code);
  return code == '?' || code == 'e' || code == 'f' || code == 'd' || dt == ScalarType::UInt8 ||
         (is_signed && element_size(dt) == size_t(itemsize));
}

// The dtype of a buffer's elements from its format (numpy's codes, the byte
// order mark taken off) and item size; false where descent has none.
bool format_dtype(const std::string& fmt, Py_ssize_t itemsize, ScalarType* dt) {
  const char code = fmt.size() == 1 ? fmt[0] : '\0';
  const bool is_signed = std::strchr("bhilq", code) && code, is_unsigned = std::strchr("BHILQ", code) && code;
  if (code == '?')
    *dt = ScalarType::Bool;
  else if (code == 'e')
    *dt = ScalarType::Float16;
  else if (code == 'f')
    *dt = ScalarType::Float32;
  else if (code == 'd')
    *dt = ScalarType::Float64;
  else if (is_signed && itemsize == 1)
    *dt = ScalarType::Int8;
  else if (is_signed && itemsize == 2)
    *dt = ScalarType::Int16;
  else if (is_signed && itemsize == 4)
    *dt = ScalarType::Int32;
  else if (is_unsigned && itemsize == 1)
    *dt = ScalarType::UInt8;
  else if (is_signed || is_unsigned)
    *dt = ScalarType::Int64;
  else
    return false;
  return true;
}

// A numpy scalar's own dtype (np.int32(1): int32), read through the buffer
// it exports; false for anything else (a Python number, a tensor).
bool numpy_scalar_dtype(PyObject* o, ScalarType* dt) {
  // Exact checks: np.float64 is a subclass of Python's float, and counts as float64.
  if (PyBool_Check(o) || PyLong_CheckExact(o) || PyFloat_CheckExact(o) || is_tensor(o) || !PyObject_CheckBuffer(o) ||
      !PyObject_HasAttrString(o, "dtype"))
    return false;
  Py_buffer view;
  if (PyObject_GetBuffer(o, &view, PyBUF_FORMAT) < 0) {
    PyErr_Clear();
    return false;
  }
  std::string fmt = view.format ? view.format : "B";
  const bool zero_d = view.ndim == 0;
  const Py_ssize_t itemsize = view.itemsize;
  PyBuffer_Release(&view);
  if (!fmt.empty() && (fmt[0] == '<' || fmt[0] == '=' || fmt[0] == '@')) fmt = fmt.substr(1);
  return zero_d && format_dtype(fmt, itemsize, dt);
}

Tensor tensor_from_buffer(PyObject* data) {
  Py_buffer view;
  if (PyObject_GetBuffer(data, &view, PyBUF_RECORDS_RO) < 0) {
    // numpy exports no buffer for datetime and other dtypes: name the dtype.
    if (!PyObject_HasAttrString(data, "dtype")) throw Error("a Python error is set");
    PyErr_Clear();
    refuse_array(data, "?");
  }
  struct Release {
    Py_buffer* v;
    ~Release() { PyBuffer_Release(v); }
  } release{&view};
  const std::string fmt = native_format(view);
  ScalarType dt;
  if (!format_dtype(fmt, view.itemsize, &dt)) refuse_array(data, fmt);
  DimVector sizes, strides;
  for (int d = 0; d < view.ndim; ++d) {
    sizes.push_back(view.shape[d]);
    DESCENT_CHECK(view.strides[d] % view.itemsize == 0, ValueError,
                  "tensor(): buffer strides are not multiples of the item size");
    strides.push_back(view.strides[d] / view.itemsize);
  }
  Tensor out = empty_tensor(sizes, dt, Device{});
  if (out.numel() == 0) return out;
  if (holds_elements_as(fmt, view.itemsize, dt)) {
    // View the foreign memory as a tensor with its strides, then copy through the kernels.
    auto storage = Ref<StorageImpl>::make(DataPtr{view.buf, size_t(view.len), nullptr, nullptr}, Device{});
    Tensor foreign(Ref<TensorImpl>::make(storage, dt, sizes, strides, 0));
    call(Op::copy_, out, foreign);
    return out;
  }
  auto same = [](auto x, int64_t) { return int64_t(x); };
  if (view.itemsize == 2) {
    read_buffer<uint16_t, int64_t>(view, out, same);
  } else if (view.itemsize == 4) {
    read_buffer<uint32_t, int64_t>(view, out, same);
  } else {
    read_buffer<uint64_t, int64_t>(view, out, [](uint64_t x, int64_t k) {
      DESCENT_CHECK(x <= uint64_t(INT64_MAX), Error, "tensor(): element ", k, " of the uint64 array, ", x,
                    ", does not fit in int64, descent's widest integer dtype");
      return int64_t(x);
    });
  }
  return out;
}

// Note [from_numpy shares the array's memory]
// ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
// descent.from_numpy(a), as torch.from_numpy, makes no copy: the tensor's
// storage is the array's buffer, with the array's strides, so a write into
// either is seen by the other. The storage holds the buffer it was given
// (a Py_buffer, which holds a reference to the array) and releases it when
// the last tensor over it dies: its deleter takes the GIL, since it may run
// on any thread, and does nothing once the interpreter has finalized. As in
// PyTorch: negative strides are refused, a read-only array is shared with a
// warning that writing through the tensor is undefined, and only the dtypes
// descent has are read (no uint16, uint32, uint64: tensor() converts those).
void release_buffer(void* ctx, void*, size_t) {
  auto* view = static_cast<Py_buffer*>(ctx);
  if (Py_IsInitialized()) {
    PyGILState_STATE g = PyGILState_Ensure();
    PyBuffer_Release(view);
    PyGILState_Release(g);
  }
  delete view;
}

Tensor shared_from_buffer(PyObject* data) {
  auto* view = new Py_buffer;
  bool writable = true;
  if (PyObject_GetBuffer(data, view, PyBUF_RECORDS) < 0) {
    PyErr_Clear();
    writable = false;
    if (PyObject_GetBuffer(data, view, PyBUF_RECORDS_RO) < 0) {
      delete view;
      if (!PyObject_HasAttrString(data, "dtype")) throw Error("a Python error is set");
      PyErr_Clear();
      refuse_array(data, "?");
    }
  }
  DataPtr owned{view->buf, size_t(view->len), release_buffer, view};  // released on every path from here
  auto storage = Ref<StorageImpl>::make(owned, Device{});
  const std::string fmt = native_format(*view);
  ScalarType dt;
  if (!format_dtype(fmt, view->itemsize, &dt) || !holds_elements_as(fmt, view->itemsize, dt)) refuse_array(data, fmt);
  DimVector sizes, strides;
  for (int d = 0; d < view->ndim; ++d) {
    sizes.push_back(view->shape[d]);
    DESCENT_CHECK(view->strides[d] >= 0, ValueError,
                  "At least one stride in the given numpy array is negative, and tensors with negative strides are "
                  "not currently supported. (You can probably work around this by making a copy of your array  with "
                  "array.copy().) ");
    DESCENT_CHECK(view->strides[d] % view->itemsize == 0, ValueError,
                  "from_numpy(): given numpy array strides not a multiple of the element byte size. Copy the numpy "
                  "array to reallocate the memory.");
    strides.push_back(view->strides[d] / view->itemsize);
  }
  if (!writable &&
      PyErr_WarnEx(PyExc_UserWarning,
                   "The given NumPy array is not writable, and PyTorch does not support non-writable tensors. This "
                   "means writing to this tensor will result in undefined behavior. You may want to copy the array "
                   "to protect its data or make it writable before converting it to a tensor. This type of warning "
                   "will be suppressed for the rest of this program.",
                   1) < 0)
    throw Error("a Python error is set");
  return Tensor(Ref<TensorImpl>::make(storage, dt, sizes, strides, 0));
}

}  // namespace

Tensor tensor_from_data(PyObject* data, std::optional<ScalarType> want) {
  if (is_tensor(data)) return call(Op::to, unwrap(data), want ? IValue(*want) : IValue(), IValue(), true);
  if (PyObject_CheckBuffer(data) && !PyBytes_Check(data)) {
    Tensor out = tensor_from_buffer(data);
    return want ? call(Op::to, out, *want) : out;
  }
  DESCENT_CHECK(!PyUnicode_Check(data) && !PyBytes_Check(data), TypeError, "new(): invalid data type '",
                Py_TYPE(data)->tp_name, "'");
  // torch sizes the data first by its first elements, a str among them a
  // sequence: ['a'] is one that nests without end (compute_sizes), b'a' one of ints.
  PyRef first;
  for (PyObject* level = data; sequence_length(level) > 0; level = first.p) {
    first.reset(PySequence_GetItem(level, 0));
    if (!first.p) throw PythonError();
  }
  DESCENT_CHECK(!first.p || !PyUnicode_Check(first.p) || PyUnicode_GetLength(first.p) == 0, ValueError,
                "too many dimensions '", Py_TYPE(first.p)->tp_name, "'");
  DimVector shape;
  ScalarType dt = kDefaultFloat;
  bool any = false;
  PyTypeObject* misplaced = nullptr;
  infer(data, 0, shape, dt, any, misplaced);
  if (misplaced) {  // stored as the dtype's number: PyLong_AsLongLong's or PyFloat_AsDouble's words
    const ScalarType as = want.value_or(dt);
    if (is_floating(as)) throw TypeError(str("must be real number, not ", misplaced->tp_name));
    throw TypeError(str("'", misplaced->tp_name, "' object cannot be interpreted as an integer"));
  }
  Tensor out = empty_tensor(shape, want.value_or(dt), Device{});
  int64_t pos = 0;
  if (out.numel() > 0) fill(data, out, 0, pos);
  return out;
}

// [SECTION] The module's functions -------------------------------------------------------

namespace {

// _C._tensor(data, dtype): a new CPU tensor from a number, nested sequences,
// a descent tensor or any object with the buffer protocol (numpy arrays).
PyObject* py_tensor(PyObject*, PyObject* args) {
  PyObject* data;
  PyObject* dtype_obj = Py_None;
  if (!PyArg_ParseTuple(args, "O|O:tensor", &data, &dtype_obj)) return nullptr;
  DESCENT_PY_TRY
  trace::ScopedSpan span(trace::Floor::Binding, "tensor");
  std::optional<ScalarType> want;
  if (dtype_obj != Py_None) {
    DESCENT_CHECK(Py_TYPE(dtype_obj) == &g_dtype_type, TypeError, "tensor(): dtype must be a descent.dtype, not ",
                  Py_TYPE(dtype_obj)->tp_name);
    want = dtype_of(dtype_obj);
  }
  return wrap(tensor_from_data(data, want));
  DESCENT_PY_CATCH(nullptr)
}

// _C._scalar_tensor(number, dtype=None): a 0-d CPU tensor of the number.
// Without a dtype, a wrapped number in its own (int64, float64, bool), as
// the binding makes for x + 1; with one, the number converted to it with
// Scalar's check and words (Note [Checked scalar conversion]), as x[i] = v
// makes its value (torch's scalarToTensor: "value cannot be converted to
// type uint8_t without overflow").
PyObject* py_scalar_tensor(PyObject*, PyObject* args) {
  PyObject* o;
  PyObject* dtype_obj = Py_None;
  if (!PyArg_ParseTuple(args, "O|O:_scalar_tensor", &o, &dtype_obj)) return nullptr;
  DESCENT_PY_TRY
  DESCENT_CHECK(is_python_scalar(o), TypeError, "expected a Python number, got ", Py_TYPE(o)->tp_name);
  if (dtype_obj == Py_None) return wrap(scalar_to_tensor(o));
  DESCENT_CHECK(Py_TYPE(dtype_obj) == &g_dtype_type, TypeError, "_scalar_tensor(): dtype must be a descent.dtype");
  return wrap(scalar_tensor(o, dtype_of(dtype_obj)));
  DESCENT_PY_CATCH(nullptr)
}

// _C._from_numpy(array): a CPU tensor over the array's own memory (Note
// [from_numpy shares the array's memory]).
PyObject* py_from_numpy(PyObject*, PyObject* array) {
  DESCENT_PY_TRY
  trace::ScopedSpan span(trace::Floor::Binding, "from_numpy");
  DESCENT_CHECK(PyObject_HasAttrString(array, "__array_interface__") && PyObject_CheckBuffer(array), TypeError,
                "expected np.ndarray (got ", Py_TYPE(array)->tp_name, ")");
  return wrap(shared_from_buffer(array));
  DESCENT_PY_CATCH(nullptr)
}

}  // namespace

PyMethodDef g_tensor_data_functions[] = {
    {"_tensor", py_tensor, METH_VARARGS, "tensor(data, dtype=None): a new CPU tensor from Python data"},
    {"_from_numpy", py_from_numpy, METH_O, "_from_numpy(array): a CPU tensor sharing a numpy array's memory"},
    {"_scalar_tensor", py_scalar_tensor, METH_VARARGS,
     "_scalar_tensor(number, dtype=None): a 0-d tensor of a Python number (a wrapped number without a dtype)"},
    {nullptr, nullptr, 0, nullptr},
};

}  // namespace descent::binding
