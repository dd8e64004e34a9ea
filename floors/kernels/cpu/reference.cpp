// The reference loops: one plain strided loop per kind of op, written to be
// read. Every element is found by strided_offset() (kernels.h), which is
// Note [Views and strides] in code. Slow on purpose: the verifier holds the
// optimized loops to these.
#include <algorithm>

#include "floors/kernels/elementwise.h"
#include "floors/kernels/kernels.h"

namespace descent::kernels {

// [SECTION] Elementwise --------------------------------------------------------

void reference_unary(Op op, const Tensor& in, const Tensor& out, const ClampBounds& bounds) {
  visit_dtype(out.dtype(), [&]<typename T>() {
    visit_unary<T>(op, bounds, [&](auto f) {
      const T* x = in.data<T>();
      T* y = out.data<T>();
      for (int64_t i = 0; i < out.numel(); ++i)
        y[strided_offset(i, out.sizes(), out.strides())] = f(x[strided_offset(i, in.sizes(), in.strides())]);
    });
  });
}

void reference_binary(Op op, const Tensor& a, const Tensor& b, const Tensor& out, Scalar alpha) {
  visit_dtype(out.dtype(), [&]<typename T>() {
    visit_binary(op, [&](auto f) {
      const T* pa = a.data<T>();
      const T* pb = b.data<T>();
      T* py = out.data<T>();
      const opmath_t<T> al = alpha.to<opmath_t<T>>();
      for (int64_t i = 0; i < out.numel(); ++i) {
        T x = pa[strided_offset(i, a.sizes(), a.strides())];
        T y = pb[strided_offset(i, b.sizes(), b.strides())];
        py[strided_offset(i, out.sizes(), out.strides())] = f(x, y, al);
      }
    });
  });
}

void reference_compare(Op op, const Tensor& a, const Tensor& b, const Tensor& out) {
  visit_dtype(a.dtype(), [&]<typename T>() {
    visit_compare(op, [&](auto f) {
      const T* pa = a.data<T>();
      const T* pb = b.data<T>();
      bool* py = out.data<bool>();
      for (int64_t i = 0; i < out.numel(); ++i) {
        T x = pa[strided_offset(i, a.sizes(), a.strides())];
        T y = pb[strided_offset(i, b.sizes(), b.strides())];
        py[strided_offset(i, out.sizes(), out.strides())] = f(x, y);
      }
    });
  });
}

void reference_copy(const Tensor& src, const Tensor& dst) {
  visit_dtype(dst.dtype(), [&]<typename D>() {
    visit_dtype(src.dtype(), [&]<typename S>() {
      const S* ps = src.data<S>();
      D* pd = dst.data<D>();
      for (int64_t i = 0; i < dst.numel(); ++i)
        pd[strided_offset(i, dst.sizes(), dst.strides())] =
            cast_element<D>(ps[strided_offset(i, src.sizes(), src.strides())]);
    });
  });
}

void reference_fill(const Tensor& out, Scalar value) {
  visit_dtype(out.dtype(), [&]<typename T>() {
    const T v = value.to<T>();
    T* p = out.data<T>();
    for (int64_t i = 0; i < out.numel(); ++i) p[strided_offset(i, out.sizes(), out.strides())] = v;
  });
}

// [SECTION] Reductions ------------------------------------------------------------

// Note [Cascade summation]
// ~~~~~~~~~~~~~~~~~~~~~~~~
// Plain summation keeps one running total and adds the elements to it in
// order. Every addition rounds the total to the dtype, and the total grows,
// so the k-th element is added to a number k times its size: each rounding
// can lose up to half a unit in the last place of that large total. In
// float32, which has 24 bits, adding 0.1 ten million times drifts to 0.10108
// for the mean, and adding 1.0 to a total of 2**24 changes nothing at all
// (ones(3, 2**23).T.sum() stopped at 16777216). Higham's bound for an order
// in which an element goes through d rounded additions is d * u * sum|x_i|
// (u the unit roundoff, 2**-24 for float32), and in plain order d = n - 1.
//
// Cascade (pairwise) summation adds the same numbers in a tree: blocks of
// kSumBlock elements are added in order, then the block totals in pairs, the
// pair totals in pairs, and so on (cascade_mid says where each range splits).
// Each element now goes through at most kSumBlock - 1 additions inside its
// block and ceil(log2(n / kSumBlock)) above it: 3 + 22 for ten million
// elements instead of 9999999, and in practice the error stops growing with
// n. The blocks are short because what a block gets wrong, every level above
// repeats: 32 copies of 0.1f added in order are 2.6e-7 too small, and so
// would be the mean of ten million (0.09999997); in blocks of 4 it is 0.1.
// PyTorch's CPU sum cascades too, for float and double (cascade_sum in
// aten/src/ATen/native/cpu/SumKernel.cpp, with a few levels of running
// totals instead of a recursion), still accumulating float32 in float32. The
// cost is small: the same additions in another order, and a call per tree node.
//
// The two cascades are not the same tree, so a float sum's last digits
// differ from torch's, and torch's differ with its thread count: aten splits
// the elements into a chunk per thread, cascades each and adds the chunks'
// totals, where descent's order is fixed (Note [Intra-op parallelism]). For
// full((10**7,), 0.1).sum() torch 2.15's CPU gives 999999.4375, 999999.5625,
// 999999.875 and 1000000.125 on 1, 2, 3 and 4 threads; descent gives
// 1000000.0 on any number. Both are within the bound below; neither is
// wrong, and a learner comparing the two should compare to a tolerance.
//
// This loop sums each output's elements in the order of their indices,
// through the tree above. The optimized sum (optimized.cpp) keeps kSumLanes
// running totals side by side so that vector instructions add them, each
// lane a cascade of its own, and joins the lanes in pairs at the end; where
// the reduced elements are whole rows, it adds the rows exactly as here. The
// two orders differ, so the verifier compares them within the bound of both
// (cascade_depth, Note [Summation bound] in verifier.cpp). Integer sums are
// exact (wrapping) in any order.

namespace {

// The sum of elements [lo, hi) of one output, get(k) reading the k-th.
template <typename T, typename Get>
T cascade_sum(int64_t lo, int64_t hi, const Get& get) {
  if (hi - lo <= kSumBlock) {
    T total = T(0);
    for (int64_t k = lo; k < hi; ++k) total = plus(total, get(k));
    return total;
  }
  const int64_t mid = cascade_mid(lo, hi, kSumBlock);
  return plus(cascade_sum<T>(lo, mid, get), cascade_sum<T>(mid, hi, get));
}

}  // namespace

int64_t cascade_depth(int64_t n) {
  if (n <= 1) return 0;
  int64_t levels = 0;
  for (int64_t blocks = (n + kSumBlock - 1) / kSumBlock; (int64_t(1) << levels) < blocks;) ++levels;
  int64_t lane_levels = 0;
  while ((int64_t(1) << lane_levels) < kSumLanes) ++lane_levels;
  return std::min(n - 1, kSumBlock - 1 + levels + lane_levels);
}

// Each output element sums its elements in index order (the reduced dims
// read row-major) through the cascade of Note [Cascade summation]. An input
// with no elements does no work beyond writing the zeros of the output.
void reference_sum(const Tensor& in, const Tensor& keep, const bool* reduced) {
  DimVector kept_sizes, kept_strides, red_sizes, red_strides;  // in's dims, split
  for (int d = 0; d < in.dim(); ++d) {
    (reduced[d] ? red_sizes : kept_sizes).push_back(in.sizes()[d]);
    (reduced[d] ? red_strides : kept_strides).push_back(in.strides()[d]);
  }
  const int64_t n = in.numel() == 0 ? 0 : numel_of(red_sizes);  // elements per output
  visit_dtype(keep.dtype(), [&]<typename T>() {
    T* y = keep.data<T>();    // contiguous: output j is y[j]
    using Acc = opmath_t<T>;  // float for float16 and bfloat16 (Note [Reduced-precision floats])
    visit_dtype(in.dtype(), [&]<typename S>() {
      const S* x = in.data<S>();
      for (int64_t j = 0; j < keep.numel(); ++j) {
        const S* row = x + strided_offset(j, kept_sizes, kept_strides);
        y[j] =
            T(cascade_sum<Acc>(0, n, [&](int64_t k) { return Acc(row[strided_offset(k, red_sizes, red_strides)]); }));
      }
    });
  });
}

// The offset in `keep` of input element `linear`: its index with every reduced dim set to 0.
static int64_t keep_offset(int64_t linear, const Tensor& in, const Tensor& keep, const bool* reduced) {
  int64_t off = 0;
  for (int d = in.dim() - 1; d >= 0; --d) {
    int64_t i = linear % in.sizes()[d];
    linear /= in.sizes()[d];
    if (!reduced[d]) off += i * keep.strides()[d];
  }
  return off;
}

// The first maximum wins; a NaN is the maximum of anything (PyTorch propagates NaN).
void reference_max(const Tensor& in, const Tensor& keep, const Tensor* indices, const bool* reduced) {
  int64_t* idx = indices ? indices->data<int64_t>() : nullptr;
  std::vector<bool> seen(size_t(keep.numel()), false);
  visit_dtype(in.dtype(), [&]<typename T>() {
    const T* x = in.data<T>();
    T* y = keep.data<T>();
    // Position along the one reduced dim (max.dim reduces exactly one).
    int rd = -1;
    for (int d = 0; d < in.dim(); ++d)
      if (reduced[d]) rd = d;
    for (int64_t i = 0; i < in.numel(); ++i) {
      int64_t o = keep_offset(i, in, keep, reduced);
      int64_t slot = o;  // keep is contiguous: its offset is its element number
      T v = x[strided_offset(i, in.sizes(), in.strides())];
      bool better = !seen[slot] || (v > y[o] && y[o] == y[o]) || (v != v && y[o] == y[o]);
      if (better) {
        y[o] = v;
        seen[slot] = true;
        if (idx) {
          int64_t pos = i;
          for (int d = in.dim() - 1; d > rd; --d) pos /= in.sizes()[d];
          idx[o] = rd >= 0 ? pos % in.sizes()[rd] : 0;
        }
      }
    }
  });
}

// [SECTION] Matrix product -------------------------------------------------------

// out[b, i, j] = sum over k of a[b, i, k] * b[b, k, j], k ascending (in
// float32 for float16 and bfloat16, rounded once at the end).
void reference_matmul(const Tensor& a, const Tensor& b, const Tensor& out) {
  if (out.numel() == 0) return;  // no loop over the rows of an empty product (zeros(2**40, 0) @ zeros(0, 0))
  const int64_t B = out.sizes()[0], M = out.sizes()[1], N = out.sizes()[2], K = a.sizes()[2];
  const DimVector &sa = a.strides(), &sb = b.strides(), &so = out.strides();
  visit_dtype(out.dtype(), [&]<typename T>() {
    const T* pa = a.data<T>();
    const T* pb = b.data<T>();
    T* po = out.data<T>();
    using Acc = opmath_t<T>;
    for (int64_t n = 0; n < B; ++n)
      for (int64_t i = 0; i < M; ++i)
        for (int64_t j = 0; j < N; ++j) {
          Acc acc = Acc(0);
          for (int64_t k = 0; k < K; ++k) {
            acc = plus(acc,
                       times(Acc(pa[n * sa[0] + i * sa[1] + k * sa[2]]), Acc(pb[n * sb[0] + k * sb[1] + j * sb[2]])));
          }
          po[n * so[0] + i * so[1] + j * so[2]] = T(acc);
        }
  });
}

}  // namespace descent::kernels
