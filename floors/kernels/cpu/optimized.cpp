// The optimized CPU loops: contiguous fast paths the compiler can vectorize,
// and a strided copy that steps its offsets instead of dividing.
//
// Each returns false, having done nothing, when its preconditions fail; the
// caller then runs the reference loop. Elementwise loops use the same element
// functions as the reference (elementwise.h), so they agree bit for bit; sums
// are cascades of kSumLanes running totals (Note [Cascade summation] in
// reference.cpp; Note [Summation bound] in verifier.cpp says how far that may
// move the result from the reference's order). This file is compiled
// with -ffp-contract=off, as reference.cpp, so no multiply-add is fused in
// one variant and not the other.
//
// Elementwise loops split their work across threads with parallel_for (Note
// [Intra-op parallelism], parallel.h) by contiguous runs of elements, so every
// element is computed as on one thread. Sums split by rows, by columns, or
// one long row at a fixed level of its cascade, so a sum too is what one
// thread computes, bit for bit. The matrix product has a file of its own,
// optimized_matmul.cpp.
#include <algorithm>
#include <cstring>
#include <memory>
#include <type_traits>
#include <utility>
#include <vector>

#include "floors/kernels/elementwise.h"
#include "floors/kernels/kernels.h"
#include "floors/kernels/cpu/parallel.h"

namespace descent::kernels {

namespace {

// Whether `out` is one block of memory (contiguous, or dense in another
// order of its dims: an output that follows its inputs' layout, Note [Output
// strides follow the inputs] in layout.cpp). Its elements are then out's
// data_ptr()[0, numel) in some order, and ...
bool flat(const Tensor& out) { return out.is_contiguous() || dense(out); }
// ... an operand of out's sizes and strides (over the dims of size > 1: the
// others are never stepped) has its element for out's element i at [i] too,
// so a loop can run over flat arrays whatever the order of the dims.
bool laid_out_like(const Tensor& t, const Tensor& out) {
  if (!(t.sizes() == out.sizes())) return false;
  if (t.is_contiguous() && out.is_contiguous()) return true;
  for (int d = 0; d < t.dim(); ++d)
    if (t.sizes()[d] != 1 && t.strides()[d] != out.strides()[d]) return false;
  return true;
}
// One element broadcast to every position (every stride 0, but a dim of
// size 1 may keep its own): x + 1, or a bias expanded to a column.
bool single(const Tensor& t) {
  for (int d = 0; d < t.dim(); ++d)
    if (t.strides()[d] != 0 && t.sizes()[d] != 1) return false;  // a dim of size 1 is never stepped
  return true;
}

// Grains: the least work a thread is given (Note [Intra-op parallelism]). A
// chunk should take well over what waking a worker costs (15 to 30 us on the
// 2-core VM these were measured on): 256K elements of a cheap op (add, a
// copy: 0.1 to 0.4 ns each), 64K of a transcendental one (exp: 1.7 ns, tanh:
// 14 ns); a matrix product's grain is in optimized_matmul.cpp. The op
// table's row says which is which: an element function that calls the math
// library is Exactness::DeviceMath (ops.h), and costly.
constexpr int64_t kCheapGrain = 8 * kGrainSize;
constexpr int64_t kCostlyGrain = 2 * kGrainSize;
constexpr int64_t elementwise_grain(Op op) {
  return op_exactness(op) == Exactness::DeviceMath ? kCostlyGrain : kCheapGrain;
}

}  // namespace

// [SECTION] Elementwise --------------------------------------------------------

bool optimized_unary(Op op, const Tensor& in, const Tensor& out, const ClampBounds& bounds) {
  if (!flat(out) || !laid_out_like(in, out)) return false;
  visit_dtype(out.dtype(), [&]<typename T>() {
    visit_unary<T>(op, bounds, [&](auto f) {
      const T* in_data = in.data<T>();
      T* out_data = out.data<T>();
      parallel_for(0, out.numel(), elementwise_grain(op), [=](int64_t lo, int64_t hi) {
        const T* __restrict x = in_data;
        T* __restrict y = out_data;
        for (int64_t i = lo; i < hi; ++i) y[i] = f(x[i]);
      });
    });
  });
  return true;
}

// Three shapes are fast: both inputs laid out like a flat out, or one of
// them a single element (a scalar broadcast: x + 1).
bool optimized_binary(Op op, const Tensor& a, const Tensor& b, const Tensor& out, Scalar alpha) {
  if (!flat(out)) return false;
  const bool ca = laid_out_like(a, out), cb = laid_out_like(b, out);
  if (!((ca || single(a)) && (cb || single(b)))) return false;
  visit_dtype(out.dtype(), [&]<typename T>() {
    visit_binary(op, [&](auto f) {
      const T* a_data = a.data<T>();
      const T* b_data = b.data<T>();
      T* out_data = out.data<T>();
      const opmath_t<T> al = alpha.to<opmath_t<T>>();
      // No __restrict: an in-place op's output is its first operand (and may be
      // its second, x += x). Each element is read before it is written at the
      // same index, so the loop is correct; the compiler checks for overlap at
      // run time and still vectorizes.
      parallel_for(0, out.numel(), elementwise_grain(op), [=](int64_t lo, int64_t hi) {
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

// Elements [lo, hi) of a strided src (a transpose, a slice, an expand) into
// a contiguous dst, in dst's order: an odometer over src's dims carries its
// offset from one element to the next, the last dim in an inner loop at its
// own stride, so no element's offset is worked out by divisions (the
// reference's strided_offset does, per element, and a transposed operand
// made contiguous for a matrix product cost 18 ns an element that way).
template <typename D, typename S>
void strided_into_contiguous(const S* src, const DimVector& sizes, const DimVector& strides, D* dst, int64_t lo,
                             int64_t hi) {
  const int nd = static_cast<int>(sizes.size());
  if (nd == 0) {
    if (lo < hi) dst[0] = cast_element<D>(src[0]);
    return;
  }
  DimVector idx;
  idx.resize(nd);
  int64_t off = 0;
  int64_t rest = lo;  // lo as a multi-index, and its offset in src
  for (int d = nd - 1; d >= 0; --d) {
    idx[d] = rest % sizes[d];
    rest /= sizes[d];
    off += idx[d] * strides[d];
  }
  const int64_t inner = sizes[nd - 1], step = strides[nd - 1];
  for (int64_t i = lo; i < hi;) {
    const int64_t n = std::min(hi - i, inner - idx[nd - 1]);
    const S* s = src + off;
    D* o = dst + i;
    for (int64_t j = 0; j < n; ++j) o[j] = cast_element<D>(s[j * step]);
    i += n;
    off += n * step;
    idx[nd - 1] += n;
    if (idx[nd - 1] < inner) continue;
    off -= inner * step;  // the inner dim wraps: carry into the dims before it
    idx[nd - 1] = 0;
    for (int d = nd - 2; d >= 0; --d) {
      off += strides[d];
      if (++idx[d] < sizes[d]) break;
      off -= sizes[d] * strides[d];
      idx[d] = 0;
    }
  }
}

bool optimized_copy(const Tensor& src, const Tensor& dst) {
  if (!(src.sizes() == dst.sizes())) return false;
  if (!(flat(dst) && laid_out_like(src, dst))) {  // strided: into a contiguous dst only
    if (!dst.is_contiguous()) return false;
    visit_dtype(dst.dtype(), [&]<typename D>() {
      visit_dtype(src.dtype(), [&]<typename S>() {
        const S* src_data = src.data<S>();
        D* dst_data = dst.data<D>();
        const DimVector sizes = src.sizes(), strides = src.strides();
        parallel_for(0, dst.numel(), kCheapGrain, [=](int64_t lo, int64_t hi) {
          strided_into_contiguous(src_data, sizes, strides, dst_data, lo, hi);
        });
      });
    });
    return true;
  }
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
        for (int64_t i = lo; i < hi; ++i) pd[i] = cast_element<D>(ps[i]);
      });
    });
  });
  return true;
}

bool optimized_fill(const Tensor& out, Scalar value) {
  if (!flat(out)) return false;
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
  if (after == 1) {
    *outer = before;
    *inner = block;
    return 1;
  }
  if (before == 1) {
    *outer = block;
    *inner = after;
    return 2;
  }
  return 0;
}

// [SECTION] Cascade sums: Note [Cascade summation] (reference.cpp) ------------------

// kSumLanes running totals, lane l adding the elements l, l + kSumLanes, ...
template <typename T>
struct Lanes {
  T v[kSumLanes];
};
constexpr int64_t kSumSuper = kSumLanes * kSumBlock;  // elements of one block of every lane

// The lanes of x[0, n), n <= kSumSuper: each lane adds its (at most kSumBlock) elements in order.
template <typename T>
Lanes<T> lanes_block(const T* __restrict x, int64_t n) {
  Lanes<T> acc = {};
  if (n == kSumSuper) {  // the common case, with a fixed trip count the compiler unrolls and vectorizes
    for (int64_t i = 0; i < kSumBlock; ++i)
      for (int64_t l = 0; l < kSumLanes; ++l) acc.v[l] = plus(acc.v[l], x[i * kSumLanes + l]);
  } else {
    for (int64_t i = 0; i < n; ++i) acc.v[i % kSumLanes] = plus(acc.v[i % kSumLanes], x[i]);
  }
  return acc;
}
template <typename T>
Lanes<T> lanes_plus(Lanes<T> a, const Lanes<T>& b) {
  for (int64_t l = 0; l < kSumLanes; ++l) a.v[l] = plus(a.v[l], b.v[l]);
  return a;
}

// The lanes of 2**k whole blocks of kSumSuper: the balanced tree lanes_tree
// makes of them, added as a binary counter adds (merge the last two totals
// while they cover the same count of blocks), without a call per node.
template <typename T>
Lanes<T> lanes_pow2(const T* x, int64_t blocks) {
  Lanes<T> stack[64];
  int top = 0;
  for (int64_t b = 0; b < blocks; ++b) {
    Lanes<T> a = lanes_block(x + b * kSumSuper, kSumSuper);
    for (int64_t done = b + 1; done % 2 == 0; done /= 2) a = lanes_plus(stack[--top], a);
    stack[top++] = a;
  }
  return stack[0];
}

// The lanes of x[lo, hi): a cascade over blocks of kSumSuper elements.
template <typename T>
Lanes<T> lanes_tree(const T* x, int64_t lo, int64_t hi) {
  if (hi - lo <= kSumSuper) return lanes_block(x + lo, hi - lo);
  const int64_t blocks = (hi - lo) / kSumSuper;
  if ((hi - lo) % kSumSuper == 0 && (blocks & (blocks - 1)) == 0) return lanes_pow2(x + lo, blocks);
  const int64_t mid = cascade_mid(lo, hi, kSumSuper);
  return lanes_plus(lanes_tree(x, lo, mid), lanes_tree(x, mid, hi));
}

// The same tree, its top `levels` levels cut off: the subtrees below are the
// parallel work. visit(lo, hi) is called on each in order, then join() walks
// the top back, so the sum is the serial one bit for bit, on any number of threads.
template <typename T>
void cut_tree(int64_t lo, int64_t hi, int levels, std::vector<std::pair<int64_t, int64_t>>& leaves) {
  if (levels == 0 || hi - lo <= kSumSuper) {
    leaves.emplace_back(lo, hi);
    return;
  }
  const int64_t mid = cascade_mid(lo, hi, kSumSuper);
  cut_tree<T>(lo, mid, levels - 1, leaves);
  cut_tree<T>(mid, hi, levels - 1, leaves);
}
template <typename T>
Lanes<T> join_tree(int64_t lo, int64_t hi, int levels, const std::vector<Lanes<T>>& sums, size_t& next) {
  if (levels == 0 || hi - lo <= kSumSuper) return sums[next++];
  const int64_t mid = cascade_mid(lo, hi, kSumSuper);
  Lanes<T> a = join_tree<T>(lo, mid, levels - 1, sums, next);
  return lanes_plus(a, join_tree<T>(mid, hi, levels - 1, sums, next));
}

// Reductions are cut into pieces of at least this many elements: a sum is
// one cheap add per element, like a copy.
constexpr int64_t kSumGrain = kCheapGrain;

// The sum of the contiguous run x[0, n): the lanes' cascades, then the lanes
// joined in pairs. A long run is cut at a level of the tree into subtrees of
// at least kSumGrain elements, which threads add at once.
template <typename T>
T cascade_row(const T* x, int64_t n) {
  Lanes<T> lanes;
  if (n < 2 * kSumGrain || get_num_threads() == 1 || in_parallel_region()) {
    lanes = lanes_tree(x, 0, n);
  } else {
    int levels = 0;
    while ((n >> (levels + 1)) >= kSumGrain && levels < 16) ++levels;
    std::vector<std::pair<int64_t, int64_t>> leaves;
    cut_tree<T>(0, n, levels, leaves);
    std::vector<Lanes<T>> sums(leaves.size());
    parallel_for(0, int64_t(leaves.size()), 1, [&](int64_t b, int64_t e) {
      for (int64_t i = b; i < e; ++i)
        sums[size_t(i)] = lanes_tree(x, leaves[size_t(i)].first, leaves[size_t(i)].second);
    });
    size_t next = 0;
    lanes = join_tree<T>(0, n, levels, sums, next);
  }
  for (int64_t width = kSumLanes / 2; width >= 1; width /= 2)
    for (int64_t l = 0; l < width; ++l) lanes.v[l] = plus(lanes.v[l], lanes.v[l + width]);
  return lanes.v[0];
}

// Rows [r0, r1) of x (rows of `stride` elements; columns [0, m) of each)
// added into y[0, m): blocks of kSumBlock rows in order, then the blocks'
// totals in pairs, exactly the reference's order for each column. `scratch`
// holds one partial row per level of the tree.
template <typename T>
void cascade_rows(const T* x, int64_t stride, int64_t m, int64_t r0, int64_t r1, T* __restrict y, T* scratch) {
  if (r1 - r0 <= kSumBlock) {
    for (int64_t j = 0; j < m; ++j) y[j] = T(0);
    for (int64_t r = r0; r < r1; ++r) {
      const T* __restrict row = x + r * stride;
      for (int64_t j = 0; j < m; ++j) y[j] = plus(y[j], row[j]);
    }
    return;
  }
  const int64_t mid = cascade_mid(r0, r1, kSumBlock);
  cascade_rows(x, stride, m, r0, mid, y, scratch);
  cascade_rows(x, stride, m, mid, r1, scratch, scratch + m);
  for (int64_t j = 0; j < m; ++j) y[j] = plus(y[j], scratch[j]);
}

}  // namespace

// Three layouts are fast, each a cascade (Note [Cascade summation]): every
// element of a dense input (one block of memory, in any dim order: x.T.sum());
// each of `outer` contiguous rows (the reduced dims are a suffix); and
// `outer` rows added into one (the reduced dims are a prefix). Threads split
// the rows, or one long row at a level of its tree, or the columns: every
// output is computed as on one thread.
bool optimized_sum(const Tensor& in, const Tensor& keep, const bool* reduced) {
  // float16 and bfloat16 add in float32 (Note [Reduced-precision floats]): the reference loop does that.
  if (in.dtype() != keep.dtype() || is_reduced_floating(in.dtype())) return false;
  if (in.numel() == 0) {  // nothing to add, however large the empty dims: the output's zeros
    if (keep.numel() > 0) std::memset(keep.data_ptr(), 0, size_t(keep.numel()) * element_size(keep.dtype()));
    return true;
  }
  int64_t outer = 0, inner = 0;
  int layout = reduction_layout(in, reduced, &outer, &inner);
  if (layout == 0 && keep.numel() == 1 && dense(in)) layout = 1, outer = 1, inner = in.numel();
  if (layout == 0) return false;
  visit_dtype(in.dtype(), [&]<typename T>() {
    const T* x = in.data<T>();
    T* y = keep.data<T>();
    if (layout == 1) {  // each output sums one contiguous run
      if (inner >= 2 * kSumGrain) {
        for (int64_t r = 0; r < outer; ++r) y[r] = cascade_row(x + r * inner, inner);
      } else {
        parallel_for(0, outer, std::max<int64_t>(1, kSumGrain / inner), [=](int64_t lo, int64_t hi) {
          for (int64_t r = lo; r < hi; ++r) y[r] = cascade_row(x + r * inner, inner);
        });
      }
    } else {  // rows added into a row of totals, 2048 columns (8 KiB of float32) at a time
      constexpr int64_t kColumns = 2048;
      int depth = 1;  // one partial row per level: a child has at most half its parent's blocks, rounded up
      for (int64_t blocks = (outer + kSumBlock - 1) / kSumBlock; blocks > 1; blocks = (blocks + 1) / 2) ++depth;
      parallel_for(0, inner, std::max<int64_t>(kColumns, kSumGrain / outer), [=](int64_t lo, int64_t hi) {
        std::unique_ptr<T[]> scratch(new T[size_t(depth * kColumns)]);
        for (int64_t j = lo; j < hi; j += kColumns)
          cascade_rows(x + j, inner, std::min(kColumns, hi - j), 0, outer, y + j, scratch.get());
      });
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
