// Floor 5's boxed in-place kernels: add_, sub_, mul_, div_, copy_, fill_,
// zero_ and fill_.Tensor, which write into self after PyTorch's overlap,
// shape and dtype checks (Note [In-place ops]).
//
// [SECTION] The rules: overlap, shape, dtype
// [SECTION] The kernels
#include "floors/kernels/boxed.h"

namespace descent::kernels {

// [SECTION] The rules: overlap, shape, dtype -----------------------------------------------

// Note [In-place ops]
// ~~~~~~~~~~~~~~~~~~~
// add_, sub_, mul_, div_, copy_, fill_ and zero_ (Tensor(a!) self) write
// their result into self's own memory, through self's strides, so every view
// of that memory sees it, and return self. The loops are the out-of-place
// ones with `out` = self: an element of self is read (as the first operand)
// and written at the same position, so no temporary is needed. Before any
// write, PyTorch's checks, in PyTorch's order (TensorIterator's build):
//   1. memory overlap (ATen/MemoryOverlap.cpp): self may not have internal
//      overlap (two elements at one address: an expanded tensor), and each
//      input must be, relative to self, either
//        full     the very same elements in the same layout (x += x): allowed,
//                 each element is read before it is written;
//        none     byte ranges that do not meet (or another storage): allowed;
//        partial  ranges that meet otherwise (x[1:] += x[:-1]): refused, the
//                 result would depend on the loop's order;
//        too hard a layout with gaps or repeats (strided views), which
//                 PyTorch does not analyse and lets through: so do we.
//      fill_ and zero_ skip the check: writing one value is idempotent.
//   2. the shape: self's shape must be the broadcast shape ("output with
//      shape [2] doesn't match the broadcast shape [3, 2]");
//   3. the dtype: the ops compute in the promoted dtype of self and other,
//      which must be castable to self's (can_cast: "result type Float can't
//      be cast to the desired output type Long").
// When the promoted dtype is self's (nearly always) the loop writes into
// self; when it is wider (a float32 self += a float64 tensor) the loop runs
// in the wider dtype into a temporary that the copy loop casts into self, as
// the loops compute in one dtype. The ADInplaceOrView kernel above them then
// bumps self's version (Note [ADInplaceOrView], dispatch/inplace_or_view.cpp).

namespace {

enum class InternalOverlap { No, Yes, TooHard };
enum class OverlapStatus { Full, Partial, No, TooHard };

// Whether the elements tile a block of memory exactly, in some order of dims
// (PyTorch's is_non_overlapping_and_dense): sorted by stride, ignoring dims of
// size 0 or 1, each stride is the product of the sizes below it.
bool non_overlapping_and_dense(const Tensor& t) {
  int n = t.dim();
  if (n == 1) return t.sizes()[0] < 2 || t.strides()[0] == 1;
  auto before = [&](int a, int b) {  // dims of size 0 and 1 go last, the others by stride
    if (t.sizes()[a] < 2) return false;
    if (t.sizes()[b] < 2) return true;
    return t.strides()[a] < t.strides()[b];
  };
  int perm[kMaxDims];
  for (int i = 0; i < n; ++i) {  // insertion sort: at most kMaxDims dims
    int j = i;
    for (; j > 0 && before(i, perm[j - 1]); --j) perm[j] = perm[j - 1];
    perm[j] = i;
  }
  int64_t want = 1;
  for (int i = 0; i < n; ++i) {
    int64_t size = t.sizes()[perm[i]];
    if (size < 2) return true;
    if (t.strides()[perm[i]] != want) return false;
    want *= size;
  }
  return true;
}

InternalOverlap internal_overlap(const Tensor& t) {
  if (non_overlapping_and_dense(t)) return InternalOverlap::No;
  for (int d = 0; d < t.dim(); ++d)
    if (t.strides()[d] == 0 && t.sizes()[d] > 1) return InternalOverlap::Yes;
  return InternalOverlap::TooHard;
}

OverlapStatus overlap_status(const Tensor& a, const Tensor& b) {
  if (a.is_same(b)) return OverlapStatus::Full;
  if (a.numel() == 0 || b.numel() == 0) return OverlapStatus::No;
  if (!non_overlapping_and_dense(a) || !non_overlapping_and_dense(b)) return OverlapStatus::TooHard;
  if (a.storage() != b.storage()) return OverlapStatus::No;
  const char* a0 = static_cast<const char*>(a.data_ptr());
  const char* b0 = static_cast<const char*>(b.data_ptr());
  const char* a1 = a0 + a.numel() * int64_t(element_size(a.dtype()));
  const char* b1 = b0 + b.numel() * int64_t(element_size(b.dtype()));
  if (a0 == b0 && a1 == b1) return a.strides() == b.strides() ? OverlapStatus::Full : OverlapStatus::Partial;
  return a0 < b1 && b0 < a1 ? OverlapStatus::Partial : OverlapStatus::No;
}

void check_no_internal_overlap(const Tensor& self) {
  DESCENT_CHECK(internal_overlap(self) != InternalOverlap::Yes, Error,
                "unsupported operation: more than one element of the written-to tensor refers to a single memory "
                "location. Please clone() the tensor before performing the operation.");
}

void check_no_partial_overlap(const Tensor& self, const Tensor& input) {
  DESCENT_CHECK(overlap_status(self, input) != OverlapStatus::Partial, Error,
                "unsupported operation: some elements of the input tensor and the written-to tensor refer to a single "
                "memory location. Please clone() the tensor before performing the operation.");
}

// Step 2 of Note [In-place ops]: the inputs broadcast to self's shape, no larger.
void check_output_shape(const char* op, const Tensor& self, const Tensor& other) {
  DimVector shape = broadcast_shapes(self.sizes(), other.sizes(), op);
  DESCENT_CHECK(shape == self.sizes(), Error, "output with shape ", self.shape_str(),
                " doesn't match the broadcast shape ", shape.str());
}

Op functional_of(Op op) {
  switch (op) {
    case Op::add_:
      return Op::add;
    case Op::sub_:
      return Op::sub;
    case Op::mul_:
      return Op::mul;
    case Op::div_:
      return Op::div;
    default:
      throw Error("functional_of: not an in-place binary op");
  }
}

}  // namespace

// [SECTION] The kernels ------------------------------------------------------------------------

// add_, sub_, mul_, div_: Note [In-place ops].
void inplace_binary_kernel(const OpEntry& op, DispatchKeySet, Stack& s) {
  ScopedSpan span(Floor::Kernels, op.profiler_name);
  const Tensor& self = s[0].to_tensor();
  const Tensor& other = s[1].to_tensor();
  const Op f = functional_of(op.id);
  check_inplace_device(op.python_name, self, other);
  check_no_internal_overlap(self);
  check_no_partial_overlap(self, other);
  check_output_shape(op.python_name, self, other);
  ScalarType ct = result_type(self, other);
  if (f == Op::sub) check_sub(self, other);
  if (f == Op::div && !is_floating(ct)) ct = kDefaultFloat;  // true division
  DESCENT_CHECK(can_cast(ct, self.dtype()), Error, "result type ", type_word(ct),
                " can't be cast to the desired output type ", type_word(self.dtype()));
  Scalar alpha = op.schema.args.size() > 2 ? s[2].to_scalar() : Scalar(int64_t{1});
  DESCENT_CHECK(!(alpha.is_floating() && !is_floating(ct)), Error,
                "For integral input tensors, argument alpha must not be a floating point number.");
  visit_dtype(ct, [&]<typename T>() {
    (void)alpha.to<opmath_t<T>>(op.python_name, "alpha");
  });  // Note [Checked scalar conversion]
  Operand ca(self, ct, self.sizes()), cb(other, ct, self.sizes(), self.device());
  Tensor out = ct == self.dtype() ? self : empty_tensor(self.sizes(), ct, self.device());
  begin(span, self);
  loop_work(span, out, {&ca.unexpanded(), &cb.unexpanded()}, ct);
  run_loop(
      span, out, [&] { device::binary(f, ca.get(), cb.get(), out, alpha); },
      [&] { return optimized_binary(f, ca.get(), cb.get(), out, alpha); },
      [&] { reference_binary(f, ca.get(), cb.get(), out, alpha); });
  if (!out.is_same(self)) {
    ScopedSpan cast_span(Floor::Kernels, "cast into self");
    copy_into(cast_span, out, self);
  }
  s.set_result(Tensor(self));
}

void copy__kernel(const OpEntry& op, DispatchKeySet, Stack& s) {
  ScopedSpan span(Floor::Kernels, op.profiler_name);
  const Tensor& self = s[0].to_tensor();
  const Tensor& src = s[1].to_tensor();
  if (!(self.device() == src.device())) {  // Note [Copies between devices]: move src over, then copy there
    check_no_internal_overlap(self);
    check_output_shape(op.python_name, self, src);
    const bool direct = self.is_contiguous() && self.sizes() == src.sizes();  // the bytes land in self
    if (direct) {
      move_to(src, self.device(), self.dtype(), s[2].to_bool(), &self);
      span.arg("variant", "between devices");
      last_variant() = "between devices";
    } else {
      Tensor moved = move_to(src, self.device(), src.dtype(), s[2].to_bool());
      copy_into(span, expand_to(moved, self.sizes()), self);
    }
    s.set_result(Tensor(self));
    return;
  }
  // PyTorch's copy_ returns at once, before any overlap check, when src is
  // self or views the very same elements in the same layout and dtype
  // (copy_impl's is_same_data): an expanded x.copy_(x) is no error.
  const bool same_data = self.storage() == src.storage() && self.offset() == src.offset() &&
                         self.sizes() == src.sizes() && self.strides() == src.strides() && self.dtype() == src.dtype();
  if (same_data) {
    span.arg("variant", "none (same memory)");
    last_variant() = "none";
    s.set_result(Tensor(self));
    return;
  }
  check_no_internal_overlap(self);
  check_no_partial_overlap(self, src);
  check_output_shape(op.python_name, self, src);
  copy_into(span, expand_to(src, self.sizes()), self);
  s.set_result(Tensor(self));
}

// fill_ and zero_: one value into every element; no overlap check (Note [In-place ops]).
void fill__kernel(const OpEntry& op, DispatchKeySet, Stack& s) {
  ScopedSpan span(Floor::Kernels, op.profiler_name);
  const Tensor& self = s[0].to_tensor();
  Scalar value = op.id == Op::zero_ ? Scalar(int64_t{0}) : s[1].to_scalar();
  visit_dtype(self.dtype(), [&]<typename T>() { (void)value.to<T>(op.python_name, "value"); });
  begin(span, self);
  loop_work(span, self, {}, self.dtype(), 0);
  run_loop(
      span, self, [&] { device::fill(self, value); }, [&] { return optimized_fill(self, value); },
      [&] { reference_fill(self, value); });
  s.set_result(Tensor(self));
}

// aten::fill_.Tensor(self, value): value's one element into every element of
// self, as PyTorch's kernel (Fill.cpp) does it: value must be 0-d; on self's
// device it is copied in by aten::copy_, which broadcasts it (a clone of it
// first when it shares self's memory); from another device (a CPU number
// into a sim:0 or cuda:0 self) it is read by aten::item and filled.
void fill_tensor_kernel(const OpEntry& op, DispatchKeySet, Stack& s) {
  ScopedSpan span(Floor::Kernels, op.profiler_name);
  const Tensor& self = s[0].to_tensor();
  const Tensor& value = s[1].to_tensor();
  DESCENT_CHECK(value.dim() == 0, Error, "fill_ only supports 0-dimension value tensor but got tensor with ",
                value.dim(), " dimensions.");
  if (self.device() == value.device()) {
    call(Op::copy_, self, self.storage() == value.storage() ? call(Op::clone, value) : value);
    s.set_result(Tensor(self));
    return;
  }
  Stack read;
  read.push(value);
  call_boxed(Op::item, read);
  const Scalar v = read[0].to_scalar();
  visit_dtype(self.dtype(), [&]<typename T>() { (void)v.to<T>(op.python_name, "value"); });
  begin(span, self);
  loop_work(span, self, {}, self.dtype(), 0);
  run_loop(
      span, self, [&] { device::fill(self, v); }, [&] { return optimized_fill(self, v); },
      [&] { reference_fill(self, v); });
  s.set_result(Tensor(self));
}

}  // namespace descent::kernels
