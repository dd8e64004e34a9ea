"""What the floor-4 spans record for the app's graph panel (Note [The graph in
the trace] and Note [Naming the leaves], ui/graph.h): the inputs' shapes, the
data_ptr of the leaf each edge reaches, the gradients' shapes in and out, and
the names descent.tracing.run (under descent._app.run) joins to the leaves."""
import descent


def floor4(spans, name):
    return [s for s in spans if s["floor"] == 4 and s["name"] == name]


def test_a_recorded_node_and_its_run_carry_the_shapes_and_the_leaves():
    x = descent.ones(2, 3, requires_grad=True)
    c = descent.ones(3)
    with descent.trace() as t:
        loss = (x * c).sum()
        loss.backward()
    spans = t.result.spans()
    (mul,) = [s for s in floor4(spans, "aten::mul") if s["args"].get("graph") == "recorded"]
    assert mul["args"]["input_shapes"] == "[2, 3], [3]"
    assert mul["args"]["edge_data_ptrs"] == f"{hex(x.data_ptr())}, -"  # c does not require grad
    (run,) = floor4(spans, "autograd::engine::evaluate_function: MulBackward0")
    assert run["args"]["grads_in"] == "[2, 3]"
    assert run["args"]["grads_out"] == "[2, 3], None"  # no gradient along c's edge
    (acc,) = floor4(spans, "autograd::engine::evaluate_function: torch::autograd::AccumulateGrad")
    assert acc["args"]["grads_in"] == "[2, 3]" and "grads_out" not in acc["args"]  # it sends nothing on


def test_the_apps_run_names_the_leaves_by_data_ptr():
    from descent import _app
    r = _app.run("x = descent.ones(2, 2, requires_grad=True)\nmodel = descent.nn.Linear(2, 1)\n"
                 "y = x\nn = descent.ones(2)\nloss = model(x @ x).sum()\nloss.backward()")
    assert r["error"] == ""
    ns = _app.namespace()
    names = dict(e.split("=", 1) for e in r["trace"].metadata["autograd.leaf_names"].split("; "))
    assert sorted(names[hex(ns["x"].data_ptr())].split(", ")) == ["x", "y"]  # every name that holds it
    assert names[hex(ns["model"].weight.data_ptr())] == "model.weight"
    assert names[hex(ns["model"].bias.data_ptr())] == "model.bias"
    assert hex(ns["n"].data_ptr()) not in names  # requires no grad: no AccumulateGrad
