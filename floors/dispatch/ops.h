// The op table: the one list of operators. Registration (floor 3), the
// binding (floor 2), the kernels (floor 5), the verifier and the tests all
// read it; nothing else lists the ops. See Note [One op table].
//
// Note [One op table]
// ~~~~~~~~~~~~~~~~~~~
// Each row is: C++ id, schema, kind, exactness, domain, sample call.
// - The schema is parsed once at start-up (schema.h). The binding parses
//   Python arguments against it, the dispatcher fills in defaults from it,
//   and an overload is a row whose name has a dot ("max.dim").
// - The kind says how the tests and the verifier build inputs for the op.
// - The exactness says what the verifier may claim when it runs the
//   reference and the optimized kernel on the same inputs: Exact means
//   bit-for-bit; Reordered means the optimized kernel sums in another order,
//   so the two agree within the bound of Note [Summation bound] (verifier.cpp).
// - The sample call is a small valid call, read by the verifier and the
//   tests: arguments separated by ';', where T[4, 6] is a random tensor of
//   the dtype under test, T[6, 4]^T the transposed (non-contiguous) view of
//   one, [1, 2] an int list, and numbers, None, True/False and dtype names
//   stand for themselves.
// The static_assert below makes adding a row without counting it an error.
#pragma once

#include <cstdint>

namespace descent {

enum class OpKind : uint8_t {
  Factory,     // no tensor input; BackendSelect picks the backend from `device`
  Unary,       // elementwise, one tensor
  Binary,      // elementwise, two tensors, broadcast and promoted
  Comparison,  // like Binary, result is bool
  Reduction,   // over some or all dimensions
  Matmul,      // matrix product
  View,        // new sizes/strides over the same storage, no element copied
  Copy,        // copies elements (dtype conversion, contiguous)
};
enum class Exactness : uint8_t { Exact, Reordered };
// Which inputs the tests feed the op: any real numbers, or positive ones (log, sqrt).
enum class Domain : uint8_t { Any, Positive };

#define DESCENT_FORALL_OPS(_)                                                                                                        \
  /* factories: the device argument picks the backend */                                                                             \
  _(empty, "empty(int[] size, *, ScalarType? dtype=None, Device? device=None) -> Tensor",                                            \
    Factory, Exact, Any, "[4, 6]")                                                                                                   \
  _(zeros, "zeros(int[] size, *, ScalarType? dtype=None, Device? device=None) -> Tensor",                                            \
    Factory, Exact, Any, "[4, 6]")                                                                                                   \
  _(ones, "ones(int[] size, *, ScalarType? dtype=None, Device? device=None) -> Tensor",                                              \
    Factory, Exact, Any, "[4, 6]")                                                                                                   \
  _(full, "full(int[] size, Scalar fill_value, *, ScalarType? dtype=None, Device? device=None) -> Tensor",                           \
    Factory, Exact, Any, "[4, 6]; 2.5")                                                                                              \
  _(arange, "arange(Scalar end, *, ScalarType? dtype=None, Device? device=None) -> Tensor",                                          \
    Factory, Exact, Any, "10")                                                                                                       \
  _(arange_start, "arange.start(Scalar start, Scalar end, Scalar step=1, *, ScalarType? dtype=None, Device? device=None) -> Tensor", \
    Factory, Exact, Any, "1; 7.5; 0.5")                                                                                              \
  _(rand, "rand(int[] size, *, ScalarType? dtype=None, Device? device=None) -> Tensor",                                              \
    Factory, Exact, Any, "[4, 33]")                                                                                                  \
  _(randn, "randn(int[] size, *, ScalarType? dtype=None, Device? device=None) -> Tensor",                                            \
    Factory, Exact, Any, "[4, 33]")                                                                                                  \
  /* elementwise, two inputs: broadcast and promoted */                                                                              \
  _(add, "add(Tensor self, Tensor other, *, Scalar alpha=1) -> Tensor",                                                              \
    Binary, Exact, Any, "T[4, 33]; T[4, 33]")                                                                                        \
  _(sub, "sub(Tensor self, Tensor other, *, Scalar alpha=1) -> Tensor",                                                              \
    Binary, Exact, Any, "T[4, 33]; T[4, 33]")                                                                                        \
  _(mul, "mul(Tensor self, Tensor other) -> Tensor",                                                                                 \
    Binary, Exact, Any, "T[4, 33]; T[4, 33]")                                                                                        \
  _(div, "div(Tensor self, Tensor other) -> Tensor",                                                                                 \
    Binary, Exact, Any, "T[4, 33]; T[4, 33]")                                                                                        \
  _(pow, "pow(Tensor self, Tensor exponent) -> Tensor",                                                                              \
    Binary, Exact, Positive, "T[4, 33]; T[4, 33]")                                                                                   \
  _(eq, "eq(Tensor self, Tensor other) -> Tensor",                                                                                   \
    Comparison, Exact, Any, "T[4, 33]; T[4, 33]")                                                                                    \
  _(lt, "lt(Tensor self, Tensor other) -> Tensor",                                                                                   \
    Comparison, Exact, Any, "T[4, 33]; T[4, 33]")                                                                                    \
  _(gt, "gt(Tensor self, Tensor other) -> Tensor",                                                                                   \
    Comparison, Exact, Any, "T[4, 33]; T[4, 33]")                                                                                    \
  _(ne, "ne(Tensor self, Tensor other) -> Tensor",                                                                                   \
    Comparison, Exact, Any, "T[4, 33]; T[4, 33]")                                                                                    \
  _(le, "le(Tensor self, Tensor other) -> Tensor",                                                                                   \
    Comparison, Exact, Any, "T[4, 33]; T[4, 33]")                                                                                    \
  _(ge, "ge(Tensor self, Tensor other) -> Tensor",                                                                                   \
    Comparison, Exact, Any, "T[4, 33]; T[4, 33]")                                                                                    \
  /* elementwise, one input */                                                                                                       \
  _(neg, "neg(Tensor self) -> Tensor",                                                                                               \
    Unary, Exact, Any, "T[4, 33]")                                                                                                   \
  _(abs, "abs(Tensor self) -> Tensor",                                                                                               \
    Unary, Exact, Any, "T[4, 33]")                                                                                                   \
  _(exp, "exp(Tensor self) -> Tensor",                                                                                               \
    Unary, Exact, Any, "T[4, 33]")                                                                                                   \
  _(log, "log(Tensor self) -> Tensor",                                                                                               \
    Unary, Exact, Positive, "T[4, 33]")                                                                                              \
  _(sqrt, "sqrt(Tensor self) -> Tensor",                                                                                             \
    Unary, Exact, Positive, "T[4, 33]")                                                                                              \
  _(relu, "relu(Tensor self) -> Tensor",                                                                                             \
    Unary, Exact, Any, "T[4, 33]")                                                                                                   \
  _(sigmoid, "sigmoid(Tensor self) -> Tensor",                                                                                       \
    Unary, Exact, Any, "T[4, 33]")                                                                                                   \
  _(tanh, "tanh(Tensor self) -> Tensor",                                                                                             \
    Unary, Exact, Any, "T[4, 33]")                                                                                                   \
  /* reductions */                                                                                                                   \
  _(sum, "sum(Tensor self, int[]? dim=None, bool keepdim=False) -> Tensor",                                                          \
    Reduction, Reordered, Any, "T[4, 33]; [1]")                                                                                      \
  _(mean, "mean(Tensor self, int[]? dim=None, bool keepdim=False) -> Tensor",                                                        \
    Reduction, Reordered, Any, "T[4, 33]; [1]")                                                                                      \
  _(max, "max(Tensor self) -> Tensor",                                                                                               \
    Reduction, Exact, Any, "T[4, 33]")                                                                                               \
  _(max_dim, "max.dim(Tensor self, int dim, bool keepdim=False) -> (Tensor values, Tensor indices)",                                 \
    Reduction, Exact, Any, "T[4, 33]; 1")                                                                                            \
  /* matrix product */                                                                                                               \
  _(matmul, "matmul(Tensor self, Tensor other) -> Tensor",                                                                           \
    Matmul, Exact, Any, "T[17, 23]; T[23, 19]")                                                                                      \
  /* views: new sizes and strides over the same storage */                                                                           \
  _(view, "view(Tensor self, int[] size) -> Tensor",                                                                                 \
    View, Exact, Any, "T[4, 6]; [6, 4]")                                                                                             \
  _(reshape, "reshape(Tensor self, int[] shape) -> Tensor",                                                                          \
    View, Exact, Any, "T[4, 6]^T; [-1]")                                                                                             \
  _(transpose, "transpose(Tensor self, int dim0, int dim1) -> Tensor",                                                               \
    View, Exact, Any, "T[4, 6]; 0; 1")                                                                                               \
  _(permute, "permute(Tensor self, int[] dims) -> Tensor",                                                                           \
    View, Exact, Any, "T[2, 3, 4]; [2, 0, 1]")                                                                                       \
  _(expand, "expand(Tensor self, int[] size) -> Tensor",                                                                             \
    View, Exact, Any, "T[4, 1]; [3, 4, 6]")                                                                                          \
  _(slice, "slice(Tensor self, int dim=0, int? start=None, int? end=None, int step=1) -> Tensor",                                    \
    View, Exact, Any, "T[4, 6]; 1; 1; 5; 2")                                                                                         \
  _(select, "select(Tensor self, int dim, int index) -> Tensor",                                                                     \
    View, Exact, Any, "T[4, 6]; 0; 2")                                                                                               \
  _(unsqueeze, "unsqueeze(Tensor self, int dim) -> Tensor",                                                                          \
    View, Exact, Any, "T[4, 6]; 1")                                                                                                  \
  /* copies */                                                                                                                       \
  _(contiguous, "contiguous(Tensor self) -> Tensor",                                                                                 \
    Copy, Exact, Any, "T[4, 6]^T")                                                                                                   \
  _(clone, "clone(Tensor self) -> Tensor",                                                                                           \
    Copy, Exact, Any, "T[4, 6]")                                                                                                     \
  _(to, "to(Tensor self, ScalarType? dtype=None, Device? device=None, bool copy=False) -> Tensor",                                   \
    Copy, Exact, Any, "T[4, 6]; float64")                                                                                            \
  _(copy_, "copy_(Tensor self, Tensor src) -> Tensor",                                                                               \
    Copy, Exact, Any, "T[4, 6]; T[6, 1]^T")

enum class Op : uint16_t {
#define DESCENT_OP_ENUM(id, schema, kind, exact, domain, sample) id,
  DESCENT_FORALL_OPS(DESCENT_OP_ENUM)
#undef DESCENT_OP_ENUM
      kNumOps
};
constexpr int kNumOps = int(Op::kNumOps);
static_assert(kNumOps == 44, "an op was added or removed: update this count, and the kernels will tell you what is missing");

}  // namespace descent
