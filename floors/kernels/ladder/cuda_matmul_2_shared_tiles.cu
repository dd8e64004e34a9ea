// The matmul ladder's rung 2 (Note [The matmul ladder], matmul_ladder.h):
// shared-memory tiles. A block of 16 x 16 threads owns a 16 x 16 tile of the
// output and walks k 16 at a time: its threads copy a 16 x 16 tile of a and
// one of b into shared memory (one element each, zeros past the edges), wait
// for each other, and each adds the 16 products of its own output, reading
// both tiles from shared memory. Each element read from device memory now
// feeds 16 outputs instead of one. The body is device_reduce.h's
// (load_tiles, multiply_tiles, store_tile), which sim:0 runs too.
#include "floors/kernels/ladder/cuda_matmul_tiled.cuh"
#include "floors/kernels/ladder/matmul_ladder.h"

namespace descent::kernels::device {

const char* cuda_matmul_shared_tiles(const streams::Stream& s, ScalarType dt, const void* a, const void* b, void* out,
                                     const MatmulPlan& p) {
  const char* kernel = matmul_kernel_name("shared_16x16", dt);
  visit_product_dtype(dt, [&]<class T>() { launch_tiled<SharedTile, T>(s, kernel, p, a, b, out); });
  return kernel;
}

}  // namespace descent::kernels::device
