// The matmul ladder's rung 5 (Note [The matmul ladder], matmul_ladder.h):
// float16 and bfloat16 on Hopper's warpgroup tensor cores, fed by its bulk
// tensor copy engine (Note [Hopper matmul] below). Compiled for sm_90a only
// (-gencode=arch=compute_90a,code=sm_90a, floors/kernels/CMakeLists.txt):
// wgmma and setmaxnreg exist on no other target.
#include <atomic>
#include <cstring>

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda.h>  // CUtensorMap and its enums only: the encoder is fetched from the driver at run time (no -lcuda)
#include <cuda_runtime.h>

#include "floors/core/error.h"
#include "floors/kernels/ladder/matmul_ladder.h"
#include "floors/launch/launch.h"

namespace descent::kernels::device {

// Note [Hopper matmul]
// ~~~~~~~~~~~~~~~~~~~~
// Rung 4 keeps a warp's tensor core fed from shared memory that the block's
// own threads filled, one k tile ahead; on Hopper that leaves most of the
// tensor cores idle (0.19 to 0.28 of cuBLAS on the H200). This rung does what
// cuBLAS does there:
//   - wgmma: one instruction per warpgroup (four warps, 128 threads)
//     multiplies a 64 x 16 tile of a by a 16 x 256 tile of b, both read
//     straight from shared memory through descriptors, into 64 x 256
//     float32 totals held in the warpgroup's registers (128 a thread). It
//     runs asynchronously: the warpgroup issues it, commits it to a group,
//     and waits for groups only when it must.
//   - TMA: the copy engine (cp.async.bulk.tensor) moves a whole tile from
//     device memory to shared memory on one thread's word, described by a
//     tensor map made on the host (cuTensorMapEncodeTiled: the matrix's
//     sizes and strides, the tile's box, zeros past the edges), laid out in
//     the 128-byte swizzle wgmma reads without bank conflicts.
//   - A ring of kStages shared-memory stages, each one k tile (64) of a
//     (128 x 64) and b (64 x 256), guarded by two mbarriers each: `full`
//     (the copy engine arrives with the bytes it wrote) and `empty` (each
//     consumer warp arrives once its products have read the stage).
//   - Warp specialization: warpgroup 0 is the producer (one thread issues
//     the copies, waiting on `empty`), warpgroups 1 and 2 the consumers
//     (rows 0-63 and 64-127 of the 128 x 256 block tile, each waiting on
//     `full`). setmaxnreg moves registers from the producer (40 a thread)
//     to the consumers (232), whose 128 totals need them.
//   - The epilogue: each consumer writes its totals, rounded once to the
//     output's dtype, into shared memory (the ring, free once every product
//     has finished: a barrier of the 256 consumer threads), then the block
//     stores whole 16-byte row pieces to device memory, inside the matrix only.
// What it needs, checked on the host (wgmma_refusal), else rung 4 runs and
// the span says why: a device of compute capability 9.0; a's rows and b's
// rows contiguous (stride 1 along k and along n: a [M, K] row-major, b
// [K, N] row-major, which wgmma reads as K-major and N-major), every other
// stride a multiple of 16 bytes and not 0, a and b 16-byte aligned (what
// TMA reads), N a multiple of 8 (the 16-byte stores). M, N and K need not
// be multiples of the tile: TMA fills past the edges with zeros, which add
// nothing, and the epilogue stores only inside the matrix.
// The order of the additions is the tensor cores' (Note [Tensor-core
// matmul]): within Note [Device matmul bound] of the CPU, not its bits.
// Written and compiled (ptxas: 168 registers at entry, no spills) on a
// machine without a GPU; its speed is the H200 run's to say. The next steps
// if it falls short of 0.7 of cuBLAS, in the order they usually pay: a
// persistent grid walking tiles in an L2-friendly order (the epilogue of
// one tile overlapping the next one's loads), each consumer 128 rows (two
// m64 wgmmas), and clusters of two blocks sharing b's tile by TMA multicast.

namespace {

constexpr int kBM = 128, kBN = 256, kBK = 64, kStages = 4;
constexpr int kConsumers = 2;                     // warpgroups, 64 rows each
constexpr int kThreads = 128 * (1 + kConsumers);  // the producer warpgroup first
constexpr int kABytes = kBM * kBK * 2;            // 16 KB: 128 rows of 128 bytes
constexpr int kBChunk = kBK * 64 * 2;             // 8 KB: 64 k rows of 64 columns (128 bytes)
constexpr int kBBytes = kBK * kBN * 2;            // 32 KB: four chunks of 64 columns
constexpr int kStageBytes = kABytes + kBBytes;    // 48 KB
constexpr int kOutLd = kBN + 8;                   // an epilogue row, padded by 16 bytes (no bank conflicts)
constexpr int kSharedBytes = 1024 + kStages * kStageBytes + 2 * kStages * 8;  // 1024: aligning the ring
static_assert(kBM * kOutLd * 2 <= kStages * kStageBytes, "the epilogue's tile fits in the ring");

#if defined(__CUDA_ARCH__) && defined(__CUDA_ARCH_FEAT_SM90_ALL)
#define DESCENT_WGMMA 1
#endif

#ifdef DESCENT_WGMMA
__device__ inline uint32_t shared_addr(const void* p) { return uint32_t(__cvta_generic_to_shared(p)); }

__device__ inline void mbar_init(uint32_t bar, uint32_t count) {
  asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;" ::"r"(bar), "r"(count) : "memory");
}
__device__ inline void mbar_expect_tx(uint32_t bar, uint32_t bytes) {
  asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;" ::"r"(bar), "r"(bytes) : "memory");
}
__device__ inline void mbar_arrive(uint32_t bar) {
  asm volatile("mbarrier.arrive.shared::cta.b64 _, [%0];" ::"r"(bar) : "memory");
}
// Waits until the barrier's phase with this parity has completed (a fresh
// barrier's "previous" phase, parity 1, counts as completed).
__device__ inline void mbar_wait(uint32_t bar, uint32_t parity) {
  uint32_t done = 0;
  do {
    asm volatile("{\n.reg .pred p;\nmbarrier.try_wait.parity.shared::cta.b64 p, [%1], %2;\nselp.u32 %0, 1, 0, p;\n}\n"
                 : "=r"(done)
                 : "r"(bar), "r"(parity)
                 : "memory");
  } while (!done);
}

// The box at (c0, c1, c2) of the tensor map into shared memory at dst, completing on `bar`.
__device__ inline void tma_load(uint32_t dst, const CUtensorMap* map, int c0, int c1, int c2, uint32_t bar) {
  asm volatile(
      "cp.async.bulk.tensor.3d.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1, {%2, %3, %4}], [%5];" ::
          "r"(dst),
      "l"(reinterpret_cast<uint64_t>(map)), "r"(c0), "r"(c1), "r"(c2), "r"(bar)
      : "memory");
}

// A shared-memory matrix descriptor in the 128-byte swizzle: start address,
// leading and stride byte offsets (PTX ISA, "Matrix Descriptor Format").
// K-major (a): rows of 64 k (128 bytes), 8-row groups 1024 bytes apart
// (the leading offset unused). N-major (b): 64-column chunks `lbo` apart,
// 8-k-row groups 1024 bytes apart.
__device__ inline uint64_t descriptor(uint32_t addr, uint32_t lbo, uint32_t sbo) {
  return uint64_t((addr & 0x3FFFF) >> 4) | uint64_t((lbo & 0x3FFFF) >> 4) << 16 | uint64_t((sbo & 0x3FFFF) >> 4) << 32 |
         uint64_t(1) << 62;
}

__device__ inline void wgmma_fence() { asm volatile("wgmma.fence.sync.aligned;" ::: "memory"); }
__device__ inline void wgmma_commit() { asm volatile("wgmma.commit_group.sync.aligned;" ::: "memory"); }
template <int N>
__device__ inline void wgmma_wait() {
  asm volatile("wgmma.wait_group.sync.aligned %0;" ::"n"(N) : "memory");
}
// Ties the totals to this point of the program: the compiler may not read
// or move them across it (the wgmma writes them behind its back).
__device__ inline void fence_totals(float (&d)[128]) {
#pragma unroll
  for (int i = 0; i < 128; ++i) asm volatile("" : "+f"(d[i])::"memory");
}

// d[64 x 256] += a[64 x 16] (K-major) x b[16 x 256] (N-major: imm-trans-b 1).
#define DESCENT_WGMMA_256(TYPE)                                                                                      \
  asm volatile(                                                                                                      \
      "{\n.reg .pred p;\nsetp.ne.b32 p, %130, 0;\n"                                                                  \
      "wgmma.mma_async.sync.aligned.m64n256k16.f32." TYPE "." TYPE                                                   \
      "\n"                                                                                                           \
      "{%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15,"                                       \
      " %16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31,"                             \
      " %32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47,"                             \
      " %48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63,"                             \
      " %64, %65, %66, %67, %68, %69, %70, %71, %72, %73, %74, %75, %76, %77, %78, %79,"                             \
      " %80, %81, %82, %83, %84, %85, %86, %87, %88, %89, %90, %91, %92, %93, %94, %95,"                             \
      " %96, %97, %98, %99, %100, %101, %102, %103, %104, %105, %106, %107, %108, %109, %110, %111,"                 \
      " %112, %113, %114, %115, %116, %117, %118, %119, %120, %121, %122, %123, %124, %125, %126, %127},"            \
      " %128, %129, p, 1, 1, 0, 1;\n}\n"                                                                             \
      : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]), "+f"(d[8]),  \
        "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]), "+f"(d[16]),       \
        "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]), "+f"(d[24]),      \
        "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31]), "+f"(d[32]),      \
        "+f"(d[33]), "+f"(d[34]), "+f"(d[35]), "+f"(d[36]), "+f"(d[37]), "+f"(d[38]), "+f"(d[39]), "+f"(d[40]),      \
        "+f"(d[41]), "+f"(d[42]), "+f"(d[43]), "+f"(d[44]), "+f"(d[45]), "+f"(d[46]), "+f"(d[47]), "+f"(d[48]),      \
        "+f"(d[49]), "+f"(d[50]), "+f"(d[51]), "+f"(d[52]), "+f"(d[53]), "+f"(d[54]), "+f"(d[55]), "+f"(d[56]),      \
        "+f"(d[57]), "+f"(d[58]), "+f"(d[59]), "+f"(d[60]), "+f"(d[61]), "+f"(d[62]), "+f"(d[63]), "+f"(d[64]),      \
        "+f"(d[65]), "+f"(d[66]), "+f"(d[67]), "+f"(d[68]), "+f"(d[69]), "+f"(d[70]), "+f"(d[71]), "+f"(d[72]),      \
        "+f"(d[73]), "+f"(d[74]), "+f"(d[75]), "+f"(d[76]), "+f"(d[77]), "+f"(d[78]), "+f"(d[79]), "+f"(d[80]),      \
        "+f"(d[81]), "+f"(d[82]), "+f"(d[83]), "+f"(d[84]), "+f"(d[85]), "+f"(d[86]), "+f"(d[87]), "+f"(d[88]),      \
        "+f"(d[89]), "+f"(d[90]), "+f"(d[91]), "+f"(d[92]), "+f"(d[93]), "+f"(d[94]), "+f"(d[95]), "+f"(d[96]),      \
        "+f"(d[97]), "+f"(d[98]), "+f"(d[99]), "+f"(d[100]), "+f"(d[101]), "+f"(d[102]), "+f"(d[103]), "+f"(d[104]), \
        "+f"(d[105]), "+f"(d[106]), "+f"(d[107]), "+f"(d[108]), "+f"(d[109]), "+f"(d[110]), "+f"(d[111]),            \
        "+f"(d[112]), "+f"(d[113]), "+f"(d[114]), "+f"(d[115]), "+f"(d[116]), "+f"(d[117]), "+f"(d[118]),            \
        "+f"(d[119]), "+f"(d[120]), "+f"(d[121]), "+f"(d[122]), "+f"(d[123]), "+f"(d[124]), "+f"(d[125]),            \
        "+f"(d[126]), "+f"(d[127])                                                                                   \
      : "l"(desc_a), "l"(desc_b), "r"(1));

__device__ inline void wgmma_256(float (&d)[128], uint64_t desc_a, uint64_t desc_b,
                                 __nv_bfloat16*){DESCENT_WGMMA_256("bf16")} __device__
    inline void wgmma_256(float (&d)[128], uint64_t desc_a, uint64_t desc_b, __half*) {
  DESCENT_WGMMA_256("f16")
}
#undef DESCENT_WGMMA_256

// Two totals rounded to the output's dtype, as one 32-bit store.
__device__ inline uint32_t pack2(float x, float y, __nv_bfloat16*) {
  __nv_bfloat162 v = __floats2bfloat162_rn(x, y);
  uint32_t u;
  memcpy(&u, &v, 4);
  return u;
}
__device__ inline uint32_t pack2(float x, float y, __half*) {
  __half2 v = __floats2half2_rn(x, y);
  uint32_t u;
  memcpy(&u, &v, 4);
  return u;
}
#endif  // DESCENT_WGMMA

#ifdef DESCENT_WGMMA
// Consumer warpgroup c (rows 64 c ... of the block's tile): the products of
// every k tile as the ring fills, then the epilogue.
template <class W>
__device__ inline void consume(unsigned char* ring, uint32_t ring_addr, uint32_t full, uint32_t empty, int c,
                               int ktiles, W* out, int m, int n, int row0, int col0, int z) {
  const int t = threadIdx.x % 128, warp = t / 32, lane = t % 32;
  float d[128];
#pragma unroll
  for (int i = 0; i < 128; ++i) d[i] = 0.0f;
  fence_totals(d);
  for (int i = 0; i < ktiles; ++i) {
    const int s = i % kStages;
    mbar_wait(full + 8 * s, (i / kStages) & 1);
    const uint32_t sa = ring_addr + s * kStageBytes + c * 64 * 128, sb = ring_addr + s * kStageBytes + kABytes;
    wgmma_fence();
#pragma unroll
    for (int kk = 0; kk < kBK / 16; ++kk)  // 16 k a step: 32 bytes along a's rows, 16 rows (2048 bytes) of b
      wgmma_256(d, descriptor(sa + kk * 32, 16, 1024), descriptor(sb + kk * 2048, kBChunk, 1024),
                static_cast<W*>(nullptr));
    wgmma_commit();
    // The previous tile's products are done (this one's may still run):
    // its stage goes back to the producer.
    wgmma_wait<1>();
    fence_totals(d);
    if (i > 0 && lane == 0) mbar_arrive(empty + 8 * ((i - 1) % kStages));
  }
  wgmma_wait<0>();
  fence_totals(d);

  // The epilogue, through shared memory: every consumer's products have
  // read the ring before any total is written into it (named barrier 1: the
  // 256 consumer threads; the producer has gone).
  asm volatile("bar.sync 1, %0;" ::"n"(128 * kConsumers) : "memory");
  W* tile = reinterpret_cast<W*>(ring);  // [kBM][kOutLd]
  // Total d[4j + h] of this thread: row 16 * warp + lane / 4 (+ 8 for h >= 2), column 8j + 2 (lane % 4) (+ 1 for odd h).
  const int r = c * 64 + warp * 16 + lane / 4;
#pragma unroll
  for (int j = 0; j < kBN / 8; ++j) {
    const int col = 8 * j + 2 * (lane % 4);
    *reinterpret_cast<uint32_t*>(tile + r * kOutLd + col) = pack2(d[4 * j], d[4 * j + 1], static_cast<W*>(nullptr));
    *reinterpret_cast<uint32_t*>(tile + (r + 8) * kOutLd + col) =
        pack2(d[4 * j + 2], d[4 * j + 3], static_cast<W*>(nullptr));
  }
  asm volatile("bar.sync 1, %0;" ::"n"(128 * kConsumers) : "memory");
  W* dst = out + int64_t(z) * m * n;
  for (int e = threadIdx.x - 128; e < kBM * kBN / 8; e += 128 * kConsumers) {  // a warp: one row's 512 bytes
    const int rr = e / (kBN / 8), cc = (e % (kBN / 8)) * 8;
    const int64_t gr = row0 + rr, gc = col0 + cc;
    if (gr < m && gc < n)  // n is a multiple of 8: a piece is wholly inside or outside
      *reinterpret_cast<uint4*>(dst + gr * n + gc) = *reinterpret_cast<const uint4*>(tile + rr * kOutLd + cc);
  }
}
#endif  // DESCENT_WGMMA

// One 128 x 256 tile of out[z] (row-major, m x n) per block; W is __nv_bfloat16 or __half.
template <class W>
__global__ void __launch_bounds__(kThreads, 1)
    matmul_wgmma(const __grid_constant__ CUtensorMap map_a, const __grid_constant__ CUtensorMap map_b, W* out, int m,
                 int n, int k) {
#ifdef DESCENT_WGMMA
  extern __shared__ __align__(1024) unsigned char raw[];
  // The 128-byte swizzle repeats every 1024 bytes, and the descriptors
  // assume each tile starts on such a boundary.
  unsigned char* ring = raw + ((1024 - shared_addr(raw) % 1024) % 1024);
  const uint32_t ring_addr = shared_addr(ring);
  const uint32_t full = ring_addr + kStages * kStageBytes, empty = full + kStages * 8;  // kStages barriers each
  const int wg = threadIdx.x / 128, t = threadIdx.x % 128;
  const int row0 = blockIdx.y * kBM, col0 = blockIdx.x * kBN, z = blockIdx.z;
  const int ktiles = (k + kBK - 1) / kBK;
  if (threadIdx.x == 0) {
    for (int s = 0; s < kStages; ++s) {
      mbar_init(full + 8 * s, 1);                // the producer's arrival, with the bytes to come
      mbar_init(empty + 8 * s, kConsumers * 4);  // one arrival per consumer warp
    }
    // The barriers' initialization visible to the copy engine (the async proxy) too.
    asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
    asm volatile("fence.proxy.async.shared::cta;" ::: "memory");
  }
  __syncthreads();

  if (wg == 0) {  // the producer
    asm volatile("setmaxnreg.dec.sync.aligned.u32 40;");
    if (t == 0) {
      for (int i = 0; i < ktiles; ++i) {
        const int s = i % kStages;
        mbar_wait(empty + 8 * s, ((i / kStages) & 1) ^ 1);  // the consumers are done with this stage's last use
        const uint32_t bar = full + 8 * s, sa = ring_addr + s * kStageBytes, sb = sa + kABytes;
        mbar_expect_tx(bar, kStageBytes);  // the whole boxes, zeros past the edges included
        tma_load(sa, &map_a, i * kBK, row0, z, bar);
#pragma unroll
        for (int c = 0; c < kBN / 64; ++c) tma_load(sb + c * kBChunk, &map_b, col0 + c * 64, i * kBK, z, bar);
      }
    }
  } else {  // a consumer (the roles are the two branches of one if: setmaxnreg needs that)
    asm volatile("setmaxnreg.inc.sync.aligned.u32 232;");
    consume(ring, ring_addr, full, empty, wg - 1, ktiles, out, m, n, row0, col0, z);
  }
#else
  __trap();  // built without sm_90a code: wgmma_available() keeps the host from launching it
#endif
}

// cuTensorMapEncodeTiled, found in the driver once (CUDA's runtime hands
// out the driver's entry points, so the build needs no -lcuda).
using EncodeTiled = CUresult (*)(CUtensorMap*, CUtensorMapDataType, cuuint32_t, void*, const cuuint64_t*,
                                 const cuuint64_t*, const cuuint32_t*, const cuuint32_t*, CUtensorMapInterleave,
                                 CUtensorMapSwizzle, CUtensorMapL2promotion, CUtensorMapFloatOOBfill);
EncodeTiled encode_tiled() {
  static const EncodeTiled fn = [] {
    void* p = nullptr;
    cudaDriverEntryPointQueryResult found{};
    if (cudaGetDriverEntryPointByVersion("cuTensorMapEncodeTiled", &p, 12000, cudaEnableDefault, &found) !=
            cudaSuccess ||
        found != cudaDriverEntryPointSuccess) {
      (void)cudaGetLastError();
      p = nullptr;
    }
    return reinterpret_cast<EncodeTiled>(p);
  }();
  return fn;
}

// A 3-d tensor map (inner, outer, batch) over a 16-bit matrix: its rows
// `ld` elements apart, its matrices `batch_stride` apart, boxes of
// box_inner x box_outer x 1, swizzled by 128 bytes. The CUresult.
int make_map(CUtensorMap* map, ScalarType dt, const void* base, int64_t inner, int64_t outer, int64_t batch, int64_t ld,
             int64_t batch_stride, int box_inner, int box_outer) {
  const EncodeTiled encode = encode_tiled();
  if (encode == nullptr) return -1;
  const cuuint64_t dims[3] = {cuuint64_t(inner), cuuint64_t(outer), cuuint64_t(batch)};
  const cuuint64_t strides[2] = {cuuint64_t(ld) * 2, cuuint64_t(batch == 1 ? ld * outer : batch_stride) * 2};
  const cuuint32_t box[3] = {cuuint32_t(box_inner), cuuint32_t(box_outer), 1}, step[3] = {1, 1, 1};
  return int(encode(map,
                    dt == ScalarType::BFloat16 ? CU_TENSOR_MAP_DATA_TYPE_BFLOAT16 : CU_TENSOR_MAP_DATA_TYPE_FLOAT16, 3,
                    const_cast<void*>(base), dims, strides, box, step, CU_TENSOR_MAP_INTERLEAVE_NONE,
                    CU_TENSOR_MAP_SWIZZLE_128B, CU_TENSOR_MAP_L2_PROMOTION_L2_256B, CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE));
}

constexpr int kMaxDevices = 64;

}  // namespace

bool wgmma_available(int index) {
  static std::atomic<int> known[kMaxDevices] = {};  // 0 unknown, 1 yes, 2 no
  if (index < 0 || index >= kMaxDevices) return false;
  int v = known[index].load(std::memory_order_relaxed);
  if (v == 0) {
    int major = 0, minor = 0;
    cudaFuncAttributes attr{};
    const bool ok = cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, index) == cudaSuccess &&
                    cudaDeviceGetAttribute(&minor, cudaDevAttrComputeCapabilityMinor, index) == cudaSuccess &&
                    major == 9 && minor == 0 && encode_tiled() != nullptr &&
                    cudaFuncGetAttributes(&attr, matmul_wgmma<__nv_bfloat16>) == cudaSuccess &&
                    attr.binaryVersion == 90;
    if (!ok) (void)cudaGetLastError();
    v = ok ? 1 : 2;
    known[index].store(v, std::memory_order_relaxed);
  }
  return v == 1;
}

std::string wgmma_refusal(int index, ScalarType dt, const void* a, const void* b, const void* out,
                          const MatmulPlan& p) {
  if (dt != ScalarType::Float16 && dt != ScalarType::BFloat16) return "wgmma takes float16 and bfloat16 only";
  if (!wgmma_available(index)) return "wgmma needs a device of compute capability 9.0 and this build's sm_90a code";
  if (p.sa[2] != 1 || p.sb[2] != 1) return "wgmma needs a's and b's rows contiguous (stride 1 along k and along n)";
  if (p.sa[1] % 8 != 0 || p.sb[1] % 8 != 0) return "wgmma needs row strides of a multiple of 16 bytes";
  if (p.batch > 1 && (p.sa[0] % 8 != 0 || p.sb[0] % 8 != 0 || p.sa[0] == 0 || p.sb[0] == 0))
    return "wgmma needs batch strides of a non-zero multiple of 16 bytes";
  if (!aligned16(a) || !aligned16(b) || !aligned16(out)) return "wgmma needs a, b and the output 16-byte aligned";
  if (p.n % 8 != 0) return "wgmma needs N a multiple of 8 (its 16-byte stores)";
  if (p.m >= (int64_t(1) << 31) || p.n >= (int64_t(1) << 31) || p.k >= (int64_t(1) << 31))
    return "wgmma needs M, N and K below 2^31";
  if (ceil_div(p.m, kBM) >= 65536) return "wgmma takes at most 65535 tiles of 128 rows";
  return "";
}

const char* cuda_matmul_wgmma(const streams::Stream& s, ScalarType dt, const void* a, const void* b, void* out,
                              const MatmulPlan& p) {
  CUtensorMap map_a, map_b;
  std::memset(&map_a, 0, sizeof map_a);
  std::memset(&map_b, 0, sizeof map_b);
  // a: [batch][M][K], K innermost, boxes of 64 k x 128 rows; b: [batch][K][N], N innermost, boxes of 64 columns x 64 k.
  const int ea = make_map(&map_a, dt, a, p.k, p.m, p.batch, p.sa[1], p.sa[0], kBK, kBM);
  const int eb = make_map(&map_b, dt, b, p.n, p.k, p.batch, p.sb[1], p.sb[0], 64, kBK);
  DESCENT_CHECK(ea == 0 && eb == 0, Error, "aten::mm: cuTensorMapEncodeTiled refused the operands (CUresult ", ea,
                " and ", eb, ")");
  const bool bf16 = dt == ScalarType::BFloat16;
  const char* kernel = bf16 ? "matmul_wgmma_128x256_bfloat16" : "matmul_wgmma_128x256_float16";
  launch::KernelLaunch k = launch::grid_launch(kernel, "aten::mm", ceil_div(p.n, kBN), kThreads);
  k.grid.y = uint32_t(ceil_div(p.m, kBM));
  k.grid.z = uint32_t(p.batch);
  k.shared_bytes = kSharedBytes;
  const int m = int(p.m), n = int(p.n), kk = int(p.k);
  if (bf16)
    launch::launch_cuda(s, k, matmul_wgmma<__nv_bfloat16>, map_a, map_b, static_cast<__nv_bfloat16*>(out), m, n, kk);
  else
    launch::launch_cuda(s, k, matmul_wgmma<__half>, map_a, map_b, static_cast<__half*>(out), m, n, kk);
  return kernel;
}

}  // namespace descent::kernels::device
