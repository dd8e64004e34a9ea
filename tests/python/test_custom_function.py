"""descent.autograd.Function: a custom op's forward and backward in Python,
recorded as one node whose apply calls back into Python (Note [A custom
Function's node], floors/binding/python_function.cpp), checked as
torch.autograd.Function behaves and prints."""
import re

import pytest

import descent
from descent.autograd import Function, gradcheck


class LegendrePolynomial3(Function):
    """The tutorial's Function (beginner_source/examples_autograd/polynomial_custom_function.py)."""

    @staticmethod
    def forward(ctx, input):
        ctx.save_for_backward(input)
        return 0.5 * (5 * input ** 3 - 3 * input)

    @staticmethod
    def backward(ctx, grad_output):
        input, = ctx.saved_tensors
        return grad_output * 1.5 * (5 * input ** 2 - 1)


class ScaleShift(Function):
    """Two tensor inputs and a number: backward returns None for the number."""

    @staticmethod
    def forward(ctx, x, w, k):
        ctx.save_for_backward(x, w)
        ctx.k = k
        return x * w + k

    @staticmethod
    def backward(ctx, grad):
        x, w = ctx.saved_tensors
        return grad * w, grad * x, None


def test_tutorial_function_gradient_and_node():
    x = descent.tensor([0.1, 0.5, -0.3], requires_grad=True)
    c = descent.tensor(0.2, requires_grad=True)
    y = LegendrePolynomial3.apply(x + c)
    assert y.requires_grad and not y.is_leaf
    assert y.grad_fn.name() == "LegendrePolynomial3Backward"
    assert re.fullmatch(r"<descent\.autograd\.function\.LegendrePolynomial3Backward object at 0x[0-9a-f]+>",
                        repr(y.grad_fn))
    assert repr(y).endswith("grad_fn=<LegendrePolynomial3Backward>)")
    (nxt, nr), = y.grad_fn.next_functions
    assert nxt.name() == "AddBackward0" and nr == 0
    y.sum().backward()
    u = [0.3, 0.7, -0.1]
    assert x.grad.tolist() == pytest.approx([1.5 * (5 * v * v - 1) for v in u], rel=1e-6)
    assert c.grad.item() == pytest.approx(sum(1.5 * (5 * v * v - 1) for v in u), abs=1e-5)


def test_the_ctx_is_the_node():
    seen = []

    class Keep(Function):
        @staticmethod
        def forward(ctx, x):
            seen.append(ctx)
            return x * 2

        @staticmethod
        def backward(ctx, g):
            return g * 2

    y = Keep.apply(descent.ones(2, requires_grad=True))
    assert y.grad_fn is seen[0]
    assert y.grad_fn is y.grad_fn
    assert isinstance(y.grad_fn, descent.autograd.Node)
    assert type(y.grad_fn).__name__ == "KeepBackward"
    z = y * 2  # downstream, the chain leads back to the same object
    assert z.grad_fn.next_functions[0][0] is seen[0]
    assert z.grad_fn.next_functions[0][0].next_functions[0][0].name() == "torch::autograd::AccumulateGrad"


def test_gradcheck_float64():
    descent.manual_seed(0)
    x = descent.randn(4, dtype=descent.float64).requires_grad_()
    assert gradcheck(LegendrePolynomial3.apply, (x,))
    w = descent.randn(4, dtype=descent.float64).requires_grad_()
    assert gradcheck(lambda a, b: ScaleShift.apply(a, b, 3.0), (x, w))


def test_needs_input_grad_and_grad_mode_off_in_forward():
    inside = {}

    class Probe(Function):
        @staticmethod
        def forward(ctx, x, w, k):
            inside["grad_enabled"] = descent.is_grad_enabled()
            inside["needs"] = ctx.needs_input_grad
            out = x * w
            inside["recorded"] = out.grad_fn
            return out

        @staticmethod
        def backward(ctx, g):
            return g, None, None

    x = descent.ones(2, requires_grad=True)
    Probe.apply(x, descent.ones(2), 5)
    assert inside == {"grad_enabled": False, "needs": (True, False, False), "recorded": None}
    assert descent.is_grad_enabled()


def test_no_input_requires_grad_records_nothing():
    y = LegendrePolynomial3.apply(descent.ones(3))
    assert not y.requires_grad and y.grad_fn is None
    with descent.no_grad():
        z = LegendrePolynomial3.apply(descent.ones(3, requires_grad=True))
    assert z.grad_fn is None


class Boom(Exception):
    pass


def test_exception_in_backward_propagates_as_itself():
    class Fails(Function):
        @staticmethod
        def forward(ctx, x):
            return x * 2

        @staticmethod
        def backward(ctx, g):
            raise Boom("backward failed")

    x = descent.ones(3, requires_grad=True)
    with pytest.raises(Boom, match="backward failed"):
        Fails.apply(x).sum().backward()
    with pytest.raises(Boom):
        descent.autograd.grad(Fails.apply(x).sum(), x)
    # The engine is fine afterwards.
    (x * 3).sum().backward()
    assert x.grad.tolist() == [3.0, 3.0, 3.0]


def test_saved_tensor_written_in_place_is_refused():
    a = descent.ones(3, requires_grad=True)
    b = a * 1
    y = LegendrePolynomial3.apply(b)
    with descent.no_grad():
        b.add_(1)
    with pytest.raises(RuntimeError, match=re.escape(
            "one of the variables needed for gradient computation has been modified by an inplace operation: "
            "[descent.FloatTensor [3]], which is output 0 of MulBackward0, is at version 1; expected version 0 "
            "instead.")):
        y.sum().backward()


def test_saved_tensors_freed_after_backward():
    x = descent.ones(2, requires_grad=True)
    y = LegendrePolynomial3.apply(x * 1).sum()
    y.backward(retain_graph=True)
    y.backward()
    assert x.grad.tolist() == [12.0, 12.0]
    with pytest.raises(RuntimeError, match="Trying to backward through the graph a second time"):
        y.backward()


def test_wrong_number_of_gradients():
    class Bad(Function):
        @staticmethod
        def forward(ctx, x):
            return x + 1

        @staticmethod
        def backward(ctx, g):
            return g, g

    with pytest.raises(RuntimeError, match=re.escape(
            "function BadBackward returned an incorrect number of gradients (expected 1, got 2)")):
        Bad.apply(descent.ones(1, requires_grad=True)).sum().backward()

    class ExtraNones(Function):  # more results than inputs is allowed when the rest are None
        @staticmethod
        def forward(ctx, x):
            return x + 1

        @staticmethod
        def backward(ctx, g):
            return g, None, None

    x = descent.ones(1, requires_grad=True)
    ExtraNones.apply(x).sum().backward()
    assert x.grad.tolist() == [1.0]


def test_gradient_for_a_number_input_must_be_none():
    class NumberGrad(Function):
        @staticmethod
        def forward(ctx, x, k):
            return x * k

        @staticmethod
        def backward(ctx, g):
            return g, g

    with pytest.raises(RuntimeError, match="returned a gradient different than None at position 2, but the "
                                           "corresponding forward input was not a Variable"):
        NumberGrad.apply(descent.ones(1, requires_grad=True), 2).sum().backward()


def test_gradient_of_the_wrong_shape():
    class WrongShape(Function):
        @staticmethod
        def forward(ctx, x):
            return x * 1

        @staticmethod
        def backward(ctx, g):
            return descent.ones(5)

    with pytest.raises(RuntimeError, match=re.escape(
            "Function WrongShapeBackward returned an invalid gradient at index 0 - got [5] but expected shape "
            "compatible with [3]")):
        WrongShape.apply(descent.ones(3, requires_grad=True)).sum().backward()


def test_mark_dirty():
    class DoubleInPlace(Function):
        @staticmethod
        def forward(ctx, x):
            x.mul_(2)
            ctx.mark_dirty(x)
            return x

        @staticmethod
        def backward(ctx, g):
            return g * 2

    a = descent.ones(3, requires_grad=True)
    b = a * 1
    r = DoubleInPlace.apply(b)
    assert r is b and b.grad_fn.name() == "DoubleInPlaceBackward"
    assert b.tolist() == [2.0, 2.0, 2.0]
    r.sum().backward()
    assert a.grad.tolist() == [2.0, 2.0, 2.0]
    with pytest.raises(RuntimeError,
                       match="a leaf Variable that requires grad has been used in an in-place operation."):
        DoubleInPlace.apply(descent.ones(3, requires_grad=True))


def dirty_versions(lib, Function):
    """For AddOneInPlace.apply(x), whose forward writes x in place and marks it
    dirty: (x._version, z._version, z is x) with x a non-leaf that requires
    grad, then with x a plain tensor, then the same with forward's mark_dirty
    left out, then with the mark alone (no write)."""

    def make(write, mark):
        class AddOneInPlace(Function):
            @staticmethod
            def forward(ctx, x):
                if write:
                    x.add_(1)
                if mark:
                    ctx.mark_dirty(x)
                return x

            @staticmethod
            def backward(ctx, g):
                return g
        return AddOneInPlace

    got = []
    for write, mark in ((True, True), (True, False), (False, True)):
        fn = make(write, mark)
        for requires_grad in (True, False):
            x = lib.ones(3, requires_grad=True) * 1 if requires_grad else lib.ones(3)
            z = fn.apply(x)
            got.append((x._version, z._version, z is x))
    return got


# What torch gives (2.15; 2.11 on the H200 host gave the first two alike): torch's _mark_dirty bumps the version
# of each tensor marked dirty once more, after forward's own in-place write (torch/csrc/autograd/
# python_function.cpp), with or without grad; an input returned unmarked comes back as a new tensor sharing its
# version counter.
DIRTY_VERSIONS = [(2, 2, True), (2, 2, True), (1, 1, False), (1, 1, False), (1, 1, True), (1, 1, True)]


def test_mark_dirty_bumps_the_version():
    """function_record (floors/binding/python_function.cpp) bumps each tensor of ctx.dirty_tensors once."""
    assert dirty_versions(descent, Function) == DIRTY_VERSIONS


def test_mark_dirty_versions_are_torchs():
    torch = pytest.importorskip("torch")
    assert dirty_versions(torch, torch.autograd.Function) == DIRTY_VERSIONS


def test_mark_non_differentiable_and_materialized_grads():
    got = {}

    class WithIndex(Function):
        @staticmethod
        def forward(ctx, x):
            idx = (x > 0).long()
            ctx.mark_non_differentiable(idx)
            return x * 3, idx

        @staticmethod
        def backward(ctx, g, g_idx):
            got["g_idx"] = g_idx
            return g * 3

    x = descent.tensor([1.0, -1.0], requires_grad=True)
    out, idx = WithIndex.apply(x)
    assert out.requires_grad and not idx.requires_grad
    out.sum().backward()
    assert got["g_idx"].tolist() == [0, 0]  # zeros, as PyTorch materializes them
    assert x.grad.tolist() == [3.0, 3.0]


def test_set_materialize_grads_false_gives_none():
    got = {}

    class Pair(Function):
        @staticmethod
        def forward(ctx, x):
            ctx.set_materialize_grads(False)
            return x * 1, x * 2

        @staticmethod
        def backward(ctx, g1, g2):
            got["g2"] = g2
            return g1

    x = descent.ones(2, requires_grad=True)
    a, _ = Pair.apply(x)
    a.sum().backward()
    assert got["g2"] is None
    assert x.grad.tolist() == [1.0, 1.0]


def test_input_returned_unchanged_is_a_new_tensor():
    class Identity(Function):
        @staticmethod
        def forward(ctx, x):
            return x

        @staticmethod
        def backward(ctx, g):
            return g

    x = descent.ones(2, requires_grad=True)
    y = Identity.apply(x)
    assert y is not x and x.is_leaf and x.grad_fn is None
    assert y.grad_fn.name() == "IdentityBackward"
    assert y.data_ptr() == x.data_ptr()


def test_save_for_backward_only_takes_tensors():
    class SavesNumber(Function):
        @staticmethod
        def forward(ctx, x):
            ctx.save_for_backward(x, 3)
            return x * 1

        @staticmethod
        def backward(ctx, g):
            return g

    with pytest.raises(TypeError, match="save_for_backward can only save variables, but argument 1 is of type int"):
        SavesNumber.apply(descent.ones(1, requires_grad=True))


def test_node_hooks_on_a_custom_node():
    seen = []
    x = descent.ones(2, requires_grad=True)
    y = LegendrePolynomial3.apply(x * 1)
    y.grad_fn.register_hook(lambda grad_inputs, grad_outputs: seen.append((grad_inputs, grad_outputs)))
    y.sum().backward()
    (gi,), (go,) = seen[0]
    assert gi.tolist() == [6.0, 6.0] and go.tolist() == [1.0, 1.0]


def test_legacy_call_and_missing_backward():
    with pytest.raises(RuntimeError, match="Legacy autograd function with non-static forward method is deprecated"):
        with pytest.warns(DeprecationWarning):
            f = LegendrePolynomial3()
        f(descent.ones(1))

    class NoBackward(Function):
        @staticmethod
        def forward(ctx, x):
            return x * 1

    with pytest.raises(NotImplementedError, match="You must implement either the backward or vjp method"):
        NoBackward.apply(descent.ones(1, requires_grad=True)).sum().backward()


def test_setup_context_style():
    class Cube(Function):
        @staticmethod
        def forward(x):
            return x ** 3

        @staticmethod
        def setup_context(ctx, inputs, output):
            ctx.save_for_backward(inputs[0])

        @staticmethod
        def backward(ctx, g):
            x, = ctx.saved_tensors
            return 3 * x ** 2 * g

    x = descent.tensor([2.0], requires_grad=True)
    Cube.apply(x).backward()
    assert x.grad.tolist() == [12.0]


def test_backward_runs_as_a_floor_4_node_span():
    x = descent.ones(3, requires_grad=True)
    y = LegendrePolynomial3.apply(x * 1).sum()
    with descent.trace() as t:
        y.backward()
    spans = t.result.spans()
    node = [s for s in spans if s["name"] == "autograd::engine::evaluate_function: LegendrePolynomial3Backward"]
    assert len(node) == 1 and node[0]["floor"] == 4
    # The ops backward ran descend beneath the node's span, as any formula's do.
    children = {s["name"] for s in spans if s["parent"] == node[0]["id"]}
    assert "BackwardCFunction.apply" in children
    below = [s for s in spans if s["floor"] == 5 and s["name"] == "aten::mul"]
    assert below


def test_against_torch():
    torch = pytest.importorskip("torch")

    # The same class, named alike, made a torch Function.
    TorchLegendre = type("LegendrePolynomial3", (torch.autograd.Function,), {
        "forward": staticmethod(LegendrePolynomial3.forward), "backward": staticmethod(LegendrePolynomial3.backward)})

    values = [0.1, 0.5, -0.3, 0.9]
    tx = torch.tensor(values, requires_grad=True)
    dx = descent.tensor(values, requires_grad=True)
    ty = TorchLegendre.apply(tx * 2)
    dy = LegendrePolynomial3.apply(dx * 2)
    assert dy.tolist() == pytest.approx(ty.tolist(), rel=1e-6)
    assert dy.grad_fn.name() == ty.grad_fn.name() == "LegendrePolynomial3Backward"
    assert repr(ty.grad_fn).startswith("<torch.autograd.function.LegendrePolynomial3Backward object at 0x")
    assert repr(dy.grad_fn).startswith("<descent.autograd.function.LegendrePolynomial3Backward object at 0x")
    # the same text: the suffix on a line of its own when the values' line is too long (here, in both)
    assert repr(dy).split("grad_fn=")[1] == repr(ty).split("grad_fn=")[1] == "<LegendrePolynomial3Backward>)"
    assert repr(dy).count("\n") == repr(ty).count("\n")
    ty.sum().backward()
    dy.sum().backward()
    assert dx.grad.tolist() == pytest.approx(tx.grad.tolist(), rel=1e-6)
