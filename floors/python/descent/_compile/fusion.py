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
by op), integer dtypes, reductions that no pointwise chain feeds (Note
[Fusing a chain into its reduction]). Where the call needs a backward, what is
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
# aten reductions a pointwise chain may end in (Note [Fusing a chain into its reduction]).
REDUCTIONS = {"aten::sum": "sum", "aten::sum.dim_IntList": "sum", "aten::mean": "mean", "aten::mean.dim": "mean",
              "aten::max": "max", "aten::max.dim": "max"}
_CTYPE = {"float32": "float", "float64": "double"}
_SUM_BLOCK, _SUM_LANES = 4, 16  # kSumBlock, kSumLanes (floors/kernels/kernels.h): the sums' tree
_FLAGS = ["-O3", "-shared", "-fPIC", "-ffp-contract=off", "-fno-fast-math", "-std=c++17"]
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


# Note [Fusing a chain into its reduction]
# ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
# `(x * y).sum()` in eager writes x * y to memory, then sum reads it back.
# Inductor fuses the pointwise chain into the reduction that ends it (its
# "reduction" nodes take the chain as their inner function); so does descent,
# for sum and mean (every element, or some dims, keepdim or not, no dtype=)
# of a float32 or float64 chain on the CPU: the reduction joins the open
# group when its input is a member, and closes it. The kernel computes each
# element of the chain where the sum reads it, and writes it out too where
# a node outside the group uses it (softmax's `e` beside `e.sum(-1)`).
# Addition is not associative, so the kernel adds in eager's order, which
# is the order of descent's CPU sum (Note [Cascade summation],
# floors/kernels/cpu/reference.cpp and optimized.cpp): where each output
# sums a contiguous run of the input (the reduced dims are a suffix, or
# everything), the optimized sum's kSumLanes lanes, each a cascade of blocks
# of kSumBlock, joined in pairs at the end ("lanes" order); otherwise (a
# prefix, or dims in the middle) one cascade per output over its elements in
# index order ("cascade" order), which both variants use. A mean divides the
# sum by the count in the dtype, as sum_kernel does. So under the default
# kernel variant the result is eager's bit for bit; under
# set_kernel_variant("reference"), whose sum cascades where the optimized one
# keeps lanes, a "lanes" kernel differs from eager within the two orders'
# bound (verify.reduction_bound: (d1 + d2) * u * sum|x_i|, d the depth of
# each order's tree, Note [Summation bound] in floors/kernels/verify/verifier.cpp).
# The kernel's loops are serial: descent's parallel sum keeps the serial
# order bit for bit, so threads change its time, not its bits.


def reduction_of(node):
    """(IR op, reduced dims (sorted, non-negative), keepdim) of a sum, mean or max a fused kernel can end in,
    else None: float32/float64 on the CPU, no dtype=, a non-empty input; max.dim only where its indices are
    not used."""
    if node.op != "call_function" or node.target is operator.getitem or node.target.name() not in REDUCTIONS:
        return None
    name, args = node.target.name(), list(node.args)
    if not args or not isinstance(args[0], descent.fx.Node):
        return None
    vi = args[0].meta.get("val")
    if name == "aten::max.dim":  # (values, indices): only getitem 0 may read it
        if not node.users or any(u.target is not operator.getitem or u.args[1] != 0 for u in node.users):
            return None
        v = next(iter(node.users)).meta.get("val")
        args = [args[0], [args[1]] if len(args) > 1 else node.kwargs.get("dim"),
                args[2] if len(args) > 2 else node.kwargs.get("keepdim", False)]
    else:
        v = node.meta.get("val")
    if v is None or vi is None or _dtype_name(vi["dtype"]) not in _CTYPE or v["dtype"] != vi["dtype"]:
        return None
    if str(vi["device"]) != "cpu" or any(s == 0 for s in vi["shape"]):
        return None
    if REDUCTIONS[name] != "max" and not _contiguous(vi["shape"], vi["stride"]):
        return None  # eager sums a strided input in another order (a maximum is the same in any order)
    nd = len(vi["shape"])
    if "." not in name:  # the overload without a name: every element
        if len(args) > 1 or node.kwargs.get("dtype") is not None:
            return None
        return REDUCTIONS[name], tuple(range(nd)), False
    dims = args[1] if len(args) > 1 else node.kwargs.get("dim")
    keepdim = args[2] if len(args) > 2 else node.kwargs.get("keepdim", False)
    dtype = args[3] if len(args) > 3 else node.kwargs.get("dtype")
    if dtype is not None or not isinstance(keepdim, bool) or not isinstance(dims, (list, tuple)):
        return None
    if nd == 0 or not dims:
        return REDUCTIONS[name], tuple(range(nd)), keepdim
    try:
        red = sorted({d + nd if d < 0 else d for d in dims})
    except TypeError:
        return None
    if any(d < 0 or d >= nd for d in red):
        return None
    return REDUCTIONS[name], tuple(red), keepdim


def _contiguous(shape, stride):
    acc = 1
    for s, st in zip(reversed(shape), reversed(stride)):
        if s != 1 and st != acc:
            return False
        acc *= s
    return True


def sum_order(shape, dims):
    """How eager's CPU sum adds a contiguous input of `shape` over `dims` (floors/kernels/cpu/optimized.cpp's
    reduction_layout): ("lanes", outer, inner) where output r sums the run [r * inner, (r + 1) * inner),
    else ("cascade", None, None)."""
    nd = len(shape)
    reduced = [d in dims for d in range(nd)]
    first, last = nd, -1
    for d in range(nd):
        if reduced[d] and shape[d] != 1:
            first, last = min(first, d), d
    numel = 1
    for s in shape:
        numel *= s
    keep = 1
    for d in range(nd):
        keep *= 1 if reduced[d] else shape[d]
    if last >= 0 and all(reduced[d] or shape[d] == 1 for d in range(first, last + 1)):
        before = after = block = 1
        for d in range(nd):
            if d < first:
                before *= shape[d]
            elif d <= last:
                block *= shape[d]
            else:
                after *= shape[d]
        if after == 1:
            return "lanes", before, block
        if before == 1:
            return "cascade", None, None  # rows added into a row of totals: one cascade per column
    if keep == 1:
        return "lanes", 1, numel
    return "cascade", None, None


def groups_of(graph):
    """The fusible groups: pointwise nodes of one shape and dtype, in graph order, and the sum or mean that
    ends one (Note [Fusing a chain into its reduction]). A node that cannot join (another op, another shape)
    closes the open group only if it uses one of its members; otherwise it runs before the group's kernel,
    which runs where the group's last member was."""
    out, cur = [], []

    def close():
        # One op is a kernel of its own only where it broadcasts an input, which eager's loops index
        # element by element (the division of a softmax by its row sums); otherwise eager's kernel is as good.
        if len(cur) >= 2 or (cur and any(isinstance(a, descent.fx.Node) and
                                         tuple(a.meta["val"]["shape"]) != tuple(cur[0].meta["val"]["shape"])
                                         for a in cur[0].args)):
            out.append(list(cur))
        cur.clear()
    for node in graph.nodes:
        if cur and node.args and node.args[0] in cur and reduction_of(node) is not None and \
                all(a is node.args[0] or not isinstance(a, descent.fx.Node) for a in node.args):
            cur.append(node)
            close()
            continue
        red = reduction_of(node)
        if red is not None and red[0] == "max" and not any(a in cur for a in node.all_input_nodes):
            out.append([node])  # a maximum of an input: eager's max.dim loop reads it element by element
            continue
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
        self.leaf = self.join = None  # a split sum's two entry points (_launch_split)
        self.cache_hit, self.compile_s, self.verdict = False, 0.0, None
        self.shape = None  # the elements the loop computes (build_kernel sets it, and dtype)
        self.out_shapes = [tuple((o.meta.get("val") or next(iter(o.users)).meta["val"])["shape"]) for o in outputs]
        self.strides = [tuple(a.meta["val"]["stride"]) for a in inputs]  # what the generated indexing assumes
        self.dtype = None
        self.reduction = reduction_of(group[-1])  # (op, dims, keepdim) where the chain ends in one
        self.order = None  # the reduction's order of additions: "lanes" or "cascade"

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


def build_kernel(group):
    """The IR and C++ of one group (Note [Fusing a pointwise chain], Note [Fusing a chain into its
    reduction])."""
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
        "// descent/_compile/fusion.py (Note [Fusing a pointwise chain]); the IR below is what the verifier reads back.",
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
    kernel = FusedKernel(group, inputs, outputs, ir_text, source, digest)
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


def _cut_tree(lo, hi, levels):
    """The subtrees [lo, hi) of the sum's tree `levels` levels down (mid_of's splits, descent_join's order)."""
    superblock = _SUM_BLOCK * _SUM_LANES
    if levels == 0 or hi - lo <= superblock:
        return [(lo, hi)]
    mid = lo + (hi - lo + superblock - 1) // superblock // 2 * superblock
    return _cut_tree(lo, mid, levels - 1) + _cut_tree(mid, hi, levels - 1)


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
_ABI = " abi: (char** p, int64_t lo, int64_t hi), leaf/join"  # in the hash: a library of another signature is never loaded
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
                body += [f"    {r} = empty({bind(shape, 'SHAPE')}, dtype={bind(k.dtype, 'DT')})"
                         for r, shape in zip(rs, k.out_shapes)]
                ptrs = ", ".join([f"v{i}.data_ptr()" for i in ins] + [f"{r}.data_ptr()" for r in rs])
                body.append(f"    p = {bind(k.ptr_array, 'P')}({ptrs})")
                label = bind(f"fused kernel {k.hash[:12]}: {len(k.group)} ops, {k.numel} elements", "L")
                body.append("    if trace():")
                body.append(f"        with span({label}):")
                body.append(f"            launch({kn}, p, {k.numel})")
                body.append("    else:")
                body.append(f"        launch({kn}, p, {k.numel})")
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
                results = [descent.empty(shape, dtype=k.dtype) for shape in k.out_shapes]
                ptrs = k.ptr_array(*[a.data_ptr() for a in args], *[r.data_ptr() for r in results])
                if _C._trace_enabled():
                    with _span(f"fused kernel {k.hash[:12]}: {len(k.group)} ops, {n} elements"):
                        _launch(k, ptrs, n)
                else:
                    _launch(k, ptrs, n)
                for j, (s, r) in enumerate(zip(outs, results)):
                    env[s] = (r, None) if j in k.tuple_outputs else r  # max.dim's (values, -): getitem 0 reads it
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
    todo = [k for k in (build_kernel(group) for group in groups_of(gm.graph)) if k.outputs]
    at_once = max(2, os.cpu_count() or 2)  # the graph's kernels build side by side, this many compilers at a time
    for first in range(0, len(todo), at_once):
        batch = todo[first:first + at_once]
        for k, started in [(k, _start_build(k)) for k in batch]:
            if _finish_build(k, started):
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
