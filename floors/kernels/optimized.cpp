// The optimized CPU loops: contiguous fast paths the compiler can vectorize.
//
// Each returns false, having done nothing, when its preconditions fail; the
// caller then runs the reference loop. Elementwise loops use the same element
// functions as the reference (elementwise.h), so they agree bit for bit; sums
// over a contiguous run use eight running totals (Note [Summation bound] in
// verifier.cpp says how far that may move the result). This file is compiled
// with -ffp-contract=off, as reference.cpp, so no multiply-add is fused in
// one variant and not the other.
//
// Elementwise loops split their work across threads with parallel_for (Note
// [Intra-op parallelism], parallel.h) by contiguous runs of elements, so every
// element is computed as on one thread. Reductions stay on one thread. The
// matrix product has a file of its own, optimized_matmul.cpp.
#include <algorithm>
#include <cstring>
#include <type_traits>

#include "floors/kernels/elementwise.h"
#include "floors/kernels/kernels.h"
#include "floors/kernels/parallel.h"

namespace descent::kernels {

namespace {

bool contiguous_like(const Tensor& t, const Tensor& out) { return t.is_contiguous() && t.sizes() == out.sizes(); }
// One element broadcast to every position (all strides 0): x + 1.
bool single(const Tensor& t) {
  for (int64_t st : t.strides())
    if (st != 0) return false;
  return true;
}

// Grains: the least work a thread is given (Note [Intra-op parallelism]). A
// chunk should take well over what waking a worker costs (15 to 30 us on the
// 2-core VM these were measured on): 256K elements of a cheap op (add, a
// copy: 0.1 to 0.4 ns each), 64K of a transcendental one (exp: 1.7 ns, tanh:
// 14 ns); a matrix product's grain is in optimized_matmul.cpp. Chosen per
// element function at compile time, so the check stays one compare.
constexpr int64_t kCheapGrain = 8 * kGrainSize;
constexpr int64_t kCostlyGrain = 2 * kGrainSize;
template <typename F>
constexpr int64_t elementwise_grain() {
  constexpr bool costly = std::is_same_v<F, ExpF> || std::is_same_v<F, LogF> || std::is_same_v<F, SigmoidF> ||
                          std::is_same_v<F, TanhF> || std::is_same_v<F, PowF>;
  return costly ? kCostlyGrain : kCheapGrain;
}

}  // namespace

// [SECTION] Elementwise --------------------------------------------------------

bool optimized_unary(Op op, const Tensor& in, const Tensor& out) {
  if (!contiguous_like(in, out) || !out.is_contiguous()) return false;
  visit_dtype(out.dtype(), [&]<typename T>() {
    visit_unary(op, [&](auto f) {
      const T* in_data = in.data<T>();
      T* out_data = out.data<T>();
      parallel_for(0, out.numel(), elementwise_grain<decltype(f)>(), [=](int64_t lo, int64_t hi) {
        const T* __restrict x = in_data;
        T* __restrict y = out_data;
        for (int64_t i = lo; i < hi; ++i) y[i] = f(x[i]);
      });
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
      const T* a_data = a.data<T>();
      const T* b_data = b.data<T>();
      T* out_data = out.data<T>();
      const T al = alpha.to<T>();
      // No __restrict: an in-place op's output is its first operand (and may be
      // its second, x += x). Each element is read before it is written at the
      // same index, so the loop is correct; the compiler checks for overlap at
      // run time and still vectorizes.
      parallel_for(0, out.numel(), elementwise_grain<decltype(f)>(), [=](int64_t lo, int64_t hi) {
        const T* pa = a_data;
        const T* pb = b_data;
        T* py = out_data;
        if (ca && cb) {
          for (int64_t i = lo; i < hi; ++i) py[i] = f(pa[i], pb[i], al);
        } else if (ca) {
          const T y = pb[0];
          for (int64_t i = lo; i < hi; ++i) py[i] = f(pa[i], y, al);
        } else if (cb) {
          const T x = pa[0];
          for (int64_t i = lo; i < hi; ++i) py[i] = f(x, pb[i], al);
        } else {
          for (int64_t i = lo; i < hi; ++i) py[i] = f(pa[0], pb[0], al);
        }
      });
    });
  });
  return true;
}

bool optimized_copy(const Tensor& src, const Tensor& dst) {
  if (!dst.is_contiguous() || !contiguous_like(src, dst)) return false;
  if (src.dtype() == dst.dtype()) {
    const size_t size = element_size(dst.dtype());
    const char* s = static_cast<const char*>(src.data_ptr());
    char* d = static_cast<char*>(dst.data_ptr());
    parallel_for(0, dst.numel(), kCheapGrain,
                 [=](int64_t lo, int64_t hi) { std::memcpy(d + lo * size, s + lo * size, size_t(hi - lo) * size); });
    return true;
  }
  visit_dtype(dst.dtype(), [&]<typename D>() {
    visit_dtype(src.dtype(), [&]<typename S>() {
      const S* src_data = src.data<S>();
      D* dst_data = dst.data<D>();
      parallel_for(0, dst.numel(), kCheapGrain, [=](int64_t lo, int64_t hi) {
        const S* __restrict ps = src_data;
        D* __restrict pd = dst_data;
        for (int64_t i = lo; i < hi; ++i) pd[i] = static_cast<D>(ps[i]);
      });
    });
  });
  return true;
}

bool optimized_fill(const Tensor& out, Scalar value) {
  if (!out.is_contiguous()) return false;
  visit_dtype(out.dtype(), [&]<typename T>() {
    const T v = value.to<T>();
    T* data = out.data<T>();
    parallel_for(0, out.numel(), kCheapGrain, [=](int64_t lo, int64_t hi) { std::fill(data + lo, data + hi, v); });
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

}  // namespace descent::kernels
