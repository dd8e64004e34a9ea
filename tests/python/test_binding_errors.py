"""Errors raised by the binding (floor 2) and the kernels, as Python exceptions.

For wrong argument types, counts and keywords (Note [Parsing arguments]) the
exception type is checked and the message must name the op and the argument.
Then the errors of wrong shapes (RuntimeError), out-of-range dims and indices
(IndexError), unsupported dtypes (TypeError), non-viewable views
(RuntimeError), bad device strings (RuntimeError), tensors on the device floors
that do not exist yet (NotImplementedError), more than 8 dims and negative
sizes. None of them may crash the interpreter: they all run in this process.
"""
import re

import numpy as np
import pytest

import descent

# The factories that take sizes and a device (not those like a tensor, ones_like, new_zeros: test_learner_ops.py),
# but the random integers, whose draws are the CPU's only so far (randint, randperm: test_learner_ops.py).
FACTORIES = [op for op in descent._C._ops() if op["kind"] == "factory" and "Tensor self" not in op["schema"]
             and op["python_name"] not in ("randint", "randperm")]
SIZED_FACTORIES = sorted({op["python_name"] for op in FACTORIES if "int[] size" in op["schema"]})


@pytest.fixture
def x():
    return descent.ones(2, 3)


def raises(error, *words):
    """pytest.raises whose message must contain every word (literally)."""
    return pytest.raises(error, match="(?s)" + "".join(f"(?=.*{re.escape(w)})" for w in words))


# [SECTION] Argument parsing -----------------------------------------------------------

def test_wrong_type(x):
    with raises(TypeError, "add()", "'other'", "str"):
        descent.add(x, "a")
    with raises(TypeError, "add()", "'self'", "int"):
        descent.add(1, x)                      # only arguments after the first take numbers
    with raises(TypeError, "add()", "'alpha'", "Scalar"):
        descent.add(x, x, alpha="a")
    with raises(TypeError, "add()", "'other'", "list"):
        descent.add(x, [1, 2])
    with raises(TypeError, "sum() received an invalid combination of arguments", "dim=str"):
        descent.sum(x, dim="a")
    with raises(TypeError, "sum() received an invalid combination of arguments", "keepdim=int"):
        descent.sum(x, keepdim=1)
    with raises(TypeError, "transpose()", "'dim0'", "float"):
        descent.transpose(x, 0.5, 1)
    with raises(TypeError, "full()", "'fill_value'"):
        descent.full([2], "a")
    with raises(TypeError, "ones()", "'size'", "str"):
        descent.ones("a")
    with raises(TypeError, "ones()", "'size'", "pos 1"):
        descent.ones([2, "a"])
    with raises(TypeError, "ones()", "'dtype'"):
        descent.ones(2, dtype="float32")
    with raises(TypeError, "ones()", "'device'"):
        descent.ones(2, device=3)
    with raises(TypeError, "ones()", "'size'"):
        descent.ones(True)                     # a bool is not an int here


def test_wrong_count(x):
    with raises(TypeError, "add()", "missing", "'other'"):
        descent.add(x)
    with raises(TypeError, "add()", "2 positional arguments", "3"):
        descent.add(x, x, x)
    with raises(TypeError, "transpose()", "missing", "'dim1'"):
        descent.transpose(x, 0)
    with raises(TypeError, "matmul()", "missing", "'self'"):
        descent.matmul()


def test_wrong_keyword(x):
    with raises(TypeError, "add()", "unexpected keyword", "'beta'"):
        descent.add(x, x, beta=2)
    with raises(TypeError, "add()", "multiple values", "'other'"):
        descent.add(x, x, other=x)
    with raises(TypeError, "ones()", "unexpected keyword", "'shape'"):
        descent.ones(shape=(2, 3))


def test_overloads_listed(x):
    for call in [lambda: descent.max(x, "a"), lambda: descent.max(), lambda: descent.max(x, 0, True, 1),
                 lambda: descent.max(x, dim=0, keepdim="a")]:
        with raises(TypeError, "max()", "expected one of", "(Tensor self)", "(Tensor self, int dim"):
            call()


def test_keywords_and_sizes_work(x):
    assert descent.add(x, other=x, alpha=2).tolist() == [[3.0] * 3] * 2
    assert descent.add(self=x, other=x).tolist() == [[2.0] * 3] * 2
    assert descent.sum(x, dim=[1], keepdim=True).shape == (2, 1)
    assert descent.max(x, dim=1).indices.shape == (2,)
    for t in [descent.ones((2, 3)), descent.ones(2, 3), descent.ones([2, 3]), descent.ones(size=[2, 3]),
              descent.ones(np.int64(2), 3), descent.ones((np.int64(2), 3))]:
        assert t.shape == (2, 3)
    assert x.sum(np.int64(0)).shape == (3,)
    assert descent.full(size=[2], fill_value=3).tolist() == [3, 3]
    assert descent.arange(start=1, end=4).tolist() == [1, 2, 3]


# [SECTION] Shapes, dims, dtypes ---------------------------------------------------------

def test_shape_errors(x):
    with raises(RuntimeError, "The size of tensor a (3) must match the size of tensor b (2) at non-singleton dimension 1"):
        x + descent.ones(2, 2)
    with raises(RuntimeError, "The size of tensor a (3) must match the size of tensor b (4) at non-singleton dimension 2"):
        descent.eq(x, descent.ones(3, 1, 4))
    with raises(RuntimeError, "mat1 and mat2 shapes cannot be multiplied (2x3 and 2x3)"):  # matmul calls mm
        descent.matmul(x, x)
    with raises(RuntimeError, "The size of tensor a (2) must match the size of tensor b (3) at non-singleton dimension 0"):
        x.copy_(descent.ones(3, 3))
    with raises(RuntimeError, "shape '[4, 2]' is invalid for input of size 6"):
        x.view(4, 2)


def exactly(error, text):
    """pytest.raises whose message must be `text`, all of it (torch's words, nothing before or after)."""
    return pytest.raises(error, match=f"^{re.escape(text)}$")


def test_index_errors(x):
    # torch 2.11's words: c10's maybe_wrap_dim names no op (no "sum(): " prefix)
    with exactly(IndexError, "Dimension out of range (expected to be in range of [-2, 1], but got 2)"):
        x.sum(2)
    with exactly(IndexError, "Dimension out of range (expected to be in range of [-2, 1], but got 5)"):
        x.sum([0, 5])
    with exactly(IndexError, "Dimension out of range (expected to be in range of [-2, 1], but got -3)"):
        x.max(-3)
    with exactly(IndexError, "Dimension out of range (expected to be in range of [-2, 1], but got 2)"):
        x.transpose(0, 2)
    with raises(IndexError, "index 5", "size 2"):
        x[5]
    with raises(IndexError, "too many indices"):
        x[0, 0, 0]
    with raises(IndexError, "0-dim"):
        descent.slice(descent.tensor(1.0), 0)
    with exactly(RuntimeError, "dim 0 appears multiple times in the list of dims"):
        x.sum([0, 0])


def test_dtype_errors():
    """A dtype an op does not take is a RuntimeError, as in PyTorch (a TypeError
    is for an argument of the wrong Python type)."""
    i = descent.tensor([1, 2])
    with raises(RuntimeError, "mean()", "Got: Long"):
        i.mean()
    with raises(RuntimeError, "mean()", "Got: Bool"):
        descent.tensor([True]).mean()
    with raises(RuntimeError, "Negation", "bool"):
        -descent.tensor([True])
    with raises(RuntimeError, "Subtraction", "bool"):
        descent.tensor([True]) - descent.tensor([False])
    with raises(RuntimeError, "\"dot\" not implemented for 'Bool'"):  # 1-D @ 1-D is dot
        descent.ones(2, dtype=descent.bool) @ descent.ones(2, dtype=descent.bool)
    with raises(NotImplementedError, "\"check_uniform_bounds\" not implemented for 'Long'"):
        descent.rand(2, dtype=descent.int64)
    with raises(RuntimeError, "floating point"):
        i.requires_grad_()


def test_view_not_viewable(x):
    with raises(RuntimeError, "view size is not compatible", "reshape"):
        x.T.view(6)


# [SECTION] Devices ---------------------------------------------------------------------------

@pytest.mark.parametrize("spec", ["gpu", "cuda:x", "cpu:1", "sim:", "cuda:12345", "", ":0", "sim:-1", "cuda:01",
                                  "cuda:128", "cuda:9999999999", "sim:4294967296", "sim:" + "9" * 40])
def test_bad_device_string(spec):
    """RuntimeError, as torch.device; long digit runs too (they once overflowed the parser)."""
    with raises(RuntimeError, spec):
        descent.device(spec)
    with raises(RuntimeError, spec):
        descent.ones(2, device=spec)


@pytest.mark.parametrize("op", FACTORIES, ids=lambda op: op["name"])
def test_factories_on_devices(op):
    """Factories on sim:0 (and "sim") give device tensors; a device this machine lacks raises RuntimeError naming it."""
    args = {"aten::arange": (5,), "aten::arange.start_step": (1, 5), "aten::linspace": (0, 1, 5),
            "aten::empty_strided": ([2, 3], [1, 2]), "aten::eye": (3,), "aten::eye.m": (2, 3)}.get(op["name"], ([2, 3],))
    if op["name"] == "aten::full":
        args = ([2], 1.0)
    fn = getattr(descent, op["python_name"])
    assert fn(*args, device="sim").device == descent.device("sim:0")
    assert fn(*args, device=descent.device("sim:0")).device == descent.device("sim:0")
    with raises(RuntimeError, "sim:3 is not available"):
        fn(*args, device="sim:3")


def test_to_devices(x):
    assert x.to("sim:0").device == descent.device("sim:0")
    with raises(RuntimeError, "sim:3 is not available"):
        x.to("sim:3")
    assert x.to("cpu").device == descent.device("cpu")


# [SECTION] Limits --------------------------------------------------------------------------

def test_more_than_8_dims(x):
    assert descent.ones([1] * 8).dim() == 8
    for call in [lambda: descent.ones([1] * 9), lambda: descent.zeros(*[1] * 9), lambda: x.view([1] * 7 + [2, 3]),
                 lambda: x.reshape(*[1] * 8, 6), lambda: x.expand(*[1] * 7, 2, 3),
                 lambda: descent.ones([1] * 8).unsqueeze(0), lambda: descent.tensor(np.zeros([1] * 9)),
                 lambda: descent.tensor([[[[[[[[[1]]]]]]]]]), lambda: descent.ones([1] * 8)[None]]:
        with raises((TypeError, ValueError, RuntimeError), "8 dimensions"):
            call()


@pytest.mark.parametrize("name", SIZED_FACTORIES)
def test_negative_size(name):
    args = {"full": ([2, -3], 1.0), "empty_strided": ([2, -3], [3, 1])}.get(name, ([2, -3],))
    # aten's zeros checks first, in its own words; the others reach empty's
    words = ("zeros: Dimension size must be non-negative.",) if name == "zeros" else ("negative dimension", "-3")
    with raises(RuntimeError, *words):
        getattr(descent, name)(*args)


def test_other_bad_sizes(x):
    with raises(RuntimeError, "invalid shape dimension -5"):
        descent.arange(5).view(-5)
    with raises(RuntimeError, "too many elements"):
        descent.ones(2 ** 40, 2 ** 40)
    with raises(RuntimeError, "Overflow when unpacking long"):
        descent.ones(2 ** 70)


def test_bad_variant_and_seed():
    with raises(ValueError, "'fast'", "auto"):
        descent.set_kernel_variant("fast")
    with pytest.raises(TypeError):
        descent.set_kernel_variant(3)
    with pytest.raises(TypeError):
        descent.manual_seed("a")


def test_operators_with_unrelated_types_answer_as_python_does():
    """As in PyTorch, an operand the op cannot take makes the operator return
    NotImplemented: == and != fall back to identity, the rest raise Python's
    TypeError naming both types."""
    t = descent.ones(2)
    assert (t == None) is False and (t != None) is True and (t == "a") is False  # noqa: E711
    assert t not in [None, "a"] and t in [None, t]
    with raises(TypeError, "unsupported operand type(s) for +: 'Tensor' and 'NoneType'"):
        t + None
    with raises(TypeError, "unsupported operand type(s) for -: 'str' and 'Tensor'"):
        "a" - t
    with raises(TypeError, "unsupported operand type(s) for @: 'Tensor' and 'list'"):
        t @ [1, 2]
    with raises(TypeError, "'<' not supported between instances of 'Tensor' and 'NoneType'"):
        t < None
    with raises(TypeError, "add(): argument 'other' (position 2) must be Tensor, not NoneType"):
        descent.add(t, None)  # the function still names the argument


def test_an_op_function_prints_as_pytorchs():
    # PyTorch 2.11 (tests/python/data/torch_facts_h200.txt): '<built-in method randn of type object at 0x...>';
    # descent's random ops read generator= in Python first (Note [generator= is read in Python]), so an op
    # without one shows it: add.
    assert repr(descent.add).startswith("<built-in method add of type object at 0x")
    assert descent.add.__self__ is descent._C._VariableFunctions
    assert descent.randn.__wrapped__.__self__ is descent._C._VariableFunctions
    assert repr(descent._C._nn.linear) == "<built-in function linear>"   # torch._C._nn's are module functions
