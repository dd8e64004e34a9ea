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
    assert "for (int64_t i = 0; i < n; ++i)" in k.source and "(i % 7) * 1" in k.source  # b broadcast
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
    assert "not on the CPU" in cs.explain()
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
