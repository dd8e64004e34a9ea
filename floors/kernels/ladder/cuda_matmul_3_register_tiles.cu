// The matmul ladder's rung 3 (Note [The matmul ladder], matmul_ladder.h):
// register tiles. Each thread keeps a block of outputs in registers, so
// one value read from shared memory feeds several multiply-adds: the
// general kernel (device_reduce.h's body over GenericTile: 64 x 64 tiles,
// 4 x 4 outputs a thread) for every dtype and layout, and for float32 rows
// of 16 bytes a kernel of its own (128 x 128 tiles, 16 x 8 outputs a
// thread), float32's best rung. Same bits as rungs 1 and 2.
//
// Compiled with --fmad=false (CMakeLists.txt): the only fused multiply-adds
// are the explicit ones of mul_add.
#include "floors/kernels/ladder/cuda_matmul_tiled.cuh"
#include "floors/kernels/ladder/matmul_ladder.h"

namespace descent::kernels::device {

namespace {

// Note [Device matmul]'s float32 kernel, 128 x 128 outputs a block, k in
// tiles of 32, 128 threads (four warps) of 16 x 8 outputs. Its operands: a's
// rows and b's rows contiguous (stride 1 along k and along n), every row
// start 16-byte aligned (lda, ldb and the batch strides multiples of 4) and K
// and N multiples of 4, so that each 16-byte load is wholly inside or outside.
//
// Why this shape (measured on the H200 at 4096^3, cuBLAS 50.9 TFLOP/s):
// 256 threads of 8 x 8 reached 38.6; the same with warp tiles, with k steps
// of 16, or fed by cp.async in 3 or 4 stages, 38-41; this one with k tiles
// of 8, 45.5 (0.89 of cuBLAS). Per k step a thread reads 16 + 8 floats of
// shared memory for 128 multiply-adds instead of 8 + 8 for 64: a quarter
// fewer shared reads per product, and with 128 accumulators the products of
// one step are enough independent work that two blocks (eight warps) a
// multiprocessor hide the shared-memory latency. It takes 249 registers a
// thread, of the 255 that __launch_bounds__(128, 2) allows, and spills none
// (nvcc -Xptxas -v).
//
// Each warp owns a 64 x 64 quarter of the block (warps 0 1 / 2 3). Lane (ly,
// lx) = (lane / 8, lane % 8) owns rows ly*4 + {0..3} + 16g (g = 0..3) and
// columns lx*4 + {0..3} + 32h (h = 0..1) of its quarter: each read is a float4,
// a warp's read of the a tile touches 4 distinct float4s (broadcast) and of
// the b tile 8 neighbouring ones (128 bytes): one shared-memory pass each.
// The a tile is stored transposed (k-major), so one read gives four rows at
// one k. The next k tile travels global -> registers -> shared while this one
// is multiplied (two shared buffers, one barrier a tile), and the next k
// step's fragments are read from shared memory while this step's products run.
//
// Note [A k tile of 32, carried 8 at a time]
// ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
// A barrier is where a block's warps wait for the slowest, so fewer barriers,
// fewer waits. A k tile of 32 has a quarter of the barriers of a tile of 8;
// but carried through registers whole it would need 48 more registers a thread
// (64 floats of a and b, not 16), which this kernel does not have. So the next
// tile comes in four pieces of 8 k, through the same 16 registers: piece 0 is
// loaded as the tile's products begin, and at k = 8, 16 and 24 the piece in
// registers is stored to shared memory and the next one loaded. Measured on
// the H200 beside cuBLAS in the same run (a standalone sweep of this kernel's
// variants, identical bits): 4096^3 44.4 TFLOP/s with tiles of 8, 45.4 with
// 16, 46.3 with 32 (0.90-0.92 of cuBLAS), 44.3 with 48; 8192^3 44.8, 45.7,
// 46.8, 45.7. Tried in the same sweep and slower: blocks taken in groups of 8
// rows for L2 (-2%), cp.async in 2 to 4 stages instead of registers (-15%),
// the products column by column or zig-zag (-0 to -5%), the loads issued later
// in the step (-1 to -4%).
constexpr int kF32BM = 128, kF32BN = 128, kF32BK = 32, kF32Piece = 8, kF32Threads = 128;
constexpr int kF32TM = 16, kF32TN = 8;  // a thread's outputs: 4 groups of 4 rows, 2 of 4 columns
// The a tile's rows (one k each) are 4 floats longer than its 128 numbers:
// the two threads that store one 32-byte piece of an a row write k and k + 4
// of one row, 512 floats apart in an unpadded tile (4 rows of 128), the
// same bank. Measured on the H200 at 4096^3, beside the unpadded kernel in
// the same run: 44.0 against 43.3 TFLOP/s (docs/BENCHMARKS.md, 2026-12-02).
constexpr int kF32APad = 4;

// Two k tiles of a (transposed) and of b: 66,560 bytes, more than the 48 KiB
// a kernel gets without asking (the launch asks: CudaLaunchScope); two blocks a
// multiprocessor still fit in its 228 KiB.
struct Float32Tiles {
  float a[2][kF32BK][kF32BM + kF32APad];
  float b[2][kF32BK][kF32BN];
};
constexpr int kF32SharedBytes = int(sizeof(Float32Tiles));

__global__ void __launch_bounds__(kF32Threads, 2)
    matmul_float32_128x128(MatmulPlan p, const float* __restrict__ a, const float* __restrict__ b,
                           float* __restrict__ out) {
  extern __shared__ float4 f32_shared[];
  Float32Tiles& tiles = *reinterpret_cast<Float32Tiles*>(f32_shared);
  const int t = threadIdx.x, lane = t % 32, warp = t / 32;
  const int a_off = (warp / 2) * 64 + (lane / 8) * 4;  // first row of the thread's groups (+16 g)
  const int b_off = (warp % 2) * 64 + (lane % 8) * 4;  // first column of its groups (+32 h)
  const int64_t row0 = int64_t(blockIdx.y) * kF32BM, col0 = int64_t(blockIdx.x) * kF32BN;
  a += int64_t(blockIdx.z) * p.sa[0];
  b += int64_t(blockIdx.z) * p.sb[0];
  out += int64_t(blockIdx.z) * p.m * p.n;
  // What this thread loads of each piece of 8 k: two float4s of a (rows t / 2
  // and 64 + t / 2, k (t % 2) * 4) and two of b (k rows t / 32 and 4 + t / 32,
  // columns (t % 32) * 4); two neighbouring threads read one 32-byte row piece of a.
  const int a_row = t / 2, a_k = (t % 2) * 4, b_k = t / 32, b_col = (t % 32) * 4;
  const bool a_in0 = row0 + a_row < p.m, a_in1 = row0 + 64 + a_row < p.m, b_in = col0 + b_col < p.n;
  const float* a_ptr = a + (row0 + a_row) * p.sa[1] + a_k;
  const float* b_ptr = b + int64_t(b_k) * p.sb[1] + col0 + b_col;
  const float4 zero = make_float4(0, 0, 0, 0);
  float4 na[2], nb[2];  // the next piece, in flight
  auto load = [&](int64_t k0) {
    const bool ka = k0 + a_k < p.k;
    na[0] = a_in0 && ka ? *reinterpret_cast<const float4*>(a_ptr + k0) : zero;
    na[1] = a_in1 && ka ? *reinterpret_cast<const float4*>(a_ptr + 64 * p.sa[1] + k0) : zero;
    nb[0] = b_in && k0 + b_k < p.k ? *reinterpret_cast<const float4*>(b_ptr + k0 * p.sb[1]) : zero;
    nb[1] = b_in && k0 + 4 + b_k < p.k ? *reinterpret_cast<const float4*>(b_ptr + (k0 + 4) * p.sb[1]) : zero;
  };
  auto store = [&](int buf, int piece) {
    float(&as)[kF32BK][kF32BM + kF32APad] = tiles.a[buf];
    const int k = piece * kF32Piece;
#pragma unroll
    for (int r = 0; r < 2; ++r) {
      as[k + a_k + 0][r * 64 + a_row] = na[r].x;
      as[k + a_k + 1][r * 64 + a_row] = na[r].y;
      as[k + a_k + 2][r * 64 + a_row] = na[r].z;
      as[k + a_k + 3][r * 64 + a_row] = na[r].w;
      *reinterpret_cast<float4*>(&tiles.b[buf][k + r * 4 + b_k][b_col]) = nb[r];
    }
  };

  float acc[kF32TM][kF32TN];
#pragma unroll
  for (int i = 0; i < kF32TM; ++i)
#pragma unroll
    for (int j = 0; j < kF32TN; ++j) acc[i][j] = 0.0f;

#pragma unroll
  for (int piece = 0; piece < kF32BK / kF32Piece; ++piece) {
    load(piece * kF32Piece);
    store(0, piece);
  }
  __syncthreads();
  int buf = 0;
  for (int64_t k0 = 0; k0 < p.k; k0 += kF32BK) {
    const bool more = k0 + kF32BK < p.k;
    if (more) load(k0 + kF32BK);  // the next tile's piece 0, in flight during the products
    // fa/fb[kk % 2]: step kk's fragments; step kk + 1's are read before step kk's products.
    float fa[2][kF32TM], fb[2][kF32TN];
    auto fragments = [&](int kk, float* ra, float* rb) {
#pragma unroll
      for (int g = 0; g < 4; ++g)
        *reinterpret_cast<float4*>(&ra[g * 4]) = *reinterpret_cast<const float4*>(&tiles.a[buf][kk][a_off + g * 16]);
#pragma unroll
      for (int h = 0; h < 2; ++h)
        *reinterpret_cast<float4*>(&rb[h * 4]) = *reinterpret_cast<const float4*>(&tiles.b[buf][kk][b_off + h * 32]);
    };
    fragments(0, fa[0], fb[0]);
#pragma unroll
    for (int kk = 0; kk < kF32BK; ++kk) {
      // The other buffer was last read before the previous barrier: its pieces can be written now.
      if (kk > 0 && kk % kF32Piece == 0 && more) {
        store(buf ^ 1, kk / kF32Piece - 1);
        load(k0 + kF32BK + kk);
      }
      if (kk + 1 < kF32BK) fragments(kk + 1, fa[(kk + 1) % 2], fb[(kk + 1) % 2]);
#pragma unroll
      for (int i = 0; i < kF32TM; ++i)
#pragma unroll
        for (int j = 0; j < kF32TN; ++j) acc[i][j] = mul_add(fa[kk % 2][i], fb[kk % 2][j], acc[i][j]);
    }
    if (more) store(buf ^ 1, kF32BK / kF32Piece - 1);
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

// The float32 kernel also stores 16 bytes at a time.
bool float32_fast(const MatmulPlan& p, const void* a, const void* b, const void* out) {
  return rows_of_16_bytes(p, 4, a, b) && aligned16(out);
}

}  // namespace

const char* cuda_matmul_register_tiles(const streams::Stream& s, ScalarType dt, const void* a, const void* b, void* out,
                                       const MatmulPlan& p) {
  if (dt == ScalarType::Float32 && float32_fast(p, a, b, out)) {
    launch::KernelLaunch k =
        launch::grid_launch("matmul_float32_128x128", "aten::mm", ceil_div(p.n, kF32BN), kF32Threads);
    k.grid.y = uint32_t(ceil_div(p.m, kF32BM));
    k.grid.z = uint32_t(p.batch);
    k.shared_bytes = kF32SharedBytes;
    launch::launch_cuda(s, k, matmul_float32_128x128, p, static_cast<const float*>(a), static_cast<const float*>(b),
                        static_cast<float*>(out));
    return "matmul_float32_128x128";
  }
  const char* kernel = matmul_kernel_name("tiled_64x64", dt);
  visit_product_dtype(dt, [&]<class T>() { launch_tiled<GenericTile, T>(s, kernel, p, a, b, out); });
  return kernel;
}

}  // namespace descent::kernels::device
