"""AOT autograd: the joint graph partitioned into forward and backward (Note [Partitioning the joint graph]).

What AOTAutograd saves is reasoned from torch/_functorch/partitioners.py's default_partition (save what
the backward reads), not read off a run of torch: for relu(x @ w + b) * 2 -> sigmoid it is x, w, the relu
result and the sigmoid result.
"""
import numpy as np
import pytest

import descent
import descent._compile as dc


@pytest.fixture(autouse=True)
def cache(monkeypatch, tmp_path):
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))


def f(x, w, b):
    return ((x @ w + b).relu() * 2).sigmoid()


def leaves():
    descent.manual_seed(0)
    return [descent.randn(*s, requires_grad=True) for s in ((4, 3), (3, 5), (5,))]


def grads_of(fn, ts):
    for t in ts:
        t.grad = None
    out = fn(*ts)
    out.sum().backward()
    return out, [t.grad.clone() for t in ts]


@pytest.mark.parametrize("backend", ["aot_eager", "inductor"])
def test_one_compiled_node_and_eager_gradients_bit_for_bit(backend):
    ts = leaves()
    cf = descent.compile(f, backend=backend)
    grads_of(cf, ts)  # the capture
    out, got = grads_of(cf, ts)
    assert type(out.grad_fn).__name__ == "CompiledFunctionBackward"
    ref_out, want = grads_of(f, ts)
    assert all(np.array_equal(np.asarray(a), np.asarray(b)) for a, b in zip(got, want))
    assert np.array_equal(np.asarray(out.detach()), np.asarray(ref_out.detach()))
    run = next(iter(cf.entries.values())).run
    assert run.saved == ["sigmoid", "relu", "w_1", "x_1"]
    assert run.forward_graph.code.splitlines()[0] == "def forward(self, primals_1, primals_2, primals_3):"
    assert "return (sigmoid, sigmoid, relu, primals_2, primals_1)" in run.forward_graph.code
    bw = run.backward_graph.code
    assert bw.splitlines()[0] == "def forward(self, sigmoid, relu, primals_2, primals_1, tangents_1):"
    assert "torch.ops.aten.threshold_backward.default(" in bw and bw.count("torch.ops.aten.mm.default(") == 2
    assert "gradients bitwise equal to autograd's" in cf.explain()
    if backend == "inductor":
        assert len(run.kernels) == 2  # one in each graph


def test_a_module_s_parameters_are_lifted_to_primals():
    descent.manual_seed(1)
    lin = descent.nn.Linear(3, 4)
    cm = descent.compile(lambda x: lin(x).tanh())
    x = descent.randn(2, 3)
    for _ in range(2):
        lin.zero_grad()
        cm(x).sum().backward()
        got = [p.grad.clone() for p in lin.parameters()]
        lin.zero_grad()
        lin(x).tanh().sum().backward()
        assert all(np.array_equal(np.asarray(a), np.asarray(p.grad)) for a, p in zip(got, lin.parameters()))
    assert "AOT autograd: forward" in cm.explain()


def test_what_stays_a_replay():
    ts = leaves()
    with descent.no_grad():
        cf = descent.compile(f, backend="aot_eager")
        cf(*ts)
    assert "AOT autograd" not in cf.explain()
    cn = descent.compile(lambda x: (x.exp(), 3), backend="aot_eager")
    cn(ts[0])
    assert "AOT autograd off: the function's result is not a tensor" in cn.explain()
    out = cn(ts[0])[0]
    out.sum().backward()  # the replay records eager autograd's nodes
    assert type(out.grad_fn).__name__ == "ExpBackward0"


def test_a_compiled_module_trains_as_eager_does():
    """Three SGD steps of a small MLP, compiled and eager, from the same weights: the same bits."""
    def make():
        descent.manual_seed(2)
        return descent.nn.Sequential(descent.nn.Linear(4, 8), descent.nn.ReLU(), descent.nn.Linear(8, 1))
    descent.manual_seed(5)
    x, y = descent.randn(16, 4), descent.randn(16, 1)
    results = []
    for compiled in (False, True):
        model = make()
        run = descent.compile(model) if compiled else model
        opt = descent.optim.SGD(run.parameters(), lr=0.1)
        for _ in range(3):
            opt.zero_grad()
            loss = descent.nn.functional.mse_loss(run(x), y)
            loss.backward()
            opt.step()
        results.append([p.detach().clone() for p in model.parameters()])
        if compiled:
            assert run._orig_mod is model and len(run.entries) == 1  # one capture, two replays
            assert type(run(x).grad_fn).__name__ == "CompiledFunctionBackward"
    assert all(np.array_equal(np.asarray(a), np.asarray(b)) for a, b in zip(*results))
