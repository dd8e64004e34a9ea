// Floor 5's kernels of elements kept, replaced or reordered by a condition:
// where, masked_fill, tril and triu (a condition on the element's
// position), and sort and topk (the order of the values).
// One strided CPU loop each, written as the reference loops are (every
// element found by strided_offset). On a device, where, masked_fill, tril
// and triu run by the device's own ops (Note [Masks on a device]); sort and
// topk on the host, their results copied back.
//
// Note [Masks on a device]
// ~~~~~~~~~~~~~~~~~~~~~~~~
// (sort and topk on a device copy the tensor to the host, sort it there,
// and copy the values and indices back.)
// On sim:0 and cuda:N these four kernels have no loop of their own yet:
// they write their result with ops that do, called through the dispatcher
// beneath the kernel's span (so a trace shows them): the result is a copy_
// of the "otherwise" values (other, or self), and index_put_ with the
// condition as a bool mask writes the chosen ones (self's values gathered
// by aten::index for where, the fill value for masked_fill, zeros for tril
// and triu, whose mask is arange(cols) - arange(rows)[:, None] compared
// with the diagonal). Every element is moved, never computed, so the device
// gives the CPU loop's bits (the verifier holds it so).
//
// [SECTION] where and masked_fill
// [SECTION] tril and triu
// [SECTION] sort and topk
// [SECTION] Registration
#include <algorithm>
#include <cmath>
#include <vector>

#include "floors/kernels/boxed.h"

namespace descent::kernels {

namespace {

// [SECTION] where and masked_fill -------------------------------------------------

// out[i] = cond[i] ? a[i] : b[i], every operand already of out's shape (expanded) and dtype.
void select_loop(const Tensor& cond, const Tensor& a, const Tensor& b, const Tensor& out) {
  visit_dtype(out.dtype(), [&]<typename T>() {
    const bool* c = cond.data<bool>();
    const T* pa = a.data<T>();
    const T* pb = b.data<T>();
    T* y = out.data<T>();
    for (int64_t i = 0; i < out.numel(); ++i) {
      const bool take = c[strided_offset(i, cond.sizes(), cond.strides())];
      y[strided_offset(i, out.sizes(), out.strides())] =
          take ? pa[strided_offset(i, a.sizes(), a.strides())] : pb[strided_offset(i, b.sizes(), b.strides())];
    }
  });
}

// out (of the condition's shape, on the device) with mask's positions set to
// `values` (a tensor of those positions' values, or a 0-d one for all of them).
void put_where(const Tensor& out, const Tensor& mask, const Tensor& values) {
  OptionalTensorList where;
  where.push_back(call(Op::expand, mask, out.sizes()));
  call(Op::index_put_, out, where, values, false);
}
// t on `dev` in dtype `dt` (a CPU scalar joining a device op is moved first).
Tensor on(const Tensor& t, ScalarType dt, Device dev) {
  return t.device() == dev && t.dtype() == dt ? t : call(Op::_to_copy, t, dt, dev);
}

// aten::where.self(condition, self, other): the three broadcast together,
// self and other promoted as a binary op's operands (where(c, x, 0.5) of an
// int64 x is float32); the condition must be bool, as aten's message says.
void where_kernel(const OpEntry& op, DispatchKeySet, Stack& s) {
  ScopedSpan span(Floor::Kernels, op.profiler_name);
  const Tensor& cond = s[0].to_tensor();
  const Tensor& a = s[1].to_tensor();
  const Tensor& b = s[2].to_tensor();
  DESCENT_CHECK(cond.dtype() == ScalarType::Bool, Error,
                "where expected condition to be a boolean tensor, but got a tensor with dtype ",
                type_word(cond.dtype()));
  Device dev = common_device(op.python_name, a, b);                      // a CPU scalar may join (where(c, x, 0))
  dev = common_device(op.python_name, cond, a.device() == dev ? a : b);  // and the condition's device, for two
  const ScalarType ct = result_type(a, b);
  const DimVector shape =
      broadcast_shapes(cond.sizes(), broadcast_shapes(a.sizes(), b.sizes(), op.python_name), op.python_name);
  if (dev.type != DeviceType::CPU) {  // Note [Masks on a device]
    Tensor out = empty_tensor(shape, ct, dev);
    call(Op::copy_, out, b, false);
    const Tensor mask = call(Op::expand, on(cond, ScalarType::Bool, dev), shape);
    OptionalTensorList chosen;
    chosen.push_back(mask);
    put_where(out, mask, call(Op::index, call(Op::expand, on(a, ct, dev), shape), chosen));
    return s.set_result(std::move(out));
  }
  Operand cc(cond, ScalarType::Bool, shape), ca(a, ct, shape), cb(b, ct, shape);
  Tensor out = empty_output(shape, ct, dev, {&ca.unexpanded(), &cb.unexpanded()});
  begin(span, out);
  loop_work(span, out, {&cc.unexpanded(), &ca.unexpanded(), &cb.unexpanded()}, ct, 0);
  run_variant(
      span, [] { return false; }, [&] { select_loop(cc.get(), ca.get(), cb.get(), out); });
  s.set_result(std::move(out));
}

// aten::masked_fill.Scalar(self, mask, value): self's elements, value where
// mask is true. As aten's out-of-place masked_fill, self and mask broadcast
// together (a [6] mask over a [4, 6] self); value is converted to self's
// dtype with Scalar's check (Note [Checked scalar conversion]).
void masked_fill_kernel(const OpEntry& op, DispatchKeySet, Stack& s) {
  ScopedSpan span(Floor::Kernels, op.profiler_name);
  const Tensor& self = s[0].to_tensor();
  const Tensor& mask = s[1].to_tensor();
  const Scalar value = s[2].to_scalar();
  DESCENT_CHECK(mask.dtype() == ScalarType::Bool, Error,
                "masked_fill_ only supports boolean masks, but got mask with dtype ", type_meta_name(mask.dtype()));
  const Device dev = common_device(op.python_name, self, mask);
  visit_dtype(self.dtype(), [&]<typename T>() { (void)value.to<T>(op.python_name, "value"); });
  const DimVector shape = broadcast_shapes(mask.sizes(), self.sizes(), op.python_name);
  if (dev.type != DeviceType::CPU) {  // Note [Masks on a device]
    Tensor out = empty_tensor(shape, self.dtype(), dev);
    call(Op::copy_, out, self, false);
    put_where(out, mask, on(scalar_tensor(value, false), self.dtype(), dev));
    return s.set_result(std::move(out));
  }
  Operand cm(mask, ScalarType::Bool, shape), cx(self, self.dtype(), shape);
  Tensor out = empty_tensor(shape, self.dtype(), dev);  // aten: a contiguous clone, then masked_fill_
  begin(span, out);
  loop_work(span, out, {&cm.unexpanded(), &cx.unexpanded()}, self.dtype(), 0);
  run_variant(
      span, [] { return false; },
      [&] {
        visit_dtype(out.dtype(), [&]<typename T>() {
          const T v = value.to<T>();
          const bool* m = cm.get().data<bool>();
          const T* x = cx.get().data<T>();
          T* y = out.data<T>();
          for (int64_t i = 0; i < out.numel(); ++i)
            y[i] =
                m[strided_offset(i, shape, cm.get().strides())] ? v : x[strided_offset(i, shape, cx.get().strides())];
        });
      });
  s.set_result(std::move(out));
}

// [SECTION] tril and triu ------------------------------------------------------------

// aten::tril(self, diagonal) and triu: over the last two dims (row i, column
// j), tril keeps the elements with j - i <= diagonal and triu those with
// j - i >= diagonal; the others are 0. Any dims before them are a batch. The
// result is a fresh contiguous tensor (aten keeps self's layout when it can).
void tril_kernel(const OpEntry& op, DispatchKeySet, Stack& s) {
  ScopedSpan span(Floor::Kernels, op.profiler_name);
  const Tensor& x = s[0].to_tensor();
  const int64_t k = s[1].to_int();
  const bool lower = op.id == Op::tril;
  DESCENT_CHECK(x.dim() >= 2, Error, lower ? "tril" : "triu", ": input tensor must have at least 2 dimensions");
  Tensor out = empty_tensor(x.sizes(), x.dtype(), x.device());
  begin(span, out);
  loop_work(span, out, {&x}, x.dtype(), 0);
  const int64_t rows = x.sizes()[x.dim() - 2], cols = x.sizes()[x.dim() - 1];
  if (x.device().type != DeviceType::CPU) {  // Note [Masks on a device]
    const Tensor r = call(Op::view, call(Op::arange, Scalar(rows), ScalarType::Int64, x.device()), DimVector{rows, 1});
    const Tensor c = call(Op::arange, Scalar(cols), ScalarType::Int64, x.device());
    const Tensor offset = call(Op::sub, c, r, Scalar(int64_t{1}));  // j - i
    const Tensor zeroed = call(lower ? Op::gt : Op::lt, offset, scalar_tensor(Scalar(k)));
    call(Op::copy_, out, x, false);
    put_where(out, zeroed, on(scalar_tensor(Scalar(int64_t{0}), false), x.dtype(), x.device()));
    return s.set_result(std::move(out));
  }
  run_variant(
      span, [] { return false; },
      [&] {
        visit_dtype(x.dtype(), [&]<typename T>() {
          const T* p = x.data<T>();
          T* y = out.data<T>();
          for (int64_t i = 0; i < out.numel(); ++i) {
            const int64_t col = i % cols, row = (i / cols) % rows;
            const bool keep = lower ? col - row <= k : col - row >= k;
            y[i] = keep ? p[strided_offset(i, x.sizes(), x.strides())] : T(0);
          }
        });
      });
  s.set_result(std::move(out));
}

// [SECTION] sort and topk ---------------------------------------------------------------

// Note [sort's order]
// ~~~~~~~~~~~~~~~~~~~
// sort(self, dim=-1, descending=False) orders each line along dim with a
// stable sort, NaN above every number (last ascending, first descending),
// as aten's CPU sort, and returns (values, indices). topk(self, k, dim=-1,
// largest=True, sorted=True) is the first k of that order (descending for
// largest), so ties come out in their input order; aten's topk leaves the
// order of equal values unspecified and returns them sorted either way.
// Both results are fresh contiguous tensors. Their gradient scatters g back
// to the indices (SortBackward0, TopkBackward0).
template <class T>
bool is_nan_value(T v) {
  if constexpr (is_reduced_float_v<T>)
    return std::isnan(float(v));
  else if constexpr (std::is_floating_point_v<T>)
    return std::isnan(v);
  else
    return false;
}
template <class T>
bool less_value(T a, T b) {
  if constexpr (is_reduced_float_v<T>)
    return float(a) < float(b);
  else
    return a < b;
}

// The first `keep` of each line of x along d, in sort order, into values and indices (sizes of x but d: keep).
void sort_lines(const Tensor& x, int d, bool descending, int64_t keep, const Tensor& values, const Tensor& indices) {
  const int64_t n = x.dim() ? x.sizes()[d] : 1;
  int64_t inner = 1;
  for (int k = d + 1; k < x.dim(); ++k) inner *= x.sizes()[k];
  const int64_t outer = n * inner == 0 ? 0 : x.numel() / (n * inner);
  visit_dtype(x.dtype(), [&]<typename T>() {
    const T* p = x.data<T>();
    T* v = values.data<T>();
    int64_t* ix = indices.data<int64_t>();
    std::vector<int64_t> order(static_cast<size_t>(n));
    auto before = [&](T a, T b) {  // a strictly before b
      const bool na = is_nan_value(a), nb = is_nan_value(b);
      if (descending) return (na && !nb) || (!na && !nb && less_value(b, a));
      return (!na && nb) || (!na && !nb && less_value(a, b));
    };
    for (int64_t o = 0; o < outer; ++o)
      for (int64_t i = 0; i < inner; ++i) {
        auto at = [&](int64_t k) { return p[strided_offset((o * n + k) * inner + i, x.sizes(), x.strides())]; };
        for (int64_t k = 0; k < n; ++k) order[size_t(k)] = k;
        std::stable_sort(order.begin(), order.end(), [&](int64_t a, int64_t b) { return before(at(a), at(b)); });
        for (int64_t k = 0; k < keep; ++k) {
          v[(o * keep + k) * inner + i] = at(order[size_t(k)]);
          ix[(o * keep + k) * inner + i] = order[size_t(k)];
        }
      }
  });
}

void sort_kernel(const OpEntry& op, DispatchKeySet, Stack& s) {
  ScopedSpan span(Floor::Kernels, op.profiler_name);
  const Tensor given = s[0].to_tensor();
  // A device's line is sorted on the host, copied there and back (no device sort loop yet).
  const bool host = given.device().type != DeviceType::CPU;
  const Tensor x = host ? call(Op::_to_copy, given, IValue(), Device{}) : given;
  const bool topk = op.id == Op::topk;
  const int d = wrap_dim(s[topk ? 2 : 1].to_int(), x.dim(), op.python_name);
  const bool descending = s[topk ? 3 : 2].to_bool();
  const int64_t n = x.dim() ? x.sizes()[d] : 1;
  int64_t keep = n;
  if (topk) {
    keep = s[1].to_int();
    DESCENT_CHECK(keep >= 0 && keep <= n, Error, "selected index k out of range");
    DESCENT_CHECK(x.dtype() != ScalarType::Bool, NotImplementedError, "\"topk_cpu\" not implemented for 'Bool'");
  }
  DimVector sizes = x.sizes();
  if (x.dim()) sizes[d] = keep;
  Tensor values = empty_tensor(sizes, x.dtype(), x.device());
  Tensor indices = empty_tensor(sizes, ScalarType::Int64, x.device());
  begin(span, values);
  loop_work(span, values, {&x}, x.dtype(), 0);
  run_variant(
      span, [] { return false; }, [&] { sort_lines(x, d, descending, keep, values, indices); });
  if (host) {
    values = call(Op::_to_copy, values, IValue(), given.device());
    indices = call(Op::_to_copy, indices, IValue(), given.device());
  }
  s.clear();
  s.push(std::move(values));
  s.push(std::move(indices));
}

}  // namespace

// [SECTION] Registration ------------------------------------------------------------

// The kernel of each of these rows (register_kernels.cpp asks for it by op).
BoxedKernel mask_kernel(Op op) {
  switch (op) {
    case Op::where:
      return where_kernel;
    case Op::masked_fill:
      return masked_fill_kernel;
    case Op::tril:
    case Op::triu:
      return tril_kernel;
    case Op::sort:
    case Op::topk:
      return sort_kernel;
    default:
      return nullptr;
  }
}

}  // namespace descent::kernels
