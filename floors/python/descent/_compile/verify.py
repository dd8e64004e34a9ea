"""The compiled call's verifier: each fused kernel proved equal to the graph it came from, and checked on numbers.

Note [Translation validation of a fused kernel]
~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
A generated kernel is only as trustworthy as its generator. Rather than
trusting fusion.py and cpp_kernel.py, the verifier checks each kernel it produced: it reads
the kernel's IR back out of the loaded library (the `descent_ir` string the
source embeds, so what is checked is what was built), parses it into one
expression tree per output, builds the same trees from the captured graph's
nodes, and normalizes both by named rules before comparing them node by node:
  - "aten-to-IR": each aten node is the IR op of fusion.POINTWISE
    (aten.add.Tensor with alpha=1 is `add`, aten.relu.default `relu`);
  - "commutativity": add and mul operands are put in one order (IEEE
    addition and multiplication are commutative, bit for bit, NaNs aside;
    they are not associative, so no regrouping rule exists);
  - "constants at the dtype": a number is compared as the kernel's dtype holds it;
  - "reduction dims normalized": a sum's or mean's dims as the kernel
    reduces them, sorted and non-negative (x.sum(-1) of a matrix is dims [1]).
A reduction is a node of the tree like any op (`sum[1]k0(...)`: dims, keepdim;
max.dim's values are `max[1]k1(...)`);
its order of additions is not part of the expression: the numeric check
holds it (bit for bit in eager's order, Note [Fusing a chain into its
reduction] in groups.py, or within reduction_bound where the orders differ).
Where the trees still differ, the first graph node whose subtree has no
equal in the kernel is named, and the kernel is not proved. Translation
validation proves the expression; the numeric check (numeric()) runs the
fused program and the graph op by op on random inputs and compares bit for
bit, which also catches what the expression cannot say (an index of a
broadcast input, a wrong output slot).
"""
import operator
import struct

import descent

from . import fusion

__all__ = ["Verdict", "translation_validate", "numeric", "parse_ir", "reduction_bound", "finite_differences"]


class Verdict:
    def __init__(self, proved, outputs, rules, unproved):
        self.proved, self.outputs, self.rules, self.unproved = proved, outputs, rules, unproved

    def __bool__(self):
        return self.proved

    def __str__(self):
        if self.proved:
            return (f"proved: {'; '.join(self.outputs)} (rules: {', '.join(sorted(self.rules)) or 'none'})")
        return "NOT proved: " + "; ".join(self.unproved)

    __repr__ = __str__


def parse_ir(text):
    """The IR's outputs as expression trees: ('in', k), ('const', v), or (op, child, ...)."""
    env, outs = {}, []
    for line in text.splitlines():
        name, _, rhs = line.partition(" = ")
        parts = rhs.split(" ")
        if parts[0] == "input":
            env[name] = ("in", int(name[3:]))
        elif parts[0] in ("sum", "mean", "max"):  # %t2 = sum %t1 dims [1] keepdim 0
            if parts[2] != "dims" or parts[4] != "keepdim":
                raise ValueError(f"a reduction line without dims and keepdim: {line!r}")
            env[name] = (f"{parts[0]}{parts[3]}k{int(parts[5])}", env[parts[1]])
        elif name.startswith("out"):
            outs.append(env[parts[0]])
        else:
            args, i = [], 1
            while i < len(parts):
                if parts[i] == "const":
                    args.append(("const", float(parts[i + 1])))
                    i += 2
                else:
                    args.append(env[parts[i]])
                    i += 1
            env[name] = (parts[0], *args)
    return outs


def _graph_tree(kernel, node, names):
    members = set(kernel.group)
    if isinstance(node, descent.fx.Node) and node not in members:
        return ("in", kernel.inputs.index(node))
    if not isinstance(node, descent.fx.Node):
        return ("const", float(node))
    red = fusion.reduction_of(node)
    if red is not None:
        op, dims, keepdim = red
        raw = node.args[1] if len(node.args) > 1 else None
        raw = [raw] if isinstance(raw, int) else raw  # max.dim's one dim
        if raw is not None and list(raw) != list(dims):
            names.setdefault("rules", set()).add("reduction dims normalized")
        tree = (f"{op}{list(dims)}k{int(keepdim)}".replace(", ", ","), _graph_tree(kernel, node.args[0], names))
        names.setdefault(tree, node.name)
        return tree
    tree = (fusion.POINTWISE[node.target.name()][0], *(_graph_tree(kernel, a, names) for a in node.args))
    names.setdefault(tree, node.name)
    return tree


def _normalize(tree, dtype, rules):
    if tree[0] == "in":
        return tree
    if tree[0] == "const":
        v = tree[1]
        if str(dtype).endswith("float32"):
            v2 = struct.unpack("f", struct.pack("f", v))[0]
            if v2 != v:
                rules.add("constants at the dtype")
            v = v2
        return ("const", v)
    kids = [_normalize(k, dtype, rules) for k in tree[1:]]
    if tree[0] in ("add", "mul") and repr(kids[1]) < repr(kids[0]):
        kids.reverse()
        rules.add("commutativity")
    return (tree[0], *kids)


def _text(t):
    if t[0] == "in":
        return f"in{t[1]}"
    if t[0] == "const":
        return repr(t[1])
    return f"{t[0]}({', '.join(_text(k) for k in t[1:])})"


def _first_difference(g, k, names):
    """The deepest graph subtree that differs from the kernel's at the same place, named by its node."""
    if g == k:
        return None
    if g[0] == k[0] and len(g) == len(k) and g[0] not in ("in", "const"):
        for gc, kc in zip(g[1:], k[1:]):
            d = _first_difference(gc, kc, names)
            if d:
                return d
    return f"node '{names.get(g, '?')}': the graph computes {_text(g)}, the kernel {_text(k)}"


def translation_validate(kernel, ir_text=None):
    """Proves each of the kernel's outputs equal to the graph's expression (Note [Translation validation
    of a fused kernel]); the IR is read back from the loaded library unless given."""
    ir_text = kernel.read_ir() if ir_text is None else ir_text
    try:
        k_outs = parse_ir(ir_text)
    except (KeyError, ValueError, IndexError) as e:
        return Verdict(False, [], set(), [f"the kernel's IR does not parse ({e!r})"])
    if len(k_outs) != len(kernel.outputs):
        return Verdict(False, [], set(), [f"the kernel has {len(k_outs)} outputs, the graph's group {len(kernel.outputs)}"])
    rules, unproved, shown = {"aten-to-IR"}, [], []
    for j, (node, kt) in enumerate(zip(kernel.outputs, k_outs)):
        names = {}
        raw = _graph_tree(kernel, node, names)
        rules |= names.pop("rules", set())
        g, k = _normalize(raw, kernel.dtype, rules), _normalize(kt, kernel.dtype, rules)
        if g == k:
            shown.append(f"out{j} ({node.name}) = {_text(g)}")
        else:
            normal_names = {_normalize(t, kernel.dtype, set()): n for t, n in names.items()}
            unproved.append(f"out{j} ({node.name}): " + (_first_difference(g, k, normal_names) or "differs"))
    return Verdict(not unproved, shown, rules, unproved)


def cascade_depth(n):
    """The most rounded additions one of n summed elements goes through in either CPU sum (cascade_depth,
    floors/kernels/kernels.h): n - 1, or kSumBlock - 1 in its block, the tree's levels above it and the
    joining of the optimized sum's lanes."""
    if n <= 1:
        return 0
    blocks, levels = -(-n // fusion._SUM_BLOCK), 0
    while (1 << levels) < blocks:
        levels += 1
    return min(n - 1, fusion._SUM_BLOCK - 1 + levels + (fusion._SUM_LANES.bit_length() - 1))


def reduction_bound(n, dtype, abs_sum):
    """How far a fused sum of n elements may be from eager's where the two add in different orders (the
    reference kernel variant's cascade against the kernel's lanes): each order is within depth * u *
    sum|x_i| of the exact sum (Higham), so the two within twice that (Note [Fusing a chain into its
    reduction])."""
    u = 2.0 ** -24 if str(dtype).endswith("float32") else 2.0 ** -53
    return 2 * cascade_depth(n) * u * abs_sum


def _bits(t):
    import numpy as np
    a = np.ascontiguousarray(np.asarray(t.detach().cpu()))
    return a.view(np.uint32 if a.dtype == np.float32 else np.uint64)


def numeric(program, gm, inputs, trials=3, seed=0):
    """The fused program against the graph run op by op, on `inputs` and on `trials` random inputs of the
    same shapes: 'bitwise equal ...', or where the first difference is."""
    import numpy as np
    descent.manual_seed(seed)
    cases = [list(inputs)] + [[descent.randn(*t.shape, dtype=t.dtype, device=t.device) for t in inputs]
                              for _ in range(trials)]
    n = 0
    for case in cases:
        got, want = program(*case), gm(*case)
        got = got if isinstance(got, (tuple, list)) else [got]
        want = want if isinstance(want, (tuple, list)) else [want]
        for g, w in zip(got, want):
            if not isinstance(g, descent.Tensor):
                continue
            bg, bw = _bits(g), _bits(w)
            if not np.array_equal(bg, bw):
                i = int(np.flatnonzero(bg.ravel() != bw.ravel())[0])
                g, w = np.asarray(g.cpu()).ravel()[i], np.asarray(w.cpu()).ravel()[i]
                return f"differs at element {i}: compiled {g!r}, eager {w!r}"
            n += bg.size
    return f"bitwise equal to eager on {n} elements ({len(cases)} inputs)"


def check(compiled):
    """Every fused kernel of a descent.compile function: (translation verdicts, numeric verdicts)."""
    tv, num = [], []
    for e in compiled.entries.values():
        prog = e.run
        if isinstance(prog, fusion.FusedProgram):
            tv += [translation_validate(k) for k in prog.kernels]
            descent.manual_seed(0)
            ins = [descent.randn(*k[3], dtype=k[1], device=k[2]) for k in e.key[:-1] if k[0] == "T"]
            num.append(numeric(prog, e.gm, ins))
    return tv, num


# [SECTION] The suite: what `descent verify --compiled` would run ------------------------------------------

def _suite_cases():
    import math
    F = descent.nn.functional

    def mlp(x, w1, b1, w2, b2, y):
        h = F.linear(x, w1, b1).relu()
        return ((F.linear(h, w2, b2) - y) ** 2).mean()

    def attention(q, k, v):
        s = (q @ k.transpose(-2, -1)) * (1.0 / math.sqrt(q.shape[-1]))
        e = (s - s.max(-1, keepdim=True).values).exp()
        return (e / e.sum(-1, keepdim=True)) @ v

    r = descent.randn
    return [
        ("pointwise chain", lambda x: ((((x + 1.0) * 0.5).relu().exp() - x) * x).sigmoid() + 2.0, lambda: [r(64)]),
        ("unary ops", lambda x: x.tanh().sin() + x.cos().abs().sqrt() - x.neg().exp().reciprocal(), lambda: [r(8, 8)]),
        ("broadcasting", lambda x, b: (x * b + b.exp()) / (b.abs() + 1.0), lambda: [r(5, 7), r(7)]),
        ("views", lambda x: (x.t() * 2.0 + 1.0).reshape(-1).relu(), lambda: [r(6, 4)]),
        ("reduction", lambda x: ((x * x + 1.0).log()).sum(1), lambda: [r(4, 9)]),
        ("float64", lambda x, y: (x - y).tanh() * y, lambda: [r(3, 5, dtype=descent.float64), r(5, dtype=descent.float64)]),
        ("mlp, with grads", mlp, lambda: [r(8, 4, requires_grad=True), r(16, 4, requires_grad=True),
                                          r(16, requires_grad=True), r(2, 16, requires_grad=True),
                                          r(2, requires_grad=True), r(8, 2)]),
        ("attention, with grads", attention, lambda: [r(2, 4, 8, requires_grad=True), r(2, 4, 8, requires_grad=True),
                                                      r(2, 4, 8, requires_grad=True)]),
        ("mse_loss, decomposed", lambda x, y: F.mse_loss(x, y), lambda: [r(8, 16), r(8, 16)]),
    ]


def _decomposed_cases():
    """Functions whose ops decompose (Note [Decomposing before fusion]): compiled, they sum in another order
    than eager's kernels, so they are checked within a bound: (name, fn, inputs, scale), |compiled - eager|
    <= bound_ulps(n) * u * scale(eager) elementwise, n the length of the rows the op reduces."""
    F = descent.nn.functional
    r = descent.randn
    return [
        ("softmax, decomposed", lambda x: F.softmax(x, -1), lambda: [r(8, 64)], lambda y: y.abs()),
        ("log_softmax, decomposed, with grads", lambda x: F.log_softmax(x, 1),
         lambda: [r(8, 64, requires_grad=True)], lambda y: y.abs() + 1.0),
        ("layer_norm, decomposed", lambda x: F.layer_norm(x * 3.0 + 1.0, (64,)), lambda: [r(8, 64)],
         lambda y: y.abs() + 1.0),
    ]


def _same(a, b):
    import numpy as np
    return np.array_equal(_bits(a.detach()), _bits(b.detach()))


def _check_case(fn, make, seed, close, grads_close, far_message, grads_far_message):
    """Compiles fn, calls it twice (the capture and a replay) on make()'s inputs seeded with `seed`, and
    checks both results against eager's with close(got, want), the compiled backward's gradients against
    eager autograd's with grads_close (where an input requires grad), and each fused kernel's translation
    validation. Returns (problems, the compiled function, the verdicts)."""
    import warnings
    descent.manual_seed(seed)
    args = make()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        cf = descent.compile(fn)
        outs = [cf(*args), cf(*args)]
    want = fn(*args)
    problems = []
    if not all(close(o, want) for o in outs):
        problems.append(far_message)
    diff = [a for a in args if a.requires_grad]
    if diff:
        got = descent.autograd.grad(cf(*args).sum(), diff)
        ref = descent.autograd.grad(fn(*args).sum(), diff)
        if not all(grads_close(g, h) for g, h in zip(got, ref)):
            problems.append(grads_far_message)
        fd = finite_differences(fn, args, seed=seed)
        if not fd:
            problems.append(str(fd))
    verdicts = [translation_validate(k) for k in cf.kernels]
    problems += [str(v) for v in verdicts if not v]
    return problems, cf, verdicts


# [SECTION] The compiled backward against finite differences ----------------------------------------------

# Note [The compiled backward against finite differences]
# ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
# Comparing the compiled backward with eager autograd's proves the two agree,
# not that either is a derivative: a formula wrong in both (or a partition
# that saves the wrong tensor, in a way autograd's replay shares) would pass.
# So the verifier also checks the compiled backward against the compiled
# forward's own central differences, as torch.autograd.gradcheck does in
# its fast mode (fast_mode=True): for a loss L = sum(w * f(x)) with a fixed
# random weight w (a plain sum can be constant: softmax's rows sum to 1),
# and for a few random unit directions v of each input, the directional
# derivative <dL/dx, v> the backward gives must match
# (L(x + eps v) - L(x - eps v)) / (2 eps), within atol + rtol * |that|,
# gradcheck's defaults. The check runs in float64 (a fresh compile of the
# function on float64 copies of the inputs: finite differences in float32
# lose half their digits), so eps = 1e-6 leaves a truncation error near
# 1e-12 and a rounding error near 1e-10. Random directions see every element
# at once for two calls each, where gradcheck's slow mode pays two calls per
# element; a derivative wrong in one element still moves the dot product.

def finite_differences(fn, args, seed=0, directions=2, eps=1e-6, atol=1e-5, rtol=1e-3):
    """The compiled backward of fn at `args` against central finite differences of the compiled forward, in
    float64 (Note [The compiled backward against finite differences]): a FiniteDifferences verdict, true
    when every direction's two derivatives agree."""
    import warnings
    x = [a.detach().to(dtype=descent.float64).requires_grad_(a.requires_grad) if a.dtype.is_floating_point
         else a for a in args]
    diff = [i for i, a in enumerate(x) if a.requires_grad]
    if not diff:
        return FiniteDifferences(0, None, eps)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        cf = descent.compile(fn)
        out = cf(*x)
        descent.manual_seed(seed + 1)
        w = descent.randn(list(out.shape), dtype=out.dtype, device=out.device)
        grads = descent.autograd.grad((out * w).sum(), [x[i] for i in diff])
        worst, checked = None, 0
        with descent.no_grad():
            for i, g in zip(diff, grads):
                for _ in range(directions):
                    v = descent.randn(list(x[i].shape), dtype=descent.float64, device=x[i].device)
                    v = v / v.norm()
                    shifted = []
                    for sign in (1.0, -1.0):
                        y = list(x)
                        y[i] = x[i].detach() + v * (sign * eps)
                        shifted.append(float((cf(*y) * w).sum()))
                    numerical = (shifted[0] - shifted[1]) / (2 * eps)
                    analytical = float((g * v).sum())
                    err = abs(analytical - numerical) - (atol + rtol * abs(numerical))
                    checked += 1
                    if worst is None or err > worst[0]:
                        worst = (err, i, numerical, analytical)
    return FiniteDifferences(checked, worst, eps)


class FiniteDifferences:
    """What finite_differences found: how many directions it checked and the worst of them."""

    def __init__(self, checked, worst, eps):
        self.checked, self.worst, self.eps = checked, worst, eps

    def __bool__(self):
        return self.worst is None or self.worst[0] <= 0

    def __str__(self):
        if self.worst is None:
            return "no input requires grad: no finite differences"
        _, i, n, a = self.worst
        if self:
            return f"the compiled backward matches central differences in {self.checked} direction(s) (float64)"
        return (f"the compiled backward differs from central differences: input {i}, a direction's derivative "
                f"{a!r} where (L(x + eps v) - L(x - eps v)) / (2 eps) = {n!r} (eps={self.eps})")

    __repr__ = __str__


def _on(make, device):
    """make(), its tensors on `device` (leaves again, requiring grad as make's did)."""
    if device == "cpu":
        return make
    return lambda: [a.detach().to(device).requires_grad_(a.requires_grad) for a in make()]


def default_devices():
    """The CPU and sim:0, and cuda:0 where this build has NVRTC and a GPU is here (Note [A fused kernel on cuda
    through NVRTC]): what `descent verify --compiled` runs on."""
    from .groups import _cuda_fuses
    return ("cpu", "sim:0") + (("cuda:0",) if _cuda_fuses() else ())


def suite(seed=0, devices=None):
    """Compiles each function of the suite (every op class, broadcasting, views, a reduction, float64, a small
    MLP, an attention block, decomposed ops) on each device (default_devices() unless given), and checks: each
    fused kernel's translation validation, the compiled result against eager bit for bit (the capture and a
    replay), and, where inputs require grad, the compiled backward's gradients against eager autograd's bit
    for bit and against finite differences (finite_differences); for the ops that
    decompose into another order of additions (_decomposed_cases), within the stated bound instead. Returns
    (name, ok, detail) rows, a device's names ending in " on <device>" (the CPU's as they are)."""
    rows = []
    for device in devices or default_devices():
        where = "" if device == "cpu" else f" on {device}"
        rows += _exact_rows(seed, device, where) + _bounded_rows(seed, device, where)
    return rows


def _exact_rows(seed, device, where):
    rows = []
    for name, fn, make in _suite_cases():
        problems, cf, verdicts = _check_case(fn, _on(make, device), seed, _same, _same,
                                             "the compiled result differs from eager",
                                             "the compiled gradients differ from autograd's")
        aot = "AOT autograd: forward" in cf.explain()
        fd = "; gradients match finite differences" if any(a.requires_grad for a in make()) else ""
        detail = (f"{len(cf.kernels)} fused kernel(s), {sum(bool(v) for v in verdicts)} proved"
                  f"{', forward/backward partitioned' if aot else ''}; bitwise equal to eager{fd}")
        rows.append((name + where, not problems, "; ".join(problems) if problems else detail))
    return rows


def _bounded_rows(seed, device, where):
    from .decompositions import bound_ulps
    rows = []
    for name, fn, make, scale in _decomposed_cases():
        b = bound_ulps(make()[0].shape[-1])
        u = 2.0 ** -24

        def within(got, ref, scale_of, b=b, u=u):
            return bool(((got.detach() - ref.detach()).abs() <= scale_of(ref.detach()) * (b * u)).all())
        problems, cf, verdicts = _check_case(
            fn, _on(make, device), seed, lambda o, w, scale=scale: within(o, w, scale),
            lambda g, h: within(g, h, lambda t: t.abs() + 1.0),
            f"the compiled result is farther from eager than {b} * u * scale",
            "the compiled gradients are farther from autograd's than the bound")
        fd = "; gradients match finite differences" if any(a.requires_grad for a in make()) else ""
        detail = (f"{len(cf.kernels)} fused kernel(s), {sum(bool(v) for v in verdicts)} proved; within "
                  f"{b} * u * scale of eager (another order of additions){fd}")
        rows.append((name + where, not problems, "; ".join(problems) if problems else detail))
    return rows


def format_suite(rows):
    width = max(len(r[0]) for r in rows)
    return "\n".join(f"{'ok  ' if ok else 'FAIL'}  {name.ljust(width)}  {detail}" for name, ok, detail in rows)
