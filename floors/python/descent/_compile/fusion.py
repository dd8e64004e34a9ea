"""The inductor backend: a captured graph's pointwise chains fused into generated C++ kernels.

Its files, in the order a graph goes through them: groups.py (which nodes fuse), cpp_kernel.py (each group's
IR and C++, built and cached), program.py (the graph run as its ops and kernels); this file picks and drives them.

    cf = descent.compile(lambda x, b: ((x + b).relu() * 2).exp())
    cf(x, b)
    k = cf.kernels[0]
    print(k.source)        # the generated C++: one loop, the chain inlined
    print(k.verdict)       # the verifier's: each output's expression proved equal to the graph's

Note [Fusing a pointwise chain]
~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
Eager runs `((x + b).relu() * 2).exp()` as four kernels, each reading its
input from memory and writing a whole new tensor. Inductor's first idea is
to run it as one loop that reads x and b once and keeps the three
intermediates in registers. descent does the same for float32 and float64
chains on the CPU: consecutive pointwise nodes of one shape and dtype
(add, sub, mul, div at alpha=1; neg, abs, relu, exp, log, sqrt, tanh,
sigmoid, sin, cos, reciprocal) form a group; what the group reads from
outside (graph inputs, results of non-fusible ops such as mm, Python
numbers) are its inputs, and each member someone outside uses is an output.
An op between members that uses none of them (b.exp() beside x's chain)
runs before the kernel, which runs where the group's last member was.
The group becomes a small IR (`%t1 = relu %t0`, one line per node, kept in
the library as text for the verifier to read back), and the IR becomes C++
whose per-element expressions are descent's own kernels' (elementwise.h:
relu is `x > 0 || x != x ? x : 0`, sigmoid `1 / (1 + exp(-x))`), in the
graph's order of operations. Shapes are static (Note [Guards]), so the
index of a broadcast input (b of shape [5] beside [4, 5]) is written as
constant divisions and strides. The system compiler builds it with
-ffp-contract=off (no fused multiply-add eager would not do either): the
result is eager's bit for bit, which the verifier checks. The library is
cached on disk by a hash of its source (XDG_CACHE_HOME/descent/kernels), a
cache file that does not load or names another hash is rebuilt, and with
no compiler (or one that fails, its message shown) the graph runs op by op
with one warning. On sim:0 the same IR is the kernel, run by the device's
interpreter in one launch (Note [An interpreted fused kernel on sim:0],
floors/kernels/fused/sim_fused.h); on cuda, CUDA C++ generated from it and
compiled by NVRTC (Note [A fused kernel on cuda through NVRTC],
floors/kernels/fused/cuda_fused.h). Not fused: reductions on cuda, integer
dtypes, reductions that no pointwise chain feeds (Note [Fusing a chain into
its reduction]). Where the call needs a backward, what is
fused are AOT autograd's forward and backward graphs (Note [Partitioning
the joint graph], aot.py), never a graph replayed through autograd, since a
fused kernel records no autograd node.
"""
import os
import shutil

import descent
from . import groups as _groups
from .groups import POINTWISE, REDUCTIONS, groups_of, reduction_of, sum_order, _SUM_BLOCK, _SUM_LANES  # noqa: F401
from .program import FusedProgram, _PARALLEL_ELEMENTS  # noqa: F401

__all__ = ["compile_graph", "FusedProgram", "FusedKernel", "POINTWISE", "cache_dir"]
_warned = set()


def cache_dir():
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return os.path.join(base, "descent", "kernels")


def _compiler():
    cxx = os.environ.get("DESCENT_CXX") or os.environ.get("CXX") or "c++"
    return shutil.which(cxx)


def compile_graph(gm, example_inputs, owner=None):
    """The inductor backend: gm with its pointwise chains fused, verified (verify.py), or gm itself where
    nothing is fused."""
    notes = []
    if descent.is_grad_enabled() and any(t.requires_grad for t in example_inputs):
        notes.append("fusion off: an input requires grad (a fused kernel records no autograd node)")
    devices = sorted({str(t.device) for t in example_inputs}) or ["cpu"]
    if not notes and len(devices) > 1:
        notes.append(f"fusion off: the inputs are on {' and '.join(devices)} (a kernel runs on one device)")
    if not notes and not _groups._device_fuses(devices[0]):
        notes.append(f"fusion off: no fused kernels on {devices[0]} (the graph runs op by op)")
    if notes:
        _note(owner, notes)
        return gm
    if devices[0] != "cpu":
        return _compile_on_device(gm, devices[0], owner)
    from .cpp_kernel import _finish_build, _start_build, build_kernel
    kernels = []
    todo = [k for k in (build_kernel(group) for group in groups_of(gm.graph)) if k.outputs]
    at_once = max(2, os.cpu_count() or 2)  # the graph's kernels build side by side, this many compilers at a time
    for first in range(0, len(todo), at_once):
        batch = todo[first:first + at_once]
        for k, started in [(k, _start_build(k)) for k in batch]:
            if _finish_build(k, started):
                kernels.append(k)
                notes.append(f"fused kernel {k.hash[:12]}: {' -> '.join(k.ops)} "
                             f"({'cache hit' if k.cache_hit else 'built'} in {k.compile_s * 1e3:.1f} ms, {k.path})")
    return _verified_program(gm, kernels, notes, owner, "nothing to fuse: the graph runs op by op")


def _compile_on_device(gm, device, owner):
    """The graph's groups as kernels of `device`: interpreted programs on sim:N, NVRTC's on cuda:N
    (device_kernel.py); a group the device refuses runs op by op, its reason noted."""
    from .device_kernel import build_cuda_kernel, build_sim_kernel
    build = build_cuda_kernel if device.startswith("cuda") else build_sim_kernel
    kernels, notes = [], []
    for group in groups_of(gm.graph, device):
        try:
            k = build(group, device)
        except (ValueError, RuntimeError) as e:
            notes.append(f"a group of {len(group)} ops runs op by op: {e}")
            continue
        if k is None or not k.outputs:
            continue
        kernels.append(k)
        notes.append(f"fused kernel {k.hash[:12]} on {device}: {' -> '.join(k.ops)} ({k.name}, "
                     f"{'cache hit' if k.cache_hit else 'built'} in {k.compile_s * 1e3:.1f} ms)")
    return _verified_program(gm, kernels, notes, owner, f"nothing to fuse on {device}: the graph runs op by op")


def _verified_program(gm, kernels, notes, owner, nothing):
    """gm run around its kernels, each translation-validated (verify.py) and the verdicts noted; gm itself,
    with the note `nothing`, where no kernel was built."""
    if not kernels:
        _note(owner, notes or [nothing])
        return gm
    program = FusedProgram(gm, kernels, notes)
    from . import verify
    for k in kernels:
        k.verdict = verify.translation_validate(k)
        notes.append(f"verifier, kernel {k.hash[:12]}: {k.verdict}")
    _note(owner, notes)
    return program


def _note(owner, notes):
    if owner is not None:
        owner.events += [f"    {n}" for n in notes]


def __getattr__(name):
    """The C++ kernel's names, as fusion.FusedKernel and fusion.build_kernel (cpp_kernel.py imports this module
    for the compiler and the cache, so this one imports it when first asked)."""
    from . import cpp_kernel
    if hasattr(cpp_kernel, name):
        return getattr(cpp_kernel, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
