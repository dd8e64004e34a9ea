// Floor 2: the op table from Python: its rows (_ops, which `descent ops`
// prints) and the verifier run over them (_verify, `descent verify`).
#include <cstring>
#include <string>
#include <string_view>
#include <vector>

#include "floors/autograd/derivatives.h"
#include "floors/binding/binding.h"
#include "floors/kernels/cpu/cpu_generator.h"
#include "floors/kernels/verify/verifier.h"

namespace descent::binding {

namespace {

PyObject* py_ops(PyObject*, PyObject*) {
  static const char* kKinds[] = {"factory", "unary", "binary",  "comparison", "reduction", "matmul",
                                 "view",    "copy",  "inplace", "read",       "collective"};
  static_assert(sizeof(kKinds) / sizeof(kKinds[0]) == int(OpKind::Collective) + 1);
  static const char* kExactness[] = {"exact", "reordered", "device_math"};
  static_assert(sizeof(kExactness) / sizeof(kExactness[0]) == int(Exactness::DeviceMath) + 1);
  return py_list(all_ops().size(), [](size_t i) {
    const OpEntry& op = all_ops()[i];
    // The node autograd records for it (Note [One derivative per op]); a composite's come from its parts.
    const autograd::Derivative* der = autograd::derivative_of(op.id);
    const char* node = der ? der->node : std::string_view(op.dispatch).find("Composite") == 0 ? "(its parts')" : "";
    return Py_BuildValue("{s:s,s:s,s:s,s:s,s:s,s:s,s:s,s:s,s:s,s:s,s:s,s:s}", "name", op.name, "python_name",
                         op.python_name, "overload", op.schema.overload.c_str(), "profiler_name", op.profiler_name,
                         "schema", op.schema.text.c_str(), "dispatch", op.dispatch, "kind", kKinds[int(op.kind)],
                         "exactness", kExactness[int(op.exactness)], "domain",
                         op.domain == Domain::Any ? "any" : "positive", "python_module",
                         op.python_module == PythonModule::NN       ? "nn"
                         : op.python_module == PythonModule::Hidden ? "hidden"
                                                                    : "",
                         "sample", op.sample, "derivative", node);
  });
}

// `descent verify --op X`: X is an operator name ("aten::max.dim"), the same
// without its namespace ("max.dim"), or a base name ("max": every overload).
bool op_matches(const OpEntry& op, const char* want) {
  const std::string w = want;
  const std::string ns = op.schema.ns + "::";
  return w == op.name || ns + w == op.name || w == op.python_name;
}

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
      // Every row the verifier holds, or the one named (a collective's name: its ValueError says why not).
      if (only ? !op_matches(op, only) : !kernels::is_verified(op)) continue;
      for (int t = 0; t < kNumScalarTypes; ++t) vs.push_back(kernels::verify(op, ScalarType(t), seed, device));
    }
  }
  DESCENT_CHECK(!only || !vs.empty(), Error, "verify(): no op named '", only, "' (see: descent ops)");
  return verdicts_object(vs);
  DESCENT_PY_CATCH(nullptr)
}

// Note [A Generator is a saved CPU stream]
// ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
// torch.Generator is a CPUGeneratorImpl of its own: an mt19937 and its
// cached normal. descent has one CPU generator (cpu_generator.h); a
// descent.Generator (descent/_generator.py) keeps that generator's whole
// state as bytes, and a call given generator=g swaps g's state in, draws,
// and swaps it back out, so g's numbers are torch's for g's seed and the
// default stream is untouched. These three functions are the swap's parts:
// the state now, the state to set, and the state of a fresh generator
// seeded with `seed` (the global one not touched, devices' counters neither).
PyObject* py_cpu_rng_state(PyObject*, PyObject*) {
  kernels::LockedCpuGenerator g = kernels::lock_cpu_generator();
  return PyBytes_FromStringAndSize(reinterpret_cast<const char*>(&g.gen), sizeof(kernels::CpuGenerator));
}
PyObject* py_set_cpu_rng_state(PyObject*, PyObject* state) {
  if (!PyBytes_Check(state) || PyBytes_GET_SIZE(state) != Py_ssize_t(sizeof(kernels::CpuGenerator)))
    return PyErr_Format(PyExc_RuntimeError, "set_state(): expected the %zu bytes of a CPU generator's state",
                        sizeof(kernels::CpuGenerator));
  kernels::LockedCpuGenerator g = kernels::lock_cpu_generator();
  std::memcpy(static_cast<void*>(&g.gen), PyBytes_AS_STRING(state), sizeof(kernels::CpuGenerator));
  Py_RETURN_NONE;
}
PyObject* py_cpu_rng_seeded(PyObject*, PyObject* seed) {
  const unsigned long long s = PyLong_AsUnsignedLongLongMask(seed);
  if (PyErr_Occurred()) return nullptr;
  kernels::CpuGenerator g;
  g.seed(uint64_t(s));
  return PyBytes_FromStringAndSize(reinterpret_cast<const char*>(&g), sizeof g);
}

}  // namespace

// The verifier's verdicts as a list of dicts, as _C._verify and
// _C._verify_matmul_rungs return them.
PyObject* verdicts_object(const std::vector<kernels::Verdict>& vs) {
  return py_list(vs.size(), [&](size_t i) {
    const kernels::Verdict& v = vs[i];
    return Py_BuildValue("{s:s,s:s,s:s,s:s,s:O,s:d,s:d,s:s}", "op", v.op.c_str(), "dtype", dtype_name(v.dtype), "claim",
                         v.claim.c_str(), "variants", v.variants.c_str(), "passed", v.passed ? Py_True : Py_False,
                         "max_abs_diff", v.max_abs_diff, "bound", v.bound, "detail", v.detail.c_str());
  });
}

PyMethodDef g_op_table_functions[] = {
    {"_ops", py_ops, METH_NOARGS, "the op table: name, schema, kind, exactness, domain, python_module, sample"},
    {"_verify", py_verify, METH_VARARGS, "_verify(seed=1, op=None): reference against optimized kernels"},
    {"_cpu_rng_state", py_cpu_rng_state, METH_NOARGS,
     "the CPU generator's state (Note [A Generator is a saved CPU stream])"},
    {"_set_cpu_rng_state", py_set_cpu_rng_state, METH_O, "sets the CPU generator's state from _cpu_rng_state's bytes"},
    {"_cpu_rng_seeded", py_cpu_rng_seeded, METH_O, "the state of a CPU generator seeded with an int, as bytes"},
    {nullptr, nullptr, 0, nullptr},
};

}  // namespace descent::binding
