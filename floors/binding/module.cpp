// The module descent._C: one Python function per op of the table, plus the
// few functions the Python package needs (tensor construction, seeding,
// tracing, the verifier, allocator statistics, the thread count).
//
// [SECTION] Errors
// [SECTION] Op functions
// [SECTION] Building tensors from Python data
// [SECTION] Everything else
// [SECTION] Key sets and the thread's autograd state
// [SECTION] Module init
#include <array>
#include <climits>
#include <cmath>
#include <cstring>
#include <utility>
#include <optional>
#include <string>
#include <vector>

#include "floors/allocator/allocator.h"
#include "floors/autograd/derivatives.h"
#include "floors/autograd/node.h"
#include "floors/binding/binding.h"
#include "floors/kernels/kernels.h"
#include "floors/kernels/parallel.h"
#include "floors/kernels/random.h"
#include "floors/kernels/verifier.h"
#include "floors/registration.h"
#include "tracer/trace.h"

namespace descent::binding {

PyObject* g_oom_error = nullptr;
thread_local bool t_taking_gil = false;

// [SECTION] Errors -------------------------------------------------------------

void set_python_error() {
  if (PyErr_Occurred()) return;  // a Python error is already set (e.g. by a conversion)
  try {
    throw;
  } catch (const PythonError& e) {
    e.restore();  // the exception Python code raised, on whichever thread it ran
  } catch (const alloc::OutOfMemoryError& e) {
    PyErr_SetString(g_oom_error, e.what());
  } catch (const TypeError& e) {
    PyErr_SetString(PyExc_TypeError, e.what());
  } catch (const ValueError& e) {
    PyErr_SetString(PyExc_ValueError, e.what());
  } catch (const IndexError& e) {
    PyErr_SetString(PyExc_IndexError, e.what());
  } catch (const NotImplementedError& e) {
    PyErr_SetString(PyExc_NotImplementedError, e.what());
  } catch (const trace::TraceFormatError& e) {
    PyErr_SetString(PyExc_ValueError, e.what());
  } catch (const std::bad_alloc&) {
    PyErr_SetString(g_oom_error, "descent: out of host memory (std::bad_alloc)");
  } catch (const std::exception& e) {
    PyErr_SetString(PyExc_RuntimeError, e.what());
  } catch (...) {
    PyErr_SetString(PyExc_RuntimeError, "descent: unknown C++ exception");
  }
}

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
  struct Drop { PyObject* o = nullptr; ~Drop() { Py_XDECREF(o); } } own_kwnames;
  if (g.overloads[0]->kind == OpKind::Factory && has_keyword(kwnames, "requires_grad")) {
    if (nargs + PyTuple_GET_SIZE(kwnames) > Py_ssize_t(std::size(call_args))) {
      PyErr_Format(PyExc_TypeError, "%s() got too many arguments", g.name.c_str());
      return nullptr;
    }
    std::copy(args, args + nargs, call_args);
    requires_grad = take_requires_grad(args, nargs, kwnames, call_args + nargs);
    if (requires_grad < 0) return nullptr;
    own_kwnames.o = kwnames;
    args = call_args;
  }
  Stack stack;
  const OpEntry* op = nullptr;
  if (!parse_args(g, args, nargs, kwnames, stack, &op)) return nullptr;
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

PyModuleDef nn_module_def = {PyModuleDef_HEAD_INIT, "descent._C._nn",
                             "the ops PyTorch keeps in torch._C._nn (python_module: nn), which "
                             "torch.nn.functional calls",
                             -1, nullptr, nullptr, nullptr, nullptr, nullptr};

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

// [SECTION] Building tensors from Python data ------------------------------------------

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
  if (!PySequence_Check(o) || PyUnicode_Check(o) || PyBytes_Check(o) || PyByteArray_Check(o) || is_tensor(o))
    return -1;
  Py_ssize_t n = PySequence_Size(o);
  if (n < 0) PyErr_Clear();  // numpy's 0-d arrays have no len(): a number
  return n;
}

bool numpy_scalar_dtype(PyObject* o, ScalarType* dt);

// Walks nested lists/tuples: finds the shape and the dtype the values need.
void infer(PyObject* o, int depth, DimVector& shape, ScalarType& dtype, bool& any) {
  if (Py_ssize_t n = sequence_length(o); n >= 0) {
    DESCENT_CHECK(depth < kMaxDims, ValueError, "tensor(): the data is nested deeper than descent's ", kMaxDims,
                  " dimensions");
    DESCENT_CHECK(!(any && shape.size() == depth), ValueError, "tensor(): found a sequence at dim ", depth,
                  " where a number was found before (ragged nested sequence)");
    if (shape.size() == depth) shape.push_back(n);
    DESCENT_CHECK(shape[depth] == n, ValueError, "tensor(): expected sequence of length ", shape[depth], " at dim ",
                  depth, " (got ", n, ")");
    for (Py_ssize_t i = 0; i < n; ++i) {
      PyRef item{PySequence_GetItem(o, i)};
      DESCENT_CHECK(item.p != nullptr, TypeError, "tensor(): could not read element ", i);
      infer(item.p, depth + 1, shape, dtype, any);
    }
    return;
  }
  DESCENT_CHECK(shape.size() == depth, ValueError, "tensor(): found a number where a sequence was expected at dim ", depth);
  DESCENT_CHECK(!PyBytes_Check(o) && !PyByteArray_Check(o) && !PyUnicode_Check(o), TypeError,
                "tensor(): could not infer dtype of ", Py_TYPE(o)->tp_name);
  // A numpy scalar counts as its own dtype, a Python number as the default
  // one of its kind, and they promote as tensors do: [np.int32(1)] is int32,
  // [np.int32(1), 2] int64, [np.int8(1), np.uint8(2)] int16, as in torch.
  ScalarType t;
  if (!numpy_scalar_dtype(o, &t)) {
    PyRef leaf{leaf_number(o)};
    o = leaf.p;
    if (PyBool_Check(o)) t = ScalarType::Bool;
    else if (is_int_like(o)) t = ScalarType::Int64;
    else if (PyFloat_Check(o) || PyNumber_Check(o)) t = kDefaultFloat;
    else throw TypeError(str("tensor(): could not infer dtype of ", Py_TYPE(o)->tp_name));
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
      if constexpr (std::is_integral_v<T>) t.data<T>()[pos] = element_of<T>(Scalar(d), t.dtype());
      else t.data<T>()[pos] = T(d);
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

// The dtype of a buffer's elements from its format (numpy's codes, the byte
// order mark taken off) and item size; false where descent has none.
bool format_dtype(const std::string& fmt, Py_ssize_t itemsize, ScalarType* dt) {
  const char code = fmt.size() == 1 ? fmt[0] : '\0';
  const bool is_signed = std::strchr("bhilq", code) && code, is_unsigned = std::strchr("BHILQ", code) && code;
  if (code == '?') *dt = ScalarType::Bool;
  else if (code == 'e') *dt = ScalarType::Float16;
  else if (code == 'f') *dt = ScalarType::Float32;
  else if (code == 'd') *dt = ScalarType::Float64;
  else if (is_signed && itemsize == 1) *dt = ScalarType::Int8;
  else if (is_signed && itemsize == 2) *dt = ScalarType::Int16;
  else if (is_signed && itemsize == 4) *dt = ScalarType::Int32;
  else if (is_unsigned && itemsize == 1) *dt = ScalarType::UInt8;
  else if (is_signed || is_unsigned) *dt = ScalarType::Int64;
  else return false;
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
  struct Release { Py_buffer* v; ~Release() { PyBuffer_Release(v); } } release{&view};
  std::string fmt = view.format ? view.format : "B";
  if (!fmt.empty() && (fmt[0] == '>' || fmt[0] == '!'))
    throw ValueError("given numpy array has byte order different from the native byte order. Conversion between "
                     "byte orders is currently not supported.");
  if (!fmt.empty() && (fmt[0] == '<' || fmt[0] == '=' || fmt[0] == '@')) fmt = fmt.substr(1);
  const char code = fmt.size() == 1 ? fmt[0] : '\0';
  const bool is_signed = std::strchr("bhilq", code) && code, is_unsigned = std::strchr("BHILQ", code) && code;
  ScalarType dt;
  if (!format_dtype(fmt, view.itemsize, &dt)) refuse_array(data, fmt);
  DimVector sizes, strides;
  for (int d = 0; d < view.ndim; ++d) {
    sizes.push_back(view.shape[d]);
    DESCENT_CHECK(view.strides[d] % view.itemsize == 0, ValueError, "tensor(): buffer strides are not multiples of the item size");
    strides.push_back(view.strides[d] / view.itemsize);
  }
  Tensor out = empty_tensor(sizes, dt, Device{});
  if (out.numel() == 0) return out;
  const bool native = code == '?' || code == 'e' || code == 'f' || code == 'd' ||
                      (is_signed && element_size(dt) == size_t(view.itemsize)) || dt == ScalarType::UInt8;
  if (native) {
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

}  // namespace

Tensor tensor_from_data(PyObject* data, std::optional<ScalarType> want) {
  if (is_tensor(data)) return call(Op::to, unwrap(data), want ? IValue(*want) : IValue(), IValue(), true);
  if (PyObject_CheckBuffer(data) && !PyBytes_Check(data)) {
    Tensor out = tensor_from_buffer(data);
    return want ? call(Op::to, out, *want) : out;
  }
  DimVector shape;
  ScalarType dt = kDefaultFloat;
  bool any = false;
  infer(data, 0, shape, dt, any);
  Tensor out = empty_tensor(shape, want.value_or(dt), Device{});
  int64_t pos = 0;
  if (out.numel() > 0) fill(data, out, 0, pos);
  return out;
}

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
    want = *reinterpret_cast<ScalarType*>(reinterpret_cast<char*>(dtype_obj) + sizeof(PyObject));
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
  return wrap(scalar_tensor(o, *reinterpret_cast<ScalarType*>(reinterpret_cast<char*>(dtype_obj) + sizeof(PyObject))));
  DESCENT_PY_CATCH(nullptr)
}

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
    t[i] = *reinterpret_cast<ScalarType*>(reinterpret_cast<char*>(both[i]) + sizeof(PyObject));
  }
  PyObject* r = dtype_object(kernels::promote_types_of(t[0], t[1]));
  Py_INCREF(r);
  return r;
  DESCENT_PY_CATCH(nullptr)
}

// [SECTION] Everything else ------------------------------------------------------------

PyObject* py_set_tensor_class(PyObject*, PyObject* cls) {
  if (!PyType_Check(cls) || !PyType_IsSubtype(reinterpret_cast<PyTypeObject*>(cls), g_tensor_base)) {
    PyErr_SetString(PyExc_TypeError, "_set_tensor_class expects a subclass of TensorBase");
    return nullptr;
  }
  Py_INCREF(cls);
  g_tensor_class = reinterpret_cast<PyTypeObject*>(cls);
  Py_RETURN_NONE;
}

// Seeds in [-2**63, 2**64 - 1], as PyTorch takes them (a negative one is its
// two's complement); anything else is refused, not wrapped.
PyObject* py_manual_seed(PyObject*, PyObject* arg) {
  if (PyBool_Check(arg) || !PyIndex_Check(arg))
    return PyErr_Format(PyExc_TypeError, "manual_seed(): seed must be an int, not %s", Py_TYPE(arg)->tp_name);
  PyObject* index = PyNumber_Index(arg);
  if (!index) return nullptr;
  int overflow = 0;
  unsigned long long seed = static_cast<unsigned long long>(PyLong_AsLongLongAndOverflow(index, &overflow));
  if (overflow > 0) seed = PyLong_AsUnsignedLongLong(index);
  Py_DECREF(index);
  if (overflow < 0 || PyErr_Occurred()) {
    PyErr_Clear();
    return PyErr_Format(PyExc_RuntimeError,
                        "manual_seed(): Overflow when unpacking long: a seed must be in [-2**63, 2**64 - 1]");
  }
  kernels::manual_seed(seed);
  Py_RETURN_NONE;
}

PyObject* py_ops(PyObject*, PyObject*) {
  static const char* kKinds[] = {"factory", "unary",  "binary", "comparison", "reduction",
                                 "matmul",  "view",   "copy",   "inplace", "read"};
  static_assert(sizeof(kKinds) / sizeof(kKinds[0]) == int(OpKind::Read) + 1);
  PyObject* list = PyList_New(0);
  if (!list) return nullptr;
  for (const OpEntry& op : all_ops()) {
    // The node autograd records for it (Note [One derivative per op]); a composite's come from its parts.
    const autograd::Derivative* der = autograd::derivative_of(op.id);
    const char* node = der ? der->node : std::string_view(op.dispatch).find("Composite") == 0 ? "(its parts')" : "";
    PyObject* d = Py_BuildValue("{s:s,s:s,s:s,s:s,s:s,s:s,s:s,s:s,s:s,s:s,s:s,s:s}", "name", op.name, "python_name",
                                op.python_name, "overload", op.schema.overload.c_str(), "profiler_name",
                                op.profiler_name, "schema", op.schema.text.c_str(), "dispatch", op.dispatch, "kind",
                                kKinds[int(op.kind)], "exactness",
                                op.exactness == Exactness::Exact ? "exact" : "reordered", "domain",
                                op.domain == Domain::Any ? "any" : "positive", "python_module",
                                op.python_module == PythonModule::NN ? "nn" : "", "sample", op.sample, "derivative",
                                node);
    if (!d || PyList_Append(list, d) < 0) {
      Py_XDECREF(d);
      Py_DECREF(list);
      return nullptr;
    }
    Py_DECREF(d);
  }
  return list;
}

// `descent verify --op X`: X is an operator name ("aten::max.dim"), the same
// without its namespace ("max.dim"), or a base name ("max": every overload).
bool op_matches(const OpEntry& op, const char* want) {
  const std::string w = want;
  const std::string ns = op.schema.ns + "::";
  return w == op.name || ns + w == op.name || w == op.python_name;
}

}  // namespace

// The verifier's verdicts as a list of dicts, as _C._verify and
// _C._verify_matmul_rungs return them.
PyObject* verdicts_object(const std::vector<kernels::Verdict>& vs) {
  return py_list(vs.size(), [&](size_t i) {
    const kernels::Verdict& v = vs[i];
    return Py_BuildValue("{s:s,s:s,s:s,s:s,s:O,s:d,s:d,s:s}", "op", v.op.c_str(), "dtype", dtype_name(v.dtype),
                         "claim", v.claim.c_str(), "variants", v.variants.c_str(), "passed",
                         v.passed ? Py_True : Py_False, "max_abs_diff", v.max_abs_diff, "bound", v.bound, "detail",
                         v.detail.c_str());
  });
}

namespace {

PyObject* py_verify(PyObject*, PyObject* args) {
  unsigned long long seed = 1;
  const char* only = nullptr;
  const char* device_name = nullptr;  // None: the CPU's variants; "sim:0", "cuda": that device against the CPU
  if (!PyArg_ParseTuple(args, "|Kzz:verify", &seed, &only, &device_name)) return nullptr;
  DESCENT_PY_TRY
  const Device device = device_name ? Device::parse(device_name) : Device{};
  std::vector<kernels::Verdict> vs;
  {
    GilRelease release;
    for (const OpEntry& op : all_ops()) {
      if (only && !op_matches(op, only)) continue;
      for (int t = 0; t < kNumScalarTypes; ++t) vs.push_back(kernels::verify(op, ScalarType(t), seed, device));
    }
  }
  DESCENT_CHECK(!only || !vs.empty(), Error, "verify(): no op named '", only, "' (see: descent ops)");
  return verdicts_object(vs);
  DESCENT_PY_CATCH(nullptr)
}

PyObject* py_set_variant(PyObject*, PyObject* arg) {
  if (!PyUnicode_Check(arg))
    return PyErr_Format(PyExc_TypeError, "set_kernel_variant(): expected 'auto', 'reference' or 'optimized', not %s",
                        Py_TYPE(arg)->tp_name);
  const std::string text = utf8_text(arg);
  const char* v = text.c_str();
  using kernels::Variant;
  if (!std::strcmp(v, "auto")) kernels::requested_variant() = Variant::Auto;
  else if (!std::strcmp(v, "reference")) kernels::requested_variant() = Variant::Reference;
  else if (!std::strcmp(v, "optimized")) kernels::requested_variant() = Variant::Optimized;
  else return PyErr_Format(PyExc_ValueError, "kernel variant must be 'auto', 'reference' or 'optimized', not '%s'", v);
  Py_RETURN_NONE;
}
PyObject* py_last_variant(PyObject*, PyObject*) { return PyUnicode_FromString(kernels::last_variant()); }

// descent.set_num_threads(n) / get_num_threads(): PyTorch's names for the
// intra-op thread count (Note [Intra-op parallelism]).
PyObject* py_set_num_threads(PyObject*, PyObject* arg) {
  if (!PyLong_Check(arg) || PyBool_Check(arg))
    return PyErr_Format(PyExc_TypeError, "set_num_threads(): argument 'n' must be int, not %s", Py_TYPE(arg)->tp_name);
  int overflow = 0;
  long long n = PyLong_AsLongLongAndOverflow(arg, &overflow);
  if (n == -1 && PyErr_Occurred()) return nullptr;
  if (overflow || n < INT_MIN || n > INT_MAX)  // the C++ check below names every other bad value
    return PyErr_Format(PyExc_ValueError, "set_num_threads(): expected a number of threads from 1 to %d, but got %S",
                        kernels::kMaxThreads, arg);
  DESCENT_PY_TRY
  kernels::set_num_threads(int(n));
  Py_RETURN_NONE;
  DESCENT_PY_CATCH(nullptr)
}
PyObject* py_get_num_threads(PyObject*, PyObject*) { return PyLong_FromLong(kernels::get_num_threads()); }

PyObject* py_cpu_stats(PyObject*, PyObject*) {
  alloc::CpuStats s = alloc::cpu_stats();
  return Py_BuildValue("{s:L,s:L,s:L,s:L}", "allocated_bytes", (long long)s.allocated_bytes, "peak_allocated_bytes",
                       (long long)s.peak_allocated_bytes, "num_allocs", (long long)s.num_allocs, "num_frees",
                       (long long)s.num_frees);
}

// [SECTION] Key sets and the thread's autograd state --------------------------------

PyObject* key_set_text(DispatchKeySet ks) {
  return PyUnicode_FromString(("DispatchKeySet(" + ks.str() + ")").c_str());
}

// The tensor's own keys, printed as torch._C._dispatch_keys prints them.
PyObject* py_dispatch_keys(PyObject*, PyObject* o) {
  DESCENT_PY_TRY
  DESCENT_CHECK(is_tensor(o), TypeError, "_dispatch_keys expects a Tensor");
  return key_set_text(unwrap(o).impl()->keys);
  DESCENT_PY_CATCH(nullptr)
}
PyObject* py_tls_include(PyObject*, PyObject*) { return key_set_text(local_keys().included); }
PyObject* py_tls_exclude(PyObject*, PyObject*) { return key_set_text(local_keys().excluded); }

PyObject* py_is_grad_enabled(PyObject*, PyObject*) { return PyBool_FromLong(grad_mode_enabled()); }
PyObject* py_set_grad_enabled(PyObject*, PyObject* v) {
  if (!PyBool_Check(v)) return PyErr_Format(PyExc_TypeError, "enabled must be a bool, not %s", Py_TYPE(v)->tp_name);
  autograd_state().grad_mode = v == Py_True;
  Py_RETURN_NONE;
}
PyObject* py_is_inference_mode_enabled(PyObject*, PyObject*) {
  return PyBool_FromLong(autograd_state().inference_mode);
}

// The thread's autograd state and key sets as a token, and back: how the
// Python context managers (descent/grad_mode.py) restore what they changed.
PyObject* py_local_state(PyObject*, PyObject*) {
  const LocalKeys& k = local_keys();
  const AutogradState& a = autograd_state();
  return Py_BuildValue("(iiII)", int(a.grad_mode), int(a.inference_mode), k.included.repr(), k.excluded.repr());
}
PyObject* py_set_local_state(PyObject*, PyObject* t) {
  int grad = 0, inference = 0;
  unsigned int inc = 0, exc = 0;
  if (!PyArg_ParseTuple(t, "iiII:_set_local_state", &grad, &inference, &inc, &exc)) return nullptr;
  autograd_state() = AutogradState{grad != 0, inference != 0};
  local_keys() = LocalKeys{DispatchKeySet::from_repr(inc), DispatchKeySet::from_repr(exc)};
  Py_RETURN_NONE;
}
// Enters inference mode (or leaves it, with False) as c10::InferenceMode's
// constructor does; the caller restores with _set_local_state.
PyObject* py_set_inference_mode(PyObject*, PyObject* v) {
  if (!PyBool_Check(v)) return PyErr_Format(PyExc_TypeError, "mode must be a bool, not %s", Py_TYPE(v)->tp_name);
  set_inference_mode(v == Py_True);
  Py_RETURN_NONE;
}

PyObject* py_matmul_isas(PyObject*, PyObject*) {
  DESCENT_PY_TRY
  const std::vector<std::string> names = kernels::matmul_isas();
  return py_list(names.size(), [&](size_t i) { return PyUnicode_FromString(names[i].c_str()); });
  DESCENT_PY_CATCH(nullptr)
}
PyObject* py_matmul_isa(PyObject*, PyObject*) { return PyUnicode_FromString(kernels::matmul_isa()); }
PyObject* py_set_matmul_isa(PyObject*, PyObject* arg) {
  if (!PyUnicode_Check(arg))
    return PyErr_Format(PyExc_TypeError, "_set_matmul_isa(): expected a str, not %s", Py_TYPE(arg)->tp_name);
  DESCENT_PY_TRY
  kernels::set_matmul_isa(utf8_text(arg));
  Py_RETURN_NONE;
  DESCENT_PY_CATCH(nullptr)
}

PyMethodDef module_methods[] = {
    {"_tensor", py_tensor, METH_VARARGS, "tensor(data, dtype=None): a new CPU tensor from Python data"},
    {"_scalar_tensor", py_scalar_tensor, METH_VARARGS,
     "_scalar_tensor(number, dtype=None): a 0-d tensor of a Python number (a wrapped number without a dtype)"},
    {"promote_types", py_promote_types, METH_VARARGS, "promote_types(type1, type2): the dtype the two promote to"},
    {"_set_tensor_class", py_set_tensor_class, METH_O, "registers descent.Tensor as the class of new tensors"},
    {"manual_seed", py_manual_seed, METH_O, "seeds the counter-based generator and rewinds it"},
    {"_ops", py_ops, METH_NOARGS, "the op table: name, schema, kind, exactness, domain, python_module, sample"},
    {"_verify", py_verify, METH_VARARGS, "_verify(seed=1, op=None): reference against optimized kernels"},
    {"_set_variant", py_set_variant, METH_O, "'auto', 'reference' or 'optimized' kernels for this thread"},
    {"_last_variant", py_last_variant, METH_NOARGS, "which loop the last kernel on this thread ran"},
    {"_matmul_isas", py_matmul_isas, METH_NOARGS, "the vector units the optimized matmul can use here, narrowest first"},
    {"_matmul_isa", py_matmul_isa, METH_NOARGS, "the vector unit the optimized matmul uses"},
    {"_set_matmul_isa", py_set_matmul_isa, METH_O, "_set_matmul_isa(name): one of _matmul_isas()"},
    {"set_num_threads", py_set_num_threads, METH_O, "set_num_threads(n): threads a large CPU kernel uses, >= 1"},
    {"get_num_threads", py_get_num_threads, METH_NOARGS, "threads a large CPU kernel uses (DESCENT_NUM_THREADS, else all)"},
    {"_cpu_allocator_stats", py_cpu_stats, METH_NOARGS, "the CPU allocator's statistics"},
    {"_dispatch_keys", py_dispatch_keys, METH_O, "the tensor's dispatch keys, as torch._C._dispatch_keys prints them"},
    {"_dispatch_tls_local_include_set", py_tls_include, METH_NOARGS, "the keys this thread adds to every call"},
    {"_dispatch_tls_local_exclude_set", py_tls_exclude, METH_NOARGS, "the keys this thread removes from every call"},
    {"is_grad_enabled", py_is_grad_enabled, METH_NOARGS, "whether grad mode is on for this thread"},
    {"_set_grad_enabled", py_set_grad_enabled, METH_O, "sets this thread's grad mode (a flag: no key changes)"},
    {"is_inference_mode_enabled", py_is_inference_mode_enabled, METH_NOARGS, "whether this thread is in inference mode"},
    {"_local_state", py_local_state, METH_NOARGS, "this thread's grad mode, inference mode and key sets, as a token"},
    {"_set_local_state", py_set_local_state, METH_O, "restores a token from _local_state"},
    {"_set_inference_mode", py_set_inference_mode, METH_O, "enters (True) or leaves (False) inference mode, as c10 does"},
    {nullptr, nullptr, 0, nullptr},
};

PyModuleDef module_def = {PyModuleDef_HEAD_INIT, "descent._C", "descent's compiled floors 2 to 8", -1, module_methods,
                          nullptr, nullptr, nullptr, nullptr};

}  // namespace

}  // namespace descent::binding

// [SECTION] Module init -----------------------------------------------------------------

PyMODINIT_FUNC PyInit__C() {
  using namespace descent::binding;
  DESCENT_PY_TRY descent::register_floors(); DESCENT_PY_CATCH(nullptr)  // Note [Registering the floors]
  PyObject* m = PyModule_Create(&module_def);
  if (!m) return nullptr;
  g_oom_error = PyErr_NewExceptionWithDoc("descent.OutOfMemoryError",
                                          "Raised when an allocator cannot find memory even after freeing its cache.",
                                          PyExc_RuntimeError, nullptr);
  Py_XINCREF(g_oom_error);
  if (!g_oom_error || PyModule_AddObject(m, "OutOfMemoryError", g_oom_error) < 0 || !init_value_types(m) ||
      !init_tensor_type(m) || !init_autograd(m, g_tensor_base) || !init_python_function(m) || !init_trace_type(m) ||
      !init_devices(m) || !init_library(m)) {
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
