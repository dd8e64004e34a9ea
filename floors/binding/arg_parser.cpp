// Parsing Python arguments against an op's schema.
//
// Note [Parsing arguments]
// ~~~~~~~~~~~~~~~~~~~~~~~~
// The binding knows nothing about any particular op: it reads the schemas of
// the op table. For a call f(*args, **kwargs) it tries each overload of f in
// table order and takes the first that accepts the call:
//   1. positional arguments fill the schema's arguments left to right (a
//      trailing int[] also takes loose ints: ones(2, 3) means ones([2, 3]));
//   2. keyword arguments fill arguments by name (kwarg-only ones too);
//   3. missing arguments take their defaults, or the overload is refused;
//   4. each Python object must convert to its argument's type: a Tensor
//      argument after the first also takes a Python number (x + 1), which
//      becomes a 0-d "wrapped number" tensor (Note [Type promotion]).
// When no overload accepts the call, the TypeError names the argument, its
// position and the type found (one overload), or lists the signatures (several).
// A method (x.add("a"), Note [Tensor methods from the op table]) is parsed with
// self as its first argument, and its messages leave self out, as PyTorch's
// method form does: "add(): argument 'other' (position 1) must be Tensor".
// An int too large for int64 is no mismatch but a RuntimeError at once, as in
// PyTorch. (A TypeError is what makes Tensor's operators answer NotImplemented.)
//
// Note [What an argument accepts]
// ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
// As PyTorch's FunctionParameter::check:
//   - Tensor: a tensor. A Python number only in the elementwise ops (binary,
//     comparison, in place), the ones PyTorch's should_allow_numbers_as_tensors
//     names; so ones(2) @ 2 is a TypeError, as in PyTorch. In those same ops a
//     numpy array is read as tensor() reads it, so an array on either side of
//     an operator gives a Tensor (numpy defers to Tensor's reflected operator:
//     __array_priority__, _tensor.py).
//   - Scalar and float: a number, or a 0-d tensor that does not require grad
//     (full((2,), tensor(3.)), alpha=tensor(2)), read by its dtype. A tensor
//     goes to a Scalar only when no overload takes it as a Tensor: the
//     overloads are tried once with Scalars refusing tensors, then once more
//     (PyTorch sorts its Tensor overloads first), so x ** tensor(-1) is
//     pow.Tensor_Tensor, as in PyTorch, though pow.Tensor_Scalar's row comes first.
//   - int: an int or a numpy int, or a 0-d integer tensor; a tensor of any
//     other shape or dtype is a mismatch ("must be int, not Tensor").
//   - int[]: ints, or anything with __index__ (a one-element int tensor).
//   - Tensor?[]: a tuple or list of tensors and Nones (index's indices);
//     Tensor[]: a tuple or list of tensors (cat's), any number of them.
// A function's first argument `self` may also be given by keyword as
// `input`, as PyTorch's Python signatures call it (mse_loss(input=x, ...));
// messages keep the schema's name.
// An object whose __index__ or __float__ raises is a mismatch too, and its
// exception is kept: the TypeError that names the argument has it as its
// __cause__. KeyboardInterrupt, SystemExit and MemoryError are not mismatches:
// they propagate as raised.
#include <algorithm>
#include <cstring>
#include <type_traits>

#include "floors/binding/binding.h"

namespace descent::binding {

namespace {

const char* type_name(PyObject* o) { return Py_TYPE(o)->tp_name; }

// A float that is not a Python float: numpy's float32, float16 (a number with
// __float__ that is not a sequence, so not an array or a tensor).
bool is_float_like(PyObject* o) {
  return PyFloat_Check(o) || (!is_tensor(o) && !PySequence_Check(o) && !PyIndex_Check(o) && Py_TYPE(o)->tp_as_number &&
                              Py_TYPE(o)->tp_as_number->nb_float);
}

enum class IntResult { Ok, NotInt, Overflow };

// The exception raised by an argument's __index__ or __float__, kept while the
// overloads are tried; the final TypeError gets it as __cause__ (Note [What an
// argument accepts]).
struct Cause {
  PyRef exc;
  // Takes the Python error now set. One that is no mismatch (not an
  // Exception, or a MemoryError) stays set and unwinds the call.
  void take() {
    if (!PyErr_ExceptionMatches(PyExc_Exception) || PyErr_ExceptionMatches(PyExc_MemoryError))
      throw Error("a Python error is set");  // set_python_error keeps Python's own
    PyObject* value = fetch_exception();
    if (exc.p)
      Py_XDECREF(value);  // the first one is kept
    else
      exc.reset(value);
  }
  // Makes the kept exception the __cause__ of the Python error now set.
  void attach() {
    if (!exc.p) return;
    PyObject *type, *value, *tb;
    PyErr_Fetch(&type, &value, &tb);
    PyErr_NormalizeException(&type, &value, &tb);
    if (value) PyException_SetCause(value, exc.release());  // steals exc
    PyErr_Restore(type, value, tb);
  }
};

IntResult to_int(PyObject* o, int64_t* out, Cause* cause = nullptr) {
  PyObject* index = PyLong_Check(o) ? (Py_INCREF(o), o) : PyNumber_Index(o);  // numpy ints too
  if (!index) {
    if (cause)
      cause->take();
    else
      PyErr_Clear();
    return IntResult::NotInt;
  }
  long long v = PyLong_AsLongLong(index);
  Py_DECREF(index);
  if (v == -1 && PyErr_Occurred()) {
    PyErr_Clear();
    return IntResult::Overflow;
  }
  *out = v;
  return IntResult::Ok;
}

// An int of the right type that does not fit int64 is not a mismatch that
// another overload could take: as in PyTorch, it is a RuntimeError at once.
// "argument 'index' (position 2) is 9223372036854775808: Overflow when unpacking long"
[[noreturn]] void throw_overflow(const SchemaArg& a, int shown, PyObject* o) {
  std::string text = "an int";
  if (PyObject* r = PyObject_Repr(o)) {
    if (const char* u = PyUnicode_AsUTF8(r)) text = u;
    Py_DECREF(r);
  }
  PyErr_Clear();
  if (text.size() > 40) text = text.substr(0, 37) + "...";
  throw Error(str("argument '", a.name, "' (position ", shown, ") is ", text,
                  ": Overflow when unpacking long (it does not fit in int64)"));
}

// A 0-d tensor that may stand for a number (Note [What an argument accepts]).
bool is_number_tensor(PyObject* o) {
  if (!is_tensor(o)) return false;
  const Tensor& t = unwrap(o);
  return t.dim() == 0 && !t.requires_grad() && t.device().type == DeviceType::CPU;
}

// A numpy array (or another object that exports __array_interface__ and a buffer).
bool is_array(PyObject* o) {
  return !is_tensor(o) && PyObject_CheckBuffer(o) && PyObject_HasAttrString(o, "__array_interface__");
}

// float(o) into *d, or false with the exception kept in `cause`. Python's own
// int and float raise as they are (2**2000: OverflowError).
bool float_arg(PyObject* o, double* d, Cause& cause) {
  *d = PyFloat_AsDouble(o);
  if (!(*d == -1.0 && PyErr_Occurred())) return true;
  if (PyLong_CheckExact(o) || PyFloat_CheckExact(o)) throw Error("a Python error is set");
  cause.take();
  return false;
}

// Converts one object to the argument's type, or explains why not in `err`.
// `numbers` says whether a Tensor argument takes numbers and arrays here.
// `shift` is 1 for a method: its messages count positions without self.
bool convert(const SchemaArg& a, PyObject* o, int pos, int shift, bool numbers, bool tensor_scalars, Cause& cause,
             IValue& out, std::string& err) {
  if (o == Py_None && a.optional) {
    out = IValue();
    return true;
  }
  int64_t i = 0;
  double d = 0;
  auto int_arg = [&](PyObject* x) {  // x into i: false when it is no int, throw_overflow past int64
    IntResult r = to_int(x, &i, PyLong_CheckExact(x) ? nullptr : &cause);
    if (r == IntResult::Overflow) throw_overflow(a, pos + 1 - shift, x);
    return r == IntResult::Ok;
  };
  switch (a.type) {
    case ArgType::Tensor:
      if (is_tensor(o)) {
        out = IValue::borrow(unwrap(o));  // the caller holds `o` for the call
        return true;
      }
      if (numbers && pos > 0 && is_python_scalar(o)) {
        if (is_int_like(o) && int_arg(o) == false) break;
        out = scalar_to_tensor(o);
        return true;
      }
      if (numbers && pos > 0 && is_array(o)) {
        out = IValue(tensor_from_data(o, std::nullopt));
        return true;
      }
      break;
    case ArgType::Scalar:
      if (tensor_scalars && is_number_tensor(o)) {
        out = IValue(tensor_scalar(unwrap(o)));
        return true;
      }
      if (is_tensor(o)) break;
      if (is_bool_like(o)) {
        out = IValue(PyObject_IsTrue(o) == 1);
        return true;
      }
      if (is_int_like(o)) {
        if (!int_arg(o)) break;
        out = IValue(i);
        return true;
      }
      if (is_float_like(o)) {
        if (!float_arg(o, &d, cause)) break;
        out = IValue(d);
        return true;
      }
      break;
    case ArgType::Int:
      if (is_tensor(o)) {  // a 0-d integer tensor only (any integer dtype, not bool), as PyTorch's int64 check
        if (!is_number_tensor(o) || !is_integral(unwrap(o).dtype(), false)) break;
        out = IValue(tensor_scalar(unwrap(o)).to_int());
        return true;
      }
      if (is_int_like(o)) {
        if (!int_arg(o)) break;
        out = IValue(i);
        return true;
      }
      break;
    case ArgType::Float:
      if (tensor_scalars && is_number_tensor(o)) {
        out = IValue(tensor_scalar(unwrap(o)).to_double());
        return true;
      }
      if (is_tensor(o)) break;
      if (is_float_like(o) || is_int_like(o)) {
        if (!float_arg(o, &d, cause)) break;
        out = IValue(d);
        return true;
      }
      break;
    case ArgType::Bool:
      if (PyBool_Check(o)) {
        out = IValue(o == Py_True);
        return true;
      }
      break;
    case ArgType::IntList: {
      if (is_int_like(o)) {
        if (!int_arg(o)) break;
        out = IValue(DimVector{i});
        return true;
      }
      if (!PyTuple_Check(o) && !PyList_Check(o)) break;
      PyObject* seq = o;
      Py_ssize_t n = PySequence_Fast_GET_SIZE(seq);
      if (n > kMaxDims) {
        err = str("argument '", a.name, "' has ", n, " elements; descent supports at most ", kMaxDims, " dimensions");
        return false;
      }
      DimVector v;
      for (Py_ssize_t k = 0; k < n; ++k) {
        PyObject* item = PySequence_Fast_GET_ITEM(seq, k);
        if (!is_int_like(item) || !int_arg(item)) {
          err = str("argument '", a.name, "' must be tuple of ints, but found element of type ", type_name(item),
                    " at pos ", k);
          return false;
        }
        v.push_back(i);
      }
      out = IValue(v);
      return true;
    }
    case ArgType::OptionalTensorList:  // Tensor?[]: a tuple or list of tensors and Nones
    case ArgType::TensorList: {        // Tensor[]: a tuple or list of tensors
      if (!PyTuple_Check(o) && !PyList_Check(o)) {
        if (a.type == ArgType::TensorList) {  // PyTorch's words for cat(x)
          err = str("argument '", a.name, "' (position ", pos + 1 - shift, ") must be tuple of Tensors, not ",
                    type_name(o));
          return false;
        }
        break;
      }
      const bool nones = a.type == ArgType::OptionalTensorList;
      const Py_ssize_t n = PySequence_Fast_GET_SIZE(o);
      if (nones && n > kMaxDims) {
        err = str("argument '", a.name, "' has ", n, " elements; descent indexes at most ", kMaxDims, " dimensions");
        return false;
      }
      OptionalTensorList list;
      for (Py_ssize_t k = 0; k < n; ++k) {
        PyObject* item = PySequence_Fast_GET_ITEM(o, k);
        if (!is_tensor(item) && !(nones && item == Py_None)) {
          err = nones ? str("argument '", a.name, "' must be tuple of Tensors, but found element of type ",
                            type_name(item), " at pos ", k)
                      : str("expected Tensor as element ", k, " in argument ", pos - shift, ", but got ",
                            type_name(item));
          return false;
        }
        list.push_back(item == Py_None ? Tensor() : unwrap(item));
      }
      out = IValue(list);
      return true;
    }
    case ArgType::ScalarType:
      if (Py_TYPE(o) == &g_dtype_type) {
        out = IValue(dtype_of(o));
        return true;
      }
      break;
    case ArgType::Device:
      if (Py_TYPE(o) == &g_device_type) {
        out = IValue(device_of(o));
        return true;
      }
      if (PyUnicode_Check(o)) {
        out = IValue(Device::parse(utf8_text(o)));  // raises RuntimeError naming the string
        return true;
      }
      break;
  }
  err = str("argument '", a.name, "' (position ", pos + 1 - shift, ") must be ", a.type_str(), ", not ", type_name(o));
  return false;
}

// "(Tensor self, Tensor other, *, Scalar alpha=...)"; a method's leaves out self (shift 1), as PyTorch's does.
std::string signature(const OpEntry& op, int shift) {
  std::string s = "(";
  const char* sep = "";
  bool star = false;
  for (size_t k = shift; k < op.schema.args.size(); ++k, sep = ", ") {
    const SchemaArg& a = op.schema.args[k];
    if (a.kwarg_only && !star) s += sep + std::string("*"), sep = ", ", star = true;
    s += sep + a.type_str() + " " + a.name;
    if (a.has_default) s += "=...";
  }
  return s + ")";
}

// Tries one overload; on failure `err` says why.
bool try_overload(const OpEntry& op, PyObject* const* args, Py_ssize_t nargs, PyObject* kwnames, int shift,
                  Stack& stack, bool tensor_scalars, Cause& cause, std::string& err) {
  // PyTorch's should_allow_numbers_as_tensors: the elementwise ops.
  const bool numbers = op.kind == OpKind::Binary || op.kind == OpKind::Comparison || op.kind == OpKind::InPlace;
  const auto& sargs = op.schema.args;
  const int npos = op.schema.num_positional();
  PyObject* slots[kMaxStack] = {};
  PyObject* gathered = nullptr;  // ones(2, 3): the loose ints as a tuple
  Py_ssize_t used = nargs;
  if (nargs > npos && npos > 0 && sargs[npos - 1].type == ArgType::IntList && is_int_like(args[npos - 1])) {
    gathered = PyTuple_New(nargs - npos + 1);
    if (!gathered) throw std::bad_alloc();  // MemoryError is set; DESCENT_PY_CATCH keeps it
    for (Py_ssize_t k = npos - 1; k < nargs; ++k) {
      Py_INCREF(args[k]);
      PyTuple_SET_ITEM(gathered, k - npos + 1, args[k]);
    }
    used = npos;
  }
  PyRef owned{gathered};
  if (used > npos) {
    err = str(op.schema.name, "() takes ", npos - shift, " positional argument", npos - shift == 1 ? "" : "s", " but ",
              nargs - shift, " were given");
    return false;
  }
  for (Py_ssize_t k = 0; k < used; ++k) slots[k] = args[k];
  if (gathered) slots[npos - 1] = gathered;
  Py_ssize_t nkw = kwnames ? PyTuple_GET_SIZE(kwnames) : 0;
  for (Py_ssize_t k = 0; k < nkw; ++k) {
    const std::string name = utf8_text(PyTuple_GET_ITEM(kwnames, k));
    size_t j = 0;
    while (j < sargs.size() && sargs[j].name != name) ++j;
    // A function's `self` may be given as `input`, the name PyTorch's Python
    // signatures give it (torch._C._nn.mse_loss(input=x, target=y)).
    if (j == sargs.size() && shift == 0 && name == "input" && !sargs.empty() && sargs[0].name == "self") j = 0;
    // numpy's names, which PyTorch's parser accepts for every op
    // (python_arg_parser.cpp's numpy_compatibility_arg_names): keepdims for
    // keepdim and axis for dim, so x.sum(axis=0, keepdims=True) runs.
    if (j == sargs.size() && (name == "keepdims" || name == "axis")) {
      const char* torch_name = name == "keepdims" ? "keepdim" : "dim";
      while (j > 0 && sargs[j - 1].name != torch_name) --j;
      j = j > 0 ? j - 1 : sargs.size();
    }
    if (j == sargs.size()) {
      err = str(op.schema.name, "() got an unexpected keyword argument '", name, "'");
      return false;
    }
    if (slots[j]) {
      err = str(op.schema.name, "() got multiple values for argument '", name, "'");
      return false;
    }
    slots[j] = args[nargs + k];
  }
  for (size_t j = 0; j < sargs.size(); ++j) {
    if (!slots[j]) {
      if (!sargs[j].has_default) {
        err = str(op.schema.name, "() missing required argument '", sargs[j].name, "' (pos ", j + 1 - shift, ")");
        return false;
      }
      stack.push(sargs[j].default_value);
      continue;
    }
    IValue v;
    if (!convert(sargs[j], slots[j], int(j), shift, numbers, tensor_scalars, cause, v, err)) {
      err = str(op.schema.name, "(): ", err);
      return false;
    }
    stack.push(std::move(v));
  }
  return true;
}

}  // namespace

// The element of a 0-d CPU tensor as the Scalar of its dtype.
Scalar tensor_scalar(const Tensor& t) {
  Scalar v;
  visit_dtype(t.dtype(), [&]<typename T>() {
    if constexpr (std::is_same_v<T, bool>)
      v = Scalar(*t.data<bool>());
    else if constexpr (std::is_integral_v<T>)
      v = Scalar(int64_t(*t.data<T>()));
    else
      v = Scalar(double(*t.data<T>()));
  });
  return v;
}

const std::vector<OverloadGroup>& overload_groups() {
  static const std::vector<OverloadGroup> groups = [] {
    std::vector<OverloadGroup> g;
    for (const OpEntry& op : all_ops()) {
      auto it = std::find_if(g.begin(), g.end(), [&](const OverloadGroup& x) { return x.name == op.schema.name; });
      if (it == g.end())
        g.push_back({op.schema.name, {&op}});
      else
        it->overloads.push_back(&op);
    }
    return g;
  }();
  return groups;
}

bool parse_args(const OverloadGroup& g, PyObject* const* args, Py_ssize_t nargs, PyObject* kwnames, Stack& stack,
                const OpEntry** chosen, bool method) {
  const int shift = method ? 1 : 0;  // a method's messages count positions without self
  std::string first_err;
  Cause cause;
  for (bool tensor_scalars : {false, true}) {  // Note [What an argument accepts]
    first_err.clear();
    for (const OpEntry* op : g.overloads) {
      std::string err;
      stack.clear();
      if (try_overload(*op, args, nargs, kwnames, shift, stack, tensor_scalars, cause, err)) {
        *chosen = op;
        return true;
      }
      if (first_err.empty()) first_err = err;
    }
  }
  stack.clear();
  if (g.overloads.size() == 1) {
    PyErr_SetString(PyExc_TypeError, first_err.c_str());
    cause.attach();
    return false;
  }
  std::string got = "(";
  for (Py_ssize_t k = shift; k < nargs; ++k) got += std::string(k > shift ? ", " : "") + type_name(args[k]);
  Py_ssize_t nkw = kwnames ? PyTuple_GET_SIZE(kwnames) : 0;
  for (Py_ssize_t k = 0; k < nkw; ++k)
    got += std::string(nargs + k > shift ? ", " : "") + utf8_text(PyTuple_GET_ITEM(kwnames, k)) + "=" +
           type_name(args[nargs + k]);
  std::string msg = g.name + "() received an invalid combination of arguments - got " + got + "), but expected one of:";
  for (const OpEntry* op : g.overloads) msg += "\n * " + signature(*op, shift);
  PyErr_SetString(PyExc_TypeError, msg.c_str());
  cause.attach();
  return false;
}

// True and numpy's bool (numpy.bool_, numpy.bool in numpy 2), which PyTorch reads as a bool too.
bool is_bool_like(PyObject* o) {
  if (PyBool_Check(o)) return true;
  const char* name = Py_TYPE(o)->tp_name;
  return std::strcmp(name, "numpy.bool_") == 0 || std::strcmp(name, "numpy.bool") == 0;
}

bool is_int_like(PyObject* o) {
  return !is_bool_like(o) && (PyLong_Check(o) || (PyIndex_Check(o) && !PyFloat_Check(o)));
}

// Python's numbers and numpy's scalars (np.int64(2), np.float32(2)), as
// PyTorch takes them; not arrays or tensors, which are sequences.
bool is_python_scalar(PyObject* o) {
  return PyBool_Check(o) || PyLong_Check(o) || PyFloat_Check(o) ||
         (!PySequence_Check(o) && (is_int_like(o) || is_float_like(o)));
}

double as_double(PyObject* o) {
  const double d = PyFloat_AsDouble(o);
  if (d == -1.0 && PyErr_Occurred()) throw ValueError("");  // set_python_error keeps Python's own error
  return d;
}

std::string utf8_text(PyObject* s) {
  Py_ssize_t n = 0;
  if (const char* p = PyUnicode_AsUTF8AndSize(s, &n)) return std::string(p, size_t(n));
  PyErr_Clear();  // a lone surrogate ("\udc80"): spell it out instead
  PyObject* b = PyUnicode_AsEncodedString(s, "utf-8", "backslashreplace");
  if (b == nullptr) {
    PyErr_Clear();
    return "<unprintable str>";
  }
  std::string out(PyBytes_AS_STRING(b), size_t(PyBytes_GET_SIZE(b)));
  Py_DECREF(b);
  return out;
}

Tensor scalar_to_tensor(PyObject* o) {
  ScalarType t = is_bool_like(o) ? ScalarType::Bool : is_int_like(o) ? ScalarType::Int64 : ScalarType::Float64;
  Tensor r = empty_tensor({}, t, Device{});
  if (t == ScalarType::Bool)
    *r.data<bool>() = PyObject_IsTrue(o) == 1;
  else if (t == ScalarType::Int64) {
    int64_t v = 0;
    DESCENT_CHECK(to_int(o, &v) == IntResult::Ok, Error,
                  "Overflow when unpacking long: ", "a Python int does not fit in int64");
    *r.data<int64_t>() = v;
  } else {
    *r.data<double>() = as_double(o);
  }
  r.impl()->wrapped_number = true;
  return r;
}

Tensor scalar_tensor(PyObject* number, ScalarType dt) {
  Scalar v;
  if (is_bool_like(number)) {
    v = Scalar(PyObject_IsTrue(number) == 1);
  } else if (is_int_like(number)) {
    int64_t i = 0;
    DESCENT_CHECK(to_int(number, &i) == IntResult::Ok, Error,
                  "Overflow when unpacking long: ", "a Python int does not fit in int64");
    v = Scalar(i);
  } else {
    v = Scalar(as_double(number));
  }
  Tensor t = empty_tensor({}, dt, Device{});
  visit_dtype(dt, [&]<typename T>() { *t.data<T>() = v.to<T>(); });
  return t;
}

}  // namespace descent::binding
