// Floor 5 on a device: the matrix product as a ladder of kernels, from the
// plainest correct one to Hopper's own, each selectable at run time.
//
// [SECTION] The rungs
// [SECTION] Choosing a rung
// [SECTION] Each rung's launch (one .cu file each)
//
// Note [The matmul ladder]
// ~~~~~~~~~~~~~~~~~~~~~~~~
// A learner sees why a library's product is fast by climbing from the
// plainest kernel to the fastest, one idea a rung, each rung a file of its
// own (cuda_matmul_N_*.cu), each verified against the CPU's reference loop:
//   1 naive           one thread per output, k ascending: every operand
//                     element read from device memory K times;
//   2 shared_tiles    16 x 16 tiles of a and b staged in shared memory, one
//                     output a thread: each element read from device memory
//                     K / 16 times, from shared memory the rest;
//   3 register_tiles  each thread 4 x 4 outputs in registers (64 x 64
//                     tiles; float32: 16 x 8 outputs of a 128 x 128 tile, 16-byte
//                     loads, the next tile loaded while this one multiplies,
//                     Note [Device matmul]): fewer shared reads per product;
//   4 wmma            float16 and bfloat16 on tensor cores, a warp at a
//                     time (Note [Tensor-core matmul]);
//   5 wgmma           float16 and bfloat16 on Hopper's warpgroup tensor
//                     cores, fed by the bulk tensor copy engine (TMA) through a
//                     ring of shared-memory stages (Note [Hopper matmul]).
// Rungs 1 to 3 add in ascending k with fused multiply-adds (in float32 for
// the 16-bit floats): they give the same bits as each other and as sim:0,
// which runs them too (its blocks' threads one after the other). Rungs 4 and
// 5 add in the tensor cores' order, within Note [Device matmul bound].
// Auto picks the best rung a dtype has: register_tiles for float32, float64
// and the integers (TF32 tensor cores would round float32's operands to 10
// bits: not behind a switch yet), wgmma for the 16-bit floats on a device of
// compute capability 9.0 (the sm_90a build), wmma on any other. A rung asked
// for but not able to take a call (wmma for float64; wgmma for a layout TMA
// cannot read) runs the dtype's auto rung, or rung 4 for wgmma, and the
// kernel span says so (rung_fallback). The rung that ran is the kernel
// span's `rung` argument, its kernel the launch span's `kernel`.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "floors/core/device.h"
#include "floors/core/dtype.h"
#include "floors/kernels/device/device_reduce.h"

namespace descent::kernels::device {

// [SECTION] The rungs ---------------------------------------------------------------------

enum class MatmulRung : int { Auto = 0, Naive = 1, SharedTiles = 2, RegisterTiles = 3, Wmma = 4, Wgmma = 5 };
constexpr int kMatmulRungs = 5;

const char* rung_name(MatmulRung r);  // "naive", ..., "wgmma"; "auto"
// Whether rung r multiplies dtype dt at all (bool never; wmma and wgmma only
// the 16-bit floats, and wmma float32 too while TF32 is allowed).
bool rung_takes(MatmulRung r, ScalarType dt);
// A product kernel's name as the trace shows it on sim:0 and CUDA alike:
// "matmul_" + family + "_" + dtype ("matmul_naive_float32",
// "matmul_shared_16x16_int64"); families "naive", "shared_16x16",
// "tiled_64x64", "tiled_128x128". The text lives as long as the program.
const char* matmul_kernel_name(std::string_view family, ScalarType dt);

// The rungs that run on d, lowest first: sim:0 runs rungs 1 to 3; a CUDA
// device 1 to 4, and 5 where it is compute capability 9.0.
std::vector<std::string> matmul_rungs(Device d);
// Every later product on d runs rung `name` ("auto": the best per dtype).
// ValueError for a name not in matmul_rungs(d).
void set_matmul_rung(Device d, const std::string& name);
MatmulRung requested_matmul_rung(Device d);

// Whether a float32 product on CUDA may run on tensor cores in TF32 (Note
// [TF32 matmul], cuda_matmul_4_wmma.cu): PyTorch's
// torch.backends.cuda.matmul.allow_tf32, off unless set. Every thread sees
// it. The simulated device has no tensor cores and ignores it, as PyTorch's
// CPU matmul does.
bool allow_tf32();
void set_allow_tf32(bool allow);

// What the last device product of this thread ran, for its kernel span and
// the tests: the rung, the kernel's name, and why the rung asked for could
// not take it ("" when it could).
struct RungRun {
  MatmulRung rung = MatmulRung::Auto;
  const char* kernel = "";
  std::string fallback;
  bool tf32 = false;  // a float32 product that ran in TF32 (Note [TF32 matmul])
};
RungRun& last_matmul_run();

// [SECTION] Choosing a rung ----------------------------------------------------------------

// out = a x b on d's stream `s` (any strides: Note [Device matmul]), by the
// rung requested for d, or the dtype's best; fills last_matmul_run().
void ladder_matmul(const streams::Stream& s, Device d, ScalarType dt, const void* a, const void* b, void* out,
                   const MatmulPlan& p);

inline bool aligned16(const void* q) { return reinterpret_cast<uintptr_t>(q) % 16 == 0; }

// The fast kernels' layout, `vec` elements making 16 bytes: rows of a and b
// contiguous along k and n, every row start 16-byte aligned (leading dims
// and batch strides multiples of vec), K and N multiples of vec, so that
// each 16-byte load is wholly inside or outside the matrix.
inline bool rows_of_16_bytes(const MatmulPlan& p, int vec, const void* a, const void* b) {
  return p.sa[2] == 1 && p.sb[2] == 1 && p.sa[1] % vec == 0 && p.sb[1] % vec == 0 &&
         (p.batch == 1 || (p.sa[0] % vec == 0 && p.sb[0] % vec == 0)) && p.k % vec == 0 && p.n % vec == 0 &&
         aligned16(a) && aligned16(b);
}

// [SECTION] Each rung's launch ---------------------------------------------------------------

// Each launches on stream `s` of a CUDA device and returns the kernel's name
// (a literal). They take any strides, except where said.
#ifdef DESCENT_HAVE_CUDA
const char* cuda_matmul_naive(const streams::Stream& s, ScalarType dt, const void* a, const void* b, void* out,
                              const MatmulPlan& p);
const char* cuda_matmul_shared_tiles(const streams::Stream& s, ScalarType dt, const void* a, const void* b, void* out,
                                     const MatmulPlan& p);
const char* cuda_matmul_register_tiles(const streams::Stream& s, ScalarType dt, const void* a, const void* b, void* out,
                                       const MatmulPlan& p);
const char* cuda_matmul_wmma(const streams::Stream& s, ScalarType dt, const void* a, const void* b, void* out,
                             const MatmulPlan& p);
// Why rung 5 cannot take this call on device `index` ("" when it can):
// Note [Hopper matmul] says what it needs.
std::string wgmma_refusal(int index, ScalarType dt, const void* a, const void* b, const void* out, const MatmulPlan& p);
const char* cuda_matmul_wgmma(const streams::Stream& s, ScalarType dt, const void* a, const void* b, void* out,
                              const MatmulPlan& p);
// Whether this build carries rung 5's sm_90a code and device `index` can run it.
bool wgmma_available(int index);
#endif

}  // namespace descent::kernels::device
