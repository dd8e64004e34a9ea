// descent.compile's fused kernels on cuda: generated CUDA C++ compiled at run
// time by NVRTC and launched through the driver on the current stream.
//
// Note [A fused kernel on cuda through NVRTC]
// ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
// On cuda the fused group is generated code, as Inductor's Triton kernels
// are: descent/_compile/device_kernel.py writes one `extern "C" __global__`
// function per pointwise group, a grid-stride loop computing the chain per
// element with the expressions the CPU kernel uses (exp, tanh, ... as the
// CUDA math library's overloads for float and double, which eager's device
// functors call too), and this file compiles it with NVRTC, the runtime
// compiler of the CUDA toolkit, with --fmad=false (as the floor's .cu files
// are built: no fused multiply-add, so each element's operations round as
// eager's kernels round them) for the device's own architecture (a cubin:
// no PTX left for the driver to compile), loads the cubin into the current
// context (cuModuleLoadData) and launches it with cuLaunchKernel on the
// stream, inside floor 8's CudaLaunchScope like every kernel. The driver's
// functions come through the runtime (cudaGetDriverEntryPointByVersion), so
// descent links no libcuda and still imports on a machine with no driver.
// A module stays loaded for the life of the process, as Inductor keeps its
// kernels. Reductions are not fused on cuda: the chain before one is, and
// eager's reduction kernel follows it. Built without the CUDA toolkit, every
// function here raises RuntimeError saying so.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "floors/core/device.h"

namespace descent::kernels::device {

struct CudaFused;

// Whether this build has NVRTC (it was built with the CUDA toolkit).
bool cuda_fused_built();
// `source` compiled by NVRTC for architecture `arch` (90 for sm_90): the
// cubin's size in bytes. RuntimeError with NVRTC's log where it fails. What
// the tests run on a machine without a GPU: NVRTC needs none.
size_t nvrtc_compile_only(const std::string& source, int arch);
// `source`'s kernel `name` (its extern "C" __global__ function) compiled for
// cuda device `d` and loaded; `arity` pointers, then the element count, are
// its parameters. RuntimeError with NVRTC's log or the driver's error.
std::shared_ptr<const CudaFused> load_cuda_fused(const std::string& source, const std::string& name, int arity,
                                                 Device d);
// How long NVRTC and the load took, in seconds.
double cuda_fused_compile_s(const CudaFused& k);
// One launch over `numel` elements on `d`'s current stream with `ptrs` (arity of them).
void launch_cuda_fused(const CudaFused& k, Device d, const std::vector<void*>& ptrs, int64_t numel);

}  // namespace descent::kernels::device
