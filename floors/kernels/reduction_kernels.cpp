// Floor 5's boxed reductions: sum and mean (every element or some dims),
// max and max.dim, and mse_loss, whose reduction is a call to one of them.
//
// [SECTION] Which dims are reduced
// [SECTION] The kernels
#include <algorithm>
#include <cmath>
#include <cstring>

#include "floors/kernels/boxed.h"

namespace descent::kernels {

namespace {

// [SECTION] Which dims are reduced ------------------------------------------------------

// Which dims `dims` names (all of them when None or empty); raises on repeats.
void reduced_mask(const char* op, const Tensor& x, const IValue& dims, bool* reduced) {
  std::fill(reduced, reduced + kMaxDims, dims.is_none() || dims.to_int_list().empty());
  if (dims.is_none()) return;
  for (int64_t d : dims.to_int_list()) {
    int w = wrap_dim(d, x.dim(), op);
    if (x.dim() == 0) continue;
    DESCENT_CHECK(!reduced[w], Error, "dim ", w, " appears multiple times in the list of dims");
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

// A reduction's work for the roofline (Note [A roofline for every kernel
// span], roofline.cpp): x read once, the kept values (and `extra` bytes of
// indices) written once, one FLOP per element of x when it is floating.
void reduction_work(ScopedSpan& span, const Tensor& x, const Tensor& keep, int64_t extra = 0) {
  record_work(span, nbytes(x) + nbytes(keep) + extra, is_floating(x.dtype()) ? x.numel() : 0);
}

}  // namespace

// [SECTION] The kernels -------------------------------------------------------------------

// aten::sum and aten::mean (every element; args self, dtype) and their
// dim overloads sum.dim_IntList and mean.dim (self, dim, keepdim, dtype).
// With a dtype the input is converted to it first, as PyTorch does.
void sum_kernel(const OpEntry& op, DispatchKeySet, Stack& s) {
  ScopedSpan span(Floor::Kernels, op.profiler_name);
  const bool by_dim = op.id == Op::sum_dim || op.id == Op::mean_dim;
  const bool mean = op.id == Op::mean || op.id == Op::mean_dim;
  const IValue& dtype = s[by_dim ? 3 : 1];
  Tensor x = s[0].to_tensor();
  bool reduced[kMaxDims];
  reduced_mask(op.python_name, x, by_dim ? s[1] : IValue(), reduced);
  DESCENT_CHECK(!mean || is_floating(dtype.is_none() ? x.dtype() : dtype.to_scalar_type()), Error,
                "mean(): could not infer output dtype. ", dtype.is_none() ? "Input" : "Optional",
                " dtype must be either a floating point or complex dtype. Got: ",
                type_word(dtype.is_none() ? x.dtype() : dtype.to_scalar_type()));
  if (!dtype.is_none()) x = cast(x, dtype.to_scalar_type());
  // Integers and bool sum into int64 (sum of an int32 tensor is int64), as
  // PyTorch's promote_integers does, unless a dtype was asked for: then the
  // sum is of that dtype, int32 wrapping in int32 (bool: descent still sums
  // it into int64).
  ScalarType dt =
      is_floating(x.dtype()) || (!dtype.is_none() && x.dtype() != ScalarType::Bool) ? x.dtype() : ScalarType::Int64;
  // A CPU mean of float16 or bfloat16 sums into float32, divides there and
  // rounds once, as PyTorch's mean_out does (a device divides in its own
  // loop, in float32 too: SumOut, device_reduce.h).
  const bool cpu_mean = mean && x.device().type == DeviceType::CPU;
  const bool via_float = cpu_mean && is_reduced_floating(dt);
  Tensor keep = empty_tensor(keep_shape(x, reduced), via_float ? ScalarType::Float32 : dt, x.device());
  begin(span, keep);
  reduction_work(span, x, keep);
  run_loop(
      span, keep, [&] { device::sum(x, keep, reduced, mean); }, [&] { return optimized_sum(x, keep, reduced); },
      [&] { reference_sum(x, keep, reduced); });
  if (cpu_mean) {
    int64_t count = keep.numel() == 0 ? 0 : x.numel() / keep.numel();
    visit_dtype(keep.dtype(), [&]<typename T>() {
      if constexpr (std::is_floating_point_v<T>) {
        T* y = keep.data<T>();
        for (int64_t i = 0; i < keep.numel(); ++i) y[i] = count ? y[i] / T(count) : T(NAN);
      }
    });
    if (via_float) keep = cast(keep, dt);
  }
  s.set_result(finish_reduction(keep, reduced, by_dim && s[2].to_bool()));
}

void max_kernel(const OpEntry& op, DispatchKeySet, Stack& s) {
  ScopedSpan span(Floor::Kernels, op.profiler_name);
  const Tensor& x = s[0].to_tensor();
  bool reduced[kMaxDims];
  if (op.id == Op::max) {
    DESCENT_CHECK(x.numel() > 0, Error,
                  "max(): Expected reduction dim to be specified for input.numel() == 0. "
                  "Specify the reduction dim with the 'dim' argument.");
    std::fill(reduced, reduced + kMaxDims, true);
    Tensor keep = empty_tensor(keep_shape(x, reduced), x.dtype(), x.device());
    begin(span, keep);
    reduction_work(span, x, keep);
    run_loop(
        span, keep, [&] { device::max(x, keep, nullptr, reduced); }, [&] { return optimized_max(x, keep, reduced); },
        [&] { reference_max(x, keep, nullptr, reduced); });
    s.set_result(finish_reduction(keep, reduced, false));
    return;
  }
  int d = wrap_dim(s[1].to_int(), x.dim(), op.python_name);
  bool keepdim = s[2].to_bool();
  std::fill(reduced, reduced + kMaxDims, false);
  reduced[d] = x.dim() > 0;
  DESCENT_CHECK(x.dim() == 0 || x.sizes()[d] > 0, IndexError, "max(): Expected reduction dim ", d,
                " to have non-zero size.");
  Tensor keep = empty_tensor(keep_shape(x, reduced), x.dtype(), x.device());
  Tensor idx = empty_tensor(keep.sizes(), ScalarType::Int64, x.device());
  begin(span, keep);
  reduction_work(span, x, keep, nbytes(idx));
  run_loop(
      span, keep, [&] { device::max(x, keep, &idx, reduced); }, [] { return false; },
      [&] { reference_max(x, keep, &idx, reduced); });
  s.clear();
  s.push(finish_reduction(keep, reduced, keepdim));
  s.push(finish_reduction(idx, reduced, keepdim));
}

// Note [argmax, argmin, all and any]
// ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
// Reductions to an index or a truth value, none differentiable (their
// results are int64 and bool: derivatives.yaml has no entry for them).
//   - argmax(self, dim=None, keepdim=False) and argmin: the position of the
//     first maximum (minimum) along dim; a NaN counts as the maximum and
//     the minimum, as in aten. With dim None, of self flattened by
//     aten::reshape (as aten's kernel calls it), and keepdim gives every dim
//     size 1. Bool has no kernel ("argmax_cpu" not implemented for 'Bool').
//     argmax runs on the devices by max.dim's loops (the same first maximum,
//     device_reduce.h), its values thrown away; argmin and the CPU's argmax
//     run the loop below; on a device argmin is argmax of the order reversed.
//   - all() and all.dim, any() and any.dim: whether every (some) element is
//     nonzero (NaN is); bool, but uint8 for a uint8 input, as aten keeps it.
//     Over no elements all is true and any false. On a device: ne(x, 0),
//     summed, compared with the count (every one) or 0 (some).
namespace {

// The decomposition of a reduction over one dim d of x into outer x n x
// inner elements (d = -1: all of x as one run of n), and x's element (o, k, i).
struct OneDim {
  int64_t outer = 1, n = 1, inner = 1;
  OneDim(const Tensor& x, int d) {
    if (d < 0 || x.dim() == 0) {
      n = x.numel();
      return;
    }
    n = x.sizes()[d];
    for (int k = d + 1; k < x.dim(); ++k) inner *= x.sizes()[k];
    outer = n * inner == 0 ? 0 : x.numel() / (n * inner);
  }
  int64_t at(const Tensor& x, int64_t o, int64_t k, int64_t i) const {
    return strided_offset((o * n + k) * inner + i, x.sizes(), x.strides());
  }
};

template <class T>
bool nonzero(T v) {
  if constexpr (is_reduced_float_v<T>)
    return float(v) != 0.0f;
  else
    return v != T(0);
}

// idx[o * inner + i]: the first maximum's (minimum's) position along the dim.
void arg_loop(const Tensor& x, int d, bool is_max, int64_t* idx) {
  const OneDim r(x, d);
  visit_dtype(x.dtype(), [&]<typename T>() {
    const T* p = x.data<T>();
    for (int64_t o = 0; o < r.outer; ++o)
      for (int64_t i = 0; i < r.inner; ++i) {
        int64_t best_k = 0;
        T best = p[r.at(x, o, 0, i)];
        for (int64_t k = 1; k < r.n && best == best; ++k) {  // a NaN, once found, stays
          const T v = p[r.at(x, o, k, i)];
          if ((is_max ? v > best : v < best) || v != v) best = v, best_k = k;
        }
        idx[o * r.inner + i] = best_k;
      }
  });
}

}  // namespace

void arg_kernel(const OpEntry& op, DispatchKeySet, Stack& s) {
  ScopedSpan span(Floor::Kernels, op.profiler_name);
  Tensor x = s[0].to_tensor();
  const bool is_max = op.id == Op::argmax, keepdim = s[2].to_bool();
  const bool cuda = x.device().type == DeviceType::CUDA;
  DESCENT_CHECK(x.dtype() != ScalarType::Bool, NotImplementedError, "\"", op.python_name, cuda ? "_cuda" : "_cpu",
                "\" not implemented for 'Bool'");
  if (!is_max && x.device().type != DeviceType::CPU) {
    // On a device, argmin is argmax of x with its order reversed, an exact map (Note [argmax, argmin, all and
    // any]): -x for floats (a NaN stays NaN), -1 - x for signed integers (~x, which wraps), 255 - x for uint8.
    const ScalarType t = x.dtype();
    const Tensor rev = is_floating(t) ? call(Op::neg, x)
                       : t == ScalarType::UInt8
                           ? call(Op::sub, scalar_tensor(Scalar(int64_t{255})), x, Scalar(int64_t{1}))
                           : call(Op::sub, scalar_tensor(Scalar(int64_t{-1})), x, Scalar(int64_t{1}));
    Stack m;
    m.push(rev), m.push(s[1]), m.push(s[2]);
    call_boxed(Op::argmax, m);
    return s.set_result(std::move(m[0]));
  }
  const int ndim = x.dim();
  int d = 0;
  if (s[1].is_none()) {
    DESCENT_CHECK(x.numel() > 0, IndexError, op.python_name,  // aten's TORCH_CHECK_INDEX
                  "(): Expected reduction dim to be specified for input.numel() == 0.");
    x = call(Op::reshape, x, DimVector{-1});
  } else {
    d = wrap_dim(s[1].to_int(), ndim, op.python_name);
    DESCENT_CHECK(ndim == 0 || x.sizes()[d] > 0, IndexError, op.python_name, "(): Expected reduction dim ", d,
                  " to have non-zero size.");
  }
  bool reduced[kMaxDims] = {};
  reduced[d] = x.dim() > 0;
  Tensor idx = empty_tensor(keep_shape(x, reduced), ScalarType::Int64, x.device());
  begin(span, idx);
  reduction_work(span, x, idx);
  run_loop(
      span, idx,
      [&] {
        Tensor values = empty_tensor(idx.sizes(), x.dtype(), x.device());
        device::max(x, values, &idx, reduced);
      },
      [] { return false; }, [&] { arg_loop(x, x.dim() ? d : -1, is_max, idx.data<int64_t>()); });
  if (s[1].is_none()) {
    const DimVector ones(std::vector<int64_t>(size_t(ndim), 1));
    s.set_result(keepdim ? idx.as_strided(ones, contiguous_strides(ones), 0) : idx.as_strided({}, {}, 0));
    return;
  }
  s.set_result(finish_reduction(idx, reduced, keepdim));
}

void all_any_kernel(const OpEntry& op, DispatchKeySet, Stack& s) {
  ScopedSpan span(Floor::Kernels, op.profiler_name);
  const Tensor& x = s[0].to_tensor();
  const bool is_all = op.id == Op::all || op.id == Op::all_dim, by_dim = op.id == Op::all_dim || op.id == Op::any_dim;
  bool reduced[kMaxDims];
  std::fill(reduced, reduced + kMaxDims, !by_dim);
  const int d = by_dim ? wrap_dim(s[1].to_int(), x.dim(), op.python_name) : -1;
  if (by_dim && x.dim() > 0) reduced[d] = true;
  const ScalarType dt = x.dtype() == ScalarType::UInt8 ? ScalarType::UInt8 : ScalarType::Bool;
  if (x.device().type != DeviceType::CPU) {  // on a device: count the nonzeros with ne and sum, compare the count
    const Tensor nz = call(Op::ne, x, scalar_tensor(Scalar(int64_t{0})));
    const bool one_dim = by_dim && x.dim() > 0;
    const Tensor count =
        one_dim ? call(Op::sum_dim, nz, DimVector{d}, s[2].to_bool(), IValue()) : call(Op::sum, nz, IValue());
    const int64_t n = one_dim ? x.sizes()[d] : x.numel();
    Tensor r =
        is_all ? call(Op::eq, count, scalar_tensor(Scalar(n))) : call(Op::gt, count, scalar_tensor(Scalar(int64_t{0})));
    if (dt == ScalarType::UInt8) r = call(Op::_to_copy, r, dt, IValue());
    return s.set_result(std::move(r));
  }
  Tensor keep = empty_tensor(keep_shape(x, reduced), dt, x.device());
  begin(span, keep);
  reduction_work(span, x, keep);
  run_variant(
      span, [] { return false; },
      [&] {
        const OneDim r(x, d);
        visit_dtype(x.dtype(), [&]<typename T>() {
          const T* p = x.data<T>();
          for (int64_t o = 0; o < r.outer; ++o)
            for (int64_t i = 0; i < r.inner; ++i) {
              bool v = is_all;
              for (int64_t k = 0; k < r.n && v == is_all; ++k) v = nonzero(p[r.at(x, o, k, i)]);
              if (dt == ScalarType::UInt8)
                keep.data<uint8_t>()[o * r.inner + i] = v;
              else
                keep.data<bool>()[o * r.inner + i] = v;
            }
        });
      });
  s.set_result(finish_reduction(keep, reduced, by_dim && s[2].to_bool()));
}

// aten::mse_loss(self, target, reduction=Mean): as PyTorch's kernel, the
// squared differences (a binary loop of MseF, elementwise.h: broadcast and
// promoted as a binary op, floats only: "mse_cpu" not implemented for
// 'Long'), then for reduction 1 or 2 aten::mean or aten::sum of them, called
// through the dispatcher, so the trace shows them beneath this kernel.
// PyTorch asserts reduction is 0, 1 or 2 (an internal assert); descent says
// so in words.
void mse_loss_kernel(const OpEntry& op, DispatchKeySet, Stack& s) {
  ScopedSpan span(Floor::Kernels, op.profiler_name);
  const Tensor& a = s[0].to_tensor();
  const Tensor& b = s[1].to_tensor();
  const int64_t reduction = s[2].to_int();
  DESCENT_CHECK(reduction >= 0 && reduction <= 2, Error,
                "mse_loss(): reduction must be 0 (none), 1 (mean) or 2 "
                "(sum), but got ",
                reduction);
  const Device dev = common_device(op.python_name, a, b);
  const ScalarType ct = result_type(a, b);
  DESCENT_CHECK(is_floating(ct), NotImplementedError, "\"mse_cpu\" not implemented for '", type_word(ct), "'");
  const DimVector shape = broadcast_shapes(a.sizes(), b.sizes(), op.python_name);
  Operand ca(a, ct, shape, dev), cb(b, ct, shape, dev);
  Tensor loss = empty_output(shape, ct, dev, {&ca.unexpanded(), &cb.unexpanded()});
  begin(span, loss);
  loop_work(span, loss, {&ca.unexpanded(), &cb.unexpanded()}, ct, 2);  // a difference and its square
  const Scalar one(int64_t{1});
  run_loop(
      span, loss, [&] { device::binary(op.id, ca.get(), cb.get(), loss, one); },
      [&] { return optimized_binary(op.id, ca.get(), cb.get(), loss, one); },
      [&] { reference_binary(op.id, ca.get(), cb.get(), loss, one); });
  if (reduction == 0) {
    s.set_result(std::move(loss));
    return;
  }
  const char* ran = last_variant();
  Tensor r = call(reduction == 1 ? Op::mean : Op::sum, loss, IValue());
  if (std::strcmp(ran, "optimized") != 0) last_variant() = ran;  // "optimized" only when both loops were
  s.set_result(std::move(r));
}

}  // namespace descent::kernels
