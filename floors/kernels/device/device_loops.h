// The device loops of the elementwise ops: one kernel body per kind of loop,
// compiled by g++ for the simulated device (sim_kernels.cpp) and by nvcc for
// CUDA (cuda_elementwise.cu). See Note [One kernel body, two devices].
//
// [SECTION] Operands and offsets
// [SECTION] The loops: what one element, or four, does
// [SECTION] Threads, blocks and the grid
// [SECTION] Building a loop from tensors (host)
// [SECTION] Entry points per device
//
// Note [One kernel body, two devices]
// ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
// A GPU kernel is a function that every thread of a grid runs with its own
// (block, thread) index. descent writes that function once, here, for both of
// its devices:
//   - a loop is a trivially copyable struct (the kernel's arguments): raw
//     pointers into device memory, the sizes and strides each operand is read
//     through (Offsets: a broadcast dim has stride 0), the functor of the op
//     from elementwise.h, and any value that came from the host (alpha, a
//     Python number, a fill value), copied in by value: a kernel must never
//     read host memory;
//   - run_thread() is the body of one thread: a grid-stride loop over the
//     elements (or over runs of four, on the contiguous fast path);
//   - CUDA runs it as a __global__ function, one call per GPU thread
//     (cuda_elementwise.cu); the simulated device runs it on its stream's worker,
//     block after block, calling it for thread 0, 1, ... of the block in
//     turn (sim_kernels.cpp, through launch::launch_sim).
// So sim:0 computes every element with the CPU kernels' own expression
// (elementwise.h), compiled by the same compiler: its results equal the
// CPU's bit for bit, which the tests check for every op and dtype. On CUDA,
// + - * / and sqrt are IEEE-rounded as on the CPU (cuda_elementwise.cu is
// compiled with --fmad=false, as the CPU loops are with -ffp-contract=off),
// so those are exact too, as is clamp, which only compares; exp, log, tanh,
// sin, cos, pow and sigmoid call CUDA's math library, whose results may
// differ from glibc's in the last place or two, as PyTorch's CUDA results
// differ from its CPU ones.
//
// The boxed kernels (boxed.h and its families) stay the one place for checks,
// broadcasting, type promotion and the output's allocation: a device tensor
// goes through the same code as a CPU one up to the loop, where a call to
// device::binary(...) (kernels.h) replaces run_variant(...). The grid and the
// block are chosen here, on the kernel floor (launch::linear_launch: 256
// threads, one element or one run of four each), and recorded by the launch
// floor's span.
#pragma once

#include <cstdint>
#include <type_traits>

#include "floors/core/tensor.h"
#include "floors/dispatch/dispatcher.h"
#include "floors/kernels/device/device_reduce.h"  // kernel_name
#include "floors/kernels/elementwise.h"
#include "floors/kernels/device/random.h"
#include "floors/kernels/kernels.h"  // DESCENT_DEVICE_LOOP_TABLE
#include "floors/launch/launch.h"

namespace descent::kernels::device {

// [SECTION] Operands and offsets -----------------------------------------------

// Elements one thread takes at a time on the contiguous fast path: one
// 16-byte load of float32 (a float4), two of float64 or int64.
constexpr int kVecElems = 4;
constexpr uint32_t kThreadsPerBlock = 256;

// An input: device memory, or (ptr null) one value for every element, a
// CPU scalar the host read before the launch (x + 1 on sim:0 or cuda:0).
template <class T>
struct In {
  const T* ptr;
  T value;
  DESCENT_HD T at(int64_t off) const { return ptr ? ptr[off] : value; }
};

// An input whose elements are of another dtype than the loop's T, converted
// as each is loaded (Note [A CPU scalar on a device op]): device memory of
// dtype `from`, or (ptr null) one value, as In. The switch is on a value
// every thread of the launch shares, so a GPU's threads never diverge on it.
template <class T>
struct CastIn {
  const void* ptr;
  T value;
  ScalarType from;
  DESCENT_HD T at(int64_t off) const {
    if (!ptr) return value;
    switch (from) {
      case ScalarType::Bool:
        return cast_element<T>(static_cast<const bool*>(ptr)[off]);
      case ScalarType::Int64:
        return cast_element<T>(static_cast<const int64_t*>(ptr)[off]);
      case ScalarType::Float32:
        return cast_element<T>(static_cast<const float*>(ptr)[off]);
      case ScalarType::Float64:
        return cast_element<T>(static_cast<const double*>(ptr)[off]);
      case ScalarType::Float16:
        return cast_element<T>(static_cast<const Half*>(ptr)[off]);
      case ScalarType::BFloat16:
        return cast_element<T>(static_cast<const BFloat16*>(ptr)[off]);
      case ScalarType::UInt8:
        return cast_element<T>(static_cast<const uint8_t*>(ptr)[off]);
      case ScalarType::Int8:
        return cast_element<T>(static_cast<const int8_t*>(ptr)[off]);
      case ScalarType::Int16:
        return cast_element<T>(static_cast<const int16_t*>(ptr)[off]);
      case ScalarType::Int32:
        return cast_element<T>(static_cast<const int32_t*>(ptr)[off]);
    }
    return value;
  }
};

// Where each of N operands (the output first) keeps the element with
// position `linear` in the loop's order (the output's memory order, which
// make_offsets chose; any order will do, as long as every operand uses the
// same). When no operand is strided (ndim == 0) the offset is linear *
// step: step 1 for an operand laid out like the output, 0 for one element
// broadcast to all. Otherwise the sizes and strides of the merged dims
// (adjacent dims that are contiguous with each other in every operand count
// as one, so fewer divisions) give it, as strided_offset() does on the CPU
// (kernels.h): Note [Views and strides] again, on the device.
template <int N>
struct Offsets {
  int ndim = 0;
  int64_t step[N] = {};
  int64_t sizes[kMaxDims] = {};
  int64_t strides[N][kMaxDims] = {};

  DESCENT_HD void get(int64_t linear, int64_t* off) const {
    if (ndim == 0) {
      for (int k = 0; k < N; ++k) off[k] = linear * step[k];
      return;
    }
    for (int k = 0; k < N; ++k) off[k] = 0;
    for (int d = ndim - 1; d >= 0; --d) {
      const int64_t i = linear % sizes[d];
      linear /= sizes[d];
      for (int k = 0; k < N; ++k) off[k] += i * strides[k][d];
    }
  }
};

// Four consecutive elements, aligned as one vector load or store.
template <class T>
struct alignas(sizeof(T) * kVecElems) Vec {
  T v[kVecElems];
};

// Elements [i0, i0 + 4) of an input with the given step (1: consecutive; 0:
// the one element). On the GPU a consecutive run is one vector load (the
// builder checked the alignment); the host reads the four one by one.
template <class T>
DESCENT_HD Vec<T> load_vec(const In<T>& in, int64_t step, int64_t i0) {
  Vec<T> r;
  if (step == 1 && in.ptr) {
#ifdef __CUDA_ARCH__
    r = *reinterpret_cast<const Vec<T>*>(in.ptr + i0);
#else
    for (int j = 0; j < kVecElems; ++j) r.v[j] = in.ptr[i0 + j];
#endif
  } else {
    const T x = in.at(0);
    for (int j = 0; j < kVecElems; ++j) r.v[j] = x;
  }
  return r;
}

// The same four through a converting load, one by one (a cast loop is
// never vectorized: its inputs' elements differ in size from T's).
template <class T>
DESCENT_HD Vec<T> load_vec(const CastIn<T>& in, int64_t step, int64_t i0) {
  Vec<T> r;
  for (int j = 0; j < kVecElems; ++j) r.v[j] = in.at(step ? i0 + j : 0);
  return r;
}

template <class T>
DESCENT_HD void store_vec(T* p, const Vec<T>& r) {
#ifdef __CUDA_ARCH__
  *reinterpret_cast<Vec<T>*>(p) = r;
#else
  for (int j = 0; j < kVecElems; ++j) p[j] = r.v[j];
#endif
}

// [SECTION] The loops ----------------------------------------------------------------

// What every loop has: its number of elements, and whether it takes the
// contiguous fast path (no strided operand, every pointer aligned for Vec).
struct LoopBase {
  int64_t n = 0;
  bool vectorized = false;
};

// I: In<T>, or CastIn<T> for a float-only op over an integral input (exp of
// an int64 tensor: the int64 elements converted as they load).
template <class T, class F, class I = In<T>>
struct UnaryLoop : LoopBase {
  F f;
  T* out;
  I in;
  Offsets<2> off;
  DESCENT_HD void element(int64_t i) const {
    int64_t o[2];
    off.get(i, o);
    out[o[0]] = f(in.at(o[1]));
  }
  DESCENT_HD void vector(int64_t i0) const {
    Vec<T> x = load_vec(in, off.step[1], i0), y;
    for (int j = 0; j < kVecElems; ++j) y.v[j] = f(x.v[j]);
    store_vec(out + i0, y);
  }
};

// I: In<T>, or CastIn<T> when an input's dtype is not T (cast_input).
template <class T, class F, class I = In<T>>
struct BinaryLoop : LoopBase {
  F f;
  T* out;
  I a, b;
  opmath_t<T> alpha;  // float for float16 and bfloat16 (BinaryFn, elementwise.h)
  Offsets<3> off;
  DESCENT_HD void element(int64_t i) const {
    int64_t o[3];
    off.get(i, o);
    out[o[0]] = f(a.at(o[1]), b.at(o[2]), alpha);
  }
  DESCENT_HD void vector(int64_t i0) const {
    Vec<T> x = load_vec(a, off.step[1], i0), y = load_vec(b, off.step[2], i0), r;
    for (int j = 0; j < kVecElems; ++j) r.v[j] = f(x.v[j], y.v[j], alpha);
    store_vec(out + i0, r);
  }
};

template <class T, class F, class I = In<T>>
struct CompareLoop : LoopBase {
  F f;
  bool* out;
  I a, b;
  Offsets<3> off;
  DESCENT_HD void element(int64_t i) const {
    int64_t o[3];
    off.get(i, o);
    out[o[0]] = f(a.at(o[1]), b.at(o[2]));
  }
  DESCENT_HD void vector(int64_t i0) const {
    Vec<T> x = load_vec(a, off.step[1], i0), y = load_vec(b, off.step[2], i0);
    Vec<bool> r;
    for (int j = 0; j < kVecElems; ++j) r.v[j] = f(x.v[j], y.v[j]);
    store_vec(out + i0, r);
  }
};

// A copy that converts S to D as a tensor cast does (cast_element).
template <class D, class S>
struct CopyLoop : LoopBase {
  D* out;
  In<S> src;
  Offsets<2> off;
  DESCENT_HD void element(int64_t i) const {
    int64_t o[2];
    off.get(i, o);
    out[o[0]] = cast_element<D>(src.at(o[1]));
  }
  DESCENT_HD void vector(int64_t i0) const {
    Vec<S> x = load_vec(src, off.step[1], i0);
    Vec<D> r;
    for (int j = 0; j < kVecElems; ++j) r.v[j] = cast_element<D>(x.v[j]);
    store_vec(out + i0, r);
  }
};

template <class T>
struct FillLoop : LoopBase {
  T* out;
  T value;
  Offsets<1> off;
  DESCENT_HD void element(int64_t i) const {
    int64_t o[1];
    off.get(i, o);
    out[o[0]] = value;
  }
  DESCENT_HD void vector(int64_t i0) const {
    Vec<T> r;
    for (int j = 0; j < kVecElems; ++j) r.v[j] = value;
    store_vec(out + i0, r);
  }
};

// arange's element i, into a contiguous output: the CPU kernel's expressions
// (factories.cpp): start + i * step in double for a float dtype, in int64
// (wrapping) otherwise.
template <class T>
struct ArangeLoop : LoopBase {
  T* out;
  double start, step;
  int64_t istart, istep;
  DESCENT_HD void element(int64_t i) const {
    if constexpr (is_float_v<T>)
      out[i] = T(start + double(i) * step);
    else
      out[i] = T(wrap_add(istart, wrap_mul(i, istep)));
  }
  DESCENT_HD void vector(int64_t i0) const {
    for (int j = 0; j < kVecElems; ++j) element(i0 + j);
  }
};

// linspace's element i, into a contiguous output: the CPU kernel's functor
// (LinspaceF, elementwise.h).
template <class T>
struct LinspaceLoop : LoopBase {
  T* out;
  LinspaceF<T> f;
  DESCENT_HD void element(int64_t i) const { out[i] = f(i); }
  DESCENT_HD void vector(int64_t i0) const {
    for (int j = 0; j < kVecElems; ++j) element(i0 + j);
  }
};

// rand and randn: element i is counter offset + i of the counter-based
// generator (Note [Counter-based random numbers], random.h).
template <class T>
struct RandomLoop : LoopBase {
  T* out;
  uint64_t seed, offset;
  bool normal;
  DESCENT_HD void element(int64_t i) const { out[i] = random_element<T>(offset + uint64_t(i), seed, normal); }
  DESCENT_HD void vector(int64_t i0) const {
    for (int j = 0; j < kVecElems; ++j) element(i0 + j);
  }
};

// [SECTION] Threads, blocks and the grid ----------------------------------------------

// The body of thread `t` of block `block`, in a grid of `grid` blocks of
// `threads` threads: a grid-stride loop, so any grid covers any n. Each
// thread starts at its global index and steps by the number of threads in the
// grid; its unit is one element, or a run of kVecElems on the fast path (a
// run cut short by the end goes element by element). CUDA calls this from
// every GPU thread; the simulated device from a loop over t.
template <class Loop>
DESCENT_HD void run_thread(const Loop& loop, uint64_t block, uint64_t grid, uint64_t threads, uint64_t t) {
  const uint64_t stride = grid * threads;
  const uint64_t n = uint64_t(loop.n);
  if (loop.vectorized) {
    const uint64_t units = (n + kVecElems - 1) / kVecElems;
    for (uint64_t u = block * threads + t; u < units; u += stride) {
      const uint64_t i0 = u * kVecElems;
      if (i0 + kVecElems <= n) {
        loop.vector(int64_t(i0));
      } else {
        for (uint64_t i = i0; i < n; ++i) loop.element(int64_t(i));
      }
    }
  } else {
    for (uint64_t i = block * threads + t; i < n; i += stride) loop.element(int64_t(i));
  }
}

// [SECTION] Building a loop from tensors (host) ----------------------------------------

// Note [A CPU scalar on a device op]
// ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
// In `x + 1` with x on sim:0 or cuda:0, the 1 is a 0-d CPU tensor (a
// wrapped number, Note [Type promotion]). PyTorch does not move it to the
// GPU: TensorIteratorBase::compute_types lets a 0-d CPU tensor be an operand
// of a CUDA op ("is_cpu_scalar"), and gpu_kernel_with_scalars reads its value
// on the host and passes it to the kernel as an argument, so the profiler
// shows aten::add over one cudaLaunchKernel and nothing else. descent does
// the same:
//   - the boxed kernel (boxed.h) lets a CPU 0-d tensor join a device
//     tensor (common_device), and for a device loop Operand (kernels.h)
//     leaves it on the host in its own dtype: no aten::to;
//   - input() below reads its one element on the host when the loop is
//     built and converts it to the computation dtype T with cast_element,
//     the very function the CPU's cast (aten::to's copy loop) uses, so the
//     value the kernel gets is the CPU path's bit for bit;
//   - the value travels in the loop struct (In::value, ptr null): the
//     kernel's arguments, copied at the launch, never host memory.
// One difference stays: PyTorch converts the number to the op's opmath type
// (float for a float16 tensor), descent to the tensor's dtype first, as its
// own CPU path does, so sim:0 and the CPU agree bit for bit.
//
// Mixed dtypes between device tensors (f32 + i64 on sim:0) are the same
// story one step further: PyTorch runs one kernel that converts each element
// as it loads it (TensorIterator's common dtype, the "dynamic casting" path
// of gpu_kernel: unrolled_elementwise_kernel with LoadWithCast), where a
// cast first would be a copy kernel (aten::to) and a second launch. descent
// does the same for its binary ops and comparisons: Operand leaves a device
// operand in its own dtype, and when one differs from the loop's T the
// builder makes the loop with CastIn<T> inputs (casts_on_load), whose load
// switches over the ten dtypes and converts with cast_element, as the CPU's
// cast does, so the values are the CPU path's bit for bit. The switch is on
// a value the whole launch shares (no divergence on a GPU); a cast loop
// takes no 16-byte vector loads (its inputs' elements are not T's size), as
// PyTorch's dynamic-casting kernel is not its vectorized one. One loop per
// op and T covers every source dtype, so the kernels compiled grow by one
// per (op, T), not by the 100 pairs of dtypes. A unary op that computes in
// float (exp of an int64 tensor) loads the same way. What still casts
// first, with aten::to and a copy kernel, where PyTorch casts as it loads:
// clamp's self promoted by its bounds; its loop takes In<T> only.

// An input of a loop on `dev`: t's memory there, or the value of a CPU
// scalar (one element, any strides 0), read now on the host and converted
// to T as a cast would (Note [A CPU scalar on a device op]).
template <class T>
In<T> input(const Tensor& t, Device dev) {
  if (t.device() == dev) return {t.data<T>(), T()};
  T value{};
  visit_dtype(t.dtype(), [&]<typename S>() { value = cast_element<T>(*t.data<S>()); });
  return {nullptr, value};
}

// The same, converting as it loads: t's memory on `dev` read as its own
// dtype, or a CPU scalar's value converted now.
template <class T>
CastIn<T> cast_input(const Tensor& t, Device dev) {
  if (t.device() == dev) return {t.data_ptr(), T(), t.dtype()};
  return {nullptr, input<T>(t, dev).value, t.dtype()};
}

// Whether a loop in dtype ct over these inputs must convert as it loads: an
// input on the device in another dtype (Note [A CPU scalar on a device op]).
inline bool casts_on_load(const Tensor& a, const Tensor& b, ScalarType ct, Device dev) {
  return (a.device() == dev && a.dtype() != ct) || (b.device() == dev && b.dtype() != ct);
}

// The offsets of N operands (the output first), each of `sizes`; a CPU
// scalar counts as one element broadcast (step 0). The dims are walked in
// the output's memory order, its largest stride outermost (row-major for a
// contiguous output, the inputs' order for one that follows them: Note
// [Output strides follow the inputs], layout.cpp), so that a permuted but
// dense set of operands merges into one run and takes the fast path.
template <int N>
Offsets<N> make_offsets(const DimVector& sizes, const Tensor* const (&ts)[N], Device dev) {
  Offsets<N> o;
  auto stride_of = [&](int k, int d) { return ts[k]->device() != dev ? int64_t(0) : ts[k]->strides()[d]; };
  // Dims of size 1 drop out; the others by the output's stride, largest
  // first (an insertion sort that keeps ties in order).
  int order[kMaxDims], m = 0;
  const DimVector& out_strides = ts[0]->strides();
  for (int d = 0; d < sizes.size(); ++d) {
    if (sizes[d] == 1) continue;
    int i = m++;
    for (; i > 0 && out_strides[order[i - 1]] < out_strides[d]; --i) order[i] = order[i - 1];
    order[i] = d;
  }
  // Then, outermost to innermost, a dim merges into the one before it when
  // every operand steps over that one whole.
  int nd = 0;
  for (int i = 0; i < m; ++i) {
    const int d = order[i];
    bool merge = nd > 0;
    for (int k = 0; k < N && merge; ++k) merge = o.strides[k][nd - 1] == stride_of(k, d) * sizes[d];
    if (merge) {
      o.sizes[nd - 1] *= sizes[d];
      for (int k = 0; k < N; ++k) o.strides[k][nd - 1] = stride_of(k, d);
    } else {
      o.sizes[nd] = sizes[d];
      for (int k = 0; k < N; ++k) o.strides[k][nd] = stride_of(k, d);
      ++nd;
    }
  }
  // One run in which every operand steps by 1 or 0 (or no run: one
  // element): no division at all, offset = linear * step.
  bool linear = nd <= 1;
  for (int k = 0; k < N && linear && nd == 1; ++k) linear = o.strides[k][0] == 0 || o.strides[k][0] == 1;
  if (linear) {
    for (int k = 0; k < N; ++k) o.step[k] = nd == 1 ? o.strides[k][0] : 0;
    return o;
  }
  o.ndim = nd;
  return o;
}

// Whether a loop over these operands may take runs of four: none strided,
// and each pointer stepped through aligned for a Vec of its type.
template <int N>
bool vectorizable(const Offsets<N>& o, const void* const (&ptrs)[N], const size_t (&vec_bytes)[N]) {
  if (o.ndim != 0 || o.step[0] != 1) return false;  // runs of four are stored at out + i0
  for (int k = 0; k < N; ++k)
    if (o.step[k] == 1 && reinterpret_cast<uintptr_t>(ptrs[k]) % vec_bytes[k] != 0) return false;
  return true;
}

// The launch of a loop over n elements: 256 threads a block, each thread one
// element, or a run of four on the fast path (launch::linear_launch), the
// grid capped and walked by a grid-stride loop. PyTorch's elementwise
// kernels differ in shape and name: vectorized_elementwise_kernel<4, ...>
// (or unrolled_elementwise_kernel), 128 threads a block, a grid that covers
// n in one pass with no stride loop (at::native::gpu_kernel,
// CUDALoops.cuh). Both are one launch per op; descent's kernel names are its
// own (add_float32), and a learner comparing traces sees the difference.
inline launch::KernelLaunch loop_launch(const char* kernel, const char* op, const LoopBase& loop) {
  return launch::linear_launch(kernel, op, loop.n, kThreadsPerBlock, loop.vectorized ? kVecElems : 1);
}

// The builders, one per kind of loop, for a device's launcher: `launch(k,
// loop)` enqueues `loop` with launch `k` on the current stream of the
// output's device. Operands are as kernels.h's device loops take them.
template <class Launch>
struct Build {
  static void unary(const Launch& launch, Op op, const Tensor& in, const Tensor& out, const ClampBounds& bounds) {
    const Device dev = out.device();
    visit_dtype(out.dtype(), [&]<typename T>() {
      visit_unary<T>(op, bounds, [&](auto f) {
        using F = decltype(f);
        if constexpr (is_float_only_v<F> && !is_float_v<T>) {
          throw Error("device::unary: a float-only op into an integral output");  // the boxed kernel promotes
        } else {
          auto build = [&]<class I>(I input_loaded, bool cast) {
            UnaryLoop<T, F, I> loop;
            loop.f = f;
            loop.n = out.numel();
            loop.out = out.data<T>();
            loop.in = input_loaded;
            const Tensor* ts[2] = {&out, &in};
            loop.off = make_offsets<2>(out.sizes(), ts, dev);
            const void* ptrs[2] = {loop.out, loop.in.ptr};
            const size_t vb[2] = {sizeof(Vec<T>), sizeof(Vec<T>)};
            loop.vectorized = !cast && vectorizable<2>(loop.off, ptrs, vb);
            launch(loop_launch(kernel_name("", op, out.dtype(), out.dtype()), op_entry(op).profiler_name, loop), loop);
          };
          // Only a float-only op meets an input of another dtype (exp of an
          // int64 tensor into float32): its loop alone has a casting twin.
          if constexpr (is_float_only_v<F>) {
            if (in.device() == dev && in.dtype() != out.dtype()) return build(cast_input<T>(in, dev), true);
          }
          build(input<T>(in, dev), false);
        }
      });
    });
  }

  static void binary(const Launch& launch, Op op, const Tensor& a, const Tensor& b, const Tensor& out, Scalar alpha) {
    const Device dev = out.device();
    const bool cast = casts_on_load(a, b, out.dtype(), dev);
    visit_dtype(out.dtype(), [&]<typename T>() {
      visit_binary(op, [&](auto f) {
        auto build = [&]<class I>(auto in) {
          BinaryLoop<T, decltype(f), I> loop;
          loop.f = f;
          loop.n = out.numel();
          loop.out = out.data<T>();
          loop.a = in(a);
          loop.b = in(b);
          loop.alpha = alpha.to<opmath_t<T>>();
          const Tensor* ts[3] = {&out, &a, &b};
          loop.off = make_offsets<3>(out.sizes(), ts, dev);
          const void* ptrs[3] = {loop.out, loop.a.ptr, loop.b.ptr};
          const size_t vb[3] = {sizeof(Vec<T>), sizeof(Vec<T>), sizeof(Vec<T>)};
          loop.vectorized = !cast && vectorizable<3>(loop.off, ptrs, vb);
          launch(loop_launch(kernel_name("", op, out.dtype(), out.dtype()), op_entry(op).profiler_name, loop), loop);
        };
        if (cast)
          build.template operator()<CastIn<T>>([&](const Tensor& t) { return cast_input<T>(t, dev); });
        else
          build.template operator()<In<T>>([&](const Tensor& t) { return input<T>(t, dev); });
      });
    });
  }

  // ct: the dtype the comparison is made in (the operands' promoted one).
  static void compare(const Launch& launch, Op op, const Tensor& a, const Tensor& b, const Tensor& out, ScalarType ct) {
    const Device dev = out.device();
    const bool cast = casts_on_load(a, b, ct, dev);
    visit_dtype(ct, [&]<typename T>() {
      visit_compare(op, [&](auto f) {
        auto build = [&]<class I>(auto in) {
          CompareLoop<T, decltype(f), I> loop;
          loop.f = f;
          loop.n = out.numel();
          loop.out = out.data<bool>();
          loop.a = in(a);
          loop.b = in(b);
          const Tensor* ts[3] = {&out, &a, &b};
          loop.off = make_offsets<3>(out.sizes(), ts, dev);
          const void* ptrs[3] = {loop.out, loop.a.ptr, loop.b.ptr};
          const size_t vb[3] = {sizeof(Vec<bool>), sizeof(Vec<T>), sizeof(Vec<T>)};
          loop.vectorized = !cast && vectorizable<3>(loop.off, ptrs, vb);
          launch(loop_launch(kernel_name("", op, ct, ct), op_entry(op).profiler_name, loop), loop);
        };
        if (cast)
          build.template operator()<CastIn<T>>([&](const Tensor& t) { return cast_input<T>(t, dev); });
        else
          build.template operator()<In<T>>([&](const Tensor& t) { return input<T>(t, dev); });
      });
    });
  }

  // A copy between two contiguous tensors of one dtype on one device moves
  // bytes, not elements: a device-to-device memcpy on the current stream
  // (cudaMemcpyAsync; a copy task on sim:0), as PyTorch's copy_ does when it
  // may; its device span is "Memcpy DtoD (Device -> Device)", not a kernel.
  static void copy(const Launch& launch, const Tensor& src, const Tensor& dst) {
    if (src.dtype() == dst.dtype() && src.device() == dst.device() && src.sizes() == dst.sizes() &&
        src.is_contiguous() && dst.is_contiguous() && dst.numel() > 0) {
      streams::copy_bytes(dst.data_ptr(), dst.device(), src.data_ptr(), src.device(),
                          size_t(dst.numel()) * element_size(dst.dtype()));
      return;
    }
    const Device dev = dst.device();
    visit_dtype(dst.dtype(), [&]<typename D>() {
      visit_dtype(src.dtype(), [&]<typename S>() {
        CopyLoop<D, S> loop;
        loop.n = dst.numel();
        loop.out = dst.data<D>();
        loop.src = input<S>(src, dev);
        const Tensor* ts[2] = {&dst, &src};
        loop.off = make_offsets<2>(dst.sizes(), ts, dev);
        const void* ptrs[2] = {loop.out, loop.src.ptr};
        const size_t vb[2] = {sizeof(Vec<D>), sizeof(Vec<S>)};
        loop.vectorized = vectorizable<2>(loop.off, ptrs, vb);
        launch(loop_launch(kernel_name("copy", Op::copy_, src.dtype(), dst.dtype()), "aten::copy_", loop), loop);
      });
    });
  }

  static void fill(const Launch& launch, const Tensor& out, Scalar value) {
    visit_dtype(out.dtype(), [&]<typename T>() {
      FillLoop<T> loop;
      loop.n = out.numel();
      loop.out = out.data<T>();
      loop.value = value.to<T>();
      const Tensor* ts[1] = {&out};
      loop.off = make_offsets<1>(out.sizes(), ts, out.device());
      const void* ptrs[1] = {loop.out};
      const size_t vb[1] = {sizeof(Vec<T>)};
      loop.vectorized = vectorizable<1>(loop.off, ptrs, vb);
      launch(loop_launch(kernel_name("fill", Op::fill_, out.dtype(), out.dtype()), "aten::fill_", loop), loop);
    });
  }

  static void arange(const Launch& launch, const Tensor& out, double start, double step, int64_t istart,
                     int64_t istep) {
    visit_dtype(out.dtype(), [&]<typename T>() {
      ArangeLoop<T> loop;
      loop.n = out.numel();
      loop.out = out.data<T>();
      loop.start = start, loop.step = step, loop.istart = istart, loop.istep = istep;
      launch(loop_launch(kernel_name("", Op::arange, out.dtype(), out.dtype()), "aten::arange", loop), loop);
    });
  }

  static void linspace(const Launch& launch, const Tensor& out, const Scalar& start, const Scalar& end) {
    visit_dtype(out.dtype(), [&]<typename T>() {
      if constexpr (std::is_same_v<T, bool>) {
        throw Error("device::linspace: no bool linspace");  // the boxed kernel refuses it first
      } else {
        LinspaceLoop<T> loop;
        loop.n = out.numel();
        loop.out = out.data<T>();
        loop.f = linspace_fn<T>(start, end, out.numel());
        launch(loop_launch(kernel_name("", Op::linspace, out.dtype(), out.dtype()), "aten::linspace", loop), loop);
      }
    });
  }

  static void random(const Launch& launch, const Tensor& out, bool normal, uint64_t seed, uint64_t offset) {
    visit_dtype(out.dtype(), [&]<typename T>() {
      if constexpr (is_float_v<T>) {
        RandomLoop<T> loop;
        loop.n = out.numel();
        loop.out = out.data<T>();
        loop.seed = seed, loop.offset = offset, loop.normal = normal;
        const Op op = normal ? Op::randn : Op::rand;
        launch(loop_launch(kernel_name("", op, out.dtype(), out.dtype()), op_entry(op).profiler_name, loop), loop);
      } else {
        throw Error("device::random: not a floating dtype");
      }
    });
  }
};

// [SECTION] Entry points per device -------------------------------------------------------

// The device loops of kernels.h for each kind of device, from its table
// (Note [The device loops' table], kernels.h): sim_kernels.cpp defines sim's
// (and kernels.h's device:: functions, which pick one), cuda_elementwise.cu
// defines cuda's, in builds with CUDA only. DESCENT_DEVICE_LOOP_DEFINE
// defines a row's entry point with the file's DeviceBuild (Build of the
// device's launcher), and DESCENT_DEVICE_LOOP_SAME_TYPE holds it to the type
// kernels.h declares for device::name.
namespace sim {
DESCENT_DEVICE_LOOP_TABLE(DESCENT_DEVICE_LOOP_DECLARE)
}
namespace cuda {
DESCENT_DEVICE_LOOP_TABLE(DESCENT_DEVICE_LOOP_DECLARE)
}
#define DESCENT_DEVICE_LOOP_DEFINE(name, params, args, dev) \
  void name params { DeviceBuild::name({(dev).device()}, DESCENT_UNPARENTHESIZE args); }
#define DESCENT_DEVICE_LOOP_SAME_TYPE(name, params, args, dev)                                         \
  static_assert(std::is_same_v<decltype(static_cast<void(*) params>(&device::name)), decltype(&name)>, \
                #name ": this device's entry point is not the one kernels.h's table declares");

}  // namespace descent::kernels::device
