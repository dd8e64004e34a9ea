// Floor 2: the thread's state from Python: grad mode and inference mode and
// its dispatch key sets (the included and excluded keys c10 keeps in
// thread-local storage), read and restored by descent's context managers
// (descent/grad_mode.py); the sets as objects are dispatch_introspection.cpp's.
//
// Note [The thread's key sets as descent prints them]
// ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
// _dispatch_keys, _dispatch_tls_local_include_set and ..._exclude_set
// (floors/binding/dispatch_introspection.cpp) return DispatchKeySets that
// print what torch._C's print, for descent's keys, which are a subset of
// c10's (floors/core/dispatch_key.h). Where the subset shows: the default
// exclude set is "AutocastCPU, AutocastCUDA, AutocastSim" (c10 has ten
// Autocast keys, AutocastMTIA to AutocastPrivateUse1). Inference mode
// excludes what c10's does, the Autograd functionality bit with no backend
// bit (dispatcher.cpp's set_inference_mode), which removes every backend's
// Autograd key from a call and prints as nothing, so the exclude set prints
// as the default one; c10 also excludes AutogradOther and
// AutogradNestedTensor, which descent has not: torch prints "AutogradOther,
// AutogradNestedTensor, AutocastCPU, ...". As in torch, the set then has()
// DispatchKey.Autograd (the alias) and not AutogradCPU.
#include "floors/binding/binding.h"

namespace descent::binding {

namespace {

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

}  // namespace

PyMethodDef g_thread_state_functions[] = {
    {"is_grad_enabled", py_is_grad_enabled, METH_NOARGS, "whether grad mode is on for this thread"},
    {"_set_grad_enabled", py_set_grad_enabled, METH_O, "sets this thread's grad mode (a flag: no key changes)"},
    {"is_inference_mode_enabled", py_is_inference_mode_enabled, METH_NOARGS,
     "whether this thread is in inference mode"},
    {"_local_state", py_local_state, METH_NOARGS, "this thread's grad mode, inference mode and key sets, as a token"},
    {"_set_local_state", py_set_local_state, METH_O, "restores a token from _local_state"},
    {"_set_inference_mode", py_set_inference_mode, METH_O,
     "enters (True) or leaves (False) inference mode, as c10 does"},
    {nullptr, nullptr, 0, nullptr},
};

}  // namespace descent::binding
