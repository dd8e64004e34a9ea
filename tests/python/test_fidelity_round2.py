"""What a curious learner checks beside torch (issue "No false lessons, round 2"):
each value, flag and message here is what PyTorch 2.11 gives for the same code.

- grad mode: set_grad_enabled(False) called as a function switches at once;
- casts to an integer or bool dtype record no graph;
- max()'s backward with a NaN and with ties (evenly_distribute_backward);
- pow's gradients where the formula is 0 * inf (base 0, exponent 0);
- a tensor hook that changes the gradient's shape or dtype;
- numpy() of a tensor that requires grad;
- freeing a graph a student built over 150k steps (Note [Freeing a graph without recursion]).
"""
import math

import pytest

import descent


def test_set_grad_enabled_as_a_call_switches_grad_mode_at_once():
    x = descent.ones(3, requires_grad=True)
    try:
        descent.set_grad_enabled(False)
        assert not descent.is_grad_enabled()
        assert not (x * 2).requires_grad
    finally:
        descent.set_grad_enabled(True)
    assert (x * 2).requires_grad


def test_set_grad_enabled_as_a_block_and_a_decorator_restores_the_mode():
    x = descent.ones(3, requires_grad=True)
    with descent.set_grad_enabled(False):
        assert not (x * 2).requires_grad
    assert descent.is_grad_enabled()
    with descent.no_grad():
        with descent.set_grad_enabled(True):
            assert (x * 2).requires_grad
        assert not descent.is_grad_enabled()

    @descent.set_grad_enabled(False)
    def f():
        return (x * 2).requires_grad

    assert descent.is_grad_enabled(), "making the decorator leaves grad mode as it was"
    assert f() is False
    assert descent.is_grad_enabled()


@pytest.mark.parametrize("cast", [lambda x: x.long(), lambda x: x.to(descent.int32), lambda x: x.to(descent.bool),
                                  lambda x: x.int(), lambda x: x.bool()])
def test_a_cast_to_an_integer_dtype_does_not_require_grad(cast):
    x = descent.tensor([1.5, -2.0], requires_grad=True)
    y = cast(x)
    assert not y.requires_grad
    assert y.grad_fn is None
    with pytest.raises(RuntimeError, match=r"^element 0 of tensors does not require grad and does not have a grad_fn$"):
        y.sum().backward() if y.dtype != descent.bool else y.float().sum().backward()


def test_a_cast_to_a_floating_dtype_keeps_its_node():
    x = descent.tensor([1.5, -2.0], requires_grad=True)
    y = x.double()
    assert type(y.grad_fn).__name__ == "ToCopyBackward0"
    y.sum().backward()
    assert x.grad.tolist() == [1.0, 1.0]


def test_the_trace_says_why_an_integer_cast_recorded_no_graph():
    x = descent.tensor([1.5, -2.0], requires_grad=True)
    with descent.tracing.trace() as t:
        x.long()
    graphs = [s["args"].get("graph") for s in t.result.spans()]
    assert "none: the result's dtype has no gradients" in graphs, graphs


@pytest.mark.parametrize("values, grad", [
    ([1.0, math.nan], [0.0, 1.0]),             # torch: the NaN is the maximum, and gets the gradient
    ([math.nan, 2.0, math.nan], [0.5, 0.0, 0.5]),
    ([2.0, 2.0, 1.0], [0.5, 0.5, 0.0]),        # ties share it evenly
    ([3.0], [1.0]),
])
def test_max_backward_with_nans_and_ties_is_pytorchs(values, grad):
    x = descent.tensor(values, requires_grad=True)
    x.max().backward()
    assert x.grad.tolist() == grad


def test_pow_gradients_where_the_formula_is_zero_times_inf_are_zero():
    base = descent.tensor([0.0, 0.0, 2.0, 0.0], requires_grad=True)
    exp = descent.tensor([2.0, 0.0, 3.0, -1.0], requires_grad=True)
    (base ** exp).sum().backward()
    # torch 2.11: base.grad [0, 0, 12, -inf], exp.grad [0, 0, 8 log 2, -inf] (0^-1 * log 0: y < 0 is not masked)
    assert base.grad.tolist()[:3] == [0.0, 0.0, 12.0] and base.grad.tolist()[3] == -math.inf
    e = exp.grad.tolist()
    assert e[:2] == [0.0, 0.0] and math.isclose(e[2], 8 * math.log(2), rel_tol=1e-6) and e[3] == -math.inf
    b = descent.tensor([0.0, 1.0], requires_grad=True)
    (0.0 ** b).sum().backward()  # PowBackward2: base 0, exponent >= 0
    assert b.grad.tolist() == [0.0, 0.0]


def test_a_hook_that_changes_the_gradients_shape_is_refused_on_a_leaf_and_a_non_leaf():
    x = descent.ones(3, requires_grad=True)
    x.register_hook(lambda g: descent.ones(2))
    with pytest.raises(RuntimeError, match=r"^hook '<lambda>' has changed the size of value$"):
        (x * 2).sum().backward()
    assert x.grad is None

    y = descent.ones(3, requires_grad=True) * 2

    def widen(g):
        return descent.ones(4)

    y.register_hook(widen)
    with pytest.raises(RuntimeError, match=r"^hook 'widen' has changed the size of value$"):
        y.sum().backward()


def test_a_hook_that_changes_the_gradients_dtype_is_refused():
    x = descent.ones(3, requires_grad=True)
    x.register_hook(lambda g: g.double())
    with pytest.raises(RuntimeError, match=r"^hook '<lambda>' has changed the type of value "
                                           r"\(was CPUFloatType got CPUDoubleType\)$"):
        (x * 2).sum().backward()


def test_a_hook_may_replace_the_gradient_with_one_of_the_same_kind():
    x = descent.ones(3, requires_grad=True)
    x.register_hook(lambda g: g * 10)
    (x * 2).sum().backward()
    assert x.grad.tolist() == [20.0, 20.0, 20.0]


def test_numpy_of_a_tensor_that_requires_grad_is_refused():
    np = pytest.importorskip("numpy")
    x = descent.ones(2, requires_grad=True)
    msg = r"^Can't call numpy\(\) on Tensor that requires grad. Use tensor.detach\(\).numpy\(\) instead.$"
    with pytest.raises(RuntimeError, match=msg):
        x.numpy()
    with pytest.raises(RuntimeError, match=msg):
        np.asarray(x)
    assert x.detach().numpy().tolist() == [1.0, 1.0]


def test_a_graph_built_over_150k_steps_is_freed_without_a_crash():
    w = descent.ones(1, requires_grad=True)
    total = descent.zeros(1)
    for _ in range(150_000):
        total = total + w * 1.0
    assert type(total.grad_fn).__name__ == "AddBackward0"
    total = 0  # the whole graph goes here; this crashed (SIGSEGV) before the work list
    assert total == 0


# [SECTION] Wrong text: PyTorch 2.11's class and message (issue 40) ---------------------------

@pytest.mark.parametrize("call, error, message", [
    (lambda: bool(descent.ones(2)), RuntimeError, "Boolean value of Tensor with more than one value is ambiguous"),
    (lambda: bool(descent.ones(0)), RuntimeError, "Boolean value of Tensor with no values is ambiguous"),
    (lambda: int(descent.ones(2)), ValueError, "only one element tensors can be converted to Python scalars"),
    (lambda: float(descent.ones(0)), ValueError, "only one element tensors can be converted to Python scalars"),
    (lambda: iter(descent.tensor(1.0)), TypeError, "iteration over a 0-d tensor"),
    (lambda: descent.arange(0, 5, -1), RuntimeError, "upper bound and lower bound inconsistent with step sign"),
    (lambda: descent.arange(0, float("inf")), RuntimeError, "unsupported range: 0 -> inf"),
])
def test_conversions_and_ranges_say_what_torch_says(call, error, message):
    with pytest.raises(error) as e:
        call()
    assert str(e.value) == message
    assert int(descent.ones(1)) == 1 and float(descent.tensor([2.5])) == 2.5 and bool(descent.ones(1, 1))


def test_a_size_plus_a_tuple_is_a_size():
    """torch.Size's + and * wrap tuple's: a Size + a tuple, a Size * n are Sizes; a tuple + a Size is a tuple."""
    s = descent.Size([2, 3])
    assert type(s + (4,)) is descent.Size and s + (4,) == (2, 3, 4)
    assert type(s * 2) is descent.Size and type(2 * s) is descent.Size and repr(s * 2) == "descent.Size([2, 3, 2, 3])"
    assert type((1,) + s) is tuple and (1,) + s == (1, 2, 3)
    with pytest.raises(TypeError, match=r'can only concatenate tuple \(not "list"\) to tuple'):
        s + [1]
