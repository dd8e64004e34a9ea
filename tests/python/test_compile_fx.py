"""descent.fx's Graph and make_fx (Note [Capturing by running], descent/fx/experimental/proxy_tensor.py).

The expected texts are torch.fx's formats, from torch/fx/graph.py (python_code, Node.format_node) and
print_tabular's tabulate 'simple' layout; the placeholder names (x_1) are make_fx's.
"""
import operator

import pytest

import descent
from descent.fx import Graph, GraphModule
from descent.fx.experimental.proxy_tensor import DataDependentError, make_fx


def xwb():
    descent.manual_seed(0)
    return descent.randn(4, 3), descent.randn(3, 5), descent.randn(5)


def test_python_code_and_tabular():
    gm = make_fx(lambda x, w, b: (x @ w + b).relu())(*xwb())
    assert gm.code == (
        "def forward(self, x_1, w_1, b_1):\n"
        "    mm = torch.ops.aten.mm.default(x_1, w_1);  x_1 = w_1 = None\n"
        "    add = torch.ops.aten.add.Tensor(mm, b_1);  mm = b_1 = None\n"
        "    relu = torch.ops.aten.relu.default(add);  add = None\n"
        "    return relu")
    assert gm.graph.tabular().splitlines() == [
        "opcode         name    target             args        kwargs",
        "-------------  ------  -----------------  ----------  ------",
        "placeholder    x_1     x_1                ()          {}",
        "placeholder    w_1     w_1                ()          {}",
        "placeholder    b_1     b_1                ()          {}",
        "call_function  mm      aten.mm.default    (x_1, w_1)  {}",
        "call_function  add     aten.add.Tensor    (mm, b_1)   {}",
        "call_function  relu    aten.relu.default  (add,)      {}",
        "output         output  output             (relu,)     {}",
    ]
    lines = str(gm.graph).splitlines()
    assert lines[0] == "graph(x_1, w_1, b_1):"
    assert "    %mm : [num_users=1] = call_function[target=aten.mm.default](args = (%x_1, %w_1), kwargs = {})" in lines
    assert lines[-1] == "    return %relu"


def test_the_graph_runs_and_matches_eager():
    x, w, b = xwb()
    f = lambda x, w, b: ((x @ w + b) * 2).sum(1)  # noqa: E731
    gm = make_fx(f)(x, w, b)
    assert bool((gm(x, w, b) == f(x, w, b)).all())
    x2 = descent.randn(4, 3)
    assert bool((gm(x2, w, b) == f(x2, w, b)).all())  # the graph holds no values of x


def test_numbers_closures_and_repeated_names():
    x, w, _ = xwb()
    gm = make_fx(lambda x: (x * 2 + w.sum()) * 3)(x)
    code = gm.code
    assert "torch.ops.aten.mul.Tensor(x_1, 2)" in code  # a wrapped number stays a number
    assert "_tensor_constant0 = self._tensor_constant0" in code  # the closed-over w
    assert "mul_1 = torch.ops.aten.mul.Tensor(add, 3)" in code  # a second mul is mul_1
    assert gm.graph.find_nodes(op="get_attr")[0].target == "_tensor_constant0"
    assert bool((gm(x) == (x * 2 + w.sum()) * 3).all())


def test_linear_decomposes_and_multi_output_ops_get_getitem():
    x, w, b = xwb()
    gm = make_fx(lambda x: descent.nn.functional.linear(x, w.t(), b))(x)
    targets = [str(n.target) for n in gm.graph.nodes if n.op == "call_function"]
    assert "aten.addmm.default" in targets or "aten.mm.default" in targets
    gm = make_fx(lambda x: descent.max(x, 1))(x)
    getitems = [n for n in gm.graph.nodes if n.target is operator.getitem]
    assert [n.args[1] for n in getitems] == [0, 1]
    values, indices = gm(x)
    ref = descent.max(x, 1)
    assert bool((values == ref.values).all()) and bool((indices == ref.indices).all())


def test_data_dependent_and_bad_returns():
    x, _, _ = xwb()
    with pytest.raises(DataDependentError, match="_local_scalar_dense"):
        make_fx(lambda x: x * 2 if x.sum() > 0 else x)(x)
    with pytest.raises(TypeError, match="returned a dict"):
        make_fx(lambda x: {"y": x})(x)
    with pytest.raises(NotImplementedError, match="tracing_mode='symbolic'"):
        make_fx(lambda x: x, tracing_mode="symbolic")


def test_a_graph_built_by_hand():
    g = Graph()
    a = g.placeholder("a")
    n = g.call_function(descent._ops.op_overload("aten::neg"), (a,))
    g.output(n)
    gm = GraphModule({}, g)
    assert gm.code.splitlines()[1] == "    neg = torch.ops.aten.neg.default(a);  a = None"
    assert gm(descent.ones(2)).tolist() == [-1.0, -1.0]
    assert "class GraphModule(torch.nn.Module):" in gm.print_readable(print_output=False)


def test_a_dtype_argument_in_the_code_and_its_replay():
    x = descent.randn(3, 4)
    gm = make_fx(lambda x: (x * 2.0).sum(dtype=descent.float64))(x)
    assert "dtype = torch.float64" in gm.code  # torch's name, not descent.float64
    assert gm(x).dtype == descent.float64 and gm(x).item() == (x * 2.0).sum(dtype=descent.float64).item()
