// Floor 5 on CUDA: the kernels of the reductions, the matrix product and
// advanced indexing. The algorithms are device_reduce.h's, which the
// simulated device runs too (Note [A reduction over blocks], Note [Device
// matmul]); what is CUDA's own here is how a block's threads meet: warp
// shuffles and shared memory.
//
// [SECTION] Reductions: shuffles, the block's tree, the two passes
// [SECTION] Matrix product: the general tiled kernel
// [SECTION] Matrix product: the float32 kernel
// [SECTION] Matrix product: float16 and bfloat16 on tensor cores
// [SECTION] Gather and scatter
//
// Compiled with --fmad=false (CMakeLists.txt): the only fused multiply-adds
// are the explicit ones of mul_add.
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>
#include <mma.h>

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
template <class T, std::enable_if_t<is_int_v<T> && sizeof(T) <= sizeof(int), int> = 0>
__device__ inline T shfl_down(T v, int off) {  // int32, int16, int8, uint8: as an int, and back
  return T(__shfl_down_sync(0xffffffffu, int(v), off));
}
template <class T, class = std::enable_if_t<is_reduced_float_v<T>>>
__device__ inline T shfl_down(T v, int off) {  // float16 and bfloat16: their 16 bits
  T r;
  r.bits = uint16_t(__shfl_down_sync(0xffffffffu, int(v.bits), off));
  return r;
}
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
  const char* kernel = kernel_name("reduce_sum", Op::sum, in, in);
  auto run = [&]<class S, class T>() {
    using Acc = opmath_t<T>;
    reduce(s, kernel, op, SumOp<T>{}, static_cast<const S*>(x), plan, SumOut<T>{static_cast<T*>(y), mean, plan.n},
           SumPartials<Acc>{static_cast<Acc*>(partials)});
  };
  if (in == ScalarType::Bool && out == ScalarType::Int64) return run.template operator()<bool, int64_t>();
  if (in == ScalarType::Int64 && out == ScalarType::Int64) return run.template operator()<int64_t, int64_t>();
  // A narrower integer sums into int64, unless a dtype argument asked for its own (sum(x, dtype=torch.int32)).
  if (in == ScalarType::Int32 && out == ScalarType::Int64) return run.template operator()<int32_t, int64_t>();
  if (in == ScalarType::Int16 && out == ScalarType::Int64) return run.template operator()<int16_t, int64_t>();
  if (in == ScalarType::Int8 && out == ScalarType::Int64) return run.template operator()<int8_t, int64_t>();
  if (in == ScalarType::UInt8 && out == ScalarType::Int64) return run.template operator()<uint8_t, int64_t>();
  if (in == ScalarType::Int32 && out == ScalarType::Int32) return run.template operator()<int32_t, int32_t>();
  if (in == ScalarType::Int16 && out == ScalarType::Int16) return run.template operator()<int16_t, int16_t>();
  if (in == ScalarType::Int8 && out == ScalarType::Int8) return run.template operator()<int8_t, int8_t>();
  if (in == ScalarType::UInt8 && out == ScalarType::UInt8) return run.template operator()<uint8_t, uint8_t>();
  if (in == ScalarType::Float32 && out == ScalarType::Float32) return run.template operator()<float, float>();
  if (in == ScalarType::Float64 && out == ScalarType::Float64) return run.template operator()<double, double>();
  if (in == ScalarType::Float16 && out == ScalarType::Float16) return run.template operator()<Half, Half>();
  if (in == ScalarType::BFloat16 && out == ScalarType::BFloat16) return run.template operator()<BFloat16, BFloat16>();
  throw Error("cuda_sum: input and result dtypes do not go together");
}

void cuda_max(const streams::Stream& s, ScalarType dt, const void* x, void* y, int64_t* indices, void* partials,
              int64_t* partial_index, const ReducePlan& plan) {
  const char* kernel = kernel_name("reduce_max", Op::max, dt, dt);
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
  opmath_t<T> acc[Tile::TM][Tile::TN];
  for (int i = 0; i < Tile::TM; ++i)
    for (int j = 0; j < Tile::TN; ++j) acc[i][j] = opmath_t<T>(0);
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

bool aligned16(const void* q) { return reinterpret_cast<uintptr_t>(q) % 16 == 0; }

// The fast kernels' layout, `vec` elements making 16 bytes: rows of a and b
// contiguous along k and n, every row start 16-byte aligned (leading dims
// and batch strides multiples of vec), K and N multiples of vec, so that
// each 16-byte load is wholly inside or outside the matrix.
bool rows_of_16_bytes(const MatmulPlan& p, int vec, const void* a, const void* b) {
  return p.sa[2] == 1 && p.sb[2] == 1 && p.sa[1] % vec == 0 && p.sb[1] % vec == 0 &&
         (p.batch == 1 || (p.sa[0] % vec == 0 && p.sb[0] % vec == 0)) && p.k % vec == 0 && p.n % vec == 0 &&
         aligned16(a) && aligned16(b);
}

// The float32 kernel also stores 16 bytes at a time.
bool float32_fast(const MatmulPlan& p, const void* a, const void* b, const void* out) {
  return rows_of_16_bytes(p, 4, a, b) && aligned16(out);
}

template <class Tile, class T>
void launch_tiled(const streams::Stream& s, const char* kernel, const MatmulPlan& p, const void* a, const void* b, void* out) {
  launch::KernelLaunch k = launch::grid_launch(kernel, "aten::mm", ceil_div(p.n, Tile::BN), Tile::kThreads);
  k.grid.y = uint32_t(ceil_div(p.m, Tile::BM));
  k.grid.z = uint32_t(p.batch);
  launch::launch_cuda(s, k, matmul_tiled<Tile, T>, p, static_cast<const T*>(a), static_cast<const T*>(b), static_cast<T*>(out));
}

// [SECTION] Matrix product: float16 and bfloat16 on tensor cores ------------------------------------

// Note [Tensor-core matmul]
// ~~~~~~~~~~~~~~~~~~~~~~~~~
// A tensor core multiplies 16-bit floats a warp at a time: one mma
// instruction (reached here through CUDA's wmma API) takes a 16 x 16 tile of
// a and one of b, in float16 or bfloat16, and adds their product to a 16 x
// 16 tile of float32 totals spread over the warp's 32 threads. Each product
// of two 16-bit floats is exact in float32; the sums inside the instruction
// are the hardware's, in an order it does not document, so a float16 or
// bfloat16 product on CUDA is not the simulated device's bits (sim:0 runs
// the general tiles, k ascending in float32, as the CPU does): the verifier
// holds both to the CPU within the matmul bound (Note [Device matmul bound]),
// and the float32 totals are rounded once to the output's dtype at the end,
// as PyTorch's and cuBLAS's are.
//
// The block: 128 x 128 outputs, k in steps of 32, 256 threads in eight
// warps (2 x 4), each warp a 64 x 32 piece: 4 x 2 tiles of totals, so each
// a tile read from shared memory feeds two instructions and each b tile
// four. a's and b's k tiles travel global -> registers while the previous
// ones are multiplied (two shared buffers, one barrier a step). The fast
// path reads 16 bytes (eight elements) at a time and needs rows contiguous
// and aligned (rows_of_16_bytes); any other layout reads element by
// element through the strides, with the same tiles. The totals leave
// through shared memory, rounded to the output's dtype, inside the matrix only.
constexpr int kTcBM = 128, kTcBN = 128, kTcBK = 32, kTcThreads = 256;
[[maybe_unused]] constexpr int kTcLdA = kTcBK + 8, kTcLdB = kTcBN + 8;  // shared rows padded by 16 bytes (fewer bank conflicts)

template <class T>
using WmmaType = std::conditional_t<std::is_same_v<T, Half>, __half, __nv_bfloat16>;  // the same 16 bits

// Eight elements of a row, as one 16-byte value.
template <class T>
union Eight {
  uint4 v;
  T e[8];
};

template <class T, bool kFast>
__global__ void __launch_bounds__(kTcThreads) matmul_tensor_core(MatmulPlan p, const T* a, const T* b, T* out) {
#if __CUDA_ARCH__ >= 800
  using namespace nvcuda;
  using W = WmmaType<T>;
  __shared__ alignas(128) T as[2][kTcBM][kTcLdA];
  __shared__ alignas(128) T bs[2][kTcBK][kTcLdB];
  __shared__ alignas(128) float stage[kTcThreads / 32][16 * 16];
  const int t = threadIdx.x, lane = t % 32, warp = t / 32, wm = warp / 4, wn = warp % 4;
  const int64_t row0 = int64_t(blockIdx.y) * kTcBM, col0 = int64_t(blockIdx.x) * kTcBN;
  a += int64_t(blockIdx.z) * p.sa[0];
  b += int64_t(blockIdx.z) * p.sb[0];
  out += int64_t(blockIdx.z) * p.m * p.n;
  // This thread's share of a k tile: rows t / 4 and 64 + t / 4 of a, k (t % 4) * 8;
  // k rows t / 16 and 16 + t / 16 of b, columns (t % 16) * 8. Eight elements each.
  const int a_row = t / 4, a_k = (t % 4) * 8, b_k = t / 16, b_col = (t % 16) * 8;
  Eight<T> na[2], nb[2];
  auto load = [&](int64_t k0) {
    for (int r = 0; r < 2; ++r) {
      const int64_t ra = row0 + r * 64 + a_row, ca = k0 + a_k;
      const int64_t rb = k0 + r * 16 + b_k, cb = col0 + b_col;
      if constexpr (kFast) {
        na[r].v = ra < p.m && ca < p.k ? *reinterpret_cast<const uint4*>(a + ra * p.sa[1] + ca) : make_uint4(0, 0, 0, 0);
        nb[r].v = rb < p.k && cb < p.n ? *reinterpret_cast<const uint4*>(b + rb * p.sb[1] + cb) : make_uint4(0, 0, 0, 0);
      } else {
        for (int e = 0; e < 8; ++e) {
          na[r].e[e] = ra < p.m && ca + e < p.k ? a[ra * p.sa[1] + (ca + e) * p.sa[2]] : T(0.0f);
          nb[r].e[e] = rb < p.k && cb + e < p.n ? b[rb * p.sb[1] + (cb + e) * p.sb[2]] : T(0.0f);
        }
      }
    }
  };
  auto store = [&](int buf) {
    for (int r = 0; r < 2; ++r) {
      *reinterpret_cast<uint4*>(&as[buf][r * 64 + a_row][a_k]) = na[r].v;
      *reinterpret_cast<uint4*>(&bs[buf][r * 16 + b_k][b_col]) = nb[r].v;
    }
  };

  wmma::fragment<wmma::accumulator, 16, 16, 16, float> acc[4][2];
  for (int i = 0; i < 4; ++i)
    for (int j = 0; j < 2; ++j) wmma::fill_fragment(acc[i][j], 0.0f);
  load(0);
  store(0);
  __syncthreads();
  int buf = 0;
  for (int64_t k0 = 0; k0 < p.k; k0 += kTcBK) {
    const bool more = k0 + kTcBK < p.k;
    if (more) load(k0 + kTcBK);  // in flight during the products
#pragma unroll
    for (int kk = 0; kk < kTcBK; kk += 16) {
      wmma::fragment<wmma::matrix_a, 16, 16, 16, W, wmma::row_major> fa[4];
      wmma::fragment<wmma::matrix_b, 16, 16, 16, W, wmma::row_major> fb[2];
#pragma unroll
      for (int i = 0; i < 4; ++i)
        wmma::load_matrix_sync(fa[i], reinterpret_cast<const W*>(&as[buf][wm * 64 + i * 16][kk]), kTcLdA);
#pragma unroll
      for (int j = 0; j < 2; ++j)
        wmma::load_matrix_sync(fb[j], reinterpret_cast<const W*>(&bs[buf][kk][wn * 32 + j * 16]), kTcLdB);
#pragma unroll
      for (int i = 0; i < 4; ++i)
#pragma unroll
        for (int j = 0; j < 2; ++j) wmma::mma_sync(acc[i][j], fa[i], fb[j], acc[i][j]);
    }
    if (more) store(buf ^ 1);  // the other buffer was last read before the previous barrier
    __syncthreads();
    buf ^= 1;
  }
  float* st = stage[warp];
  for (int i = 0; i < 4; ++i)
    for (int j = 0; j < 2; ++j) {
      wmma::store_matrix_sync(st, acc[i][j], 16, wmma::mem_row_major);
      __syncwarp();
      for (int e = lane; e < 256; e += 32) {
        const int64_t r = row0 + wm * 64 + i * 16 + e / 16, c = col0 + wn * 32 + j * 16 + e % 16;
        if (r < p.m && c < p.n) out[r * p.n + c] = T(st[e]);
      }
      __syncwarp();
    }
#else
  __trap();  // tensor cores for bfloat16 need sm_80 or later (the build targets CMAKE_CUDA_ARCHITECTURES)
#endif
}

template <class T>
void launch_tensor_core(const streams::Stream& s, const MatmulPlan& p, const void* a, const void* b, void* out) {
  const bool fast = rows_of_16_bytes(p, 8, a, b);
  const char* kernel = std::is_same_v<T, Half> ? (fast ? "matmul_tensor_core_128x128_float16" : "matmul_tensor_core_strided_float16")
                                               : (fast ? "matmul_tensor_core_128x128_bfloat16" : "matmul_tensor_core_strided_bfloat16");
  launch::KernelLaunch k = launch::grid_launch(kernel, "aten::mm", ceil_div(p.n, kTcBN), kTcThreads);
  k.grid.y = uint32_t(ceil_div(p.m, kTcBM));
  k.grid.z = uint32_t(p.batch);
  k.shared_bytes = 0;  // static: two k tiles of a and b, and the totals' staging
  const T* pa = static_cast<const T*>(a);
  const T* pb = static_cast<const T*>(b);
  T* po = static_cast<T*>(out);
  if (fast) launch::launch_cuda(s, k, matmul_tensor_core<T, true>, p, pa, pb, po);
  else launch::launch_cuda(s, k, matmul_tensor_core<T, false>, p, pa, pb, po);
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
    case ScalarType::Int32: return launch_tiled<GenericTile, int32_t>(s, "matmul_tiled_64x64_int32", p, a, b, out);
    case ScalarType::Int16: return launch_tiled<GenericTile, int16_t>(s, "matmul_tiled_64x64_int16", p, a, b, out);
    case ScalarType::Int8: return launch_tiled<GenericTile, int8_t>(s, "matmul_tiled_64x64_int8", p, a, b, out);
    case ScalarType::UInt8: return launch_tiled<GenericTile, uint8_t>(s, "matmul_tiled_64x64_uint8", p, a, b, out);
    case ScalarType::Float16: return launch_tensor_core<Half>(s, p, a, b, out);
    case ScalarType::BFloat16: return launch_tensor_core<BFloat16>(s, p, a, b, out);
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
  const char* kernel = kernel_name("index_gather", Op::index, dt, dt);
  visit_dtype(dt, [&]<typename T>() {
    launch::launch_cuda(s, launch::grid_launch(kernel, "aten::index", std::min(kMaxGrid, ceil_div(p.numel, 256)), 256),
                        gather_kernel<T>, p, static_cast<const T*>(self), static_cast<T*>(out));
  });
}

void cuda_scatter(const streams::Stream& s, ScalarType dt, void* self, const void* values, const ScatterPlan& p) {
  const char* kernel = kernel_name("index_scatter", Op::index_put_, dt, dt);
  visit_dtype(dt, [&]<typename T>() {
    launch::launch_cuda(s, launch::grid_launch(kernel, "aten::index_put_", std::min(kMaxGrid, ceil_div(p.segments, 256)), 256),
                        scatter_kernel<T>, p, static_cast<T*>(self), static_cast<const T*>(values));
  });
}

}  // namespace descent::kernels::device
