// Per-call costs of the device floors beside raw CUDA, in one process:
// an empty kernel launched raw and through floor 8 (launch::launch_cuda),
// a raw launch whose argument is as large as a binary loop's (the kernel
// add's launch copies), the C++ add of two 1-element tensors through the
// dispatcher (every floor but Python's), a caching-allocator hit on cuda:0
// and sim:0 (floor 6) beside cudaMallocAsync/cudaFreeAsync and
// cudaMalloc/cudaFree. Host time only: launches are timed in bursts of 256
// with a synchronize between bursts, outside the clock, so the queue never fills.
// Prints one JSON object per line (timing.h); tests/bench/bench_device_calls.py runs it.
#include <cuda.h>
#include <cuda_runtime_api.h>

#include <chrono>
#include <cstdio>

#include "floors/dispatch/dispatcher.h"
#include "floors/kernels/device/device_loops.h"
#include "floors/launch/launch.h"
#include "floors/registration.h"
#include "floors/streams/device_memory.h"
#include "floors/streams/streams.h"
#include "tests/bench/timing.h"

using namespace descent;

__global__ void empty_kernel() {}

// An argument of a binary loop's size (BinaryLoop<float, AddF>: its pointers,
// scalars and Offsets<3>), so that the raw launch copies what add's does.
struct LoopSized {
  char bytes[sizeof(kernels::device::BinaryLoop<float, kernels::AddF>)];
};
__global__ void loop_sized_kernel(LoopSized) {}

namespace {

// Median per-launch host time of `launch` over bursts of 256 launches.
template <typename Fn>
double launch_ns(Fn&& launch) {
  constexpr int kBurst = 256;
  for (int i = 0; i < 2000; ++i) launch();
  cudaDeviceSynchronize();
  std::vector<double> per;
  for (int r = 0; r < bench::kReps; ++r) {
    double total = 0;
    for (int b = 0; b < 40; ++b) {
      auto t0 = std::chrono::steady_clock::now();
      for (int i = 0; i < kBurst; ++i) launch();
      auto t1 = std::chrono::steady_clock::now();
      total += std::chrono::duration<double, std::nano>(t1 - t0).count();
      cudaDeviceSynchronize();
    }
    per.push_back(total / (40.0 * kBurst));
  }
  return bench::median(per);
}

}  // namespace

int main() {
  descent::register_floors();  // Note [Registering the floors]
  const Device sim{DeviceType::Sim, 0};
  const long n = 200000;
  {
    // The whole C++ path of a 1-element add on sim:0 (sim:0's worker drains the queue).
    Tensor a = call(Op::to, call(Op::randn, DimVector{1}), IValue(), sim);
    Tensor b = call(Op::to, call(Op::randn, DimVector{1}), IValue(), sim);
    bench::report("sim_add_1elem_cpp", bench::median_ns_per_call([&] { Tensor c = call(Op::add, a, b); }, n / 4));
    streams::synchronize(sim);
  }
  // The simulated device's allocator hit: 1 MiB, freed and asked again.
  bench::report("sim_alloc_hit_1MiB", bench::median_ns_per_call(
                                          [&] {
                                            DataPtr p = streams::device_allocate(1 << 20, sim);
                                            p.release();
                                          },
                                          n));
  if (streams::runtime(DeviceType::CUDA).device_count() == 0) {
    std::fprintf(stderr, "bench_launch: no CUDA device (%s); CUDA rows skipped\n",
                 streams::runtime(DeviceType::CUDA).unavailable_reason().c_str());
    return 0;
  }
  const Device cuda{DeviceType::CUDA, 0};
  cudaFree(nullptr);  // creates the context outside the clock
  bench::report("cuda_alloc_hit_1MiB", bench::median_ns_per_call(
                                           [&] {
                                             DataPtr p = streams::device_allocate(1 << 20, cuda);
                                             p.release();
                                           },
                                           n));
  cudaStream_t s0 = nullptr;
  bench::report("raw_cudaMallocAsync_free_1MiB", bench::median_ns_per_call(
                                                     [&] {
                                                       void* p = nullptr;
                                                       cudaMallocAsync(&p, 1 << 20, s0);
                                                       cudaFreeAsync(p, s0);
                                                     },
                                                     n / 10));
  bench::report("raw_cudaMalloc_free_1MiB", bench::median_ns_per_call(
                                                [&] {
                                                  void* p = nullptr;
                                                  cudaMalloc(&p, 1 << 20);
                                                  cudaFree(p);
                                                },
                                                2000));
  bench::report("raw_empty_launch", launch_ns([] { empty_kernel<<<1, 1>>>(); }));
  const streams::Stream stream = streams::current_stream(cuda);
  const launch::KernelLaunch k{"empty_kernel", "bench", {1, 1, 1}, {1, 1, 1}, 0};
  bench::report("descent_empty_launch", launch_ns([&] { launch::launch_cuda(stream, k, empty_kernel); }));
  const LoopSized arg{};
  bench::report("raw_loop_sized_launch", launch_ns([&] { loop_sized_kernel<<<1, 256>>>(arg); }));
  {
    // The same launch as one runtime call, and as the driver's call on the kernel's handle.
    void* args[] = {const_cast<LoopSized*>(&arg)};
    bench::report("raw_cudaLaunchKernel_loop_sized", launch_ns([&] {
                    cudaLaunchKernel(reinterpret_cast<const void*>(loop_sized_kernel), dim3(1), dim3(256), args, 0,
                                     nullptr);
                  }));
    using DriverLaunch = CUresult (*)(CUfunction, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned,
                                      CUstream, void**, void**);
    void* p = nullptr;
    cudaDriverEntryPointQueryResult found{};
    cudaFunction_t f = nullptr;
    if (cudaGetDriverEntryPointByVersion("cuLaunchKernel", &p, 12000, cudaEnableDefault, &found) == cudaSuccess &&
        found == cudaDriverEntryPointSuccess &&
        cudaGetFuncBySymbol(&f, reinterpret_cast<const void*>(loop_sized_kernel)) == cudaSuccess) {
      auto driver = reinterpret_cast<DriverLaunch>(p);
      bench::report("raw_cuLaunchKernel_loop_sized", launch_ns([&] {
                      driver(reinterpret_cast<CUfunction>(f), 1, 1, 1, 256, 1, 1, 0, nullptr, args, nullptr);
                    }));
    }
    // A launch after other work has run through the caches, as in a Python
    // loop between calls: 256 KiB read, then the launch; and the reading alone.
    static std::vector<int64_t> other(32768, 1);
    volatile int64_t sink = 0;
    auto read_other = [&] {
      int64_t acc = 0;
      for (size_t i = 0; i < other.size(); i += 8) acc += other[i];
      sink = sink + acc;
    };
    bench::report("raw_loop_sized_launch_after_256KiB", launch_ns([&] {
                    read_other();
                    loop_sized_kernel<<<1, 256>>>(arg);
                  }));
    bench::report("read_256KiB_alone", launch_ns(read_other));
  }
  Tensor a = call(Op::to, call(Op::randn, DimVector{1}), IValue(), cuda);
  Tensor b = call(Op::to, call(Op::randn, DimVector{1}), IValue(), cuda);
  bench::report("cuda_add_1elem_cpp", launch_ns([&] { Tensor c = call(Op::add, a, b); }));
  return 0;
}
