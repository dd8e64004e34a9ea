"""Making tensors and reading them back.

- factories: empty/zeros/ones/full (sizes as ints, tuple or list; dtype
  inference of full), arange (both overloads, dtype inference, negative step);
- rand/randn: shape, dtype, range, seeded reproducibility (manual_seed then
  the same draws), successive draws differ, mean/std plausible on 10^5 samples;
- descent.tensor from numbers, nested lists (dtype inference, ragged ->
  ValueError), numpy arrays (float32/float64/int64/bool, non-contiguous,
  negative strides, zero-size, 0-d) and tensors; numpy() round trip;
- item(), tolist(), len, iteration, shape/dtype/device/ndim/numel, float/int/bool;
- repr in PyTorch's format (every expected string is PyTorch's own output, with
  'torch.' read as 'descent.').
"""
import math

import numpy as np
import pytest

import descent
from conftest import DTYPES, FLOAT_DTYPES, dtype_id, np_dtype, random_array, run_python, to_np

B, I, F, D = descent.bool, descent.int64, descent.float32, descent.float64


# [SECTION] Factories ------------------------------------------------------------------

@pytest.mark.parametrize("name,value", [("zeros", 0), ("ones", 1), ("empty", None)])
@pytest.mark.parametrize("dtype", [None] + DTYPES, ids=lambda d: "default" if d is None else dtype_id(d))
def test_fill_factories(name, value, dtype):
    fn = getattr(descent, name)
    for args in [(2, 3), ((2, 3),), ([2, 3],)]:
        t = fn(*args, dtype=dtype)
        assert t.shape == (2, 3) and t.dtype is (dtype or F) and t.is_contiguous() and t.device == descent.device("cpu")
        if value is not None:
            assert np.array_equal(to_np(t), np.full((2, 3), value, np_dtype(dtype or F)))
    for shape in [(), (0,), (3, 0, 2), (1,) * 8]:
        t = fn(shape, dtype=dtype)
        assert t.shape == shape and t.numel() == math.prod(shape)


def test_full():
    assert descent.full((2, 2), 1.5).dtype is F and descent.full([2], 3).dtype is I
    assert descent.full([2], True).dtype is B and descent.full([2], 7, dtype=D).tolist() == [7.0, 7.0]
    assert descent.full([3], -2.5).tolist() == [-2.5] * 3 and descent.full([], 4).item() == 4
    assert descent.full([2], 2.7, dtype=I).tolist() == [2, 2]


@pytest.mark.parametrize("value,dtype,type_name", [
    (float("nan"), I, "int64_t"), (float("inf"), I, "int64_t"), (float("-inf"), I, "int64_t"),
    (1e20, I, "int64_t"), (-1e20, I, "int64_t"), (2.0 ** 63, I, "int64_t"), (-(2.0 ** 64), I, "int64_t"),
    (1e300, F, "float"), (-1e300, F, "float"), (1e300, None, "float"), (3.5e38, F, "float"),
])
def test_full_value_that_does_not_fit(value, dtype, type_name):
    """A fill value the dtype cannot hold raises, as in PyTorch, instead of
    becoming INT64_MIN (an undefined C++ cast) or inf."""
    with pytest.raises(RuntimeError, match=rf"full\(\): fill_value cannot be converted to type {type_name} without overflow"):
        descent.full([2], value, dtype=dtype)


def test_full_value_at_the_edges():
    assert descent.full([1], -(2.0 ** 63), dtype=I).tolist() == [-(2 ** 63)]   # -2**63 itself fits
    assert descent.full([1], 2.0 ** 63 - 1024, dtype=I).tolist() == [2 ** 63 - 1024]  # the largest double below 2**63
    assert descent.full([1], -0.9, dtype=I).tolist() == [0]
    assert descent.full([1], float("nan"), dtype=B).tolist() == [True] and descent.full([1], 1e300, dtype=B).item()
    assert descent.full([1], 1e300, dtype=D).tolist() == [1e300]
    assert math.isnan(descent.full([1], float("nan")).item()) and descent.full([1], -math.inf).tolist() == [-math.inf]
    assert descent.full([1], 3.4028234663852886e38).tolist() == [3.4028234663852886e38]  # float's largest
    x = descent.tensor([float("nan"), 1e20, 1.5])
    assert x.to(I).tolist()[2] == 1                                  # a tensor cast is not checked, as in PyTorch


def test_alpha_that_does_not_fit():
    x = descent.ones(2)
    with pytest.raises(RuntimeError, match="add\\(\\): alpha cannot be converted to type float without overflow"):
        descent.add(x, x, alpha=1e300)
    assert descent.add(x.double(), x.double(), alpha=1e300).tolist() == [1e300, 1e300]


@pytest.mark.parametrize("args,kwargs,expected,dtype", [
    ((5,), {}, [0, 1, 2, 3, 4], I),
    ((5.0,), {}, [0.0, 1.0, 2.0, 3.0, 4.0], F),
    ((0,), {}, [], I),
    ((1, 7.5, 0.5), {}, [1 + 0.5 * i for i in range(13)], F),
    ((0, 5, 2), {}, [0, 2, 4], I),
    ((5, 0, -1), {}, [5, 4, 3, 2, 1], I),
    ((-3, 3), {}, [-3, -2, -1, 0, 1, 2], I),
    ((0, 1, 0.25), {}, [0.0, 0.25, 0.5, 0.75], F),
    ((4,), {"dtype": D}, [0.0, 1.0, 2.0, 3.0], D),
    ((1, 4), {"dtype": F}, [1.0, 2.0, 3.0], F),
    # 16-bit floats step by fractions too (they had taken the integer path: every element was start).
    ((-3, 5.5, 0.75), {"dtype": descent.float16}, [-3 + 0.75 * i for i in range(12)], descent.float16),
    ((0, 1, 0.25), {"dtype": descent.bfloat16}, [0.0, 0.25, 0.5, 0.75], descent.bfloat16),
])
def test_arange(args, kwargs, expected, dtype):
    t = descent.arange(*args, **kwargs)
    assert t.dtype is dtype and t.shape == (len(expected),) and t.tolist() == expected


@pytest.mark.parametrize("args,expected", [
    ((2 ** 63 - 10, 2 ** 63 - 1, 3), [2 ** 63 - 10, 2 ** 63 - 7, 2 ** 63 - 4]),
    ((-2 ** 63, -2 ** 63 + 10, 3), [-2 ** 63, -2 ** 63 + 3, -2 ** 63 + 6, -2 ** 63 + 9]),
    ((2 ** 63 - 2, 2 ** 63 - 1, 2 ** 62), [2 ** 63 - 2]),
    ((-2 ** 63, 2 ** 63 - 1, 2 ** 63 - 1), [-2 ** 63, -1, 2 ** 63 - 2]),
    ((-2 ** 63, 2 ** 63 - 1, 2 ** 62), [-2 ** 63, -2 ** 62, 0, 2 ** 62]),
    ((2 ** 63 - 1, -2 ** 63, -2 ** 63), [2 ** 63 - 1, -1]),
    ((2 ** 63 - 1, -2 ** 63, -(2 ** 63 - 1)), [2 ** 63 - 1, 0, -2 ** 63 + 1]),
    ((5, -2 ** 63, -2 ** 63), [5, 5 - 2 ** 63]),
    ((2 ** 63 - 1, 2 ** 63 - 1, 1), []),
    ((-2 ** 63, -2 ** 63 + 1, 2 ** 63 - 1), [-2 ** 63]),
])
def test_arange_at_the_ends_of_int64(args, expected):
    """Integer bounds are counted exactly, where a double would round 2**63 - 10 to 2**63."""
    t = descent.arange(*args)
    assert t.dtype is I and t.tolist() == expected
    assert descent.arange(*args, dtype=D).shape == (len(expected),)  # the same length in any dtype


def test_arange_float_bounds_into_int64():
    assert descent.arange(0, 5.5, 1.5, dtype=I).tolist() == [0, 1, 2, 3]  # start and step truncated, like PyTorch
    with pytest.raises(RuntimeError, match="arange\\(\\): start cannot be converted to type int64_t without overflow"):
        descent.arange(1e19, 1e19 + 1e5, 1e4, dtype=I)


def test_arange_errors():
    with pytest.raises(RuntimeError, match="step"):
        descent.arange(0, 5, 0)
    with pytest.raises(RuntimeError, match="bound"):
        descent.arange(-3)
    with pytest.raises(RuntimeError):
        descent.arange(0, float("inf"))


@pytest.mark.parametrize("name", ["rand", "randn"])
@pytest.mark.parametrize("dtype", FLOAT_DTYPES, ids=dtype_id)
def test_random_seeded(name, dtype):
    fn = getattr(descent, name)
    descent.manual_seed(0)
    a, b = fn(4, 33, dtype=dtype), fn(4, 33, dtype=dtype)
    assert a.shape == (4, 33) and a.dtype is dtype
    descent.manual_seed(0)
    a2, b2 = fn(4, 33, dtype=dtype), fn([4, 33], dtype=dtype)
    assert a.tolist() == a2.tolist() and b.tolist() == b2.tolist()    # reseeding replays the draws
    assert a.tolist() != b.tolist()                                     # successive draws differ
    descent.manual_seed(1)
    assert fn(4, 33, dtype=dtype).tolist() != a.tolist()                # another seed, other numbers
    assert fn(0, 3).shape == (0, 3) and fn(()).dim() == 0


def test_rand_range_and_moments():
    descent.manual_seed(1234)
    u = to_np(descent.rand(100_000)).astype(np.float64)
    assert u.min() >= 0.0 and u.max() < 1.0
    assert abs(u.mean() - 0.5) < 0.01 and abs(u.std() - math.sqrt(1 / 12)) < 0.01
    assert len(np.unique(u)) > 99_000
    n = to_np(descent.randn(100_000, dtype=D))
    assert abs(n.mean()) < 0.02 and abs(n.std() - 1.0) < 0.02
    assert 0.66 < np.mean(np.abs(n) < 1) < 0.70                         # 68% within one sigma
    assert np.all(np.isfinite(n))


def test_rand_int_dtype_raises():
    with pytest.raises(NotImplementedError, match="\"check_uniform_bounds\" not implemented for 'Long'"):
        descent.rand(3, dtype=I)
    with pytest.raises(NotImplementedError, match="\"normal_kernel_cpu\" not implemented for 'Bool'"):
        descent.randn(3, dtype=B)


# [SECTION] descent.tensor -----------------------------------------------------------

@pytest.mark.parametrize("data,dtype,shape", [
    (3.5, F, ()), (3, I, ()), (True, B, ()),
    ([1, 2, 3], I, (3,)), ([1.0, 2, 3], F, (3,)), ([True, False], B, (2,)),
    ([True, 2], I, (2,)), ([1, 2.5, True], F, (3,)),
    ([[1, 2], [3, 4]], I, (2, 2)), ((1.5, 2.5), F, (2,)), ([(1, 2), [3, 4]], I, (2, 2)),
    ([], F, (0,)), ([[]], F, (1, 0)), ([[[1]]], I, (1, 1, 1)),
    ([np.int64(3), np.float64(2.5)], descent.float64, (2,)),  # numpy scalars keep their dtypes, as in torch
])
def test_tensor_from_python(data, dtype, shape):
    t = descent.tensor(data)
    assert t.dtype is dtype and t.shape == shape
    assert t.tolist() == (np.array(data, dtype=np_dtype(dtype)).tolist())


def test_tensor_explicit_dtype():
    assert descent.tensor([1, 2], dtype=D).tolist() == [1.0, 2.0]
    assert descent.tensor([1.7, -1.7], dtype=I).tolist() == [1, -1]
    assert descent.tensor([0.0, 2.0], dtype=B).tolist() == [False, True]
    with pytest.raises(TypeError, match="dtype"):
        descent.tensor([1], dtype="float32")


@pytest.mark.parametrize("data,error", [
    # torch/csrc/utils/tensor_new.cpp's classes: a number where a list belongs is "not a sequence" (TypeError),
    # a value of no dtype "Could not infer dtype of NoneType" (RuntimeError)
    ([[1, 2], [3]], ValueError), ([[1, 2], 3], TypeError), ([[1], 2], TypeError), ([[], [1]], ValueError),
    ("abc", TypeError), ([1, "a"], TypeError), ([1, None], RuntimeError), (None, RuntimeError), ({1: 2}, RuntimeError),
    (np.zeros(3, dtype=np.complex64), TypeError), ([[[[[[[[[1]]]]]]]]], ValueError),
])
def test_tensor_bad_data(data, error):
    with pytest.raises(error):
        descent.tensor(data)


def test_tensor_ragged_number_then_list():
    r = run_python("import descent\n"
                   "try:\n    descent.tensor([1, [2]])\nexcept TypeError as e:\n    print('TypeError', e)\n")
    assert r.returncode == 0, (r.returncode, r.stderr[-500:])  # torch stores 1 as an int64, then the list fails:
    assert r.stdout == "TypeError 'list' object cannot be interpreted as an integer\n"


def test_tensor_big_int_in_float_list():
    assert descent.tensor([1.5, 2 ** 70]).tolist() == [1.5, float(np.float32(2 ** 70))]
    assert repr(descent.tensor([1.5, 2 ** 70])) == "tensor([1.5000e+00, 1.1806e+21])"
    assert descent.tensor([2 ** 70], dtype=D).tolist() == [float(2 ** 70)]
    assert descent.tensor([2 ** 70], dtype=B).tolist() == [True]            # a bool tensor takes the truth
    assert descent.tensor([2 ** 63 - 1, -2 ** 63]).tolist() == [2 ** 63 - 1, -2 ** 63]


def test_tensor_int_past_int64():
    for data, dtype in [([2 ** 70], None), ([1, -2 ** 63 - 1], None), ([1.5, 2 ** 70], I)]:
        with pytest.raises(ValueError, match=r"Overflow when unpacking long long \(tensor\(\): element [01] .*int64"):
            descent.tensor(data, dtype=dtype)
    with pytest.raises(OverflowError):                                      # past even a double
        descent.tensor([10 ** 400, 0.5])


@pytest.mark.parametrize("dtype", DTYPES, ids=dtype_id)
def test_tensor_from_numpy(dtype, rng):
    a = random_array(rng, (4, 6), dtype)
    views = {"contiguous": a, "transposed": a.T, "stepped": a[1::2, ::3], "negative": a[::-1, ::-2],
             "broadcast": np.broadcast_to(a[:1], (3, 4, 6)), "zero-size": a[:0], "0-d": a[1, 2, ...],
             "fortran": np.asfortranarray(a)}
    for name, v in views.items():
        t = descent.tensor(v)
        assert t.dtype is dtype and t.shape == v.shape and t.is_contiguous(), name
        np.testing.assert_array_equal(to_np(t), v)
        if name != "negative":  # from_numpy shares the array's memory: torch refuses negative strides
            assert descent.from_numpy(v).tolist() == v.tolist()
    b = a.copy()
    t = descent.tensor(b)
    b[...] = np.zeros_like(b)
    assert t.tolist() == a.tolist()                                     # a copy, not a view of b


@pytest.mark.parametrize("dtype", DTYPES, ids=dtype_id)
def test_numpy_round_trip(dtype, rng):
    a = random_array(rng, (3, 5), dtype)
    t = descent.tensor(a)
    n = t.numpy()
    assert n.dtype == np_dtype(dtype) and np.array_equal(n, a)
    n[1, 1] = a[0, 0]                                                   # numpy() shares the memory
    assert t[1, 1].item() == a[0, 0]
    v = t.T[::2]                                                        # a strided view round-trips too
    assert np.array_equal(to_np(v), to_np(t).T[::2]) and np.shares_memory(to_np(v), n)
    assert np.array_equal(to_np(descent.tensor(to_np(v))), to_np(v))
    assert np.asarray(t, dtype=np.float64).dtype == np.float64


def test_tensor_from_tensor_copies():
    x = descent.arange(6).view(2, 3)
    y = descent.tensor(x.T)
    assert y.tolist() == [[0, 3], [1, 4], [2, 5]] and y.data_ptr() != x.data_ptr()
    assert descent.tensor(x, dtype=F).dtype is F


# [SECTION] Reading tensors -------------------------------------------------------------

def test_item_tolist_len_iter():
    t = descent.tensor([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]])
    assert t.shape == (2, 3) and t.size() == (2, 3) and t.size(1) == 3 and t.size(-1) == 3
    assert t.dtype is F and str(t.device) == "cpu" and t.device.type == "cpu" and t.device.index is None
    assert t.ndim == 2 and t.dim() == 2 and t.numel() == 6 and len(t) == 2
    assert [r.tolist() for r in t] == [[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]]
    assert t.tolist() == [[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]] and t.T.tolist() == [[1.0, 4.0], [2.0, 5.0], [3.0, 6.0]]
    assert t[1, 2].item() == 6.0 and isinstance(t[1, 2].item(), float)
    assert descent.tensor(7).item() == 7 and isinstance(descent.tensor(7).item(), int)
    assert descent.tensor(True).item() is True and descent.tensor([[5]]).item() == 5
    assert descent.tensor(2.5).tolist() == 2.5 and descent.zeros(0, 2).tolist() == []
    assert float(descent.tensor(2.5)) == 2.5 and int(descent.tensor(3)) == 3 and bool(descent.tensor([1]))
    assert [1, 2, 3][descent.tensor(1)] == 2                            # __index__
    with pytest.raises(RuntimeError, match="2 elements"):
        descent.ones(2).item()
    with pytest.raises(TypeError, match="0-d"):
        len(descent.tensor(1.0))
    with pytest.raises(RuntimeError, match="ambiguous"):
        bool(descent.ones(2))
    with pytest.raises(TypeError):
        [1, 2][descent.tensor(1.0)]


def test_format():
    """A 0-d tensor formats like its item(); others accept only "" (str), as in PyTorch."""
    assert f"{descent.tensor(3.14159):.2f}" == "3.14" and f"{descent.tensor(7):>4}" == "   7"
    assert f"{descent.tensor(2.5, dtype=D):e}" == "2.500000e+00" and f"{descent.tensor(True)}" == "True"
    assert format(descent.ones(2)) == str(descent.ones(2)) and f"{descent.ones(1)}" == "tensor([1.])"
    with pytest.raises(TypeError, match="unsupported format string"):
        f"{descent.ones(2):.2f}"
    with pytest.raises(ValueError):
        f"{descent.tensor(1.5):d}"


def test_device_and_dtype_objects():
    assert descent.device("cpu") != descent.device("cpu:0") and repr(descent.device("cpu")) == "device(type='cpu')"
    assert repr(descent.device("sim:1")) == "device(type='sim', index=1)" and str(descent.device("cuda:2")) == "cuda:2"
    assert repr(descent.float32) == "descent.float32" and descent.float is descent.float32
    assert descent.double is D and descent.long is I and descent.float64.itemsize == 8
    assert descent.bool.itemsize == 1 and not descent.int64.is_floating_point and descent.float32.is_floating_point


# [SECTION] repr ---------------------------------------------------------------------------

REPRS = [
    (lambda: descent.tensor([[1.0, 2.0], [3.0, 4.0]]), "tensor([[1., 2.],\n        [3., 4.]])"),
    (lambda: descent.tensor(3.5), "tensor(3.5000)"),
    (lambda: descent.tensor(3), "tensor(3)"),
    (lambda: descent.tensor(True), "tensor(True)"),
    (lambda: descent.tensor([1, 2, 3]), "tensor([1, 2, 3])"),
    (lambda: descent.tensor([1, -10]), "tensor([  1, -10])"),
    (lambda: descent.tensor([True, False]), "tensor([ True, False])"),
    (lambda: descent.tensor([1.5, -2.25]), "tensor([ 1.5000, -2.2500])"),
    (lambda: descent.tensor([1.5, 2.0], dtype=D), "tensor([1.5000, 2.0000], dtype=descent.float64)"),
    (lambda: descent.tensor(2.0, dtype=D), "tensor(2., dtype=descent.float64)"),
    (lambda: descent.tensor([1e10, 1.0]), "tensor([1.0000e+10, 1.0000e+00])"),
    (lambda: descent.tensor([float("nan"), 1.5]), "tensor([   nan, 1.5000])"),
    (lambda: descent.zeros(0), "tensor([])"),
    (lambda: descent.zeros(0, 3), "tensor([], size=(0, 3))"),
    (lambda: descent.arange(6).view(2, 3).T, "tensor([[0, 3],\n        [1, 4],\n        [2, 5]])"),
    # Blank lines between the 2-D blocks: one for 3-D, two for 4-D.
    (lambda: descent.zeros(2, 1, 2), "tensor([[[0., 0.]],\n\n        [[0., 0.]]])"),
    (lambda: descent.ones(2, 1, 1, 2), "tensor([[[[1., 1.]]],\n\n\n        [[[1., 1.]]]])"),
    (lambda: descent.arange(60).view(3, 4, 5),
     "tensor([[[ 0,  1,  2,  3,  4],\n         [ 5,  6,  7,  8,  9],\n         [10, 11, 12, 13, 14],\n"
     "         [15, 16, 17, 18, 19]],\n\n        [[20, 21, 22, 23, 24],\n         [25, 26, 27, 28, 29],\n"
     "         [30, 31, 32, 33, 34],\n         [35, 36, 37, 38, 39]],\n\n        [[40, 41, 42, 43, 44],\n"
     "         [45, 46, 47, 48, 49],\n         [50, 51, 52, 53, 54],\n         [55, 56, 57, 58, 59]]])"),
    (lambda: descent.zeros(3, 3, 3, dtype=D),
     "tensor([[[0., 0., 0.],\n         [0., 0., 0.],\n         [0., 0., 0.]],\n\n        [[0., 0., 0.],\n"
     "         [0., 0., 0.],\n         [0., 0., 0.]],\n\n        [[0., 0., 0.],\n         [0., 0., 0.],\n"
     "         [0., 0., 0.]]], dtype=descent.float64)"),
    (lambda: descent.ones((1,) * 8), "tensor([[[[[[[[1.]]]]]]]])"),
    # Rows wrap at 80 characters; so does a suffix that would not fit.
    (lambda: descent.arange(1, 7.5, 0.5),
     "tensor([1.0000, 1.5000, 2.0000, 2.5000, 3.0000, 3.5000, 4.0000, 4.5000, 5.0000,\n"
     "        5.5000, 6.0000, 6.5000, 7.0000])"),
    (lambda: descent.arange(100),
     "tensor([ 0,  1,  2,  3,  4,  5,  6,  7,  8,  9, 10, 11, 12, 13, 14, 15, 16, 17,\n"
     "        18, 19, 20, 21, 22, 23, 24, 25, 26, 27, 28, 29, 30, 31, 32, 33, 34, 35,\n"
     "        36, 37, 38, 39, 40, 41, 42, 43, 44, 45, 46, 47, 48, 49, 50, 51, 52, 53,\n"
     "        54, 55, 56, 57, 58, 59, 60, 61, 62, 63, 64, 65, 66, 67, 68, 69, 70, 71,\n"
     "        72, 73, 74, 75, 76, 77, 78, 79, 80, 81, 82, 83, 84, 85, 86, 87, 88, 89,\n"
     "        90, 91, 92, 93, 94, 95, 96, 97, 98, 99])"),
    (lambda: descent.ones(2, 40),
     "tensor([[1., 1., 1., 1., 1., 1., 1., 1., 1., 1., 1., 1., 1., 1., 1., 1., 1., 1.,\n"
     "         1., 1., 1., 1., 1., 1., 1., 1., 1., 1., 1., 1., 1., 1., 1., 1., 1., 1.,\n"
     "         1., 1., 1., 1.],\n"
     "        [1., 1., 1., 1., 1., 1., 1., 1., 1., 1., 1., 1., 1., 1., 1., 1., 1., 1.,\n"
     "         1., 1., 1., 1., 1., 1., 1., 1., 1., 1., 1., 1., 1., 1., 1., 1., 1., 1.,\n"
     "         1., 1., 1., 1.]])"),
    (lambda: descent.arange(8, dtype=D) + 0.5,
     "tensor([0.5000, 1.5000, 2.5000, 3.5000, 4.5000, 5.5000, 6.5000, 7.5000],\n       dtype=descent.float64)"),
    # Modes: scientific when max/min of the nonzero finite |values| > 1000, or max > 1e8,
    # or (unless all are whole numbers) min < 1e-4; the width comes from those values only.
    (lambda: descent.tensor([0.001, 10.0]), "tensor([1.0000e-03, 1.0000e+01])"),
    (lambda: descent.tensor([1., 10000.]), "tensor([1.0000e+00, 1.0000e+04])"),
    (lambda: descent.tensor([1e-5]), "tensor([1.0000e-05])"),
    (lambda: descent.tensor([-1e-5, 2.5]), "tensor([-1.0000e-05,  2.5000e+00])"),
    (lambda: descent.tensor([[-1e-5, 1.0], [2.0, -300.0]]),
     "tensor([[-1.0000e-05,  1.0000e+00],\n        [ 2.0000e+00, -3.0000e+02]])"),
    (lambda: descent.tensor([0.0, 1e-5, -2.0]), "tensor([ 0.0000e+00,  1.0000e-05, -2.0000e+00])"),
    (lambda: descent.tensor([0.5, 1e-4]), "tensor([5.0000e-01, 1.0000e-04])"),  # float32 1e-4 is below 1e-4
    (lambda: descent.tensor([1e8]), "tensor([100000000.])"),
    (lambda: descent.tensor([2e8]), "tensor([2.0000e+08])"),
    (lambda: descent.tensor([0.1, 0.25, 100.0]), "tensor([  0.1000,   0.2500, 100.0000])"),
    (lambda: descent.tensor([2 ** 40, -3]), "tensor([1099511627776,            -3])"),
    (lambda: descent.tensor([float("inf"), 1.0]), "tensor([inf, 1.])"),
    (lambda: descent.tensor([-float("inf"), 1.0]), "tensor([-inf, 1.])"),
    (lambda: descent.tensor([float("nan"), float("inf")]), "tensor([nan, inf])"),
    (lambda: descent.tensor([float("nan"), 0.0]), "tensor([nan, 0.])"),
    (lambda: descent.tensor([float("nan"), 1e-5]), "tensor([       nan, 1.0000e-05])"),
    (lambda: descent.tensor([-0.0, 1.0]), "tensor([-0., 1.])"),
    (lambda: descent.tensor([[True], [False]]), "tensor([[ True],\n        [False]])"),
    # 0-d tensors.
    (lambda: descent.tensor(float("nan")), "tensor(nan)"),
    (lambda: descent.tensor(-float("inf")), "tensor(-inf)"),
    (lambda: descent.tensor(-0.0), "tensor(-0.)"),
    (lambda: descent.tensor(-1e-7), "tensor(-1.0000e-07)"),
    (lambda: descent.tensor(-5), "tensor(-5)"),
    # Empty tensors name every dtype but float32.
    (lambda: descent.arange(0), "tensor([], dtype=descent.int64)"),
    (lambda: descent.zeros(0, dtype=D), "tensor([], dtype=descent.float64)"),
    (lambda: descent.zeros(0, 2, dtype=B), "tensor([], size=(0, 2), dtype=descent.bool)"),
    (lambda: descent.zeros(2, 0, dtype=I), "tensor([], size=(2, 0), dtype=descent.int64)"),
    # More than 1000 elements: 3 at each end of every dimension.
    (lambda: descent.arange(2000), "tensor([   0,    1,    2,  ..., 1997, 1998, 1999])"),
    (lambda: descent.ones(1001, dtype=B), "tensor([True, True, True,  ..., True, True, True])"),
    (lambda: descent.arange(1001, dtype=F) - 500, "tensor([-500., -499., -498.,  ...,  498.,  499.,  500.])"),
    (lambda: descent.arange(5000).view(5000, 1),
     "tensor([[   0],\n        [   1],\n        [   2],\n        ...,\n        [4997],\n        [4998],\n        [4999]])"),
    (lambda: descent.arange(2000).view(40, 50),
     "tensor([[   0,    1,    2,  ...,   47,   48,   49],\n        [  50,   51,   52,  ...,   97,   98,   99],\n"
     "        [ 100,  101,  102,  ...,  147,  148,  149],\n        ...,\n"
     "        [1850, 1851, 1852,  ..., 1897, 1898, 1899],\n        [1900, 1901, 1902,  ..., 1947, 1948, 1949],\n"
     "        [1950, 1951, 1952,  ..., 1997, 1998, 1999]])"),
    (lambda: descent.ones(2).requires_grad_(), "tensor([1., 1.], requires_grad=True)"),
]


@pytest.mark.parametrize("make,expected", REPRS, ids=[e.split("\n")[0][:40] for _, e in REPRS])
def test_repr(make, expected):
    assert repr(make()) == expected


def test_empty_strided_lays_out_its_memory_by_the_strides_it_is_given():
    """aten::empty_strided: the strides as given, memory for the elements they reach; PyTorch's errors."""
    t = descent.empty_strided([2, 3], [1, 2])
    assert t.shape == (2, 3) and t.stride() == (1, 2) and t.dtype == descent.float32
    assert descent.empty_strided([4], [2], dtype=descent.int64).stride() == (2,)
    assert descent.empty_strided([0, 3], [3, 1]).numel() == 0
    with pytest.raises(RuntimeError, match=r"dimensionality of sizes \(2\) must match dimensionality of strides \(1\)"):
        descent.empty_strided([2, 3], [1])
    with pytest.raises(RuntimeError, match=r"Storage size calculation overflowed with sizes=\[2\] and strides=\[-1\]"):
        descent.empty_strided([2], [-1])
