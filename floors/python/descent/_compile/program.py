"""The fused program: a graph run as its non-fused ops and its groups' kernels, as generated straight-line Python
(Note [The fused program as Python]), each kernel launched on threads (Note [A fused kernel's threads]).
"""
import ctypes
import operator
import os

import descent
from .. import _C
from ..fx.graph import unwrap_numbers
from ..tracing import span as _span
from .groups import _SUM_BLOCK, _SUM_LANES

__all__ = ["FusedProgram"]


# Note [A fused kernel's threads]
# ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
# A kernel computes a range [lo, hi) of its work units: elements for a
# pointwise chain, outputs for a reduction (each output's sum in eager's
# order, whole, on one thread). A call over at least _PARALLEL_ELEMENTS
# elements is cut into descent.get_num_threads() ranges, run at once on a
# pool of Python threads (ctypes lets go of the GIL for the call), the
# first on the calling thread. The ranges are disjoint and each unit is
# computed as on one thread, so the bits do not depend on the thread count.
# A single sum of everything (x.sum(), in "lanes" order) is one unit, so
# it is cut as eager's sum cuts it (cascade_row, optimized.cpp): its tree's
# subtrees a few levels down are summed at once (descent_leaf), then the
# levels above them are added as the whole tree would add them
# (descent_join): the same additions, so the same bits.
_PARALLEL_ELEMENTS = 1 << 15
_pool, _pool_pid = None, None


def _launch(k, ptrs, n):
    units = k.units
    threads = min(descent.get_num_threads(), units)
    if k.split and n >= 2 * _PARALLEL_ELEMENTS and descent.get_num_threads() > 1:
        return _launch_split(k, ptrs, n, descent.get_num_threads())
    if threads <= 1 or n < _PARALLEL_ELEMENTS:
        k.fn(ptrs, 0, units)
        return
    cuts = [units * t // threads for t in range(threads + 1)]
    _run_on_threads([(k.fn, (ptrs, cuts[t], cuts[t + 1])) for t in range(threads)])


def _launch_split(k, ptrs, n, threads):
    """One sum of n elements: the subtrees `levels` levels down on the threads, then their join."""
    if k.leaf is None:
        k.leaf, k.join = k.lib.descent_leaf, k.lib.descent_join
        k.leaf.argtypes = [ctypes.POINTER(ctypes.c_void_p), ctypes.c_int64, ctypes.c_int64, ctypes.c_void_p]
        k.join.argtypes = [ctypes.POINTER(ctypes.c_void_p), ctypes.c_int64, ctypes.c_void_p]
        k.leaf.restype = k.join.restype = None
    levels = 0
    while (1 << levels) < threads and (n >> (levels + 1)) >= _PARALLEL_ELEMENTS:
        levels += 1
    leaves = _cut_tree(0, n, levels)
    width = 8 if str(k.dtype).endswith("float64") else 4
    sums = (ctypes.c_char * (len(leaves) * _SUM_LANES * width))()
    base = ctypes.addressof(sums)
    _run_on_threads([(k.leaf, (ptrs, lo, hi, base + i * _SUM_LANES * width)) for i, (lo, hi) in enumerate(leaves)])
    k.join(ptrs, levels, base)


def _cut_tree(lo, hi, levels):
    """The subtrees [lo, hi) of the sum's tree `levels` levels down (mid_of's splits, descent_join's order)."""
    superblock = _SUM_BLOCK * _SUM_LANES
    if levels == 0 or hi - lo <= superblock:
        return [(lo, hi)]
    mid = lo + (hi - lo + superblock - 1) // superblock // 2 * superblock
    return _cut_tree(lo, mid, levels - 1) + _cut_tree(mid, hi, levels - 1)




def _run_on_threads(calls):
    """Runs each (fn, args) at once: the first on this thread, the others on the pool."""
    threads = len(calls)
    global _pool, _pool_pid
    if _pool is None or _pool._max_workers < threads - 1 or _pool_pid != os.getpid():  # a forked child: its own
        from concurrent.futures import ThreadPoolExecutor
        _pool = ThreadPoolExecutor(max_workers=max(threads - 1, 1), thread_name_prefix="descent-fused")
        _pool_pid = os.getpid()
    futures = [_pool.submit(fn, *args) for fn, args in calls[1:]]
    calls[0][0](*calls[0][1])
    for f in futures:
        f.result()


class FusedProgram:
    """A graph with its fused groups: called with the graph's tensor inputs, it runs each non-fused node's
    operator and each group's kernel, and returns what the graph returns."""

    def __init__(self, gm, kernels, notes):
        self.gm, self.kernels, self.notes = gm, kernels, notes
        slot, steps = {}, []
        by_last = {k.group[-1]: k for k in kernels}
        fused = {n for k in kernels for n in k.group}
        for node in gm.graph.nodes:
            if node.op == "placeholder":
                slot[node] = len(slot)
        n_in = len(slot)
        for node in gm.graph.nodes:
            if node.op == "get_attr":
                slot[node] = len(slot)
                steps.append(("const", slot[node], getattr(gm, node.target)))
            elif node in by_last:
                k = by_last[node]
                outs = []
                for o in k.outputs:
                    slot[o] = len(slot)
                    outs.append(slot[o])
                steps.append(("kernel", k, [slot[a] for a in k.inputs], outs))
                for m in k.group:  # the group op by op: for a call whose input strides are not the kernel's
                    if m not in k.outputs:
                        slot[m] = len(slot)
            elif node.op == "call_function" and node not in fused:
                slot[node] = len(slot)
                steps.append(("call", slot[node], node.target, node.args, node.kwargs))
            elif node.op == "output":
                self._out = node.args[0]
        self._slot, self._steps, self._n_in, self._n = slot, steps, n_in, len(slot)
        self.code, self._run = self._generate()

    # Note [The fused program as Python]
    # ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
    # Walking the steps with an environment list costs a few microseconds a
    # call, which is most of a cache hit on small tensors. So the program is
    # also written out as straight-line Python, as GraphModule's code is
    # (one local per value, each operator and constant bound by name), and
    # that function is what a call runs; `program.code` shows it. Its kernel
    # steps check the inputs' strides first and run the group op by op where
    # they are not the kernel's, as the interpreter below (_interpret) does.
    def _generate(self):
        slot, names = self._slot, {}

        def bind(obj, prefix):
            key = f"{prefix}{len(names)}"
            names[key] = obj
            return key

        def arg(a):
            if isinstance(a, descent.fx.Node):
                return f"v{slot[a]}"
            if isinstance(a, tuple):
                return "(" + "".join(arg(x) + ", " for x in a) + ")"
            if isinstance(a, list):
                return "[" + ", ".join(arg(x) for x in a) + "]"
            if isinstance(a, dict):
                return "{" + ", ".join(f"{k!r}: {arg(v)}" for k, v in a.items()) + "}"
            if type(a).__name__ in ("WrappedFloat", "WrappedInt"):
                return f"U({bind(a, 'K')})"  # a wrapped number: a fresh 0-d tensor each call, as the op expects
            return bind(a, "K")

        def call(target, args, kwargs):
            parts = [arg(a) for a in args] + [f"{k}={arg(v)}" for k, v in kwargs.items()]
            return f"{bind(target, 'F')}({', '.join(parts)})"
        inputs = [f"v{i}" for i in range(self._n_in)]
        body = []
        for step in self._steps:
            if step[0] == "const":
                body.append(f"v{step[1]} = {bind(step[2], 'K')}")
            elif step[0] == "call":
                _, s_, target, args, kwargs = step
                if target is operator.getitem:
                    body.append(f"v{s_} = {arg(args[0])}[{args[1]!r}]")
                else:
                    body.append(f"v{s_} = {call(target, args, kwargs)}")
            else:
                _, k, ins, outs = step
                kn = bind(k, "KERNEL")
                check = " or ".join(f"tuple(v{i}.stride()) != {bind(st, 'S')}" for i, st in zip(ins, k.strides))
                body.append(f"if {check or 'False'}:  # strides no guard covers: the group op by op")
                body += [f"    v{slot[m]} = {call(m.target, m.args, m.kwargs)}" for m in k.group]
                body.append("else:")
                rs = [f"r{j}" for j in range(len(outs))]
                on = "" if k.backend == "cpp" else f", device={bind(k.device, 'DEV')}"
                body += [f"    {r} = empty({bind(shape, 'SHAPE')}, dtype={bind(k.dtype, 'DT')}{on})"
                         for r, shape in zip(rs, k.out_shapes)]
                ptrs = ", ".join([f"v{i}.data_ptr()" for i in ins] + [f"{r}.data_ptr()" for r in rs])
                if k.backend == "cpp":
                    body.append(f"    p = {bind(k.ptr_array, 'P')}({ptrs})")
                    run = f"launch({kn}, p, {k.numel})"
                else:  # a device's kernel: one launch on its current stream (device_kernel.py)
                    body.append(f"    p = ({ptrs},)")
                    run = f"{bind(k.launch, 'LAUNCH')}(p)"
                label = bind(f"fused kernel {k.hash[:12]}: {len(k.group)} ops, {k.numel} elements", "L")
                body.append("    if trace():")
                body.append(f"        with span({label}):")
                body.append(f"            {run}")
                body.append("    else:")
                body.append(f"        {run}")
                body += [f"    v{o} = ({r}, None)" if j in k.tuple_outputs else f"    v{o} = {r}"
                         for j, (o, r) in enumerate(zip(outs, rs))]
        body.append(f"return {arg(self._out)}")
        code = "\n".join([f"def fused_program({', '.join(inputs)}):"] + ["    " + line for line in body])
        scope = dict(names, U=unwrap_numbers, empty=descent.empty, trace=_C._trace_enabled, span=_span,
                     launch=_launch)
        exec(compile(code, f"<fused_program>.{id(self)}", "exec"), scope)  # noqa: S102 (our own generated code)
        return code, scope["fused_program"]

    def _get(self, env, a):
        if isinstance(a, descent.fx.Node):
            return env[self._slot[a]]
        if isinstance(a, (list, tuple)):
            return type(a)(self._get(env, x) for x in a)
        if isinstance(a, dict):
            return {k: self._get(env, v) for k, v in a.items()}
        return unwrap_numbers(a)

    def _unfused(self, env, k):
        for m in k.group:
            env[self._slot[m]] = m.target(*self._get(env, m.args), **self._get(env, m.kwargs))

    def __call__(self, *inputs):
        return self._run(*inputs)

    def _interpret(self, *inputs):
        """The same program, step by step (what _generate writes out as Python)."""
        env = list(inputs) + [None] * (self._n - self._n_in)
        for step in self._steps:
            kind = step[0]
            if kind == "call":
                _, s, target, args, kwargs = step
                if target is operator.getitem:
                    env[s] = self._get(env, args[0])[args[1]]
                else:
                    env[s] = target(*self._get(env, args), **self._get(env, kwargs))
            elif kind == "kernel":
                _, k, ins, outs = step
                args = [env[i] for i in ins]
                if any(tuple(a.stride()) != st for a, st in zip(args, k.strides)):
                    # Strides no guard covers (a backward graph's grad_output, expanded by sum's
                    # backward): the kernel's indexing would be wrong, so the group runs op by op.
                    self._unfused(env, k)
                    continue
                n = k.numel
                on = {} if k.backend == "cpp" else {"device": k.device}
                results = [descent.empty(shape, dtype=k.dtype, **on) for shape in k.out_shapes]
                raw = [a.data_ptr() for a in args] + [r.data_ptr() for r in results]
                if k.backend == "cpp":
                    ptrs = k.ptr_array(*raw)
                    run = lambda: _launch(k, ptrs, n)  # noqa: E731
                else:
                    run = lambda: k.launch(tuple(raw))  # noqa: E731
                if _C._trace_enabled():
                    with _span(f"fused kernel {k.hash[:12]}: {len(k.group)} ops, {n} elements"):
                        run()
                else:
                    run()
                for j, (s, r) in enumerate(zip(outs, results)):
                    env[s] = (r, None) if j in k.tuple_outputs else r  # max.dim's (values, -): getitem 0 reads it
            else:
                env[step[1]] = step[2]
        return self._get(env, self._out)
