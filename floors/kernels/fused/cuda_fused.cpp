// descent.compile's fused kernels on cuda: NVRTC, the driver's module, one
// launch. See Note [A fused kernel on cuda through NVRTC] (cuda_fused.h).
#include "floors/kernels/fused/cuda_fused.h"

#include <algorithm>
#include <chrono>

#include "floors/core/error.h"
#include "floors/launch/launch.h"
#include "floors/streams/streams.h"
#include "tracer/tracer.h"

#ifdef DESCENT_HAVE_CUDA
#include <cuda.h>
#include <cuda_runtime_api.h>
#include <nvrtc.h>
#endif

namespace descent::kernels::device {

struct CudaFused {
  const char* name = "";  // interned: the kernel's name in the trace
  int arity = 0;
  double compile_s = 0;
#ifdef DESCENT_HAVE_CUDA
  CUfunction fn = nullptr;
#endif
};

bool cuda_fused_built() {
#ifdef DESCENT_HAVE_CUDA
  return true;
#else
  return false;
#endif
}

double cuda_fused_compile_s(const CudaFused& k) { return k.compile_s; }

#ifdef DESCENT_HAVE_CUDA
namespace {

// NVRTC's cubin of `source` for sm_<arch>, or RuntimeError with its log.
std::string nvrtc_cubin(const std::string& source, int arch) {
  nvrtcProgram prog = nullptr;
  nvrtcResult r = nvrtcCreateProgram(&prog, source.c_str(), "descent_fused.cu", 0, nullptr, nullptr);
  DESCENT_CHECK(r == NVRTC_SUCCESS, Error, "NVRTC could not take the fused kernel: ", nvrtcGetErrorString(r));
  const std::string arch_flag = str("--gpu-architecture=sm_", arch);
  const char* options[] = {arch_flag.c_str(), "--fmad=false", "--std=c++17"};
  r = nvrtcCompileProgram(prog, 3, options);
  std::string log, cubin;
  size_t n = 0;
  if (nvrtcGetProgramLogSize(prog, &n) == NVRTC_SUCCESS && n > 1) {
    log.resize(n);
    if (nvrtcGetProgramLog(prog, log.data()) != NVRTC_SUCCESS) log.clear();
  }
  if (r == NVRTC_SUCCESS && nvrtcGetCUBINSize(prog, &n) == NVRTC_SUCCESS) {
    cubin.resize(n);
    if (nvrtcGetCUBIN(prog, cubin.data()) != NVRTC_SUCCESS) cubin.clear();
  }
  nvrtcDestroyProgram(&prog);
  DESCENT_CHECK(r == NVRTC_SUCCESS, Error, "NVRTC failed to compile the fused kernel (", nvrtcGetErrorString(r), "):\n",
                log);
  DESCENT_CHECK(!cubin.empty(), Error, "NVRTC compiled the fused kernel but gave no cubin");
  return cubin;
}

// A driver function by name, through the runtime (no link to libcuda).
template <class F>
F driver(const char* name) {
  void* p = nullptr;
  cudaDriverEntryPointQueryResult found{};
  if (cudaGetDriverEntryPointByVersion(name, &p, 12000, cudaEnableDefault, &found) != cudaSuccess ||
      found != cudaDriverEntryPointSuccess) {
    (void)cudaGetLastError();
    throw Error(str("the CUDA driver does not give ", name, " (a fused kernel needs it)"));
  }
  return reinterpret_cast<F>(p);
}

std::string driver_error(CUresult e) {
  using GetString = CUresult (*)(CUresult, const char**);
  static const GetString get = driver<GetString>("cuGetErrorString");
  const char* s = nullptr;
  return get(e, &s) == CUDA_SUCCESS && s ? s : str("CUresult ", int(e));
}

}  // namespace
#endif

size_t nvrtc_compile_only(const std::string& source, int arch) {
#ifdef DESCENT_HAVE_CUDA
  return nvrtc_cubin(source, arch).size();
#else
  (void)source, (void)arch;
  throw Error("descent was built without the CUDA toolkit: no NVRTC to compile a fused kernel");
#endif
}

std::shared_ptr<const CudaFused> load_cuda_fused(const std::string& source, const std::string& name, int arity,
                                                 Device d) {
  DESCENT_CHECK(d.type == DeviceType::CUDA, ValueError, "an NVRTC kernel runs on cuda, not ", d.str());
#ifdef DESCENT_HAVE_CUDA
  const auto t0 = std::chrono::steady_clock::now();
  int major = 0, minor = 0;
  DESCENT_CHECK(cudaSetDevice(d.index) == cudaSuccess &&
                    cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, d.index) == cudaSuccess &&
                    cudaDeviceGetAttribute(&minor, cudaDevAttrComputeCapabilityMinor, d.index) == cudaSuccess,
                Error, "cannot read ", d.str(), "'s compute capability: ", cudaGetErrorString(cudaGetLastError()));
  const std::string cubin = nvrtc_cubin(source, major * 10 + minor);
  (void)cudaFree(nullptr);  // the device's primary context, current on this thread (the runtime makes it)
  using LoadData = CUresult (*)(CUmodule*, const void*);
  using GetFunction = CUresult (*)(CUfunction*, CUmodule, const char*);
  static const LoadData load = driver<LoadData>("cuModuleLoadData");
  static const GetFunction get = driver<GetFunction>("cuModuleGetFunction");
  CUmodule module = nullptr;  // kept loaded for the life of the process (Note [A fused kernel on cuda through NVRTC])
  CUresult e = load(&module, cubin.data());
  DESCENT_CHECK(e == CUDA_SUCCESS, Error, "the driver could not load the fused kernel ", name, ": ", driver_error(e));
  auto k = std::make_shared<CudaFused>();
  e = get(&k->fn, module, name.c_str());
  DESCENT_CHECK(e == CUDA_SUCCESS, Error, "the fused kernel's module has no function ", name, ": ", driver_error(e));
  k->name = trace::intern(name);
  k->arity = arity;
  k->compile_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  return k;
#else
  (void)source, (void)name, (void)arity;
  throw Error("descent was built without the CUDA toolkit: no NVRTC to compile a fused kernel");
#endif
}

void launch_cuda_fused(const CudaFused& k, Device d, const std::vector<void*>& ptrs, int64_t numel) {
  DESCENT_CHECK(d.type == DeviceType::CUDA, ValueError, "an NVRTC kernel runs on cuda, not ", d.str());
  DESCENT_CHECK(int(ptrs.size()) == k.arity, ValueError, "the fused kernel ", k.name, " takes ", k.arity,
                " pointers, not ", ptrs.size());
  if (numel == 0) return;
#ifdef DESCENT_HAVE_CUDA
  using Launch = CUresult (*)(CUfunction, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned,
                              CUstream, void**, void**);
  static const Launch launch = driver<Launch>("cuLaunchKernel");
  const streams::Stream s = streams::current_stream(d);
  // At most 4096 blocks of 256 threads: the kernel's grid-stride loop takes the rest.
  const launch::KernelLaunch kl = launch::linear_launch(k.name, "descent.compile", std::min<int64_t>(numel, 1 << 20));
  std::vector<void*> values(ptrs);
  long long n = numel;
  std::vector<void*> args;
  for (void*& p : values) args.push_back(&p);
  args.push_back(&n);
  launch::CudaLaunchScope scope(s, kl);
  const CUresult e =
      launch(k.fn, kl.grid.x, 1, 1, kl.block.x, 1, 1, 0, static_cast<CUstream>(scope.stream()), args.data(), nullptr);
  DESCENT_CHECK(e == CUDA_SUCCESS, Error, "descent.compile: launching the fused kernel ", k.name,
                " failed: ", driver_error(e));
#else
  (void)ptrs;
  throw Error("descent was built without the CUDA toolkit: no fused kernel runs on cuda");
#endif
}

}  // namespace descent::kernels::device
