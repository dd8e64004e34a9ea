// The op table: the one list of operators. Registration (floor 3), the
// binding (floor 2), the kernels (floor 5), the verifier and the tests all
// read it, and adding an op starts with its row (docs/ADDING_AN_OP.md).
// What else a row needs is its element function (elementwise.h, whose
// functor tables are checked against the rows at compile time), its
// derivative and its numpy reference: nothing else lists the ops.
//
// Notes, each beside what it explains:
//   Note [One op table]                                a row's columns (the enums below)
//   Note [Where descent's schemas differ from aten's]  the schemas (before the table)
//   Note [Leaf kernels where aten decomposes]          one kernel where aten calls ops (before the table)
//   Note [Collectives are c10d ops]                    the last five rows (after the table)

#pragma once

#include <cstdint>

namespace descent {

// Note [One op table]
// ~~~~~~~~~~~~~~~~~~~
// Each row is: C++ id, schema, dispatch, kind, exactness, domain, Python
// module, sample call.
// - The schema is PyTorch's, from native_functions.yaml, with the aten::
//   namespace, the overload name and the alias annotations (Note [Schema
//   names and alias annotations], schema.h), parsed once at start-up. The
//   binding parses Python arguments against it, the dispatcher fills in
//   defaults from it, and the rows sharing a base name ("aten::max",
//   "aten::max.dim") are the overloads of one Python function (descent.max).
//   Where descent's argument list is not aten's, the difference is on
//   purpose and listed in Note [Where descent's schemas differ from aten's].
// - The dispatch is native_functions.yaml's `dispatch:`: the keys that have
//   a kernel for the op, comma-separated ("CPU, Sim, CUDA", "BackendSelect,
//   CPU, Sim, CUDA"). An ordinary op declares the backends it has kernels
//   for: "CPU, Sim, CUDA" where one boxed kernel serves all three and only
//   its loop depends on the device (Note [One kernel body, two devices],
//   floors/kernels/device/device_loops.h), "CPU" where the devices have none yet
//   (a call on a device tensor then fails at dispatch, naming the op and
//   the key). A composite declares CompositeImplicitAutograd: its one kernel, in
//   floors/kernels/composites.cpp, calls other ops and is the op's only
//   kernel (Note [Composite ops decompose]). An op that takes a `device`
//   argument and is not a composite (the factories, empty_strided,
//   _to_copy: aten's rule, TensorOptions and not a _like op) declares
//   BackendSelect beside its backends: backend_select.cpp registers that
//   kernel for every row that declares it. Once every floor has registered, check_declared_kernels()
//   (library.h) requires a kernel at each declared key (an alias key
//   expanded through alias_runtime_keys; for a composite only the CPU slot
//   is checked), and throws naming the operator and the key: a declared
//   kernel that is missing fails at start-up, never at the first call. A
//   declared CUDA kernel is required only in builds with CUDA
//   (DESCENT_HAVE_CUDA): without the toolkit no CUDA tensor can exist.
// - The kind says how the tests and the verifier build inputs for the op.
// - The exactness says what the verifier may claim when it runs the
//   reference and the optimized kernel on the same inputs: Exact means
//   bit-for-bit; Reordered means the optimized kernel sums in another order,
//   so the two agree within the bound of Note [Summation bound] (verifier.cpp);
//   DeviceMath is Exact for an element function that calls the math
//   library (exp, log, tanh, erf, pow, and randn's Box-Muller): bit for bit
//   on the CPU and sim:0, which both run glibc's, within kCudaMathUlps on
//   cuda:N, whose library is not glibc's (of the terms' magnitude where they
//   cancel: Note [Element functions that cancel], verifier.cpp); the CPU's loops also give such a
//   costly element a smaller grain (Note [Intra-op parallelism]).
//   On sim:0 and cuda:N the verifier holds the device to the CPU's reference
//   as Note [Device claims] (verifier.cpp) says: float sums and products within
//   a stated bound, the rest of these ops bit for bit.
// - The Python module is native_functions.yaml's `python_module:`: Torch for
//   the ops of torch (descent._C.add, and descent.add, and Tensor.add where
//   the first argument is `Tensor self`), NN for those PyTorch keeps in
//   torch._C._nn (linear, mse_loss), which the binding puts in
//   descent._C._nn alone: neither a function of descent nor a Tensor method.
//   Hidden for those PyTorch binds no Python function for at all (its
//   gen_python_functions.py skips the *_backward ops): threshold_backward
//   runs under ReluBackward0 and is called from Python only as
//   descent.ops.aten.threshold_backward, as torch.ops.aten's.
// - The sample call is a small valid call, read by the verifier and the
//   tests: arguments separated by ';', where T[4, 6] is a random tensor of
//   the dtype under test, T[6, 4]^T the transposed (non-contiguous) view of
//   one, [1, 2] an int list, (None, I[2, -1]) a Tensor?[] whose I[...] is
//   an int64 tensor of those values, (T[3, 6], T[5, 6]) a Tensor[], and
//   numbers, None, True/False and dtype names stand for themselves.
// - Beside the table, as derivatives.yaml is beside native_functions.yaml,
//   floors/autograd/derivatives.cpp gives each differentiable row its
//   backward formula and PyTorch's node name (Note [One derivative per op]);
//   a row added without one fails the start-up check there.
// The static_assert below makes adding a row without counting it an error.

enum class OpKind : uint8_t {
  Factory,     // no tensor input; BackendSelect picks the backend from `device`
  Unary,       // elementwise, one tensor
  Binary,      // elementwise, two tensors, broadcast and promoted
  Comparison,  // like Binary, result is bool
  Reduction,   // over some or all dimensions
  Matmul,      // matrix product
  View,        // new sizes/strides over the same storage, no element copied
  Copy,        // copies elements (dtype conversion, contiguous, the elements indices pick)
  InPlace,     // writes into its first argument, Tensor(a!) self, and returns it
  Read,        // reads one element into a host Scalar (-> Scalar): no tensor result, no gradient
  Collective,  // c10d's: hands its tensors to the default process group's backend (-> int: the Work)
};
enum class Exactness : uint8_t { Exact, Reordered, DeviceMath };
// Which inputs the tests feed the op: any real numbers, or positive ones (log, sqrt).
enum class Domain : uint8_t { Any, Positive };
// Where Python finds the op: native_functions.yaml's python_module. Torch:
// descent._C (and descent, as torch.add); NN: descent._C._nn only, as
// torch._C._nn.linear, which torch.nn.functional calls.
enum class PythonModule : uint8_t { Torch, NN, Hidden };

// Note [Where descent's schemas differ from aten's]
// ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
// Names, overload names and alias annotations are aten's exactly; argument
// lists differ only here, each for a reason:
// - int[] and int stand for aten's SymInt[] and SymInt (view's size,
//   slice's start/end/step, select's index, the factories' size): descent
//   has no symbolic shapes, so a size is always a concrete int.
// - The factories take no `layout` and no `pin_memory` (descent has one
//   layout, strided; pinned host memory is Tensor.pin_memory()'s copy, Note
//   [Pinned host memory]), and aten::empty.memory_format,
//   aten::clone and aten::contiguous take no `memory_format` (every tensor
//   descent allocates is row-major).
// - aten::to is one row, to.dtype_layout, whose `dtype` and `device` may be
//   given positionally: aten splits x.to(dtype) and x.to(device) into the
//   to.dtype and to.device overloads; descent's Tensor.to reads both into this
//   one. `non_blocking` and `memory_format` are left out.
// - copy_'s `non_blocking` matters only for a copy from pinned host memory,
//   which it leaves queued; a copy from a device to the host always waits
//   for its stream (Note [Copies between devices], copy_kernels.cpp).
// - aten::_to_copy takes no `layout`, `pin_memory`, `non_blocking` or
//   `memory_format` (as for the factories and to), and is declared CPU, Sim,
//   CUDA where aten declares it CompositeExplicitAutograd: one boxed kernel
//   copies within a device and between devices (Note [Copies between
//   devices]); likewise aten::_unsafe_view (a view whose result records no
//   view base: reshape's and matmul's results over a fresh copy) is
//   declared per backend.
// - Binary ops have only their .Tensor overloads (no add.Scalar): the
//   binding turns a Python number into a 0-d wrapped-number tensor, as
//   PyTorch's Python binding does when it picks add.Tensor for x + 1. pow
//   is the exception, as in PyTorch: x ** 2 is aten::pow.Tensor_Scalar (its
//   row comes first, so the binding tries it first), whose gradient
//   (PowBackward0) has one edge, where pow.Tensor_Tensor's (PowBackward1) has two.
// - fill_ has only fill_.Scalar (no fill_.Tensor).
// - gelu and gelu_backward take `int approximate=0` (0 for 'none', 1 for
//   'tanh') where aten's is `str approximate='none'`: descent's schemas have
//   no str. torch.nn.functional.gelu (descent/nn/functional.py) turns the
//   string into the number and refuses any other in aten's words, and
//   nn.GELU prints the string; descent._C._nn.gelu and descent.ops.aten's
//   gelu and gelu_backward take the number (torch's take the string), and
//   the kernels refuse any but 0 and 1 as aten refuses another string.
// - item is a function as well (descent.item(x)), where aten's `variants:
//   method` makes it Tensor.item only: the binding makes a function of every
//   row. It and _local_scalar_dense return a Scalar, the one non-Tensor
//   return the schemas have (kind Read).
// - rsub has only rsub.Scalar (2 - x; no rsub.Tensor), and is a function
//   only, as aten's `variants: function` makes it: torch.rsub, no Tensor.rsub.
//   aten declares it CompositeExplicitAutograd; descent declares the backends
//   its one kernel serves, which calls aten::sub (Note [Reflected operators],
//   floors/binding/tensor_methods.cpp).

// Note [Leaf kernels where aten decomposes]
// ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
// Some ops that are one kernel here are, in aten, a kernel that calls other
// ops, and torch.profiler shows those ops beneath them. descent's trace shows
// one kernel span for each of these:
// - ones and full: aten::empty then fill_; zeros: empty then zero_; rand:
//   empty then uniform_; randn: empty then normal_. descent's factory kernels
//   (floors/kernels/factories.cpp) allocate and write the values themselves.
// - mean on the CPU: aten::sum then div_ on its result; descent's sum kernel
//   divides in its own loop (reduction_kernels.cpp). (aten's CUDA mean is one
//   reduction kernel, as descent's device mean is.)
// - relu: aten::clamp_min(self, 0); descent's relu is its own unary kernel
//   (ReluF, elementwise.h), with ReluBackward0 either way.
// - t: aten::transpose, which calls as_strided; descent's t kernel makes the
//   view itself (views.cpp), and descent has no as_strided op.
// - lift_fresh: CompositeExplicitAutograd in aten, with a derivative of its
//   own (LiftFreshBackward0, the identity); here a composite that returns
//   self, as aten's kernel does, so no node is recorded. Its one caller is
//   __setitem__ with a Python number (Note [x[i] = v as PyTorch writes it],
//   floors/binding/python_indexing.cpp), whose fresh 0-d value never requires grad.
// Where descent does decompose as aten does, the row says so: the
// CompositeImplicitAutograd rows (Note [Composite ops decompose]), rsub (sub
// beneath it) and mse_loss (mean or sum beneath it).

// clang-format off: one row an op, laid out as a table
#define DESCENT_FORALL_OPS(_)                                                                                          \
  /* factories: the device argument picks the backend */                                                               \
  _(empty, "aten::empty.memory_format(int[] size, *, ScalarType? dtype=None, Device? device=None) -> Tensor",          \
    "BackendSelect, CPU, Sim, CUDA", Factory, Exact, Any, Torch, "[4, 6]")                                             \
  _(empty_strided,                                                                                                     \
    "aten::empty_strided(int[] size, int[] stride, *, ScalarType? dtype=None, Device? device=None) -> Tensor",         \
    "BackendSelect, CPU, Sim, CUDA", Factory, Exact, Any, Torch, "[4, 6]; [1, 4]")                                     \
  _(zeros, "aten::zeros(int[] size, *, ScalarType? dtype=None, Device? device=None) -> Tensor",                        \
    "BackendSelect, CPU, Sim, CUDA", Factory, Exact, Any, Torch, "[4, 6]")                                             \
  _(ones, "aten::ones(int[] size, *, ScalarType? dtype=None, Device? device=None) -> Tensor",                          \
    "BackendSelect, CPU, Sim, CUDA", Factory, Exact, Any, Torch, "[4, 6]")                                             \
  _(full, "aten::full(int[] size, Scalar fill_value, *, ScalarType? dtype=None, Device? device=None) -> Tensor",       \
    "BackendSelect, CPU, Sim, CUDA", Factory, Exact, Any, Torch, "[4, 6]; 2.5")                                        \
  _(arange, "aten::arange(Scalar end, *, ScalarType? dtype=None, Device? device=None) -> Tensor",                      \
    "BackendSelect, CPU, Sim, CUDA", Factory, Exact, Any, Torch, "10")                                                 \
  _(arange_start_step,                                                                                                 \
    "aten::arange.start_step(Scalar start, Scalar end, Scalar step=1, *, ScalarType? dtype=None, Device? "             \
    "device=None) -> Tensor",                                                                                          \
    "BackendSelect, CPU, Sim, CUDA", Factory, Exact, Any, Torch, "1; 7.5; 0.5")                                        \
  _(linspace,                                                                                                          \
    "aten::linspace(Scalar start, Scalar end, int steps, *, ScalarType? dtype=None, Device? device=None) -> Tensor",   \
    "BackendSelect, CPU, Sim, CUDA", Factory, Exact, Any, Torch, "-2.5; 7.25; 33")                                     \
  _(rand, "aten::rand(int[] size, *, ScalarType? dtype=None, Device? device=None) -> Tensor",                          \
    "BackendSelect, CPU, Sim, CUDA", Factory, Exact, Any, Torch, "[4, 33]")                                            \
  _(randn, "aten::randn(int[] size, *, ScalarType? dtype=None, Device? device=None) -> Tensor",                        \
    "BackendSelect, CPU, Sim, CUDA", Factory, DeviceMath, Any, Torch, "[4, 33]")                                       \
  /* elementwise, two inputs: broadcast and promoted */                                                                \
  _(add, "aten::add.Tensor(Tensor self, Tensor other, *, Scalar alpha=1) -> Tensor", "CPU, Sim, CUDA", Binary, Exact,  \
    Any, Torch, "T[4, 33]; T[4, 33]")                                                                                  \
  _(sub, "aten::sub.Tensor(Tensor self, Tensor other, *, Scalar alpha=1) -> Tensor", "CPU, Sim, CUDA", Binary, Exact,  \
    Any, Torch, "T[4, 33]; T[4, 33]")                                                                                  \
  _(mul, "aten::mul.Tensor(Tensor self, Tensor other) -> Tensor", "CPU, Sim, CUDA", Binary, Exact, Any, Torch,         \
    "T[4, 33]; T[4, 33]")                                                                                              \
  _(div, "aten::div.Tensor(Tensor self, Tensor other) -> Tensor", "CPU, Sim, CUDA", Binary, Exact, Any, Torch,         \
    "T[4, 33]; T[4, 33]")                                                                                              \
  _(pow_scalar, "aten::pow.Tensor_Scalar(Tensor self, Scalar exponent) -> Tensor", "CPU, Sim, CUDA", Binary,           \
    DeviceMath, Positive, Torch, "T[4, 33]; 2.5")                                                                      \
  _(pow, "aten::pow.Tensor_Tensor(Tensor self, Tensor exponent) -> Tensor", "CPU, Sim, CUDA", Binary, DeviceMath,      \
    Positive, Torch, "T[4, 33]; T[4, 33]")                                                                             \
  _(pow_scalar_base, "aten::pow.Scalar(Scalar self, Tensor exponent) -> Tensor", "CPU, Sim, CUDA", Binary, DeviceMath, \
    Any, Torch, "2.5; T[4, 33]")                                                                                       \
  _(rsub, "aten::rsub.Scalar(Tensor self, Scalar other, Scalar alpha=1) -> Tensor", "CPU, Sim, CUDA", Binary, Exact,   \
    Any, Torch, "T[4, 33]; 2.5")                                                                                       \
  _(eq, "aten::eq.Tensor(Tensor self, Tensor other) -> Tensor", "CPU, Sim, CUDA", Comparison, Exact, Any, Torch,       \
    "T[4, 33]; T[4, 33]")                                                                                              \
  _(lt, "aten::lt.Tensor(Tensor self, Tensor other) -> Tensor", "CPU, Sim, CUDA", Comparison, Exact, Any, Torch,       \
    "T[4, 33]; T[4, 33]")                                                                                              \
  _(gt, "aten::gt.Tensor(Tensor self, Tensor other) -> Tensor", "CPU, Sim, CUDA", Comparison, Exact, Any, Torch,       \
    "T[4, 33]; T[4, 33]")                                                                                              \
  _(ne, "aten::ne.Tensor(Tensor self, Tensor other) -> Tensor", "CPU, Sim, CUDA", Comparison, Exact, Any, Torch,       \
    "T[4, 33]; T[4, 33]")                                                                                              \
  _(le, "aten::le.Tensor(Tensor self, Tensor other) -> Tensor", "CPU, Sim, CUDA", Comparison, Exact, Any, Torch,       \
    "T[4, 33]; T[4, 33]")                                                                                              \
  _(ge, "aten::ge.Tensor(Tensor self, Tensor other) -> Tensor", "CPU, Sim, CUDA", Comparison, Exact, Any, Torch,       \
    "T[4, 33]; T[4, 33]")                                                                                              \
  /* elementwise, one input */                                                                                         \
  _(neg, "aten::neg(Tensor self) -> Tensor", "CPU, Sim, CUDA", Unary, Exact, Any, Torch, "T[4, 33]")                   \
  _(abs, "aten::abs(Tensor self) -> Tensor", "CPU, Sim, CUDA", Unary, Exact, Any, Torch, "T[4, 33]")                   \
  _(exp, "aten::exp(Tensor self) -> Tensor", "CPU, Sim, CUDA", Unary, DeviceMath, Any, Torch, "T[4, 33]")              \
  _(log, "aten::log(Tensor self) -> Tensor", "CPU, Sim, CUDA", Unary, DeviceMath, Positive, Torch, "T[4, 33]")         \
  _(sqrt, "aten::sqrt(Tensor self) -> Tensor", "CPU, Sim, CUDA", Unary, Exact, Positive, Torch, "T[4, 33]")            \
  _(relu, "aten::relu(Tensor self) -> Tensor", "CPU, Sim, CUDA", Unary, Exact, Any, Torch, "T[4, 33]")                 \
  _(threshold_backward, "aten::threshold_backward(Tensor grad_output, Tensor self, Scalar threshold) -> Tensor",       \
    "CPU, Sim, CUDA", Binary, Exact, Any, Hidden, "T[4, 33]; T[4, 33]; 0")                                             \
  _(sigmoid, "aten::sigmoid(Tensor self) -> Tensor", "CPU, Sim, CUDA", Unary, DeviceMath, Any, Torch, "T[4, 33]")      \
  _(tanh, "aten::tanh(Tensor self) -> Tensor", "CPU, Sim, CUDA", Unary, DeviceMath, Any, Torch, "T[4, 33]")            \
  _(sin, "aten::sin(Tensor self) -> Tensor", "CPU, Sim, CUDA", Unary, DeviceMath, Any, Torch, "T[4, 33]")              \
  _(cos, "aten::cos(Tensor self) -> Tensor", "CPU, Sim, CUDA", Unary, DeviceMath, Any, Torch, "T[4, 33]")              \
  _(reciprocal, "aten::reciprocal(Tensor self) -> Tensor", "CPU, Sim, CUDA", Unary, Exact, Positive, Torch,            \
    "T[4, 33]")                                                                                                        \
  _(clamp, "aten::clamp(Tensor self, Scalar? min=None, Scalar? max=None) -> Tensor", "CPU, Sim, CUDA", Unary, Exact,   \
    Any, Torch, "T[4, 33]; -1.5; 2.5")                                                                                 \
  _(clamp_min, "aten::clamp_min(Tensor self, Scalar min) -> Tensor", "CPU, Sim, CUDA", Unary, Exact, Any, Torch,       \
    "T[4, 33]; -1")                                                                                                    \
  _(clamp_max, "aten::clamp_max(Tensor self, Scalar max) -> Tensor", "CPU, Sim, CUDA", Unary, Exact, Any, Torch,       \
    "T[4, 33]; 2")                                                                                                     \
  /* reductions */                                                                                                     \
  _(sum, "aten::sum(Tensor self, *, ScalarType? dtype=None) -> Tensor", "CPU, Sim, CUDA", Reduction, Reordered, Any,   \
    Torch, "T[4, 33]")                                                                                                 \
  _(sum_dim,                                                                                                           \
    "aten::sum.dim_IntList(Tensor self, int[1]? dim, bool keepdim=False, *, ScalarType? dtype=None) -> Tensor",        \
    "CPU, Sim, CUDA", Reduction, Reordered, Any, Torch, "T[4, 33]; [1]")                                               \
  _(mean, "aten::mean(Tensor self, *, ScalarType? dtype=None) -> Tensor", "CPU, Sim, CUDA", Reduction, Reordered, Any, \
    Torch, "T[4, 33]")                                                                                                 \
  _(mean_dim, "aten::mean.dim(Tensor self, int[1]? dim, bool keepdim=False, *, ScalarType? dtype=None) -> Tensor",     \
    "CPU, Sim, CUDA", Reduction, Reordered, Any, Torch, "T[4, 33]; [1]")                                               \
  _(max, "aten::max(Tensor self) -> Tensor", "CPU, Sim, CUDA", Reduction, Exact, Any, Torch, "T[4, 33]")               \
  _(max_dim, "aten::max.dim(Tensor self, int dim, bool keepdim=False) -> (Tensor values, Tensor indices)",             \
    "CPU, Sim, CUDA", Reduction, Exact, Any, Torch, "T[4, 33]; 1")                                                     \
  _(mse_loss, "aten::mse_loss(Tensor self, Tensor target, int reduction=Mean) -> Tensor", "CPU, Sim, CUDA", Reduction, \
    Reordered, Any, NN, "T[4, 33]; T[4, 33]")                                                                          \
  /* matrix product */                                                                                                 \
  _(matmul, "aten::matmul(Tensor self, Tensor other) -> Tensor", "CompositeImplicitAutograd", Matmul, Exact, Any,      \
    Torch, "T[17, 23]; T[23, 19]")                                                                                     \
  _(mm, "aten::mm(Tensor self, Tensor mat2) -> Tensor", "CPU, Sim, CUDA", Matmul, Exact, Any, Torch,                   \
    "T[17, 23]; T[23, 19]")                                                                                            \
  _(addmm, "aten::addmm(Tensor self, Tensor mat1, Tensor mat2, *, Scalar beta=1, Scalar alpha=1) -> Tensor",           \
    "CPU, Sim, CUDA", Matmul, Exact, Any, Torch, "T[19]; T[17, 23]; T[23, 19]")                                        \
  _(bmm, "aten::bmm(Tensor self, Tensor mat2) -> Tensor", "CPU, Sim, CUDA", Matmul, Exact, Any, Torch,                 \
    "T[3, 17, 23]; T[3, 23, 19]")                                                                                      \
  _(dot, "aten::dot(Tensor self, Tensor tensor) -> Tensor", "CPU, Sim, CUDA", Matmul, Exact, Any, Torch,               \
    "T[33]; T[33]")                                                                                                    \
  _(mv, "aten::mv(Tensor self, Tensor vec) -> Tensor", "CPU, Sim, CUDA", Matmul, Exact, Any, Torch,                    \
    "T[17, 23]; T[23]")                                                                                                \
  _(linear, "aten::linear(Tensor input, Tensor weight, Tensor? bias=None) -> Tensor", "CompositeImplicitAutograd",     \
    Matmul, Exact, Any, NN, "T[5, 3, 23]; T[19, 23]; T[19]")                                                           \
  /* views: new sizes and strides over the same storage; the result aliases self */                                    \
  _(view, "aten::view(Tensor(a) self, int[] size) -> Tensor(a)", "CPU, Sim, CUDA", View, Exact, Any, Torch,            \
    "T[4, 6]; [6, 4]")                                                                                                 \
  _(_unsafe_view, "aten::_unsafe_view(Tensor self, int[] size) -> Tensor", "CPU, Sim, CUDA", View, Exact, Any, Torch,  \
    "T[4, 6]; [6, 4]")                                                                                                 \
  _(reshape, "aten::reshape(Tensor(a) self, int[] shape) -> Tensor(a)", "CompositeImplicitAutograd", View, Exact, Any, \
    Torch, "T[4, 6]^T; [-1]")                                                                                          \
  _(transpose, "aten::transpose.int(Tensor(a) self, int dim0, int dim1) -> Tensor(a)", "CPU, Sim, CUDA", View, Exact,  \
    Any, Torch, "T[4, 6]; 0; 1")                                                                                       \
  _(t, "aten::t(Tensor(a) self) -> Tensor(a)", "CPU, Sim, CUDA", View, Exact, Any, Torch, "T[4, 6]")                   \
  _(permute, "aten::permute(Tensor(a) self, int[] dims) -> Tensor(a)", "CPU, Sim, CUDA", View, Exact, Any, Torch,      \
    "T[2, 3, 4]; [2, 0, 1]")                                                                                           \
  _(expand, "aten::expand(Tensor(a) self, int[] size, *, bool implicit=False) -> Tensor(a)", "CPU, Sim, CUDA", View,   \
    Exact, Any, Torch, "T[4, 1]; [3, 4, 6]")                                                                           \
  _(slice, "aten::slice.Tensor(Tensor(a) self, int dim=0, int? start=None, int? end=None, int step=1) -> Tensor(a)",   \
    "CPU, Sim, CUDA", View, Exact, Any, Torch, "T[4, 6]; 1; 1; 5; 2")                                                  \
  _(select, "aten::select.int(Tensor(a) self, int dim, int index) -> Tensor(a)", "CPU, Sim, CUDA", View, Exact, Any,   \
    Torch, "T[4, 6]; 0; 2")                                                                                            \
  _(unsqueeze, "aten::unsqueeze(Tensor(a) self, int dim) -> Tensor(a)", "CPU, Sim, CUDA", View, Exact, Any, Torch,     \
    "T[4, 6]; 1")                                                                                                      \
  _(alias, "aten::alias(Tensor(a) self) -> Tensor(a)", "CPU, Sim, CUDA", View, Exact, Any, Torch, "T[4, 6]")           \
  _(lift_fresh, "aten::lift_fresh(Tensor(a) self) -> Tensor(a)", "CompositeImplicitAutograd", View, Exact, Any, Torch, \
    "T[4, 6]")                                                                                                         \
  _(flatten, "aten::flatten.using_ints(Tensor(a) self, int start_dim=0, int end_dim=-1) -> Tensor(a)",                 \
    "CompositeImplicitAutograd", View, Exact, Any, Torch, "T[2, 3, 4]^T; 1; 2")                                        \
  /* copies */                                                                                                         \
  _(contiguous, "aten::contiguous(Tensor(a) self) -> Tensor(a)", "CompositeImplicitAutograd", Copy, Exact, Any, Torch, \
    "T[4, 6]^T")                                                                                                       \
  _(clone, "aten::clone(Tensor self) -> Tensor", "CPU, Sim, CUDA", Copy, Exact, Any, Torch, "T[4, 6]")                 \
  _(to,                                                                                                                \
    "aten::to.dtype_layout(Tensor(a) self, ScalarType? dtype=None, Device? device=None, bool copy=False) -> "          \
    "Tensor(a)",                                                                                                       \
    "CompositeImplicitAutograd", Copy, Exact, Any, Torch, "T[4, 6]; float64")                                          \
  _(_to_copy, "aten::_to_copy(Tensor self, *, ScalarType? dtype=None, Device? device=None) -> Tensor",                 \
    "BackendSelect, CPU, Sim, CUDA", Copy, Exact, Any, Torch, "T[6, 4]^T")                                             \
  _(cat, "aten::cat(Tensor[] tensors, int dim=0) -> Tensor", "CPU, Sim, CUDA", Copy, Exact, Any, Torch,                \
    "(T[3, 6], T[5, 6], T[1, 6]); 0")                                                                                  \
  /* reads: one element's value to the host, a Scalar (Note [Reading a device tensor waits], device_object.cpp) */     \
  _(item, "aten::item(Tensor self) -> Scalar", "CompositeImplicitAutograd", Read, Exact, Any, Torch, "T[1]")           \
  _(_local_scalar_dense, "aten::_local_scalar_dense(Tensor self) -> Scalar", "CPU, Sim, CUDA", Read, Exact, Any,       \
    Torch, "T[1]")                                                                                                     \
  /* indexing: the elements that index tensors pick, read or written (Note [Advanced indexing], indexing.cpp) */       \
  _(index, "aten::index.Tensor(Tensor self, Tensor?[] indices) -> Tensor", "CPU, Sim, CUDA", Copy, Exact, Any, Torch,  \
    "T[5, 6]; (None, I[5, -1, 2, 0])")                                                                                 \
  _(index_put_,                                                                                                        \
    "aten::index_put_(Tensor(a!) self, Tensor?[] indices, Tensor values, bool accumulate=False) -> Tensor(a!)",        \
    "CPU, Sim, CUDA", InPlace, Exact, Any, Torch, "T[5, 6]; (I[4, 0, 4], I[1, -1, 1]); T[3]; True")                    \
  /* in place: write into self (Note [In-place ops], inplace_kernels.cpp) */                                           \
  _(add_, "aten::add_.Tensor(Tensor(a!) self, Tensor other, *, Scalar alpha=1) -> Tensor(a!)", "CPU, Sim, CUDA",       \
    InPlace, Exact, Any, Torch, "T[4, 33]; T[4, 33]")                                                                  \
  _(sub_, "aten::sub_.Tensor(Tensor(a!) self, Tensor other, *, Scalar alpha=1) -> Tensor(a!)", "CPU, Sim, CUDA",       \
    InPlace, Exact, Any, Torch, "T[33, 4]^T; T[33]")                                                                   \
  _(mul_, "aten::mul_.Tensor(Tensor(a!) self, Tensor other) -> Tensor(a!)", "CPU, Sim, CUDA", InPlace, Exact, Any,     \
    Torch, "T[4, 33]; T[4, 33]")                                                                                       \
  _(div_, "aten::div_.Tensor(Tensor(a!) self, Tensor other) -> Tensor(a!)", "CPU, Sim, CUDA", InPlace, Exact, Any,     \
    Torch, "T[4, 33]; T[4, 33]")                                                                                       \
  _(copy_, "aten::copy_(Tensor(a!) self, Tensor src, bool non_blocking=False) -> Tensor(a!)", "CPU, Sim, CUDA",        \
    InPlace, Exact, Any, Torch, "T[4, 6]; T[6, 1]^T")                                                                  \
  _(fill_, "aten::fill_.Scalar(Tensor(a!) self, Scalar value) -> Tensor(a!)", "CPU, Sim, CUDA", InPlace, Exact, Any,   \
    Torch, "T[4, 33]; 2.5")                                                                                            \
  _(fill_tensor_, "aten::fill_.Tensor(Tensor(a!) self, Tensor value) -> Tensor(a!)", "CPU, Sim, CUDA", InPlace, Exact, \
    Any, Torch, "T[4, 33]; T[]")                                                                                       \
  _(zero_, "aten::zero_(Tensor(a!) self) -> Tensor(a!)", "CPU, Sim, CUDA", InPlace, Exact, Any, Torch, "T[6, 4]^T")    \
  /* nn: softmax, the losses, layer_norm, embedding, dropout, conv2d (floors/kernels/nn_kernels.cpp) */                \
  /* their kernels are loops on the host (Note [nn kernels run on the host]); kind Reduction */                        \
  _(_softmax, "aten::_softmax(Tensor self, int dim, bool half_to_float) -> Tensor", "CPU, Sim, CUDA", Reduction,       \
    Exact, Any, Torch, "T[4, 33]; 1; False")                                                                           \
  _(_log_softmax, "aten::_log_softmax(Tensor self, int dim, bool half_to_float) -> Tensor", "CPU, Sim, CUDA",          \
    Reduction, Exact, Any, Torch, "T[4, 33]; 1; False")                                                                \
  _(_softmax_backward_data,                                                                                            \
    "aten::_softmax_backward_data(Tensor grad_output, Tensor output, int dim, "                                        \
    "ScalarType input_dtype) -> Tensor",                                                                               \
    "CPU, Sim, CUDA", Reduction, Exact, Any, Torch, "T[4, 33]; T[4, 33]; 1; float32")                                  \
  _(_log_softmax_backward_data,                                                                                        \
    "aten::_log_softmax_backward_data(Tensor grad_output, Tensor output, int dim, "                                    \
    "ScalarType input_dtype) -> Tensor",                                                                               \
    "CPU, Sim, CUDA", Reduction, Exact, Any, Torch, "T[4, 33]; T[4, 33]; 1; float32")                                  \
  _(softmax, "aten::softmax.int(Tensor self, int dim, ScalarType? dtype=None) -> Tensor", "CompositeImplicitAutograd", \
    Reduction, Exact, Any, Torch, "T[4, 33]; 1")                                                                       \
  _(log_softmax, "aten::log_softmax.int(Tensor self, int dim, ScalarType? dtype=None) -> Tensor",                      \
    "CompositeImplicitAutograd", Reduction, Exact, Any, Torch, "T[4, 33]; 1")                                          \
  _(nll_loss_forward,                                                                                                  \
    "aten::nll_loss_forward(Tensor self, Tensor target, Tensor? weight, int reduction, "                               \
    "int ignore_index) -> (Tensor output, Tensor total_weight)",                                                       \
    "CPU, Sim, CUDA", Reduction, Exact, Any, NN, "T[4, 5]; T[4]; None; 1; -100")                                       \
  _(nll_loss,                                                                                                          \
    "aten::nll_loss(Tensor self, Tensor target, Tensor? weight=None, int reduction=Mean, "                             \
    "int ignore_index=-100) -> Tensor",                                                                                \
    "CompositeImplicitAutograd", Reduction, Exact, Any, NN, "T[4, 5]; T[4]")                                           \
  _(nll_loss_nd,                                                                                                       \
    "aten::nll_loss_nd(Tensor self, Tensor target, Tensor? weight=None, int reduction=Mean, "                          \
    "int ignore_index=-100) -> Tensor",                                                                                \
    "CompositeImplicitAutograd", Reduction, Exact, Any, NN, "T[4, 5]; T[4]")                                           \
  _(cross_entropy_loss,                                                                                                \
    "aten::cross_entropy_loss(Tensor self, Tensor target, Tensor? weight=None, int reduction=Mean, "                   \
    "int ignore_index=-100, float label_smoothing=0.0) -> Tensor",                                                     \
    "CompositeImplicitAutograd", Reduction, Exact, Any, NN, "T[4, 5]; T[4]")                                           \
  _(native_layer_norm,                                                                                                 \
    "aten::native_layer_norm(Tensor input, int[] normalized_shape, Tensor? weight, Tensor? bias, "                     \
    "float eps) -> (Tensor, Tensor, Tensor)",                                                                          \
    "CPU, Sim, CUDA", Reduction, Exact, Any, Torch, "T[4, 33]; [33]; T[33]; T[33]; 0.00001")                           \
  _(layer_norm,                                                                                                        \
    "aten::layer_norm(Tensor input, int[] normalized_shape, Tensor? weight=None, Tensor? bias=None, "                  \
    "float eps=1e-05, bool cudnn_enable=True) -> Tensor",                                                              \
    "CompositeImplicitAutograd", Reduction, Exact, Any, Torch, "T[4, 33]; [33]; T[33]; T[33]")                         \
  _(embedding,                                                                                                         \
    "aten::embedding(Tensor weight, Tensor indices, int padding_idx=-1, bool scale_grad_by_freq=False, "               \
    "bool sparse=False) -> Tensor",                                                                                    \
    "CPU, Sim, CUDA", Reduction, Exact, Positive, Torch, "T[10, 3]; T[4]")                                             \
  _(dropout, "aten::dropout(Tensor input, float p, bool train) -> Tensor", "CompositeImplicitAutograd", Reduction,     \
    Exact, Any, Torch, "T[4, 33]; 0.25; False")                                                                        \
  _(binary_cross_entropy,                                                                                              \
    "aten::binary_cross_entropy(Tensor self, Tensor target, Tensor? weight=None, "                                     \
    "int reduction=Mean) -> Tensor",                                                                                   \
    "CPU, Sim, CUDA", Reduction, Exact, Positive, NN, "T[4, 33]; T[4, 33]")                                            \
  _(binary_cross_entropy_with_logits,                                                                                  \
    "aten::binary_cross_entropy_with_logits(Tensor self, Tensor target, Tensor? weight=None, "                         \
    "Tensor? pos_weight=None, int reduction=Mean) -> Tensor",                                                          \
    "CPU, Sim, CUDA", Reduction, Exact, Any, Torch, "T[4, 33]; T[4, 33]")                                              \
  _(one_hot, "aten::one_hot(Tensor self, int num_classes=-1) -> Tensor", "CompositeImplicitAutograd", Reduction,       \
    Exact, Positive, NN, "T[5]; 5")                                                                                    \
  _(conv2d,                                                                                                            \
    "aten::conv2d(Tensor input, Tensor weight, Tensor? bias=None, int[2] stride=1, int[2] padding=0, "                 \
    "int[2] dilation=1, int groups=1) -> Tensor",                                                                      \
    "CompositeImplicitAutograd", Reduction, Exact, Any, Torch, "T[2, 3, 6, 7]; T[4, 3, 3, 2]; T[4]; [2, 1]; [1, 0]")   \
  _(max_pool2d,                                                                                                        \
    "aten::max_pool2d(Tensor self, int[2] kernel_size, int[2]? stride=None, int[2] padding=0, int[2] dilation=1, "     \
    "bool ceil_mode=False) -> Tensor",                                                                                 \
    "CompositeImplicitAutograd", Reduction, Exact, Any, Torch, "T[2, 3, 6, 7]; [3, 2]; [2, 1]; [1, 1]")                \
  /* a learner's first ops (issue 42): like-factories, squeeze, masks, arg reductions, var and std */                  \
  _(empty_like, "aten::empty_like(Tensor self, *, ScalarType? dtype=None, Device? device=None) -> Tensor",             \
    "CompositeImplicitAutograd", Factory, Exact, Any, Torch, "T[4, 6]")                                                \
  _(zeros_like, "aten::zeros_like(Tensor self, *, ScalarType? dtype=None, Device? device=None) -> Tensor",             \
    "CompositeImplicitAutograd", Factory, Exact, Any, Torch, "T[4, 6]")                                                \
  _(ones_like, "aten::ones_like(Tensor self, *, ScalarType? dtype=None, Device? device=None) -> Tensor",               \
    "CompositeImplicitAutograd", Factory, Exact, Any, Torch, "T[4, 6]")                                                \
  _(full_like,                                                                                                         \
    "aten::full_like(Tensor self, Scalar fill_value, *, ScalarType? dtype=None, Device? device=None) -> Tensor",       \
    "CompositeImplicitAutograd", Factory, Exact, Any, Torch, "T[4, 6]; 2.5")                                           \
  _(rand_like, "aten::rand_like(Tensor self, *, ScalarType? dtype=None, Device? device=None) -> Tensor",               \
    "CompositeImplicitAutograd", Factory, Exact, Any, Torch, "T[4, 33]")                                               \
  _(randn_like, "aten::randn_like(Tensor self, *, ScalarType? dtype=None, Device? device=None) -> Tensor",             \
    "CompositeImplicitAutograd", Factory, Exact, Any, Torch, "T[4, 33]")                                               \
  _(new_empty, "aten::new_empty(Tensor self, int[] size, *, ScalarType? dtype=None, Device? device=None) -> Tensor",   \
    "CompositeImplicitAutograd", Factory, Exact, Any, Torch, "T[2, 3]; [4, 6]")                                        \
  _(new_zeros, "aten::new_zeros(Tensor self, int[] size, *, ScalarType? dtype=None, Device? device=None) -> Tensor",   \
    "CompositeImplicitAutograd", Factory, Exact, Any, Torch, "T[2, 3]; [4, 6]")                                        \
  _(new_ones, "aten::new_ones(Tensor self, int[] size, *, ScalarType? dtype=None, Device? device=None) -> Tensor",     \
    "CompositeImplicitAutograd", Factory, Exact, Any, Torch, "T[2, 3]; [4, 6]")                                        \
  _(new_full,                                                                                                          \
    "aten::new_full(Tensor self, int[] size, Scalar fill_value, *, ScalarType? dtype=None, Device? device=None) -> "   \
    "Tensor",                                                                                                          \
    "CompositeImplicitAutograd", Factory, Exact, Any, Torch, "T[2, 3]; [4, 6]; 2.5")                                   \
  _(eye, "aten::eye(int n, *, ScalarType? dtype=None, Device? device=None) -> Tensor",                                 \
    "BackendSelect, CompositeImplicitAutograd", Factory, Exact, Any, Torch, "5")                                       \
  _(eye_m, "aten::eye.m(int n, int m, *, ScalarType? dtype=None, Device? device=None) -> Tensor",                      \
    "BackendSelect, CompositeImplicitAutograd", Factory, Exact, Any, Torch, "4; 6")                                    \
  _(uniform_, "aten::uniform_(Tensor(a!) self, float from=0, float to=1) -> Tensor(a!)", "CPU, Sim, CUDA", InPlace,    \
    Exact, Any, Torch, "T[4, 33]; -2.0; 3.0")                                                                          \
  _(normal_, "aten::normal_(Tensor(a!) self, float mean=0, float std=1) -> Tensor(a!)", "CPU, Sim, CUDA", InPlace,     \
    Exact, Any, Torch, "T[4, 33]; 1.0; 2.0")                                                                           \
  _(log10, "aten::log10(Tensor self) -> Tensor", "CPU, Sim, CUDA", Unary, DeviceMath, Positive, Torch, "T[4, 33]")     \
  _(log2, "aten::log2(Tensor self) -> Tensor", "CPU, Sim, CUDA", Unary, DeviceMath, Positive, Torch, "T[4, 33]")       \
  _(clip, "aten::clip(Tensor self, Scalar? min=None, Scalar? max=None) -> Tensor", "CompositeImplicitAutograd", Unary, \
    Exact, Any, Torch, "T[4, 33]; -1.5; 2.5")                                                                          \
  _(floor_divide, "aten::floor_divide(Tensor self, Tensor other) -> Tensor", "CPU, Sim, CUDA", Binary, Exact,          \
    Positive, Torch, "T[4, 33]; T[4, 33]")                                                                             \
  _(narrow, "aten::narrow(Tensor(a) self, int dim, int start, int length) -> Tensor(a)", "CompositeImplicitAutograd",  \
    View, Exact, Any, Torch, "T[4, 6]; 1; 2; 3")                                                                       \
  _(squeeze, "aten::squeeze(Tensor(a) self) -> Tensor(a)", "CPU, Sim, CUDA", View, Exact, Any, Torch, "T[4, 1, 6, 1]") \
  _(squeeze_dim, "aten::squeeze.dim(Tensor(a) self, int dim) -> Tensor(a)", "CPU, Sim, CUDA", View, Exact, Any, Torch, \
    "T[4, 1, 6, 1]; -1")                                                                                               \
  _(squeeze_dims, "aten::squeeze.dims(Tensor(a) self, int[] dim) -> Tensor(a)", "CPU, Sim, CUDA", View, Exact, Any,    \
    Torch, "T[4, 1, 6, 1]; [0, 1]")                                                                                    \
  _(stack, "aten::stack(Tensor[] tensors, int dim=0) -> Tensor", "CompositeImplicitAutograd", Copy, Exact, Any, Torch, \
    "(T[3, 6], T[3, 6], T[6, 3]^T); 1")                                                                                \
  _(tril, "aten::tril(Tensor self, int diagonal=0) -> Tensor", "CPU, Sim, CUDA", Copy, Exact, Any, Torch,              \
    "T[5, 6]; -1")                                                                                                     \
  _(triu, "aten::triu(Tensor self, int diagonal=0) -> Tensor", "CPU, Sim, CUDA", Copy, Exact, Any, Torch,              \
    "T[6, 5]^T; 1")                                                                                                    \
  _(where, "aten::where.self(Tensor condition, Tensor self, Tensor other) -> Tensor", "CPU, Sim, CUDA", Copy, Exact,   \
    Any, Torch, "B[4, 6]; T[4, 6]; T[6]")                                                                              \
  _(masked_fill, "aten::masked_fill.Scalar(Tensor self, Tensor mask, Scalar value) -> Tensor", "CPU, Sim, CUDA", Copy, \
    Exact, Any, Torch, "T[4, 6]; B[6]; 2.5")                                                                           \
  _(argmax, "aten::argmax(Tensor self, int? dim=None, bool keepdim=False) -> Tensor", "CPU, Sim, CUDA", Reduction,     \
    Exact, Any, Torch, "T[4, 33]; 1")                                                                                  \
  _(argmin, "aten::argmin(Tensor self, int? dim=None, bool keepdim=False) -> Tensor", "CPU, Sim, CUDA", Reduction,     \
    Exact, Any, Torch, "T[4, 33]; 1")                                                                                  \
  _(all, "aten::all(Tensor self) -> Tensor", "CPU, Sim, CUDA", Reduction, Exact, Any, Torch, "T[4, 33]")               \
  _(all_dim, "aten::all.dim(Tensor self, int dim, bool keepdim=False) -> Tensor", "CPU, Sim, CUDA", Reduction, Exact,  \
    Any, Torch, "T[4, 33]; 1")                                                                                         \
  _(any, "aten::any(Tensor self) -> Tensor", "CPU, Sim, CUDA", Reduction, Exact, Any, Torch, "T[4, 33]")               \
  _(any_dim, "aten::any.dim(Tensor self, int dim, bool keepdim=False) -> Tensor", "CPU, Sim, CUDA", Reduction, Exact,  \
    Any, Torch, "T[4, 33]; 1")                                                                                         \
  _(var_unbiased, "aten::var(Tensor self, bool unbiased=True) -> Tensor", "CompositeImplicitAutograd", Reduction,      \
    Reordered, Any, Torch, "T[4, 33]")                                                                                 \
  _(var_dim, "aten::var.dim(Tensor self, int[1]? dim, bool unbiased=True, bool keepdim=False) -> Tensor",              \
    "CompositeImplicitAutograd", Reduction, Reordered, Any, Torch, "T[4, 33]; [1]")                                    \
  _(var_correction,                                                                                                    \
    "aten::var.correction(Tensor self, int[1]? dim=None, *, Scalar? correction=None, bool keepdim=False) -> Tensor",   \
    "CompositeImplicitAutograd", Reduction, Reordered, Any, Torch, "T[4, 33]; [0]")                                    \
  _(std_unbiased, "aten::std(Tensor self, bool unbiased=True) -> Tensor", "CompositeImplicitAutograd", Reduction,      \
    Reordered, Any, Torch, "T[4, 33]")                                                                                 \
  _(std_dim, "aten::std.dim(Tensor self, int[1]? dim, bool unbiased=True, bool keepdim=False) -> Tensor",              \
    "CompositeImplicitAutograd", Reduction, Reordered, Any, Torch, "T[4, 33]; [1]")                                    \
  _(std_correction,                                                                                                    \
    "aten::std.correction(Tensor self, int[1]? dim=None, *, Scalar? correction=None, bool keepdim=False) -> Tensor",   \
    "CompositeImplicitAutograd", Reduction, Reordered, Any, Torch, "T[4, 33]; [0]")                                    \
  _(where_scalar_other, "aten::where.ScalarOther(Tensor condition, Tensor self, Scalar other) -> Tensor",              \
    "CompositeImplicitAutograd", Copy, Exact, Any, Torch, "B[4, 6]; T[4, 6]; 2.5")                                     \
  _(where_scalar_self, "aten::where.ScalarSelf(Tensor condition, Scalar self, Tensor other) -> Tensor",                \
    "CompositeImplicitAutograd", Copy, Exact, Any, Torch, "B[4, 6]; 2.5; T[6]")                                        \
  _(where_scalar, "aten::where.Scalar(Tensor condition, Scalar self, Scalar other) -> Tensor",                         \
    "CompositeImplicitAutograd", Copy, Exact, Any, Torch, "B[4, 6]; 2.5; -1")                                          \
  _(clamp_tensor, "aten::clamp.Tensor(Tensor self, Tensor? min=None, Tensor? max=None) -> Tensor",                     \
    "CompositeImplicitAutograd", Copy, Exact, Any, Torch, "T[4, 33]; T[33]; T[4, 1]")                                  \
  _(clamp_, "aten::clamp_(Tensor(a!) self, Scalar? min=None, Scalar? max=None) -> Tensor(a!)", "CPU, Sim, CUDA",       \
    InPlace, Exact, Any, Torch, "T[4, 33]; -1.5; 2.5")                                                                 \
  _(isclose,                                                                                                           \
    "aten::isclose(Tensor self, Tensor other, float rtol=1e-05, float atol=1e-08, bool equal_nan=False) -> Tensor",    \
    "CompositeImplicitAutograd", Copy, Exact, Any, Torch, "T[4, 33]; T[4, 33]")                                        \
  _(linalg_vector_norm,                                                                                                \
    "aten::linalg_vector_norm(Tensor self, Scalar ord=2, int[1]? dim=None, bool keepdim=False, *, ScalarType? "        \
    "dtype=None) -> Tensor",                                                                                           \
    "CompositeImplicitAutograd", Reduction, Reordered, Any, Hidden, "T[4, 33]; 2; [1]")                                \
  _(random_from_, "aten::random_.from(Tensor(a!) self, int from, int? to) -> Tensor(a!)", "CPU, Sim, CUDA", InPlace,   \
    Exact, Any, Torch, "T[4, 33]; 0; 2")                                                                               \
  _(randint, "aten::randint(int high, int[] size, *, ScalarType? dtype=None, Device? device=None) -> Tensor",          \
    "BackendSelect, CompositeImplicitAutograd", Factory, Exact, Any, Torch, "2; [4, 33]")                              \
  _(randint_low,                                                                                                       \
    "aten::randint.low(int low, int high, int[] size, *, ScalarType? dtype=None, Device? device=None) -> Tensor",      \
    "BackendSelect, CompositeImplicitAutograd", Factory, Exact, Any, Torch, "0; 2; [4, 33]")                           \
  _(randint_like,                                                                                                      \
    "aten::randint_like(Tensor self, int high, *, ScalarType? dtype=None, Device? device=None) -> Tensor",             \
    "CompositeImplicitAutograd", Factory, Exact, Any, Torch, "T[4, 33]; 2")                                            \
  _(randperm, "aten::randperm(int n, *, ScalarType? dtype=None, Device? device=None) -> Tensor",                       \
    "BackendSelect, CPU, Sim, CUDA", Factory, Exact, Any, Torch, "10")                                                 \
  _(multinomial, "aten::multinomial(Tensor self, int num_samples, bool replacement=False) -> Tensor",                  \
    "CPU, Sim, CUDA", Copy, Exact, Positive, Torch, "T[4, 6]; 3; True")                                                \
  _(sort, "aten::sort(Tensor self, int dim=-1, bool descending=False) -> (Tensor values, Tensor indices)",             \
    "CPU, Sim, CUDA", Copy, Exact, Any, Torch, "T[4, 33]; 1; True")                                                    \
  _(topk,                                                                                                              \
    "aten::topk(Tensor self, int k, int dim=-1, bool largest=True, bool sorted=True) -> (Tensor values, Tensor "       \
    "indices)",                                                                                                        \
    "CPU, Sim, CUDA", Copy, Exact, Any, Torch, "T[4, 33]; 3")                                                          \
  _(unfold, "aten::unfold(Tensor(a) self, int dimension, int size, int step) -> Tensor(a)", "CPU, Sim, CUDA", View,    \
    Exact, Any, Torch, "T[4, 9]; 1; 3; 2")                                                                             \
  _(as_strided, "aten::as_strided(Tensor(a) self, int[] size, int[] stride, int? storage_offset=None) -> Tensor(a)",   \
    "CPU, Sim, CUDA", View, Exact, Any, Torch, "T[4, 6]; [3, 3]; [6, 2]; 1")                                           \
  /* a small GPT's activations and randint_like's low overload (issue 42) */                                           \
  _(gelu, "aten::gelu(Tensor self, *, int approximate=0) -> Tensor", "CPU, Sim, CUDA", Unary, DeviceMath, Any, NN,     \
    "T[4, 33]")                                                                                                        \
  _(gelu_backward, "aten::gelu_backward(Tensor grad_output, Tensor self, *, int approximate=0) -> Tensor",             \
    "CPU, Sim, CUDA", Binary, DeviceMath, Any, Hidden, "T[4, 33]; T[4, 33]")                                           \
  _(silu, "aten::silu(Tensor self) -> Tensor", "CPU, Sim, CUDA", Unary, DeviceMath, Any, NN, "T[4, 33]")               \
  _(silu_backward, "aten::silu_backward(Tensor grad_output, Tensor self) -> Tensor", "CPU, Sim, CUDA", Binary,         \
    DeviceMath, Any, Hidden, "T[4, 33]; T[4, 33]")                                                                     \
  _(randint_like_low,                                                                                                  \
    "aten::randint_like.low_dtype(Tensor self, int low, int high, *, ScalarType? dtype=None, Device? device=None) -> " \
    "Tensor",                                                                                                          \
    "CompositeImplicitAutograd", Factory, Exact, Any, Torch, "T[4, 33]; -3; 5")                                        \
  /* collectives: c10d's ops, whose kernels hand the work to a process group (Note [Collectives are c10d ops]) */      \
  _(c10d_allreduce_,                                                                                                   \
    "c10d::allreduce_(Tensor[] tensors, int process_group, int reduce_op, Tensor? sparse_indices, bool "               \
    "async_op=True, int timeout=-1) -> int",                                                                           \
    "CPU, Sim, CUDA", Collective, Exact, Any, Hidden, "")                                                              \
  _(c10d_broadcast_,                                                                                                   \
    "c10d::broadcast_(Tensor[] tensors, int process_group, int root_rank, int root_tensor, bool async_op=True, int "   \
    "timeout=-1) -> int",                                                                                              \
    "CPU, Sim, CUDA", Collective, Exact, Any, Hidden, "")                                                              \
  _(c10d_allgather_,                                                                                                   \
    "c10d::allgather_(Tensor[] output_tensors, Tensor[] input_tensors, int process_group, bool async_op=True, int "    \
    "timeout=-1) -> int",                                                                                              \
    "CPU, Sim, CUDA", Collective, Exact, Any, Hidden, "")                                                              \
  _(c10d_reduce_scatter_,                                                                                              \
    "c10d::reduce_scatter_(Tensor[] output_tensors, Tensor[] input_tensors, int process_group, int reduce_op, bool "   \
    "async_op=True, int timeout=-1) -> int",                                                                           \
    "CPU, Sim, CUDA", Collective, Exact, Any, Hidden, "")                                                              \
  _(c10d_barrier,                                                                                                      \
    "c10d::barrier(Tensor tensor, int process_group, int[] device_ids, bool async_op=True, int timeout=-1) -> int",    \
    "CPU, Sim, CUDA", Collective, Exact, Any, Hidden, "")
// clang-format on

// Note [Collectives are c10d ops]
// ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
// PyTorch defines its collectives as operators of the c10d namespace
// (torch/csrc/distributed/c10d/Ops.cpp, TORCH_LIBRARY(c10d)), with kernels
// at CPU, CUDA and PrivateUse1: torch.distributed.all_reduce(t) calls
// c10d::allreduce_ through the dispatcher, which computes the key set of
// its tensors, and the kernel of the backend key (CUDA for a CUDA tensor)
// asks the process group for its backend of that device type
// (getBackend(DeviceType::CUDA)), which makes the call: ProcessGroupNCCL
// or ProcessGroupMPI. A group with no backend for the device raises "No
// backend type associated with device type cpu". descent's last five rows
// are those operators (floors/distributed/c10d_kernels.cpp has their
// kernels, at CPU, Sim and CUDA, Sim standing where PrivateUse1 does), and
// they differ from PyTorch's schemas (tests/python/data/torch_c10d_facts_h200.txt)
// where descent lacks the type, and in what the kernels read:
// - process_group is an int, the group's id (0: the default group, the only
//   one descent has), where PyTorch passes a ProcessGroup object;
// - reduce_op is an int, c10d's RedOpType (SUM 0, AVG 1, PRODUCT 2, MIN 3,
//   MAX 4), where PyTorch passes a ReduceOp object holding one;
// - the result is an int, the handle of the Work (kept in c10d_kernels.cpp),
//   where PyTorch returns (Tensor[], Work): the tensors are the caller's own;
// - allgather_'s output_tensors and reduce_scatter_'s input_tensors are one
//   Tensor[] (one input tensor a rank), where PyTorch's are Tensor[][].
// The kernels read neither async_op (a Work is always returned; the
// caller waits on it or not) nor timeout (the group's, given to
// init_process_group, bounds an mpi wait, Note [A collective times out],
// and an nccl collective's run, Note [NCCL's watchdog]).
// They have no derivative, as in PyTorch, whose autograd fallback runs them
// below autograd: their Autograd kernel records nothing.

enum class Op : uint16_t {
#define DESCENT_OP_ENUM(id, schema, dispatch, kind, exact, domain, module, sample) id,
  DESCENT_FORALL_OPS(DESCENT_OP_ENUM)
#undef DESCENT_OP_ENUM
      kNumOps
};
constexpr int kNumOps = int(Op::kNumOps);
static_assert(kNumOps == 168,
              "an op was added or removed: update this count, and the kernels will tell you what is missing");

// A row's kind and exactness at compile time (dispatcher.h's op_entry has
// every column at run time): for elementwise.h's checks of its functor
// tables against the rows and the CPU loops' grains (optimized.cpp).
constexpr OpKind op_kind(Op op) {
#define DESCENT_OP_KIND(id, schema, dispatch, kind, exact, domain, module, sample) OpKind::kind,
  constexpr OpKind kinds[] = {DESCENT_FORALL_OPS(DESCENT_OP_KIND)};
#undef DESCENT_OP_KIND
  return kinds[int(op)];
}
constexpr Exactness op_exactness(Op op) {
#define DESCENT_OP_EXACTNESS(id, schema, dispatch, kind, exact, domain, module, sample) Exactness::exact,
  constexpr Exactness exactness[] = {DESCENT_FORALL_OPS(DESCENT_OP_EXACTNESS)};
#undef DESCENT_OP_EXACTNESS
  return exactness[int(op)];
}

}  // namespace descent
