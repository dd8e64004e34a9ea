// The optimized CPU loops: contiguous fast paths the compiler can vectorize.
//
// Each returns false, having done nothing, when its preconditions fail; the
// caller then runs the reference loop. Elementwise loops use the same element
// functions as the reference (elementwise.h), so they agree bit for bit; sums
// over a contiguous run use eight running totals (Note [Summation bound] in
// verifier.cpp says how far that may move the result). This file is compiled
// with -ffp-contract=off, as reference.cpp, so no multiply-add is fused in
// one variant and not the other.
#include <cstring>

#include "floors/kernels/elementwise.h"
#include "floors/kernels/kernels.h"

namespace descent::kernels {

namespace {

bool contiguous_like(const Tensor& t, const Tensor& out) { return t.is_contiguous() && t.sizes() == out.sizes(); }
// One element broadcast to every position (all strides 0): x + 1.
bool single(const Tensor& t) {
  for (int64_t st : t.strides())
    if (st != 0) return false;
  return true;
}

}  // namespace

// [SECTION] Elementwise --------------------------------------------------------

bool optimized_unary(Op op, const Tensor& in, const Tensor& out) {
  if (!contiguous_like(in, out) || !out.is_contiguous()) return false;
  visit_dtype(out.dtype(), [&]<typename T>() {
    visit_unary(op, [&](auto f) {
      const T* __restrict x = in.data<T>();
      T* __restrict y = out.data<T>();
      const int64_t n = out.numel();
      for (int64_t i = 0; i < n; ++i) y[i] = f(x[i]);
    });
  });
  return true;
}

// Three shapes are fast: both inputs contiguous like out, or one of them a
// single element (a scalar broadcast: x + 1).
bool optimized_binary(Op op, const Tensor& a, const Tensor& b, const Tensor& out, Scalar alpha) {
  if (!out.is_contiguous()) return false;
  const bool ca = contiguous_like(a, out), cb = contiguous_like(b, out);
  if (!((ca || single(a)) && (cb || single(b)))) return false;
  visit_dtype(out.dtype(), [&]<typename T>() {
    visit_binary(op, [&](auto f) {
      const T* __restrict pa = a.data<T>();
      const T* __restrict pb = b.data<T>();
      T* __restrict py = out.data<T>();
      const T al = alpha.to<T>();
      const int64_t n = out.numel();
      if (ca && cb) {
        for (int64_t i = 0; i < n; ++i) py[i] = f(pa[i], pb[i], al);
      } else if (ca) {
        const T y = pb[0];
        for (int64_t i = 0; i < n; ++i) py[i] = f(pa[i], y, al);
      } else if (cb) {
        const T x = pa[0];
        for (int64_t i = 0; i < n; ++i) py[i] = f(x, pb[i], al);
      } else {
        for (int64_t i = 0; i < n; ++i) py[i] = f(pa[0], pb[0], al);
      }
    });
  });
  return true;
}

bool optimized_copy(const Tensor& src, const Tensor& dst) {
  if (!dst.is_contiguous() || !contiguous_like(src, dst)) return false;
  if (src.dtype() == dst.dtype()) {
    if (dst.numel() > 0) std::memcpy(dst.data_ptr(), src.data_ptr(), size_t(dst.numel()) * element_size(dst.dtype()));
    return true;
  }
  visit_dtype(dst.dtype(), [&]<typename D>() {
    visit_dtype(src.dtype(), [&]<typename S>() {
      const S* __restrict ps = src.data<S>();
      D* __restrict pd = dst.data<D>();
      for (int64_t i = 0; i < dst.numel(); ++i) pd[i] = static_cast<D>(ps[i]);
    });
  });
  return true;
}

// [SECTION] Reductions ------------------------------------------------------------

namespace {

// How a contiguous input splits around the reduced dims: `outer` rows, each
// `inner` contiguous elements. Returns 1 when the reduced dims are a suffix
// (reduce each row of `inner`), 2 when they are a prefix (reduce across the
// `outer` rows), 0 otherwise.
int reduction_layout(const Tensor& in, const bool* reduced, int64_t* outer, int64_t* inner) {
  int first = in.dim(), last = -1;
  for (int d = 0; d < in.dim(); ++d)
    if (reduced[d] && in.sizes()[d] != 1) first = std::min(first, d), last = d;
  if (last < 0 || !in.is_contiguous()) return 0;
  for (int d = first; d <= last; ++d)
    if (!reduced[d] && in.sizes()[d] != 1) return 0;  // reduced dims are not one block
  int64_t before = 1, block = 1, after = 1;
  for (int d = 0; d < in.dim(); ++d) (d < first ? before : d <= last ? block : after) *= in.sizes()[d];
  if (after == 1) { *outer = before; *inner = block; return 1; }
  if (before == 1) { *outer = block; *inner = after; return 2; }
  return 0;
}

}  // namespace

bool optimized_sum(const Tensor& in, const Tensor& keep, const bool* reduced) {
  int64_t outer = 0, inner = 0;
  int layout = reduction_layout(in, reduced, &outer, &inner);
  if (layout == 0 || in.dtype() != keep.dtype()) return false;
  visit_dtype(in.dtype(), [&]<typename T>() {
    const T* __restrict x = in.data<T>();
    T* __restrict y = keep.data<T>();
    if (layout == 1) {  // each output sums one contiguous run, eight totals at a time
      for (int64_t r = 0; r < outer; ++r) {
        const T* row = x + r * inner;
        T acc[8] = {};
        int64_t i = 0;
        for (; i + 8 <= inner; i += 8)
          for (int l = 0; l < 8; ++l) acc[l] = plus(acc[l], row[i + l]);
        T total = plus(plus(plus(acc[0], acc[1]), plus(acc[2], acc[3])), plus(plus(acc[4], acc[5]), plus(acc[6], acc[7])));
        for (; i < inner; ++i) total = plus(total, row[i]);
        y[r] = total;
      }
    } else {  // rows added in order into a vector of totals: the reference's order
      for (int64_t j = 0; j < inner; ++j) y[j] = T(0);
      for (int64_t r = 0; r < outer; ++r)
        for (int64_t j = 0; j < inner; ++j) y[j] = plus(y[j], x[r * inner + j]);
    }
  });
  return true;
}

bool optimized_max(const Tensor& in, const Tensor& keep, const bool* reduced) {
  int64_t outer = 0, inner = 0;
  if (reduction_layout(in, reduced, &outer, &inner) != 1 || inner == 0) return false;
  visit_dtype(in.dtype(), [&]<typename T>() {
    const T* x = in.data<T>();
    T* y = keep.data<T>();
    for (int64_t r = 0; r < outer; ++r) {
      const T* row = x + r * inner;
      T m = row[0];
      for (int64_t i = 1; i < inner && m == m; ++i)
        if (row[i] > m || row[i] != row[i]) m = row[i];
      y[r] = m;
    }
  });
  return true;
}

// [SECTION] Matrix product -------------------------------------------------------

// i-k-j order: each row of out is built by adding rows of b scaled by a[i, k],
// k ascending. The inner loop runs along contiguous memory and vectorizes, and
// every out[i, j] still sees its products added in the reference's order, so
// the two variants agree bit for bit.
bool optimized_matmul(const Tensor& a, const Tensor& b, const Tensor& out) {
  if (!a.is_contiguous() || !b.is_contiguous() || !out.is_contiguous()) return false;
  const int64_t B = out.sizes()[0], M = out.sizes()[1], N = out.sizes()[2], K = a.sizes()[2];
  visit_dtype(out.dtype(), [&]<typename T>() {
    for (int64_t n = 0; n < B; ++n) {
      const T* pa = a.data<T>() + n * M * K;
      const T* pb = b.data<T>() + n * K * N;
      T* po = out.data<T>() + n * M * N;
      for (int64_t i = 0; i < M; ++i) {
        T* __restrict row = po + i * N;
        for (int64_t j = 0; j < N; ++j) row[j] = T(0);
        for (int64_t k = 0; k < K; ++k) {
          const T aik = pa[i * K + k];
          const T* __restrict brow = pb + k * N;
          for (int64_t j = 0; j < N; ++j) row[j] = plus(row[j], times(aik, brow[j]));
        }
      }
    }
  });
  return true;
}

}  // namespace descent::kernels
