// The boxed CPU kernels of floor 5: check, broadcast, promote, allocate, run.
//
// [SECTION] Running a variant
// [SECTION] Elementwise
// [SECTION] Reductions
// [SECTION] Matrix product
// [SECTION] Copies
// [SECTION] Registration
//
// Each kernel reads its arguments from the stack in schema order (the op
// table in floors/dispatch/ops.h), opens a floor-5 span, and leaves its
// result on the stack. Views and factories live in views.cpp and factories.cpp.
#include <algorithm>
#include <cmath>
#include <cstring>

#include "floors/kernels/kernels.h"
#include "tracer/tracer.h"

namespace descent::kernels {

Variant& requested_variant() {
  thread_local Variant v = Variant::Auto;
  return v;
}
const char*& last_variant() {
  thread_local const char* v = "none";
  return v;
}

// Defined in views.cpp and factories.cpp.
void register_view_kernels(Registrar& r);
void register_factory_kernels(Registrar& r);

namespace {

// [SECTION] Running a variant ----------------------------------------------------

using trace::Floor;
using trace::ScopedSpan;

// Runs the optimized loop when it is wanted and applies, else the reference;
// records which ran on the span and in last_variant().
template <typename Opt, typename Ref>
void run_variant(ScopedSpan& span, Opt&& optimized, Ref&& reference) {
  const char* v = "optimized";
  if (!(want_optimized() && optimized())) {
    reference();
    v = "reference";
  }
  last_variant() = v;
  span.arg("variant", v);
}

void check_same_device(const char* op, const Tensor& a, const Tensor& b) {
  DESCENT_CHECK(a.device() == b.device(), Error, op,
                "(): Expected all tensors to be on the same device, but found at least two devices, ", a.device().str(),
                " and ", b.device().str(), "!");
}

void begin(ScopedSpan& span, const Tensor& out) {
  if (!span.active()) return;
  span.arg("dtype", dtype_name(out.dtype()));
  span.arg("numel", out.numel());
}

// [SECTION] Elementwise ------------------------------------------------------------

bool float_only(Op op) { return op == Op::exp || op == Op::log || op == Op::sqrt || op == Op::sigmoid || op == Op::tanh; }

void unary_kernel(const OpEntry& op, DispatchKeySet, Stack& s) {
  ScopedSpan span(Floor::Kernels, op.name);
  Tensor x = s[0].to_tensor();
  DESCENT_CHECK(!(op.id == Op::neg && x.dtype() == ScalarType::Bool), Error,
                "Negation, the `-` operator, on a bool tensor is not supported. If you are trying to invert a mask, "
                "use the `~` or `logical_not()` operator instead.");
  if (float_only(op.id) && !is_floating(x.dtype())) x = cast(x, kDefaultFloat);
  Tensor out = empty_tensor(x.sizes(), x.dtype(), x.device());
  begin(span, out);
  run_variant(span, [&] { return optimized_unary(op.id, x, out); }, [&] { reference_unary(op.id, x, out); });
  s.set_result(std::move(out));
}

void binary_kernel(const OpEntry& op, DispatchKeySet, Stack& s) {
  ScopedSpan span(Floor::Kernels, op.name);
  const Tensor& a = s[0].to_tensor();
  const Tensor& b = s[1].to_tensor();
  check_same_device(op.name, a, b);
  ScalarType ct = result_type(a, b);
  DESCENT_CHECK(!(op.id == Op::sub && ct == ScalarType::Bool), Error,
                "Subtraction, the `-` operator, with two bool tensors is not supported. Use the `^` or "
                "`logical_xor()` operator instead.");
  if (op.id == Op::div && !is_floating(ct)) ct = kDefaultFloat;  // true division
  Scalar alpha = op.schema.args.size() > 2 ? s[2].to_scalar() : Scalar(int64_t{1});
  DESCENT_CHECK(!(alpha.is_floating() && !is_floating(ct)), Error, op.name,
                "(): For integral input tensors, argument alpha must not be a floating point number.");
  visit_dtype(ct, [&]<typename T>() { (void)alpha.to<T>(op.name, "alpha"); });  // Note [Checked scalar conversion]
  DimVector shape = broadcast_shapes(a.sizes(), b.sizes(), op.name);
  Operand ca(a, ct, shape), cb(b, ct, shape);
  Tensor out = empty_tensor(shape, ct, a.device());
  begin(span, out);
  run_variant(span, [&] { return optimized_binary(op.id, ca.get(), cb.get(), out, alpha); },
              [&] { reference_binary(op.id, ca.get(), cb.get(), out, alpha); });
  s.set_result(std::move(out));
}

void compare_kernel(const OpEntry& op, DispatchKeySet, Stack& s) {
  ScopedSpan span(Floor::Kernels, op.name);
  const Tensor& a = s[0].to_tensor();
  const Tensor& b = s[1].to_tensor();
  check_same_device(op.name, a, b);
  ScalarType ct = result_type(a, b);
  DimVector shape = broadcast_shapes(a.sizes(), b.sizes(), op.name);
  Operand ca(a, ct, shape), cb(b, ct, shape);
  Tensor out = empty_tensor(shape, ScalarType::Bool, a.device());
  begin(span, out);
  reference_compare(op.id, ca.get(), cb.get(), out);  // one loop only: comparisons are not a hot path
  last_variant() = "reference";
  span.arg("variant", "reference");
  s.set_result(std::move(out));
}

// [SECTION] Reductions ------------------------------------------------------------

// Which dims `dims` names (all of them when None or empty); raises on repeats.
void reduced_mask(const char* op, const Tensor& x, const IValue& dims, bool* reduced) {
  std::fill(reduced, reduced + kMaxDims, dims.is_none() || dims.to_int_list().empty());
  if (dims.is_none()) return;
  for (int64_t d : dims.to_int_list()) {
    int w = wrap_dim(d, x.dim(), op);
    if (x.dim() == 0) continue;
    DESCENT_CHECK(!reduced[w], ValueError, op, "(): dim ", w, " appears multiple times in the list of dims");
    reduced[w] = true;
  }
}

DimVector keep_shape(const Tensor& x, const bool* reduced) {
  DimVector k = x.sizes();
  for (int d = 0; d < k.size(); ++d)
    if (reduced[d]) k[d] = 1;
  return k;
}

// The keepdim result, or a view of it without the reduced dims.
Tensor finish_reduction(const Tensor& keep, const bool* reduced, bool keepdim) {
  if (keepdim) return keep;
  DimVector sizes;
  for (int d = 0; d < keep.dim(); ++d)
    if (!reduced[d]) sizes.push_back(keep.sizes()[d]);
  return keep.as_strided(sizes, contiguous_strides(sizes), 0);
}

void sum_kernel(const OpEntry& op, DispatchKeySet, Stack& s) {
  ScopedSpan span(Floor::Kernels, op.name);
  const Tensor& x = s[0].to_tensor();
  bool reduced[kMaxDims];
  reduced_mask(op.name, x, s[1], reduced);
  ScalarType dt = is_floating(x.dtype()) ? x.dtype() : ScalarType::Int64;
  DESCENT_CHECK(op.id != Op::mean || is_floating(x.dtype()), Error,
                "mean(): could not infer output dtype. Input dtype must be either a floating point or complex dtype. "
                "Got: ", dtype_name(x.dtype()));
  Tensor keep = empty_tensor(keep_shape(x, reduced), dt, x.device());
  begin(span, keep);
  run_variant(span, [&] { return optimized_sum(x, keep, reduced); }, [&] { reference_sum(x, keep, reduced); });
  if (op.id == Op::mean) {
    int64_t count = keep.numel() == 0 ? 0 : x.numel() / keep.numel();
    visit_dtype(dt, [&]<typename T>() {
      T* y = keep.data<T>();
      for (int64_t i = 0; i < keep.numel(); ++i) y[i] = count ? y[i] / T(count) : T(NAN);
    });
  }
  s.set_result(finish_reduction(keep, reduced, s[2].to_bool()));
}

void max_kernel(const OpEntry& op, DispatchKeySet, Stack& s) {
  ScopedSpan span(Floor::Kernels, op.name);
  const Tensor& x = s[0].to_tensor();
  bool reduced[kMaxDims];
  if (op.id == Op::max) {
    DESCENT_CHECK(x.numel() > 0, ValueError, "max(): Expected reduction dim to be specified for input.numel() == 0. "
                  "Specify the reduction dim with the 'dim' argument.");
    std::fill(reduced, reduced + kMaxDims, true);
    Tensor keep = empty_tensor(keep_shape(x, reduced), x.dtype(), x.device());
    begin(span, keep);
    run_variant(span, [&] { return optimized_max(x, keep, reduced); },
                [&] { reference_max(x, keep, nullptr, reduced); });
    s.set_result(finish_reduction(keep, reduced, false));
    return;
  }
  int d = wrap_dim(s[1].to_int(), x.dim(), op.name);
  bool keepdim = s[2].to_bool();
  std::fill(reduced, reduced + kMaxDims, false);
  reduced[d] = x.dim() > 0;
  DESCENT_CHECK(x.dim() == 0 || x.sizes()[d] > 0, IndexError, "max(): Expected reduction dim ", d,
                " to have non-zero size.");
  Tensor keep = empty_tensor(keep_shape(x, reduced), x.dtype(), x.device());
  Tensor idx = empty_tensor(keep.sizes(), ScalarType::Int64, x.device());
  begin(span, keep);
  reference_max(x, keep, &idx, reduced);
  last_variant() = "reference";
  span.arg("variant", "reference");
  s.clear();
  s.push(finish_reduction(keep, reduced, keepdim));
  s.push(finish_reduction(idx, reduced, keepdim));
}

// [SECTION] Matrix product -------------------------------------------------------

// A view of the last two dims of `t` (already expanded to batch + [R, C]) as [B, R, C].
Tensor as_batched(const Tensor& t, int64_t batch) {
  int n = t.dim();
  if (n == 2) return t.as_strided({1, t.sizes()[0], t.sizes()[1]}, {0, t.strides()[0], t.strides()[1]}, t.offset());
  Tensor c = t.is_contiguous() ? t : call(Op::contiguous, t);
  return c.as_strided({batch, t.sizes()[n - 2], t.sizes()[n - 1]},
                      {t.sizes()[n - 2] * t.sizes()[n - 1], t.sizes()[n - 1], 1}, c.offset());
}

void matmul_kernel(const OpEntry& op, DispatchKeySet, Stack& s) {
  ScopedSpan span(Floor::Kernels, op.name);
  const Tensor& a = s[0].to_tensor();
  const Tensor& b = s[1].to_tensor();
  check_same_device(op.name, a, b);
  DESCENT_CHECK(a.dim() >= 1 && b.dim() >= 1, ValueError, "matmul(): both arguments to matmul need to be at least 1D, "
                "but they are ", a.dim(), "D and ", b.dim(), "D");
  ScalarType ct = result_type(a, b);
  DESCENT_CHECK(ct != ScalarType::Bool, Error, "matmul(): not implemented for 'bool' tensors");
  // 1-D operands become a row (self) or a column (other), removed again at the end.
  Tensor a2 = cast(a, ct), b2 = cast(b, ct);
  if (a.dim() == 1) a2 = a2.as_strided({1, a.sizes()[0]}, {0, a2.strides()[0]}, a2.offset());
  if (b.dim() == 1) b2 = b2.as_strided({b.sizes()[0], 1}, {b2.strides()[0], 0}, b2.offset());
  int na = a2.dim(), nb = b2.dim();
  const int64_t M = a2.sizes()[na - 2], K = a2.sizes()[na - 1], N = b2.sizes()[nb - 1];
  DESCENT_CHECK(K == b2.sizes()[nb - 2], ValueError, "matmul(): mat1 and mat2 shapes cannot be multiplied (", M, "x", K,
                " and ", b2.sizes()[nb - 2], "x", N, ")");
  DimVector ba, bb;
  for (int i = 0; i < na - 2; ++i) ba.push_back(a2.sizes()[i]);
  for (int i = 0; i < nb - 2; ++i) bb.push_back(b2.sizes()[i]);
  DimVector batch = broadcast_shapes(ba, bb, op.name);
  DimVector sa = batch, sb = batch, so = batch;
  sa.push_back(M), sa.push_back(K), sb.push_back(K), sb.push_back(N);
  int64_t B = numel_of(batch);
  Tensor A = as_batched(expand_to(a2, sa), B), Bm = as_batched(expand_to(b2, sb), B);
  Tensor out = empty_tensor({B, M, N}, ct, a.device());
  begin(span, out);
  run_variant(span,
              [&] {
                Tensor ca = A.is_contiguous() ? A : call(Op::contiguous, A);
                Tensor cb = Bm.is_contiguous() ? Bm : call(Op::contiguous, Bm);
                return optimized_matmul(ca, cb, out);
              },
              [&] { reference_matmul(A, Bm, out); });
  if (span.active() && std::strcmp(last_variant(), "optimized") == 0) span.arg("isa", matmul_isa());
  if (a.dim() > 1) so.push_back(M);
  if (b.dim() > 1) so.push_back(N);
  s.set_result(out.as_strided(so, contiguous_strides(so), 0));
}

// [SECTION] Copies --------------------------------------------------------------------

void copy_into(ScopedSpan& span, const Tensor& src, const Tensor& dst) {
  begin(span, dst);
  run_variant(span, [&] { return optimized_copy(src, dst); }, [&] { reference_copy(src, dst); });
}

void clone_kernel(const OpEntry& op, DispatchKeySet, Stack& s) {
  ScopedSpan span(Floor::Kernels, op.name);
  const Tensor& x = s[0].to_tensor();
  if (op.id == Op::contiguous && x.is_contiguous()) {
    span.arg("variant", "none (already contiguous)");
    last_variant() = "none";
    return;  // the result is the argument itself, already on the stack
  }
  Tensor out = empty_tensor(x.sizes(), x.dtype(), x.device());
  copy_into(span, x, out);
  s.set_result(std::move(out));
}

void to_kernel(const OpEntry& op, DispatchKeySet, Stack& s) {
  ScopedSpan span(Floor::Kernels, op.name);
  const Tensor& x = s[0].to_tensor();
  ScalarType dt = s[1].is_none() ? x.dtype() : s[1].to_scalar_type();
  Device dev = s[2].is_none() ? x.device() : s[2].to_device();
  DESCENT_CHECK(dev == x.device(), NotImplementedError, "to(): copying between devices (", x.device().str(), " -> ",
                dev.str(), ") arrives with the device floors");
  if (dt == x.dtype() && !s[3].to_bool()) {
    span.arg("variant", "none (same dtype)");
    last_variant() = "none";
    s.set_result(Tensor(x));
    return;
  }
  Tensor out = empty_tensor(x.sizes(), dt, dev);
  copy_into(span, x, out);
  s.set_result(std::move(out));
}

// The element range [first, last] a tensor touches in its storage.
std::pair<int64_t, int64_t> extent(const Tensor& t) {
  int64_t lo = t.offset(), hi = t.offset();
  for (int d = 0; d < t.dim(); ++d) {
    if (t.sizes()[d] == 0) return {0, -1};
    (t.strides()[d] < 0 ? lo : hi) += (t.sizes()[d] - 1) * t.strides()[d];
  }
  return {lo, hi};
}

// Two views of one storage whose ranges meet, unless they are the very same view.
bool partially_overlap(const Tensor& a, const Tensor& b) {
  if (a.storage() != b.storage() || a.dtype() != b.dtype()) return a.storage() == b.storage();
  if (a.offset() == b.offset() && a.sizes() == b.sizes() && a.strides() == b.strides()) return false;
  auto [a0, a1] = extent(a);
  auto [b0, b1] = extent(b);
  return a0 <= b1 && b0 <= a1;
}

void copy__kernel(const OpEntry& op, DispatchKeySet, Stack& s) {
  ScopedSpan span(Floor::Kernels, op.name);
  const Tensor& self = s[0].to_tensor();
  const Tensor& src = s[1].to_tensor();
  check_same_device(op.name, self, src);
  DimVector shape = broadcast_shapes(self.sizes(), src.sizes(), op.name);
  DESCENT_CHECK(shape == self.sizes(), ValueError, "copy_(): the source of shape ", src.shape_str(),
                " cannot be broadcast to the destination's shape ", self.shape_str());
  for (int d = 0; d < self.dim(); ++d)
    DESCENT_CHECK(self.strides()[d] != 0 || self.sizes()[d] <= 1, Error,
                  "copy_(): unsupported operation: more than one element of the written-to tensor refers to a single "
                  "memory location. Please clone() the tensor before performing the operation.");
  DESCENT_CHECK(!partially_overlap(self, src), Error,
                "copy_(): unsupported operation: some elements of the input tensor and the written-to tensor refer "
                "to a single memory location. Please clone() the tensor before performing the operation.");
  copy_into(span, expand_to(src, shape), self);
  s.set_result(Tensor(self));
}

}  // namespace

// [SECTION] Registration -----------------------------------------------------------

// The CPU kernel of each row of the op table, chosen by the row's kind.
BoxedKernel cpu_kernel(Op op, OpKind kind) {
  switch (kind) {
    case OpKind::Unary: return unary_kernel;
    case OpKind::Binary: return binary_kernel;
    case OpKind::Comparison: return compare_kernel;
    case OpKind::Matmul: return matmul_kernel;
    case OpKind::Reduction: return op == Op::sum || op == Op::mean ? sum_kernel : max_kernel;
    case OpKind::Copy: return op == Op::to ? to_kernel : op == Op::copy_ ? copy__kernel : clone_kernel;
    case OpKind::View:
    case OpKind::Factory: break;  // views.cpp, factories.cpp
  }
  return nullptr;
}

}  // namespace descent::kernels

namespace descent {

void register_cpu_kernels(Registrar& r) {
#define DESCENT_REGISTER_CPU(id, schema, kind, exact, domain, sample)                 \
  if (auto k = kernels::cpu_kernel(Op::id, OpKind::kind)) r.kernel(Op::id, DispatchKey::CPU, k);
  DESCENT_FORALL_OPS(DESCENT_REGISTER_CPU)
#undef DESCENT_REGISTER_CPU
  kernels::register_view_kernels(r);
  kernels::register_factory_kernels(r);
}

}  // namespace descent
