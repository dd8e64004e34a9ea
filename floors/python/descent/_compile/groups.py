"""The fusion IR's first step: which nodes of a captured graph fuse into one kernel (Note [Fusing a pointwise
chain], fusion.py): the pointwise ops and reductions a kernel takes, and the groups of them, in graph order.
"""
import operator

import descent

__all__ = ["POINTWISE", "REDUCTIONS", "reduction_of", "sum_order", "groups_of"]


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


def _dtype_name(d):
    return str(d).split(".")[-1]


def _device_fuses(d):
    """The CPU (generated C++), sim:N (the interpreted program: Note [An interpreted fused kernel on sim:0],
    floors/kernels/fused/sim_fused.h) and cuda:N where this build has NVRTC (Note [A fused kernel on cuda
    through NVRTC], floors/kernels/fused/cuda_fused.h)."""
    d = str(d)
    return d == "cpu" or d.startswith("sim") or (d.startswith("cuda") and _cuda_fuses())


def _cuda_fuses():
    return descent._C._fused_cuda_built() and descent.cuda.is_available()


def _fusible(node):
    if node.op != "call_function" or node.target is operator.getitem:
        return False
    if node.target.name() not in POINTWISE or node.kwargs:
        return False
    val = node.meta.get("val")
    if val is None or _dtype_name(val["dtype"]) not in _CTYPE or not _device_fuses(val["device"]):
        return False
    for a in node.args:
        if isinstance(a, descent.fx.Node):
            v = a.meta.get("val")
            if v is None or v["dtype"] != val["dtype"] or str(v["device"]) != str(val["device"]):
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
    if not _device_fuses(vi["device"]) or any(s == 0 for s in vi["shape"]):
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


def groups_of(graph, device="cpu"):
    """The fusible groups: pointwise nodes of one shape and dtype, in graph order, and the sum or mean that
    ends one (Note [Fusing a chain into its reduction]). A node that cannot join (another op, another shape)
    closes the open group only if it uses one of its members; otherwise it runs before the group's kernel,
    which runs where the group's last member was. Only nodes on `device` join (one kernel runs on one device)."""
    out, cur = [], []

    def on_device(node):
        v = node.meta.get("val") if node.target is not operator.getitem else None
        a = node.args[0] if node.args and isinstance(node.args[0], descent.fx.Node) else None
        v = v or (a.meta.get("val") if a is not None else None)
        return v is not None and str(v["device"]) == device

    def fusible(node):
        return _fusible(node) and on_device(node)

    def reduction(node):  # not on cuda: the chain before one is a kernel, eager's reduction follows it
        if device.startswith("cuda"):
            return None
        return reduction_of(node) if node.op == "call_function" and on_device(node.args[0]) else None

    def close():
        # One op is a kernel of its own only where it broadcasts an input, which eager's loops index
        # element by element (the division of a softmax by its row sums); otherwise eager's kernel is as good.
        if len(cur) >= 2 or (cur and any(isinstance(a, descent.fx.Node) and
                                         tuple(a.meta["val"]["shape"]) != tuple(cur[0].meta["val"]["shape"])
                                         for a in cur[0].args)):
            out.append(list(cur))
        cur.clear()
    for node in graph.nodes:
        if cur and node.args and node.args[0] in cur and reduction(node) is not None and \
                all(a is node.args[0] or not isinstance(a, descent.fx.Node) for a in node.args):
            cur.append(node)
            close()
            continue
        red = reduction(node) if node.args and isinstance(node.args[0], descent.fx.Node) else None
        if red is not None and red[0] == "max" and not any(a in cur for a in node.all_input_nodes):
            out.append([node])  # a maximum of an input: eager's max.dim loop reads it element by element
            continue
        if fusible(node):
            if not cur:
                cur.append(node)
                continue
            v, v0 = node.meta["val"], cur[0].meta["val"]
            if v["shape"] == v0["shape"] and v["dtype"] == v0["dtype"]:
                cur.append(node)
                continue
        if any(a in cur for a in node.all_input_nodes) or node.op == "output":
            close()
        if fusible(node) and not cur:
            cur.append(node)
    close()
    return out
