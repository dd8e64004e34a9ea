"""descent.compile: capture, guards, recompiles and graph breaks (Note [Guards], Note [Graph breaks]).

The failure messages are dynamo's TORCH_LOGS=recompiles texts (torch/_dynamo/guards.py, TensorGuards'
check_verbose: "tensor 'L['x']' size mismatch at index 0. expected 4, actual 8"; "GLOBAL_STATE changed:
grad_mode "), reasoned from PyTorch's source, not read off a run of torch.
"""
import pytest

import descent
import descent._compile as dc


@pytest.fixture(autouse=True)
def fresh(monkeypatch, tmp_path):
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    dc.reset()


def f(x, w, b):
    return (x @ w + b).relu() * 2


def xwb(n=4, dtype=descent.float32):
    descent.manual_seed(0)
    return descent.randn(n, 3, dtype=dtype), descent.randn(3, 5, dtype=dtype), descent.randn(5, dtype=dtype)


@pytest.mark.parametrize("backend", ["eager", "inductor"])
def test_first_call_captures_later_calls_replay(backend):
    cf = descent.compile(f, backend=backend)
    x, w, b = xwb()
    assert bool((cf(x, w, b) == f(x, w, b)).all())
    assert bool((cf(x, w, b) == f(x, w, b)).all())
    assert dc.counters["captures"] == 1 and dc.counters["cache_hits"] == 1
    assert len(cf.graphs) == 1 and "aten.mm.default" in cf.graphs[0].code


def test_the_function_body_does_not_run_on_a_hit():
    runs = []

    def g(x):
        runs.append(1)
        return x + 1
    cf = descent.compile(g, backend="eager")
    x = descent.ones(3)
    cf(x)
    cf(x)
    cf(x)
    assert len(runs) == 1


def test_guard_failures_name_the_guard():
    cf = descent.compile(f, backend="eager")
    x, w, b = xwb()
    cf(x, w, b)
    cf(descent.randn(8, 3), w, b)
    assert "tensor 'L['x']' size mismatch at index 0. expected 4, actual 8" in cf.explain()
    x64, w64, b64 = xwb(dtype=descent.float64)
    cf(x64, w64, b64)
    assert "tensor 'L['x']' dtype mismatch. expected Float, actual Double" in cf.explain()
    xr = descent.randn(8, 3).requires_grad_()
    cf(xr, w, b)
    assert "tensor 'L['x']' requires_grad mismatch. expected requires_grad=0" in cf.explain()
    with descent.no_grad():
        cf(xr, w, b)
    assert "GLOBAL_STATE changed: grad_mode" in cf.explain()
    assert dc.counters["recompiles"] == 4 and len(cf.entries) == 5
    cf(x, w, b)  # the first entry still holds
    assert dc.counters["cache_hits"] == 1


def test_strides_and_python_constants_are_guarded():
    cf = descent.compile(lambda x, s: x * s, backend="eager")
    x = descent.randn(3, 4)
    assert bool((cf(x, 2.0) == x * 2.0).all())
    assert bool((cf(x, 3.0) == x * 3.0).all())  # not the graph holding 2.0
    assert "L['s'] == 2.0" in cf.explain()
    xt = descent.randn(4, 3).t()
    assert bool((cf(xt, 3.0) == xt * 3.0).all())
    assert "stride mismatch at index 0. expected 4, actual 1" in cf.explain()


def test_backward_through_a_compiled_call():
    x, w, b = xwb()
    for t in (x, w, b):
        t.requires_grad_()
    cf = descent.compile(f)
    for _ in range(2):  # the capture, then a replay
        for t in (x, w, b):
            t.grad = None
        cf(x, w, b).sum().backward()
        got = [t.grad.clone() for t in (x, w, b)]
        for t in (x, w, b):
            t.grad = None
        f(x, w, b).sum().backward()
        assert all(bool((g == t.grad).all()) for g, t in zip(got, (x, w, b)))


def test_graph_breaks_run_eager_with_the_reason():
    def branchy(x):
        if x.sum() > 0:
            return x * 2
        return x - 1
    cf = descent.compile(branchy)
    pos, neg = descent.ones(3), -descent.ones(3)
    assert cf(pos).tolist() == [2.0, 2.0, 2.0]
    assert cf(neg).tolist() == [-2.0, -2.0, -2.0]  # eager: the other branch, not a stale graph
    assert "graph break: data-dependent" in cf.explain() and "_local_scalar_dense" in cf.break_reasons[0]
    assert not cf.graphs and dc.counters["graph_breaks"] == 1 and dc.counters["eager_calls"] >= 2
    with pytest.raises(dc.Unsupported, match="data-dependent"):
        descent.compile(branchy, fullgraph=True)(pos)


def test_bad_functions(capsys):
    def prints(x):
        print("inside")
        return x + 1
    cf = descent.compile(prints)
    x = descent.ones(2)
    cf(x)
    cf(x)
    assert capsys.readouterr().out == "inside\ninside\n"  # the print runs every call
    assert "print() is a side effect" in cf.break_reasons[0]

    def mutates(x):
        x.add_(1)
        return x * 2
    cm = descent.compile(mutates)
    y = descent.zeros(2)
    assert cm(y).tolist() == [2.0, 2.0] and y.tolist() == [1.0, 1.0]
    assert cm(y).tolist() == [4.0, 4.0] and y.tolist() == [2.0, 2.0]  # eager each call, the write kept
    assert "mutates its input 'x' in place (aten.add_.Tensor)" in cm.break_reasons[0]

    cd = descent.compile(lambda x: {"y": x})
    assert cd(x)["y"] is x
    assert "returned a dict" in cd.break_reasons[0]

    cc = descent.compile(lambda x: (x + 1, 3, None))
    out = cc(x)
    out2 = cc(x)
    assert out2[1:] == (3, None) and out2[0].tolist() == [2.0, 2.0] and len(cc.graphs) == 1

    co = descent.compile(lambda x, o: x + 1)
    co(x, object())
    assert "neither a tensor nor a Python constant" in co.explain()


def test_arguments_of_compile():
    x = descent.ones(2)

    @descent.compile(mode="reduce-overhead", fullgraph=True, dynamic=False)
    def g(x, y=None):
        return x + 1
    assert g(x).tolist() == [2.0, 2.0] and g(x=x).tolist() == [2.0, 2.0]
    assert g.__name__ == "g"
    with pytest.raises(RuntimeError, match="Unrecognized mode=fast, should be one of: default, reduce-overhead"):
        descent.compile(g, mode="fast")
    with pytest.raises(RuntimeError, match="Invalid backend: 'tvm'"):
        descent.compile(g, backend="tvm")
    with pytest.warns(UserWarning, match="graphs are static"):
        descent.compile(g, dynamic=True)
    seen = []

    def my_backend(gm, example_inputs):
        seen.append((gm, [tuple(t.shape) for t in example_inputs]))
        return gm.forward
    cb = descent.compile(lambda x: x.sin(), backend=my_backend)
    cb(x)
    assert seen[0][1] == [(2,)] and "aten.sin.default" in seen[0][0].code
    assert "backend=my_backend" in cb.explain()
    assert descent.compile(g, disable=True) is g


def test_recompile_limit():
    cf = descent.compile(lambda x: x + 1, backend="eager")
    with pytest.warns(UserWarning, match="recompile_limit"):
        for n in range(1, dc.recompile_limit + 3):
            assert cf(descent.ones(n)).tolist() == [2.0] * n
    assert len(cf.entries) == dc.recompile_limit and cf.eager_forever


def test_explain():
    text = dc.explain(f)(*xwb())
    assert text.startswith("descent.compile of f (") and "1 graph(s), 0 graph break(s)" in text
    assert "TENSOR_MATCH: check_tensor(L['x'], Float, device=cpu, requires_grad=False, size=[4, 3], stride=[3, 1])" in text


W = descent.ones(3)


def uses_global(x):
    return x * W


def test_a_rebound_global_or_closure_tensor_recompiles():
    global W
    cf = descent.compile(uses_global, backend="eager")
    x = descent.ones(3)
    assert cf(x).tolist() == [1.0, 1.0, 1.0]
    W.mul_(2)  # in place: the same tensor, the graph reads its new values
    assert cf(x).tolist() == [2.0, 2.0, 2.0] and len(cf.entries) == 1
    W = descent.full((3,), 5.0)  # rebound: a new object
    assert cf(x).tolist() == [5.0, 5.0, 5.0] and len(cf.entries) == 2
    assert "G['W'] is not the object the graph captured (ID_MATCH" in cf.explain()
    b = descent.ones(2)

    def closes(x):
        return x + b
    cc = descent.compile(closes, backend="eager")
    assert cc(descent.ones(2)).tolist() == [2.0, 2.0]
    b = descent.zeros(2)
    assert cc(descent.ones(2)).tolist() == [1.0, 1.0]
    assert "L['b'] is not the object" in cc.explain()
