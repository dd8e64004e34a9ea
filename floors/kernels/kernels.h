// Floor 5, the kernels: shared pieces of the CPU kernels.
//
// [SECTION] Variants: reference or optimized
// [SECTION] Shapes: broadcasting and strided offsets
// [SECTION] Cascade summation
// [SECTION] Type promotion
// [SECTION] The loops (reference.cpp, optimized.cpp)
// [SECTION] Device loops (sim_kernels.cpp, cuda_elementwise.cu)
// [SECTION] Registration
//
// A boxed CPU kernel (boxed.h, by family) checks its arguments, broadcasts,
// promotes, asks floor 6 for the output, then runs one of two loops: the
// reference loop (plain strided loops, written for reading) or the optimized
// one (contiguous fast paths), when its preconditions hold.
#pragma once

#include <initializer_list>
#include <string>
#include <string_view>
#include <vector>

#include "floors/core/tensor.h"
#include "floors/dispatch/dispatcher.h"
#include "floors/dispatch/library.h"
#include "floors/kernels/elementwise.h"  // ClampBounds

namespace descent::kernels {

// [SECTION] Variants ------------------------------------------------------------

enum class Variant : uint8_t {
  Auto,       // the optimized loop when it applies, else the reference
  Reference,  // always the reference loop
  Optimized,  // the optimized loop when it applies (same as Auto), for the verifier
};
// The variant this thread asks for; Auto by default.
Variant& requested_variant();
// Which loop the last kernel on this thread ran: "reference" or "optimized".
const char*& last_variant();

// RAII: runs a scope with a given variant requested.
struct VariantGuard {
  explicit VariantGuard(Variant v) : saved(requested_variant()) { requested_variant() = v; }
  ~VariantGuard() { requested_variant() = saved; }
  Variant saved;
};
inline bool want_optimized() { return requested_variant() != Variant::Reference; }

// [SECTION] Shapes --------------------------------------------------------------

// The broadcast of two shapes, PyTorch's rule: align from the right; sizes
// must be equal or one of them 1. Raises RuntimeError naming `op`.
DimVector broadcast_shapes(const DimVector& a, const DimVector& b, const char* op);
// A view of `t` with `sizes` (broadcasting): stride 0 where t has size 1 or no dim.
Tensor expand_to(const Tensor& t, const DimVector& sizes);
// The sizes `req` with one -1 inferred from numel; RuntimeError naming `op` on a
// bad shape (views.cpp; view and the reshape composite share it).
DimVector infer_size(const char* op, const DimVector& req, int64_t numel);
// Strides that let `sizes` view memory laid out as (old_sizes, old_strides),
// or false when none do (PyTorch's computeStride; views.cpp).
bool view_strides(const DimVector& old_sizes, const DimVector& old_strides, const DimVector& sizes, DimVector* out);

// The strides of an elementwise op's fresh output of `shape`: its inputs'
// memory order, as PyTorch's TensorIterator chooses it (Note [Output strides
// follow the inputs], layout.cpp); contiguous when they all are.
DimVector output_strides(const DimVector& shape, std::initializer_list<const Tensor*> inputs);
// An uninitialised output of `shape` laid out by output_strides.
Tensor empty_output(const DimVector& shape, ScalarType dtype, Device device,
                    std::initializer_list<const Tensor*> inputs);

// Whether `t` covers one block of memory without gaps or overlaps, in some
// order of its dims (x.T, a permuted contiguous tensor): a sum of all of it
// is then a sum over that block, and an elementwise loop over operands laid
// out alike a loop over flat arrays (layout.cpp; the CPU's and the
// devices' sums both ask).
bool dense(const Tensor& t);

// Offset in elements of the element with row-major position `linear` in
// `sizes`, read through `strides`. The heart of every reference loop: it says
// in one place what Note [Views and strides] says in words.
inline int64_t strided_offset(int64_t linear, const DimVector& sizes, const DimVector& strides) {
  int64_t off = 0;
  for (int d = sizes.size() - 1; d >= 0; --d) {
    int64_t i = linear % sizes[d];
    linear /= sizes[d];
    off += i * strides[d];
  }
  return off;
}

// [SECTION] Cascade summation ----------------------------------------------------

// Note [Cascade summation] (reference.cpp) in numbers, shared by both sums and
// the verifier's bound (Note [Summation bound], verifier.cpp).
constexpr int64_t kSumBlock = 4;   // elements a block (a lane's block, optimized) adds in order
constexpr int64_t kSumLanes = 16;  // running totals side by side in the optimized sum (a power of two)
// Where the cascade over elements [lo, hi) of a sum splits, in units of
// `block` elements from lo: half the blocks (rounded down) on the left.
inline int64_t cascade_mid(int64_t lo, int64_t hi, int64_t block) {
  const int64_t blocks = (hi - lo + block - 1) / block;
  return lo + blocks / 2 * block;
}
// The most rounded additions any one of n elements goes through in either
// sum: n - 1, or kSumBlock - 1 in its block, plus ceil(log2(ceil(n /
// kSumBlock))) above it, plus log2(kSumLanes) joining the optimized lanes.
int64_t cascade_depth(int64_t n);

// [SECTION] Type promotion ------------------------------------------------------

// The dtype of a binary op's result, Note [Type promotion] (promotion.cpp).
ScalarType result_type(const Tensor& a, const Tensor& b);
// The same over n operands (cat's tensors; clamp's self and bounds).
ScalarType result_type(const Tensor* const* operands, int n);
// torch.promote_types: the dtype two tensors of dtypes a and b (both with
// dimensions) promote to: the higher category, then the larger dtype.
ScalarType promote_types_of(ScalarType a, ScalarType b);
// PyTorch's canCast: whether a result of dtype `from` may be written into a
// tensor of dtype `to` (not floating into integral or bool, not integral into bool).
bool can_cast(ScalarType from, ScalarType to);
// `t` converted to dtype (a dispatched `to` call; the same tensor when equal).
Tensor cast(const Tensor& t, ScalarType dtype);

// An input of an elementwise kernel in the computation dtype and the broadcast
// shape: `t` itself, borrowed, when it already is both (the common case: no
// reference count is touched, which is an atomic instruction each time), else
// a cast and/or broadcast view of it, held here. For a loop on a device
// (`dev` not the CPU) nothing is cast: the device loop converts as it loads,
// a CPU scalar's one value on the host, a device tensor's elements in the
// kernel (Note [A CPU scalar on a device op], device_loops.h), so no
// aten::to runs and no copy kernel is launched.
class Operand {
 public:
  Operand(const Tensor& t, ScalarType dtype, const DimVector& shape, Device dev = Device{}) : borrowed_(&t) {
    if (t.dtype() != dtype && dev.type == DeviceType::CPU) cast_ = cast(t, dtype);
    if (t.sizes() != shape) expanded_ = expand_to(unexpanded(), shape);
  }
  const Tensor& get() const { return expanded_.defined() ? expanded_ : unexpanded(); }
  // Before broadcasting: what the output's layout is chosen from (Note
  // [Output strides follow the inputs], layout.cpp).
  const Tensor& unexpanded() const { return cast_.defined() ? cast_ : *borrowed_; }

 private:
  const Tensor* borrowed_;
  Tensor cast_, expanded_;
};

// [SECTION] The loops --------------------------------------------------------------

// Elementwise: every operand already has out's sizes (inputs may be strided
// or broadcast views) and out's dtype. `out` may be strided too, and may be
// the first operand itself (in-place ops, Note [In-place ops] in inplace_kernels.cpp).
// `bounds` are clamp's (elementwise.h); the other unary ops ignore them.
void reference_unary(Op op, const Tensor& in, const Tensor& out, const ClampBounds& bounds = {});
void reference_binary(Op op, const Tensor& a, const Tensor& b, const Tensor& out, Scalar alpha);
void reference_compare(Op op, const Tensor& a, const Tensor& b, const Tensor& out);  // out is bool
void reference_copy(const Tensor& src, const Tensor& dst);  // src has dst's sizes; converts dtype
void reference_fill(const Tensor& out, Scalar value);       // value into every element, through out's strides
// Reductions: `keep` has in's rank with size 1 on reduced dims, and is the
// (keepdim) output. `reduced[d]` says whether dim d is reduced.
void reference_sum(const Tensor& in, const Tensor& keep, const bool* reduced);
void reference_max(const Tensor& in, const Tensor& keep, const Tensor* indices, const bool* reduced);
// Batched matrix product: a [B, M, K], b [B, K, N], out [B, M, N], any strides.
void reference_matmul(const Tensor& a, const Tensor& b, const Tensor& out);

// Each optimized loop returns false, doing nothing, when its preconditions
// (contiguity, shapes) do not hold; the caller then runs the reference loop.
bool optimized_unary(Op op, const Tensor& in, const Tensor& out, const ClampBounds& bounds = {});
bool optimized_binary(Op op, const Tensor& a, const Tensor& b, const Tensor& out, Scalar alpha);
bool optimized_copy(const Tensor& src, const Tensor& dst);
bool optimized_fill(const Tensor& out, Scalar value);
bool optimized_sum(const Tensor& in, const Tensor& keep, const bool* reduced);
bool optimized_max(const Tensor& in, const Tensor& keep, const bool* reduced);
// Register tiles as wide as the CPU's vectors (Note [Register-blocked matmul]).
bool optimized_matmul(const Tensor& a, const Tensor& b, const Tensor& out);
// The vector unit optimized_matmul uses: the widest this CPU has ("avx512",
// "avx2" or "sse2"; "generic" off x86-64), unless a narrower one was set.
const char* matmul_isa();
std::vector<std::string> matmul_isas();      // the ones this CPU can run, narrowest first
void set_matmul_isa(std::string_view name);  // ValueError naming the choices for any other
// BLIS's packed panels and an FMA microkernel (Note [Packed matmul]): a, b
// of any strides, float32 and float64, out contiguous; false without FMA.
bool packed_matmul(const Tensor& a, const Tensor& b, const Tensor& out);
// The CPU product by the rung chosen (Note [Matmul rungs]): a [B, M, K], b
// [B, K, N] of any strides; false, having run nothing, for the reference
// loop. Sets last_matmul_rung() (matmul_rungs.h) to the rung that ran.
bool cpu_matmul(const Tensor& a, const Tensor& b, const Tensor& out);

// [SECTION] Device loops -----------------------------------------------------------

// The loops for a tensor on sim:0 or cuda:N (Note [One kernel body, two
// devices], device_loops.h): operands as for the CPU loops above, on out's
// device, except that an input may also be a CPU scalar (one element, a
// Python number), which is read on the host and passed to the kernel by
// value. Each enqueues one kernel on the current stream of out's device and
// returns before it has run (Note [Streams and the two clocks], streams.h);
// nothing is launched for an empty output.
//
// Note [The device loops' table]
// ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
// DESCENT_DEVICE_LOOP_TABLE is the one place their signatures are written:
// X(name, (parameters), (arguments), the tensor whose device runs it). Each
// device's entry points (device::sim:: in sim_kernels.cpp, device::cuda:: in
// cuda_elementwise.cu, declared in device_loops.h), the choice between them
// (device:: here, sim_kernels.cpp) and the call of the builder
// (Build<Launch>::name, device_loops.h) are generated from it, so a loop added
// to the table and not to the builder fails to compile on both devices, and
// static_asserts hold each device's entry points to the table's types.
//   unary:    `bounds` are clamp's (ClampBounds{} for every other op)
//   compare:  out is bool; the inputs are compared in dtype ct
//   copy:     src has dst's sizes; converts dtype
//   arange:   into a contiguous out: start + i * step in double for a float
//             dtype, istart + i * istep (wrapping) otherwise
//   linspace: linspace(start, end, out.numel()) into a contiguous out of at
//             least 2 elements (LinspaceF, elementwise.h)
//   random:   rand (uniform in [0, 1)) or randn into a contiguous float out,
//             from counters offset, offset + 1, ...
#define DESCENT_DEVICE_LOOP_TABLE(X)                                                                                 \
  X(unary, (Op op, const Tensor& in, const Tensor& out, const ClampBounds& bounds), (op, in, out, bounds), out)      \
  X(binary, (Op op, const Tensor& a, const Tensor& b, const Tensor& out, Scalar alpha), (op, a, b, out, alpha), out) \
  X(compare, (Op op, const Tensor& a, const Tensor& b, const Tensor& out, ScalarType ct), (op, a, b, out, ct), out)  \
  X(copy, (const Tensor& src, const Tensor& dst), (src, dst), dst)                                                   \
  X(fill, (const Tensor& out, Scalar value), (out, value), out)                                                      \
  X(arange, (const Tensor& out, double start, double step, int64_t istart, int64_t istep),                           \
    (out, start, step, istart, istep), out)                                                                          \
  X(linspace, (const Tensor& out, const Scalar& start, const Scalar& end), (out, start, end), out)                   \
  X(random, (const Tensor& out, bool normal, uint64_t seed, uint64_t offset), (out, normal, seed, offset), out)
// A row's declaration, and its parenthesized arguments without the parentheses.
#define DESCENT_DEVICE_LOOP_DECLARE(name, params, args, dev) void name params;
#define DESCENT_UNPARENTHESIZE(...) __VA_ARGS__
namespace device {
DESCENT_DEVICE_LOOP_TABLE(DESCENT_DEVICE_LOOP_DECLARE)
inline void unary(Op op, const Tensor& in, const Tensor& out) { unary(op, in, out, ClampBounds{}); }
// The variant a device loop reports on the kernel span: "sim" or "cuda".
const char* variant(Device d);
// Reductions, the matrix product (device_reduce_matmul.cpp; Note [A reduction
// over blocks] and Note [Device matmul], device_reduce.h): the CPU loops'
// arguments; `mean` divides each sum by its count on the device.
void sum(const Tensor& in, const Tensor& keep, const bool* reduced, bool mean);
void max(const Tensor& in, const Tensor& keep, const Tensor* indices, const bool* reduced);
void matmul(const Tensor& a, const Tensor& b,
            const Tensor& out);  // a [B, M, K], b [B, K, N], any strides; out contiguous
}  // namespace device

}  // namespace descent::kernels

namespace descent {

// [SECTION] Registration ------------------------------------------------------

// Floor 5's libraries (libraries.cpp): the boxed kernels at CPU, Sim and
// (in a build with it) CUDA, then the composites at CompositeImplicitAutograd.
// Run once by register_floors (floors/registration.h, Note [Registering the floors]).
void register_kernels();
void register_backend_kernels(Library& m);    // register_kernels.cpp: CPU, Sim and CUDA alike
void register_composite_kernels(Library& m);  // composites.cpp

}  // namespace descent
