"""The Python dispatch key and TorchDispatchMode (Note [The Python key], floors/binding/python_dispatch.cpp).

What PyTorch's mode sees is reasoned from its source (no fixture in
/work/shared/fixtures records a mode's log): the Python key sits beneath
ADInplaceOrView and the Autograd keys (c10/core/DispatchKey.h), so a mode
sees the ops the composites decompose into (matmul -> mm) and, in a
backward, the ops of each node's formula; its fallback excludes every key
above Python (PythonFallbackKernel.cpp's after_Python_keyset) and
parseIValuesToPyArgsKwargs leaves out arguments equal to their defaults.
"""
import pytest

import descent
from descent.utils._python_dispatch import (
    TorchDispatchMode, _get_current_dispatch_mode, _get_current_dispatch_mode_stack,
)


class Logging(TorchDispatchMode):
    def __init__(self):
        super().__init__()
        self.ops, self.calls = [], []

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        self.ops.append(str(func))
        self.calls.append((func, args, kwargs))
        return func(*args, **(kwargs or {}))


def inputs(requires_grad=True):
    descent.manual_seed(0)
    x = descent.randn(4, 3, requires_grad=requires_grad)
    w = descent.randn(3, 5, requires_grad=requires_grad)
    b = descent.randn(5, requires_grad=requires_grad)
    return x, w, b


def test_a_mode_sees_the_ops_beneath_autograd():
    x, w, b = inputs()
    with Logging() as m:
        y = x @ w + b
    # matmul is CompositeImplicitAutograd: the mode sees the mm it decomposes into, as in PyTorch.
    assert m.ops == ["aten.mm.default", "aten.add.Tensor"]
    assert y.grad_fn is not None and type(y.grad_fn).__name__ == "AddBackward0"  # autograd ran above the mode
    ref = x @ w + b
    assert bool((y == ref).all())


def test_a_mode_sees_the_backward_formulas():
    x, w, b = inputs()
    y = x @ w + b
    with Logging() as m:
        y.sum().backward()
    # PyTorch's seed is aten.ones_like (torch.autograd._make_grads); descent's engine makes it with aten.ones.
    assert m.ops[0] == "aten.sum.default"
    assert m.ops[1] in ("aten.ones.default", "aten.ones_like.default")
    rest = m.ops[2:]
    assert rest[0] == "aten.expand.default"  # SumBackward0
    assert rest[1:3] == ["aten.sum.dim_IntList", "aten.view.default"]  # AddBackward0: b's grad summed to its shape
    # MmBackward0: grad.mm(w.t()) then x.t().mm(grad), as derivatives.yaml writes them.
    assert [o for o in rest if o in ("aten.t.default", "aten.mm.default")] == [
        "aten.t.default", "aten.mm.default", "aten.t.default", "aten.mm.default"]
    assert x.grad.shape == (4, 3) and w.grad.shape == (3, 5) and b.grad.shape == (5,)


def test_func_prints_and_compares_as_pytorch():
    x, w, b = inputs(False)
    with Logging() as m:
        descent.add(x, x, alpha=2)
        x.sum(1)
    func, args, kwargs = m.calls[0]
    assert str(func) == "aten.add.Tensor"
    assert repr(func) == "<OpOverload(op='aten.add', overload='Tensor')>"
    assert func.name() == "aten::add.Tensor" and func.__name__ == "add.Tensor"
    assert str(func.overloadpacket) == "aten.add"
    assert func == descent.ops.aten.add.Tensor
    assert kwargs == {"alpha": 2}  # a keyword-only argument not at its default is handed as a keyword
    func, args, kwargs = m.calls[1]
    assert str(func) == "aten.sum.dim_IntList" and len(args) == 2 and kwargs == {}  # keepdim=False left out


def test_defaults_are_left_out():
    x, _, _ = inputs(False)
    with Logging() as m:
        x + x
    assert m.calls[0][2] == {}  # alpha=1 is the default


def test_the_key_is_included_only_inside_a_mode():
    assert not descent._C._dispatch_tls_local_include_set().has("Python")
    with Logging():
        assert descent._C._dispatch_tls_local_include_set().has("Python")
        assert _get_current_dispatch_mode() is not None
    assert not descent._C._dispatch_tls_local_include_set().has("Python")
    assert _get_current_dispatch_mode() is None and _get_current_dispatch_mode_stack() == []


def test_nested_modes_see_each_op_innermost_first():
    x, _, _ = inputs(False)
    outer, inner = Logging(), Logging()
    with outer:
        with inner:
            x.neg()
    # The inner mode's func(*args) reaches the outer one, as PyTorch's mode stack does.
    assert inner.ops == ["aten.neg.default"] and outer.ops == ["aten.neg.default"]


def test_a_mode_can_replace_an_op():
    class NegIsZero(TorchDispatchMode):
        def __torch_dispatch__(self, func, types, args=(), kwargs=None):
            if func == descent.ops.aten.neg.default:
                return descent.zeros_like(args[0])
            return func(*args, **(kwargs or {}))
    x = descent.ones(3)
    with NegIsZero():
        y = -x
    assert y.tolist() == [0.0, 0.0, 0.0]


def test_a_mode_counting_flops():
    class Flops(TorchDispatchMode):
        flops = 0

        def __torch_dispatch__(self, func, types, args=(), kwargs=None):
            out = func(*args, **(kwargs or {}))
            if func == descent.ops.aten.mm.default:
                (m, k), (_, n) = args[0].shape, args[1].shape
                self.flops += 2 * m * k * n
            return out
    x, w, b = inputs(False)
    with Flops() as f:
        descent.nn.functional.linear(x, w.t(), b)
        x @ w
    assert f.flops == 2 * (2 * 4 * 3 * 5) or f.flops == 2 * 4 * 3 * 5  # linear may reach addmm instead of mm


def test_item_reaches_the_mode():
    x = descent.tensor([2.5])
    with Logging() as m:
        v = x.item()
    assert v == 2.5 and "aten._local_scalar_dense.default" in m.ops


def test_errors():
    class Raises(TorchDispatchMode):
        def __torch_dispatch__(self, func, types, args=(), kwargs=None):
            raise KeyError("from the mode")

    class WrongType(TorchDispatchMode):
        def __torch_dispatch__(self, func, types, args=(), kwargs=None):
            return "not a tensor"
    x = descent.ones(2)
    with pytest.raises(KeyError, match="from the mode"):
        with Raises():
            x + 1
    with pytest.raises(TypeError, match="returned str where result 0, a Tensor, belongs"):
        with WrongType():
            descent.add(x, 1)
    assert not descent._C._dispatch_tls_local_include_set().has("Python")
    assert (x + 1).tolist() == [2.0, 2.0]  # the runtime is whole after a mode raised
    with pytest.raises(NotImplementedError):
        with TorchDispatchMode():
            x + 1
    with pytest.raises(ValueError, match="no runtime dispatch key"):
        descent._C._dispatch_tls_set_dispatch_key_included("Nope", True)
