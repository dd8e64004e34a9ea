// The tiled kernel of the matmul ladder's rungs 2 and 3 (Note [The matmul
// ladder], matmul_ladder.h): device_reduce.h's block body (Note [Device
// matmul]) as a __global__ template over the tile's shape, which sim:0 runs
// too, so the two devices give the same bits. Rung 2 instantiates it with
// one output a thread (SharedTile), rung 3 with 4 x 4 (GenericTile).
#pragma once

#include <type_traits>

#include <cuda_runtime.h>

#include "floors/core/error.h"
#include "floors/kernels/device/device_reduce.h"
#include "floors/launch/launch.h"

namespace descent::kernels::device {

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

template <class Tile, class T>
void launch_tiled(const streams::Stream& s, const char* kernel, const MatmulPlan& p, const void* a, const void* b,
                  void* out) {
  launch::KernelLaunch k = launch::grid_launch(kernel, "aten::mm", ceil_div(p.n, Tile::BN), Tile::kThreads);
  k.grid.y = uint32_t(ceil_div(p.m, Tile::BM));
  k.grid.z = uint32_t(p.batch);
  launch::launch_cuda(s, k, matmul_tiled<Tile, T>, p, static_cast<const T*>(a), static_cast<const T*>(b),
                      static_cast<T*>(out));
}

// visit_dtype without bool, which has no product.
template <class Fn>
void visit_product_dtype(ScalarType dt, Fn&& fn) {
  DESCENT_CHECK(dt != ScalarType::Bool, Error, "cuda_matmul: no product of bool");
  visit_dtype(dt, [&]<typename T>() {
    if constexpr (!std::is_same_v<T, bool>) fn.template operator()<T>();
  });
}

}  // namespace descent::kernels::device
