// Floor 2: a C++ exception becomes a Python one. Every function the binding
// gives Python ends in DESCENT_PY_CATCH (binding.h), which calls
// set_python_error: descent's error classes map to Python's, as c10::Error's
// subclasses do in PyTorch's HANDLE_TH_ERRORS.
#include "floors/allocator/allocator.h"
#include "floors/binding/binding.h"

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

}  // namespace descent::binding
