// Floor 5's boxed matrix products: mm, bmm, dot and mv, one batched product
// over views of their operands, and addmm, that product with an epilogue.
//
// [SECTION] One batched product
// [SECTION] mm, bmm, dot and mv
// [SECTION] addmm
#include <cstring>

#include "floors/kernels/boxed.h"
#include "floors/kernels/ladder/matmul_ladder.h"
#include "floors/kernels/cpu/matmul_rungs.h"

namespace descent::kernels {

namespace {

// [SECTION] One batched product ---------------------------------------------------------

// out[B, M, N] = A[B, M, K] x Bm[B, K, N] (views of the operands, any
// strides), in dtype ct on `dev`: the register tiles when they apply (Note
// [Register-blocked matmul]), else the reference loop, or the device's.
Tensor batched_product(ScopedSpan& span, const Tensor& A, const Tensor& Bm, ScalarType ct, Device dev) {
  Tensor out = empty_tensor({A.sizes()[0], A.sizes()[1], Bm.sizes()[2]}, ct, dev);
  begin(span, out);
  // A and B read once and C written once; a multiply and an add for each of the K terms of each output.
  const int64_t K = A.sizes()[2];
  record_work(span, (A.numel() + Bm.numel()) * int64_t(element_size(A.dtype())) + nbytes(out),
              is_floating(ct) ? 2 * out.numel() * K : 0);
  run_loop(
      span, out, [&] { device::matmul(A, Bm, out); },  // any strides (Note [Device matmul], device_reduce.h)
      [&] { return cpu_matmul(A, Bm, out); },          // the rung chosen (Note [Matmul rungs], matmul_rungs.cpp)
      [&] { reference_matmul(A, Bm, out); });
  // Every device names the rung that ran (Note [Matmul rungs], Note [The matmul ladder]):
  // the CPU its vector unit too, a GPU the kernel and why the rung asked for could not take it.
  if (dev.type == DeviceType::CPU) {
    const bool optimized = std::strcmp(last_variant(), "optimized") == 0;
    if (!optimized) last_matmul_rung() = "reference";
    span.arg("rung", last_matmul_rung());
    if (optimized) span.arg("isa", matmul_isa());
  } else if (span.active() && out.numel() > 0) {
    const device::RungRun& r = device::last_matmul_run();
    span.arg("rung", device::rung_name(r.rung));
    span.arg("kernel", r.kernel);
    if (!r.fallback.empty()) span.arg("rung_fallback", trace::intern(r.fallback));
    if (r.tf32) span.arg("math", "tf32");  // Note [TF32 matmul]
  }
  return out;
}

// bmm and mv have no dtype check of their own in PyTorch: their CPU kernels
// read the second operand as the first's type, and that read refuses it.
void check_read_as(const Tensor& a, const Tensor& b) {
  DESCENT_CHECK(a.dtype() == b.dtype(), Error, "expected scalar type ", type_word(a.dtype()), " but found ",
                type_word(b.dtype()));
}

}  // namespace

// [SECTION] mm, bmm, dot and mv -----------------------------------------------------------

// aten::mm, bmm, dot and mv: PyTorch's checks and messages for each, then
// one batched product out[B, M, N] = A[B, M, K] x Bm[B, K, N] over views of
// the operands (no copy), by the register tiles when they apply (Note
// [Register-blocked matmul]) or the reference loop. aten::matmul is a
// composite of these four (composites.cpp, Note [Composite ops decompose]).
// Two dtypes are refused, as PyTorch refuses them: a product does not promote.
void product_kernel(const OpEntry& op, DispatchKeySet ks, Stack& s) {
  ScopedSpan span(Floor::Kernels, op.profiler_name);
  const Tensor& a = s[0].to_tensor();
  const Tensor& b = s[1].to_tensor();
  if (op.id == Op::mm || op.id == Op::bmm)  // Note [Two device messages] (boxed.h)
    check_wrapper_devices(op, ks, {{"self", &a}, {"mat2", &b}});
  else
    check_same_device(op.python_name, a, b);
  switch (op.id) {
    case Op::mm:
      DESCENT_CHECK(a.dim() == 2, Error, "self must be a matrix");
      DESCENT_CHECK(b.dim() == 2, Error, "mat2 must be a matrix");
      DESCENT_CHECK(a.sizes()[1] == b.sizes()[0], Error, "mat1 and mat2 shapes cannot be multiplied (", a.sizes()[0],
                    "x", a.sizes()[1], " and ", b.sizes()[0], "x", b.sizes()[1], ")");
      DESCENT_CHECK(a.dtype() == b.dtype(), Error,
                    "expected m1 and m2 to have the same dtype, but got: ", type_meta_name(a.dtype()),
                    " != ", type_meta_name(b.dtype()));
      break;
    case Op::bmm:
      DESCENT_CHECK(a.dim() == 3, Error, "batch1 must be a 3D tensor");
      DESCENT_CHECK(b.dim() == 3, Error, "batch2 must be a 3D tensor");
      DESCENT_CHECK(a.sizes()[0] == b.sizes()[0] && a.sizes()[2] == b.sizes()[1], Error,  // common_checks_baddbmm_bmm
                    "Expected size for first two dimensions of batch2 tensor to be: [", a.sizes()[0], ", ",
                    a.sizes()[2], "] but got: [", b.sizes()[0], ", ", b.sizes()[1], "].");
      check_read_as(a, b);
      break;
    case Op::dot:
      DESCENT_CHECK(a.dim() == 1 && b.dim() == 1, Error, "1D tensors expected, but got ", a.dim(), "D and ", b.dim(),
                    "D tensors");
      DESCENT_CHECK(a.dtype() == b.dtype(), Error, "dot : expected both vectors to have same dtype, but found ",
                    type_word(a.dtype()), " and ", type_word(b.dtype()));
      DESCENT_CHECK(a.numel() == b.numel(), Error, "inconsistent tensor size, expected tensor [", a.numel(),
                    "] and src [", b.numel(), "] to have the same number of elements, but got ", a.numel(), " and ",
                    b.numel(), " elements respectively");
      break;
    case Op::mv:
      DESCENT_CHECK(a.dim() == 2 && b.dim() == 1, Error, "vector + matrix @ vector expected, got 1, ", a.dim(), ", ",
                    b.dim());
      DESCENT_CHECK(a.sizes()[1] == b.sizes()[0], Error, "size mismatch, got input (", a.sizes()[0], "), mat (",
                    a.sizes()[0], "x", a.sizes()[1], "), vec (", b.sizes()[0], ")");
      check_read_as(a, b);
      break;
    default:
      throw Error(str("product_kernel: ", op.name, " is not a matrix product"));
  }
  const ScalarType ct = result_type(a, b);
  DESCENT_CHECK(ct != ScalarType::Bool, Error, "\"", op.python_name, "\" not implemented for 'Bool'");
  const Tensor a2 = cast(a, ct), b2 = cast(b, ct);
  // Both operands as [B, M, K] and [B, K, N] views; an added dim has size 1
  // (its stride, 0, is never stepped).
  Tensor A, Bm;
  DimVector result;  // the op's own result shape: [] for dot
  const DimVector &sa = a2.strides(), &sb = b2.strides();
  switch (op.id) {
    case Op::mm:
      A = a2.as_strided({1, a2.sizes()[0], a2.sizes()[1]}, {0, sa[0], sa[1]}, a2.offset());
      Bm = b2.as_strided({1, b2.sizes()[0], b2.sizes()[1]}, {0, sb[0], sb[1]}, b2.offset());
      result = {a2.sizes()[0], b2.sizes()[1]};
      break;
    case Op::bmm:
      A = a2, Bm = b2;
      result = {a2.sizes()[0], a2.sizes()[1], b2.sizes()[2]};
      break;
    case Op::dot:
      A = a2.as_strided({1, 1, a2.sizes()[0]}, {0, 0, sa[0]}, a2.offset());
      Bm = b2.as_strided({1, b2.sizes()[0], 1}, {0, sb[0], 0}, b2.offset());
      break;
    default:  // mv
      A = a2.as_strided({1, a2.sizes()[0], a2.sizes()[1]}, {0, sa[0], sa[1]}, a2.offset());
      Bm = b2.as_strided({1, b2.sizes()[0], 1}, {0, sb[0], 0}, b2.offset());
      result = {a2.sizes()[0]};
      break;
  }
  const Tensor out = batched_product(span, A, Bm, ct, a.device());
  s.set_result(out.as_strided(result, contiguous_strides(result), 0));
}

// [SECTION] addmm ---------------------------------------------------------------------------

namespace {

// The elementwise loop of `f` (add or mul, elementwise.h) without a span of
// its own: the part of a kernel that runs after its main loop (addmm's
// epilogue), which reports that loop's variant. b may be a CPU scalar.
void elementwise_step(Op f, const Tensor& a, const Tensor& b, const Tensor& out, Scalar alpha) {
  if (out.device().type != DeviceType::CPU) return device::binary(f, a, b, out, alpha);
  if (!(want_optimized() && optimized_binary(f, a, b, out, alpha))) reference_binary(f, a, b, out, alpha);
}

// A 0-d CPU tensor of dtype t holding v (converted with Scalar's check): a
// Python number as the loops take it.
Tensor scalar_of(const Scalar& v, ScalarType t) {
  Tensor r = empty_tensor({}, t, Device{});
  visit_dtype(t, [&]<typename T>() { *r.data<T>() = v.to<T>(); });
  r.impl()->wrapped_number = true;
  return r;
}

}  // namespace

// aten::addmm(self, mat1, mat2, *, beta=1, alpha=1): beta * self + alpha *
// (mat1 @ mat2), self broadcast to the product's [n, p], with PyTorch's checks
// in its order (addmm's meta function, then the expand of self). The product
// is mm's loop, into the output; then, in place there, out = term + alpha *
// out by add's element function, where term is self (beta 1), beta * self
// (mul's), or nothing (beta 0: self is not read, so its NaNs do not spread,
// as PyTorch documents). PyTorch's CPU addmm hands all of it to a BLAS gemm,
// whose order of roundings differs: its values agree to the last bits, not
// bit for bit; the integer ones exactly (beta and alpha converted to int64
// as PyTorch converts them, truncated).
void addmm_kernel(const OpEntry& op, DispatchKeySet ks, Stack& s) {
  ScopedSpan span(Floor::Kernels, op.profiler_name);
  const Tensor& self = s[0].to_tensor();
  const Tensor& m1 = s[1].to_tensor();
  const Tensor& m2 = s[2].to_tensor();
  const Scalar beta = s[3].to_scalar(), alpha = s[4].to_scalar();
  check_wrapper_devices(op, ks, {{"self", &self}, {"mat1", &m1}, {"mat2", &m2}});  // Note [Two device messages]
  DESCENT_CHECK(self.dtype() == m2.dtype(), Error, "self and mat2 must have the same dtype, but got ",
                type_word(self.dtype()), " and ", type_word(m2.dtype()));
  DESCENT_CHECK(m1.dtype() == m2.dtype(), Error, "mat1 and mat2 must have the same dtype, but got ",
                type_word(m1.dtype()), " and ", type_word(m2.dtype()));
  DESCENT_CHECK(m1.dim() == 2, Error, "mat1 must be a matrix, got ", m1.dim(), "-D tensor");
  DESCENT_CHECK(m2.dim() == 2, Error, "mat2 must be a matrix, got ", m2.dim(), "-D tensor");
  const int64_t n = m1.sizes()[0], k = m1.sizes()[1], p = m2.sizes()[1];
  DESCENT_CHECK(k == m2.sizes()[0], Error, "mat1 and mat2 shapes cannot be multiplied (", n, "x", k, " and ",
                m2.sizes()[0], "x", p, ")");
  const ScalarType ct = m1.dtype();
  DESCENT_CHECK(ct != ScalarType::Bool, NotImplementedError, "\"addmm_impl_cpu_\" not implemented for 'Bool'");
  const Tensor term = call(Op::expand, self, DimVector{n, p});
  // beta and alpha as the loops take them, checked before anything runs (Note [Checked scalar conversion]).
  const Tensor beta_t = expand_to(scalar_of(beta, ct), {n, p}), alpha_t = expand_to(scalar_of(alpha, ct), {n, p});
  visit_dtype(ct, [&]<typename T>() { (void)alpha.to<opmath_t<T>>(op.python_name, "alpha"); });
  const DimVector &sa = m1.strides(), &sb = m2.strides();
  const Tensor A = m1.as_strided({1, n, k}, {0, sa[0], sa[1]}, m1.offset());
  const Tensor Bm = m2.as_strided({1, k, p}, {0, sb[0], sb[1]}, m2.offset());
  const Tensor prod = batched_product(span, A, Bm, ct, m1.device());
  Tensor out = prod.as_strided({n, p}, {p, 1}, 0);
  const Scalar one(int64_t{1});
  const double b = beta.to_double();
  if (b == 0) {  // alpha * product
    if (alpha.to_double() != 1) elementwise_step(Op::mul, out, alpha_t, out, one);
  } else {  // (beta * self) + alpha * product
    Tensor scaled = term;
    if (b != 1) {
      scaled = empty_tensor({n, p}, ct, m1.device());
      elementwise_step(Op::mul, term, beta_t, scaled, one);
    }
    elementwise_step(Op::add, scaled, out, out, alpha);
  }
  s.set_result(std::move(out));
}

}  // namespace descent::kernels
