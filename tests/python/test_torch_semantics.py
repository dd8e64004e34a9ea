"""Semantics a PyTorch user expects (issue 8): the exception class and words
PyTorch gives, what it refuses and what it accepts.

[SECTION] Error classes: RuntimeError for shapes and sizes, IndexError for dims
[SECTION] Arguments: numbers, 0-d tensors, and objects whose __index__ raises
[SECTION] matmul: the shapes as given, and one dtype
[SECTION] Overlap: full, partial, none, too hard
[SECTION] What PyTorch refuses on bool
[SECTION] Integer powers
[SECTION] Zero-element shapes
[SECTION] numpy: operands and dtypes
[SECTION] One Python object per tensor

The expected words are PyTorch's (its sources); where descent says something
else on purpose a Note says why (Note [matmul names the shapes it was given]).
"""
import re

import numpy as np
import pytest

import descent

B, I, F, D, H = descent.bool, descent.int64, descent.float32, descent.float64, descent.float16


def raises(kind, text):
    """pytest.raises for exactly `kind` (not a subclass of it), with `text` in the message."""
    return pytest.raises(kind, match=re.escape(text))


# [SECTION] Error classes --------------------------------------------------------------

X = descent.ones(2, 3)

RUNTIME_ERRORS = [  # (what, call, words): each a RuntimeError, as in PyTorch, not a ValueError
    ("view", lambda: X.view(4), "shape '[4]' is invalid for input of size 6"),
    ("reshape -1 -1", lambda: X.reshape(-1, -1), "only one dimension can be inferred"),
    ("view -2", lambda: X.view(-2, 3), "invalid shape dimension -2"),
    ("expand", lambda: X.expand(3, 3), "The expanded size of the tensor (3) must match the existing size (2)"),
    ("expand fewer", lambda: X.expand(3), "the number of sizes provided (1) must be greater or equal"),
    ("permute", lambda: X.permute(0), "number of dimensions in the tensor input does not match"),
    ("permute twice", lambda: X.permute(0, 0), "duplicate dims"),
    ("broadcast", lambda: X + descent.ones(4), "The size of tensor a (3) must match the size of tensor b (4)"),
    ("in place shape", lambda: descent.ones(3).add_(X), "output with shape [3] doesn't match the broadcast shape"),
    ("item", lambda: X.item(), "a Tensor with 6 elements cannot be converted to Scalar"),
    ("arange step", lambda: descent.arange(0, 1, 0), "step must be nonzero"),
    ("arange sign", lambda: descent.arange(5, 0), "upper bound and lower bound inconsistent with step sign"),
    ("negative size", lambda: descent.ones(2, -1), "Trying to create tensor with negative dimension -1"),
    ("negative zeros", lambda: descent.zeros(2, -1), "zeros: Dimension size must be non-negative."),
    ("negative expand", lambda: descent.ones(1).expand(-2), "expand()"),
    ("repeated dim", lambda: X.sum([0, 0]), "dim 0 appears multiple times in the list of dims"),
    ("empty max", lambda: descent.zeros(0).max(), "Expected reduction dim to be specified for input.numel() == 0"),
    ("slice step", lambda: descent.slice(X, 0, None, None, 0), "slice step must be positive"),
    ("nine dims", lambda: descent.ones([1] * 8).unsqueeze(0), "at most 8 dimensions"),
]


@pytest.mark.parametrize("what,call,words", RUNTIME_ERRORS, ids=[r[0] for r in RUNTIME_ERRORS])
def test_shape_and_size_errors_are_runtime_errors(what, call, words):
    with pytest.raises(RuntimeError, match=re.escape(words)) as e:
        call()
    assert type(e.value) is RuntimeError, what


@pytest.mark.parametrize("data", [2 ** 63, 10 ** 400, -2 ** 63 - 1, [1, 2 ** 64]])
def test_an_int_past_int64_in_tensors_data_is_a_value_error(data):
    with raises(ValueError, "Overflow when unpacking long long"):      # PyTorch 2.11's class and words (H200 host)
        descent.tensor(data)


@pytest.mark.parametrize("call", [lambda: X.sum(2), lambda: X.transpose(0, -3), lambda: X.max(5),
                                  lambda: X.unsqueeze(4), lambda: X.size(2), lambda: descent.select(X, 2, 0)])
def test_a_dim_out_of_range_is_an_index_error(call):
    with pytest.raises(IndexError, match="Dimension out of range"):
        call()


def test_verify_names_an_unknown_op():
    with raises(RuntimeError, "verify(): no op named 'nope' (see: descent ops)"):
        descent.verify("nope")
    assert {v["op"] for v in descent.verify("mm")} == {"aten::mm"}


# [SECTION] Arguments --------------------------------------------------------------------

def test_matmul_takes_no_numbers():
    """PyTorch lets numbers stand for tensors only in the elementwise ops."""
    with raises(TypeError, "unsupported operand type(s) for @: 'Tensor' and 'int'"):
        descent.ones(2) @ 2
    with raises(TypeError, "unsupported operand type(s) for @: 'int' and 'Tensor'"):
        2 @ descent.ones(2)
    with raises(TypeError, "matmul(): argument 'other' (position 2) must be Tensor, not int"):
        descent.matmul(descent.ones(2), 2)
    with raises(TypeError, "mm(): argument 'mat2' (position 2) must be Tensor, not float"):
        descent.mm(descent.ones(2, 2), 2.0)
    assert (descent.ones(2) + 2).tolist() == [3.0, 3.0] and descent.ones(2).copy_(descent.tensor(5.0)).tolist() == [5.0, 5.0]


def test_zero_dim_tensors_stand_for_numbers():
    """A Scalar takes a 0-d tensor that does not require grad, read by its dtype; an int, a 0-d integer tensor."""
    assert descent.full((2,), descent.tensor(3.)).tolist() == [3.0, 3.0]
    assert descent.full((2,), descent.tensor(3.)).dtype is F and descent.full((2,), descent.tensor(3)).dtype is I
    assert descent.full((1,), descent.tensor(True)).dtype is B
    x = descent.tensor([1.0, 2.0])
    assert x.add(x, alpha=descent.tensor(2.)).tolist() == [3.0, 6.0]
    assert descent.sub(x, x, alpha=descent.tensor(3)).tolist() == [-2.0, -4.0]
    assert x.fill_(descent.tensor(7, dtype=D)).tolist() == [7.0, 7.0]
    assert descent.ones(2, 3).transpose(descent.tensor(0), 1).shape == (3, 2)
    assert descent.ones(2, 3).sum(descent.tensor(1)).tolist() == [3.0, 3.0]           # an int[1] takes one too
    assert descent.full((2,), np.True_).dtype is B and descent.full((2,), np.int32(2)).dtype is I
    assert descent.arange(descent.tensor(3)).tolist() == [0, 1, 2]
    for bad in [descent.tensor([0]), descent.tensor(0.0), descent.tensor(True)]:   # not 0-d, or not integral
        with raises(TypeError, "transpose(): argument 'dim0' (position 1) must be int, not Tensor"):
            descent.ones(2, 3).transpose(bad, 1)      # a method counts positions without self, as PyTorch's
        with raises(TypeError, "transpose(): argument 'dim0' (position 2) must be int, not Tensor"):
            descent.transpose(descent.ones(2, 3), bad, 1)
    with raises(TypeError, "full(): argument 'fill_value' (position 2) must be Scalar, not Tensor"):
        descent.full((2,), descent.ones(2))                      # not 0-d
    with raises(TypeError, "full(): argument 'fill_value' (position 2) must be Scalar, not Tensor"):
        descent.full((2,), descent.tensor(1.0).requires_grad_())


class IndexRaises:
    def __index__(self):
        raise ValueError("my index is broken")


class FloatRaises:
    def __float__(self):
        raise ArithmeticError("my float is broken")


class IndexInterrupts:
    def __index__(self):
        raise KeyboardInterrupt


def test_an_argument_whose_index_or_float_raises():
    """The TypeError names the argument (never an empty message) and keeps the user's exception as its cause."""
    x = descent.ones(2, 3)
    cases = [(lambda: x.transpose(IndexRaises(), 1), "transpose(): argument 'dim0' (position 1) must be int, not IndexRaises", ValueError),
             (lambda: descent.ones(IndexRaises()), "ones(): argument 'size' (position 1) must be int[], not IndexRaises", ValueError),
             (lambda: descent.zeros((2, IndexRaises())), "zeros(): argument 'size' must be tuple of ints, but found element of type IndexRaises at pos 1", ValueError),
             (lambda: descent.full((2,), FloatRaises()), "full(): argument 'fill_value' (position 2) must be Scalar, not FloatRaises", ArithmeticError),
             (lambda: x.add(x, alpha=FloatRaises()), "add(): argument 'alpha' (position 2) must be Scalar, not FloatRaises", ArithmeticError),
             (lambda: descent.add(x, x, alpha=FloatRaises()), "add(): argument 'alpha' (position 3) must be Scalar, not FloatRaises", ArithmeticError),
             (lambda: x.sum(IndexRaises()), "sum() received an invalid combination of arguments", ValueError)]
    for call, words, cause in cases:
        with raises(TypeError, words) as e:
            call()
        assert type(e.value.__cause__) is cause and "broken" in str(e.value.__cause__), words
    with pytest.raises(KeyboardInterrupt):       # not a mismatch: it propagates as raised
        x.transpose(IndexInterrupts(), 1)


# [SECTION] matmul ---------------------------------------------------------------------------

@pytest.mark.parametrize("a,b,words", [
    ((3,), (4, 5), "matmul(): shapes [3] and [4, 5] cannot be multiplied (3 != 4)"),
    ((4, 5), (3,), "matmul(): shapes [4, 5] and [3] cannot be multiplied (5 != 3)"),
    ((2, 3, 4), (3,), "matmul(): shapes [2, 3, 4] and [3] cannot be multiplied (4 != 3)"),
    ((3,), (2, 4, 5), "matmul(): shapes [3] and [2, 4, 5] cannot be multiplied (3 != 4)"),
    ((3,), (4,), "inconsistent tensor size, expected tensor [3] and src [4]"),       # dot's words, PyTorch's
    ((2, 3), (2, 3), "mat1 and mat2 shapes cannot be multiplied (2x3 and 2x3)"),      # mm's words, PyTorch's
])
def test_one_dimensional_matmul_errors_name_the_shapes_given(a, b, words):
    """Note [matmul names the shapes it was given]."""
    with raises(RuntimeError, words):
        descent.ones(*a) @ descent.ones(*b)


def test_products_of_two_dtypes_are_refused():
    i, f, d = descent.ones(2, 2, dtype=I), descent.ones(2, 2), descent.ones(2, 2, dtype=D)
    with raises(RuntimeError, "expected m1 and m2 to have the same dtype, but got: long int != float"):
        i @ f
    with raises(RuntimeError, "expected m1 and m2 to have the same dtype, but got: float != double"):
        descent.mm(f, d)
    with raises(RuntimeError, "dot : expected both vectors to have same dtype, but found Long and Float"):
        descent.ones(2, dtype=I) @ descent.ones(2)
    with raises(RuntimeError, "expected scalar type Float but found Long"):
        descent.mv(f, descent.ones(2, dtype=I))
    with raises(RuntimeError, "expected scalar type Double but found Float"):
        descent.bmm(descent.ones(1, 2, 2, dtype=D), descent.ones(1, 2, 2))
    assert (i @ i).dtype is I and (d @ d).dtype is D


# [SECTION] Overlap ------------------------------------------------------------------------

def test_copies_between_views_pytorch_allows():
    """Strided views are "too hard" to analyse: PyTorch lets them through, and so does descent."""
    x = descent.arange(12.).reshape(3, 4)
    x[:, 0] = x[:, 1]
    assert x[:, 0].tolist() == [1.0, 5.0, 9.0]
    y = descent.arange(6.)
    y[::2] = y[1::2]
    assert y.tolist() == [1.0, 1.0, 3.0, 3.0, 5.0, 5.0]
    z = descent.arange(4.)
    z += z                                                   # full overlap: the same elements
    z.copy_(z)
    z[1:3] = z[1:3]
    assert z.tolist() == [0.0, 2.0, 4.0, 6.0]
    e = descent.ones(1, 3).expand(2, 3)
    assert e.copy_(e) is e                                   # the same data: copy_ returns before any check


def test_partial_and_internal_overlap_are_refused():
    partial = ("unsupported operation: some elements of the input tensor and the written-to tensor refer to a "
               "single memory location. Please clone() the tensor before performing the operation.")
    x = descent.ones(3, 3)
    with raises(RuntimeError, partial):
        x += x.T
    v = descent.arange(5.)
    with raises(RuntimeError, partial):
        v[1:] += v[:-1]
    with raises(RuntimeError, partial):
        v[1:].copy_(v[:-1])
    with raises(RuntimeError, "more than one element of the written-to tensor refers to a single memory location"):
        descent.ones(1, 3).expand(2, 3).add_(1)


# [SECTION] What PyTorch refuses on bool ---------------------------------------------------

def test_bool_refusals():
    b = descent.tensor([True, False])
    two = ("Subtraction, the `-` operator, with two bool tensors is not supported. "
           "Use the `^` or `logical_xor()` operator instead.")
    one = ("Subtraction, the `-` operator, with a bool tensor is not supported. "
           "If you are trying to invert a mask, use the `~` or `logical_not()` operator instead.")
    for call, words in [(lambda: b - b, two), (lambda: b - 1, one), (lambda: 1 - b, one),
                        (lambda: descent.ones(2) - b, one), (lambda: descent.ones(2) - True, one),
                        (lambda: descent.ones(2).sub_(b), one), (lambda: b.sub_(b), two)]:
        with raises(RuntimeError, words):
            call()
    with raises(RuntimeError, "Negation, the `-` operator, on a bool tensor is not supported."):
        -b
    with raises(NotImplementedError, "\"abs_cpu\" not implemented for 'Bool'"):
        b.abs()
    with raises(NotImplementedError, "\"abs_cpu\" not implemented for 'Bool'"):
        abs(b)
    with raises(RuntimeError, "Boolean inputs not supported for relu"):
        b.relu()
    with raises(NotImplementedError, "\"pow\" not implemented for 'Bool'"):
        b ** b
    # What PyTorch computes: a bool base with a number exponent is promoted or kept.
    assert (b ** 2).tolist() == [1, 0] and (b ** 2).dtype is I
    assert (b ** True).tolist() == [True, False] and (b ** False).tolist() == [True, True]
    assert (b + b).tolist() == [True, False] and (b * 2).tolist() == [2, 0]


# [SECTION] Integer powers -------------------------------------------------------------------

def test_integer_tensors_to_integer_tensor_powers():
    """PyTorch's powi: a negative exponent gives 1 for 1, +-1 for -1, else 0."""
    base = descent.tensor([2, 1, -1, -1, 0, -3, 5])
    exps = descent.tensor([-1, -5, -3, -2, -1, -2, 3])
    for variant in ("reference", "optimized"):
        descent.set_kernel_variant(variant)
        try:
            assert (base ** exps).tolist() == [0, 1, -1, 1, 0, 0, 125]
        finally:
            descent.set_kernel_variant("auto")
    assert (base ** descent.tensor(-1)).tolist() == [0, 1, -1, -1, 0, 0, 0]          # a 0-d tensor: pow.Tensor_Tensor
    assert descent.pow(base, descent.tensor(2)).tolist() == [4, 1, 1, 1, 0, 9, 25]
    assert (2 ** descent.tensor([-1, 2])).tolist() == [0, 4]                           # __rpow__
    with raises(RuntimeError, "Integers to negative integer powers are not allowed."):
        base ** -1                                                                     # a Python int exponent
    assert (base ** -1.0).dtype is F


# [SECTION] Zero-element shapes -------------------------------------------------------------

@pytest.mark.parametrize("shape", [(2 ** 49, 0), (0, 2 ** 49), (2 ** 40, 0, 2 ** 40), (0, 2 ** 62, 2 ** 62)])
def test_zero_element_shapes_in_any_order(shape):
    for t in (descent.zeros(*shape), descent.empty(shape), descent.ones(shape, dtype=I)):
        assert t.shape == shape and t.numel() == 0 and t.is_contiguous()
    with raises(RuntimeError, "too many elements"):
        descent.zeros(*[s if s else 2 for s in shape])


# [SECTION] numpy ----------------------------------------------------------------------------

def test_numpy_operands_on_either_side_give_a_tensor():
    t = descent.tensor([1.0, 2.0])
    a = np.array([10.0, 20.0])
    for got, want in [(a + t, [11.0, 22.0]), (t + a, [11.0, 22.0]), (a - t, [9.0, 18.0]), (t - a, [-9.0, -18.0]),
                      (a * t, [10.0, 40.0]), (a / t, [10.0, 10.0]), (t / a, [0.1, 0.1]), (a ** t, [10.0, 400.0]),
                      (a > t, [True, True]), (t == a, [False, False]), (a == t, [False, False])]:
        assert type(got) is descent.Tensor and got.tolist() == pytest.approx(want)
    assert (a + t).dtype is D                                # both have dims: the wider float, as tensors
    m = np.ones((2, 2), dtype=np.float32)
    for got in (m @ descent.ones(2, 2), descent.ones(2, 2) @ m):
        assert type(got) is descent.Tensor and got.tolist() == [[2.0, 2.0], [2.0, 2.0]]
    assert type(np.sin(t)) is descent.Tensor                  # numpy's functions of a tensor: __array_wrap__
    s = descent.tensor([1.0, 2.0])
    s += np.array([1.0, 1.0])
    assert s.tolist() == [2.0, 3.0]
    s[0:1] = np.array([7.0])
    assert s.tolist() == [7.0, 3.0]


@pytest.mark.parametrize("np_dtype,dtype", [
    (np.int8, descent.int8), (np.int16, descent.int16), (np.int32, descent.int32), (np.int64, I),
    (np.uint8, descent.uint8), (np.uint16, I), (np.uint32, I),
    (np.uint64, I), (np.float16, H), (np.float32, F), (np.float64, D), (np.bool_, B)])
def test_numpy_arrays_of_every_integer_and_float_dtype(np_dtype, dtype):
    """Note [numpy arrays descent reads]: the values exactly, in descent's nearest dtype."""
    info = np.iinfo(np_dtype) if np.issubdtype(np_dtype, np.integer) else None
    values = [0, 1] if np_dtype is np.bool_ else [0, 1, 3] if info is None else [info.min, 0, 1, min(info.max, 2 ** 63 - 1)]
    a = np.array(values, dtype=np_dtype)
    for arr in (a, a[::-1], np.stack([a, a]).T):             # contiguous, reversed, transposed
        t = descent.tensor(arr)
        assert t.dtype is dtype and t.shape == arr.shape
        np.testing.assert_array_equal(t.numpy().astype(np.float64), arr.astype(np.float64))
    h = descent.tensor(np.array([0.1, -65504, 6e-8, np.inf, -0.0], dtype=np.float16))
    assert h.tolist()[:4] == [float(np.float16(0.1)), -65504.0, float(np.float16(6e-8)), float("inf")]
    assert h.dtype is H and h.numpy().dtype == np.float16  # float16 is a dtype of its own, as in PyTorch


def test_numpy_arrays_that_cannot_convert_name_their_dtype():
    for arr, name in [(np.zeros(2, dtype=np.complex64), "numpy.complex64"), (np.array([object()]), "numpy.object_"),
                      (np.zeros(2, dtype="datetime64[s]"), "numpy.datetime64"), (np.array(["a"]), "numpy.str_")]:
        with raises(TypeError, f"can't convert np.ndarray of type {name}. The only supported types are: float64, "):
            descent.tensor(arr)
    with raises(ValueError, "given numpy array has byte order different from the native byte order"):
        descent.tensor(np.arange(3, dtype=">i4"))
    with raises(RuntimeError, "element 1 of the uint64 array, 18446744073709551615, does not fit in int64"):
        descent.tensor(np.array([1, 2 ** 64 - 1], dtype=np.uint64))


# [SECTION] One Python object per tensor (Note [One Python object per tensor]) ---------------

def test_an_op_that_hands_back_its_input_hands_back_the_same_object():
    x = descent.ones(2, 3, requires_grad=True)
    assert x.contiguous() is x                       # already contiguous: no copy, no new tensor
    assert x.to(F) is x and x.to("cpu") is x          # nothing to convert
    assert x.t().contiguous() is not x
    y = x * 2
    assert y.grad_fn.next_functions[0][0].variable is x
    assert y.add_(1) is y


def test_the_slot_is_cleared_when_the_object_dies():
    x = descent.ones(2)
    v = x[0:1]
    base = v._base
    assert base is x
    del x, base
    again = v._base                                  # the tensor lives on in C++; a new object wraps it
    assert again.tolist() == [1.0, 1.0] and again is v._base
