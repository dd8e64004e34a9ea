// The reference loops: one plain strided loop per kind of op, written to be
// read. Every element is found by strided_offset() (kernels.h), which is
// Note [Views and strides] in code. Slow on purpose: the verifier holds the
// optimized loops to these.
#include "floors/kernels/elementwise.h"
#include "floors/kernels/kernels.h"

namespace descent::kernels {

// [SECTION] Elementwise --------------------------------------------------------

void reference_unary(Op op, const Tensor& in, const Tensor& out) {
  visit_dtype(out.dtype(), [&]<typename T>() {
    visit_unary(op, [&](auto f) {
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
      T al = alpha.to<T>();
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
            static_cast<D>(ps[strided_offset(i, src.sizes(), src.strides())]);
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

// Sums in input order (row-major), one running total per output element.
void reference_sum(const Tensor& in, const Tensor& keep, const bool* reduced) {
  visit_dtype(keep.dtype(), [&]<typename T>() {
    T* y = keep.data<T>();
    for (int64_t j = 0; j < keep.numel(); ++j) y[strided_offset(j, keep.sizes(), keep.strides())] = T(0);
    visit_dtype(in.dtype(), [&]<typename S>() {
      const S* x = in.data<S>();
      for (int64_t i = 0; i < in.numel(); ++i) {
        T& total = y[keep_offset(i, in, keep, reduced)];
        total = plus(total, T(x[strided_offset(i, in.sizes(), in.strides())]));
      }
    });
  });
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

// out[b, i, j] = sum over k of a[b, i, k] * b[b, k, j], k ascending.
void reference_matmul(const Tensor& a, const Tensor& b, const Tensor& out) {
  const int64_t B = out.sizes()[0], M = out.sizes()[1], N = out.sizes()[2], K = a.sizes()[2];
  const DimVector &sa = a.strides(), &sb = b.strides(), &so = out.strides();
  visit_dtype(out.dtype(), [&]<typename T>() {
    const T* pa = a.data<T>();
    const T* pb = b.data<T>();
    T* po = out.data<T>();
    for (int64_t n = 0; n < B; ++n)
      for (int64_t i = 0; i < M; ++i)
        for (int64_t j = 0; j < N; ++j) {
          T acc = T(0);
          for (int64_t k = 0; k < K; ++k) {
            acc = plus(acc, times(pa[n * sa[0] + i * sa[1] + k * sa[2]], pb[n * sb[0] + k * sb[1] + j * sb[2]]));
          }
          po[n * so[0] + i * so[1] + j * so[2]] = acc;
        }
  });
}

}  // namespace descent::kernels
