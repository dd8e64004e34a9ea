"""In-place arithmetic and item assignment, with PyTorch's semantics.

- x += y, x -= y, x *= y, x /= y and add_/sub_/mul_/div_ write into x's own
  memory: x keeps its identity and every view of it sees the change;
- the result may not need a larger shape (broadcast) than x's, nor a dtype x
  cannot hold (float into int64, int64 into bool): RuntimeError in PyTorch's words;
- t[index] = value copies a number or a broadcastable tensor into the view
  t[index], casting as copy_ does;
- both show up in a trace as the op and a copy_.
"""
import numpy as np
import pytest

import descent

F, I, B = descent.float32, descent.int64, descent.bool


@pytest.mark.parametrize("op, ref", [("__iadd__", np.add), ("__isub__", np.subtract), ("__imul__", np.multiply),
                                     ("__itruediv__", np.divide)])
def test_augmented_assignment_writes_through_views(op, ref):
    base = descent.arange(12, dtype=F).reshape(3, 4)
    alias = base
    view = base[1:, ::2]                          # a strided view into base
    other = descent.tensor([1.5, 2.0])            # broadcasts over the view's rows
    want_base = np.asarray(base).copy()
    want_base[1:, ::2] = ref(want_base[1:, ::2], np.asarray(other))
    result = getattr(view, op)(other)
    assert result is view and alias is base
    np.testing.assert_array_equal(np.asarray(base), want_base)


def test_method_forms_return_self_and_take_alpha():
    x = descent.tensor([1.0, 2.0])
    assert x.add_(descent.tensor([10.0, 20.0]), alpha=2) is x and x.tolist() == [21.0, 42.0]
    assert x.sub_(1, alpha=3) is x and x.tolist() == [18.0, 39.0]
    assert x.mul_(0.5) is x and x.tolist() == [9.0, 19.5]
    assert x.div_(descent.tensor(3.0)) is x and x.tolist() == [3.0, 6.5]
    i = descent.tensor([1, 2])
    i += 3
    i *= descent.tensor([2, 1])
    assert i.dtype is I and i.tolist() == [8, 5]
    f = descent.tensor([1.0], dtype=descent.float64)
    f += descent.tensor([1.0])                    # float32 into float64: allowed
    assert f.dtype is descent.float64


def test_in_place_refusals_in_pytorchs_words():
    i = descent.tensor([1, 2])
    with pytest.raises(RuntimeError, match="result type Float can't be cast to the desired output type Long"):
        i += 0.5
    with pytest.raises(RuntimeError, match="result type Float can't be cast to the desired output type Long"):
        i /= 2                                    # true division gives floats
    b = descent.tensor([True, False])
    with pytest.raises(RuntimeError, match="result type Long can't be cast to the desired output type Bool"):
        b += 1
    x = descent.zeros(2)
    with pytest.raises(RuntimeError, match=r"output with shape \[2\] doesn't match the broadcast shape \[3, 2\]"):
        x += descent.ones(3, 2)
    with pytest.raises(TypeError, match=r"unsupported operand type\(s\) for \+=: 'Tensor' and 'NoneType'"):
        x += None
    assert i.tolist() == [1, 2] and x.tolist() == [0.0, 0.0]  # a refused write leaves the tensor as it was
    e = descent.ones(1).expand(3)                 # three elements, one memory location
    with pytest.raises(RuntimeError, match="more than one element"):
        e += 1


def test_setitem():
    t = descent.zeros(3, 4)
    t[0] = 5
    t[1, 2] = descent.tensor(7.0)
    t[:, 0] = descent.tensor([8.0, 9.0, 10.0])
    t[2, 1:] = 2.5
    t[..., -1] = True
    want = np.zeros((3, 4), dtype=np.float32)
    want[0] = 5
    want[1, 2] = 7
    want[:, 0] = [8, 9, 10]
    want[2, 1:] = 2.5
    want[..., -1] = 1
    np.testing.assert_array_equal(np.asarray(t), want)
    i = descent.zeros(2, dtype=I)
    i[0] = 3.9                                    # copy_ casts: truncation toward zero
    assert i.tolist() == [3, 0]
    with pytest.raises(TypeError, match="can't assign a list to a descent.Tensor"):
        t[0] = [1, 2, 3, 4]
    with pytest.raises(IndexError, match="out of bounds"):
        t[3] = 1
    with pytest.raises(ValueError, match="size of tensor a"):
        t[0] = descent.ones(5)                    # does not broadcast to [4]


def test_in_place_is_traced_as_the_op_and_a_copy():
    x = descent.ones(2)
    with descent.trace() as tr:
        x += 1
        x[0] = 3
    names = [s["name"] for s in tr.result.spans()]
    assert "Tensor.__iadd__" in names and "add" in names and names.count("copy_") >= 2
    assert "Tensor.__setitem__" in names
    assert x.tolist() == [3.0, 2.0]
