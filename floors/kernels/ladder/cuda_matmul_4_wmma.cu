// The matmul ladder's rung 4 (Note [The matmul ladder], matmul_ladder.h):
// float16 and bfloat16 on tensor cores, a warp at a time, through CUDA's
// wmma API (Note [Tensor-core matmul] below); float32 there too in TF32
// when it is allowed (Note [TF32 matmul]).
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <mma.h>

#include "floors/kernels/ladder/cuda_matmul_tiled.cuh"
#include "floors/kernels/ladder/matmul_ladder.h"

namespace descent::kernels::device {

namespace {

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
[[maybe_unused]] constexpr int kTcLdA = kTcBK + 8,
                               kTcLdB = kTcBN + 8;  // shared rows padded by 16 bytes (fewer bank conflicts)

template <class T>
using WmmaType = std::conditional_t<std::is_same_v<T, Half>, __half, __nv_bfloat16>;  // the same 16 bits

// Eight elements of a row, as one 16-byte value.
template <class T>
union Eight {
  uint4 v;
  T e[8];
};

// The epilogue of both kernels: a warp's 4 x 2 tiles of float32 totals, each
// stored to the warp's own 16 x 16 stage in shared memory, then written out
// as T from (row0, col0) by the warp's 32 threads, the edges left out.
template <class Acc, class T>
__device__ void store_totals(Acc (&acc)[4][2], float* st, T* out, const MatmulPlan& p, int64_t row0, int64_t col0,
                             int lane) {
#if __CUDA_ARCH__ >= 800
  using namespace nvcuda;
  for (int i = 0; i < 4; ++i)
    for (int j = 0; j < 2; ++j) {
      wmma::store_matrix_sync(st, acc[i][j], 16, wmma::mem_row_major);
      __syncwarp();
      for (int e = lane; e < 256; e += 32) {
        const int64_t r = row0 + i * 16 + e / 16, c = col0 + j * 16 + e % 16;
        if (r < p.m && c < p.n) out[r * p.n + c] = T(st[e]);
      }
      __syncwarp();
    }
#endif
}

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
        na[r].v =
            ra < p.m && ca < p.k ? *reinterpret_cast<const uint4*>(a + ra * p.sa[1] + ca) : make_uint4(0, 0, 0, 0);
        nb[r].v =
            rb < p.k && cb < p.n ? *reinterpret_cast<const uint4*>(b + rb * p.sb[1] + cb) : make_uint4(0, 0, 0, 0);
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
  store_totals(acc, stage[warp], out, p, row0 + wm * 64, col0 + wn * 32, lane);
#else
  __trap();  // tensor cores for bfloat16 need sm_80 or later (the build targets CMAKE_CUDA_ARCHITECTURES)
#endif
}

template <class T>
void launch_tensor_core(const streams::Stream& s, const char* kernel, bool fast, const MatmulPlan& p, const void* a,
                        const void* b, void* out) {
  launch::KernelLaunch k = launch::grid_launch(kernel, "aten::mm", ceil_div(p.n, kTcBN), kTcThreads);
  k.grid.y = uint32_t(ceil_div(p.m, kTcBM));
  k.grid.z = uint32_t(p.batch);
  k.shared_bytes = 0;  // static: two k tiles of a and b, and the totals' staging
  const T* pa = static_cast<const T*>(a);
  const T* pb = static_cast<const T*>(b);
  T* po = static_cast<T*>(out);
  if (fast)
    launch::launch_cuda(s, k, matmul_tensor_core<T, true>, p, pa, pb, po);
  else
    launch::launch_cuda(s, k, matmul_tensor_core<T, false>, p, pa, pb, po);
}

// Note [TF32 matmul]
// ~~~~~~~~~~~~~~~~~~
// float32 runs on tensor cores only when asked (descent.backends.cuda.matmul.
// allow_tf32 = True, or set_float32_matmul_precision("high"), as in
// PyTorch, where it is off for matmuls by default): each operand is rounded
// to TF32 (float32's 8-bit exponent with a 10-bit mantissa) as it enters the
// instruction's fragment, and the products are summed in float32. So the
// result is inexact by design, each product off by up to about 2**-10 of
// itself where float32 would be off by 2**-24: the verifier holds it to Note
// [Device matmul bound] plus that rounding, and the kernel span says
// math=tf32. The block is the 16-bit kernel's, 128 x 128 outputs in eight
// warps of 64 x 32, with k in steps of 16 (a float tile is twice the bytes)
// and 8 per instruction (m16n16k8). Each thread brings two 16-byte chunks of
// a's k tile and two of b's per step; the strided path reads them element by
// element. It is correct, not yet fast: on the H200, 41 TFLOP/s at 4096^3,
// 0.11x cuBLAS's TF32 and no faster than float32's register tiles
// (docs/BENCHMARKS.md); the 16-bit path's wgmma rung shows what it would take.
constexpr int kTfBK = 16, kTfLdA = kTfBK + 4, kTfLdB = kTcBN + 4;  // rows padded by 16 bytes

template <bool kFast>
__global__ void __launch_bounds__(kTcThreads) matmul_tf32(MatmulPlan p, const float* a, const float* b, float* out) {
#if __CUDA_ARCH__ >= 800
  using namespace nvcuda;
  __shared__ alignas(128) float as[2][kTcBM][kTfLdA];
  __shared__ alignas(128) float bs[2][kTfBK][kTfLdB];
  __shared__ alignas(128) float stage[kTcThreads / 32][16 * 16];
  const int t = threadIdx.x, lane = t % 32, warp = t / 32, wm = warp / 4, wn = warp % 4;
  const int64_t row0 = int64_t(blockIdx.y) * kTcBM, col0 = int64_t(blockIdx.x) * kTcBN;
  a += int64_t(blockIdx.z) * p.sa[0];
  b += int64_t(blockIdx.z) * p.sb[0];
  out += int64_t(blockIdx.z) * p.m * p.n;
  float4 na[2], nb[2];
  // Chunk c of this thread: a's row (t + 256 c) / 4, k ((t + 256 c) % 4) * 4; b's k row (t + 256 c) / 32,
  // columns ((t + 256 c) % 32) * 4.
  auto load = [&](int64_t k0) {
    for (int c = 0; c < 2; ++c) {
      const int idx = t + c * kTcThreads;
      const int64_t ra = row0 + idx / 4, ca = k0 + (idx % 4) * 4;
      const int64_t rb = k0 + idx / 32, cb = col0 + (idx % 32) * 4;
      if constexpr (kFast) {
        na[c] =
            ra < p.m && ca < p.k ? *reinterpret_cast<const float4*>(a + ra * p.sa[1] + ca) : make_float4(0, 0, 0, 0);
        nb[c] =
            rb < p.k && cb < p.n ? *reinterpret_cast<const float4*>(b + rb * p.sb[1] + cb) : make_float4(0, 0, 0, 0);
      } else {
        float ea[4], eb[4];
        for (int e = 0; e < 4; ++e) {
          ea[e] = ra < p.m && ca + e < p.k ? a[ra * p.sa[1] + (ca + e) * p.sa[2]] : 0.0f;
          eb[e] = rb < p.k && cb + e < p.n ? b[rb * p.sb[1] + (cb + e) * p.sb[2]] : 0.0f;
        }
        na[c] = make_float4(ea[0], ea[1], ea[2], ea[3]);
        nb[c] = make_float4(eb[0], eb[1], eb[2], eb[3]);
      }
    }
  };
  auto store = [&](int buf) {
    for (int c = 0; c < 2; ++c) {
      const int idx = t + c * kTcThreads;
      *reinterpret_cast<float4*>(&as[buf][idx / 4][(idx % 4) * 4]) = na[c];
      *reinterpret_cast<float4*>(&bs[buf][idx / 32][(idx % 32) * 4]) = nb[c];
    }
  };

  wmma::fragment<wmma::accumulator, 16, 16, 8, float> acc[4][2];
  for (int i = 0; i < 4; ++i)
    for (int j = 0; j < 2; ++j) wmma::fill_fragment(acc[i][j], 0.0f);
  load(0);
  store(0);
  __syncthreads();
  int buf = 0;
  for (int64_t k0 = 0; k0 < p.k; k0 += kTfBK) {
    const bool more = k0 + kTfBK < p.k;
    if (more) load(k0 + kTfBK);  // in flight during the products
#pragma unroll
    for (int kk = 0; kk < kTfBK; kk += 8) {
      wmma::fragment<wmma::matrix_a, 16, 16, 8, wmma::precision::tf32, wmma::row_major> fa[4];
      wmma::fragment<wmma::matrix_b, 16, 16, 8, wmma::precision::tf32, wmma::row_major> fb[2];
#pragma unroll
      for (int i = 0; i < 4; ++i) {
        wmma::load_matrix_sync(fa[i], &as[buf][wm * 64 + i * 16][kk], kTfLdA);
        for (int e = 0; e < fa[i].num_elements; ++e) fa[i].x[e] = wmma::__float_to_tf32(fa[i].x[e]);
      }
#pragma unroll
      for (int j = 0; j < 2; ++j) {
        wmma::load_matrix_sync(fb[j], &bs[buf][kk][wn * 32 + j * 16], kTfLdB);
        for (int e = 0; e < fb[j].num_elements; ++e) fb[j].x[e] = wmma::__float_to_tf32(fb[j].x[e]);
      }
#pragma unroll
      for (int i = 0; i < 4; ++i)
#pragma unroll
        for (int j = 0; j < 2; ++j) wmma::mma_sync(acc[i][j], fa[i], fb[j], acc[i][j]);
    }
    if (more) store(buf ^ 1);  // the other buffer was last read before the previous barrier
    __syncthreads();
    buf ^= 1;
  }
  store_totals(acc, stage[warp], out, p, row0 + wm * 64, col0 + wn * 32, lane);
#else
  __trap();  // TF32 tensor cores need sm_80 or later
#endif
}

}  // namespace

const char* cuda_matmul_wmma(const streams::Stream& s, ScalarType dt, const void* a, const void* b, void* out,
                             const MatmulPlan& p) {
  if (dt == ScalarType::Float32) {  // only when TF32 is allowed (Note [TF32 matmul])
    const bool fast = rows_of_16_bytes(p, 4, a, b);
    const char* kernel = fast ? "matmul_tf32_128x128_float32" : "matmul_tf32_strided_float32";
    launch::KernelLaunch k = launch::grid_launch(kernel, "aten::mm", ceil_div(p.n, kTcBN), kTcThreads);
    k.grid.y = uint32_t(ceil_div(p.m, kTcBM));
    k.grid.z = uint32_t(p.batch);
    k.shared_bytes = 0;  // static: two k tiles of a and b, and the totals' staging
    const auto* pa = static_cast<const float*>(a);
    const auto* pb = static_cast<const float*>(b);
    auto* po = static_cast<float*>(out);
    if (fast)
      launch::launch_cuda(s, k, matmul_tf32<true>, p, pa, pb, po);
    else
      launch::launch_cuda(s, k, matmul_tf32<false>, p, pa, pb, po);
    return kernel;
  }
  DESCENT_CHECK(dt == ScalarType::Float16 || dt == ScalarType::BFloat16, Error,
                "cuda_matmul_wmma: tensor cores take float16, bfloat16 and (with TF32 allowed) float32 only");
  const bool fast = rows_of_16_bytes(p, 8, a, b);
  const char* kernel = dt == ScalarType::Float16
                           ? (fast ? "matmul_tensor_core_128x128_float16" : "matmul_tensor_core_strided_float16")
                           : (fast ? "matmul_tensor_core_128x128_bfloat16" : "matmul_tensor_core_strided_bfloat16");
  if (dt == ScalarType::Float16)
    launch_tensor_core<Half>(s, kernel, fast, p, a, b, out);
  else
    launch_tensor_core<BFloat16>(s, kernel, fast, p, a, b, out);
  return kernel;
}

}  // namespace descent::kernels::device
