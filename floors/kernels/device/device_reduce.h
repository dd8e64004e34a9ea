// Floor 5 on a device: the block-level algorithms of the reductions, the
// matrix product and advanced indexing, written once for both devices.
//
// [SECTION] Plans: what one launch reduces, multiplies or moves
// [SECTION] A reduction over blocks
// [SECTION] The tiled matrix product
// [SECTION] Gather and scatter
// [SECTION] CUDA entry points (cuda_reduce.cu, cuda_index.cu)
//
// Everything here is plain data and DESCENT_HD functions (elementwise.h):
// the simulated device calls them from its blocks' bodies on the stream's
// worker (device_reduce_matmul.cpp, matmul_ladder.cpp), CUDA from its kernels
// (cuda_reduce.cu, cuda_matmul_*.cu, cuda_index.cu), so both devices run the same order of operations
// and give the same bits. See Note [A reduction over blocks] and Note
// [Device matmul] below; the host side, which builds the plans from tensors,
// is device_reduce_matmul.cpp.
#pragma once

#include <cmath>
#include <cstdint>

#include "floors/core/device.h"
#include "floors/core/dtype.h"
#include "floors/kernels/elementwise.h"

namespace descent::streams {
struct Stream;
}

namespace descent::kernels::device {

// The kernel's name in the trace, interned once per (kind, op, dtypes)
// (sim_kernels.cpp): the op's own name and dtype for an elementwise loop
// (kind "": "add_float32"), else the kind and the dtype ("reduce_sum_float16"),
// or both dtypes of a conversion ("copy_float32_to_int64"). Each kind uses one op.
const char* kernel_name(const char* kind, Op op, ScalarType a, ScalarType b);

// Note [A reduction over blocks]
// ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
// A GPU sums n numbers with many threads at once, so it cannot add them in
// index order as the CPU's cascade does (Note [Cascade summation]). Each
// output's n elements are cut among `blocks` blocks of `threads` threads,
// and the order is fixed by the launch shape alone (never by the GPU's
// number of multiprocessors, nor by which block finishes first), so every
// run, the simulated device and every CUDA GPU add in one order:
//   1. thread t of block b (global number g = b * threads + t) visits the
//      loads g, g + S, g + 2S, ... (S = blocks * threads, a grid-stride
//      loop), each load `vec` neighbouring elements (a float4 for float32:
//      16 bytes in one instruction), lane l of the load added, in that order,
//      to the thread's running total l; a few elements past the last whole
//      load go to thread 0's lanes;
//   2. the thread's lanes are added in a tree (0+2, 1+3, then 0+1);
//   3. the 32 threads of a warp in a tree: lane i takes lane i + 16, then
//      i + 8, 4, 2, 1 (CUDA's __shfl_down_sync; the sim does the same on an
//      array of 32);
//   4. the warps' totals the same way, in the first warp;
//   5. with more than one block per output, each block wrote its total to a
//      buffer of partials, and a second launch (one block per output)
//      reduces them by steps 1, 3 and 4.
// An element so goes through at most device_sum_depth(n, outputs) rounded
// additions, and the verifier holds a device sum to the CPU's within the
// bound of both orders (Note [Summation bound], verifier.cpp). max and
// max.dim use the same tree with a choice instead of an addition: the
// larger value, a NaN over anything, and on a tie the smaller position.
// That choice gives one answer in any order, the CPU's (the first maximum),
// so they are exact. Integer sums wrap, as the CPU's do, and are exact too.
//
// The block count is the smallest that gives each thread kElemsPerThread
// elements, at most kReduceMaxBlocks (split among the outputs): 1024 blocks
// of 256 threads keep about eight blocks on each of an H200's 132
// multiprocessors, all resident at once, so one wave streams the input.
// PyTorch's CUDA reduction (aten/src/ATen/native/cuda/Reduce.cuh) is built
// the same way (vectorized loads, per-thread accumulators, a warp-shuffle
// tree, a second pass over partials: a global semaphore there, a second
// launch here) but sizes the grid from the GPU it runs on.

// [SECTION] Plans ---------------------------------------------------------------------------

constexpr int kDevMaxDims = 8;              // kMaxDims (tensor.h): a plan holds sizes inline
constexpr uint32_t kReduceThreads = 256;    // the most threads of a reduction block
constexpr int64_t kElemsPerThread = 64;     // the least work a reduction thread is given
constexpr int64_t kReduceMaxBlocks = 1024;  // blocks of one reduction launch, at most
constexpr uint32_t kWarp = 32;

// A strided walk over up to kDevMaxDims dims: the offset, in elements, of
// the element with row-major number `linear` (strided_offset, kernels.h).
struct Strided {
  int dims = 0;
  int64_t sizes[kDevMaxDims] = {};
  int64_t strides[kDevMaxDims] = {};
  DESCENT_HD int64_t offset(int64_t linear) const {
    int64_t off = 0;
    for (int d = dims - 1; d >= 0; --d) {
      const int64_t i = linear % sizes[d];
      linear /= sizes[d];
      off += i * strides[d];
    }
    return off;
  }
};

// One reduction launch: `outputs` results, each over `n` elements of the
// input, `blocks` blocks of `threads` threads per result.
struct ReducePlan {
  int64_t outputs = 0;
  int64_t n = 0;
  int64_t blocks = 1;
  uint32_t threads = kReduceThreads;
  int vec = 1;       // elements per load: 1, or 16 bytes' worth when each result's elements are an aligned run
  bool run = false;  // result j's elements are input[out.offset(j) + k], k < n
  Strided out;       // where result j's elements start in the input
  Strided red;       // the offset of element k from there (when not `run`)
};

inline int64_t ceil_div(int64_t a, int64_t b) { return (a + b - 1) / b; }
inline int64_t log2_ceil(int64_t v) {
  int64_t l = 0;
  while ((int64_t(1) << l) < v) ++l;
  return l;
}
inline uint32_t pow2_threads(int64_t work) {  // a power of two in [32, 256]
  uint32_t t = kWarp;
  while (t < kReduceThreads && int64_t(t) < work) t *= 2;
  return t;
}

// The launch shape of a reduction of `outputs` results over n elements each
// (Note [A reduction over blocks]); `vec` comes from the layout, later.
inline ReducePlan reduce_shape(int64_t outputs, int64_t n) {
  ReducePlan p;
  p.outputs = outputs;
  p.n = n;
  p.threads = pow2_threads(ceil_div(n, 4));
  const int64_t max_blocks = outputs >= kReduceMaxBlocks ? 1 : kReduceMaxBlocks / outputs;
  const int64_t want = ceil_div(n, int64_t(p.threads) * kElemsPerThread);
  p.blocks = want < 1 ? 1 : want > max_blocks ? max_blocks : want;
  return p;
}
// The second launch, over the partials: one block per result.
inline ReducePlan partials_shape(const ReducePlan& first) {
  ReducePlan p;
  p.outputs = first.outputs;
  p.n = first.blocks;
  p.threads = pow2_threads(first.blocks);
  p.blocks = 1;
  p.run = true;
  p.out.dims = 1;
  p.out.sizes[0] = first.outputs;
  p.out.strides[0] = first.blocks;
  return p;
}

// The most rounded additions an element of a device sum goes through
// (Note [A reduction over blocks]): its lane's share of the grid-stride loop
// (one more for the tail), the lanes' tree (at most 2 levels), the warp's 5,
// the block's warps (at most 3), and the same again over the partials.
inline int64_t device_sum_depth(int64_t n, int64_t outputs) {
  if (n <= 1) return 0;
  const ReducePlan p = reduce_shape(outputs, n);
  int64_t d = ceil_div(n, p.blocks * p.threads) + 1 + 2 + 5 + log2_ceil(p.threads / kWarp);
  if (p.blocks > 1) {
    const ReducePlan q = partials_shape(p);
    d += ceil_div(q.n, q.threads) + 5 + log2_ceil(q.threads / kWarp);
  }
  return d;
}

// [SECTION] A reduction over blocks ------------------------------------------------------

// Sum: the running totals are T (int64 for a bool or integer input: they
// wrap), float32 for float16 and bfloat16 (Note [Reduced-precision floats]).
template <class T>
struct SumOp {
  using Acc = opmath_t<T>;
  DESCENT_HD Acc identity() const { return Acc(0); }
  template <class S>
  DESCENT_HD Acc make(S x, int64_t) const {
    return Acc(x);
  }
  DESCENT_HD Acc combine(Acc a, Acc b) const { return plus(a, b); }
};

// Max: the value and its position; a NaN wins, then the larger, then the
// smaller position, so any order of combining gives the CPU's first maximum.
template <class T>
struct MaxAcc {
  T v;
  int64_t k;  // -1: no element yet
};
template <class T>
struct MaxOp {
  using Acc = MaxAcc<T>;
  DESCENT_HD Acc identity() const { return Acc{T(0), -1}; }
  template <class S>
  DESCENT_HD Acc make(S x, int64_t k) const {
    return Acc{T(x), k};
  }
  DESCENT_HD Acc combine(Acc a, Acc b) const {
    if (a.k < 0) return b;
    if (b.k < 0) return a;
    const bool an = a.v != a.v, bn = b.v != b.v;  // NaN (never for bool and the integers)
    if (an || bn) return an && bn ? (a.k < b.k ? a : b) : an ? a : b;
    if (a.v > b.v) return a;
    if (b.v > a.v) return b;
    return a.k < b.k ? a : b;
  }
};

// `vec` neighbouring elements in one load (16 bytes: a float4 on CUDA).
template <class S, int kVec>
struct alignas(sizeof(S) * kVec) Pack {
  S v[kVec];
};

// Step 1 for one thread, then step 2: the thread's total over its loads of
// result j's elements, read from `base` (the input at result j's start).
template <int kVec, class R, class S>
DESCENT_HD typename R::Acc thread_total(const R& r, const S* base, const ReducePlan& p, int64_t bx, uint32_t t) {
  using Acc = typename R::Acc;
  const int64_t g = bx * p.threads + t, stride = p.blocks * p.threads;
  Acc lane[kVec];
  for (int l = 0; l < kVec; ++l) lane[l] = r.identity();
  if constexpr (kVec > 1) {
    using P = Pack<S, kVec>;
    const P* packs = reinterpret_cast<const P*>(base);
    const int64_t loads = p.n / kVec;
    auto add = [&](const P& a, int64_t at) {
      for (int l = 0; l < kVec; ++l) lane[l] = r.combine(lane[l], r.make(a.v[l], at * kVec + l));
    };
    int64_t v = g;
    // Four loads in flight before their additions, which keep the plain loop's order.
    for (; v + 3 * stride < loads; v += 4 * stride) {
      const P a0 = packs[v], a1 = packs[v + stride], a2 = packs[v + 2 * stride], a3 = packs[v + 3 * stride];
      add(a0, v), add(a1, v + stride), add(a2, v + 2 * stride), add(a3, v + 3 * stride);
    }
    for (; v < loads; v += stride) add(packs[v], v);
    if (g == 0)
      for (int64_t k = loads * kVec; k < p.n; ++k)
        lane[k - loads * kVec] = r.combine(lane[k - loads * kVec], r.make(base[k], k));
    for (int width = kVec / 2; width >= 1; width /= 2)
      for (int l = 0; l < width; ++l) lane[l] = r.combine(lane[l], lane[l + width]);
  } else if (p.run) {
    for (int64_t k = g; k < p.n; k += stride) lane[0] = r.combine(lane[0], r.make(base[k], k));
  } else {
    for (int64_t k = g; k < p.n; k += stride) lane[0] = r.combine(lane[0], r.make(base[p.red.offset(k)], k));
  }
  return lane[0];
}

// Steps 3 and 4 on an array, as the simulated device runs them: the tree a
// warp's shuffles make (lane i takes lane i + 16, 8, 4, 2, 1), on each warp
// of `threads` values, then on the warps' totals padded to 32 with the
// identity. v[0] holds the block's total.
template <class R>
void block_tree(const R& r, typename R::Acc* v, uint32_t threads) {
  using Acc = typename R::Acc;
  auto warp = [&](Acc* w) {
    for (uint32_t off = kWarp / 2; off >= 1; off /= 2)
      for (uint32_t i = 0; i < off; ++i) w[i] = r.combine(w[i], w[i + off]);
  };
  Acc totals[kWarp];
  for (uint32_t i = 0; i < kWarp; ++i) totals[i] = r.identity();
  for (uint32_t w = 0; w < threads / kWarp; ++w) {
    warp(v + w * kWarp);
    totals[w] = v[w * kWarp];
  }
  warp(totals);
  v[0] = totals[0];
}

// Where a sum's or max's totals go: the result (mean divides it by the
// count, in the totals' type, and rounds once; max.dim writes the position
// too), or the partials of a first pass (in the totals' type).
template <class T>
struct SumOut {
  using Acc = opmath_t<T>;
  T* y;
  bool mean;
  int64_t count;
  DESCENT_HD void write(int64_t j, Acc a) const {
    if constexpr (is_float_v<T>)
      y[j] = T(!mean ? a : count ? Acc(a / Acc(count)) : Acc(NAN));
    else
      y[j] = a;
  }
};
template <class T>
struct MaxOut {
  T* y;
  int64_t* index;  // nullptr for max of everything
  DESCENT_HD void write(int64_t j, MaxAcc<T> a) const {
    y[j] = a.v;
    if (index) index[j] = a.k;
  }
};
template <class T>
struct SumPartials {
  T* p;
  DESCENT_HD void write(int64_t j, T a) const { p[j] = a; }
  DESCENT_HD T get(int64_t i) const { return p[i]; }
};
template <class T>
struct MaxPartials {
  T* v;
  int64_t* k;
  DESCENT_HD void write(int64_t j, MaxAcc<T> a) const { v[j] = a.v, k[j] = a.k; }
  DESCENT_HD MaxAcc<T> get(int64_t i) const { return MaxAcc<T>{v[i], k[i]}; }
};

// [SECTION] The tiled matrix product --------------------------------------------------------

// Note [Device matmul]
// ~~~~~~~~~~~~~~~~~~~~
// out[b, i, j] = sum over k of a[b, i, k] * b[b, k, j], each output built by
// one thread in ascending k, as the CPU builds it (Note [Register-blocked
// matmul]), with one difference: each step is a fused multiply-add, one
// rounding instead of two, because that is the instruction a GPU has (FFMA:
// a multiply and an add for the price of one; cuBLAS uses it too), and an
// unfused product would halve the float32 speed. The sim fuses the same
// steps (fma from <cmath>, correctly rounded), so sim:0 and cuda:N agree bit
// for bit; against the CPU, each is within gamma_K * sum_k |a_ik| |b_kj| of
// the exact product, so they differ by at most twice that (Note [Device
// matmul bound], verifier.cpp). The integers wrap and are exact.
//
// How a block works (the same in the sim's body and the CUDA kernels): the
// output is cut into tiles of BM x BN, one block each (blockIdx.z the batch);
// the block walks k in steps of BK, copying a BM x BK tile of a and a BK x BN
// tile of b into shared memory (zeros past the edges), waits for every thread,
// and each thread adds the products of that step into its own TM x TN outputs
// held in registers. Each element of a and b read from memory feeds TM or TN
// multiply-adds. The float32 kernel on CUDA is the same tiling at
// 128 x 128 x 32, arranged for the GPU: 128 threads in four warps, each warp a
// 64 x 64 quarter of the tile and each thread 16 x 8 outputs, reading a and b
// 16 bytes at a time, loading the next k tile through registers, 8 k at a
// time, while the shared one is in use (two shared buffers, one barrier a
// tile) and the next k step's values from shared memory while the current
// one's multiply-adds run (cuda_matmul_3_register_tiles.cu says why this
// shape won: 0.905 of cuBLAS at 4096^3 on the H200, from 0.76 with 256 threads
// of 8 x 8). Every tiling gives the same bits: only the order of k matters,
// and it is always ascending. float16 and bfloat16 run the general tiles on
// sim:0, adding in float32; on CUDA they run on tensor cores, whose order is
// the hardware's (Note [Tensor-core matmul], cuda_matmul_4_wmma.cu):
// there the two devices agree within the bound, not bit for bit, unless a
// lower rung of the ladder is asked for (Note [The matmul ladder],
// matmul_ladder.h: one thread per output, shared tiles, register tiles).

struct MatmulPlan {
  int64_t batch = 0, m = 0, n = 0, k = 0;
  int64_t sa[3] = {}, sb[3] = {};  // strides of a [batch, m, k] and b [batch, k, n]; out is contiguous
};

// One multiply-add step of an output: fused for floats, wrapping for the
// integers (a float16 or bfloat16 element is read as the float32 it is).
DESCENT_HD inline float mul_add(float a, float b, float acc) { return fmaf(a, b, acc); }
DESCENT_HD inline double mul_add(double a, double b, double acc) { return fma(a, b, acc); }
template <class T, std::enable_if_t<is_int_v<T>, int> = 0>
DESCENT_HD inline T mul_add(T a, T b, T acc) {
  return plus(acc, times(a, b));
}

// The tiling of the general kernel (float64, the integers, and float32 operands
// the fast kernel does not take): 64 x 64 tiles, k steps of 16, 4 x 4 outputs a thread.
struct GenericTile {
  static constexpr int BM = 64, BN = 64, BK = 16, TM = 4, TN = 4;
  static constexpr int kThreads = (BM / TM) * (BN / TN);  // 256
};
// The float32 CUDA kernel's block tile and k step (the sim runs them with the
// general body, 256 threads of 8 x 8: same bits; the CUDA kernel divides the
// same tile among 128 threads of 16 x 8, Note [Device matmul]).
struct Float32Tile {
  static constexpr int BM = 128, BN = 128, BK = 8, TM = 8, TN = 8;
  static constexpr int kThreads = (BM / TM) * (BN / TN);  // 256
};

// The matmul ladder's rung 2 (Note [The matmul ladder], matmul_ladder.h):
// 16 x 16 tiles, one output a thread, so each thread's k loop is the naive
// one's, its operands read from shared memory.
struct SharedTile {
  static constexpr int BM = 16, BN = 16, BK = 16, TM = 1, TN = 1;
  static constexpr int kThreads = (BM / TM) * (BN / TN);  // 256
};

// The ladder's rung 1: output (i, j) of one matrix, k ascending from device
// memory, the same multiply-adds in the same order as the tiles (whose
// zeros past the end of k add nothing: acc + 0 * 0 is acc).
template <class T>
DESCENT_HD void naive_output(const MatmulPlan& p, const T* a, const T* b, T* out, int64_t i, int64_t j) {
  using Acc = opmath_t<T>;
  Acc acc = Acc(0);
  for (int64_t k = 0; k < p.k; ++k)
    acc = mul_add(Acc(a[i * p.sa[1] + k * p.sa[2]]), Acc(b[k * p.sb[1] + j * p.sb[2]]), acc);
  out[i * p.n + j] = T(acc);
}

// Thread t's share of copying the k tile at k0 into shared memory:
// as[kk][i] = a[row0 + i, k0 + kk], bs[kk][j] = b[k0 + kk, col0 + j], zero outside.
template <class Tile, class T>
DESCENT_HD void load_tiles(const MatmulPlan& p, const T* a, const T* b, int64_t row0, int64_t col0, int64_t k0,
                           T (*as)[Tile::BM], T (*bs)[Tile::BN], uint32_t t) {
  for (int e = int(t); e < Tile::BM * Tile::BK; e += Tile::kThreads) {
    const int i = e / Tile::BK, kk = e % Tile::BK;
    const int64_t r = row0 + i, c = k0 + kk;
    as[kk][i] = r < p.m && c < p.k ? a[r * p.sa[1] + c * p.sa[2]] : T(0);
  }
  for (int e = int(t); e < Tile::BK * Tile::BN; e += Tile::kThreads) {
    const int kk = e / Tile::BN, j = e % Tile::BN;
    const int64_t r = k0 + kk, c = col0 + j;
    bs[kk][j] = r < p.k && c < p.n ? b[r * p.sb[1] + c * p.sb[2]] : T(0);
  }
}

// Thread t's multiply-adds for one k tile, into its TM x TN running outputs
// (Acc: T, or float32 for float16 and bfloat16). Past the end of k the tiles
// hold zeros: acc + 0 * 0 is acc exactly (acc starts at +0 and so is never -0).
template <class Tile, class T, class Acc>
DESCENT_HD void multiply_tiles(const T (*as)[Tile::BM], const T (*bs)[Tile::BN], Acc (*acc)[Tile::TN], uint32_t t) {
  const int ty = int(t) / (Tile::BN / Tile::TN), tx = int(t) % (Tile::BN / Tile::TN);
  for (int kk = 0; kk < Tile::BK; ++kk)
    for (int i = 0; i < Tile::TM; ++i)
      for (int j = 0; j < Tile::TN; ++j)
        acc[i][j] = mul_add(Acc(as[kk][ty * Tile::TM + i]), Acc(bs[kk][tx * Tile::TN + j]), acc[i][j]);
}

// Thread t's outputs written to out (contiguous [batch, m, n]), inside the matrix only.
template <class Tile, class T, class Acc>
DESCENT_HD void store_tile(const MatmulPlan& p, T* out, int64_t row0, int64_t col0, const Acc (*acc)[Tile::TN],
                           uint32_t t) {
  const int ty = int(t) / (Tile::BN / Tile::TN), tx = int(t) % (Tile::BN / Tile::TN);
  for (int i = 0; i < Tile::TM; ++i)
    for (int j = 0; j < Tile::TN; ++j) {
      const int64_t r = row0 + ty * Tile::TM + i, c = col0 + tx * Tile::TN + j;
      if (r < p.m && c < p.n) out[r * p.n + c] = T(acc[i][j]);
    }
}

// [SECTION] Gather and scatter ---------------------------------------------------------------

// aten::index on a device (Note [Advanced indexing], indexing.cpp): result
// element i is self's element at offset(i): self's strides over the dims
// not indexed, plus, per indexed dim, the position an index tensor holds
// (its copy on the device) times self's stride there.
struct GatherPlan {
  int64_t numel = 0;
  int dims = 0;  // of the result
  int64_t shape[kDevMaxDims] = {};
  int64_t self_strides[kDevMaxDims] = {};                // over the result's dims (0 on the indexed ones)
  int indexed = 0;                                       // how many index tensors
  const int64_t* index[kDevMaxDims] = {};                // device pointers
  int64_t index_strides[kDevMaxDims][kDevMaxDims] = {};  // each index tensor's strides over the result's dims
  int64_t dim_size[kDevMaxDims] = {}, dim_stride[kDevMaxDims] = {};  // self's size and stride at that index's dim
  DESCENT_HD int64_t offset(int64_t linear) const {
    int64_t coord[kDevMaxDims];
    for (int d = dims - 1; d >= 0; --d) {
      coord[d] = linear % shape[d];
      linear /= shape[d];
    }
    int64_t off = 0;
    for (int d = 0; d < dims; ++d) off += coord[d] * self_strides[d];
    for (int x = 0; x < indexed; ++x) {
      int64_t pos = 0;
      for (int d = 0; d < dims; ++d) pos += coord[d] * index_strides[x][d];
      int64_t v = index[x][pos];  // in range: checked on the host before the launch
      if (v < 0) v += dim_size[x];
      off += v * dim_stride[x];
    }
    return off;
  }
};

// aten::index_put_ on a device: the host has found every target (to check
// it) and sorted the result's elements by target, stably; segment s writes
// target[s] from the elements order[start[s]], ..., order[start[s + 1] - 1]:
// added in that order (accumulate), or the last of them. So a position named
// twice gets what the CPU's loop gives, bit for bit, with no atomics.
struct ScatterPlan {
  int64_t segments = 0;
  const int64_t* target = nullptr;  // device pointers
  const int64_t* order = nullptr;
  const int64_t* start = nullptr;  // segments + 1 entries
  Strided values;                  // the result's shape, values' (broadcast) strides
  bool accumulate = false;
};

template <class T>
DESCENT_HD void scatter_segment(const ScatterPlan& p, T* self, const T* values, int64_t s) {
  const int64_t lo = p.start[s], hi = p.start[s + 1];
  if (!p.accumulate) {
    self[p.target[s]] = values[p.values.offset(p.order[hi - 1])];
    return;
  }
  T e = self[p.target[s]];
  for (int64_t r = lo; r < hi; ++r) {
    const T x = values[p.values.offset(p.order[r])];
    if constexpr (is_int_v<T>)
      e = plus(e, x);
    else
      e = T(e + x);  // bool: or; float16 and bfloat16: in float32, rounded each time as the CPU's loop does
  }
  self[p.target[s]] = e;
}

// The launches of gather and scatter on device `d`'s current stream
// (device_reduce_matmul.cpp); indexing.cpp builds the plans.
void gather(Device d, ScalarType dt, const void* self, void* out, const GatherPlan& p);
void scatter(Device d, ScalarType dt, void* self, const void* values, const ScatterPlan& p);

// [SECTION] CUDA entry points ----------------------------------------------------------------

// Defined in cuda_reduce.cu, cuda_index.cu and cuda_sleep.cu (the product's rungs:
// matmul_ladder.h); each launches on stream `s` of a CUDA
// device through floor 8 (launch_cuda) and returns. `partials` holds
// plan.outputs * plan.blocks running totals (and `partial_index` as many
// positions for max) when plan.blocks > 1.
#ifdef DESCENT_HAVE_CUDA
void cuda_sum(const streams::Stream& s, ScalarType in, ScalarType out, const void* x, void* y, void* partials,
              const ReducePlan& plan, bool mean);
void cuda_max(const streams::Stream& s, ScalarType dt, const void* x, void* y, int64_t* indices, void* partials,
              int64_t* partial_index, const ReducePlan& plan);
void cuda_gather(const streams::Stream& s, ScalarType dt, const void* self, void* out, const GatherPlan& plan);
void cuda_scatter(const streams::Stream& s, ScalarType dt, void* self, const void* values, const ScatterPlan& plan);
// descent.cuda._sleep: a kernel that spins for `cycles` of the device's clock.
void cuda_sleep(const streams::Stream& s, int64_t cycles);
#endif

}  // namespace descent::kernels::device
