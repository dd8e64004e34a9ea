"""In-place arithmetic and item assignment, with PyTorch's semantics.

- x += y, x -= y, x *= y, x /= y and add_/sub_/mul_/div_ write into x's own
  memory: x keeps its identity and every view of it sees the change;
- the result may not need a larger shape (broadcast) than x's, nor a dtype x
  cannot hold (float into int64, int64 into bool): RuntimeError in PyTorch's words;
- t[index] = value fills the view t[index] with a number (aten::fill_) or
  copies a broadcastable tensor into it (aten::copy_), casting;
- each is one op of its own in a trace (aten::add_, aten::fill_, aten::copy_),
  with no temporary result and no extra copy;
- PyTorch's overlap errors: internal overlap (an expanded self), partial
  overlap between self and an input; full overlap (x += x) and none are
  allowed, and so are layouts too hard to analyse (strided views);
- the version counter (t._version), bumped once per in-place op and shared
  by a view and its base, and t._base.
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
    with pytest.raises(RuntimeError, match=r"The expanded size of the tensor \(4\) must match the existing size \(5\)"):
        t[0] = descent.ones(5)                    # does not expand to [4] (PyTorch's copy_to: expand, then copy_)


def test_in_place_is_traced_as_its_own_op():
    x = descent.ones(2)
    with descent.trace() as tr:
        x += 1
        x[0] = 3
        x[1] = descent.tensor(5.0)
    spans = tr.result.spans()
    names = [s["name"] for s in spans]
    assert "aten::add_" in names and "aten::add" not in names
    assert [s["args"].get("python") for s in spans if s["name"] == "add_"] == ["Tensor.__iadd__"]  # floor 2: the slot
    assert "aten::lift_fresh" in names and "aten::copy_" in names
    # x[0] = 3 crosses into C++ at once, as THPVariable_setitem does (Note [Indexing in C]): a floor-2 span, no floor 1
    assert [s["args"].get("python") for s in spans if s["name"] == "__setitem__"] == ["Tensor.__setitem__"] * 2
    assert not [s for s in spans if s["floor"] == 1 and "item" in s["name"]]
    iadd = [s for s in spans if s["name"] == "aten::add_" and s["floor"] == 5]
    assert len(iadd) == 1
    under = [s for s in spans if s["name"] == "cpu_alloc" and iadd[0]["start_ns"] <= s["start_ns"] <= iadd[0]["end_ns"]]
    assert [s["args"]["bytes"] for s in under] == [4], "only the 1 converted to float32; no result, no temporary"
    assert x.tolist() == [3.0, 5.0]


def test_fill_and_zero():
    x = descent.arange(6, dtype=F).reshape(2, 3)
    assert x.fill_(2.5) is x and x.tolist() == [[2.5] * 3] * 2
    assert x.T.zero_().tolist() == [[0.0] * 2] * 3 and x.tolist() == [[0.0] * 3] * 2
    i = descent.zeros(3, dtype=I)
    i.fill_(2.9)
    assert i.tolist() == [2, 2, 2]
    with pytest.raises(RuntimeError, match="value cannot be converted to type int64_t without overflow"):
        i.fill_(1e30)
    e = descent.zeros(1).expand(4)                # fill_ is idempotent: overlap allowed, as in PyTorch
    e.fill_(7)
    assert e.tolist() == [7.0] * 4


def test_overlap_classes():
    # internal overlap: an expanded self
    e = descent.zeros(1).expand(3)
    for write in (lambda: e.add_(1), lambda: e.mul_(2), lambda: e.copy_(descent.ones(3))):
        with pytest.raises(RuntimeError, match="unsupported operation: more than one element of the written-to tensor "
                           r"refers to a single memory location. Please clone\(\) the tensor before performing "
                           "the operation."):
            write()
    # partial overlap: self and an input share some memory in another layout
    x = descent.arange(6, dtype=F)
    with pytest.raises(RuntimeError, match="unsupported operation: some elements of the input tensor and the "
                       "written-to tensor refer to a single memory location."):
        x[1:].add_(x[:-1])
    with pytest.raises(RuntimeError, match="some elements of the input tensor"):
        x[:3].copy_(x[2:5])
    with pytest.raises(RuntimeError, match="some elements of the input tensor"):
        x += x[0]                                 # a 0-d view of x's first element
    m = descent.arange(4, dtype=F).reshape(2, 2)
    with pytest.raises(RuntimeError, match="some elements of the input tensor"):
        m.add_(m.T)                               # same bytes, other strides
    assert x.tolist() == [0.0, 1.0, 2.0, 3.0, 4.0, 5.0] and x._version == 0, "refused writes change nothing"
    # full overlap: the same elements in the same layout
    x += x
    assert x.tolist() == [0.0, 2.0, 4.0, 6.0, 8.0, 10.0]
    x.copy_(x)
    x[1:3].mul_(x[1:3])
    assert x.tolist() == [0.0, 4.0, 16.0, 6.0, 8.0, 10.0]
    # no overlap: disjoint ranges of one storage
    x[:3].add_(x[3:])
    assert x.tolist() == [6.0, 12.0, 26.0, 6.0, 8.0, 10.0]
    # too hard to tell (strided views with gaps): allowed, as in PyTorch
    y = descent.arange(8, dtype=F)
    y[::2].add_(y[1::2])
    assert y.tolist() == [1.0, 1.0, 5.0, 3.0, 9.0, 5.0, 13.0, 7.0]


def test_writes_through_strided_views_in_both_variants():
    for variant in ("reference", "optimized"):
        descent.set_kernel_variant(variant)
        try:
            base = descent.zeros(4, 6)
            v = base.T[1:5:2]                     # [2, 4], strides (1, 6)
            v.add_(descent.arange(4, dtype=F))
            v *= 2
            v[0].fill_(-1)
            want = np.zeros((4, 6), dtype=np.float32)
            want.T[1:5:2] = 2 * np.arange(4, dtype=np.float32)
            want.T[1] = -1
            np.testing.assert_array_equal(np.asarray(base), want)
        finally:
            descent.set_kernel_variant("auto")


def test_mixed_dtypes_compute_in_the_promoted_dtype():
    f = descent.tensor([1.0, 2.0])
    f += descent.tensor([0.5, 0.25], dtype=descent.float64)   # computed in float64, written as float32
    assert f.dtype is F and f.tolist() == [1.5, 2.25]
    i = descent.tensor([1, 2])
    i += descent.tensor([True, False])
    assert i.dtype is I and i.tolist() == [2, 2]
    with pytest.raises(RuntimeError, match="result type Double can't be cast to the desired output type Long"):
        i.add_(descent.tensor([1.0], dtype=descent.float64))
    b = descent.tensor([True, False])
    with pytest.raises(RuntimeError, match="Subtraction, the `-` operator, with two bool tensors"):
        b -= b


def test_version_counter():
    x = descent.zeros(3, 2)
    assert x._version == 0
    x.add_(1)
    assert x._version == 1
    x += 1
    x.mul_(2)
    assert x._version == 3
    v = x[1]
    assert v._version == 3, "a view shares its base's counter"
    x[0] = 1                                      # fill_ on the view x[0]
    assert x._version == 4 and v._version == 4
    v.copy_(descent.ones(2))
    assert x._version == 5
    x[:, 0] = descent.tensor([1.0, 2.0, 3.0])
    x.zero_()
    x.fill_(3)
    assert x._version == 8 and v._version == 8
    y = x + 1                                     # out-of-place: a new tensor, a new counter
    assert y._version == 0 and x._version == 8
    with pytest.raises(RuntimeError):
        x += descent.ones(2, 3, 2)                # refused (a larger broadcast shape): no bump
    assert x._version == 8
    c = x.reshape(6)                              # a view (no copy): shared
    c.add_(1)
    assert x._version == 9


def test_data_has_a_version_counter_of_its_own_and_detach_shares_x_s():
    x = descent.ones(3, requires_grad=True)
    x.data.add_(1)                                   # PyTorch 2.11 (H200 host): x._version stays 0
    assert x._version == 0 and x.tolist() == [2.0, 2.0, 2.0]
    d = x.data
    d[0:2].mul_(2)                                   # a view of .data counts with .data, not with x
    assert d._version == 1 and x._version == 0
    x.detach().add_(1)                               # detach() shares x's counter
    assert x._version == 1
    y = x * 1
    z = y.exp()                                      # ExpBackward0 saves its result
    z.data.mul_(0)                                   # not caught: the reason torch prefers detach()
    z.sum().backward()
    assert x.grad.tolist() == [0.0, 0.0, 0.0]


def test_base():
    x = descent.zeros(4, 6)
    assert x._base is None
    v = x[1:3]
    assert v._base is not None and v._base._is_same(x)
    assert v[0]._base._is_same(x), "a view of a view has the first one's base"
    assert x.T._base._is_same(x) and x.view(24)._base._is_same(x) and x.unsqueeze(0)._base._is_same(x)
    assert x[..., None].expand(4, 6, 2)._base._is_same(x)
    assert (x + 1)._base is None and x.clone()._base is None and x.sum(0)._base is None
    assert x.T.reshape(24)._base is None, "a reshape that copies is no view"
    assert x.T.contiguous()._base is None
