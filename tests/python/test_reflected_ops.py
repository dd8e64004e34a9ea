"""A number on the left of -, / and **: PyTorch's ops, nodes and values (Note [Reflected operators],
floors/binding/tensor_methods.cpp).

PyTorch 2.11 runs `2 - x` as aten::rsub.Scalar (RsubBackward1), `2 / x` as x.reciprocal() * 2
(MulBackward0 over ReciprocalBackward0) and `2 ** x` as aten::pow.Scalar (PowBackward2): the graphs
are tests/python/data/torch_facts_h200.txt's, read on the H200 host.
"""
import math
import os
import re

import numpy as np
import pytest

import descent
from descent.autograd import gradcheck

D = descent.float64
FACTS = os.path.join(os.path.dirname(__file__), "data", "torch_facts_h200.txt")
EXPRESSIONS = {"2 - x": lambda x: 2 - x, "2 / x": lambda x: 2 / x, "2 ** x": lambda x: 2 ** x}


def torch_graph(expr):
    """'gf 2 - x => (<RsubBackward1 object at 0x..>, ((<AccumulateGrad object at 0x..>, 0),), False)'
    as ['RsubBackward1', 'AccumulateGrad']: the grad_fn, then each next function (None for none)."""
    with open(FACTS) as f:
        line = next(l for l in f if l.startswith(f"gf {expr} => "))
    return [a or b for a, b in re.findall(r"<(\w+) object at|\((None), 0\)", line.split(" => ", 1)[1])]


def descent_graph(y):
    return [type(y.grad_fn).__name__] + [type(fn).__name__ if fn else "None" for fn, _ in y.grad_fn.next_functions]


@pytest.mark.parametrize("expr", sorted(EXPRESSIONS))
def test_the_graph_is_pytorchs(expr):
    x = descent.tensor([0.5, 2.0], requires_grad=True)
    y = EXPRESSIONS[expr](x)
    assert descent_graph(y) == torch_graph(expr)
    assert y.grad_fn.name() == type(y.grad_fn).__name__


def test_the_nodes_by_name():
    x = descent.tensor([0.5, 2.0], requires_grad=True)
    assert (2 - x).grad_fn.name() == "RsubBackward1"
    rdiv = 2 / x
    assert rdiv.grad_fn.name() == "MulBackward0"
    assert rdiv.grad_fn.next_functions[0][0].name() == "ReciprocalBackward0"
    assert (2 ** x).grad_fn.name() == "PowBackward2"
    # The tensor on the left keeps its own ops.
    assert (x - 2).grad_fn.name() == "SubBackward0" and (x / 2).grad_fn.name() == "DivBackward0"
    assert (x ** 2).grad_fn.name() == "PowBackward0"


def dispatched(t, names):
    """The first dispatches (not redispatches) of these ops, in order: what torch.profiler lists."""
    return [s for s in t.result.spans() if s["floor"] == 3 and not s["args"].get("redispatch") and s["name"] in names]


def test_the_trace_shows_pytorchs_ops():
    x = descent.ones(2)
    with descent.trace() as t:
        2 - x
    rsub, sub = dispatched(t, ("aten::rsub", "aten::sub"))
    assert (rsub["name"], sub["name"]) == ("aten::rsub", "aten::sub")
    assert rsub["start_ns"] < sub["start_ns"] and sub["end_ns"] < rsub["end_ns"]   # rsub's kernel calls sub
    with descent.trace() as t:
        2 / x
    ops = ("aten::reciprocal", "aten::mul", "aten::div")
    assert [s["name"] for s in dispatched(t, ops)] == ["aten::reciprocal", "aten::mul"]
    with descent.trace() as t:
        2 ** x
    floor2 = [(s["name"], s["args"].get("overload"), s["args"].get("python")) for s in t.result.spans() if s["floor"] == 2]
    assert floor2 == [("pow", "aten::pow.Scalar", "Tensor.__rpow__")]
    assert [s["name"] for s in dispatched(t, ("aten::pow",))] == ["aten::pow"]


def test_values_and_dtypes():
    f = descent.tensor([1.0, 2.0, 4.0])
    i = descent.tensor([1, 2, 3])
    assert (3 - f).tolist() == [2.0, 1.0, -1.0] and (3 - i).dtype is descent.int64
    assert (2.5 - i).dtype is descent.float32 and (2.5 - i).tolist() == [1.5, 0.5, -0.5]
    assert descent.rsub(f, 1, alpha=2).tolist() == [-1.0, -3.0, -7.0]   # 1 - 2 * f
    assert (2 / i).dtype is descent.float32 and (2 / f).tolist() == [2.0, 1.0, 0.5]
    assert (2 ** i).dtype is descent.int64 and (2 ** i).tolist() == [2, 4, 8]
    assert (0.5 ** i).dtype is descent.float32 and (0.5 ** i).tolist() == [0.5, 0.25, 0.125]
    assert descent.pow(2, f).tolist() == [2.0, 4.0, 16.0]
    assert descent.reciprocal(i).tolist() == [1.0, 0.5, pytest.approx(1 / 3)]
    with pytest.raises(RuntimeError, match="Subtraction, the `-` operator, with a bool tensor"):
        1 - descent.tensor([True])


def test_a_number_over_a_tensor_is_the_reciprocal_times_the_number():
    """3 / x rounds 1/x first, then multiplies: for x = 7 that is not the rounded 3/7 (float32)."""
    a = np.arange(1, 1000, dtype=np.float32)
    got = (3 / descent.tensor(a)).numpy()
    np.testing.assert_array_equal(got, (np.float32(1) / a) * np.float32(3))
    assert (got != np.float32(3) / a).any()  # so the test tells the two apart


def test_rsub_is_a_function_only():
    assert hasattr(descent, "rsub") and not hasattr(descent.Tensor, "rsub")
    x = descent.tensor([2.0])
    assert x.pow(2).tolist() == [4.0] and x.pow(descent.tensor([3.0])).tolist() == [8.0]
    with pytest.raises(TypeError):
        x.pow()


@pytest.mark.parametrize("expr", ["3 - x", "rsub alpha", "2 / x", "2.5 ** x", "0.5 ** x"])
def test_gradients_against_finite_differences(expr):
    fns = {"3 - x": lambda x: 3 - x, "rsub alpha": lambda x: descent.rsub(x, 1.5, alpha=-2),
           "2 / x": lambda x: 2 / x, "2.5 ** x": lambda x: 2.5 ** x, "0.5 ** x": lambda x: 0.5 ** x}
    descent.manual_seed(7)
    x = (descent.rand([3, 4], dtype=D) + 0.5).requires_grad_()
    assert gradcheck(fns[expr], (x,))


def test_the_gradients_pytorch_gives():
    x = descent.tensor([0.5, 2.0], dtype=D, requires_grad=True)
    (2 - x).sum().backward()
    assert x.grad.tolist() == [-1.0, -1.0]
    x.grad = None
    descent.rsub(x, 2, alpha=3).sum().backward()
    assert x.grad.tolist() == [-3.0, -3.0]
    x.grad = None
    (2 / x).sum().backward()
    assert x.grad.tolist() == [-8.0, -0.5]   # -2 / x^2
    x.grad = None
    (3 ** x).sum().backward()
    assert x.grad.tolist() == pytest.approx([3 ** 0.5 * math.log(3), 9 * math.log(3)])


def test_zero_to_a_tensor_power():
    """pow_backward_exponent for base 0: 0 where the exponent is >= 0 (not 0 * -inf = NaN), -inf below."""
    e = descent.tensor([-1.0, 0.0, 2.0, 0.5], dtype=D, requires_grad=True)
    y = 0 ** e
    assert y.tolist() == [math.inf, 1.0, 0.0, 0.0]
    y.sum().backward()
    assert e.grad.tolist() == [-math.inf, 0.0, 0.0, 0.0]
    e.grad = None
    (1 ** e).sum().backward()
    assert e.grad.tolist() == [0.0, 0.0, 0.0, 0.0]   # log(1) = 0


def test_on_the_simulated_device():
    x = descent.tensor([0.5, 2.0, 4.0], requires_grad=True)
    xs = x.detach().to("sim:0").requires_grad_()
    for f in EXPRESSIONS.values():
        y, ys = f(x), f(xs)
        assert ys.device == descent.device("sim:0")
        assert ys.cpu().tolist() == y.tolist()
        assert descent_graph(ys) == descent_graph(y)
        g, = descent.autograd.grad(y.sum(), [x])
        gs, = descent.autograd.grad(ys.sum(), [xs])
        assert gs.cpu().tolist() == g.tolist()
