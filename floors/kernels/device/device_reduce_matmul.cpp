// Floor 5 on a device: the host side of the reductions, the matrix product
// and advanced indexing on sim:0 and cuda:N, and the simulated device's
// blocks.
//
// [SECTION] Plans from tensors
// [SECTION] The simulated device's blocks
// [SECTION] Sums and max
// [SECTION] Matrix product
// [SECTION] Gather and scatter
//
// The boxed kernels (boxed.h, indexing.cpp) check, promote and
// allocate as they do for the CPU, then call these loops for a device
// tensor. Each builds a plan (device_reduce.h), then launches on the
// device's current stream: on sim:0 through launch_sim, whose body runs the
// algorithms of device_reduce.h once per block, the block's threads one
// after the other on the stream's worker; on cuda:N through the kernels of
// cuda_reduce.cu, cuda_matmul_*.cu and cuda_index.cu. Nothing here waits for the device.
#include <algorithm>
#include <memory>
#include <vector>

#include "floors/kernels/device/device_reduce.h"
#include "floors/kernels/kernels.h"
#include "floors/kernels/ladder/matmul_ladder.h"
#include "floors/launch/launch.h"

namespace descent::kernels::device {

static_assert(kDevMaxDims == kMaxDims, "a device plan holds up to kMaxDims sizes inline");

namespace {

// [SECTION] Plans from tensors ----------------------------------------------------------------

Strided strided_of(const DimVector& sizes, const DimVector& strides) {
  Strided s;
  s.dims = sizes.size();
  for (int d = 0; d < s.dims; ++d) s.sizes[d] = sizes[d], s.strides[d] = strides[d];
  return s;
}

// The reduction of `in` into `keep` (in's rank, size 1 on the reduced dims):
// result j's elements start at out.offset(j) (the kept dims, row-major,
// which is keep's contiguous order) and step through red. When they are one
// run of memory, loads take 16 bytes if every run starts aligned.
// `any_order`: the elements may be visited in memory order (a sum of all).
ReducePlan plan_reduction(const Tensor& in, const Tensor& keep, const bool* reduced, bool any_order) {
  DimVector kept_sizes, kept_strides, red_sizes, red_strides;
  for (int d = 0; d < in.dim(); ++d) {
    if (in.sizes()[d] == 1 && in.numel() > 0) continue;  // a dim of size 1 moves nothing
    (reduced[d] ? red_sizes : kept_sizes).push_back(in.sizes()[d]);
    (reduced[d] ? red_strides : kept_strides).push_back(in.strides()[d]);
  }
  const int64_t n = in.numel() == 0 ? 0 : numel_of(red_sizes);
  ReducePlan p = reduce_shape(keep.numel(), n);
  p.out = strided_of(kept_sizes, kept_strides);
  p.red = strided_of(red_sizes, red_strides);
  int64_t step = 1;
  p.run = true;
  for (int d = red_sizes.size() - 1; d >= 0; --d) {
    p.run &= red_strides[d] == step;
    step *= red_sizes[d];
  }
  if (!p.run && any_order && keep.numel() == 1 && dense(in)) {
    p.run = true;  // x.T.sum(): the block of memory in its own order
    p.out = Strided{};
  }
  if (p.run) {
    const int es = int(element_size(in.dtype()));
    const int vec = std::min(4, 16 / es);
    bool aligned = reinterpret_cast<uintptr_t>(in.data_ptr()) % 16 == 0;
    for (int d = 0; d < p.out.dims; ++d) aligned &= p.out.strides[d] % vec == 0;
    p.vec = aligned && n >= vec ? vec : 1;
  }
  return p;
}

// [SECTION] The simulated device's blocks -------------------------------------------------------

// One reduction on sim:0: the first launch (and the second over partials),
// each block's body running its threads in turn (Note [A reduction over blocks]).
template <class R, class S, class Out, class Part>
void sim_reduce(const streams::Stream& s, const char* kernel, const char* op, R r, const S* x, const ReducePlan& p,
                Out out, Part part) {
  using Acc = typename R::Acc;
  launch::launch_sim(s, launch::grid_launch(kernel, op, p.outputs * p.blocks, p.threads), [=](const launch::Dim3& b) {
    const int64_t j = b.x / p.blocks, bx = b.x % p.blocks;
    const S* base = x + p.out.offset(j);
    Acc v[kReduceThreads];
    for (uint32_t t = 0; t < p.threads; ++t)
      v[t] = p.vec == 4   ? thread_total<4>(r, base, p, bx, t)
             : p.vec == 2 ? thread_total<2>(r, base, p, bx, t)
                          : thread_total<1>(r, base, p, bx, t);
    block_tree(r, v, p.threads);
    if (p.blocks == 1)
      out.write(j, v[0]);
    else
      part.write(b.x, v[0]);
  });
  if (p.blocks == 1) return;
  const ReducePlan q = partials_shape(p);
  launch::launch_sim(s, launch::grid_launch(kernel, op, q.outputs, q.threads), [=](const launch::Dim3& b) {
    const int64_t j = b.x;
    Acc v[kReduceThreads];
    for (uint32_t t = 0; t < q.threads; ++t) {
      v[t] = r.identity();
      for (int64_t i = t; i < q.n; i += q.threads) v[t] = r.combine(v[t], part.get(j * q.n + i));
    }
    block_tree(r, v, q.threads);
    out.write(j, v[0]);
  });
}

}  // namespace

// [SECTION] Sums and max -----------------------------------------------------------------------

void sum(const Tensor& in, const Tensor& keep, const bool* reduced, bool mean) {
  if (keep.numel() == 0) return;
  const ReducePlan p = plan_reduction(in, keep, reduced, true);
  const streams::Stream s = streams::current_stream(in.device());
  const char* op = mean ? "aten::mean" : "aten::sum";
  // The partials of a first pass, when there is one: freed on the host at
  // once, reused only by later work on this stream (Note [Caching allocator policy]).
  const ScalarType acc = is_reduced_floating(keep.dtype()) ? ScalarType::Float32 : keep.dtype();  // SumOp's totals
  Tensor partials = p.blocks > 1 ? empty_tensor({p.outputs * p.blocks}, acc, in.device()) : Tensor();
  void* part = partials.defined() ? partials.data_ptr() : nullptr;
  visit_dtype(keep.dtype(), [&]<typename T>() {
    if constexpr (std::is_same_v<T, bool>) {
      throw Error("device::sum: a sum is never bool");
    } else {
      visit_dtype(in.dtype(), [&]<typename S>() {
        if constexpr (is_float_v<S> != is_float_v<T>) {
          throw Error("device::sum: input and result dtypes do not go together");
        } else {
#ifdef DESCENT_HAVE_CUDA
          if (in.device().type == DeviceType::CUDA)
            return cuda_sum(s, in.dtype(), keep.dtype(), in.data_ptr(), keep.data_ptr(), part, p, mean);
#endif
          DESCENT_CHECK(in.device().type == DeviceType::Sim, NotImplementedError, op, " on ", in.device().str(),
                        ": this build has no CUDA");
          using Acc = opmath_t<T>;
          sim_reduce(s, kernel_name("reduce_sum", Op::sum, in.dtype(), in.dtype()), op, SumOp<T>{}, in.data<S>(), p,
                     SumOut<T>{keep.data<T>(), mean, p.n}, SumPartials<Acc>{static_cast<Acc*>(part)});
        }
      });
    }
  });
}

void max(const Tensor& in, const Tensor& keep, const Tensor* indices, const bool* reduced) {
  if (keep.numel() == 0) return;
  const ReducePlan p = plan_reduction(in, keep, reduced, false);
  const streams::Stream s = streams::current_stream(in.device());
  Tensor pv, pk;
  if (p.blocks > 1) {
    pv = empty_tensor({p.outputs * p.blocks}, keep.dtype(), in.device());
    pk = empty_tensor({p.outputs * p.blocks}, ScalarType::Int64, in.device());
  }
  void* part_v = pv.defined() ? pv.data_ptr() : nullptr;
  int64_t* part_k = pk.defined() ? pk.data<int64_t>() : nullptr;
  int64_t* idx = indices ? indices->data<int64_t>() : nullptr;
#ifdef DESCENT_HAVE_CUDA
  if (in.device().type == DeviceType::CUDA)
    return cuda_max(s, in.dtype(), in.data_ptr(), keep.data_ptr(), idx, part_v, part_k, p);
#endif
  DESCENT_CHECK(in.device().type == DeviceType::Sim, NotImplementedError, "aten::max on ", in.device().str(),
                ": this build has no CUDA");
  visit_dtype(in.dtype(), [&]<typename T>() {
    sim_reduce(s, kernel_name("reduce_max", Op::max, in.dtype(), in.dtype()), "aten::max", MaxOp<T>{}, in.data<T>(), p,
               MaxOut<T>{keep.data<T>(), idx}, MaxPartials<T>{static_cast<T*>(part_v), part_k});
  });
}

// [SECTION] Matrix product -------------------------------------------------------------------------

// The plan, then the ladder's rung for this device and dtype (Note [The
// matmul ladder], matmul_ladder.h; the rungs sim:0 runs are in matmul_ladder.cpp).
void matmul(const Tensor& a, const Tensor& b, const Tensor& out) {
  if (out.numel() == 0) return;
  MatmulPlan p;
  p.batch = out.sizes()[0], p.m = out.sizes()[1], p.n = out.sizes()[2], p.k = a.sizes()[2];
  for (int d = 0; d < 3; ++d) p.sa[d] = a.strides()[d], p.sb[d] = b.strides()[d];
  DESCENT_CHECK(p.batch < 65536, Error, "aten::bmm on a device: at most 65535 matrices in one batch, got ", p.batch);
  DESCENT_CHECK(out.dtype() != ScalarType::Bool, Error, "device::matmul: no product of bool");
#ifndef DESCENT_HAVE_CUDA
  DESCENT_CHECK(out.device().type == DeviceType::Sim, NotImplementedError, "aten::mm on ", out.device().str(),
                ": this build has no CUDA");
#endif
  ladder_matmul(streams::current_stream(out.device()), out.device(), out.dtype(), a.data_ptr(), b.data_ptr(),
                out.data_ptr(), p);
}

// [SECTION] Gather and scatter --------------------------------------------------------------------

void gather(Device d, ScalarType dt, const void* self, void* out, const GatherPlan& p) {
  if (p.numel == 0) return;
  const streams::Stream s = streams::current_stream(d);
#ifdef DESCENT_HAVE_CUDA
  if (d.type == DeviceType::CUDA) return cuda_gather(s, dt, self, out, p);
#endif
  DESCENT_CHECK(d.type == DeviceType::Sim, NotImplementedError, "aten::index on ", d.str(), ": this build has no CUDA");
  constexpr uint32_t kThreads = 256;
  visit_dtype(dt, [&]<typename T>() {
    const T* src = static_cast<const T*>(self);
    T* dst = static_cast<T*>(out);
    const char* kernel = kernel_name("index_gather", Op::index, dt, dt);
    launch::launch_sim(s, launch::grid_launch(kernel, "aten::index", ceil_div(p.numel, kThreads), kThreads),
                       [=](const launch::Dim3& b) {
                         for (int64_t i = int64_t(b.x) * kThreads; i < std::min(p.numel, int64_t(b.x + 1) * kThreads);
                              ++i)
                           dst[i] = src[p.offset(i)];
                       });
  });
}

void scatter(Device d, ScalarType dt, void* self, const void* values, const ScatterPlan& p) {
  if (p.segments == 0) return;
  const streams::Stream s = streams::current_stream(d);
#ifdef DESCENT_HAVE_CUDA
  if (d.type == DeviceType::CUDA) return cuda_scatter(s, dt, self, values, p);
#endif
  DESCENT_CHECK(d.type == DeviceType::Sim, NotImplementedError, "aten::index_put_ on ", d.str(),
                ": this build has no CUDA");
  constexpr uint32_t kThreads = 256;
  visit_dtype(dt, [&]<typename T>() {
    T* dst = static_cast<T*>(self);
    const T* src = static_cast<const T*>(values);
    const char* kernel = kernel_name("index_scatter", Op::index_put_, dt, dt);
    launch::launch_sim(s, launch::grid_launch(kernel, "aten::index_put_", ceil_div(p.segments, kThreads), kThreads),
                       [=](const launch::Dim3& b) {
                         for (int64_t i = int64_t(b.x) * kThreads;
                              i < std::min(p.segments, int64_t(b.x + 1) * kThreads); ++i)
                           scatter_segment(p, dst, src, i);
                       });
  });
}

}  // namespace descent::kernels::device
