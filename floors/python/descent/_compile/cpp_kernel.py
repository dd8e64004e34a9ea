"""The C++ kernel of a fused group: its IR, the generated source, and the library the system compiler builds from
it, cached on disk (Note [Fusing a pointwise chain], fusion.py; Note [Fusing a chain into its reduction], groups.py).
"""
import ctypes
import hashlib
import operator
import os
import subprocess
import tempfile
import time
import warnings

import descent
from . import fusion
from .groups import POINTWISE, _CTYPE, _SUM_BLOCK, _SUM_LANES, _dtype_name, reduction_of, sum_order

__all__ = ["FusedKernel", "build_kernel", "compile_kernel"]

_FLAGS = ["-O3", "-shared", "-fPIC", "-ffp-contract=off", "-fno-fast-math", "-std=c++17"]
_ABI = " abi: (char** p, int64_t lo, int64_t hi), leaf/join"  # in the hash: a library of another signature is never loaded


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
        self.leaf = self.join = None  # a split sum's two entry points (_launch_split)
        self.cache_hit, self.compile_s, self.verdict = False, 0.0, None
        self.shape = None  # the elements the loop computes (build_kernel sets it, and dtype)
        self.out_shapes = [tuple((o.meta.get("val") or next(iter(o.users)).meta["val"])["shape"]) for o in outputs]
        self.strides = [tuple(a.meta["val"]["stride"]) for a in inputs]  # what the generated indexing assumes
        self.dtype = None
        self.reduction = reduction_of(group[-1])  # (op, dims, keepdim) where the chain ends in one
        self.order = None  # the reduction's order of additions: "lanes" or "cascade"
        self.backend, self.device = "cpp", "cpu"  # a device's kernel (device_kernel.py) says its own

    @property
    def ops(self):
        return [str(n.target) for n in self.group]

    def read_ir(self):
        """The IR as the loaded library holds it: what the verifier proves things of."""
        return _c_string(self.lib, "descent_ir")

    def __repr__(self):
        return f"<FusedKernel {self.hash[:12]}: {' -> '.join(n.name for n in self.group)}>"


# Note [Strips of a chain]
# ~~~~~~~~~~~~~~~~~~~~~~~~
# Written as one loop computing a whole chain per element, a kernel is
# bound by the latency of each element's chain (exp, then a division, then
# another exp, each waiting for the last), and nothing vectorizes. The
# generated pointwise kernel instead walks the elements in strips of 256:
# for each strip, one loop per node, from arrays on the stack (in L1) to
# arrays, as eager runs one loop per op over memory, and the last loops
# write the outputs. Each element is computed by the same expressions in
# the same order, so the result is the same bits; what changes is that each
# loop is independent across elements (the compiler vectorizes the simple
# ones at -O3, and exp's calls pipeline) while memory is read and written once.


def build_kernel(group, cls=None):
    """The IR and C++ of one group (Note [Fusing a pointwise chain], Note [Fusing a chain into its
    reduction]), as a FusedKernel (or `cls`, a device's kernel class, which takes the IR and leaves the C++)."""
    members = set(group)
    red = reduction_of(group[-1])
    red = red if red is not None and (len(group) >= 2 or red[0] == "max") else None
    chain = group[:-1] if red else group
    val0 = (chain[0] if chain else group[-1].args[0]).meta["val"]  # the elements the loop computes
    out_shape, ctype = tuple(val0["shape"]), _CTYPE[_dtype_name(val0["dtype"])]
    inputs, names, ir, body = [], {}, [], []
    strip = []  # the same statements, one loop each over a strip of elements (Note [Strips of a chain])
    for node in chain:
        for a in node.args:
            if isinstance(a, descent.fx.Node) and a not in members and a not in names:
                v = a.meta["val"]
                names[a] = f"%in{len(inputs)}"
                ir.append(f"{names[a]} = input {_dtype_name(v['dtype'])} {list(v['shape'])} stride {list(v['stride'])}")
                load = f"reinterpret_cast<const T*>(p[{len(inputs)}])[{_index_expr(v['shape'], v['stride'], out_shape)}]"
                body.append(f"const T in{len(inputs)} = {load};")
                strip.append((f"in{len(inputs)}", f"{{ const int64_t i = base + s; in{len(inputs)}[s] = {load}; }}"))
                inputs.append(a)
    if red and not chain:  # a reduction of an input
        a = group[-1].args[0]
        v = a.meta["val"]
        names[a] = "%in0"
        ir.append(f"%in0 = input {_dtype_name(v['dtype'])} {list(v['shape'])} stride {list(v['stride'])}")
        body.append(f"const T in0 = reinterpret_cast<const T*>(p[0])[{_index_expr(v['shape'], v['stride'], out_shape)}];")
        inputs.append(a)
    outputs = [n for n in group if any(u not in members for u in n.users)]
    if red and group[-1] not in outputs:
        outputs.append(group[-1])
    for k, node in enumerate(chain):
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
        body.append(f"const T t{k} = {expr.format(a=cargs[0], b=cargs[1] if len(cargs) > 1 else '')};")
        sargs = [c + "[s]" if not c.startswith("T(") else c for c in cargs]
        strip.append((f"t{k}", f"t{k}[s] = {expr.format(a=sargs[0], b=sargs[1] if len(sargs) > 1 else '')};"))
    n = 1
    for s in out_shape:
        n *= s
    slot = {node: len(inputs) + j for j, node in enumerate(outputs)}
    for node in outputs:
        if node in chain:
            body.append(f"reinterpret_cast<T*>(p[{slot[node]}])[i] = {names[node][1:]};")
            strip.append((None, f"reinterpret_cast<T*>(p[{slot[node]}])[base + s] = {names[node][1:]}[s];"))
    order, split = None, False
    if red:
        rnode, (rop, dims, keepdim) = group[-1], red
        k = len(chain)
        names[rnode] = f"%t{k}"
        ir.append(f"%t{k} = {rop} {names[rnode.args[0]]} dims {list(dims)} keepdim {int(keepdim)}".replace(", ", ","))
        order, outer, inner = sum_order(out_shape, dims) if rop != "max" else ("index", None, None)
        split = order == "lanes" and outer == 1  # one sum of everything: its tree cut across threads
        body.append(f"return {names[rnode.args[0]][1:]};")
        loop = _reduction_loop(out_shape, dims, order, outer, inner, rop, slot[rnode], n)
    else:
        arrays = ", ".join(f"{a}[kStrip]" for a, _ in strip if a)
        loop = ["  constexpr int64_t kStrip = 256;",
                "  for (int64_t base = lo; base < hi; base += kStrip) {",
                "    const int64_t m = hi - base < kStrip ? hi - base : kStrip;",
                f"    T {arrays};",
                *[f"    for (int64_t s = 0; s < m; ++s) {st}" for _, st in strip],
                "  }"]
    for j, node in enumerate(outputs):
        ir.append(f"out{j} = {names[node]}")
    ir_text = "\n".join(ir)
    digest = hashlib.sha256((ir_text + ctype + str(out_shape) + " ".join(_FLAGS) + _ABI).encode()).hexdigest()
    ir_c = ir_text.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")
    what = f"summed in {order} order (Note [Fusing a chain into its reduction])" if red else "elementwise"
    source = "\n".join([
        f"// descent fused kernel {digest[:16]}: {' -> '.join(str(nd.target) for nd in group)}",
        f"// over {n} elements of shape {list(out_shape)}, {ctype}, {what}. Generated by",
        "// descent/_compile/cpp_kernel.py (Note [Fusing a pointwise chain]); the IR below is what the verifier reads back.",
        "#include <cmath>",
        "#include <cstdint>",
        f"using T = {ctype};",
        f'extern "C" const char descent_ir[] = "{ir_c}";',
        f'extern "C" const char descent_hash[] = "{digest}";',
        *(_SUM_HELPERS if red else []),
        "// Computes elements [lo, hi) (a reduction: outputs [lo, hi)); threads run disjoint ranges.",
        'extern "C" void descent_kernel(char** p, int64_t lo, int64_t hi) {',
        *(["  auto elem = [&](int64_t i) -> T {", *["    " + b for b in body], "  };"] if red else []),
        *loop,
        "}",
        *(_split_sum(body, slot[group[-1]], rop, n) if split else []),
        "",
    ])
    kernel = (cls or FusedKernel)(group, inputs, outputs, ir_text, source, digest)
    kernel.shape, kernel.dtype, kernel.numel = out_shape, val0["dtype"], n
    kernel.ptr_array = ctypes.c_void_p * (len(inputs) + len(outputs))  # p[]: the inputs, then the outputs
    kernel.order, kernel.split = order, split
    kernel.units = n if not red else outer if order == "lanes" else n // _red_count(out_shape, red[1])  # outputs
    kernel.tuple_outputs = {j for j, o in enumerate(outputs) if o.target is not operator.getitem and
                            o.op == "call_function" and o.target.name() == "aten::max.dim"}
    return kernel


def _red_count(shape, dims):
    c = 1
    for d in dims:
        c *= shape[d]
    return c


# The sums' orders (Note [Cascade summation], floors/kernels/cpu/reference.cpp and optimized.cpp), as C++ the
# fused reduction kernel includes: get(k) computes the chain's k-th element of the output being summed.
_SUM_HELPERS = f"""constexpr int64_t kBlock = {_SUM_BLOCK}, kLanes = {_SUM_LANES}, kSuper = kBlock * kLanes;
static int64_t mid_of(int64_t lo, int64_t hi, int64_t block) {{ return lo + (hi - lo + block - 1) / block / 2 * block; }}
// "cascade": blocks of kBlock added in order, then the blocks' totals in pairs (cascade_sum, reference.cpp).
template <class F> static T cascade(const F& get, int64_t lo, int64_t hi) {{
  if (hi - lo <= kBlock) {{
    T total = T(0);
    for (int64_t k = lo; k < hi; ++k) total = total + get(k);
    return total;
  }}
  const int64_t mid = mid_of(lo, hi, kBlock);
  const T left = cascade(get, lo, mid);
  return left + cascade(get, mid, hi);
}}
// "lanes": kLanes running totals, lane l adding elements l, l + kLanes, ... of each block of kSuper, the
// blocks' lanes added in pairs (lanes_tree, optimized.cpp), then the lanes joined in pairs (cascade_row).
struct Lanes {{ T v[kLanes]; }};
template <class F> static Lanes lanes_tree(const F& get, int64_t lo, int64_t hi) {{
  if (hi - lo <= kSuper) {{
    Lanes acc = {{}};
    if (hi - lo == kSuper) {{  // the same order, as loops of fixed trip counts the compiler can vectorize
      for (int64_t i = 0; i < kBlock; ++i)
        for (int64_t l = 0; l < kLanes; ++l) acc.v[l] = acc.v[l] + get(lo + i * kLanes + l);
    }} else {{
      for (int64_t k = 0; k < hi - lo; ++k) acc.v[k % kLanes] = acc.v[k % kLanes] + get(lo + k);
    }}
    return acc;
  }}
  const int64_t mid = mid_of(lo, hi, kSuper);
  Lanes a = lanes_tree(get, lo, mid);
  const Lanes b = lanes_tree(get, mid, hi);
  for (int64_t l = 0; l < kLanes; ++l) a.v[l] = a.v[l] + b.v[l];
  return a;
}}
template <class F> static T lanes(const F& get, int64_t n) {{
  Lanes t = lanes_tree(get, 0, n);
  for (int64_t width = kLanes / 2; width >= 1; width /= 2)
    for (int64_t l = 0; l < width; ++l) t.v[l] = t.v[l] + t.v[l + width];
  return t.v[0];
}}""".splitlines()


def _split_sum(body, out_slot, rop, n):
    """descent_leaf and descent_join: one sum of all n elements as subtrees of its tree on several threads,
    then the top of the tree (Note [A fused kernel's threads]); the same additions as descent_kernel's."""
    return [
        "// The lanes of elements [lo, hi), a subtree of the sum's tree (descent_kernel's lanes_tree).",
        'extern "C" void descent_leaf(char** p, int64_t lo, int64_t hi, T* lanes_out) {',
        "  auto elem = [&](int64_t i) -> T {", *["    " + b for b in body], "  };",
        "  const Lanes t = lanes_tree([&](int64_t k) { return elem(k); }, lo, hi);",
        "  for (int64_t l = 0; l < kLanes; ++l) lanes_out[l] = t.v[l];",
        "}",
        "static Lanes join_tree(int64_t lo, int64_t hi, int levels, const Lanes* sums, int64_t& next) {",
        "  if (levels == 0 || hi - lo <= kSuper) return sums[next++];",
        "  const int64_t mid = mid_of(lo, hi, kSuper);",
        "  Lanes a = join_tree(lo, mid, levels - 1, sums, next);",
        "  const Lanes b = join_tree(mid, hi, levels - 1, sums, next);",
        "  for (int64_t l = 0; l < kLanes; ++l) a.v[l] = a.v[l] + b.v[l];",
        "  return a;",
        "}",
        "// The top `levels` levels of the tree over the leaves' lanes (in order), then the lanes joined.",
        'extern "C" void descent_join(char** p, int64_t levels, const T* sums) {',
        "  int64_t next = 0;",
        f"  Lanes t = join_tree(0, {n}, int(levels), reinterpret_cast<const Lanes*>(sums), next);",
        "  for (int64_t width = kLanes / 2; width >= 1; width /= 2)",
        "    for (int64_t l = 0; l < width; ++l) t.v[l] = t.v[l] + t.v[l + width];",
        f"  reinterpret_cast<T*>(p[{out_slot}])[0] = t.v[0]{f' / T({n})' if rop == 'mean' else ''};",
        "}",
    ]


def _reduction_loop(shape, dims, order, outer, inner, rop, out_slot, n):
    """The C++ loop over a reduction's outputs, each reducing its elements through elem() in eager's order."""
    keep_numel = 1
    for d, s in enumerate(shape):
        keep_numel *= 1 if d in dims else s
    count = n // keep_numel
    lines = [f"  T* out = reinterpret_cast<T*>(p[{out_slot}]);"]
    if order == "lanes":
        lines += ["  for (int64_t r = lo; r < hi; ++r) {",
                  f"    out[r] = lanes([&](int64_t k) {{ return elem(r * {inner} + k); }}, {inner});"]
    else:
        stride, acc = [0] * len(shape), 1
        for d in reversed(range(len(shape))):
            stride[d], acc = acc, acc * shape[d]
        kept = [d for d in range(len(shape)) if d not in dims]
        red = list(dims)

        def offset(var, ds):  # the offset of the var-th element of dims ds, row-major, in the contiguous input
            terms, inner_n = [], 1
            for d in reversed(ds):
                q = var if inner_n == 1 else f"({var} / {inner_n})"
                terms.append(f"({q} % {shape[d]}) * {stride[d]}")
                inner_n *= shape[d]
            return " + ".join(reversed(terms)) or "0"
        red_n = 1
        for d in red:
            red_n *= shape[d]
        lines += ["  for (int64_t j = lo; j < hi; ++j) {", f"    const int64_t base = {offset('j', kept)};"]
        if rop == "max":  # in index order: the first maximum, or the first NaN, stays (optimized_max, reference_max)
            lines += [f"    T m = elem(base + {offset('0', red)});",
                      f"    for (int64_t k = 1; k < {red_n}; ++k) {{",
                      f"      const T v = elem(base + {offset('k', red)});",
                      "      if ((v > m || v != v) && m == m) m = v;",
                      "    }",
                      "    out[j] = m;"]
        else:
            lines.append(f"    out[j] = cascade([&](int64_t k) {{ return elem(base + {offset('k', red)}); }}, 0, {red_n});")
    if rop == "mean":  # sum_kernel's CPU mean: the sum, divided by the count in the dtype
        lines.append(f"    out[{'r' if order == 'lanes' else 'j'}] = out[{'r' if order == 'lanes' else 'j'}] / T({count});")
    lines.append("  }")
    return lines


def _c_string(lib, name):
    """A `const char name[]` of a loaded library, as text."""
    return ctypes.string_at(ctypes.addressof(ctypes.c_char.in_dll(lib, name))).decode()


def _load(kernel, path):
    lib = ctypes.CDLL(path)
    if _c_string(lib, "descent_hash") != kernel.hash:
        raise OSError("the cached library names another kernel")
    fn = lib.descent_kernel
    fn.argtypes = [ctypes.POINTER(ctypes.c_void_p), ctypes.c_int64, ctypes.c_int64]
    fn.restype = None
    kernel.lib, kernel.fn, kernel.path = lib, fn, path
    _loaded[kernel.hash] = (lib, fn, path)


_loaded = {}  # hash -> (lib, fn, path): a library this process has loaded is never loaded again


def compile_kernel(kernel):
    """Loads the kernel's library from the cache, or builds it there. False (with one warning) where it
    cannot: no compiler, or the compiler failed (its message in the warning)."""
    return _finish_build(kernel, _start_build(kernel))


def _start_build(kernel):
    """True where the kernel's library is loaded (this process, or the disk cache), False where no compiler
    can build it, else the running compiler (the graph's kernels build at once: compile_graph)."""
    d = fusion.cache_dir()
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
    cxx = fusion._compiler()
    if cxx is None:
        if "nocompiler" not in fusion._warned:
            fusion._warned.add("nocompiler")
            warnings.warn("descent.compile: no C++ compiler found (set CXX or DESCENT_CXX): fused kernels are off, "
                          "graphs run op by op")
        return False
    os.makedirs(d, exist_ok=True)
    src = os.path.join(d, f"{kernel.hash}.cpp")
    with open(src, "w") as f:
        f.write(kernel.source)
    fd, tmp = tempfile.mkstemp(suffix=".so", dir=d)
    os.close(fd)
    env = {k: v for k, v in os.environ.items() if k != "LD_PRELOAD"}  # the compiler runs unsanitized
    try:
        proc = subprocess.Popen([cxx, *_FLAGS, "-o", tmp, "-x", "c++", src], stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE, text=True, env=env)
    except OSError as e:
        os.remove(tmp)
        warnings.warn(f"descent.compile: the compiler {cxx} did not start ({e}); the graph runs op by op")
        return False
    return proc, tmp, path, t0


def _finish_build(kernel, started):
    if started is True or started is False:
        return started
    proc, tmp, path, t0 = started
    _, err = proc.communicate()
    if proc.returncode != 0:
        os.remove(tmp)
        warnings.warn(f"descent.compile: the fused kernel {kernel.hash[:12]} did not compile; the graph runs op by "
                      f"op. The compiler said:\n{err.strip()}")
        return False
    os.replace(tmp, path)
    _load(kernel, path)
    kernel.compile_s = time.perf_counter() - t0
    return True
