"""A fused group's kernel on sim:0: the group's IR handed to the simulated device's interpreter, which runs it
in one launch (Note [An interpreted fused kernel on sim:0], floors/kernels/fused/sim_fused.h).

    x = descent.randn(4, 5, device="sim:0")
    cf = descent.compile(lambda x: ((x + 1.0).relu() * 2.0).exp())
    cf(x)
    k = cf.kernels[0]
    print(k.source)        # the IR the interpreter runs (there is no generated C++ on sim:0)
    print(k.read_ir())     # the program the device parsed, printed back: what the verifier reads
"""
import time

from .. import _C
from .cpp_kernel import FusedKernel, build_kernel
from .groups import POINTWISE, REDUCTIONS

__all__ = ["SimKernel", "build_sim_kernel", "kernel_name"]


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
