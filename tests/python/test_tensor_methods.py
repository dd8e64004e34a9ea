"""Tensor's methods and operators are C functions of _C.TensorBase generated
from the op table, as PyTorch's are (Note [Tensor methods from the op table],
floors/binding/tensor_methods.cpp): every op whose first argument is `Tensor
self` is a method parsed exactly as the function is, the operators are the
type's number slots, and the Python class adds none of them."""
import operator
import re

import numpy as np
import pytest

import descent

F, D, I = descent.float32, descent.float64, descent.int64


def raises(error, *words):
    return pytest.raises(error, match="(?s)" + "".join(f"(?=.*{re.escape(w)})" for w in words))


def method_ops():
    """The Python names of the ops whose first argument is `Tensor self`, save the _underscored ones,
    those of torch._C._nn (python_module: nn: there is no Tensor.mse_loss), the hidden ones
    (linalg_vector_norm: torch.linalg.vector_norm, no Tensor method) and rsub (aten's
    `variants: function`: torch.rsub, no Tensor.rsub)."""
    names = set()
    for op in descent._C._ops():
        args = op["schema"].split("(", 1)[1]
        if re.match(r"Tensor(\([a-z]!?\))? self\b", args) and not op["python_name"].startswith("_") \
                and op["python_module"] not in ("nn", "hidden") and op["python_name"] != "rsub":
            names.add(op["python_name"])
    return sorted(names)


def test_every_op_taking_self_is_a_c_method():
    names = method_ops()
    assert {"add", "sum", "view", "permute", "to", "add_", "matmul", "mm", "max"} <= set(names)
    for name in names:
        m = getattr(descent._C.TensorBase, name)
        assert type(m).__name__ == "method_descriptor", name       # C, on the base class
        # nothing of it in Python, but the wrapper that reads generator= (Note [A Generator is a saved CPU stream])
        assert name not in descent.Tensor.__dict__ or name in ("uniform_", "normal_", "random_", "multinomial"), name
    assert not hasattr(descent.Tensor, "_to_copy") and not hasattr(descent.Tensor, "_unsafe_view")
    assert not hasattr(descent.Tensor, "ones")                       # factories are functions only
    assert not hasattr(descent.Tensor, "mse_loss") and not hasattr(descent.Tensor, "linear")  # torch._C._nn's
    assert {"sin", "cos", "clamp", "clamp_min", "clamp_max", "addmm", "flatten"} <= set(names)
    assert not hasattr(descent.Tensor, "cat") and not hasattr(descent.Tensor, "linspace")
    for op in ["__add__", "__radd__", "__sub__", "__rsub__", "__mul__", "__truediv__", "__rtruediv__", "__pow__",
               "__rpow__", "__matmul__", "__rmatmul__", "__neg__", "__abs__", "__iadd__", "__isub__", "__imul__",
               "__itruediv__", "__eq__", "__ne__", "__lt__", "__le__", "__gt__", "__ge__"]:
        assert type(getattr(descent.Tensor, op)).__name__ == "wrapper_descriptor", op
        assert op not in descent.Tensor.__dict__, op


def test_method_is_the_function():
    x, y = descent.randn(2, 3), descent.randn(2, 3)
    assert x.add(y, alpha=2).tolist() == descent.add(x, y, alpha=2).tolist()
    assert x.max(1).indices.tolist() == descent.max(x, 1).indices.tolist()
    assert x.view(3, 2).shape == x.view((3, 2)).shape == x.view([3, 2]).shape == (3, 2)
    assert x.permute(1, 0).shape == x.permute([1, 0]).shape == (3, 2)
    assert x.expand(4, 2, 3).shape == x.expand((4, 2, 3)).shape == (4, 2, 3)
    assert x.reshape(-1).shape == (6,) and x.transpose(0, 1).shape == (3, 2) and x.t().shape == (3, 2)
    assert x.mm(y.t()).shape == (2, 2) and x.select(0, 1).shape == (3,)
    z = x.clone()
    assert z.add_(1) is z and z.zero_() is z and z.fill_(2.0) is z and z.copy_(y) is z


def test_sum_and_mean_choose_their_overload_as_before():
    """x.sum() and x.sum(None) are aten::sum (SumBackward0), a dim or keepdim sum.dim_IntList (SumBackward1)."""
    x = descent.ones(2, 3, requires_grad=True)
    assert x.sum().grad_fn.name() == "SumBackward0" and x.sum(None).grad_fn.name() == "SumBackward0"
    assert x.sum(dtype=D).grad_fn.name() == "SumBackward0" and x.sum(dtype=D).dtype is D
    assert x.sum(0).grad_fn.name() == "SumBackward1" and x.sum(dim=[0, 1]).shape == ()
    assert x.sum(keepdim=True).shape == (1, 1) and x.sum(None, True).grad_fn.name() == "SumBackward1"
    assert x.mean().grad_fn.name() == "MeanBackward0" and x.mean(1, True).shape == (2, 1)
    with raises(TypeError, "sum() received an invalid combination of arguments", "got (str)"):
        x.sum("a")


def test_to_takes_a_device_first():
    x = descent.ones(2)
    assert x.to("cpu") is not None and x.to("cpu").data_ptr() == x.data_ptr()
    assert x.to(descent.device("cpu")).dtype is F and x.to("cpu", D).dtype is D
    assert x.to(D).dtype is D and x.to(device="cpu", dtype=I).dtype is I and x.to("cpu", copy=True).data_ptr() != x.data_ptr()
    d = x.to("sim:0", D)
    assert d.device == descent.device("sim:0") and d.dtype is D


def test_method_errors_count_positions_without_self():
    x = descent.ones(2, 3)
    with raises(TypeError, "add(): argument 'other' (position 1) must be Tensor, not str"):
        x.add("a")
    with raises(TypeError, "add(): argument 'other' (position 2) must be Tensor, not str"):
        descent.add(x, "a")
    with raises(TypeError, "add() takes 1 positional argument but 3 were given"):
        x.add(x, x, x)
    with raises(TypeError, "view() missing required argument 'size' (pos 1)"):
        x.view()
    with raises(TypeError, "max() received an invalid combination of arguments - got (str), but expected one of:",
                " * ()\n", " * (int dim, bool keepdim=...)"):
        x.max("a")
    with raises(TypeError, "* (*, ScalarType? dtype=...)"):  # a kwarg-only first argument
        x.mean("a")
    with raises(RuntimeError, "argument 'other' (position 1) is 1180591620717411303424: Overflow"):
        x.add(2 ** 70)
    with pytest.raises(TypeError, match="descriptor 'add' for 'descent._C.TensorBase' objects doesn't apply"):
        descent.Tensor.add(1, x)


def test_operators():
    x = descent.tensor([1.0, 2.0])
    assert (x + 1).tolist() == (1 + x).tolist() == [2.0, 3.0]
    assert (3 - x).tolist() == [2.0, 1.0] and (2 / x).tolist() == [2.0, 1.0] and (2 ** x).tolist() == [2.0, 4.0]
    assert (3 - x).dtype is F and (2 ** x).dtype is F  # the number on the left is a wrapped number
    assert (descent.tensor([1, 2]) * 2.5).dtype is F and pow(x, 2).tolist() == [1.0, 4.0]
    assert (np.ones(2) - x).dtype is D and (np.ones(2) - x).tolist() == [0.0, -1.0]  # an array is a tensor
    assert (x @ np.ones(2, dtype=np.float32)).item() == 3.0 and (np.ones(2, dtype=np.float32) @ x).item() == 3.0
    assert (-x).tolist() == [-1.0, -2.0] and abs(-x).tolist() == [1.0, 2.0]
    assert (1 < x).tolist() == [False, True] and (x >= 2).tolist() == [False, True] and (x != 1).tolist() == [False, True]
    assert (x == None) is False and (x != "a") is True  # noqa: E711
    with raises(TypeError, "unsupported operand type(s) for ** or pow(): 'Tensor', 'int', 'int'"):
        pow(x, 2, 5)
    with raises(TypeError, "unsupported operand type(s) for /: 'Tensor' and 'str'"):
        x / "a"
    with raises(TypeError, "unsupported operand type(s) for @: 'int' and 'Tensor'"):
        2 @ x


def test_in_place_operators_return_self_and_fall_back_as_python_does():
    x = descent.zeros(2)
    y = x
    y += 1
    y *= 3
    y -= descent.ones(2)
    y /= 2
    assert y is x and x.tolist() == [1.0, 1.0] and x._version == 4
    for op, sym in [(operator.iadd, "+="), (operator.isub, "-="), (operator.imul, "*="), (operator.itruediv, "/=")]:
        with raises(TypeError, f"unsupported operand type(s) for {sym}: 'Tensor' and 'NoneType'"):
            op(x, None)      # Note [x += y falls back to no sequence]: never x = NotImplemented

    class Other:             # a type the ops do not take, which knows how to add a tensor
        def __radd__(self, t):
            return "Other.__radd__"
    z = descent.ones(2)
    z += Other()
    assert z == "Other.__radd__"


def test_hash_is_identity():
    x, y = descent.ones(2), descent.ones(2)
    assert len({x, y, x}) == 2 and {x: 1}[x] == 1 and hash(x) != hash(y)


def test_subclass_keeps_the_operators():
    class Sub(descent.Tensor):
        __slots__ = ()
    assert Sub.__add__ is descent.Tensor.__add__
    assert Sub.__iadd__ is descent.Tensor.__iadd__


def test_trace_shows_the_crossing_on_floor_2():
    x = descent.ones(2)
    with descent.trace() as t:
        x + 1
        2 - x
        x.add(x)
        x += 1
    floor2 = [s for s in t.result.spans() if s["floor"] == 2]
    assert [(s["name"], s["args"].get("python"), s["parent"]) for s in floor2] == [
        ("add", "Tensor.__add__", 0), ("rsub", "Tensor.__rsub__", 0), ("add", "Tensor.add", 0),
        ("add_", "Tensor.__iadd__", 0)]
    assert not [s for s in t.result.spans() if s["floor"] == 1]   # no Python of descent's in between
    rsub = floor2[1]
    allocs = [s for s in t.result.spans() if s["name"] == "cpu_alloc" and rsub["start_ns"] <= s["start_ns"] <= rsub["end_ns"]]
    assert allocs and allocs[0]["args"]["bytes"] == 8  # the wrapped 2, made inside the crossing
