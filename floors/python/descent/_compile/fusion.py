"""The inductor backend: a captured graph's pointwise chains fused into generated C++ kernels.

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
with one warning. Not fused: other devices (sim:0 and cuda run the graph op
by op), reductions, integer dtypes. Where the call needs a backward, what is
fused are AOT autograd's forward and backward graphs (Note [Partitioning
the joint graph], aot.py), never a graph replayed through autograd, since a
fused kernel records no autograd node.
"""
import ctypes
import hashlib
import operator
import os
import shutil
import subprocess
import tempfile
import time
import warnings

import descent
from .. import _C
from ..fx.graph import unwrap_numbers
from ..tracing import span as _span

__all__ = ["compile_graph", "FusedProgram", "FusedKernel", "POINTWISE", "cache_dir"]

# aten operator -> (IR op, C++ expression of its operands a, b in T).
POINTWISE = {
    "aten::add.Tensor": ("add", "({a} + {b})"),
    "aten::sub.Tensor": ("sub", "({a} - {b})"),
    "aten::mul.Tensor": ("mul", "({a} * {b})"),
    "aten::div.Tensor": ("div", "({a} / {b})"),
    "aten::neg": ("neg", "(-{a})"),
    "aten::abs": ("abs", "std::fabs({a})"),
    "aten::relu": ("relu", "({a} > T(0) || {a} != {a} ? {a} : T(0))"),
    "aten::exp": ("exp", "std::exp({a})"),
    "aten::log": ("log", "std::log({a})"),
    "aten::sqrt": ("sqrt", "std::sqrt({a})"),
    "aten::tanh": ("tanh", "std::tanh({a})"),
    "aten::sigmoid": ("sigmoid", "(T(1) / (T(1) + std::exp(-{a})))"),
    "aten::sin": ("sin", "std::sin({a})"),
    "aten::cos": ("cos", "std::cos({a})"),
    "aten::reciprocal": ("reciprocal", "(T(1) / {a})"),
}
_CTYPE = {"float32": "float", "float64": "double"}
_FLAGS = ["-O2", "-shared", "-fPIC", "-ffp-contract=off", "-fno-fast-math", "-std=c++17"]
_warned = set()


def cache_dir():
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return os.path.join(base, "descent", "kernels")


def _compiler():
    cxx = os.environ.get("DESCENT_CXX") or os.environ.get("CXX") or "c++"
    return shutil.which(cxx)


def _dtype_name(d):
    return str(d).split(".")[-1]


def _fusible(node):
    if node.op != "call_function" or node.target is operator.getitem:
        return False
    if node.target.name() not in POINTWISE or node.kwargs:
        return False
    val = node.meta.get("val")
    if val is None or _dtype_name(val["dtype"]) not in _CTYPE or str(val["device"]) != "cpu":
        return False
    for a in node.args:
        if isinstance(a, descent.fx.Node):
            v = a.meta.get("val")
            if v is None or v["dtype"] != val["dtype"] or str(v["device"]) != "cpu":
                return False
            if len(v["shape"]) > len(val["shape"]) or any(
                    s not in (1, S) for s, S in zip(reversed(v["shape"]), reversed(val["shape"]))):
                return False
        elif not isinstance(a, (int, float)) or isinstance(a, bool):
            return False
    return True


def groups_of(graph):
    """The fusible groups: pointwise nodes of one shape and dtype, in graph order. A node that cannot join
    (another op, another shape) closes the open group only if it uses one of its members; otherwise it runs
    before the group's kernel, which runs where the group's last member was."""
    out, cur = [], []

    def close():
        if len(cur) >= 2:
            out.append(list(cur))
        cur.clear()
    for node in graph.nodes:
        if _fusible(node):
            if not cur:
                cur.append(node)
                continue
            v, v0 = node.meta["val"], cur[0].meta["val"]
            if v["shape"] == v0["shape"] and v["dtype"] == v0["dtype"]:
                cur.append(node)
                continue
        if any(a in cur for a in node.all_input_nodes) or node.op == "output":
            close()
        if _fusible(node) and not cur:
            cur.append(node)
    close()
    return out


def _index_expr(shape, stride, out_shape):
    """The C++ offset of element i of an input of shape/stride seen broadcast to out_shape."""
    nd, pad = len(out_shape), len(out_shape) - len(shape)
    if tuple(shape) == tuple(out_shape):
        contiguous, acc = True, 1
        for s, st in zip(reversed(shape), reversed(stride)):
            if s != 1 and st != acc:
                contiguous = False
            acc *= s
        if contiguous:
            return "i"
    terms, inner = [], 1
    for d in reversed(range(nd)):
        k = d - pad
        size = out_shape[d]
        if k >= 0 and shape[k] != 1 and size != 1:
            st = stride[k]
            q = "i" if inner == 1 else f"(i / {inner})"
            terms.append(f"({q} % {size}) * {st}" if d > 0 else f"{q} * {st}")
        inner *= size
    return " + ".join(reversed(terms)) or "0"


class FusedKernel:
    """One generated kernel: its IR, C++ source, library and the verifier's verdict."""

    def __init__(self, group, inputs, outputs, ir, source, digest):
        self.group, self.inputs, self.outputs = group, inputs, outputs
        self.ir, self.source, self.hash = ir, source, digest
        self.path, self.fn, self.lib = None, None, None
        self.cache_hit, self.compile_s, self.verdict = False, 0.0, None
        self.shape = tuple(group[0].meta["val"]["shape"])
        self.strides = [tuple(a.meta["val"]["stride"]) for a in inputs]  # what the generated indexing assumes
        self.dtype = group[0].meta["val"]["dtype"]

    @property
    def ops(self):
        return [str(n.target) for n in self.group]

    def read_ir(self):
        """The IR as the loaded library holds it: what the verifier proves things of."""
        return _c_string(self.lib, "descent_ir")

    def __repr__(self):
        return f"<FusedKernel {self.hash[:12]}: {' -> '.join(n.name for n in self.group)}>"


def build_kernel(group):
    """The IR and C++ of one group (Note [Fusing a pointwise chain])."""
    members = set(group)
    val0 = group[0].meta["val"]
    out_shape, ctype = tuple(val0["shape"]), _CTYPE[_dtype_name(val0["dtype"])]
    inputs, names, ir, body = [], {}, [], []
    for node in group:
        for a in node.args:
            if isinstance(a, descent.fx.Node) and a not in members and a not in names:
                v = a.meta["val"]
                names[a] = f"%in{len(inputs)}"
                ir.append(f"{names[a]} = input {_dtype_name(v['dtype'])} {list(v['shape'])} stride {list(v['stride'])}")
                body.append(f"    const T in{len(inputs)} = reinterpret_cast<const T*>(p[{len(inputs)}])"
                            f"[{_index_expr(v['shape'], v['stride'], out_shape)}];")
                inputs.append(a)
    outputs = [n for n in group if any(u not in members for u in n.users)]
    for k, node in enumerate(group):
        op, expr = POINTWISE[node.target.name()]
        operands, cargs = [], []
        for a in node.args:
            if isinstance(a, descent.fx.Node):
                operands.append(names[a])
                cargs.append(names[a][1:])
            else:
                operands.append(f"const {float(a)!r}")
                cargs.append(f"T({float(a)!r})")
        names[node] = f"%t{k}"
        ir.append(f"%t{k} = {op} {' '.join(operands)}")
        body.append(f"    const T t{k} = {expr.format(a=cargs[0], b=cargs[1] if len(cargs) > 1 else '')};")
    for j, node in enumerate(outputs):
        ir.append(f"out{j} = {names[node]}")
        body.append(f"    reinterpret_cast<T*>(p[{len(inputs) + j}])[i] = {names[node][1:]};")
    n = 1
    for s in out_shape:
        n *= s
    ir_text = "\n".join(ir)
    digest = hashlib.sha256((ir_text + ctype + str(out_shape) + " ".join(_FLAGS)).encode()).hexdigest()
    ir_c = ir_text.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")
    source = "\n".join([
        f"// descent fused kernel {digest[:16]}: {' -> '.join(str(nd.target) for nd in group)}",
        f"// over {n} elements of shape {list(out_shape)}, {ctype}. Generated by descent/_compile/fusion.py",
        "// (Note [Fusing a pointwise chain]); the IR below is what the verifier reads back.",
        "#include <cmath>",
        "#include <cstdint>",
        f"using T = {ctype};",
        f'extern "C" const char descent_ir[] = "{ir_c}";',
        f'extern "C" const char descent_hash[] = "{digest}";',
        'extern "C" void descent_kernel(char** p, int64_t n) {',
        "  for (int64_t i = 0; i < n; ++i) {",
        *body,
        "  }",
        "}",
        "",
    ])
    return FusedKernel(group, inputs, outputs, ir_text, source, digest)


def _c_string(lib, name):
    """A `const char name[]` of a loaded library, as text."""
    return ctypes.string_at(ctypes.addressof(ctypes.c_char.in_dll(lib, name))).decode()


def _load(kernel, path):
    lib = ctypes.CDLL(path)
    if _c_string(lib, "descent_hash") != kernel.hash:
        raise OSError("the cached library names another kernel")
    fn = lib.descent_kernel
    fn.argtypes = [ctypes.POINTER(ctypes.c_void_p), ctypes.c_int64]
    fn.restype = None
    kernel.lib, kernel.fn, kernel.path = lib, fn, path
    _loaded[kernel.hash] = (lib, fn, path)


_loaded = {}  # hash -> (lib, fn, path): a library this process has loaded is never loaded again


def compile_kernel(kernel):
    """Loads the kernel's library from the cache, or builds it there. False (with one warning) where it
    cannot: no compiler, or the compiler failed (its message in the warning)."""
    d = cache_dir()
    path = os.path.join(d, f"{kernel.hash}.so")
    t0 = time.perf_counter()
    if kernel.hash in _loaded and os.path.dirname(_loaded[kernel.hash][2]) == d:
        kernel.lib, kernel.fn, kernel.path = _loaded[kernel.hash]
        kernel.cache_hit, kernel.compile_s = True, time.perf_counter() - t0
        return True
    if os.path.exists(path):
        try:
            _load(kernel, path)
            kernel.cache_hit, kernel.compile_s = True, time.perf_counter() - t0
            return True
        except OSError:
            try:
                os.remove(path)  # corrupt, or another kernel's: rebuilt below
            except OSError:
                pass
    cxx = _compiler()
    if cxx is None:
        if "nocompiler" not in _warned:
            _warned.add("nocompiler")
            warnings.warn("descent.compile: no C++ compiler found (set CXX or DESCENT_CXX): fused kernels are off, "
                          "graphs run op by op")
        return False
    os.makedirs(d, exist_ok=True)
    with open(os.path.join(d, f"{kernel.hash}.cpp"), "w") as f:
        f.write(kernel.source)
    fd, tmp = tempfile.mkstemp(suffix=".so", dir=d)
    os.close(fd)
    env = {k: v for k, v in os.environ.items() if k != "LD_PRELOAD"}  # the compiler runs unsanitized
    r = subprocess.run([cxx, *_FLAGS, "-o", tmp, "-x", "c++", "-"], input=kernel.source, capture_output=True,
                       text=True, env=env)
    if r.returncode != 0:
        os.remove(tmp)
        warnings.warn(f"descent.compile: the fused kernel {kernel.hash[:12]} did not compile; the graph runs op by "
                      f"op. The compiler said:\n{r.stderr.strip()}")
        return False
    os.replace(tmp, path)
    _load(kernel, path)
    kernel.compile_s = time.perf_counter() - t0
    return True


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
                n = 1
                for s in k.shape:
                    n *= s
                results = [descent.empty(k.shape, dtype=k.dtype) for _ in outs]
                ptrs = (ctypes.c_void_p * (len(ins) + len(outs)))(
                    *[a.data_ptr() for a in args], *[r.data_ptr() for r in results])
                if _C._trace_enabled():
                    with _span(f"fused kernel {k.hash[:12]}: {len(k.group)} ops, {n} elements"):
                        k.fn(ptrs, n)
                else:
                    k.fn(ptrs, n)
                for s, r in zip(outs, results):
                    env[s] = r
            else:
                env[step[1]] = step[2]
        return self._get(env, self._out)


def compile_graph(gm, example_inputs, owner=None):
    """The inductor backend: gm with its pointwise chains fused, verified (verify.py), or gm itself where
    nothing is fused."""
    notes = []
    if descent.is_grad_enabled() and any(t.requires_grad for t in example_inputs):
        notes.append("fusion off: an input requires grad (a fused kernel records no autograd node)")
    elif any(str(t.device) != "cpu" for t in example_inputs):
        notes.append("fusion off: the inputs are not on the CPU (the graph runs op by op)")
    if notes:
        _note(owner, notes)
        return gm
    kernels = []
    for group in groups_of(gm.graph):
        k = build_kernel(group)
        if not k.outputs:
            continue
        if compile_kernel(k):
            kernels.append(k)
            notes.append(f"fused kernel {k.hash[:12]}: {' -> '.join(k.ops)} "
                         f"({'cache hit' if k.cache_hit else 'built'} in {k.compile_s * 1e3:.1f} ms, {k.path})")
    if not kernels:
        _note(owner, notes or ["nothing to fuse: the graph runs op by op"])
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
