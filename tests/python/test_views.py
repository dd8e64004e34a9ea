"""Views, indexing and copies: values, shared memory and strides.

Every view op (view, reshape, transpose, permute, expand, slice, select,
unsqueeze, T) and every indexing form (ints, negative ints, slices with steps
and out-of-range bounds, None, Ellipsis, int tensors) is checked three ways
against the same view taken by numpy over the descent tensor's own memory
(np.asarray shares it):
  - the values;
  - the first element's address (so the storage offset is right) and the
    strides, in elements, on every dim of size > 1;
  - sharing: new values copied into the base show through the view, and
    values copied into the view show in the base.
Then the copies: contiguous, clone, to and copy_ (broadcasting, dtype
conversion, non-contiguous destinations), and reshape's copy when no view can
express the shape.
"""
import re

import numpy as np
import pytest

import descent
from conftest import DTYPES, dtype_id, np_dtype, random_array, run_python, to_np

VIEW_OPS = {op["python_name"] for op in descent._C._ops() if op["kind"] == "view"}


def address(a):
    return a.__array_interface__["data"][0]


def check_view(v, base, np_view, rng, writable=True):
    """v (descent) is the view np_view (numpy, over base's memory) of base."""
    assert tuple(v.shape) == np_view.shape and v.dtype is base.dtype
    np.testing.assert_array_equal(to_np(v), np_view)
    if np_view.size:
        assert np.shares_memory(np_view, to_np(base))          # the numpy side is a view too
        assert address(to_np(v)) == address(np_view)             # same first element
        assert v.data_ptr() == address(np_view)
        item = np_view.itemsize
        for d, n in enumerate(np_view.shape):
            if n > 1:
                assert v.stride(d) == np_view.strides[d] // item, (d, v.stride(), np_view.strides)
    # Sharing, base -> view: copy new values into the base.
    fresh = random_array(rng, tuple(base.shape), base.dtype)
    base.copy_(descent.tensor(fresh))
    np.testing.assert_array_equal(to_np(v), np_view)
    # Sharing, view -> base (not for expanded views: their elements overlap).
    if writable and np_view.size:
        values = random_array(rng, np_view.shape, base.dtype)
        v.copy_(descent.tensor(values))
        np.testing.assert_array_equal(np_view, values)


# (name, base shape, descent view, numpy view)
VIEW_CASES = [
    ("view", (4, 6), lambda t: t.view(6, 4), lambda a: a.reshape(6, 4)),
    ("view-infer", (4, 6), lambda t: t.view(-1, 3), lambda a: a.reshape(-1, 3)),
    ("view-list", (2, 3, 4), lambda t: t.view([4, 6]), lambda a: a.reshape(4, 6)),
    ("view-flat", (2, 3, 4), lambda t: t.view(-1), lambda a: a.reshape(-1)),
    ("view-0d-to-2d", (), lambda t: t.view(1, 1), lambda a: a.reshape(1, 1)),
    ("view-to-0d", (1,), lambda t: t.view([]), lambda a: a.reshape(())),
    ("view-zero-size", (0, 3), lambda t: t.view(3, 0), lambda a: a.reshape(3, 0)),
    ("view-of-stepped", (4, 6), lambda t: t[:, ::2].view(2, 2, 3), lambda a: a[:, ::2].reshape(2, 2, 3)),
    ("view-of-transposed", (6, 4), lambda t: t.T.view(4, 3, 2), lambda a: a.T.reshape(4, 3, 2)),
    ("_unsafe_view", (4, 6), lambda t: descent._unsafe_view(t, [6, 4]), lambda a: a.reshape(6, 4)),
    ("reshape-viewable", (2, 3, 4), lambda t: t.reshape(6, -1), lambda a: a.reshape(6, -1)),
    ("reshape-of-stepped", (4, 6), lambda t: t[1:3].reshape(12), lambda a: a[1:3].reshape(12)),
    ("flatten", (2, 3, 4), lambda t: t.flatten(), lambda a: a.reshape(-1)),
    ("flatten-some", (2, 3, 4), lambda t: descent.flatten(t, 0, 1), lambda a: a.reshape(6, 4)),
    ("flatten-neg", (2, 3, 4), lambda t: t.flatten(-2), lambda a: a.reshape(2, 12)),
    ("flatten-0d", (), lambda t: t.flatten(), lambda a: a.reshape(1)),
    ("flatten-of-stepped", (4, 6), lambda t: t[1:3].flatten(), lambda a: a[1:3].reshape(12)),
    ("transpose", (2, 3, 4), lambda t: t.transpose(0, 2), lambda a: a.swapaxes(0, 2)),
    ("transpose-neg", (2, 3, 4), lambda t: descent.transpose(t, -1, -2), lambda a: a.swapaxes(-1, -2)),
    ("transpose-0d", (), lambda t: t.transpose(0, -1), lambda a: a),
    ("T", (3, 4), lambda t: t.T, lambda a: a.T),
    ("t", (3, 4), lambda t: t.t(), lambda a: a.T),
    ("t-1d", (5,), lambda t: descent.t(t), lambda a: a),
    ("permute", (2, 3, 4), lambda t: t.permute(2, 0, 1), lambda a: a.transpose(2, 0, 1)),
    ("permute-neg", (2, 3, 4), lambda t: descent.permute(t, [-1, 0, 1]), lambda a: a.transpose(2, 0, 1)),
    ("permute-of-stepped", (4, 6), lambda t: t[::2, 1::3].permute(1, 0), lambda a: a[::2, 1::3].T),
    ("unsqueeze", (2, 3), lambda t: t.unsqueeze(1), lambda a: a[:, None]),
    ("alias", (2, 3), lambda t: t[...], lambda a: a[...]),
    ("lift_fresh", (2, 3), lambda t: descent.lift_fresh(t), lambda a: a),  # self itself, as aten's
    ("unsqueeze-last", (2, 3), lambda t: t.unsqueeze(-1), lambda a: a[..., None]),
    ("unsqueeze-0d", (), lambda t: t.unsqueeze(0), lambda a: a[None]),
    ("unsqueeze-of-transposed", (3, 4), lambda t: t.T.unsqueeze(1), lambda a: a.T[:, None]),
    ("slice", (4, 6), lambda t: descent.slice(t, 1, 1, 5, 2), lambda a: a[:, 1:5:2]),
    ("slice-defaults", (4, 6), lambda t: descent.slice(t), lambda a: a[:]),
    ("slice-negative", (4, 6), lambda t: descent.slice(t, -1, -4, None), lambda a: a[:, -4:]),
    ("slice-clamped", (4, 6), lambda t: descent.slice(t, 0, -100, 100, 3), lambda a: a[-100:100:3]),
    ("slice-empty", (4, 6), lambda t: descent.slice(t, 0, 3, 1), lambda a: a[3:1]),
    ("select", (4, 6), lambda t: descent.select(t, 1, 2), lambda a: a[:, 2]),
    ("select-negative", (4, 6), lambda t: descent.select(t, 0, -1), lambda a: a[-1]),
    ("select-to-0d", (5,), lambda t: descent.select(t, 0, 3), lambda a: a[3, ...]),
    # issue 42's: narrow (a slice), squeeze in its three forms, unfold, as_strided
    ("narrow", (4, 6), lambda t: t.narrow(1, 2, 3), lambda a: a[:, 2:5]),
    ("narrow-negative", (4, 6), lambda t: descent.narrow(t, 0, -2, 2), lambda a: a[-2:]),
    ("squeeze", (2, 1, 3, 1), lambda t: t.squeeze(), lambda a: a.squeeze()),
    ("squeeze-dim", (2, 1, 3), lambda t: t.squeeze(1), lambda a: a.squeeze(1)),
    ("squeeze-dims", (1, 2, 1), lambda t: t.squeeze((0, 2)), lambda a: a.squeeze((0, 2))),
    ("squeeze-of-transposed", (3, 1, 4), lambda t: t.transpose(0, 2).squeeze(1), lambda a: a.swapaxes(0, 2)[:, 0]),
    # windows that do not overlap: check_view writes through the view (test_learner_ops.py has overlapping ones)
    ("unfold", (2, 7), lambda t: t.unfold(1, 2, 3), lambda a: np.lib.stride_tricks.sliding_window_view(a, 2, 1)[:, ::3]),
    ("as_strided", (4, 6), lambda t: t.as_strided((3, 3), (6, 2), 1),
     lambda a: np.lib.stride_tricks.as_strided(a.reshape(-1)[1:], (3, 3), (6 * a.itemsize, 2 * a.itemsize))),
]
EXPAND_CASES = [
    ("expand", (4, 1), lambda t: t.expand(3, 4, 6), lambda a: np.broadcast_to(a, (3, 4, 6))),
    ("expand-infer", (1, 3), lambda t: t.expand(5, -1), lambda a: np.broadcast_to(a, (5, 3))),
    ("expand-list", (3,), lambda t: descent.expand(t, [2, 3]), lambda a: np.broadcast_to(a, (2, 3))),
    ("expand-to-zero", (1, 3), lambda t: t.expand(0, 3), lambda a: np.broadcast_to(a, (0, 3))),
    ("expand-0d", (), lambda t: t.expand(2, 2), lambda a: np.broadcast_to(a, (2, 2))),
    ("view-of-expanded", (1, 3), lambda t: t.expand(4, 3).view(2, 2, 3),
     lambda a: np.broadcast_to(a, (4, 3)).reshape(2, 2, 3)),
]


def test_cases_cover_every_view_op():
    names = {case[0].split("-")[0] for case in VIEW_CASES + EXPAND_CASES}
    assert VIEW_OPS <= names


@pytest.mark.parametrize("dtype", DTYPES, ids=dtype_id)
@pytest.mark.parametrize("case", VIEW_CASES + EXPAND_CASES, ids=lambda c: c[0])
def test_view(case, dtype, rng):
    name, shape, view, np_fn = case
    base = descent.tensor(random_array(rng, shape, dtype))
    v = view(base)
    check_view(v, base, np_fn(to_np(base)), rng, writable=not name.startswith(("expand", "view-of-exp")))


def test_view_strides_follow_pytorch():
    x = descent.zeros(2, 3, 4)
    assert x.stride() == (12, 4, 1) and x.is_contiguous()
    assert x.transpose(0, 2).stride() == (1, 4, 12) and not x.transpose(0, 2).is_contiguous()
    assert x.unsqueeze(1).stride() == (12, 12, 4, 1) and x.unsqueeze(3).stride() == (12, 4, 1, 1)
    assert x[:, 1:, ::2].stride() == (12, 4, 2) and x[:, 1:, ::2].storage_offset() == 4
    assert x[1].storage_offset() == 12 and x[..., -1].storage_offset() == 3
    assert x.expand(5, 2, 3, 4).stride() == (0, 12, 4, 1)
    assert descent.ones(3, 1).expand(3, 4).stride() == (1, 0)


# [SECTION] Indexing -------------------------------------------------------------------

INDICES = [0, -1, 3, slice(None), slice(1, 3), slice(None, None, 2), slice(-3, None), slice(-100, 100),
           slice(3, 1), slice(1, None, 4), slice(10, None), (1, 2), (1, slice(None), -1), (Ellipsis, 0),
           None, (None, 1, None), (Ellipsis, None), (0, Ellipsis, None, slice(None, None, 3)),
           (slice(None), None, slice(2, 5, 2)), (), Ellipsis, (-4, -5, -6), (slice(1, 3), Ellipsis, slice(0, 1))]


@pytest.mark.parametrize("layout", ["contiguous", "transposed", "stepped"])
@pytest.mark.parametrize("index", INDICES, ids=repr)
def test_indexing(index, layout, rng):
    base = descent.tensor(random_array(rng, (4, 5, 6) if layout != "transposed" else (6, 5, 4), descent.float32))
    if layout == "transposed":
        x = base.permute(2, 1, 0)
    elif layout == "stepped":
        base = descent.tensor(random_array(rng, (8, 5, 13), descent.float32))
        x = base[::2, :, 1::2]
    else:
        x = base
    np_index = index if isinstance(index, tuple) else (index,)
    if not any(i is Ellipsis for i in np_index):
        np_index += (Ellipsis,)  # numpy gives a 0-d view, not a scalar, for a full int index
    check_view(x[index], base, to_np(x)[np_index], rng)


def test_indexing_with_int_tensor_and_0d():
    x = descent.arange(12).view(3, 4)
    assert x[descent.tensor(1)].tolist() == [4, 5, 6, 7]
    assert x[1][2].item() == 6 and x[-1, -1].item() == 11 and x[1, 2].dim() == 0
    s = x[0, 0]
    assert s[None].shape == (1,) and s[...].shape == () and s[()].shape == ()


@pytest.mark.parametrize("index,error", [
    ((slice(None, None, -1),), ValueError), ((slice(None, None, 0),), ValueError),
    ((1.5,), IndexError), (("a",), TypeError),  # PyTorch's classes ("new(): invalid data type 'str'": a str is a
    # sequence, which PyTorch tries to make an index tensor); True is a mask (test_indexing.py)
    ((Ellipsis, Ellipsis), IndexError), ((0, 0, 0), IndexError), ((3,), IndexError), ((-4,), IndexError),
    ((slice(None), 4), IndexError),
])
def test_indexing_errors(index, error):
    with pytest.raises(error):
        descent.zeros(3, 4)[index]


@pytest.mark.parametrize("index,dim", [((0, 5), 1), ((5,), 0), ((1, -4), 1), ((Ellipsis, 9), 1),
                                       ((None, 0, 7), 1), ((slice(None), 3), 1), ((None, Ellipsis, 1, 4), 1)])
def test_index_error_names_the_dim_of_the_tensor(index, dim):
    """t[0, 5] on a (2, 3) tensor is out of bounds for dimension 1, as PyTorch says,
    not for dimension 0 of the row t[0] that the first index left."""
    x = descent.zeros(2, 3)
    k = [i for i in index if isinstance(i, int)][-1]
    with pytest.raises(IndexError, match=rf"^index {k} is out of bounds for dimension {dim} with size {x.shape[dim]}$"):
        x[index]


def test_size_and_stride_dim_out_of_range():
    x = descent.zeros(2, 3)
    assert x.size(1) == 3 and x.size(-2) == 2 and x.stride(0) == 3 and x.stride(-1) == 1
    assert x.size(np.int64(1)) == 3
    for dim in (2, 5, -3):
        for fn in (x.size, x.stride):
            with pytest.raises(IndexError, match=re.escape(
                    f"Dimension out of range (expected to be in range of [-2, 1], but got {dim})")):
                fn(dim)
    with pytest.raises(IndexError, match="Dimension specified as 0 but tensor has no dimensions"):
        descent.tensor(1.0).size(0)
    with pytest.raises(TypeError):
        x.size(1.0)


def test_slice_with_huge_steps():
    """Steps near 2**63: the length is ceil((end - start) / step) without overflow,
    and a stride * step past int64 is never needed by a dim of one element."""
    x = descent.arange(6.)
    for step in (2 ** 63 - 1, 2 ** 62, 7, 6):
        v = x[::step]
        assert v.shape == (1,) and v.tolist() == [0.0], step
    assert x[1::2 ** 63 - 1].tolist() == [1.0] and x[5::2 ** 63 - 1].tolist() == [5.0]
    assert x[6::2 ** 63 - 1].shape == (0,) and x[3:1:2 ** 63 - 1].shape == (0,)
    assert x[::5].tolist() == [0.0, 5.0] and x[-2 ** 63:2 ** 63 - 1:2 ** 62].tolist() == [0.0]
    m = descent.arange(6.).view(2, 3)
    v = m[::2 ** 62]
    assert v.shape == (1, 3) and v.tolist() == [[0.0, 1.0, 2.0]]
    assert m[:, ::2 ** 62].tolist() == [[0.0], [3.0]] and m[1:, 1::2 ** 63 - 1].tolist() == [[4.0]]
    assert descent.slice(m, 0, None, None, 2 ** 63 - 1).tolist() == [[0.0, 1.0, 2.0]]


def test_reshape_to_more_elements_than_int64_counts():
    x = descent.arange(4.)
    for shape in [(2 ** 62 + 1, 4), (2 ** 62 + 1, -1), (-1, 2 ** 62 + 1, 4), (2 ** 32, 2 ** 32, 2), (2 ** 62, 2 ** 62)]:
        for fn in (x.reshape, x.view):
            with pytest.raises(RuntimeError, match=r"^shape '\[.*\]' is invalid for input of size 4"):
                fn(*shape)
    e = descent.zeros(0)
    assert e.reshape(2 ** 62 + 1, 0).shape == (2 ** 62 + 1, 0)  # a zero makes it empty, whatever the rest
    with pytest.raises(RuntimeError, match="invalid for input of size 0"):
        e.reshape(2 ** 62 + 1, 4, 0, -1)


def test_index_with_numpy_int():
    assert descent.arange(4)[np.int64(1)].item() == 1


def test_index_0d_raises():
    with pytest.raises(IndexError):
        descent.tensor(1.0)[0]


# [SECTION] Copies -----------------------------------------------------------------------

@pytest.mark.parametrize("dtype", DTYPES, ids=dtype_id)
def test_contiguous_clone(dtype, rng):
    a = random_array(rng, (3, 4), dtype)
    x = descent.tensor(a)
    assert x.contiguous().data_ptr() == x.data_ptr()                # already contiguous: itself
    t = x.T
    c = t.contiguous()
    assert c.is_contiguous() and c.stride() == (3, 1) and c.data_ptr() != x.data_ptr()
    np.testing.assert_array_equal(to_np(c), a.T)
    k = x.clone()
    assert k.data_ptr() != x.data_ptr() and k.dtype is dtype
    np.testing.assert_array_equal(to_np(k), a)
    x.copy_(descent.tensor(random_array(rng, (3, 4), dtype)))
    np.testing.assert_array_equal(to_np(c), a.T)                      # copies do not follow the base
    np.testing.assert_array_equal(to_np(k), a)
    kt = t.clone()                                                    # clone of a view: same values
    np.testing.assert_array_equal(to_np(kt), to_np(t))


@pytest.mark.parametrize("src", DTYPES, ids=dtype_id)
@pytest.mark.parametrize("dst", DTYPES, ids=dtype_id)
def test_to(src, dst, rng):
    a = random_array(rng, (2, 5), src)
    if src is descent.float32:
        a *= 3  # values beyond [-4, 4) for the float -> int64 truncation
    x = descent.tensor(a).T
    y = x.to(dst)
    assert y.dtype is dst and y.shape == (5, 2)
    np.testing.assert_array_equal(to_np(y), a.T.astype(np_dtype(dst)))
    assert (y.data_ptr() == x.data_ptr()) == (src is dst)             # same dtype: the tensor itself
    z = descent.to(x, dst, copy=True)
    assert z.data_ptr() != x.data_ptr()
    np.testing.assert_array_equal(to_np(z), to_np(y))
    assert x.to("cpu").data_ptr() == x.data_ptr() and x.to(device="cpu", dtype=dst).dtype is dst


def test_dtype_methods():
    x = descent.tensor([1.5, -2.5, 0.0])
    assert x.double().dtype is descent.float64 and x.float() is not None
    assert x.long().tolist() == [1, -2, 0] and x.bool().tolist() == [True, True, False]
    assert descent.tensor([True, False]).float().tolist() == [1.0, 0.0]


@pytest.mark.parametrize("dtype", DTYPES, ids=dtype_id)
def test_copy_(dtype, rng):
    base = descent.zeros(4, 6, dtype=dtype)
    dst = base[1:, ::2]                                               # non-contiguous destination
    row = random_array(rng, (1, 3), descent.float64)
    out = dst.copy_(descent.tensor(row))                              # broadcast, converted to dtype
    assert out.data_ptr() == dst.data_ptr() and out.shape == (3, 3)
    expected = np.zeros((4, 6), np_dtype(dtype))
    expected[1:, ::2] = np.broadcast_to(row, (3, 3)).astype(np_dtype(dtype))
    np.testing.assert_array_equal(to_np(base), expected)
    src = random_array(rng, (3, 3), dtype)
    dst.copy_(descent.tensor(src).T)                                  # non-contiguous source
    expected[1:, ::2] = src.T
    np.testing.assert_array_equal(to_np(base), expected)
    with pytest.raises(RuntimeError, match=re.escape("The size of tensor a (3) must match the size of tensor b (4) at non-singleton dimension 1")):
        dst.copy_(descent.zeros(3, 4, dtype=dtype))
    with pytest.raises(RuntimeError, match=r"output with shape \[3, 3\] doesn't match the broadcast shape \[2, 3, 3\]"):
        dst.copy_(descent.zeros(2, 3, 3, dtype=dtype))                # src may not have more dims


@pytest.mark.parametrize("variant", ["auto", "reference"])
def test_copy_overlapping_raises(variant):
    r = run_python("import descent\n"
                   f"descent.set_kernel_variant('{variant}')\n"
                   "x = descent.arange(6.0)\n"
                   "try:\n    x[1:].copy_(x[:-1])\nexcept RuntimeError as e:\n    print('RuntimeError', e)\n")
    assert r.returncode == 0 and r.stdout.startswith("RuntimeError"), (r.stdout, r.stderr[-800:])


def test_copy_into_expanded_raises():
    with pytest.raises(RuntimeError):
        descent.zeros(1).expand(3).copy_(descent.arange(3.0))


def test_reshape_copies_when_it_must(rng):
    a = random_array(rng, (4, 6), descent.float32)
    x = descent.tensor(a)
    r = x.T.reshape(-1)                                               # not viewable: a copy
    np.testing.assert_array_equal(to_np(r), a.T.reshape(-1))
    assert r.is_contiguous()
    x.copy_(descent.zeros(4, 6))
    np.testing.assert_array_equal(to_np(r), a.T.reshape(-1))          # unchanged: its own memory
    v = x.reshape(3, 8)                                               # viewable: shares memory
    assert v.data_ptr() == x.data_ptr()


def test_view_errors():
    x = descent.zeros(2, 3)
    with pytest.raises(RuntimeError, match="reshape"):
        x.T.view(6)
    with pytest.raises(RuntimeError, match="invalid for input of size 6"):
        x.view(4, -1)
    with pytest.raises(RuntimeError, match="only one dimension"):
        x.view(-1, -1)
    with pytest.raises(RuntimeError, match="permute"):
        x.permute(0, 0)
    with pytest.raises(RuntimeError, match="permute"):
        x.permute(0)
    with pytest.raises(RuntimeError, match="expand"):
        x.expand(4, 3)
    with pytest.raises(RuntimeError, match="expand"):
        x.expand(3)
    with pytest.raises(IndexError, match="out of range"):
        x.transpose(0, 2)
    with pytest.raises(IndexError, match="out of range"):
        x.unsqueeze(3)
    with pytest.raises(IndexError, match="out of bounds"):
        descent.select(x, 1, 3)
    with pytest.raises(RuntimeError, match="step"):
        descent.slice(x, 0, None, None, 0)


def test_expand_negative_size_raises():
    with pytest.raises(RuntimeError):
        descent.ones(1).expand(-2)


def test_transpose_0d_checks_dims():
    with pytest.raises(IndexError):
        descent.tensor(1.0).transpose(0, 5)


def test_shape_is_a_size_like_torch_size():
    x = descent.zeros(2, 3, 4)
    assert repr(x.shape) == "descent.Size([2, 3, 4])" and str(x.size()) == "descent.Size([2, 3, 4])"
    assert isinstance(x.shape, tuple) and x.shape == (2, 3, 4) and x.size() == x.shape
    assert type(x.shape[1:]) is descent.Size and x.shape[1:] == (3, 4) and x.shape[-1] == 4
    assert x.shape.numel() == 24 == x.numel() and descent.Size([]).numel() == 1
    assert descent.ones(x.shape).shape == x.shape and descent.tensor(1.0).shape == ()
