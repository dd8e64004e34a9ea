"""Floor 4, autograd: the engine that walks the graph, and what stands around it.

- the engine: accumulation, retain_graph, create_graph, autograd.grad, hooks,
  retain_grad, and PyTorch's errors (freed graph, version counter, non-scalar
  output, in place on a leaf);
- grad mode: no_grad, enable_grad, set_grad_enabled, inference_mode;
- the trace: node creation and each node's execution on floor 4;
- a two-layer MLP trained with plain SGD, and (where torch is installed) its
  gradients beside PyTorch's;
- the reference-language pairs, and nodes as Python objects.

The graph each op records and gradcheck of every op are test_autograd.py's.
"""
import math
import os

import pytest

import descent
from descent.autograd import grad
from test_autograd import chain


# [SECTION] The engine ---------------------------------------------------------------------

def test_gradients_accumulate_over_two_backwards_with_retain_graph():
    x = descent.tensor([1.0, 2.0, 3.0], requires_grad=True)
    loss = (x * x).sum()
    loss.backward(retain_graph=True)
    assert x.grad.tolist() == [2.0, 4.0, 6.0]
    grad_object = x.grad
    loss.backward()
    assert x.grad.tolist() == [4.0, 8.0, 12.0]
    assert x.grad._is_same(grad_object), "accumulated in place: .grad keeps its identity"
    with pytest.raises(RuntimeError, match="Trying to backward through the graph a second time"):
        loss.backward()


def test_a_graph_without_saved_tensors_can_be_walked_twice():
    x = descent.tensor([1.0, 2.0], requires_grad=True)
    loss = (x + 1).sum()
    loss.backward()
    loss.backward()                                        # as in PyTorch: nothing was saved, nothing freed
    assert x.grad.tolist() == [2.0, 2.0]


def test_a_tensor_used_twice_gets_the_sum_of_its_gradients():
    x = descent.tensor([3.0], requires_grad=True)
    y = x * 2
    (y * y + y).sum().backward()                           # d/dx (4x^2 + 2x) = 8x + 2
    assert x.grad.tolist() == [26.0]


def test_broadcast_gradients_are_summed_to_the_input_shape():
    w = descent.ones(3, 4, requires_grad=True)
    b = descent.ones(4, requires_grad=True)
    s = descent.tensor(2.0, requires_grad=True)
    ((w + b) * s).sum().backward()
    assert w.grad.shape == (3, 4) and b.grad.tolist() == [6.0] * 4 and s.grad.item() == 24.0


def test_backward_errors_are_pytorchs():
    x = descent.randn(3, requires_grad=True)
    with pytest.raises(RuntimeError, match="grad can be implicitly created only for scalar outputs"):
        (x * 2).backward()
    with pytest.raises(RuntimeError, match="element 0 of tensors does not require grad and does not have a grad_fn"):
        descent.ones(2).sum().backward()
    with pytest.raises(RuntimeError, match=r"Mismatch in shape: grad_output\[0\] has a shape of"):
        (x * 2).backward(descent.ones(2))
    (x * 2).backward(descent.ones(3))
    assert x.grad.tolist() == [2.0, 2.0, 2.0]
    with pytest.raises(RuntimeError, match="One of the differentiated Tensors does not require grad"):
        grad((x * 2).sum(), descent.ones(3))
    z = descent.randn(3, requires_grad=True)
    with pytest.raises(RuntimeError, match="appears to not have been used in the graph"):
        grad((x * 2).sum(), z)
    assert grad((x * 2).sum(), [x, z], allow_unused=True)[1] is None


def test_grad_returns_gradients_and_leaves_dot_grad_alone():
    x = descent.tensor([1.0, 2.0], requires_grad=True)
    h = x * 3
    gx, gh = grad((h * h).sum(), [x, h])
    assert gx.tolist() == [18.0, 36.0] and gh.tolist() == [6.0, 12.0]
    assert x.grad is None


def test_modifying_a_saved_tensor_in_place_is_caught_by_the_version_counter():
    x = descent.tensor([1.0, 2.0], requires_grad=True)
    y = x.exp()
    z = y * 1                                              # y is saved by ExpBackward0 (its result)
    assert y._version == 0
    y.add_(1)                                              # allowed: y is not a leaf
    assert y._version == 1 and y.grad_fn.name() == "AddBackward0"
    with pytest.raises(RuntimeError, match=r"one of the variables needed for gradient computation has been modified "
                                           r"by an inplace operation: \[descent.FloatTensor \[2\]\], which is output 0 "
                                           r"of ExpBackward0, is at version 1; expected version 0 instead"):
        z.sum().backward()


@pytest.mark.parametrize("dtype, word", [("float64", "Double"), ("float16", "Half"), ("bfloat16", "BFloat16")])
def test_the_version_error_names_every_float_dtype_as_pytorch_does(dtype, word):
    x = descent.ones(3, dtype=getattr(descent, dtype), requires_grad=True)
    y = x.exp()
    z = y * 1
    y.mul_(2)
    with pytest.raises(RuntimeError, match=rf"\[descent.{word}Tensor \[3\]\], which is output 0 of ExpBackward0"):
        z.sum().backward()


def test_in_place_on_a_leaf_that_requires_grad_is_refused():
    x = descent.ones(3, requires_grad=True)
    with pytest.raises(RuntimeError, match="a leaf Variable that requires grad is being used in an in-place operation"):
        x.add_(1)
    with pytest.raises(RuntimeError, match="a view of a leaf Variable that requires grad is being used in an in-place"):
        x[0:2].mul_(2)
    with descent.no_grad():
        x.add_(1)                                          # what an optimizer step does
    assert x.tolist() == [2.0, 2.0, 2.0] and x.is_leaf


def test_in_place_on_a_non_leaf_moves_its_history():
    x = descent.tensor([1.0, 2.0], requires_grad=True)
    y = x * 2
    y.mul_(y.detach() + 1)                                  # y = 2x * (2x + 1), the second factor a constant
    assert chain(y) == "MulBackward0(MulBackward0(AccumulateGrad, None), None)"
    y.sum().backward()
    assert x.grad.tolist() == [6.0, 10.0]


def test_requires_grad_can_change_only_on_a_leaf():
    x = descent.ones(2, requires_grad=True)
    y = x * 2
    with pytest.raises(RuntimeError, match="you can only change requires_grad flags of leaf variables"):
        y.requires_grad = False
    assert y.requires_grad_() is y                          # already true: no-op
    d = y.detach()
    assert not d.requires_grad and d.is_leaf and d.data_ptr() == y.data_ptr()


# [SECTION] Hooks and retain_grad ------------------------------------------------------------

def test_tensor_hooks_see_and_replace_gradients():
    x = descent.tensor([1.0, 2.0], requires_grad=True)
    y = x * 3
    seen = []
    h = y.register_hook(lambda g: seen.append(g.tolist()))
    x.register_hook(lambda g: g * 10)
    (y * y).sum().backward()
    assert seen == [[6.0, 12.0]]
    assert x.grad.tolist() == [180.0, 360.0]
    h.remove()
    x.grad = None
    (x * 1).sum().backward()
    assert seen == [[6.0, 12.0]] and x.grad.tolist() == [10.0, 10.0]


def test_a_hook_that_raises_stops_backward_with_its_exception():
    x = descent.ones(2, requires_grad=True)

    def bad(g):
        raise KeyError("from the hook")
    (x * 1).register_hook(bad)
    y = x * 2
    y.register_hook(bad)
    with pytest.raises(KeyError, match="from the hook"):
        y.sum().backward()
    z = x * 2
    z.register_hook(lambda g: "not a tensor")
    with pytest.raises(TypeError, match="must return None or a Tensor"):
        z.sum().backward()


def test_node_hooks_and_retain_grad():
    x = descent.tensor([1.0, 2.0], requires_grad=True)
    y = x * x
    y.retain_grad()
    calls = []
    y.grad_fn.register_hook(lambda gi, go: calls.append(("post", [g.tolist() for g in gi], go[0].tolist())))
    y.grad_fn.register_prehook(lambda go: calls.append(("pre", go[0].tolist())))
    y.sum().backward()
    assert calls == [("pre", [1.0, 1.0]), ("post", [[1.0, 2.0], [1.0, 2.0]], [1.0, 1.0])]  # g*other, g*self
    assert y.retains_grad and y.grad.tolist() == [1.0, 1.0]
    assert x.grad.tolist() == [2.0, 4.0]


def test_retain_grad_follows_an_in_place_op():
    x = descent.tensor([1.0, 2.0], requires_grad=True)
    y = x * 2
    y.retain_grad()
    y.mul_(3)                                             # y's history moves onto a new MulBackward0
    (y * y).sum().backward()
    assert y.grad.tolist() == [12.0, 24.0]                # the gradient of y after the write
    del y                                                 # the node it was retained on outlives it
    import gc
    gc.collect()


# [SECTION] Grad mode ---------------------------------------------------------------------------

def test_no_grad_enable_grad_set_grad_enabled_and_inference_mode():
    x = descent.ones(2, requires_grad=True)
    with descent.no_grad():
        assert not (x * 2).requires_grad
        with descent.enable_grad():
            assert (x * 2).requires_grad
    with descent.set_grad_enabled(False):
        assert (x * 2).grad_fn is None

    @descent.no_grad()
    def f(t):
        return t * 2
    assert not f(x).requires_grad
    with descent.inference_mode():
        y = x * 2
    assert not y.requires_grad and y.is_inference()
    assert (x * 2).requires_grad


def test_inference_tensors_outside_the_mode_refuse_what_pytorch_refuses():
    # Note [Inference tensors outside inference mode]; the words are PyTorch 2.11's (H200 host).
    with descent.inference_mode():
        t = descent.ones(2)
        t.add_(1)                                         # inside the mode: allowed
    with pytest.raises(RuntimeError, match=r"^Inplace update to inference tensor outside InferenceMode is not allowed"):
        t.add_(1)
    assert t.tolist() == [2.0, 2.0]                       # refused before anything was written
    with pytest.raises(RuntimeError, match=r"^Setting requires_grad=True on inference tensor outside InferenceMode"):
        t.requires_grad_()
    with pytest.raises(RuntimeError, match=r"^Inference tensors do not track version counter\.$"):
        t._version
    w = descent.ones(2, requires_grad=True)
    with pytest.raises(RuntimeError, match=r"^Inference tensors cannot be saved for backward"):
        w * t
    assert (t * 2).tolist() == [4.0, 4.0] and (w + t).requires_grad   # add saves nothing: allowed, as in PyTorch
    n = descent.ones(2)
    with descent.inference_mode():
        v = n[0:1]
    assert not v.is_inference() and t[0:1].is_inference() and t.detach().is_inference()


# [SECTION] The trace ---------------------------------------------------------------------------

def test_the_trace_shows_the_graph_recorded_and_walked_on_floor_4():
    x = descent.ones(2, requires_grad=True)
    with descent.trace() as t:
        loss = (x * x).sum()
        loss.backward()
    spans = t.result.spans()
    floor4 = [s for s in spans if s["floor_name"] == "autograd"]
    recorded = {s["args"]["node"]: s["args"] for s in floor4 if s["args"].get("graph") == "recorded"}
    assert recorded["MulBackward0"]["edges"] == "AccumulateGrad, AccumulateGrad"
    assert recorded["MulBackward0"]["saved"] == "self, other"
    assert recorded["SumBackward0"]["edges"] == "MulBackward0"
    walked = [s["name"] for s in floor4 if s["name"].startswith("autograd::engine::evaluate_function")]
    assert walked == ["autograd::engine::evaluate_function: SumBackward0",   # one root: no GraphRoot, as PyTorch
                      "autograd::engine::evaluate_function: MulBackward0",
                      "autograd::engine::evaluate_function: torch::autograd::AccumulateGrad"]   # PyTorch's name()
    by_id = {s["id"]: s for s in spans}
    mul_node = next(s for s in floor4 if s["name"].endswith("MulBackward0"))
    beneath = [s["name"] for s in spans if s["parent"] == mul_node["id"] and s["floor_name"] == "dispatch"]
    # the formula's kernels run beneath its node, and so does the sum of x's two gradients, in place (InputBuffer)
    assert beneath == ["aten::mul", "aten::mul", "aten::add_"]
    assert by_id[mul_node["parent"]]["name"] == "_run_backward"   # the engine records no span of its own


def test_several_roots_start_at_a_graph_root_and_create_graph_sums_out_of_place():
    x = descent.ones(2, requires_grad=True)
    with descent.trace() as t:
        descent.autograd.backward([(x * 2).sum(), (x * 3).sum()])
    walked = [s["name"] for s in t.result.spans() if s["name"].startswith("autograd::engine::evaluate_function")]
    assert walked[0] == "autograd::engine::evaluate_function: torch::autograd::GraphRoot"
    assert x.grad.tolist() == [5.0, 5.0]
    y = x * x
    (g,) = descent.autograd.grad(y.sum(), x, create_graph=True)
    assert g.grad_fn.name() == "AddBackward0" and g.tolist() == [2.0, 2.0]


def test_a_device_graphs_nodes_run_on_the_devices_own_thread():
    # Note [Which thread runs a node]: as PyTorch's engine, CPU nodes on the caller, device nodes on a worker.
    x = descent.ones(3, device="sim:0", requires_grad=True)
    c = descent.ones(3, requires_grad=True)
    with descent.trace() as t:
        ((x * x).sum().cpu() + (c * 2).sum()).backward()
    spans = t.result.spans()
    caller = next(s["thread"] for s in spans if s["name"] == "_run_backward")
    ran = [(s["args"]["node"], s["thread"] == caller) for s in spans
           if s["name"].startswith("autograd::engine::evaluate_function")]
    on_caller = [n for n, here in ran if here]
    elsewhere = [n for n, here in ran if not here]
    # CPU gradients: the add, the CPU sum and mul, c's AccumulateGrad, and the copy back from sim:0
    assert sorted(on_caller) == ["AccumulateGrad", "AddBackward0", "MulBackward0", "SumBackward0", "ToCopyBackward0"]
    assert elsewhere == ["SumBackward0", "MulBackward0", "AccumulateGrad"]   # sim:0's, in order, on its thread
    by_id = {s["id"]: s for s in spans}
    flows = [(a, b) for a, b, name in t.result.flows() if name == "backward"]   # the app follows these down
    assert len(flows) == 3 and all(by_id[a]["name"] == "_run_backward" for a, b in flows)
    assert x.grad.cpu().tolist() == [2.0, 2.0, 2.0] and c.grad.tolist() == [2.0, 2.0, 2.0]


def test_a_hook_that_raises_on_a_device_thread_raises_in_the_caller():
    x = descent.ones(3, device="sim:0", requires_grad=True)
    y = x * 2

    def hook(g):
        raise KeyError("raised on the device's thread")
    y.register_hook(hook)
    with pytest.raises(KeyError, match="raised on the device's thread"):
        y.sum().backward()
    (x * 3).sum().backward()                       # the device's thread goes on serving
    assert x.grad.cpu().tolist() == [3.0, 3.0, 3.0]


def test_an_op_with_nothing_to_record_says_so():
    x = descent.ones(2)
    with descent.trace() as t:
        x * x
        with descent.no_grad():
            descent.ones(2, requires_grad=True) * 2
    reasons = [s["args"]["graph"] for s in t.result.spans() if s["floor_name"] == "autograd"]
    assert reasons == ["none: no input requires grad", "none: grad mode is off"]


def test_a_comparison_runs_its_autograd_kernel_and_what_it_calls_skips_autograd():
    x = descent.ones(2, requires_grad=True)
    with descent.trace() as t:
        r = x == 1
    assert not r.requires_grad and r.grad_fn is None
    spans = t.result.spans()
    floor4 = [s for s in spans if s["floor_name"] == "autograd"]
    assert [s["args"]["graph"] for s in floor4] == ["none: not differentiable (a bool result)"]
    to = next(s for s in spans if s["name"] == "aten::to")
    assert "kernel=Autograd" not in str(to["args"]) and "Autograd" not in to["args"]["keyset"]


# [SECTION] Training ----------------------------------------------------------------------------

def _dataset(n=64, seed=3):
    """y = sin(2 x0) + x1^2 / 2, 64 points of [-1, 1]^2."""
    descent.manual_seed(seed)
    x = descent.rand([n, 2]) * 2 - 1
    cols = x.tolist()
    target = descent.tensor([[math.sin(2 * a) + b * b / 2] for a, b in cols])
    return x, target


def _mlp(seed=5, hidden=16):
    descent.manual_seed(seed)
    w1 = (descent.randn(2, hidden) * 0.5).requires_grad_()
    b1 = descent.zeros(hidden, requires_grad=True)
    w2 = (descent.randn(hidden, 1) * 0.5).requires_grad_()
    b2 = descent.zeros(1, requires_grad=True)
    return [w1, b1, w2, b2]


def _loss(params, x, y):
    w1, b1, w2, b2 = params
    return (((x @ w1 + b1).relu() @ w2 + b2) - y).pow(2).mean()


def test_a_two_layer_mlp_learns_with_plain_sgd():
    x, y = _dataset()
    params = _mlp()
    first = _loss(params, x, y).item()
    for _ in range(200):
        loss = _loss(params, x, y)
        for p in params:
            p.grad = None
        loss.backward()
        with descent.no_grad():
            for p in params:
                p -= 0.1 * p.grad
    last = _loss(params, x, y).item()
    assert last < 0.05 and last < first / 5, (first, last)


def test_the_mlps_gradients_equal_pytorchs():
    torch = pytest.importorskip("torch")
    x, y = _dataset()
    params = _mlp()
    _loss(params, x, y).backward()
    tp = [torch.tensor(p.tolist(), requires_grad=True) for p in params]
    tx, ty = torch.tensor(x.tolist()), torch.tensor(y.tolist())
    w1, b1, w2, b2 = tp
    (((tx @ w1 + b1).relu() @ w2 + b2) - ty).pow(2).mean().backward()
    for p, t in zip(params, tp):
        mine, theirs = p.grad.reshape(-1).tolist(), t.grad.reshape(-1).tolist()
        for a, b in zip(mine, theirs):
            assert abs(a - b) <= 1e-5 * max(1.0, abs(b)), (a, b)


# [SECTION] The reference-language pair -------------------------------------------------------

@pytest.mark.parametrize("seed", [1, 7, 12])
def test_the_linear_relu_mse_pair_agrees(seed):
    from descent.pairs import verify_pairs
    verdicts = verify_pairs(seed)
    assert [v["check"] for v in verdicts] == ["loss", "d loss / d x", "d loss / d w", "d loss / d b",
                                              "gradcheck (autograd)", "gradcheck (by hand)"]
    assert all(v["passed"] for v in verdicts), verdicts


def test_the_pair_check_fails_for_a_wrong_hand_written_backward(monkeypatch):
    from descent import pairs
    real = pairs.mlp_by_hand

    def wrong(x, w, b, y):
        loss, grads = real(x, w, b, y)
        grads["b"] = grads["b"] * 1.01                     # a backward that is almost right
        return loss, grads
    monkeypatch.setattr(pairs, "mlp_by_hand", wrong)
    failed = [v["check"] for v in pairs.verify_pairs() if not v["passed"]]
    assert failed == ["d loss / d b", "gradcheck (by hand)"]


def test_descent_verify_autograd_runs_the_pairs():
    import subprocess
    import sys
    cli = os.environ.get("DESCENT_CLI")
    cmd = [cli] if cli else [sys.executable, "-m", "descent"]
    r = subprocess.run(cmd + ["verify", "--autograd"], capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip().endswith("6 of 6 verdicts hold")


# [SECTION] Nodes as Python objects (Note [A class per node]) ----------------------------------

def test_a_node_has_a_class_of_its_own_and_one_object():
    x = descent.ones(2, requires_grad=True)
    w = descent.ones(2, requires_grad=True)
    y = x * w
    assert type(y.grad_fn).__name__ == "MulBackward0" and repr(type(y.grad_fn)) == "<class 'MulBackward0'>"
    assert isinstance(y.grad_fn, descent._C.Node) and y.grad_fn is y.grad_fn
    acc = y.grad_fn.next_functions[0][0]
    # PyTorch 2.11 (H200 host): the class is AccumulateGrad, name() the C++ one
    assert type(acc).__name__ == "AccumulateGrad" and acc.name() == "torch::autograd::AccumulateGrad"
    assert acc is y.grad_fn.next_functions[0][0] and acc.variable is x
    assert (x * 1).grad_fn._sequence_nr() > y.grad_fn._sequence_nr()   # made later on this thread
    assert repr(y) == "tensor([1., 1.], grad_fn=<MulBackward0>)"


def test_a_node_shows_what_it_saved_by_pytorchs_names():
    x = descent.ones(2, requires_grad=True)
    w = descent.full([2], 3.0, requires_grad=True)
    y = x * w
    assert y.grad_fn._saved_self is x and y.grad_fn._saved_other is w
    z = x.exp()
    assert z.grad_fn._saved_result.tolist() == z.tolist()
    with pytest.raises(AttributeError, match="'MulBackward0' object has no attribute '_saved_result'"):
        y.grad_fn._saved_result
    y.sum().backward()
    with pytest.raises(RuntimeError, match="Trying to backward through the graph a second time"):
        y.grad_fn._saved_self


def test_indexing_with_an_ellipsis_is_an_alias():
    # PyTorch 2.11 (tests/python/data/torch_facts_h200.txt): x[...] is AliasBackward0, x[:] a slice
    x = descent.ones(2, requires_grad=True)
    assert type(x[...].grad_fn).__name__ == "AliasBackward0" and x[...]._base is x
    assert type(x[:].grad_fn).__name__ == "SliceBackward0"
