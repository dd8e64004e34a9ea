"""Advanced indexing: integer and bool tensors (and lists) as indices, reading
(aten::index) and writing (aten::index_put_), against numpy, and against
PyTorch's own rules where they differ from numpy's (Note [Advanced indexing],
floors/kernels/indexing.cpp; Tensor.__getitem__ in floors/binding/python_indexing.cpp).

- reading: every layout and dtype, masks, indices mixed with ints, slices,
  None and ..., adjacent and separated index tensors, broadcast index
  tensors, negative and repeated positions, empty indices;
- PyTorch's shapes: arange(4)[tensor([1])] is (1,), an int beside an index
  tensor is a select first (x[1, :, [0, 2]] is (3, 2) where numpy gives
  (2, 3)), a list of lists is a tuple of indices, True/False add a dim;
- writing: tensors, numbers and arrays, broadcast, leading 1-dims dropped,
  accumulate, and PyTorch's errors with their classes and words;
- autograd through both ops, and the verifier over their sample calls.
"""
import numpy as np
import pytest

import descent
from conftest import DTYPES, dtype_id, make_tensor, to_np

I, F = descent.int64, descent.float32


def T(a):
    return descent.tensor(np.asarray(a))


def as_np(index):
    """The same index for numpy: tensors as arrays."""
    if isinstance(index, tuple):
        return tuple(as_np(i) for i in index)
    return to_np(index) if isinstance(index, descent.Tensor) else index


# [SECTION] Reading ------------------------------------------------------------------

# (shape, index) where numpy and PyTorch agree.
READS = [
    ((4,), T([1])),
    ((4,), T([3, -1, 0, 0])),
    ((4,), [2, 1]),
    ((4,), T(np.zeros(0, np.int64))),
    ((4,), []),
    ((3, 4), T([[0, 2], [1, 1]])),
    ((3, 4), (slice(None), T([3, 0]))),
    ((3, 4), (T([0, 2]), T([1, 3]))),
    ((3, 4), (T([[0], [2]]), T([1, 3, 0]))),           # index tensors broadcast: (2, 3)
    ((2, 3, 4), (T([1, 0]), slice(None), T([3, 2]))),  # separated: the indexed dims go first
    ((2, 3, 4), (slice(None), T([2, 0]), T([1, 1]))),  # adjacent: they stay in place
    ((2, 3, 4), (Ellipsis, T([3]))),
    ((2, 3, 4), (None, T([1]), slice(1, 3))),
    ((2, 3, 4), (slice(None, None, 2), T([[2, 1]]))),
    ((5, 6), T(np.array([True, False, True, True, False]))),
    ((5, 6), (slice(1, 4), T(np.array([True] * 3 + [False] * 3)))),
    ((2, 3, 4), T(np.arange(6).reshape(2, 3) % 2 == 0)),  # a 2-d mask covers two dims
    ((2, 3, 4), (Ellipsis, T(np.arange(12).reshape(3, 4) > 5))),
    ((2, 3), T(np.zeros((2, 3), bool))),
]


@pytest.mark.parametrize("layout", ["contiguous", "transposed", "stepped"])
@pytest.mark.parametrize("shape,index", READS, ids=[str(i) for i in range(len(READS))])
def test_read_as_numpy(shape, index, layout, rng):
    x, a = make_tensor(rng, shape, F, layout)
    got = x[index]
    want = a[as_np(index)]
    assert got.shape == want.shape and got.dtype is F
    np.testing.assert_array_equal(to_np(got), want)


@pytest.mark.parametrize("dtype", DTYPES, ids=dtype_id)
def test_read_every_dtype_and_the_result_is_a_copy(dtype, rng):
    x, a = make_tensor(rng, (4, 5), dtype)
    got = x[[3, 0, 3]]
    assert got.dtype is dtype
    np.testing.assert_array_equal(to_np(got), a[[3, 0, 3]])
    got[0] = got[1]  # writing into the result leaves x alone
    np.testing.assert_array_equal(to_np(x), a)


def test_non_contiguous_index_tensors():
    x = descent.arange(20).view(4, 5)
    idx = descent.tensor([[3, 0], [1, 2], [0, 4]]).T  # a transposed view
    assert x[:, idx].tolist() == np.arange(20).reshape(4, 5)[:, np.array([[3, 1, 0], [0, 2, 4]])].tolist()


def test_pytorch_shapes_where_numpy_differs():
    assert descent.arange(4)[descent.tensor([1])].shape == (1,)  # a one-element index tensor is no int
    assert descent.arange(4)[descent.tensor(1)].shape == ()      # but a 0-d one is, as in PyTorch
    x = descent.arange(24).view(2, 3, 4)
    # An int is a select applied first, so the index tensor that is left is adjacent to nothing
    # and stays in place: PyTorch gives (3, 2); numpy, counting the int as an index array, (2, 3).
    assert x[1, :, [0, 2]].shape == (3, 2)
    assert x[1, :, [0, 2]].tolist() == np.arange(24).reshape(2, 3, 4)[1][:, [0, 2]].tolist()
    # A list holding lists is a tuple of indices (numpy's old rule, kept by PyTorch).
    assert x[[[0, 1], [2, 0]]].tolist() == x[[0, 1], [2, 0]].tolist()
    assert x[[[0, 1]]].shape == (2, 3, 4)
    # True and False add a dim of size 1, taken or not.
    assert x[True].shape == (1, 2, 3, 4) and x[False].shape == (0, 2, 3, 4)
    assert x[0, True].shape == (1, 3, 4) and x[descent.tensor(True)].shape == (1, 2, 3, 4)
    # A list of floats is truncated to ints, as PyTorch's indexing_tensor_from_data does.
    assert x[[1.7]].shape == (1, 3, 4)


def test_basic_indexing_still_gives_views():
    x = descent.zeros(3, 4)
    v = x[1, 1:3]
    v.fill_(2)
    assert x[1].tolist() == [0, 2, 2, 0]


# [SECTION] Writing ------------------------------------------------------------------

WRITES = [
    ((5,), T([4, 0, -2])),
    ((3, 4), (T([0, 2]), T([1, 3]))),
    ((3, 4), (slice(None), [3, 0])),
    ((2, 3, 4), (T([1, 0]), slice(None), T([3, 2]))),
    ((2, 3, 4), (0, T([2, 0]))),
    ((5, 6), T(np.array([True, False, True, True, False]))),
    ((2, 3, 4), T(np.arange(24).reshape(2, 3, 4) % 3 == 0)),
]


@pytest.mark.parametrize("shape,index", WRITES, ids=[str(i) for i in range(len(WRITES))])
def test_write_tensor_and_number_as_numpy(shape, index, rng):
    x, a = make_tensor(rng, shape, F)
    target = a[as_np(index)]
    values = (8 * rng.random(target.shape) - 4).astype(np.float32)
    x[index] = descent.tensor(values)
    a[as_np(index)] = values
    np.testing.assert_array_equal(to_np(x), a)
    x[index] = 7
    a[as_np(index)] = 7
    np.testing.assert_array_equal(to_np(x), a)
    x[index] = values  # a numpy array, read as tensor() reads it
    a[as_np(index)] = values
    np.testing.assert_array_equal(to_np(x), a)


def test_write_broadcasts_and_drops_leading_ones():
    x = descent.zeros(2, 3)
    x[0] = descent.ones(1, 3)  # basic indexing: the value's leading 1-dims go, as in PyTorch
    assert x.tolist() == [[1, 1, 1], [0, 0, 0]]
    x[[1]] = descent.full((1, 1, 3), 5.0)  # advanced: likewise
    assert x.tolist() == [[1, 1, 1], [5, 5, 5]]
    x[:, [0, 2]] = descent.tensor([[8.0], [9.0]])  # broadcast to the indexed shape (2, 2)
    assert x.tolist() == [[8, 1, 8], [9, 5, 9]]
    x[x > 8] = descent.tensor(0)  # one value into one mask: cast, as ATen's masked_fill_ path
    assert x.tolist() == [[8, 1, 8], [0, 5, 0]]


def test_index_put_accumulates_repeats():
    x = descent.zeros(4)
    descent.index_put_(x, [descent.tensor([0, 2, 0, 0])], descent.tensor([1.0, 2.0, 3.0, 4.0]), True)
    assert x.tolist() == [8, 0, 2, 0]
    descent.index_put_(x, [descent.tensor([1, 1])], descent.tensor([5.0, 6.0]))
    assert x.tolist()[1] in (5, 6)  # assigned twice: one of them stays, as in PyTorch
    assert x._version > 0


def test_write_into_a_view_writes_the_base():
    x = descent.zeros(3, 4)
    x[1:, [0, 3]] = 1
    assert x.tolist() == [[0, 0, 0, 0], [1, 0, 0, 1], [1, 0, 0, 1]]


# [SECTION] What a write runs: PyTorch's ops, in PyTorch's order ------------------------

def dispatched(t):
    """The ops a trace called, in order: floor-3 spans that are not a redispatch of the one above."""
    return [s["name"] for s in t.result.spans() if s["floor"] == 3 and not s["args"].get("redispatch")]


@pytest.mark.parametrize("shape, index, value, ops, want", [
    # A number: a 0-d CPU tensor of x's dtype through aten::lift_fresh, then the view, then fill_ (whose
    # kernel copies the 0-d value in, Fill.cpp) or, when the view is 0-d too, copy_ (TensorIndexing.h copy_to).
    ((2, 3), 0, lambda: 5, ["lift_fresh", "select", "fill_", "copy_"], [[5] * 3, [0] * 3]),
    ((3,), 0, lambda: 5, ["lift_fresh", "select", "copy_"], [5, 0, 0]),
    ((3,), slice(1, 3), lambda: 7, ["lift_fresh", "slice", "fill_", "copy_"], [0, 7, 7]),
    ((3,), slice(None), lambda: 2, ["lift_fresh", "fill_", "copy_"], [2, 2, 2]),  # `:` is no slice
    ((2, 3), (1, None), lambda: 4, ["lift_fresh", "select", "unsqueeze", "fill_", "copy_"], [[0] * 3, [4] * 3]),
    # A tensor: no lift_fresh; copy_ when the shapes match, else view (leading 1-dims), expand, copy_.
    ((2, 3), 0, lambda: descent.tensor([1.0, 2.0, 3.0]), ["select", "copy_"], [[1, 2, 3], [0] * 3]),
    ((2, 3), 1, lambda: descent.ones(1, 3), ["select", "view", "copy_"], [[0] * 3, [1] * 3]),
    ((2, 3), 0, lambda: descent.tensor([6.0]), ["select", "view", "expand", "copy_"], [[6] * 3, [0] * 3]),
    ((2, 3), 0, lambda: descent.tensor(9.0), ["select", "fill_", "copy_"], [[9] * 3, [0] * 3]),
])
def test_a_write_runs_pytorchs_ops(shape, index, value, ops, want):
    x = descent.zeros(*shape)
    v = value()
    with descent.trace() as t:
        x[index] = v
    assert dispatched(t) == ["aten::" + op for op in ops]
    assert x.tolist() == want


def test_a_number_written_on_a_device_is_read_on_the_host_by_fill():
    """fill_.Tensor with a CPU value and a device self reads the value with item (Fill.cpp), as on CUDA."""
    x = descent.zeros(2, 3, device="sim:0")
    with descent.trace() as t:
        x[1] = 2.5
    assert dispatched(t) == ["aten::lift_fresh", "aten::select", "aten::fill_", "aten::item",
                             "aten::_local_scalar_dense"]
    assert x.tolist() == [[0.0] * 3, [2.5] * 3]


def test_a_number_is_converted_to_the_tensors_dtype_first():
    x = descent.zeros(3, dtype=descent.int64)
    x[1:] = 2.7  # truncated, as PyTorch's scalar_tensor_static converts it
    assert x.tolist() == [0, 2, 2]
    b = descent.zeros(2, dtype=descent.bool)
    b[0] = 3
    assert b.tolist() == [True, False]


# [SECTION] Errors, with PyTorch's classes and words ---------------------------------

@pytest.mark.parametrize("index,error,message", [
    (descent.tensor([5]), IndexError, "index 5 is out of bounds for dimension 0 with size 4"),
    (descent.tensor([-5]), IndexError, "index -5 is out of bounds for dimension 0 with size 4"),
    ([1, 4], IndexError, "index 4 is out of bounds for dimension 0 with size 4"),
    ((0, 0), IndexError, "too many indices for tensor of dimension 1"),
    ((descent.tensor([0]), descent.tensor([0])), IndexError, "too many indices for tensor of dimension 1"),
    (descent.tensor([True, False, True]), IndexError,
     r"The shape of the mask \[3\] at index 0 does not match the shape of the indexed tensor \[4\] at index 0"),
    (descent.tensor([0.0]), IndexError, "tensors used as indices must be long, int, byte or bool tensors"),
    (1.5, IndexError, r"only integers, slices \(`:`\), ellipsis \(`...`\), None and long or byte Variables"),
])
def test_read_errors(index, error, message):
    with pytest.raises(error, match=message):
        descent.arange(4)[index]


def test_errors_name_what_pytorch_names():
    x = descent.zeros(3, 4)
    with pytest.raises(IndexError, match=r"index 4 is out of bounds for dimension 0 with size 4"):
        x[:, [4]]  # the index's ordinal among the index tensors, as ATen's kernel says
    with pytest.raises(IndexError, match=r"index 3 is out of bounds for dimension 0 with size 3"):
        x[[3], [0]]
    with pytest.raises(IndexError, match=r"index 9 is out of bounds for dimension 1 with size 4"):
        x[[0], [9]]
    with pytest.raises(IndexError, match=r"shape mismatch: indexing tensors could not be broadcast together "
                                         r"with shapes \[2\], \[3\]"):
        x[[0, 1], [0, 1, 2]]
    with pytest.raises(RuntimeError, match=r"shape mismatch: value tensor of shape \[3\] cannot be broadcast to "
                                           r"indexing result of shape \[2, 4\]"):
        x[[0, 1]] = descent.ones(3)
    with pytest.raises(RuntimeError, match="Index put requires the source and destination dtypes match, got Float "
                                           "for the destination and Long for the source."):
        x[[0, 1]] = descent.ones(4, dtype=descent.int64)
    with pytest.raises(TypeError, match="can't assign a str"):
        x[[0]] = "a"


def test_a_failed_write_writes_nothing():
    x = descent.zeros(4)
    with pytest.raises(IndexError):
        x[[0, 1, 9]] = descent.ones(3)
    assert x.tolist() == [0, 0, 0, 0]


# [SECTION] Autograd and the verifier ----------------------------------------------------

def test_gradient_of_a_read_adds_repeats():
    x = descent.tensor([1.0, 2.0, 3.0], requires_grad=True)
    y = x[[2, 0, 2]]
    assert y.grad_fn.name() == "IndexBackward0"
    (y * descent.tensor([1.0, 10.0, 100.0])).sum().backward()
    assert x.grad.tolist() == [10, 0, 101]


def test_gradient_of_a_write():
    x = descent.tensor([1.0, 2.0, 3.0, 4.0], requires_grad=True)
    v = descent.tensor(5.0, requires_grad=True)
    y = x * 1
    y[y > 2] = v
    assert y.grad_fn.name() == "IndexPutBackward0"
    (y * descent.tensor([1.0, 2.0, 3.0, 4.0])).sum().backward()
    assert x.grad.tolist() == [1, 2, 0, 0]  # the positions written get no gradient
    assert v.grad.item() == 7                # the one value went to two of them


@pytest.mark.parametrize("op", ["index", "index_put_"])
def test_verifier_runs_the_sample_calls(op):
    for verdict in descent.verify(op):
        assert verdict["passed"], verdict


def test_gradients_through_mixed_indices_and_a_write_into_a_view():
    """x[:, idx] reads after a slice; buf[1:, idx] = v writes through a view (CopySlices on the
    base, which descent differentiates once: Note [In-place on a view])."""
    from descent.autograd import gradcheck

    def f(x, v):
        buf = x.clone()
        buf[1:, [0, 2]] = v
        return buf[:, descent.tensor([[2, 0], [1, 1]])] * x[0, [1, 1, 2]].sum()

    def inputs():
        return (descent.randn(3, 4, dtype=descent.float64, requires_grad=True),
                descent.randn(2, dtype=descent.float64, requires_grad=True))
    assert gradcheck(f, inputs())


# [SECTION] In C, as PyTorch's -------------------------------------------------------

@pytest.mark.parametrize("index,ops", [
    (0, ["aten::select"]),                       # THPVariable_getitem's int path
    (slice(None), ["aten::slice"]),              # a lone `:` is still a slice
    (Ellipsis, ["aten::alias"]),
    ((slice(None),), ["aten::alias"]),           # applySlicing applied nothing: alias
    ((slice(None), 1), ["aten::select"]),        # `:` in a tuple is no op
    ((None, 0), ["aten::unsqueeze", "aten::select"]),
    ((0, [1, 2]), ["aten::select", "aten::index"]),
])
def test_getitem_runs_pytorchs_ops_under_one_binding_span(index, ops):
    """Note [Indexing in C]: x[i] crosses into C++ at once (one floor-2 span,
    __getitem__) and runs, in order, the ops THPVariable_getitem runs."""
    x = descent.zeros(3, 4)
    with descent.trace() as tr:
        x[index]
    spans = tr.result.spans()
    top = [s for s in spans if s["floor"] == 2]
    assert [s["name"] for s in top] == ["__getitem__"] and top[0]["args"]["python"] == "Tensor.__getitem__"
    assert not [s for s in spans if s["floor"] == 1 and s["file"]]  # no Python function of descent's ran
    outer = [s["name"] for s in spans if s["floor"] == 3 and s["parent"] == top[0]["id"]]
    assert [n for n in outer if n != "aten::to"] == ops


def test_indexing_a_0d_tensor_gives_pytorchs_errors():
    s = descent.tensor(1.0)
    with pytest.raises(IndexError, match=r"invalid index of a 0-dim tensor. Use `tensor.item\(\)`"):
        s[0]
    with pytest.raises(IndexError, match=r"slice\(\) cannot be applied to a 0-dim tensor."):
        s[:]
    with pytest.raises(IndexError, match="too many indices for tensor of dimension 0"):
        s[(0,)]
    with pytest.raises(TypeError, match="Tensor does not support deleting items"):
        del descent.zeros(2)[0]
    assert s[...].shape == () and s[None].shape == (1,)


def test_shape_size_and_stride_are_c():
    x = descent.zeros(2, 3)
    assert type(x.shape) is descent.Size and repr(x.shape) == "descent.Size([2, 3])"
    assert x.shape[1:] == descent.Size([3]) and type(x.shape[1:]) is descent.Size and x.shape.numel() == 6
    assert x.size() == (2, 3) and x.size(-1) == 3 and x.stride() == (3, 1) and x.stride(0) == 3 and x.ndim == 2
    with pytest.raises(IndexError, match=r"Dimension out of range \(expected to be in range of \[-2, 1\], but got 2\)"):
        x.size(2)
    with descent.trace() as tr:
        x.shape, x.size(0), x.stride()
    assert not [s for s in tr.result.spans() if s["floor"] == 1 and s["file"]]
