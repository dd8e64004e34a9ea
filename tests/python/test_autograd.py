"""Floor 4, autograd: the graph PyTorch records and the gradients it computes.

- grad_fn chains of every expression PyTorch printed on the H200 host
  (shared/fixtures/pytorch-h200/facts.json), node names and next_functions;
- gradcheck (float64, central differences) for every differentiable op of the
  table, with broadcasting, non-contiguous views and 0-d tensors, and
  gradgradcheck where the formulas are themselves differentiable;
- in-place ops through views, and views read after their base was written.

The engine that walks the graph, hooks, grad mode, the trace and training are
test_autograd_engine.py's.
"""
import json
import os

import pytest

import descent
import nn_op_rows
from conftest import OPS_BY_KEY
from descent.autograd import GradcheckError, grad, gradcheck, gradgradcheck

D = descent.float64
FACTS = os.path.join(os.path.dirname(__file__), "..", "..", "..", "shared", "fixtures", "pytorch-h200", "facts.json")


def rand(*shape, positive=False, seed=None):
    if seed is not None:
        descent.manual_seed(seed)
    t = descent.rand(list(shape), dtype=D) + 0.5 if positive else descent.randn(list(shape), dtype=D)
    return t.requires_grad_()


def chain(t):
    """'MulBackward0(AccumulateGrad, None)': a grad_fn and its next_functions, as facts.json writes them."""
    def rec(node):
        if node is None:
            return "None"
        kids = [rec(fn) for fn, _ in node.next_functions]
        return type(node).__name__ + (f"({', '.join(kids)})" if kids else "")
    return None if t.grad_fn is None else rec(t.grad_fn)


# [SECTION] The graph PyTorch records -------------------------------------------------------

# What PyTorch 2.11 printed on the H200 host for each expression (x: 3x4, w: 4x2, b: 2, all
# requiring grad; y: 3x2 not): shared/fixtures/pytorch-h200/facts.json, copied here so that the
# test runs where the shared folder is not; test_the_copy_is_facts_json checks the copy.
TORCH_GRAD_FN = {
    'x+1': 'AddBackward0(AccumulateGrad, None)',
    'x*x': 'MulBackward0(AccumulateGrad, AccumulateGrad)',
    '(x*x).sum()': 'SumBackward0(MulBackward0(AccumulateGrad, AccumulateGrad))',
    'x.sum(0)': 'SumBackward1(AccumulateGrad)',
    'x.mean()': 'MeanBackward0(AccumulateGrad)',
    'x@w': 'MmBackward0(AccumulateGrad, AccumulateGrad)',
    'x@w+b': 'AddBackward0(MmBackward0(AccumulateGrad, AccumulateGrad), AccumulateGrad)',
    '(x@w+b).relu()': 'ReluBackward0(AddBackward0(MmBackward0(AccumulateGrad, AccumulateGrad), AccumulateGrad))',
    'x.exp()': 'ExpBackward0(AccumulateGrad)',
    'x.tanh()': 'TanhBackward0(AccumulateGrad)',
    'x.sigmoid()': 'SigmoidBackward0(AccumulateGrad)',
    'x/2': 'DivBackward0(AccumulateGrad, None)',
    'x-w.T.sum(0)': 'SubBackward0(AccumulateGrad, SumBackward1(PermuteBackward0(AccumulateGrad)))',
    'x.pow(2)': 'PowBackward0(AccumulateGrad)',
    'x**3': 'PowBackward0(AccumulateGrad)',
    '-x': 'NegBackward0(AccumulateGrad)',
    'x.t()': 'TBackward0(AccumulateGrad)',
    'x.transpose(0,1)': 'TransposeBackward0(AccumulateGrad)',
    'x.reshape(12)': 'ViewBackward0(AccumulateGrad)',
    'x.view(12)': 'ViewBackward0(AccumulateGrad)',
    'x[1]': 'SelectBackward0(AccumulateGrad)',
    'x[:, ::2]': 'SliceBackward0(AccumulateGrad)',
    'x.max()': 'MaxBackward1(AccumulateGrad)',
    'x.max(1).values': 'MaxBackward0(AccumulateGrad)',
    'x.log()': 'LogBackward0(AccumulateGrad)',
    'x.sqrt()': 'SqrtBackward0(AccumulateGrad)',
    'x.abs()': 'AbsBackward0(AccumulateGrad)',
    'x.expand(2,3,4)': 'ExpandBackward0(AccumulateGrad)',
    'x.unsqueeze(0)': 'UnsqueezeBackward0(AccumulateGrad)',
    'x.permute(1,0)': 'PermuteBackward0(AccumulateGrad)',
    'x.contiguous()': None,
    'x.clone()': 'CloneBackward0(AccumulateGrad)',
    'x.to(float64)': 'ToCopyBackward0(AccumulateGrad)',
    'mse': 'MeanBackward0(PowBackward0(SubBackward0(AddBackward0(MmBackward0(AccumulateGrad, AccumulateGrad), AccumulateGrad), None)))',
}


def test_the_copy_is_facts_json():
    if not os.path.exists(FACTS):
        pytest.skip("shared/fixtures/pytorch-h200/facts.json is not beside this checkout")
    with open(FACTS) as f:
        assert json.load(f)["grad_fn_of (x: 3x4, w: 4x2, b: 2, all requires_grad)"] == TORCH_GRAD_FN


EXPRESSIONS = {
    "x+1": lambda x, w, b, y: x + 1, "x*x": lambda x, w, b, y: x * x,
    "(x*x).sum()": lambda x, w, b, y: (x * x).sum(), "x.sum(0)": lambda x, w, b, y: x.sum(0),
    "x.mean()": lambda x, w, b, y: x.mean(), "x@w": lambda x, w, b, y: x @ w,
    "x@w+b": lambda x, w, b, y: x @ w + b, "(x@w+b).relu()": lambda x, w, b, y: (x @ w + b).relu(),
    "x.exp()": lambda x, w, b, y: x.exp(), "x.tanh()": lambda x, w, b, y: x.tanh(),
    "x.sigmoid()": lambda x, w, b, y: x.sigmoid(), "x/2": lambda x, w, b, y: x / 2,
    "x-w.T.sum(0)": lambda x, w, b, y: x - w.T.sum(0), "x.pow(2)": lambda x, w, b, y: x.pow(2),
    "x**3": lambda x, w, b, y: x ** 3, "-x": lambda x, w, b, y: -x, "x.t()": lambda x, w, b, y: x.t(),
    "x.transpose(0,1)": lambda x, w, b, y: x.transpose(0, 1), "x.reshape(12)": lambda x, w, b, y: x.reshape(12),
    "x.view(12)": lambda x, w, b, y: x.view(12), "x[1]": lambda x, w, b, y: x[1],
    "x[:, ::2]": lambda x, w, b, y: x[:, ::2], "x.max()": lambda x, w, b, y: x.max(),
    "x.max(1).values": lambda x, w, b, y: x.max(1).values, "x.log()": lambda x, w, b, y: x.log(),
    "x.sqrt()": lambda x, w, b, y: x.sqrt(), "x.abs()": lambda x, w, b, y: x.abs(),
    "x.expand(2,3,4)": lambda x, w, b, y: x.expand(2, 3, 4), "x.unsqueeze(0)": lambda x, w, b, y: x.unsqueeze(0),
    "x.permute(1,0)": lambda x, w, b, y: x.permute(1, 0), "x.contiguous()": lambda x, w, b, y: x.contiguous(),
    "x.clone()": lambda x, w, b, y: x.clone(), "x.to(float64)": lambda x, w, b, y: x.to(descent.float64),
    "mse": lambda x, w, b, y: ((x @ w + b) - y).pow(2).mean(),
}


def test_every_grad_fn_chain_is_pytorchs():
    facts = TORCH_GRAD_FN
    assert set(facts) == set(EXPRESSIONS)
    x, w, b = (descent.randn(s, requires_grad=True) for s in ([3, 4], [4, 2], [2]))
    y = descent.randn(3, 2)
    got = {k: chain(f(x, w, b, y)) for k, f in EXPRESSIONS.items()}
    assert got == facts


# The ops issue 22 added, as PyTorch 2.11 printed their graphs on the H200 host
# (x: 3x4, w: 2x4, b: 2, x3: 5x3x4, x1: 4, all requiring grad; m: 3x4 requiring
# grad, p an int64 tensor), with torch::autograd::AccumulateGrad written
# AccumulateGrad. descent's matmul differs where Note [Composite ops decompose]
# says (1-D @ 2-D ends in _unsafe_view, where PyTorch squeezes): "linear(x1, w)".
TORCH_GRAD_FN_OF_NEW_OPS = {
    "x.sin()": "SinBackward0(AccumulateGrad)",
    "x.cos()": "CosBackward0(AccumulateGrad)",
    "x.clamp(-1, 1)": "ClampBackward1(AccumulateGrad)",
    "x.clamp(min=0)": "ClampBackward1(AccumulateGrad)",
    "x.clamp_min(0)": "ClampMinBackward0(AccumulateGrad)",
    "x.clamp_max(0)": "ClampMaxBackward0(AccumulateGrad)",
    "x1.unsqueeze(-1).pow(p)": "PowBackward1(UnsqueezeBackward0(AccumulateGrad), None)",
    "addmm(b, x, w.t())": "AddmmBackward0(AccumulateGrad, AccumulateGrad, TBackward0(AccumulateGrad))",
    "linear(x, w, b)": "AddmmBackward0(AccumulateGrad, AccumulateGrad, TBackward0(AccumulateGrad))",
    "linear(x, w)": "MmBackward0(AccumulateGrad, TBackward0(AccumulateGrad))",
    "linear(x3, w, b)": "ViewBackward0(AddmmBackward0(AccumulateGrad, ViewBackward0(AccumulateGrad), "
                        "TBackward0(AccumulateGrad)))",
    "linear(x1, w, b)": "ViewBackward0(AddmmBackward0(AccumulateGrad, ViewBackward0(AccumulateGrad), "
                        "TBackward0(AccumulateGrad)))",
    "linear(x3.transpose(0, 1), w, b)": "AddBackward0(UnsafeViewBackward0(MmBackward0(UnsafeViewBackward0("
                                        "CloneBackward0(TransposeBackward0(AccumulateGrad))), "
                                        "TBackward0(AccumulateGrad))), AccumulateGrad)",
    "linear(x, w, b.unsqueeze(0))": "AddmmBackward0(UnsqueezeBackward0(AccumulateGrad), AccumulateGrad, "
                                    "TBackward0(AccumulateGrad))",
    "linear(x3, w, b.expand(3, 2))": "AddBackward0(UnsafeViewBackward0(MmBackward0(ViewBackward0(AccumulateGrad), "
                                     "TBackward0(AccumulateGrad))), ExpandBackward0(AccumulateGrad))",
    "x3.flatten()": "ViewBackward0(AccumulateGrad)",
    "x3.flatten(0, 1)": "ViewBackward0(AccumulateGrad)",
    "x3.transpose(0, 1).flatten()": "UnsafeViewBackward0(CloneBackward0(TransposeBackward0(AccumulateGrad)))",
    "x3.flatten(1, 1)": None,
    "mse_loss(x, m)": "MseLossBackward0(AccumulateGrad, AccumulateGrad)",
    "mse_loss(x, 2 * x.detach(), 2)": "MseLossBackward0(AccumulateGrad, None)",
    "cat([x, m])": "CatBackward0(AccumulateGrad, AccumulateGrad)",
    "cat([x, m, randn(3, 2)], 1)": "CatBackward0(AccumulateGrad, AccumulateGrad, None)",
}
NEW_EXPRESSIONS = {
    "x.sin()": lambda v: v["x"].sin(), "x.cos()": lambda v: v["x"].cos(),
    "x.clamp(-1, 1)": lambda v: v["x"].clamp(-1, 1), "x.clamp(min=0)": lambda v: v["x"].clamp(min=0),
    "x.clamp_min(0)": lambda v: v["x"].clamp_min(0), "x.clamp_max(0)": lambda v: v["x"].clamp_max(0),
    "x1.unsqueeze(-1).pow(p)": lambda v: v["x1"].unsqueeze(-1).pow(descent.tensor([1, 2, 3])),
    "addmm(b, x, w.t())": lambda v: descent.addmm(v["b"], v["x"], v["w"].t()),
    "linear(x, w, b)": lambda v: NN.linear(v["x"], v["w"], v["b"]),
    "linear(x, w)": lambda v: NN.linear(v["x"], v["w"]),
    "linear(x3, w, b)": lambda v: NN.linear(v["x3"], v["w"], v["b"]),
    "linear(x1, w, b)": lambda v: NN.linear(v["x1"], v["w"], v["b"]),
    "linear(x3.transpose(0, 1), w, b)": lambda v: NN.linear(v["x3"].transpose(0, 1), v["w"], v["b"]),
    "linear(x, w, b.unsqueeze(0))": lambda v: NN.linear(v["x"], v["w"], v["b"].unsqueeze(0)),
    "linear(x3, w, b.expand(3, 2))": lambda v: NN.linear(v["x3"], v["w"], v["b"].expand(3, 2)),
    "x3.flatten()": lambda v: v["x3"].flatten(), "x3.flatten(0, 1)": lambda v: v["x3"].flatten(0, 1),
    "x3.transpose(0, 1).flatten()": lambda v: v["x3"].transpose(0, 1).flatten(),
    "x3.flatten(1, 1)": lambda v: v["x3"].flatten(1, 1),
    "mse_loss(x, m)": lambda v: NN.mse_loss(v["x"], v["m"]),
    "mse_loss(x, 2 * x.detach(), 2)": lambda v: NN.mse_loss(v["x"], 2 * v["x"].detach(), 2),
    "cat([x, m])": lambda v: descent.cat([v["x"], v["m"]]),
    "cat([x, m, randn(3, 2)], 1)": lambda v: descent.cat([v["x"], v["m"], descent.randn(3, 2)], 1),
}


NN = descent._C._nn


def new_op_values():
    shapes = {"x": [3, 4], "w": [2, 4], "b": [2], "x3": [5, 3, 4], "x1": [4], "m": [3, 4]}
    return {k: descent.randn(s, requires_grad=True) for k, s in shapes.items()}


@pytest.mark.parametrize("expr", sorted(TORCH_GRAD_FN_OF_NEW_OPS))
def test_the_new_ops_record_pytorchs_nodes(expr):
    assert set(NEW_EXPRESSIONS) == set(TORCH_GRAD_FN_OF_NEW_OPS)
    assert chain(NEW_EXPRESSIONS[expr](new_op_values())) == TORCH_GRAD_FN_OF_NEW_OPS[expr]


def test_the_new_nodes_save_what_pytorchs_save():
    """AddmmBackward0 saves mat1 and mat2 (each only where the other's gradient needs it), MseLossBackward0
    self and target, the clamps and sin/cos self, CatBackward0 no tensor: the trace's `saved` argument."""
    v = new_op_values()
    c = descent.randn(3, 2)
    with descent.trace() as t:
        descent.addmm(v["b"], v["x"], v["w"].t())
        descent.addmm(v["b"], v["x"].detach(), v["w"].t())
        NN.mse_loss(v["x"], v["m"])
        v["x"].clamp(0, 1), v["x"].sin()
        descent.cat([v["x"], c], 1)
    saved = [(s["args"]["node"], s["args"]["saved"]) for s in t.result.spans()
             if s["floor_name"] == "autograd" and s["args"].get("graph") == "recorded"]
    assert saved == [("TBackward0", "nothing"), ("AddmmBackward0", "mat1, mat2"),
                     ("TBackward0", "nothing"), ("AddmmBackward0", "mat1"),
                     ("MseLossBackward0", "self, target"), ("ClampBackward1", "self"), ("SinBackward0", "self"),
                     ("CatBackward0", "nothing")]


def test_a_node_of_three_inputs_names_its_third_edge_in_the_trace():
    v = new_op_values()
    with descent.trace() as t:
        descent.addmm(v["b"], v["x"], v["m"].t()[:, :2])
    recorded = {s["args"]["node"]: s["args"] for s in t.result.spans() if s["args"].get("graph") == "recorded"}
    addmm = recorded["AddmmBackward0"]
    assert addmm["edges"] == "AccumulateGrad, AccumulateGrad, SliceBackward0"
    assert addmm["edge2_id"] == recorded["SliceBackward0"]["node_id"]


def test_a_leaf_has_an_accumulate_grad_whose_variable_is_the_leaf():
    x = descent.randn(3, requires_grad=True)
    y = x * x
    (acc, nr), (acc2, _) = y.grad_fn.next_functions
    assert acc == acc2 and nr == 0, "one AccumulateGrad per leaf, shared by both edges"
    assert acc.variable._is_same(x)
    assert repr(y.grad_fn).startswith("<MulBackward0 object at 0x")
    assert x.is_leaf and not y.is_leaf and y.requires_grad and x.grad_fn is None


def test_a_result_prints_its_grad_fn_as_torch_does():
    x = descent.tensor([1.0, 2.0], requires_grad=True)
    assert repr(x) == "tensor([1., 2.], requires_grad=True)"
    assert repr(x * 2) == "tensor([2., 4.], grad_fn=<MulBackward0>)"
    assert repr((x * 2).sum()) == "tensor(6., grad_fn=<SumBackward0>)"
    assert repr((x * 2).detach()) == "tensor([2., 4.])"


def test_requires_grad_follows_the_inputs_through_every_kind_of_op():
    x = descent.randn(2, 3, requires_grad=True)
    c = descent.randn(2, 3)
    assert not (c + c).requires_grad
    assert (x + c).requires_grad and (c * x).requires_grad
    assert not (x > 0).requires_grad and (x > 0).grad_fn is None      # comparisons are not differentiable
    values, indices = x.max(1)
    assert values.requires_grad and not indices.requires_grad
    assert not descent.zeros(2).requires_grad
    assert descent.zeros(2, requires_grad=True).requires_grad
    assert descent.tensor([1.0, 2.0], requires_grad=True).is_leaf
    with pytest.raises(RuntimeError, match="only Tensors of floating point"):
        descent.zeros(2, dtype=descent.int64, requires_grad=True)
    with pytest.raises(TypeError, match="requires_grad"):
        descent.ones(2, requires_grad="yes")


# [SECTION] gradcheck for every differentiable op -------------------------------------------

# One case per op key of the table (conftest.op_key); each is a function and
# its float64 inputs, chosen to cover broadcasting, non-contiguous views and
# 0-d tensors between them.
CASES = {
    "add": (lambda a, b: descent.add(a, b, alpha=3), lambda: (rand(3, 4), rand(4))),
    "sub": (lambda a, b: descent.sub(a, b, alpha=2), lambda: (rand(2, 3), rand(2, 1))),
    "mul": (lambda a, b: a.T * b, lambda: (rand(4, 3), rand(3, 4))),
    "div": (lambda a, b: a / b, lambda: (rand(3, 4), rand(positive=True))),
    "pow.Tensor_Scalar": (lambda a: a ** 2.5, lambda: (rand(3, 4, positive=True),)),
    "pow.Tensor_Tensor": (lambda a, b: a ** b, lambda: (rand(3, 4, positive=True), rand(4))),
    "pow.Scalar": (lambda e: 2.5 ** e + descent.pow(0.5, e.T).T, lambda: (rand(3, 4),)),
    "rsub": (lambda a: 2 - a + descent.rsub(a.T, 1.5, alpha=3).T, lambda: (rand(3, 4),)),
    "reciprocal": (lambda a: a.reciprocal() + 2 / a.T.sum(1), lambda: (rand(4, 3, positive=True),)),
    "neg": (lambda a: -a, lambda: (rand(5),)),
    "abs": (lambda a: a.abs(), lambda: (rand(2, 5),)),
    "exp": (lambda a: a.exp(), lambda: (rand(3, 2),)),
    "log": (lambda a: a.log(), lambda: (rand(3, 2, positive=True),)),
    "sqrt": (lambda a: a.sqrt(), lambda: (rand(3, 2, positive=True),)),
    "relu": (lambda a: a.relu(), lambda: (rand(3, 5),)),
    # relu's backward op (no Python function, as in PyTorch): the gradient's mask, and zeros for self
    "threshold_backward": (lambda g, s: descent.ops.aten.threshold_backward(g, s, 0.25), lambda: (rand(3, 5), rand(3, 5))),
    "sigmoid": (lambda a: a.sigmoid(), lambda: (rand(3, 5),)),
    "tanh": (lambda a: a.tanh(), lambda: (rand(3, 5),)),
    "sin": (lambda a: a.sin(), lambda: (rand(3, 5),)),
    "cos": (lambda a: descent.cos(a.T), lambda: (rand(3, 5),)),
    "clamp": (lambda a: a.clamp(-0.5, 0.7) + a.clamp(min=0.2) + a.clamp(max=-0.1), lambda: (rand(4, 5),)),
    "clamp_min": (lambda a: a.clamp_min(0.1), lambda: (rand(4, 5),)),
    "clamp_max": (lambda a: descent.clamp_max(a.T, -0.2), lambda: (rand(4, 5),)),
    "addmm": (lambda s, a, b: descent.addmm(s, a, b.T, beta=0.5, alpha=2) + descent.addmm(s, a, b.T),
              lambda: (rand(3), rand(2, 4), rand(3, 4))),
    "linear": (lambda x, w, b: descent._C._nn.linear(x, w, b).sum(0) + descent._C._nn.linear(x.transpose(0, 1), w, b)
               .sum(1) + descent._C._nn.linear(x[0], w) + descent._C._nn.linear(x[1], w, b.sum()),
               lambda: (rand(4, 3, 5), rand(2, 5), rand(2))),
    "mse_loss": (lambda a, b: descent._C._nn.mse_loss(a, b) + descent._C._nn.mse_loss(a, b, 2) * 0.5
                 + descent._C._nn.mse_loss(a.T, b.T, 0).sum(0) + descent._C._nn.mse_loss(a, b[0]).sum(),
                 lambda: (rand(3, 4), rand(3, 4))),
    "cat": (lambda a, b, c: descent.cat([a, b.T, c], 1).sum(1) + descent.cat([a.T, b]).sum(0)[:3]
            + descent.cat([descent.zeros(0, dtype=D), c, a], 1).sum(1),
            lambda: (rand(3, 2), rand(4, 3), rand(3, 1))),
    "flatten": (lambda a: a.transpose(0, 1).flatten(1) * a.flatten(0, 1).sum() + a.flatten(-2).sum(1).sum(),
                lambda: (rand(2, 3, 4),)),
    "sum": (lambda a: a.sum(), lambda: (rand(3, 5),)),
    "sum.dim_IntList": (lambda a: a.sum([0, 2], keepdim=True) + a.sum(-1).sum(), lambda: (rand(3, 2, 5),)),
    "mean": (lambda a: a.mean(), lambda: (rand(3, 5),)),
    "mean.dim": (lambda a: a.mean(0), lambda: (rand(3, 5),)),
    "max": (lambda a: a.max(), lambda: (rand(3, 5),)),
    "max.dim": (lambda a: a.max(1).values + a.max(0, keepdim=True).values.sum(), lambda: (rand(3, 5),)),
    "matmul": (lambda a, b: a @ b, lambda: (rand(2, 3, 4), rand(4, 2))),
    "mm": (lambda a, b: descent.mm(a, b), lambda: (rand(3, 4), rand(2, 4).T)),
    "bmm": (lambda a, b: descent.bmm(a, b), lambda: (rand(2, 3, 4), rand(2, 4, 2))),
    "dot": (lambda a, b: descent.dot(a, b), lambda: (rand(4), rand(4))),
    "mv": (lambda a, b: descent.mv(a, b), lambda: (rand(3, 4), rand(4))),
    "view": (lambda a: a.view(6, 2), lambda: (rand(3, 4),)),
    "_unsafe_view": (lambda a: descent._unsafe_view(a * 1, [12]), lambda: (rand(3, 4),)),
    "reshape": (lambda a: a.T.reshape(12), lambda: (rand(3, 4),)),
    "transpose": (lambda a: a.transpose(0, 2), lambda: (rand(2, 3, 4),)),
    "t": (lambda a: a.t(), lambda: (rand(3, 4),)),
    "permute": (lambda a: a.permute(2, 0, 1), lambda: (rand(2, 3, 4),)),
    "expand": (lambda a: a.expand(2, 3, 4), lambda: (rand(3, 1),)),
    "slice": (lambda a: a[:, 1:5:2], lambda: (rand(3, 6),)),
    "select": (lambda a: a[1], lambda: (rand(3, 6),)),
    "unsqueeze": (lambda a: a.unsqueeze(1), lambda: (rand(3, 6),)),
    "alias": (lambda a: a[...] * 2, lambda: (rand(3, 6),)),
    "lift_fresh": (lambda a: descent.lift_fresh(a * 1) * 2, lambda: (rand(3),)),
    "contiguous": (lambda a: a.T.contiguous(), lambda: (rand(3, 6),)),
    "clone": (lambda a: a.clone(), lambda: (rand(3, 6),)),
    "to": (lambda a: a.to(descent.float64), lambda: (rand(3, 2),)),
    "_to_copy": (lambda a: descent._to_copy(a, dtype=descent.float64), lambda: (rand(3, 2),)),
    "add_": (lambda a, b: (a * 1).add_(b, alpha=2), lambda: (rand(3, 2), rand(2))),
    "sub_": (lambda a, b: (a * 1).sub_(b), lambda: (rand(3, 2), rand())),
    "mul_": (lambda a, b: (a * 1).mul_(b), lambda: (rand(3), rand(3))),
    "div_": (lambda a, b: (a * 1).div_(b), lambda: (rand(3), rand(3, positive=True))),
    "copy_": (lambda a, b: (a * 1).copy_(b), lambda: (rand(3, 2), rand(2))),
    "fill_.Scalar": (lambda a: (a * 2).fill_(1.5) * a, lambda: (rand(3),)),
    "fill_.Tensor": (lambda a, v: (a * 2).fill_(v * 3) * a, lambda: (rand(3), rand())),
    "zero_": (lambda a: (a * 2).zero_() + a, lambda: (rand(3),)),
    "index": (lambda a: a[[2, 0, 2]] + a[:, descent.tensor([True, False, True, True])].sum(), lambda: (rand(3, 4),)),
    "index_put_": (lambda a, v: descent.index_put_(a * 1, [descent.tensor([0, 2])], v)
                   + descent.index_put_(a * 1, [None, descent.tensor([3, 1, 3])], v[:3], True),
                   lambda: (rand(3, 4), rand(4))),
}
# Issue 42's ops (a learner's first ops). A fixed condition for where and masked_fill: a mask read from the
# input would flip under the finite differences.
_COND = descent.tensor([[True, False, True, False], [False, True, True, False], [True, True, False, False]])
CASES.update({
    "log10": (lambda a: a.log10(), lambda: (rand(3, 2, positive=True),)),
    "log2": (lambda a: descent.log2(a.T), lambda: (rand(3, 2, positive=True),)),
    "clip": (lambda a: a.clip(-0.5, 0.7), lambda: (rand(4, 5),)),
    "clamp.Tensor": (lambda a, lo: a.clamp(min=lo) + a.clamp(max=lo * 0.1), lambda: (rand(3, 4), rand(4))),
    "clamp_": (lambda a: (a * 1).clamp_(-0.5, 0.7), lambda: (rand(4, 5),)),
    "narrow": (lambda a: a.narrow(1, 1, 2) * 2, lambda: (rand(3, 4),)),
    "squeeze": (lambda a: a.squeeze(), lambda: (rand(3, 1, 2),)),
    "squeeze.dim": (lambda a: a.squeeze(1), lambda: (rand(3, 1, 2),)),
    "squeeze.dims": (lambda a: a.squeeze((1, 2)), lambda: (rand(3, 1, 1),)),
    "stack": (lambda a, b: descent.stack([a, b.T], 1), lambda: (rand(3, 2), rand(2, 3))),
    "tril": (lambda a: a.tril(), lambda: (rand(3, 4),)),
    "triu": (lambda a: a.T.triu(-1), lambda: (rand(3, 4),)),
    "where.self": (lambda a, b: descent.where(_COND, a, b), lambda: (rand(3, 4), rand(4))),
    "where.ScalarOther": (lambda a: descent.where(_COND, a, 0.5), lambda: (rand(3, 4),)),
    "where.ScalarSelf": (lambda a: descent.where(_COND, 0.5, a), lambda: (rand(3, 4),)),
    "masked_fill": (lambda a: a.masked_fill(_COND, 0.25), lambda: (rand(3, 4),)),
    "var": (lambda a: a.var(), lambda: (rand(3, 4),)),
    "var.dim": (lambda a: a.var(1, keepdim=True), lambda: (rand(3, 4),)),
    "var.correction": (lambda a: a.var(0, correction=0), lambda: (rand(3, 4),)),
    "std": (lambda a: a.std(False), lambda: (rand(3, 4),)),
    "std.dim": (lambda a: a.std(0), lambda: (rand(3, 4),)),
    "std.correction": (lambda a: a.std(dim=[0, 1], correction=2), lambda: (rand(3, 4),)),
    "linalg_vector_norm": (lambda a: descent.ops.aten.linalg_vector_norm(a, 2, [1]) + a.norm(p=3),
                           lambda: (rand(3, 4),)),
    "sort": (lambda a: a.sort(1, True).values, lambda: (rand(3, 4),)),
    "topk": (lambda a: a.topk(2, 0).values, lambda: (rand(3, 4),)),
    "unfold": (lambda a: a.unfold(1, 3, 1), lambda: (rand(2, 5),)),
    "as_strided": (lambda a: (a * 1).as_strided((3, 2), (1, 2), 1), lambda: (rand(8),)),
    # random draws overwrite: their gradient is zeros (the draws, times 0, add nothing to the value)
    "uniform_": (lambda a: (a * 1).uniform_() * 0 + a, lambda: (rand(3),)),
    "normal_": (lambda a: (a * 1).normal_() * 0 + a, lambda: (rand(3),)),
    "random_": (lambda a: (a * 1).random_(0, 5) * 0 + a, lambda: (rand(3),)),
})
CASES.update(nn_op_rows.GRADCHECK_CASES_NN)  # torch.nn's rows (tests/python/nn_op_rows.py)
# Ops whose results have no gradient (Note [Ops whose results have no gradient], derivatives.cpp), and
# where.Scalar, whose only tensor is its bool condition.
NO_GRADIENT = {"argmax", "argmin", "all", "all.dim", "any", "any.dim", "floor_divide", "multinomial", "isclose",
               "where.Scalar"}
DIFFERENTIABLE = sorted(k for k, op in OPS_BY_KEY.items()
                        if op["kind"] not in ("factory", "comparison", "read") and k not in NO_GRADIENT)


def test_every_differentiable_op_has_a_gradcheck_case():
    assert sorted(CASES) == DIFFERENTIABLE


@pytest.mark.parametrize("name", DIFFERENTIABLE)
def test_gradcheck(name):
    f, inputs = CASES[name]
    descent.manual_seed(hash(name) % 1000)
    assert gradcheck(f, inputs())


# Ops whose formulas call only differentiable ops: their second derivatives too.
# Left out: the ops whose gradient for some input is constant zeros (no graph to differentiate again).
TWICE = [n for n in DIFFERENTIABLE if n not in ("copy_", "fill_.Scalar", "fill_.Tensor", "zero_", "threshold_backward",
                                                 "uniform_", "normal_", "random_")]


@pytest.mark.parametrize("name", TWICE)
def test_gradgradcheck(name):
    f, inputs = CASES[name]
    descent.manual_seed(hash(name) % 1000)
    assert gradgradcheck(f, inputs())


def test_gradcheck_catches_a_wrong_formula():
    x = rand(3)
    with pytest.raises(GradcheckError, match="Jacobian mismatch for output 0 with respect to input 0"):
        gradcheck(lambda a: a.detach() * a, (x,))      # d(c*a)/da = c, but c = a here
    assert gradcheck(lambda a: a.detach() * a, (x,), raise_exception=False) is False


def test_second_derivative_of_a_cube():
    x = descent.tensor([2.0, -1.0], dtype=D, requires_grad=True)
    (g,) = grad((x ** 3).sum(), x, create_graph=True)
    assert g.tolist() == [12.0, 3.0] and g.requires_grad
    (gg,) = grad(g.sum(), x)
    assert gg.tolist() == [12.0, -6.0]


def test_double_backward_through_slice_and_select():
    x = rand(4)
    (g,) = grad(x[1:3].sum(), x, create_graph=True)
    assert g.tolist() == [0.0, 1.0, 1.0, 0.0]
    y = descent.tensor([1.0, 2.0, 3.0, 4.0], dtype=D, requires_grad=True)
    (g,) = grad((y[1:3] * y[1:3] * y[1:3]).sum(), y, create_graph=True)   # 3 y^2 on the slice
    assert g.tolist() == [0.0, 12.0, 27.0, 0.0]
    (gg,) = grad(g.sum(), y)                                               # 6 y on the slice
    assert gg.tolist() == [0.0, 12.0, 18.0, 0.0]


# [SECTION] In place through a view (Note [In-place on a view]) -----------------------------

def test_writing_into_a_view_records_copy_slices_on_the_base():
    x = descent.randn(3, 4, dtype=D, requires_grad=True)
    y = descent.randn(4, dtype=D, requires_grad=True)
    buf = x.clone()
    buf[1] = y * 2
    assert chain(buf) == "CopySlices(CloneBackward0(AccumulateGrad), MulBackward0(AccumulateGrad, None))"
    (buf * buf).sum().backward()
    g = 2 * buf.detach()
    assert x.grad[1].tolist() == [0.0] * 4 and x.grad[0].tolist() == g[0].tolist()  # row 1 no longer comes from x
    assert y.grad.tolist() == (g[1] * 2).tolist()


def test_an_in_place_op_through_a_view_is_differentiated_at_the_view():
    def f(x, y):
        buf = x * 1
        buf[:, 1:3].mul_(y[:2])
        view = buf[0]
        return (buf.sum() + (view * view).sum())
    assert gradcheck(f, (rand(3, 4), rand(4)))
    z = descent.zeros(3, dtype=D)
    w = rand(3)
    z[0] = w[0]                                            # a leaf that does not require grad, written through a view
    assert z.grad_fn.name() == "torch::autograd::CopySlices" and type(z.grad_fn).__name__ == "CopySlices"
    assert z.requires_grad


# [SECTION] A view read after its base was written (Note [A view's grad_fn after an in-place write]) ----------

# Each case: (code, the gradient PyTorch 2.11 gives). The first two are the
# cases the fidelity issue found wrong (x.grad [[1, 1], [0, 0]] and
# [[0, 1], [0, 1]] before the fix).
VIEW_AFTER_WRITE = [
    ("b = x * 1; v = b[0]; b.mul_(5); v.sum().backward()", [[5, 5], [0, 0]]),
    ("b = x * 1; c = b[:, 1]; b[0].mul_(7); c.sum().backward()", [[0, 7], [0, 1]]),
    ("b = x * 1; v = b[1]; w = v[1:]; b.mul_(3); w.sum().backward()", [[0, 0], [0, 3]]),
    ("b = x * 1; v = b[0]; b.mul_(2); b.mul_(3); (v * v).sum().backward()", [[72, 72], [0, 0]]),
    ("b = x * 1; v = b.t(); b[1].mul_(4); v[0].sum().backward()", [[1, 0], [4, 0]]),
    ("b = x * 1; v = b[0].expand(3, 2); b.mul_(2); v.sum().backward()", [[6, 6], [0, 0]]),
    ("b = x * 1; v = b[0]; v.mul_(2); b.mul_(5); v.sum().backward()", [[10, 10], [0, 0]]),
]


@pytest.mark.parametrize("code, want", VIEW_AFTER_WRITE)
def test_a_view_read_after_its_base_was_written_in_place_has_pytorchs_gradient(code, want):
    x = descent.ones(2, 2, requires_grad=True)
    exec(code, {"x": x, "descent": descent})
    assert x.grad.tolist() == want, code


def test_the_regenerated_grad_fn_is_as_strided_backward_into_the_bases_new_history():
    x = descent.ones(2, 2, requires_grad=True)
    b = x * 1
    v = b[0]
    assert chain(v) == "SelectBackward0(MulBackward0(AccumulateGrad, None))"
    b.mul_(5)
    assert chain(v) == "AsStridedBackward0(MulBackward0(MulBackward0(AccumulateGrad, None), None))"
    first = v.grad_fn
    assert v.grad_fn == first                      # made once per version, not at every read
    assert v.requires_grad and not v.is_leaf


def test_a_view_of_a_leaf_laid_out_transposed_gets_its_gradient_in_place():
    d = (descent.arange(4.0).reshape(2, 2) * 1).t().detach()   # a leaf with strides (1, 2), not a view
    d.requires_grad_()
    v = d[0]
    with descent.no_grad():
        d.mul_(2)                                  # bumps the version v shares
    assert v.grad_fn.name() == "AsStridedBackward0"
    v.sum().backward()
    assert d.grad.tolist() == [[1.0, 1.0], [0.0, 0.0]]


def test_a_view_of_a_tensor_without_history_joins_the_history_its_base_gains():
    b = descent.ones(3)
    v = b[0:2]
    w = descent.ones(3, requires_grad=True)
    assert not v.requires_grad
    b.mul_(w * 2)                                   # b now has a history; v holds part of it
    assert v.requires_grad and v.grad_fn.name() == "AsStridedBackward0"   # as PyTorch 2.11 printed
    (v * 3).sum().backward()
    assert w.grad.tolist() == [6.0, 6.0, 0.0]


def test_views_read_after_a_write_pass_gradcheck():
    def f(x):
        b = x * 1
        rows = b[1:]
        col = b[:, 0]
        b[0].mul_(x[1])
        b.mul_(2)
        return (rows * rows).sum() + (col * 3).sum()
    assert gradcheck(f, (rand(3, 2),))


def test_pow_with_only_the_exponent_requiring_grad():
    # PowBackward1 saves the exponent for the exponent's gradient too (it crashed reading it); torch 2.15:
    # e.grad = [0, log(2) * 2**3] for b = [0, 2], e = [2, 3]
    b = descent.tensor([0., 2.])
    e = descent.tensor([2., 3.], requires_grad=True)
    descent.pow(b, e).sum().backward()
    assert e.grad.tolist() == [0.0, descent.tensor(2.).log().item() * 8]
