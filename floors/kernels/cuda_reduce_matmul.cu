// Floor 5 on CUDA: the kernels of the reductions, the matrix product and
// advanced indexing. The algorithms are device_reduce.h's, which the
// simulated device runs too (Note [A reduction over blocks], Note [Device
// matmul]); what is CUDA's own here is how a block's threads meet: warp
// shuffles and shared memory.
//
// [SECTION] Reductions: shuffles, the block's tree, the two passes
// [SECTION] Matrix product: the general tiled kernel
// [SECTION] Matrix product: the float32 kernel
// [SECTION] Gather and scatter
//
// Compiled with --fmad=false (CMakeLists.txt): the only fused multiply-adds
// are the explicit ones of mul_add.
#include <cuda_runtime.h>

#include "floors/core/error.h"
#include "floors/kernels/device_reduce.h"
#include "floors/launch/launch.h"

namespace descent::kernels::device {

namespace {


// [SECTION] Reductions --------------------------------------------------------------------------

// The value lane + off of the warp holds (its own past the warp's end).
__device__ inline float shfl_down(float v, int off) { return __shfl_down_sync(0xffffffffu, v, off); }
__device__ inline double shfl_down(double v, int off) { return __shfl_down_sync(0xffffffffu, v, off); }
__device__ inline int64_t shfl_down(int64_t v, int off) {
  return int64_t(__shfl_down_sync(0xffffffffu, (long long)v, off));
}
__device__ inline bool shfl_down(bool v, int off) { return __shfl_down_sync(0xffffffffu, int(v), off) != 0; }
template <class T>
__device__ inline MaxAcc<T> shfl_down(MaxAcc<T> a, int off) {
  return MaxAcc<T>{shfl_down(a.v, off), shfl_down(a.k, off)};
}

// Steps 3 and 4 of Note [A reduction over blocks]: the tree of block_tree
// (device_reduce.h) by shuffles, lane i taking lane i + off; the warps'
// totals meet in shared memory. Thread 0 returns the block's total.
template <class R>
__device__ typename R::Acc block_reduce(const R& r, typename R::Acc v) {
  using Acc = typename R::Acc;
  __shared__ alignas(16) unsigned char raw[kWarp * sizeof(Acc)];
  Acc* totals = reinterpret_cast<Acc*>(raw);
  const unsigned lane = threadIdx.x % kWarp, warp = threadIdx.x / kWarp;
  for (int off = kWarp / 2; off >= 1; off /= 2) v = r.combine(v, shfl_down(v, off));
  if (lane == 0) totals[warp] = v;
  __syncthreads();
  if (warp == 0) {
    v = lane < blockDim.x / kWarp ? totals[lane] : r.identity();
    for (int off = kWarp / 2; off >= 1; off /= 2) v = r.combine(v, shfl_down(v, off));
  }
  return v;
}

// The first pass: block b reduces its share of result b / p.blocks.
template <int kVec, class R, class S, class Out, class Part>
__global__ void __launch_bounds__(kReduceThreads) reduce_kernel(R r, const S* x, ReducePlan p, Out out, Part part) {
  const int64_t b = blockIdx.x, j = b / p.blocks, bx = b % p.blocks;
  typename R::Acc v = thread_total<kVec>(r, x + p.out.offset(j), p, bx, threadIdx.x);
  v = block_reduce(r, v);
  if (threadIdx.x != 0) return;
  if (p.blocks == 1) out.write(j, v);
  else part.write(b, v);
}

// The second pass: one block per result over its q.n partials.
template <class R, class Out, class Part>
__global__ void __launch_bounds__(kReduceThreads) partials_kernel(R r, ReducePlan q, Out out, Part part) {
  const int64_t j = blockIdx.x;
  typename R::Acc v = r.identity();
  for (int64_t i = threadIdx.x; i < q.n; i += blockDim.x) v = r.combine(v, part.get(j * q.n + i));
  v = block_reduce(r, v);
  if (threadIdx.x == 0) out.write(j, v);
}

template <class R, class S, class Out, class Part>
void reduce(const streams::Stream& s, const char* kernel, const char* op, R r, const S* x, const ReducePlan& p, Out out,
            Part part) {
  const launch::KernelLaunch k = launch::grid_launch(kernel, op, p.outputs * p.blocks, p.threads);
  if (p.vec == 4) launch::launch_cuda(s, k, reduce_kernel<4, R, S, Out, Part>, r, x, p, out, part);
  else if (p.vec == 2) launch::launch_cuda(s, k, reduce_kernel<2, R, S, Out, Part>, r, x, p, out, part);
  else launch::launch_cuda(s, k, reduce_kernel<1, R, S, Out, Part>, r, x, p, out, part);
  if (p.blocks == 1) return;
  const ReducePlan q = partials_shape(p);
  launch::launch_cuda(s, launch::grid_launch(kernel, op, q.outputs, q.threads), partials_kernel<R, Out, Part>, r, q, out, part);
}

}  // namespace

void cuda_sum(const streams::Stream& s, ScalarType in, ScalarType out, const void* x, void* y, void* partials,
              const ReducePlan& plan, bool mean) {
  const char* op = mean ? "aten::mean" : "aten::sum";
  const char* kernel = pick(in, "reduce_sum_bool", "reduce_sum_int64", "reduce_sum_float32", "reduce_sum_float64");
  auto run = [&]<class S, class T>() {
    reduce(s, kernel, op, SumOp<T>{}, static_cast<const S*>(x), plan, SumOut<T>{static_cast<T*>(y), mean, plan.n},
           SumPartials<T>{static_cast<T*>(partials)});
  };
  if (in == ScalarType::Bool && out == ScalarType::Int64) return run.template operator()<bool, int64_t>();
  if (in == ScalarType::Int64 && out == ScalarType::Int64) return run.template operator()<int64_t, int64_t>();
  if (in == ScalarType::Float32 && out == ScalarType::Float32) return run.template operator()<float, float>();
  if (in == ScalarType::Float64 && out == ScalarType::Float64) return run.template operator()<double, double>();
  throw Error("cuda_sum: input and result dtypes do not go together");
}

void cuda_max(const streams::Stream& s, ScalarType dt, const void* x, void* y, int64_t* indices, void* partials,
              int64_t* partial_index, const ReducePlan& plan) {
  const char* kernel = pick(dt, "reduce_max_bool", "reduce_max_int64", "reduce_max_float32", "reduce_max_float64");
  visit_dtype(dt, [&]<typename T>() {
    reduce(s, kernel, "aten::max", MaxOp<T>{}, static_cast<const T*>(x), plan, MaxOut<T>{static_cast<T*>(y), indices},
           MaxPartials<T>{static_cast<T*>(partials), partial_index});
  });
}

// [SECTION] Matrix product: the general tiled kernel ------------------------------------------------

namespace {

template <class Tile, class T>
__global__ void __launch_bounds__(Tile::kThreads) matmul_tiled(MatmulPlan p, const T* a, const T* b, T* out) {
  __shared__ T as[Tile::BK][Tile::BM];
  __shared__ T bs[Tile::BK][Tile::BN];
  T acc[Tile::TM][Tile::TN];
  for (int i = 0; i < Tile::TM; ++i)
    for (int j = 0; j < Tile::TN; ++j) acc[i][j] = T(0);
  const int64_t row0 = int64_t(blockIdx.y) * Tile::BM, col0 = int64_t(blockIdx.x) * Tile::BN;
  a += int64_t(blockIdx.z) * p.sa[0];
  b += int64_t(blockIdx.z) * p.sb[0];
  for (int64_t k0 = 0; k0 < p.k; k0 += Tile::BK) {
    load_tiles<Tile>(p, a, b, row0, col0, k0, as, bs, threadIdx.x);
    __syncthreads();
    multiply_tiles<Tile>(as, bs, acc, threadIdx.x);
    __syncthreads();
  }
  store_tile<Tile>(p, out + int64_t(blockIdx.z) * p.m * p.n, row0, col0, acc, threadIdx.x);
}

// [SECTION] Matrix product: the float32 kernel ------------------------------------------------------

// Note [Device matmul]'s float32 kernel, 128 x 128 outputs a block, k in
// steps of 8, 128 threads (four warps) of 16 x 8 outputs. Its operands: a's
// rows and b's rows contiguous (stride 1 along k and along n), every row
// start 16-byte aligned (lda, ldb and the batch strides multiples of 4) and K
// and N multiples of 4, so that each 16-byte load is wholly inside or outside.
//
// Why this shape (measured on the H200 at 4096^3, cuBLAS 50.9 TFLOP/s):
// 256 threads of 8 x 8 reached 38.6; the same with warp tiles, with k steps
// of 16, or fed by cp.async in 3 or 4 stages, 38-41; this one 45.5 (0.89 of
// cuBLAS). Per k step a thread reads 16 + 8 floats of shared memory for 128
// multiply-adds instead of 8 + 8 for 64: a quarter fewer shared reads per
// product, and with 128 accumulators the products of one step are enough
// independent work that two blocks (eight warps) a multiprocessor hide the
// shared-memory latency. It takes 255 registers a thread, the most
// __launch_bounds__(128, 2) allows, and spills none (nvcc -Xptxas -v).
//
// Each warp owns a 64 x 64 quarter of the block (warps 0 1 / 2 3). Lane (ly,
// lx) = (lane / 8, lane % 8) owns rows ly*4 + {0..3} + 16g (g = 0..3) and
// columns lx*4 + {0..3} + 32h (h = 0..1) of its quarter: each read is a float4,
// a warp's read of the a tile touches 4 distinct float4s (broadcast) and of
// the b tile 8 neighbouring ones (128 bytes): one shared-memory pass each.
// The a tile is stored transposed (k-major), so one read gives four rows at
// one k. The next k tile travels global -> registers while this one is
// multiplied (two shared buffers, one barrier a step), and the next k step's
// fragments are read from shared memory while this step's products run.
constexpr int kF32BM = 128, kF32BN = 128, kF32BK = 8, kF32Threads = 128;
constexpr int kF32TM = 16, kF32TN = 8;  // a thread's outputs: 4 groups of 4 rows, 2 of 4 columns

__global__ void __launch_bounds__(kF32Threads, 2)
    matmul_float32_128x128(MatmulPlan p, const float* __restrict__ a, const float* __restrict__ b, float* __restrict__ out) {
  __shared__ alignas(16) float as[2][kF32BK][kF32BM];
  __shared__ alignas(16) float bs[2][kF32BK][kF32BN];
  const int t = threadIdx.x, lane = t % 32, warp = t / 32;
  const int a_off = (warp / 2) * 64 + (lane / 8) * 4;  // first row of the thread's groups (+16 g)
  const int b_off = (warp % 2) * 64 + (lane % 8) * 4;  // first column of its groups (+32 h)
  const int64_t row0 = int64_t(blockIdx.y) * kF32BM, col0 = int64_t(blockIdx.x) * kF32BN;
  a += int64_t(blockIdx.z) * p.sa[0];
  b += int64_t(blockIdx.z) * p.sb[0];
  out += int64_t(blockIdx.z) * p.m * p.n;
  // What this thread loads of each k tile: two float4s of a (rows t / 2 and
  // 64 + t / 2, k (t % 2) * 4) and two of b (k rows t / 32 and 4 + t / 32,
  // columns (t % 32) * 4); two neighbouring threads read one 32-byte row piece of a.
  const int a_row = t / 2, a_k = (t % 2) * 4, b_k = t / 32, b_col = (t % 32) * 4;
  const bool a_in0 = row0 + a_row < p.m, a_in1 = row0 + 64 + a_row < p.m, b_in = col0 + b_col < p.n;
  const float* a_ptr = a + (row0 + a_row) * p.sa[1] + a_k;
  const float* b_ptr = b + int64_t(b_k) * p.sb[1] + col0 + b_col;
  const float4 zero = make_float4(0, 0, 0, 0);
  float4 na[2], nb[2];  // the next k tile, in flight
  auto load = [&](int64_t k0) {
    const bool ka = k0 + a_k < p.k;
    na[0] = a_in0 && ka ? *reinterpret_cast<const float4*>(a_ptr + k0) : zero;
    na[1] = a_in1 && ka ? *reinterpret_cast<const float4*>(a_ptr + 64 * p.sa[1] + k0) : zero;
    nb[0] = b_in && k0 + b_k < p.k ? *reinterpret_cast<const float4*>(b_ptr + k0 * p.sb[1]) : zero;
    nb[1] = b_in && k0 + 4 + b_k < p.k ? *reinterpret_cast<const float4*>(b_ptr + (k0 + 4) * p.sb[1]) : zero;
  };
  auto store = [&](int buf) {
#pragma unroll
    for (int r = 0; r < 2; ++r) {
      as[buf][a_k + 0][r * 64 + a_row] = na[r].x;
      as[buf][a_k + 1][r * 64 + a_row] = na[r].y;
      as[buf][a_k + 2][r * 64 + a_row] = na[r].z;
      as[buf][a_k + 3][r * 64 + a_row] = na[r].w;
      *reinterpret_cast<float4*>(&bs[buf][r * 4 + b_k][b_col]) = nb[r];
    }
  };

  float acc[kF32TM][kF32TN];
#pragma unroll
  for (int i = 0; i < kF32TM; ++i)
#pragma unroll
    for (int j = 0; j < kF32TN; ++j) acc[i][j] = 0.0f;

  load(0);
  store(0);
  __syncthreads();
  int buf = 0;
  for (int64_t k0 = 0; k0 < p.k; k0 += kF32BK) {
    const bool more = k0 + kF32BK < p.k;
    if (more) load(k0 + kF32BK);  // in flight during the products
    // fa/fb[kk % 2]: step kk's fragments; step kk + 1's are read before step kk's products.
    float fa[2][kF32TM], fb[2][kF32TN];
    auto fragments = [&](int kk, float* ra, float* rb) {
#pragma unroll
      for (int g = 0; g < 4; ++g)
        *reinterpret_cast<float4*>(&ra[g * 4]) = *reinterpret_cast<const float4*>(&as[buf][kk][a_off + g * 16]);
#pragma unroll
      for (int h = 0; h < 2; ++h)
        *reinterpret_cast<float4*>(&rb[h * 4]) = *reinterpret_cast<const float4*>(&bs[buf][kk][b_off + h * 32]);
    };
    fragments(0, fa[0], fb[0]);
#pragma unroll
    for (int kk = 0; kk < kF32BK; ++kk) {
      if (kk + 1 < kF32BK) fragments(kk + 1, fa[(kk + 1) % 2], fb[(kk + 1) % 2]);
#pragma unroll
      for (int i = 0; i < kF32TM; ++i)
#pragma unroll
        for (int j = 0; j < kF32TN; ++j) acc[i][j] = mul_add(fa[kk % 2][i], fb[kk % 2][j], acc[i][j]);
    }
    // The other buffer was last read before the previous barrier: write it now, one barrier a step.
    if (more) store(buf ^ 1);
    __syncthreads();
    buf ^= 1;
  }
#pragma unroll
  for (int i = 0; i < kF32TM; ++i) {
    const int64_t r = row0 + a_off + (i / 4) * 16 + i % 4;
    if (r >= p.m) continue;
#pragma unroll
    for (int h = 0; h < 2; ++h) {
      const int64_t c = col0 + b_off + h * 32;
      if (c < p.n)
        *reinterpret_cast<float4*>(out + r * p.n + c) =
            make_float4(acc[i][h * 4], acc[i][h * 4 + 1], acc[i][h * 4 + 2], acc[i][h * 4 + 3]);
    }
  }
}

bool float32_fast(const MatmulPlan& p, const void* a, const void* b, const void* out) {
  auto aligned = [](const void* q) { return reinterpret_cast<uintptr_t>(q) % 16 == 0; };
  return p.sa[2] == 1 && p.sb[2] == 1 && p.sa[1] % 4 == 0 && p.sb[1] % 4 == 0 && (p.batch == 1 || (p.sa[0] % 4 == 0 && p.sb[0] % 4 == 0)) &&
         p.k % 4 == 0 && p.n % 4 == 0 && aligned(a) && aligned(b) && aligned(out);
}

template <class Tile, class T>
void launch_tiled(const streams::Stream& s, const char* kernel, const MatmulPlan& p, const void* a, const void* b, void* out) {
  launch::KernelLaunch k = launch::grid_launch(kernel, "aten::mm", ceil_div(p.n, Tile::BN), Tile::kThreads);
  k.grid.y = uint32_t(ceil_div(p.m, Tile::BM));
  k.grid.z = uint32_t(p.batch);
  launch::launch_cuda(s, k, matmul_tiled<Tile, T>, p, static_cast<const T*>(a), static_cast<const T*>(b), static_cast<T*>(out));
}

}  // namespace

void cuda_matmul(const streams::Stream& s, ScalarType dt, const void* a, const void* b, void* out, const MatmulPlan& p) {
  DESCENT_CHECK(ceil_div(p.m, 64) < 65536, Error, "aten::mm on CUDA: at most ", 65535 * 64, " rows, got ", p.m);
  switch (dt) {
    case ScalarType::Float32:
      if (float32_fast(p, a, b, out)) {
        launch::KernelLaunch k = launch::grid_launch("matmul_float32_128x128", "aten::mm", ceil_div(p.n, kF32BN), kF32Threads);
        k.grid.y = uint32_t(ceil_div(p.m, kF32BM));
        k.grid.z = uint32_t(p.batch);
        k.shared_bytes = 0;  // static: 2 x (8 x 128 + 8 x 128) floats
        launch::launch_cuda(s, k, matmul_float32_128x128, p, static_cast<const float*>(a), static_cast<const float*>(b),
                            static_cast<float*>(out));
        return;
      }
      return launch_tiled<GenericTile, float>(s, "matmul_tiled_64x64_float32", p, a, b, out);
    case ScalarType::Float64: return launch_tiled<GenericTile, double>(s, "matmul_tiled_64x64_float64", p, a, b, out);
    case ScalarType::Int64: return launch_tiled<GenericTile, int64_t>(s, "matmul_tiled_64x64_int64", p, a, b, out);
    case ScalarType::Bool: break;
  }
  throw Error("cuda_matmul: no product of bool");
}

// [SECTION] Gather and scatter -----------------------------------------------------------------------

namespace {

template <class T>
__global__ void gather_kernel(GatherPlan p, const T* self, T* out) {
  const int64_t stride = int64_t(gridDim.x) * blockDim.x;
  for (int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < p.numel; i += stride) out[i] = self[p.offset(i)];
}

template <class T>
__global__ void scatter_kernel(ScatterPlan p, T* self, const T* values) {
  const int64_t stride = int64_t(gridDim.x) * blockDim.x;
  for (int64_t s = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; s < p.segments; s += stride)
    scatter_segment(p, self, values, s);
}

constexpr int64_t kMaxGrid = 65536;  // a grid-stride loop covers the rest

}  // namespace

void cuda_gather(const streams::Stream& s, ScalarType dt, const void* self, void* out, const GatherPlan& p) {
  const char* kernel = pick(dt, "index_gather_bool", "index_gather_int64", "index_gather_float32", "index_gather_float64");
  visit_dtype(dt, [&]<typename T>() {
    launch::launch_cuda(s, launch::grid_launch(kernel, "aten::index", std::min(kMaxGrid, ceil_div(p.numel, 256)), 256),
                        gather_kernel<T>, p, static_cast<const T*>(self), static_cast<T*>(out));
  });
}

void cuda_scatter(const streams::Stream& s, ScalarType dt, void* self, const void* values, const ScatterPlan& p) {
  const char* kernel = pick(dt, "index_scatter_bool", "index_scatter_int64", "index_scatter_float32", "index_scatter_float64");
  visit_dtype(dt, [&]<typename T>() {
    launch::launch_cuda(s, launch::grid_launch(kernel, "aten::index_put_", std::min(kMaxGrid, ceil_div(p.segments, 256)), 256),
                        scatter_kernel<T>, p, static_cast<T*>(self), static_cast<const T*>(values));
  });
}

}  // namespace descent::kernels::device
