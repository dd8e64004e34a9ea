"""A fused group's kernel on a device. On sim:0 the group's IR handed to the simulated device's interpreter,
which runs it in one launch (Note [An interpreted fused kernel on sim:0], floors/kernels/fused/sim_fused.h); on
cuda, CUDA C++ generated from the IR and compiled by NVRTC (Note [A fused kernel on cuda through NVRTC],
floors/kernels/fused/cuda_fused.h).

    x = descent.randn(4, 5, device="sim:0")
    cf = descent.compile(lambda x: ((x + 1.0).relu() * 2.0).exp())
    cf(x)
    k = cf.kernels[0]
    print(k.source)        # the IR the interpreter runs (there is no generated C++ on sim:0)
    print(k.read_ir())     # the program the device parsed, printed back: what the verifier reads
"""
import struct
import time

from .. import _C
from .cpp_kernel import FusedKernel, _index_expr, build_kernel
from .groups import _CTYPE, POINTWISE, REDUCTIONS

__all__ = ["SimKernel", "build_sim_kernel", "CudaKernel", "build_cuda_kernel", "cuda_source", "kernel_name"]


def kernel_name(kernel, prefix="fused"):
    """The kernel's name in the trace, as Inductor names its kernels (triton_poi_fused_add_relu_0): the IR ops
    of the group, then a prefix of its hash (two groups of the same ops are two kernels)."""
    ops = [POINTWISE[n.target.name()][0] if n.target.name() in POINTWISE else REDUCTIONS.get(n.target.name(), "op")
           for n in kernel.group if hasattr(n.target, "name")]
    shown = ops[:6] + (["etc"] if len(ops) > 6 else [])
    return f"{prefix}_{'red' if kernel.reduction else 'poi'}_{'_'.join(shown)}_{kernel.hash[:8]}"


class SimKernel(FusedKernel):
    """One fused group on sim:N: its IR, parsed by the device into a program (`handle`), launched on the
    device's current stream."""

    def read_ir(self):
        return _C._fused_sim_ir(self.handle)

    def launch(self, ptrs):
        _C._fused_sim_launch(self.handle, ptrs, self.index)


def build_sim_kernel(group, device):
    """The group's SimKernel on `device` ("sim:0"), its program loaded; ValueError where the device's parser
    refuses the IR (its message says which line)."""
    t0 = time.perf_counter()
    k = build_kernel(group, SimKernel)
    k.backend, k.device = "sim", device
    k.index = int(device.partition(":")[2] or 0)
    k.name = kernel_name(k)
    dtype = str(k.dtype).split(".")[-1]
    k.handle = _C._fused_sim_load(k.ir, list(k.shape), dtype, k.name)
    if k.reduction is not None:
        k.order = "blocks"  # eager's device order (Note [A reduction over blocks], device_reduce.h)
    k.source = "\n".join([
        f"// descent fused kernel {k.name} on {device}: {' -> '.join(k.ops)}",
        f"// over {k.numel} elements of shape {list(k.shape)}, {dtype}. No code is generated for the simulated",
        "// device: this IR is the program its interpreter runs, in one launch",
        "// (Note [An interpreted fused kernel on sim:0], floors/kernels/fused/sim_fused.h).",
        k.ir, ""])
    k.path, k.cache_hit, k.compile_s = None, False, time.perf_counter() - t0
    return k


# [SECTION] cuda: CUDA C++ from the IR, compiled by NVRTC ------------------------------------------------------

_IR_EXPR = {op: expr.replace("std::", "") for op, expr in POINTWISE.values()}  # the CUDA math library's overloads
_cuda_loaded = {}  # (source hash, device index) -> (handle, seconds): NVRTC runs once per kernel and device


def _cuda_const(v, ctype):
    """A number of the IR as CUDA C++: its repr where finite (it round-trips), its bits where not."""
    v = float(v)
    if v == v and abs(v) != float("inf"):
        return f"{ctype}({v!r})"
    return f"{ctype}(__longlong_as_double({struct.unpack('<q', struct.pack('<d', v))[0]}ll))"


def cuda_source(ir, shape, dtype, name):
    """The CUDA C++ of a pointwise group's IR over `shape` in `dtype` ("float32", "float64"): one
    extern "C" __global__ function `name`, a grid-stride loop computing each element's chain with the CPU
    kernel's expressions (Note [A fused kernel on cuda through NVRTC]). Its parameters: the inputs' pointers,
    the outputs', then the element count."""
    ctype = _CTYPE[dtype]
    params, body, n_in, outs = [], [], 0, []
    for line in ir.splitlines():
        lhs, _, rhs = line.partition(" = ")
        w = rhs.split()
        if w[0] == "input":
            shp = [int(x) for x in rhs.split("[")[1].split("]")[0].split(",") if x.strip()]
            std = [int(x) for x in rhs.split("stride")[1].split("[")[1].split("]")[0].split(",") if x.strip()]
            params.append(f"const T* __restrict__ p{n_in}")
            body.append(f"const T {lhs[1:]} = p{n_in}[{_index_expr(shp, std, list(shape))}];")
            n_in += 1
        elif lhs.startswith("out"):
            outs.append(w[0][1:])
        else:
            if w[0] not in _IR_EXPR:
                raise ValueError(f"no CUDA expression for the IR's op {w[0]} (line: {line})")
            operands, i = [], 1
            while i < len(w):
                if w[i] == "const":
                    operands.append(_cuda_const(w[i + 1], "T"))
                    i += 2
                else:
                    operands.append(w[i][1:])
                    i += 1
            expr = _IR_EXPR[w[0]].format(a=operands[0], b=operands[1] if len(operands) > 1 else "")
            body.append(f"const T {lhs[1:]} = {expr};")
    params += [f"T* __restrict__ o{j}" for j in range(len(outs))] + ["long long n"]
    body += [f"o{j}[i] = {v};" for j, v in enumerate(outs)]
    return "\n".join([
        f"// descent fused kernel {name}: over {list(shape)}, {dtype}. Generated by descent/_compile/device_kernel.py",
        "// from the IR below, compiled by NVRTC with --fmad=false (Note [A fused kernel on cuda through NVRTC]).",
        *[f"//   {line}" for line in ir.splitlines()],
        f"typedef {ctype} T;",
        f'extern "C" __global__ void {name}({", ".join(params)}) {{',
        "  const long long step = (long long)gridDim.x * blockDim.x;",
        "  for (long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += step) {",
        *[f"    {b}" for b in body],
        "  }",
        "}",
        ""])


class CudaKernel(FusedKernel):
    """One fused pointwise group on cuda:N: CUDA C++ compiled by NVRTC, loaded, launched on the current stream."""

    def read_ir(self):
        """The IR as the source NVRTC compiled carries it (cuda_source's comment lines): what the verifier reads."""
        return "\n".join(line[5:] for line in self.source.splitlines() if line.startswith("//   "))

    def launch(self, ptrs):
        _C._fused_cuda_launch(self.handle, ptrs, self.numel, self.index)


def build_cuda_kernel(group, device):
    """The group's CudaKernel on `device` ("cuda:0"), compiled and loaded (None for a group that ends in a
    reduction: not fused on cuda). RuntimeError with NVRTC's log where it fails."""
    import hashlib
    k = build_kernel(group, CudaKernel)
    if k.reduction is not None:
        return None
    k.backend, k.device = "cuda", device
    k.index = int(device.partition(":")[2] or 0)
    k.name = kernel_name(k)
    dtype = str(k.dtype).split(".")[-1]
    k.source = cuda_source(k.ir, k.shape, dtype, k.name)
    key = (hashlib.sha256(k.source.encode()).hexdigest(), k.index)
    k.cache_hit = key in _cuda_loaded
    if not k.cache_hit:
        _cuda_loaded[key] = _C._fused_cuda_load(k.source, k.name, len(k.inputs) + len(k.outputs), k.index)
    k.handle, k.compile_s = _cuda_loaded[key]
    k.path = None
    return k
