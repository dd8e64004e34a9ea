// Floor 2: the dispatcher seen from Python, as torch._C shows it: the
// DispatchKey enum, DispatchKeySet objects (a tensor's keys, the thread's
// included and excluded keys), and the functions a lesson on the dispatcher
// quotes: _dispatch_dump (what an operator registered, key by key),
// _dispatch_dump_table (what a call runs at each key), _dispatch_has_kernel,
// _dispatch_has_kernel_for_dispatch_key, _dispatch_key_name and friends.
//
// [SECTION] DispatchKey
// [SECTION] DispatchKeySet
// [SECTION] The tensor's and the thread's key sets
// [SECTION] An operator's registrations
//
// Note [torch._C's dispatcher objects in descent]
// ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
// torch._C.DispatchKey and DispatchKeySet are pybind11 objects over c10's
// enum and bitset; descent's are over its own (floors/core/dispatch_key.h),
// a subset of c10's keys with c10's names and order, so what differs is
// what the subset cannot hold:
// - DispatchKey has descent's 15 keys (CPU, CUDA, Sim, BackendSelect,
//   Python, ADInplaceOrView, the three Autograd and three Autocast keys, and
//   the aliases Autograd, CompositeExplicitAutograd, CompositeImplicitAutograd),
//   numbered descent's way: DispatchKey.CPU.value is 1 where c10's is 49. It
//   is a Python enum.Enum, printed as torch's (<DispatchKey.CPU: 1>,
//   "DispatchKey.CPU").
// - DispatchKeySet has torch's methods (has, add, remove,
//   highestPriorityTypeId, raw_repr, from_raw_repr, |, &, -, ==) and, as
//   torch's, no hash and no comparison with anything but a DispatchKeySet
//   (TypeError); raw_repr() is descent's bits, not c10's.
// - _dispatch_dump lists the keys an operator registered itself, the kernels
//   registered through an alias key under the alias ("Autograd[alias]"), as
//   c10's OperatorEntry::dumpState does; where c10 prints the kernel's C++
//   signature inferred from its type, descent prints the schema's types in
//   that form for a kernel with a typed entry ("(Tensor _0, Tensor _1, Scalar
//   _2) -> Tensor _0"), and "(none)" for a boxed one.
// - _dispatch_dump_table prints descent's twelve runtime keys, not c10's
//   hundred-odd, and no "Undefined" line.
// - A kernel a Python descent.library put in place of a built-in one shows
//   the built-in's registration site: the site of a swap is not kept.
#include <string>

#include "floors/binding/binding.h"
#include "floors/dispatch/library.h"
#include "floors/dispatch/registrations.h"

namespace descent::binding {

namespace {

// [SECTION] DispatchKey ---------------------------------------------------------

PyObject* g_key_enum = nullptr;  // descent._C.DispatchKey, an enum.Enum made at import

// A key by its torch name ("CPU", "Autograd"); torch's RuntimeError for any other name.
DispatchKey key_named(const std::string& name) {
  for (int k = 0; k < kNumDispatchKeys; ++k)
    if (name == dispatch_key_name(DispatchKey(k))) return DispatchKey(k);
  throw Error("could not parse dispatch key: " + name);
}

// A DispatchKey member or a key's name, as torch's functions take either.
DispatchKey key_of(PyObject* o) {
  if (PyUnicode_Check(o)) return key_named(utf8_text(o));
  const int is_key = PyObject_IsInstance(o, g_key_enum);
  if (is_key < 0) throw PythonError();
  DESCENT_CHECK(is_key, TypeError, "expected a descent._C.DispatchKey or its name, not ", Py_TYPE(o)->tp_name);
  PyRef value{PyObject_GetAttrString(o, "value")};
  if (!value.p) throw PythonError();
  return DispatchKey(PyLong_AsLong(value.p));
}

PyObject* key_object(DispatchKey k) { return PyObject_CallFunction(g_key_enum, "i", int(k)); }

bool make_key_enum(PyObject* module) {
  PyRef enum_module{PyImport_ImportModule("enum")};
  PyRef members{PyList_New(0)};
  if (!enum_module.p || !members.p) return false;
  for (int k = 0; k < kNumDispatchKeys; ++k) {  // Undefined, 0, as in c10, then descent's keys
    PyRef member{Py_BuildValue("(si)", dispatch_key_name(DispatchKey(k)), k)};
    if (!member.p || PyList_Append(members.p, member.p) < 0) return false;
  }
  PyRef enum_type{PyObject_GetAttrString(enum_module.p, "Enum")};
  PyRef args{Py_BuildValue("(sO)", "DispatchKey", members.p)};
  PyRef kwargs{Py_BuildValue("{s:s}", "module", "descent._C")};
  if (!enum_type.p || !args.p || !kwargs.p) return false;
  g_key_enum = PyObject_Call(enum_type.p, args.p, kwargs.p);
  if (!g_key_enum) return false;
  Py_INCREF(g_key_enum);
  return PyModule_AddObject(module, "DispatchKey", g_key_enum) == 0;
}

// [SECTION] DispatchKeySet ------------------------------------------------------

struct KeySetObject {
  PyObject_HEAD uint32_t repr;
};
extern PyTypeObject g_key_set_type;

PyObject* key_set_object(DispatchKeySet ks) {
  KeySetObject* o = PyObject_New(KeySetObject, &g_key_set_type);
  if (o) o->repr = ks.repr();
  return reinterpret_cast<PyObject*>(o);
}
DispatchKeySet key_set_of(PyObject* o) { return DispatchKeySet::from_repr(reinterpret_cast<KeySetObject*>(o)->repr); }

// DispatchKeySet(key): the set of one runtime key; an alias key makes the
// empty set, as c10's constructor does.
PyObject* key_set_new(PyTypeObject*, PyObject* args, PyObject* kwargs) {
  PyObject* key = nullptr;
  if ((kwargs && PyDict_Size(kwargs) > 0) || !PyArg_ParseTuple(args, "O:DispatchKeySet", &key)) {
    PyErr_Clear();
    return PyErr_Format(PyExc_TypeError,
                        "__init__(): incompatible constructor arguments. The following argument types are "
                        "supported:\n    1. descent._C.DispatchKeySet(arg0: descent._C.DispatchKey)");
  }
  DESCENT_PY_TRY
  const DispatchKey k = key_of(key);
  return key_set_object(is_alias(k) ? DispatchKeySet() : DispatchKeySet(k));
  DESCENT_PY_CATCH(nullptr)
}

PyObject* key_set_repr(PyObject* self) {
  return PyUnicode_FromString(("DispatchKeySet(" + key_set_of(self).str() + ")").c_str());
}

// has(key): whether the set holds the runtime key, or any of an alias key's (c10's has_any of the alias's set).
PyObject* key_set_has(PyObject* self, PyObject* key) {
  DESCENT_PY_TRY
  const DispatchKey k = key_of(key);
  const DispatchKeySet ks = key_set_of(self);
  if (!is_alias(k)) return PyBool_FromLong(ks.has(k));
  // c10's has_any of the alias's functionalities: inference mode's exclude set, the Autograd bit alone,
  // has Autograd and not AutogradCPU, as torch's.
  const DispatchKeySet backends = DispatchKeySet::backend(BackendComponent::CPU) |
                                  DispatchKeySet::backend(BackendComponent::CUDA) |
                                  DispatchKeySet::backend(BackendComponent::Sim);
  return PyBool_FromLong(((ks & alias_runtime_keys(k)).repr() & ~backends.repr()) != 0);
  DESCENT_PY_CATCH(nullptr)
}
PyObject* key_set_add(PyObject* self, PyObject* key) {
  DESCENT_PY_TRY
  return key_set_object(key_set_of(self).add(key_of(key)));
  DESCENT_PY_CATCH(nullptr)
}
// remove(key): clears the key's functionality and keeps every backend bit (Note [A key set is
// functionalities times backends]): {CPU}.remove(AutogradCPU) is still {CPU}, as in c10.
PyObject* key_set_remove(PyObject* self, PyObject* key) {
  DESCENT_PY_TRY
  return key_set_object(key_set_of(self).remove(key_of(key)));
  DESCENT_PY_CATCH(nullptr)
}
PyObject* key_set_highest(PyObject* self, PyObject*) { return key_object(key_set_of(self).highest()); }
PyObject* key_set_raw_repr(PyObject* self, PyObject*) { return PyLong_FromUnsignedLong(key_set_of(self).repr()); }
PyObject* key_set_from_raw_repr(PyObject*, PyObject* raw) {
  const unsigned long r = PyLong_AsUnsignedLong(raw);
  if (PyErr_Occurred()) return nullptr;
  return key_set_object(DispatchKeySet::from_repr(uint32_t(r)));
}

PyObject* key_set_binary(PyObject* a, PyObject* b, char op) {
  if (!PyObject_TypeCheck(a, &g_key_set_type) || !PyObject_TypeCheck(b, &g_key_set_type)) Py_RETURN_NOTIMPLEMENTED;
  const DispatchKeySet x = key_set_of(a), y = key_set_of(b);
  return key_set_object(op == '|' ? (x | y) : op == '&' ? (x & y) : (x - y));
}
PyObject* key_set_or(PyObject* a, PyObject* b) { return key_set_binary(a, b, '|'); }
PyObject* key_set_and(PyObject* a, PyObject* b) { return key_set_binary(a, b, '&'); }
PyObject* key_set_sub(PyObject* a, PyObject* b) { return key_set_binary(a, b, '-'); }

// == and != with another DispatchKeySet only: torch's pybind11 __eq__ raises TypeError for a str.
PyObject* key_set_compare(PyObject* self, PyObject* other, int op) {
  if (op != Py_EQ && op != Py_NE) Py_RETURN_NOTIMPLEMENTED;
  if (!PyObject_TypeCheck(other, &g_key_set_type))
    return PyErr_Format(PyExc_TypeError,
                        "__%s__(): incompatible function arguments. The following argument types are supported:\n"
                        "    1. (self: descent._C.DispatchKeySet, arg0: descent._C.DispatchKeySet) -> bool\n\n"
                        "Invoked with: %R, %R",
                        op == Py_EQ ? "eq" : "ne", self, other);
  return PyBool_FromLong((key_set_of(self) == key_set_of(other)) == (op == Py_EQ));
}

PyMethodDef key_set_methods[] = {
    {"has", key_set_has, METH_O, "whether the set holds the key (any of an alias key's)"},
    {"add", key_set_add, METH_O, "the set with the key added"},
    {"remove", key_set_remove, METH_O, "the set with the key's functionality taken out"},
    {"highestPriorityTypeId", key_set_highest, METH_NOARGS, "the key a call with this set runs first"},
    {"raw_repr", key_set_raw_repr, METH_NOARGS, "the set's bits (descent's layout)"},
    {"from_raw_repr", key_set_from_raw_repr, METH_O | METH_STATIC, "the set of raw_repr() bits"},
    {nullptr, nullptr, 0, nullptr},
};
PyNumberMethods key_set_number = [] {
  PyNumberMethods n{};
  n.nb_or = key_set_or;
  n.nb_and = key_set_and;
  n.nb_subtract = key_set_sub;
  return n;
}();

PyTypeObject g_key_set_type = [] {
  PyTypeObject t{PyVarObject_HEAD_INIT(nullptr, 0)};
  t.tp_name = "descent._C.DispatchKeySet";
  t.tp_basicsize = sizeof(KeySetObject);
  t.tp_flags = Py_TPFLAGS_DEFAULT;
  t.tp_doc = "A set of dispatch keys, as torch._C.DispatchKeySet (Note [torch._C's dispatcher objects in descent])";
  t.tp_new = key_set_new;
  t.tp_repr = key_set_repr;
  t.tp_str = key_set_repr;
  t.tp_hash = PyObject_HashNotImplemented;
  t.tp_richcompare = key_set_compare;
  t.tp_as_number = &key_set_number;
  t.tp_methods = key_set_methods;
  return t;
}();

// [SECTION] The tensor's and the thread's key sets -------------------------------

PyObject* py_dispatch_keys(PyObject*, PyObject* o) {
  DESCENT_PY_TRY
  DESCENT_CHECK(is_tensor(o), TypeError, "_dispatch_keys expects a Tensor");
  return key_set_object(unwrap(o).impl()->keys);
  DESCENT_PY_CATCH(nullptr)
}
PyObject* py_tls_include(PyObject*, PyObject*) { return key_set_object(local_keys().included); }
PyObject* py_tls_exclude(PyObject*, PyObject*) { return key_set_object(local_keys().excluded); }
PyObject* py_key_name(PyObject*, PyObject* key) {
  DESCENT_PY_TRY
  return PyUnicode_FromString(dispatch_key_name(key_of(key)));
  DESCENT_PY_CATCH(nullptr)
}
PyObject* py_key_parse(PyObject*, PyObject* name) {
  DESCENT_PY_TRY
  return key_object(key_of(name));
  DESCENT_PY_CATCH(nullptr)
}
PyObject* py_keyset_to_string(PyObject*, PyObject* ks) {
  if (!PyObject_TypeCheck(ks, &g_key_set_type))
    return PyErr_Format(PyExc_TypeError, "_dispatch_keyset_to_string expects a DispatchKeySet, not %s",
                        Py_TYPE(ks)->tp_name);
  return key_set_repr(ks);
}

// [SECTION] An operator's registrations ------------------------------------------

// The operator of a full name, as c10's findSchema: "aten::add" is the overload
// with no name, which add has not; nullptr when there is none.
const OpEntry* operator_named(PyObject* name) {
  DESCENT_CHECK(PyUnicode_Check(name), TypeError, "an operator is named by a str, not ", Py_TYPE(name)->tp_name);
  const std::string n = utf8_text(name);
  const OpEntry* e = find_operator(n);
  return e && e->schema.full_name() == n ? e : nullptr;
}

// "(Tensor _0, Tensor _1, Scalar _2) -> Tensor _0": the schema's types in the
// form of c10's inferred kernel signature (Note [torch._C's dispatcher objects in descent]).
std::string kernel_signature(const Schema& s) {
  std::string out = "(";
  for (size_t i = 0; i < s.args.size(); ++i) out += (i ? ", " : "") + s.args[i].type_str() + " _" + std::to_string(i);
  out += ") -> ";
  if (s.returns.size() != 1) out += "(";
  for (size_t i = 0; i < s.returns.size(); ++i)
    out += (i ? ", " : "") + std::string(s.returns[i].is_scalar ? "Scalar" : "Tensor") + " _" + std::to_string(i);
  if (s.returns.size() != 1) out += ")";
  return out;
}

// One registration line of _dispatch_dump, as OperatorEntry::dumpState writes it.
std::string dump_line(const OpEntry& e, DispatchKey shown, const Registration& r, int slot) {
  const bool fallthrough = e.own_fallthrough[slot] > 0;
  const bool typed = e.own_unboxed[slot] != nullptr;
  std::string line = std::string(dispatch_key_name(shown)) + (is_alias(shown) ? "[alias]" : "") + ": " +
                     (fallthrough ? "fallthrough " : "") + "registered at " + r.where + " :: ";
  line += typed ? kernel_signature(e.schema) + " [ boxed unboxed ]" : "(none) [ boxed ]";
  return line + "\n";
}

// _dispatch_dump(name): the operator's name, schema and what it registered itself at each key; "" for no operator.
PyObject* py_dispatch_dump(PyObject*, PyObject* name) {
  DESCENT_PY_TRY
  const OpEntry* e = operator_named(name);
  if (!e) return PyUnicode_FromString("");
  std::string out = "name: " + e->schema.full_name() + "\nschema: " + e->schema.text +
                    "\ndebug: registered at floors/dispatch/ops.h\nalias analysis kind: FROM_SCHEMA\n";
  std::string aliases;
  bool alias_shown[kNumDispatchKeys] = {};
  for (int k = 1; k <= kNumRuntimeKeys; ++k) {
    const int slot = runtime_slot(DispatchKey(k));
    if (!e->own_kernels[slot] && e->own_fallthrough[slot] <= 0) continue;
    Registration r = op_registration(*e, DispatchKey(k));
    if (r.where.empty()) r.where = "descent.library";
    if (is_alias(r.named)) {
      if (!alias_shown[int(r.named)]) aliases += dump_line(*e, r.named, r, slot);
      alias_shown[int(r.named)] = true;
    } else {
      out += dump_line(*e, DispatchKey(k), r, slot);
    }
  }
  return PyUnicode_FromString((out + aliases + "\n").c_str());
  DESCENT_PY_CATCH(nullptr)
}

// _dispatch_dump_table(name): what a call runs at each runtime key, and where it came from, as
// OperatorEntry::dumpComputedTable writes it; "" for no operator.
PyObject* py_dispatch_dump_table(PyObject*, PyObject* name) {
  DESCENT_PY_TRY
  const OpEntry* e = operator_named(name);
  if (!e) return PyUnicode_FromString("");
  std::string out;
  for (int k = 1; k <= kNumRuntimeKeys; ++k) {
    const DispatchKey key = DispatchKey(k);
    const int slot = runtime_slot(key);
    const bool own = e->own_kernels[slot] || e->own_fallthrough[slot] > 0;
    const Kernel fb = fallback_kernel(key);
    if (!own && !fb.fn && !fb.fallthrough) continue;
    Registration r = own ? op_registration(*e, key) : fallback_registration(key);
    if (r.where.empty()) r.where = "descent.library";
    const char* kind = !own                                                            ? "backend fallback"
                       : r.named == DispatchKey::CompositeExplicitAutograd             ? "default backend kernel"
                       : r.named == DispatchKey::CompositeImplicitAutograd             ? "math kernel"
                       : functionality_of(key) == Functionality::AutogradFunctionality ? "autograd kernel"
                                                                                       : "kernel";
    out += std::string(dispatch_key_name(key)) + ": " + (e->fallthrough[slot] ? "fallthrough " : "") +
           "registered at " + r.where + " [" + kind + "]\n";
  }
  return PyUnicode_FromString(out.c_str());
  DESCENT_PY_CATCH(nullptr)
}

// _dispatch_has_kernel_for_dispatch_key(name, key): whether the operator registered a kernel at
// exactly that key (an alias key as registered: a CompositeImplicitAutograd op has none at CPU), as c10's
// hasKernelForDispatchKey.
PyObject* py_has_kernel_for_key(PyObject*, PyObject* args) {
  PyObject *name, *key;
  if (!PyArg_ParseTuple(args, "OO:_dispatch_has_kernel_for_dispatch_key", &name, &key)) return nullptr;
  DESCENT_PY_TRY
  const OpEntry* e = operator_named(name);
  DESCENT_CHECK(e, Error, "operator ", utf8_text(name), " does not exist");
  const DispatchKey k = key_of(key);
  for (int r = 1; r <= kNumRuntimeKeys; ++r) {
    const int slot = runtime_slot(DispatchKey(r));
    if ((e->own_kernels[slot] || e->own_fallthrough[slot] > 0) && op_registration(*e, DispatchKey(r)).named == k)
      Py_RETURN_TRUE;
    if (!is_alias(k) && r == int(k) && e->own_kernels[slot] && op_registration(*e, k).where.empty())
      Py_RETURN_TRUE;  // a Python library's kernel, whose site and key are not kept
  }
  Py_RETURN_FALSE;
  DESCENT_PY_CATCH(nullptr)
}

// _dispatch_has_kernel(name): whether there is such an operator with a kernel anywhere.
PyObject* py_has_kernel(PyObject*, PyObject* name) {
  DESCENT_PY_TRY
  const OpEntry* e = operator_named(name);
  if (!e) Py_RETURN_FALSE;
  for (BoxedKernel k : e->kernels)
    if (k) Py_RETURN_TRUE;
  Py_RETURN_FALSE;
  DESCENT_PY_CATCH(nullptr)
}

// _dispatch_kernel_for_dispatch_key_is_fallthrough(name, key): whether a call skips the key.
PyObject* py_is_fallthrough(PyObject*, PyObject* args) {
  PyObject *name, *key;
  if (!PyArg_ParseTuple(args, "OO:_dispatch_kernel_for_dispatch_key_is_fallthrough", &name, &key)) return nullptr;
  DESCENT_PY_TRY
  const OpEntry* e = operator_named(name);
  DESCENT_CHECK(e, Error, "operator ", utf8_text(name), " does not exist");
  const DispatchKey k = key_of(key);
  DESCENT_CHECK(is_runtime(k) && (e->kernel(k) || e->is_fallthrough(k)), Error, "no kernel for ", dispatch_key_name(k),
                " on ", e->schema.full_name());
  return PyBool_FromLong(e->is_fallthrough(k));
  DESCENT_PY_CATCH(nullptr)
}

// _operator_schema(name): the operator's schema text ("aten::sum" for the overload without a name), or None.
PyObject* py_operator_schema(PyObject*, PyObject* name) {
  DESCENT_PY_TRY
  const OpEntry* e = operator_named(name);
  if (!e) Py_RETURN_NONE;
  return PyUnicode_FromString(e->schema.text.c_str());
  DESCENT_PY_CATCH(nullptr)
}

PyMethodDef dispatch_functions[] = {
    {"_dispatch_keys", py_dispatch_keys, METH_O, "the tensor's dispatch keys, a DispatchKeySet"},
    {"_dispatch_tls_local_include_set", py_tls_include, METH_NOARGS, "the keys this thread adds to every call"},
    {"_dispatch_tls_local_exclude_set", py_tls_exclude, METH_NOARGS, "the keys this thread removes from every call"},
    {"_dispatch_key_name", py_key_name, METH_O, "the key's name: 'AutogradCPU'"},
    {"_dispatch_key_parse", py_key_parse, METH_O, "the DispatchKey of a name"},
    {"_dispatch_keyset_to_string", py_keyset_to_string, METH_O, "'DispatchKeySet(CPU, ...)'"},
    {"_dispatch_dump", py_dispatch_dump, METH_O, "what the operator registered, key by key"},
    {"_dispatch_dump_table", py_dispatch_dump_table, METH_O, "what a call of the operator runs at each key"},
    {"_dispatch_has_kernel", py_has_kernel, METH_O, "whether the operator exists and has a kernel"},
    {"_dispatch_has_kernel_for_dispatch_key", py_has_kernel_for_key, METH_VARARGS,
     "whether the operator registered a kernel at exactly that key"},
    {"_dispatch_kernel_for_dispatch_key_is_fallthrough", py_is_fallthrough, METH_VARARGS,
     "whether a call of the operator skips the key"},
    {"_operator_schema", py_operator_schema, METH_O, "the operator's schema text, or None (OpOverload._schema)"},
    {nullptr, nullptr, 0, nullptr},
};

}  // namespace

bool init_dispatch_introspection(PyObject* module) {
  if (!make_key_enum(module) || PyType_Ready(&g_key_set_type) < 0) return false;
  Py_INCREF(&g_key_set_type);
  if (PyModule_AddObject(module, "DispatchKeySet", reinterpret_cast<PyObject*>(&g_key_set_type)) < 0) return false;
  return PyModule_AddFunctions(module, dispatch_functions) == 0;
}

}  // namespace descent::binding
