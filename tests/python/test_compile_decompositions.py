"""Decompositions before fusion (Note [Decomposing before fusion], descent/_compile/decompositions.py): the
composite ops recorded as torch._decomp's primitives, fused, and checked against the eager op."""
import numpy as np
import pytest

import descent
from descent._compile import decompositions as D
from descent._compile import fusion
from descent._ops import op_overload
from descent.fx.experimental.proxy_tensor import make_fx

F = descent.nn.functional
U = 2.0 ** -24  # float32's unit roundoff


@pytest.fixture(autouse=True)
def cache(monkeypatch, tmp_path):
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    monkeypatch.delenv("DESCENT_CXX", raising=False)
    fusion._warned.clear()


def ops_of(gm):
    return [str(n.target) for n in gm.graph.nodes if n.op == "call_function"]


def test_the_table_has_torchs_names():
    table = D.select_decomp_table()
    names = {op.name() for op in table}
    assert {"aten::_softmax", "aten::_log_softmax", "aten::_softmax_backward_data",
            "aten::_log_softmax_backward_data", "aten::mse_loss", "aten::native_layer_norm"} <= names
    assert list(D.get_decompositions(["aten::_softmax"])) == [op_overload("aten::_softmax.default")]
    assert D.core_aten_decompositions() == table


@pytest.mark.parametrize("name,f,shapes,want", [
    ("softmax", lambda x: F.softmax(x, -1), [(4, 9)],
     ["aten.max.dim", "<built-in function getitem>", "aten.sub.Tensor", "aten.exp.default",
      "aten.sum.dim_IntList", "aten.div.Tensor"]),
    ("log_softmax", lambda x: F.log_softmax(x, 0), [(4, 9)],
     ["aten.max.dim", "<built-in function getitem>", "aten.sub.Tensor", "aten.exp.default",
      "aten.sum.dim_IntList", "aten.log.default", "aten.sub.Tensor"]),
    ("mse_loss", lambda x, y: F.mse_loss(x, y), [(4, 9), (4, 9)],
     ["aten.sub.Tensor", "aten.mul.Tensor", "aten.mean.default"]),
    ("layer_norm", lambda x, w, b: F.layer_norm(x, (9,), w, b), [(4, 9), (9,), (9,)],
     ["aten.mean.dim", "aten.sub.Tensor", "aten.mul.Tensor", "aten.mean.dim", "aten.add.Tensor",
      "aten.sqrt.default", "aten.reciprocal.default", "aten.mul.Tensor", "aten.mul.Tensor", "aten.add.Tensor"]),
])
def test_make_fx_records_the_primitives(name, f, shapes, want):
    descent.manual_seed(1)
    args = [descent.randn(*s) for s in shapes]
    assert not set(ops_of(make_fx(f)(*args))) & set(want[:1])  # without the table: the op itself
    gm = make_fx(f, decomposition_table=D.select_decomp_table())(*args)
    assert ops_of(gm) == want


@pytest.mark.parametrize("dim", [-1, 0])
@pytest.mark.parametrize("log", [False, True])
def test_softmax_compiled_is_one_fused_kernel_within_the_bound(dim, log):
    f = (lambda x: F.log_softmax(x, dim)) if log else (lambda x: F.softmax(x, dim))
    descent.manual_seed(2)
    x = descent.randn(16, 300) * 4.0
    cf = descent.compile(f)
    cf(x)
    # The row maxima; x - max, exp and the row sums; the division (or log_softmax's subtraction), which
    # broadcasts the row sums. (log of the row sums is one op over [16, 1]: eager's.)
    assert [k.ops for k in cf.kernels] == [["aten.max.dim"],
                                           ["aten.sub.Tensor", "aten.exp.default", "aten.sum.dim_IntList"],
                                           ["aten.sub.Tensor" if log else "aten.div.Tensor"]]
    assert all(k.verdict.proved for k in cf.kernels)
    got, want = np.asarray(cf(x)), np.asarray(f(x))
    n = x.shape[dim]
    if log:  # log(sum) is off by the sum's relative error: an absolute error, beside |out|'s own rounding
        assert (np.abs(got - want) <= D.bound_ulps(n) * U * (1.0 + np.abs(want))).all()
    else:
        assert (np.abs(got - want) <= D.bound_ulps(n) * U * np.abs(want) + 1e-45).all()
    assert np.allclose(got.sum(dim) if not log else np.exp(got).sum(dim), 1.0, atol=1e-5)


def test_mse_loss_decomposed_is_bitwise_eager():
    descent.manual_seed(3)
    x, y = descent.randn(32, 17), descent.randn(32, 17)
    for reduction in ("mean", "sum", "none"):
        f = lambda x, y: F.mse_loss(x, y, reduction=reduction)  # noqa: E731
        cf = descent.compile(f)
        cf(x, y)
        assert cf.kernels and cf.kernels[0].ops[:2] == ["aten.sub.Tensor", "aten.mul.Tensor"]
        a, b = np.asarray(cf(x, y)), np.asarray(f(x, y))
        assert np.array_equal(a.view(np.uint32), b.view(np.uint32))  # the same roundings in the same order


def test_layer_norm_compiled_within_the_bound():
    f = lambda x, w, b: F.layer_norm(x, (64,), w, b)  # noqa: E731
    descent.manual_seed(4)
    x, w, b = descent.randn(8, 64) * 3.0 + 1.0, descent.randn(64), descent.randn(64)
    cf = descent.compile(f)
    cf(x, w, b)
    assert len(cf.kernels) == 3 and cf.kernels[0].ops[-1] == "aten.mean.dim"  # the variance's sum, fused
    got, want = np.asarray(cf(x, w, b)), np.asarray(f(x, w, b))
    scale = np.abs(np.asarray(w)) * 4.0 + np.abs(want)  # |normalized| * |w| + |out|: the error's scale
    assert (np.abs(got - want) <= D.bound_ulps(64) * U * scale).all()


def test_the_backward_decomposes_and_stays_close_to_eager():
    f = lambda x: F.log_softmax(x, -1) * 2.0  # noqa: E731
    descent.manual_seed(5)
    x = descent.randn(8, 50, requires_grad=True)
    cf = descent.compile(f)
    cf(x)
    out = cf(x)
    assert out.grad_fn.name() == "CompiledFunctionBackward"
    bw = next(iter(cf.entries.values())).run.backward_graph
    assert "aten._log_softmax_backward_data" not in bw.code and "aten.exp.default" in bw.code
    (g1,) = descent.autograd.grad(out.sum(), [x])
    (g2,) = descent.autograd.grad(f(x).sum(), [x])
    err = np.abs(np.asarray(g1) - np.asarray(g2))
    assert (err <= D.bound_ulps(50) * U * (2.0 + np.abs(np.asarray(g2)))).all()


def test_eager_backends_keep_the_op_and_bad_input_keeps_its_error():
    descent.manual_seed(6)
    x = descent.randn(4, 9)
    ce = descent.compile(lambda x: F.softmax(x, -1), backend="aot_eager")
    ce(x)
    assert ops_of(ce.graphs[0]) == ["aten._softmax.default"]
    with pytest.raises(RuntimeError, match="Given normalized_shape=\\[7\\]"):
        descent.compile(lambda x: F.layer_norm(x, (7,)))(x)  # the decomposition declines: the kernel's error
    i = descent.ones(4, dtype=descent.int64)
    with pytest.raises(NotImplementedError, match="mse_cpu"):
        descent.compile(lambda a, b: F.mse_loss(a, b))(i, i)
