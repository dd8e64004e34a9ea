// The matmul ladder's rung 1 (Note [The matmul ladder], matmul_ladder.h):
// one thread per output. Thread (i, j) of matrix z walks k in ascending order,
// reading a's row i and b's column j straight from device memory, and adds
// each product with one fused multiply-add (in float32 for float16 and
// bfloat16, rounded once at the end): the order and roundings of every other
// rung up to 3, so the same bits. Every element of a is read N times and of
// b M times, all from device memory (the caches catch some): what rung 2's
// shared tiles save. Neighbouring threads take neighbouring columns j, so a
// warp's reads of b are one row piece (coalesced) and of a one element
// (broadcast).
#include "floors/kernels/ladder/cuda_matmul_tiled.cuh"
#include "floors/kernels/ladder/matmul_ladder.h"

namespace descent::kernels::device {

namespace {

constexpr int kNaiveX = 32, kNaiveY = 8;  // a block: 32 columns x 8 rows of outputs

template <class T>
__global__ void __launch_bounds__(kNaiveX* kNaiveY) matmul_naive(MatmulPlan p, const T* a, const T* b, T* out) {
  const int64_t j = int64_t(blockIdx.x) * kNaiveX + threadIdx.x % kNaiveX;
  const int64_t i = int64_t(blockIdx.y) * kNaiveY + threadIdx.x / kNaiveX;
  if (i >= p.m || j >= p.n) return;
  naive_output(p, a + int64_t(blockIdx.z) * p.sa[0], b + int64_t(blockIdx.z) * p.sb[0],
               out + int64_t(blockIdx.z) * p.m * p.n, i, j);
}

}  // namespace

const char* cuda_matmul_naive(const streams::Stream& s, ScalarType dt, const void* a, const void* b, void* out,
                              const MatmulPlan& p) {
  const char* kernel = matmul_kernel_name("naive", dt);
  visit_product_dtype(dt, [&]<class T>() {
    launch::KernelLaunch k = launch::grid_launch(kernel, "aten::mm", ceil_div(p.n, kNaiveX), kNaiveX * kNaiveY);
    k.grid.y = uint32_t(ceil_div(p.m, kNaiveY));
    k.grid.z = uint32_t(p.batch);
    launch::launch_cuda(s, k, matmul_naive<T>, p, static_cast<const T*>(a), static_cast<const T*>(b),
                        static_cast<T*>(out));
  });
  return kernel;
}

}  // namespace descent::kernels::device
