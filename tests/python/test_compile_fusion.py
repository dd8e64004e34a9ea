"""The inductor backend's fused kernels and the verifier (Note [Fusing a pointwise chain],
Note [Translation validation of a fused kernel])."""
import os
import warnings

import numpy as np
import pytest

import descent
import descent._compile as dc
from descent._compile import fusion, verify


@pytest.fixture(autouse=True)
def cache(monkeypatch, tmp_path):
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    monkeypatch.delenv("DESCENT_CXX", raising=False)
    fusion._warned.clear()
    return tmp_path


def chain(x, b):
    return ((x + b).relu() * 0.1).sigmoid() * x - b.exp()


def inputs(dtype=descent.float32):
    descent.manual_seed(3)
    return descent.randn(6, 7, dtype=dtype), descent.randn(7, dtype=dtype)


def bits(t):
    a = np.asarray(t)
    return a.view(np.uint32 if a.dtype == np.float32 else np.uint64)


@pytest.mark.parametrize("dtype", [descent.float32, descent.float64])
def test_a_chain_is_one_kernel_and_bitwise_eager(dtype, cache):
    cf = descent.compile(chain)
    x, b = inputs(dtype)
    cf(x, b)
    (k,) = cf.kernels
    # b.exp() has b's shape: it runs before the kernel, which reads its result broadcast.
    assert k.ops == ["aten.add.Tensor", "aten.relu.default", "aten.mul.Tensor", "aten.sigmoid.default",
                     "aten.mul.Tensor", "aten.sub.Tensor"]
    assert "for (int64_t base = lo; base < hi; base += kStrip)" in k.source and "(i % 7) * 1" in k.source  # b broadcast
    assert k.path.startswith(str(cache)) and os.path.exists(k.path[:-3] + ".cpp")
    got = cf(x, b)  # a replay: the fused kernel
    assert np.array_equal(bits(got), bits(chain(x, b)))
    x2, b2 = descent.randn(6, 7, dtype=dtype), descent.randn(7, dtype=dtype)
    assert np.array_equal(bits(cf(x2, b2)), bits(chain(x2, b2)))


def test_non_fusible_ops_call_their_kernels_and_strided_inputs():
    f = lambda x, w: (x @ w).tanh() + x.sum(1, keepdim=True)  # noqa: E731
    descent.manual_seed(1)
    x, w = descent.randn(5, 4).t(), descent.randn(5, 3)  # x non-contiguous
    cf = descent.compile(f)
    cf(x, w)
    assert len(cf.kernels) == 1 and cf.kernels[0].ops == ["aten.tanh.default", "aten.add.Tensor"]
    assert np.array_equal(bits(cf(x, w)), bits(f(x, w)))
    g = lambda x: (x * 2).exp()  # noqa: E731
    xt = descent.randn(3, 4).t()
    cg = descent.compile(g)
    cg(xt)
    assert "* 4" in cg.kernels[0].source  # the transposed input read through its strides
    assert np.array_equal(bits(cg(xt)), bits(g(xt)))


def test_the_verifier_proves_and_names_what_it_cannot():
    cf = descent.compile(chain)
    cf(*inputs())
    k = cf.kernels[0]
    v = verify.translation_validate(k)
    assert v.proved and "commutativity" in v.rules and "aten-to-IR" in v.rules
    assert "%t0 = add %in0 %in1" in k.read_ir()  # read back from the loaded library
    bad = verify.translation_validate(k, k.read_ir().replace("= relu %t0", "= neg %t0"))
    assert not bad.proved and "node 'relu'" in str(bad) and "the kernel neg(" in str(bad)
    tv, num = verify.check(cf)
    assert all(tv) and num[0].startswith("bitwise equal to eager")
    assert "verifier, kernel" in cf.explain() and "proved:" in cf.explain()


def test_the_disk_cache_hit_and_a_corrupt_file(cache):
    x, b = inputs()
    first = descent.compile(chain)
    first(x, b)
    k = first.kernels[0]
    assert not k.cache_hit
    second = descent.compile(chain)
    second(x, b)
    assert second.kernels[0].cache_hit and second.kernels[0].path == k.path
    # A cache file this process has not loaded, corrupt: ignored and rebuilt.
    x9, b9 = descent.randn(9, 7), descent.randn(7)
    gm = dc.compile(chain, backend="eager")
    gm(x9, b9)
    (group,) = fusion.groups_of(gm.graphs[0].graph)
    fresh = fusion.build_kernel(group)
    os.makedirs(fusion.cache_dir(), exist_ok=True)
    with open(os.path.join(fusion.cache_dir(), fresh.hash + ".so"), "wb") as f:
        f.write(b"not a library")
    third = descent.compile(chain)
    third(x9, b9)
    assert third.kernels[0].hash == fresh.hash and not third.kernels[0].cache_hit
    assert np.array_equal(bits(third(x9, b9)), bits(chain(x9, b9)))


def test_no_compiler_and_a_failing_compiler(monkeypatch):
    x, b = inputs()
    monkeypatch.setenv("DESCENT_CXX", "/nonexistent/c++")
    with pytest.warns(UserWarning, match="no C\\+\\+ compiler found") as w:
        cf = descent.compile(chain)
        cf(x, b)
        descent.compile(chain)(x, b)
    assert len([r for r in w if "no C++ compiler" in str(r.message)]) == 1  # one warning
    assert not cf.kernels and np.array_equal(bits(cf(x, b)), bits(chain(x, b)))
    monkeypatch.setenv("DESCENT_CXX", "false")
    with pytest.warns(UserWarning, match="did not compile"):
        cf = descent.compile(chain)
        assert np.array_equal(bits(cf(x, b)), bits(chain(x, b)))


def test_what_is_not_fused():
    x, b = inputs()
    x.requires_grad_()
    cf = descent.compile(chain)
    cf(x, b).sum().backward()
    # With a grad to compute, the graphs fused are AOT autograd's forward and backward (test_compile_aot.py).
    assert len(cf.kernels) == 2 and "AOT autograd: forward" in cf.explain()
    x.grad = None
    cf(x, b).sum().backward()
    got = x.grad.clone()
    x.grad = None
    chain(x, b).sum().backward()
    assert np.array_equal(bits(got), bits(x.grad))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        xs, bs = descent.randn(6, 7, device="sim:0"), descent.randn(7, device="sim:0")
    cs = descent.compile(chain)
    assert np.array_equal(bits(cs(xs, bs).cpu()), bits(chain(xs, bs).cpu()))
    assert "on sim:0" in cs.explain() and cs.kernels[0].backend == "sim"  # test_compile_sim.py
    cm = descent.compile(lambda s, b: (b * s).exp())  # a CPU scalar beside a device tensor: eager takes it
    cm(descent.tensor(2.0), bs)
    assert "fusion off: the inputs are on cpu and sim:0" in cm.explain() and not cm.kernels
    ci = descent.compile(lambda x: (x + 1) * 2)
    i = descent.ones(3, dtype=descent.int64)
    assert ci(i).tolist() == [4, 4, 4] and not ci.kernels  # int64 is not fused


def test_the_compiled_call_in_a_trace():
    cf = descent.compile(lambda x: ((x + 1).relu() * 2).exp())
    x = descent.randn(8)
    with descent.trace() as first:
        cf(x)
    with descent.trace() as hit:
        cf(x)
    names = [s["name"] for s in first.result.spans()]
    assert "descent.compile: capture 0/0" in names
    names = [s["name"] for s in hit.result.spans()]
    assert "descent.compile: guards passed, entry 0/0" in names and "descent.compile: run graph 0/0" in names
    assert any(n.startswith("fused kernel ") and n.endswith("4 ops, 8 elements") for n in names)
    # One kernel where eager makes four trips down the floors: no aten::add, relu, mul or exp dispatch.
    assert not {"aten::add", "aten::relu", "aten::mul", "aten::exp"} & set(names)


# [SECTION] A chain fused into its reduction: Note [Fusing a chain into its reduction] ----------------------

REDUCTION_CASES = [
    # name, function, input shapes, the order eager's CPU sum adds in
    ("dot", lambda x, y: (x * y).sum(), [(37, 129), (37, 129)], "lanes"),
    ("rows", lambda x, y: (x * y).sum(1), [(37, 129), (129,)], "lanes"),
    ("rows, keepdim", lambda x, y: (x * y + 1.0).sum(-1, keepdim=True), [(5, 1000), (1000,)], "lanes"),
    ("columns", lambda x, y: (x - y).exp().sum(0), [(300, 7), (7,)], "cascade"),
    ("a middle dim", lambda x, y: (x * y).sum(1), [(3, 50, 7), (3, 50, 7)], "cascade"),
    ("mean", lambda x, y: ((x - y) * (x - y)).mean(), [(17, 33), (17, 33)], "lanes"),
    ("mean of two dims", lambda x, y: (x + y).relu().mean((0, 2)), [(4, 5, 6), (6,)], "cascade"),
    ("long, eager in threads", lambda x, y: (x * y).sum(), [(1 << 18,), (1 << 18,)], "lanes"),
]


@pytest.mark.parametrize("dtype", [descent.float32, descent.float64])
@pytest.mark.parametrize("name,f,shapes,order", REDUCTION_CASES, ids=[c[0] for c in REDUCTION_CASES])
def test_a_chain_and_its_reduction_are_one_kernel_bitwise_eager(name, f, shapes, order, dtype):
    descent.manual_seed(5)
    args = [descent.randn(*s, dtype=dtype) for s in shapes]
    cf = descent.compile(f)
    cf(*args)
    (k,) = cf.kernels
    assert k.ops[-1].startswith(("aten.sum", "aten.mean")) and k.order == order
    assert k.verdict.proved, k.verdict
    assert np.array_equal(bits(cf(*args)), bits(f(*args)))  # eager's order of additions: the same bits
    fresh = [descent.randn(*s, dtype=dtype) for s in shapes]
    assert np.array_equal(bits(cf(*fresh)), bits(f(*fresh)))
    prog = cf.entries[next(iter(cf.entries))].run
    assert verify.numeric(prog, cf.graphs[0], args).startswith("bitwise equal to eager")


def test_softmax_written_out_fuses_exp_into_its_sum_and_keeps_exp():
    f = lambda s: (lambda e: e / e.sum(-1, keepdim=True))((s - s.max(-1, keepdim=True).values).exp())  # noqa: E731
    descent.manual_seed(2)
    s = descent.randn(8, 100)
    cf = descent.compile(f)
    cf(s)
    mx, k, div = cf.kernels
    assert mx.ops == ["aten.max.dim"] and "max[1]k1(in0)" in str(mx.verdict)  # the row maxima: a kernel
    assert k.ops == ["aten.sub.Tensor", "aten.exp.default", "aten.sum.dim_IntList"]
    assert div.ops == ["aten.div.Tensor"]  # one op, but it broadcasts the sums: a kernel of its own
    assert [o.name for o in k.outputs] == ["exp", "sum"]  # exp is read by the division after the kernel
    assert k.out_shapes == [(8, 100), (8, 1)]
    assert "out1 (sum) = sum[1]k1(exp(sub(in0, in1)))" in str(k.verdict)
    assert "reduction dims normalized" in k.verdict.rules  # -1 is dim 1
    assert np.array_equal(bits(cf(s)), bits(f(s)))
    # The IR's reduction line read back; a kernel summing another dim is not proved, and says where.
    bad = verify.translation_validate(k, k.read_ir().replace("dims [1]", "dims [0]"))
    assert not bad.proved and "node 'sum'" in str(bad)


def test_the_reference_variant_sums_in_another_order_within_the_bound():
    f = lambda x, y: (x * y).sum(1)  # noqa: E731
    descent.manual_seed(4)
    x, y = descent.randn(16, 3000), descent.randn(16, 3000)
    cf = descent.compile(f)
    cf(x, y)
    assert cf.kernels[0].order == "lanes"
    try:
        descent.set_kernel_variant("reference")  # eager's sum cascades without lanes
        want = f(x, y)
    finally:
        descent.set_kernel_variant("auto")
    got = cf(x, y)
    err = np.abs(np.asarray(got, dtype=np.float64) - np.asarray(want, dtype=np.float64))
    bound = [verify.reduction_bound(3000, descent.float32, float(np.abs(np.asarray(x * y)[i]).sum()))
             for i in range(16)]
    assert (err <= np.array(bound)).all() and err.max() > 0  # another order: other bits, within the bound
    assert verify.reduction_bound(1, descent.float32, 1.0) == 0.0


def test_reductions_not_fused():
    descent.manual_seed(6)
    x = descent.randn(6, 5)
    for f in (lambda x: x.sum(),  # no chain feeds it
              lambda x: (x * 2.0).sum(dtype=descent.float64),  # dtype=: a conversion first
              lambda x: (x.t() * 2.0).t().sum(1)):  # the chain's result is a view: no group, a strided sum
        cf = descent.compile(f)
        cf(x)
        assert not any(k.ops[-1].startswith("aten.sum") for k in cf.kernels)
        assert np.array_equal(bits(cf(x)), bits(f(x)))
    ci = descent.compile(lambda i: (i * 2).sum())
    i = descent.ones(4, dtype=descent.int64)
    assert ci(i).item() == 8 and not ci.kernels  # integers are not fused
    # A reduction that ends a chain, then a second one of the same member: the first closes the group.
    g = lambda x: ((x * x).sum(1), (x * x).mean(0))  # noqa: E731
    cg = descent.compile(g)
    cg(x)
    got, want = cg(x), g(x)
    assert all(np.array_equal(bits(a), bits(b)) for a, b in zip(got, want))


def test_threads_change_the_time_not_the_bits():
    """Note [A fused kernel's threads]: ranges of elements (or of a reduction's outputs) on several threads."""
    descent.manual_seed(8)
    x, b = descent.randn(256, 300), descent.randn(300)
    f = lambda x, b: (((x + b).relu() * 0.1).sigmoid() * x).sum(1)  # noqa: E731
    g = lambda x, b: ((x - b).exp() * 0.5).sum(0)  # noqa: E731
    before = descent.get_num_threads()
    try:
        dot = lambda x, b: ((x * 0.5) * x).sum() + b.sum()  # noqa: E731 (one sum of everything: its tree cut)
        mean = lambda x, b: (x - b).exp().mean()  # noqa: E731
        for fn in (chain, f, g, dot, mean):
            outs = []
            for n in (1, 3):
                descent.set_num_threads(n)
                cf = descent.compile(fn)
                cf(x, b)
                assert cf.kernels and x.numel() >= fusion._PARALLEL_ELEMENTS
                if fn in (dot, mean):
                    assert cf.kernels[0].split and x.numel() >= 2 * fusion._PARALLEL_ELEMENTS
                outs.append(cf(x, b))
            assert np.array_equal(bits(outs[0]), bits(outs[1])) and np.array_equal(bits(outs[1]), bits(fn(x, b)))
    finally:
        descent.set_num_threads(before)


def test_a_maximum_is_exact_in_any_order_nan_and_signed_zeros_too():
    descent.manual_seed(9)
    x = descent.randn(16, 300)
    x[3, 7] = float("nan")
    x[5, 0], x[5, 1] = 0.0, -0.0  # a tie: the first one stays, as eager's loop keeps it
    x[6, :] = -0.0
    x[6, 4] = 0.0
    for f in (lambda x: (x * 2.0).max(1).values, lambda x: x.max(-1, keepdim=True).values,
              lambda x: x.exp().max(), lambda x: x.t().max(0).values):
        cf = descent.compile(f)
        cf(x)
        (k,) = cf.kernels
        assert k.ops[-1].startswith("aten.max") and k.verdict.proved and k.order == "index"
        assert np.array_equal(bits(cf(x)), bits(f(x)))
    used = descent.compile(lambda x: x.max(1).indices + 1)  # the indices are read: eager's max.dim
    used(x)
    assert not any(k.ops == ["aten.max.dim"] for k in used.kernels)
    assert used(x).tolist() == (x.max(1).indices + 1).tolist()


def test_the_program_is_straight_line_python_and_falls_back_on_strides():
    """Note [The fused program as Python]: program.code is what a call runs; the interpreter agrees."""
    x, b = inputs()
    cf = descent.compile(chain)
    cf(x, b)
    prog = next(iter(cf.entries.values())).run
    assert prog.code.startswith("def fused_program(v0, v1):") and "launch(KERNEL" in prog.code
    assert np.array_equal(bits(prog(x, b)), bits(prog._interpret(x, b)))
    xt = descent.randn(7, 6).t()  # the guarded shape, other strides: the group runs op by op
    assert np.array_equal(bits(prog(xt, b)), bits(chain(xt, b)))
    assert np.array_equal(bits(prog._interpret(xt, b)), bits(chain(xt, b)))
