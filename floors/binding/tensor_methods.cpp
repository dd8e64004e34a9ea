// Tensor's methods and operators, generated from the op table: what
// PyTorch's python_variable_methods.cpp is to torch._C.TensorBase.
//
// [SECTION] One call from a method or an operator
// [SECTION] Methods
// [SECTION] Operators
// [SECTION] Init
//
// Notes, each beside what it explains:
//   Note [Tensor methods from the op table]  PyTorch's methods and operators, and descent's (below)
//   Note [Reflected operators]               __rsub__, __rtruediv__ and __rpow__ (Operators)
#include <algorithm>
#include <array>
#include <memory>
#include <optional>
#include <utility>

#include "floors/binding/binding.h"

namespace descent::binding {

namespace {

// [SECTION] One call from a method or an operator -------------------------------------

// Note [Tensor methods from the op table]
// ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
// In PyTorch, neither `x.add(y)` nor `x + y` runs any of torch's Python code.
// torch.Tensor's methods live on its C base class, torch._C.TensorBase, in a
// method table (python_variable_methods.cpp, written by torchgen from
// native_functions.yaml) whose entries are C functions such as THPVariable_add;
// each parses (self, *args, **kwargs) against the op's method signatures (the
// schemas without self) and calls the op. The operators are entries of that
// same table: "__add__" and "__radd__" are THPVariable_add wrapped in
// TypeError_to_NotImplemented_, "__iadd__" is THPVariable_add_, "__eq__" is
// THPVariable_eq, "__matmul__" is THPVariable_matmul. torch/_tensor.py adds
// only what is not an op (printing, backward, __len__, __array__, ...) and a
// few reflected operators (__rsub__, __rtruediv__, __rpow__).
//
// descent builds the same from its op table, at import rather than at build time:
// the methods (below, Methods) and the operators (Operators), each one parse
// and call of an op. Each opens the floor-2 span _C.add's function opens (named by the op's
// Python name), with the Python name it was reached by as an argument:
// `x + 1` is traced `[2 binding] add overload=aten::add.Tensor
// python=Tensor.__add__`, the place where the call crosses into C++, with
// no floor-1 span of descent's in between, as in PyTorch.

// A numpy array (not a tensor): what numpy's __array_interface__ marks.
bool is_array_operand(PyObject* o) {
  return !is_tensor(o) && PyObject_HasAttrString(reinterpret_cast<PyObject*>(Py_TYPE(o)), "__array_interface__");
}

// Parses and runs one call inside the caller's floor-2 span, which gets the
// overload chosen and the Python name the call came by.
PyObject* parse_and_call(const OverloadGroup& g, trace::ScopedSpan& span, const char* python_name,
                         PyObject* const* args, Py_ssize_t nargs, PyObject* kwnames) {
  Stack stack;
  const OpEntry* op = nullptr;
  if (!parse_args(g, args, nargs, kwnames, stack, &op, /*method=*/true)) return nullptr;
  if (span.active()) span.arg("overload", op->name), span.arg("python", python_name);
  return call_parsed(*op, stack, args, nargs, kwnames);
}

// [SECTION] Methods -------------------------------------------------------------------------

// Methods. Every overload group whose first argument is `Tensor self`
// (add, sum, view, add_, ...) is a method of _C.TensorBase. The method
// puts self in front of its arguments and parses them with parse_args
// against the very overloads _C.add has, so `x.add(y, alpha=2)` and
// `descent.add(x, y, alpha=2)` are one call; its errors count positions
// without self, as PyTorch's method form does ("add(): argument 'other'
// (position 1) must be Tensor, not str"). The ops of torch._C._nn
// (mse_loss) are no methods, as in PyTorch. A C method gets no closure, so
// group I's method is the trampoline method<I>, instantiated for every
// index the table can have: where torchgen writes THPVariable_add,
// the compiler writes method<0>. Names with a leading underscore
// (_to_copy, _unsafe_view) stay functions only, as aten's `variants:
// function` keeps them.
//
// x.view(2, 3), x.permute(1, 0) and x.expand(3, 4) need nothing of their own:
// parse_args gathers loose ints into a trailing int[] as it does for ones(2, 3).
//
// Two methods read their arguments unlike any one schema, as descent's
// Tensor always has (Form below):
//   - x.sum(dim=None, keepdim=False, *, dtype=None), and mean: read against
//     sum.dim_IntList with dim defaulting to None; a call that asks for
//     neither a dim nor keepdim runs aten::sum (SumBackward0), any other
//     sum.dim_IntList (SumBackward1). A call neither accepts gets the
//     group's own error, as descent.sum gives it. (PyTorch's parser gives
//     x.sum(None) to sum.dim_IntList.)
//   - x.to(device, ...): a str or device in dtype's place is the device (aten's
//     to.device overload, which descent's one to.dtype_layout row stands in for);
//     the keyword non_blocking, which the row lacks, is read here: with it, a
//     copy from pinned memory goes through copy_ and may be left queued
//     (to_non_blocking).

// How a method reads its arguments (Note [Tensor methods from the op table]).
enum class Form : uint8_t { Plain, Reduction, To };

struct Method {
  const OverloadGroup* group = nullptr;  // nullptr: group I is no method
  std::string python_name;               // "Tensor.add": the span's python= argument
  Form form = Form::Plain;
  // Form::Reduction: the dim overload with `dim` defaulting to None, and a group of it alone.
  std::unique_ptr<OpEntry> reading;
  OverloadGroup reading_group;
  OverloadGroup self_group;  // the group's overloads that take `Tensor self`, where some do not (pow.Scalar)
};
std::vector<Method>& methods() {  // by overload group index
  static std::vector<Method> m;
  return m;
}

// x.sum(...) and x.mean(...): Form::Reduction.
bool parse_reduction(const Method& m, PyObject* const* args, Py_ssize_t nargs, PyObject* kwnames, Stack& stack,
                     const OpEntry** op) {
  if (!parse_args(m.reading_group, args, nargs, kwnames, stack, op, true)) {
    if (!PyErr_ExceptionMatches(PyExc_TypeError)) return false;
    PyErr_Clear();
    return parse_args(*m.group, args, nargs, kwnames, stack, op, true);  // the group's own error
  }
  const auto& overloads = m.group->overloads;  // [aten::sum, aten::sum.dim_IntList]
  *op = overloads[1];
  if (stack[1].is_none() && !stack[2].to_bool()) {  // x.sum(), x.sum(dtype=...): aten::sum
    IValue self = std::move(stack[0]), dtype = std::move(stack[3]);
    stack.clear();
    stack.push(std::move(self));
    stack.push(std::move(dtype));
    *op = overloads[0];
  }
  return true;
}

// Stack room for (self, positional..., keyword values...).
constexpr Py_ssize_t kMaxMethodArgs = 2 * kMaxStack + 1;

// x.to(device, non_blocking=True): aten's to takes non_blocking, descent's
// one to row does not (floors/dispatch/ops.h), so the method takes it off the
// keywords here. `values` are the keyword values, in kwnames' order; on
// return they and `kwnames` (owned by `owned` when changed) lack it.
// Returns 0 or 1, -1 when not given, -2 with a TypeError set.
int take_non_blocking(PyObject** values, PyObject* kwnames, PyRef& owned) {
  const Py_ssize_t nkw = PyTuple_GET_SIZE(kwnames);
  Py_ssize_t k = 0;
  while (k < nkw && utf8_text(PyTuple_GET_ITEM(kwnames, k)) != "non_blocking") ++k;
  if (k == nkw) return -1;
  PyObject* v = values[k];
  if (!PyBool_Check(v)) {
    PyErr_Format(PyExc_TypeError, "to(): argument 'non_blocking' must be bool, not %s", Py_TYPE(v)->tp_name);
    return -2;
  }
  owned.p = PyTuple_New(nkw - 1);
  if (!owned.p) return -2;
  for (Py_ssize_t i = 0, j = 0; i < nkw; ++i) {
    if (i == k) continue;
    PyObject* name = PyTuple_GET_ITEM(kwnames, i);
    Py_INCREF(name);
    PyTuple_SET_ITEM(owned.p, j, name);
    values[j++] = values[i];
  }
  return v == Py_True;
}

// x.to(device, non_blocking=True) from pinned memory: as aten's _to_copy,
// an empty tensor there and copy_(x, non_blocking=True), so that the copy may
// still be queued when `to` returns (Note [Copies between devices]); the to
// row's own copies wait. Returns nullptr when this is not such a call.
PyObject* to_non_blocking(Stack& stack) {
  const Tensor& x = stack[0].to_tensor();
  if (!x.storage() || !x.storage()->pinned || stack[2].is_none()) return nullptr;
  const Device d = stack[2].to_device();
  if (d.type == DeviceType::CPU) return nullptr;
  const ScalarType dt = stack[1].is_none() ? x.dtype() : stack[1].to_scalar_type();
  Tensor out;
  {
    GilRelease release;
    out = empty_tensor(x.sizes(), dt, d);
    call(Op::copy_, out, x, true);
  }
  return wrap(std::move(out));
}

PyObject* method_call(size_t index, PyObject* self, PyObject* const* args, Py_ssize_t nargs, PyObject* kwnames) {
  const Method& m = methods()[index];
  DESCENT_PY_TRY
  trace::ScopedSpan span(trace::Floor::Binding, m.group->overloads[0]->schema.name.c_str());
  nargs = PyVectorcall_NARGS(nargs);
  const Py_ssize_t nkw = kwnames ? PyTuple_GET_SIZE(kwnames) : 0;
  if (nargs + nkw + 2 > kMaxMethodArgs) {
    PyErr_Format(PyExc_TypeError, "%s() got too many arguments", m.group->name.c_str());
    return nullptr;
  }
  // (self, positional..., keyword values...), as _C.add(self, ...) receives them.
  PyObject* full[kMaxMethodArgs];
  full[0] = self;
  std::copy(args, args + nargs + nkw, full + 1);
  Py_ssize_t n = nargs + 1;
  PyRef own_kwnames;
  int non_blocking = -1;  // x.to(..., non_blocking=): -1 when not given
  if (m.form == Form::To && nkw > 0) {
    non_blocking = take_non_blocking(full + n, kwnames, own_kwnames);
    if (non_blocking == -2) return nullptr;
    if (own_kwnames.p) kwnames = own_kwnames.p;
  }
  if (m.form == Form::To && n >= 2 && (PyUnicode_Check(full[1]) || Py_TYPE(full[1]) == &g_device_type)) {
    if (n >= 3) {
      std::swap(full[1], full[2]);  // x.to("cpu", float64): to(self, float64, "cpu")
    } else {                        // x.to("cpu", dtype=...): to(self, dtype=..., device="cpu")
      const Py_ssize_t nk = kwnames ? PyTuple_GET_SIZE(kwnames) : 0;
      PyObject* device = full[1];
      std::copy(full + 2, full + 2 + nk, full + 1);
      full[1 + nk] = device;
      n = 1;
      PyObject* names = PyTuple_New(nk + 1);
      if (!names) return nullptr;
      for (Py_ssize_t k = 0; k < nk; ++k) {
        Py_INCREF(PyTuple_GET_ITEM(kwnames, k));
        PyTuple_SET_ITEM(names, k, PyTuple_GET_ITEM(kwnames, k));
      }
      PyObject* name = PyUnicode_FromString("device");
      if (!name) {
        Py_DECREF(names);
        return nullptr;
      }
      PyTuple_SET_ITEM(names, nk, name);
      own_kwnames.reset(kwnames = names);
    }
  }
  Stack stack;
  const OpEntry* op = nullptr;
  const bool parsed = m.form == Form::Reduction ? parse_reduction(m, full, n, kwnames, stack, &op)
                                                : parse_args(*m.group, full, n, kwnames, stack, &op, true);
  if (!parsed) return nullptr;
  if (span.active()) span.arg("overload", op->name), span.arg("python", m.python_name.c_str());
  if (m.form == Form::To && non_blocking == 1)
    if (PyObject* r = to_non_blocking(stack)) return r;
  return call_parsed(*op, stack, full, n, kwnames);
  DESCENT_PY_CATCH(nullptr)
}

using FastMethod = PyObject* (*)(PyObject*, PyObject* const*, Py_ssize_t, PyObject*);

template <size_t I>
PyObject* method(PyObject* self, PyObject* const* args, Py_ssize_t nargs, PyObject* kwnames) {
  return method_call(I, self, args, nargs, kwnames);
}
template <size_t... I>
constexpr std::array<FastMethod, sizeof...(I)> make_trampolines(std::index_sequence<I...>) {
  return {&method<I>...};
}
// One per overload group the table can have (at most one per op).
constexpr auto kTrampolines = make_trampolines(std::make_index_sequence<kNumOps>());

// [SECTION] Operators ----------------------------------------------------------------------

// Operators. The type's number slots (nb_add, nb_subtract, ...,
// nb_matrix_multiply, nb_negative, nb_absolute and the in-place ones)
// and tp_richcompare, each one parse and call of an op: CPython offers
// them to Python as TensorBase.__add__, __radd__, .... CPython calls
// nb_add for both `x + 1` and `1 + x`, operands as written; when the
// tensor is on the right, __radd__ and __rmul__ are add(self, number)
// as PyTorch's, and __rsub__, __rtruediv__ and __rpow__ run what
// torch/_tensor.py's do in Python: rsub, reciprocal then mul, and
// pow.Scalar (Note [Reflected operators]). As in
// PyTorch, an operand the op does not take (a TypeError from parsing)
// makes the operator return NotImplemented, so `t + None` raises
// Python's own "unsupported operand type(s)" and `t == None` is False;
// `x += y` returns x itself. (PyTorch's operators being methods named
// __add__, torch.Tensor's nb_add is CPython's slot_nb_add, which looks
// __add__ up on each call; descent fills the slot with its C function.)

// The groups the operators call, found by name at init.
struct OperatorGroups {
  const OverloadGroup *add, *sub, *mul, *div, *pow, *matmul, *neg, *abs;
  const OverloadGroup *eq, *ne, *lt, *le, *gt, *ge;
  const OverloadGroup *add_, *sub_, *mul_, *div_;
  const OverloadGroup *rsub, *reciprocal;  // the reflected operators' (Note [Reflected operators])
  const OverloadGroup* floor_divide;
} g_ops;

// Which operand an operator first makes a tensor.
enum class Lift : uint8_t {
  None,
  Left,        // 2 - t, array - t: a number becomes a 0-d wrapped number, an array a tensor; else a TypeError
  LeftArray,   // array @ t
  RightArray,  // t @ array
};

// A new tensor from the operand `o`, as Lift says; a TypeError when it is neither a number nor an array.
PyObject* lifted(PyObject* o, bool numbers) {
  if (is_array_operand(o)) return wrap(tensor_from_data(o, std::nullopt));
  DESCENT_CHECK(numbers && is_python_scalar(o), TypeError, "expected a Python number, got ", Py_TYPE(o)->tp_name);
  return wrap(scalar_to_tensor(o));
}

// One operator: the group's op on (a, b), or on (a) when b is null.
PyObject* operator_call(const OverloadGroup* g, const char* python_name, PyObject* a, PyObject* b,
                        Lift lift = Lift::None) {
  DESCENT_PY_TRY
  trace::ScopedSpan span(trace::Floor::Binding, g->overloads[0]->schema.name.c_str());
  PyObject* args[2] = {a, b};
  PyRef made;
  if (lift == Lift::Left || lift == Lift::LeftArray) {
    made.p = lifted(a, lift == Lift::Left);
    if (!made.p) return nullptr;
    args[0] = made.p;
  } else if (lift == Lift::RightArray) {
    made.p = lifted(b, false);
    if (!made.p) return nullptr;
    args[1] = made.p;
  }
  return parse_and_call(*g, span, python_name, args, b ? 2 : 1, nullptr);
  DESCENT_PY_CATCH(nullptr)
}

// An operand the op does not take: NotImplemented, as PyTorch's
// TypeError_to_NotImplemented_ answers, so Python tries the other operand
// and then raises its own TypeError naming both types.
PyObject* or_not_implemented(PyObject* result) {
  if (result == nullptr && PyErr_ExceptionMatches(PyExc_TypeError)) {
    PyErr_Clear();
    Py_RETURN_NOTIMPLEMENTED;
  }
  return result;
}

// `a op b` where the op is symmetric in what it takes: b + t is add(t, b).
PyObject* commutative(const OverloadGroup* g, const char* name, const char* rname, PyObject* a, PyObject* b) {
  return is_tensor(a) ? or_not_implemented(operator_call(g, name, a, b))
                      : or_not_implemented(operator_call(g, rname, b, a));
}
// `a op b` where a number on the left is the op's left operand: 2 - t is sub(wrapped 2, t).
PyObject* reflected(const OverloadGroup* g, const char* name, const char* rname, PyObject* a, PyObject* b) {
  return is_tensor(a) ? or_not_implemented(operator_call(g, name, a, b))
                      : or_not_implemented(operator_call(g, rname, a, b, Lift::Left));
}

PyObject* nb_add(PyObject* a, PyObject* b) { return commutative(g_ops.add, "Tensor.__add__", "Tensor.__radd__", a, b); }
PyObject* nb_mul(PyObject* a, PyObject* b) { return commutative(g_ops.mul, "Tensor.__mul__", "Tensor.__rmul__", a, b); }
// Note [Reflected operators]
// ~~~~~~~~~~~~~~~~~~~~~~~~~~
// A number on the left of -, / and ** runs what torch/_tensor.py's
// reflected operators run, so that the trace and the graph are PyTorch's:
//   - 2 - t is rsub(t, 2): aten::rsub.Scalar, whose kernel calls aten::sub
//     (RsubBackward1, not SubBackward0);
//   - 2 / t is t.reciprocal() * 2: aten::reciprocal, then aten::mul
//     (MulBackward0 over ReciprocalBackward0, not DivBackward0), so the
//     result is 2 times the rounded 1/t, which may differ from 2/t in the last bit;
//   - 2 ** t is pow(2, t): aten::pow.Scalar (PowBackward2, not PowBackward1).
// Both spans of 2 / t carry python=Tensor.__rtruediv__. A numpy array on the
// left is made a tensor and takes sub, div or pow.Tensor_Tensor, as before
// (descent's rsub has only the Scalar overload).
PyObject* nb_sub(PyObject* a, PyObject* b) {
  if (is_tensor(a) || is_array_operand(a)) return reflected(g_ops.sub, "Tensor.__sub__", "Tensor.__rsub__", a, b);
  return or_not_implemented(operator_call(g_ops.rsub, "Tensor.__rsub__", b, a));
}
PyObject* nb_div(PyObject* a, PyObject* b) {
  if (is_tensor(a) || is_array_operand(a))
    return reflected(g_ops.div, "Tensor.__truediv__", "Tensor.__rtruediv__", a, b);
  PyRef r;
  r.p = operator_call(g_ops.reciprocal, "Tensor.__rtruediv__", b, nullptr);
  if (!r.p) return or_not_implemented(nullptr);
  return or_not_implemented(operator_call(g_ops.mul, "Tensor.__rtruediv__", r.p, a));
}
PyObject* nb_pow(PyObject* a, PyObject* b, PyObject* modulo) {
  if (modulo != Py_None) Py_RETURN_NOTIMPLEMENTED;  // pow(t, 2, 5)
  if (is_tensor(a) || is_array_operand(a)) return reflected(g_ops.pow, "Tensor.__pow__", "Tensor.__rpow__", a, b);
  return or_not_implemented(operator_call(g_ops.pow, "Tensor.__rpow__", a, b));  // pow.Scalar(2, t)
}
// matmul takes no numbers (ones(2) @ 2 is a TypeError, as in PyTorch); a
// numpy array on either side is read as tensor() reads it.
// t // 2 is floor_divide(t, 2); 7 // t, as torch/_tensor.py's __rfloordiv__,
// floor_divide(wrapped 7, t). x //= y is floor_divide_ in aten; descent has
// no floor_divide_, so CPython's fallback makes x // y a new tensor.
PyObject* nb_floordiv(PyObject* a, PyObject* b) {
  return reflected(g_ops.floor_divide, "Tensor.__floordiv__", "Tensor.__rfloordiv__", a, b);
}
PyObject* nb_matmul(PyObject* a, PyObject* b) {
  if (is_tensor(a))
    return or_not_implemented(
        operator_call(g_ops.matmul, "Tensor.__matmul__", a, b, is_array_operand(b) ? Lift::RightArray : Lift::None));
  if (!is_array_operand(a)) Py_RETURN_NOTIMPLEMENTED;
  return operator_call(g_ops.matmul, "Tensor.__rmatmul__", a, b, Lift::LeftArray);
}
PyObject* nb_neg(PyObject* a) { return operator_call(g_ops.neg, "Tensor.__neg__", a, nullptr); }
PyObject* nb_abs(PyObject* a) { return operator_call(g_ops.abs, "Tensor.__abs__", a, nullptr); }

// In place, as in PyTorch: the op's kernel writes into this tensor's own
// memory, so every view of it sees the change, and `x += 1` leaves x the same
// object (call_parsed returns the argument written into). The checks
// (overlap, shape, dtype) are the kernel's: Note [In-place ops].
PyObject* nb_iadd(PyObject* a, PyObject* b) {
  return or_not_implemented(operator_call(g_ops.add_, "Tensor.__iadd__", a, b));
}
PyObject* nb_isub(PyObject* a, PyObject* b) {
  return or_not_implemented(operator_call(g_ops.sub_, "Tensor.__isub__", a, b));
}
PyObject* nb_imul(PyObject* a, PyObject* b) {
  return or_not_implemented(operator_call(g_ops.mul_, "Tensor.__imul__", a, b));
}
PyObject* nb_idiv(PyObject* a, PyObject* b) {
  return or_not_implemented(operator_call(g_ops.div_, "Tensor.__itruediv__", a, b));
}

// a < b: CPython calls this with the tensor first (1 < t arrives as t > 1).
PyObject* tensor_richcompare(PyObject* a, PyObject* b, int op) {
  switch (op) {
    case Py_EQ:
      return or_not_implemented(operator_call(g_ops.eq, "Tensor.__eq__", a, b));
    case Py_NE:
      return or_not_implemented(operator_call(g_ops.ne, "Tensor.__ne__", a, b));
    case Py_LT:
      return or_not_implemented(operator_call(g_ops.lt, "Tensor.__lt__", a, b));
    case Py_LE:
      return or_not_implemented(operator_call(g_ops.le, "Tensor.__le__", a, b));
    case Py_GT:
      return or_not_implemented(operator_call(g_ops.gt, "Tensor.__gt__", a, b));
    case Py_GE:
      return or_not_implemented(operator_call(g_ops.ge, "Tensor.__ge__", a, b));
  }
  Py_RETURN_NOTIMPLEMENTED;
}

// Note [x += y falls back to no sequence]
// ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
// A Python subclass (descent.Tensor) gets its slots from the base's
// __iadd__, and CPython fills both slots that __iadd__ names with nb_iadd:
// nb_inplace_add and the sequence's sq_inplace_concat. When every number
// slot has answered NotImplemented (`x += None`), PyNumber_InPlaceAdd then
// tries sq_inplace_concat, nb_iadd again, and takes its NotImplemented as
// the result: x would become NotImplemented. A tensor is no sequence to
// concatenate, so each subclass drops that slot as it is made (PyTorch, whose
// __iadd__ is an entry of the method table rather than a slot, never gets it).
PyObject* init_subclass(PyObject* cls, PyObject*) {
  PySequenceMethods* seq = reinterpret_cast<PyTypeObject*>(cls)->tp_as_sequence;
  if (seq && seq->sq_inplace_concat == nb_iadd) seq->sq_inplace_concat = nullptr;
  Py_RETURN_NONE;
}

PyNumberMethods g_tensor_as_number = [] {
  PyNumberMethods n{};
  n.nb_add = nb_add;
  n.nb_subtract = nb_sub;
  n.nb_multiply = nb_mul;
  n.nb_true_divide = nb_div;
  n.nb_floor_divide = nb_floordiv;
  n.nb_power = nb_pow;
  n.nb_matrix_multiply = nb_matmul;
  n.nb_negative = nb_neg;
  n.nb_absolute = nb_abs;
  n.nb_inplace_add = nb_iadd;
  n.nb_inplace_subtract = nb_isub;
  n.nb_inplace_multiply = nb_imul;
  n.nb_inplace_true_divide = nb_idiv;
  return n;
}();

// [SECTION] Init -------------------------------------------------------------------------------

std::vector<PyMethodDef>& method_defs() {
  static std::vector<PyMethodDef> defs;
  return defs;
}

const OverloadGroup* find_group(const char* name) {
  for (const OverloadGroup& g : overload_groups())
    if (g.name == name) return &g;
  throw Error(str("Tensor's operators: the op table has no '", name, "'"));
}

// A method where the first argument is `Tensor self`, as aten's `variants:
// method`: not the private ops (_to_copy) and not the ops of torch._C._nn
// (there is no Tensor.mse_loss).
// rsub is aten's `variants: function` too: torch.rsub, no Tensor.rsub.
bool self_first(const OpEntry& op) {
  const auto& args = op.schema.args;
  return !args.empty() && args[0].type == ArgType::Tensor && args[0].name == "self";
}
bool takes_self(const OverloadGroup& g) {
  return self_first(*g.overloads[0]) && g.name[0] != '_' && g.name != "rsub" &&
         g.overloads[0]->python_module == PythonModule::Torch;
}

bool has_method(const PyMethodDef* defs, const std::string& name) {
  for (; defs->ml_name; ++defs)
    if (name == defs->ml_name) return true;
  return false;
}

}  // namespace

bool init_tensor_methods(PyTypeObject* type, PyMethodDef* base_methods) {
  try {
    const auto& groups = overload_groups();
    DESCENT_CHECK(groups.size() <= kTrampolines.size(), Error, "more overload groups than ops");
    g_ops = {find_group("add"),         find_group("sub"),    find_group("mul"),  find_group("div"),
             find_group("pow"),         find_group("matmul"), find_group("neg"),  find_group("abs"),
             find_group("eq"),          find_group("ne"),     find_group("lt"),   find_group("le"),
             find_group("gt"),          find_group("ge"),     find_group("add_"), find_group("sub_"),
             find_group("mul_"),        find_group("div_"),   find_group("rsub"), find_group("reciprocal"),
             find_group("floor_divide")};
    auto& ms = methods();
    ms.resize(groups.size());
    auto& defs = method_defs();
    for (const PyMethodDef* d = base_methods; d->ml_name; ++d) defs.push_back(*d);
    for (size_t i = 0; i < groups.size(); ++i) {
      const OverloadGroup& g = groups[i];
      if (!takes_self(g) || has_method(base_methods, g.name)) continue;  // TensorBase's own methods come first
      Method& m = ms[i];
      m.group = &g;
      m.python_name = "Tensor." + g.name;
      // x.pow(...) parses pow.Tensor_Scalar and pow.Tensor_Tensor, not pow.Scalar (2 ** x).
      if (!std::all_of(g.overloads.begin(), g.overloads.end(), [](const OpEntry* o) { return self_first(*o); })) {
        m.self_group.name = g.name;
        for (const OpEntry* o : g.overloads)
          if (self_first(*o)) m.self_group.overloads.push_back(o);
        m.group = &m.self_group;
      }
      if (g.name == "to") m.form = Form::To;
      if ((g.name == "sum" || g.name == "mean") && g.overloads.size() == 2) {
        m.form = Form::Reduction;
        m.reading = std::make_unique<OpEntry>(*g.overloads[1]);
        SchemaArg& dim = m.reading->schema.args[1];
        DESCENT_CHECK(dim.name == "dim" && dim.optional, Error, g.name, ": expected the dim overload second");
        dim.has_default = true;
        dim.default_value = IValue();
        m.reading_group = {g.name, {m.reading.get()}};
      }
      PyMethodDef d{};
      d.ml_name = g.overloads[0]->schema.name.c_str();  // lives as long as the op table
      d.ml_meth = reinterpret_cast<PyCFunction>(reinterpret_cast<void (*)()>(kTrampolines[i]));
      d.ml_flags = METH_FASTCALL | METH_KEYWORDS;
      d.ml_doc = g.overloads[0]->schema.text.c_str();
      defs.push_back(d);
    }
    defs.push_back({"__init_subclass__", init_subclass, METH_CLASS | METH_NOARGS,
                    "drops the sequence slot CPython fills from __iadd__ (Note [x += y falls back to no sequence])"});
    defs.push_back({nullptr, nullptr, 0, nullptr});
  } catch (...) {
    set_python_error();
    return false;
  }
  type->tp_methods = method_defs().data();
  type->tp_as_number = &g_tensor_as_number;
  type->tp_richcompare = tensor_richcompare;
  type->tp_hash =
      PyBaseObject_Type.tp_hash;  // by identity, as torch.Tensor's (a type with tp_richcompare inherits none)
  return true;
}

}  // namespace descent::binding
