// Floor 5 on CUDA: the kernels of the reductions. The algorithm is
// device_reduce.h's, which the simulated device runs too (Note [A reduction
// over blocks]); what is CUDA's own here is how a block's threads meet: warp
// shuffles and shared memory.
//
// Compiled with --fmad=false (CMakeLists.txt): the only fused multiply-adds
// are the explicit ones of mul_add.
#include <cuda_runtime.h>

#include "floors/core/error.h"
#include "floors/kernels/device/device_reduce.h"
#include "floors/launch/launch.h"

namespace descent::kernels::device {

namespace {

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
  if (p.blocks == 1)
    out.write(j, v);
  else
    part.write(b, v);
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
  if (p.vec == 4)
    launch::launch_cuda(s, k, reduce_kernel<4, R, S, Out, Part>, r, x, p, out, part);
  else if (p.vec == 2)
    launch::launch_cuda(s, k, reduce_kernel<2, R, S, Out, Part>, r, x, p, out, part);
  else
    launch::launch_cuda(s, k, reduce_kernel<1, R, S, Out, Part>, r, x, p, out, part);
  if (p.blocks == 1) return;
  const ReducePlan q = partials_shape(p);
  launch::launch_cuda(s, launch::grid_launch(kernel, op, q.outputs, q.threads), partials_kernel<R, Out, Part>, r, q,
                      out, part);
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

}  // namespace descent::kernels::device
