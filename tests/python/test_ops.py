"""Every op of the op table against a float64 numpy reference.

NUMPY_REFERENCE maps each op's short name ("add", "max.dim", ...: conftest.op_key) to a numpy
function of the same arguments; a test asserts that its keys are exactly the
names of descent._C._ops(), so a new op without a reference fails here. Then:

- every op's sample call (the op table's `sample` column) for every dtype;
- elementwise ops (unary, binary, comparison) on random shapes with
  broadcasting, non-contiguous views (offset, transposed, stepped, expanded),
  zero-size and 0-d tensors, every dtype pair, with the result dtype checked
  against PyTorch's promotion rule (Note [Type promotion]);
- Python numbers as operands ("wrapped numbers"), alpha, integer wrapping,
  NaN and inf.

Tolerances: float32 1e-5 relative, float64 1e-12. Reductions and matmul are
in test_reductions.py (with the helpers of this file), views in
test_views.py, factories and tensor() in test_factories.py.
"""
import itertools
import math
import operator
import re

import numpy as np
import pytest

import descent
from nn_op_rows import NUMPY_REFERENCE_NN
from learner_reference import LEARNER_FLOAT_ONLY, LEARNER_RANDOM, LEARNER_REFERENCE, LEARNER_TUPLES, LEARNER_UNARY_ARGS
from conftest import (ALL_DTYPES, DTYPES, LAYOUTS, OPS_BY_KEY, SHAPES, UNSUPPORTED, dtype_id, make_tensor, np_dtype,
                      op_function, to_np)

OPS = OPS_BY_KEY  # "add", "max.dim", ...: conftest.op_key
B, I, F, D = descent.bool, descent.int64, descent.float32, descent.float64
ORDER = [B, I, F, D]
CATEGORY = {B: 0, I: 1, F: 2, D: 2}
EPS = {F: 2.0 ** -24, D: 2.0 ** -53}
RTOL = {F: 1e-5, D: 1e-12}


# [SECTION] The reference ------------------------------------------------------

def _axes(x, dim):
    """numpy axes for a descent dim argument (None / int / list; [] = all)."""
    if dim is None or x.ndim == 0:
        return None
    dims = [dim] if isinstance(dim, int) else list(dim)
    return tuple(d % x.ndim for d in dims) if dims else None


def _max_dim(x, dim, keepdim=False):
    if x.ndim == 0:
        return x.copy(), np.zeros((), np.int64)
    d = dim % x.ndim
    values = np.max(x, axis=d, keepdims=keepdim)
    indices = np.argmax(x, axis=d)
    return values, (np.expand_dims(indices, d) if keepdim else indices)


def _arange(start, end=None, step=1, *, dtype=None, device=None):
    if end is None:
        start, end = 0, start
    if dtype is None:
        dtype = F if any(isinstance(v, float) for v in (start, end, step)) else I
    n = max(0, math.ceil((end - start) / step))
    i = np.arange(n)
    values = start + i * step if dtype.is_floating_point else int(start) + i * int(step)
    return np.asarray(values).astype(np_dtype(dtype))


def _linspace(start, end, steps, *, dtype=None, device=None):
    """float64 values of both ends' formula (Note [linspace fills from both ends]); test_tutorial_ops.py checks the bits."""
    dtype = dtype or F
    if not dtype.is_floating_point:
        start, end = int(start), int(end)
    if steps == 1:
        return np.array([start], dtype=np_dtype(dtype))
    step = (end - start) / (steps - 1)
    i = np.arange(steps)
    values = np.where(i < steps // 2, start + step * i, end - step * (steps - 1 - i))
    return (values if dtype.is_floating_point else np.trunc(values)).astype(np_dtype(dtype))


def _factory(fill):
    def f(size, fill_value=None, *, dtype=None, device=None):
        value = fill if fill_value is None else fill_value
        if dtype is None:
            dtype = {bool: B, int: I}.get(type(value), F) if fill_value is not None else F
        return np.full(size, value, dtype=np_dtype(dtype))
    return f


def _pow(a, b):
    if a.dtype == np.bool_:
        return np.power(a.astype(np.int64), b.astype(np.int64)).astype(bool)
    return np.power(a, b)


def _slice(x, dim=0, start=None, end=None, step=1):
    return x[(slice(None),) * (dim % x.ndim) + (slice(start, end, step),)]


def _numpy_index(indices):
    """aten::index's Tensor?[] as a numpy index: None takes its dim whole."""
    return tuple(slice(None) if i is None else i for i in indices)


def _index_put_(x, indices, values, accumulate=False):
    out = x.copy()
    if accumulate:
        np.add.at(out, _numpy_index(indices), values)
    else:
        out[_numpy_index(indices)] = values
    return out


def _clamp(x, min=None, max=None):
    """PyTorch's expression: x < min ? min : x, then max < y ? max : y (NaN elements stay NaN)."""
    y = x if min is None else np.where(x < min, min, x)
    return y if max is None else np.where(max < y, max, y)


def _flatten(x, start_dim=0, end_dim=-1):
    if x.ndim == 0:
        return x.reshape(1)
    s, e = start_dim % x.ndim, end_dim % x.ndim
    return x.reshape(x.shape[:s] + (math.prod(x.shape[s:e + 1]),) + x.shape[e + 1:])


def _mse_loss(a, b, reduction=1):
    sq = (a - b) ** 2
    return sq if reduction == 0 else sq.mean() if reduction == 1 else sq.sum()


def _expand(x, size):
    size = [x.shape[i - len(size) + x.ndim] if s == -1 else s for i, s in enumerate(size)]
    return np.broadcast_to(x, size)


NUMPY_REFERENCE = {
    # factories (rand/randn/empty: only shape and dtype are compared here;
    # test_factories.py checks the random values statistically)
    "empty": _factory(0), "empty_strided": lambda size, stride, **kw: _factory(0)(size, **kw), "zeros": _factory(0), "ones": _factory(1), "full": _factory(None),
    "arange": _arange, "arange.start_step": _arange, "linspace": _linspace,
    "rand": _factory(0.5), "randn": _factory(0.0),
    # elementwise
    "add": lambda a, b, alpha=1: a + alpha * b,
    "sub": lambda a, b, alpha=1: a - alpha * b,
    "mul": lambda a, b: a * b,
    "div": lambda a, b: np.true_divide(a, b),
    "pow.Tensor_Tensor": _pow,
    "pow.Tensor_Scalar": lambda a, e: _pow(a, np.asarray(e)),
    "pow.Scalar": lambda b, e: _pow(np.asarray(b), e),
    "rsub": lambda a, other, alpha=1: other - alpha * a,
    "eq": np.equal, "lt": np.less, "gt": np.greater,
    "ne": np.not_equal, "le": np.less_equal, "ge": np.greater_equal,
    "neg": np.negative, "abs": np.abs, "exp": np.exp, "log": np.log, "sqrt": np.sqrt,
    "relu": lambda x: np.where(x > 0, x, np.zeros_like(x)),
    "threshold_backward": lambda g, s, t: np.where(s <= t, np.zeros_like(g), g),
    "sigmoid": lambda x: 1 / (1 + np.exp(-x)),
    "tanh": np.tanh,
    "sin": np.sin, "cos": np.cos, "reciprocal": lambda x: 1 / x,
    "clamp": _clamp, "clamp_min": lambda x, min: _clamp(x, min=min), "clamp_max": lambda x, max: _clamp(x, max=max),
    # reductions
    "sum": lambda x, dim=None, keepdim=False: np.sum(
        x, axis=_axes(x, dim), keepdims=keepdim, dtype=np.float64 if x.dtype.kind == "f" else np.int64),
    "mean": lambda x, dim=None, keepdim=False: np.mean(x.astype(np.float64), axis=_axes(x, dim), keepdims=keepdim),
    "sum.dim_IntList": lambda x, dim, keepdim=False: NUMPY_REFERENCE["sum"](x, dim, keepdim),
    "mean.dim": lambda x, dim, keepdim=False: NUMPY_REFERENCE["mean"](x, dim, keepdim),
    "max": np.max,
    "max.dim": _max_dim,
    "matmul": np.matmul, "mm": np.matmul, "bmm": np.matmul, "dot": np.dot, "mv": np.matmul,
    "addmm": lambda s, a, b, beta=1, alpha=1: beta * s + alpha * (a @ b),
    "linear": lambda x, w, b=None: x @ w.T + (0 if b is None else b),
    "mse_loss": _mse_loss,
    "cat": lambda tensors, dim=0: np.concatenate(tensors, axis=dim),
    # views
    "view": lambda x, size: x.reshape(size),
    "_unsafe_view": lambda x, size: x.reshape(size),
    "reshape": lambda x, shape: x.reshape(shape),
    "transpose": lambda x, d0, d1: np.swapaxes(x, d0, d1) if x.ndim else x,
    "t": lambda x: x.T,
    "permute": lambda x, dims: np.transpose(x, dims),
    "expand": _expand,
    "slice": _slice,
    "select": lambda x, dim, index: np.take(x, index, axis=dim),
    "unsqueeze": lambda x, dim: np.expand_dims(x, dim % (x.ndim + 1)),
    "alias": lambda x: x,
    "lift_fresh": lambda x: x,
    "flatten": _flatten,
    # copies
    "contiguous": np.ascontiguousarray,
    "clone": np.copy,
    # indexing (test_indexing.py checks __getitem__ and __setitem__ over them)
    "index": lambda x, indices: x[_numpy_index(indices)],
    "index_put_": _index_put_,
    "to": lambda x, dtype=None, device=None, copy=False: x.astype(np_dtype(dtype)) if dtype else x.copy(),
    "_to_copy": lambda x, dtype=None, device=None: x.astype(np_dtype(dtype)) if dtype else x.copy(),
    # reads: the one element as a Python number
    "item": lambda x: x.item(), "_local_scalar_dense": lambda x: x.item(),
    # in place: the result in self's dtype (test_inplace.py checks the writing itself)
    "copy_": lambda self, src: np.broadcast_to(src, self.shape).astype(self.dtype),
    "add_": lambda a, b, alpha=1: (a + alpha * b).astype(a.dtype),
    "sub_": lambda a, b, alpha=1: (a - alpha * b).astype(a.dtype),
    "mul_": lambda a, b: (a * b).astype(a.dtype),
    "div_": lambda a, b: np.true_divide(a, b).astype(a.dtype),
    "fill_.Scalar": lambda a, value: np.full_like(a, value),
    "fill_.Tensor": lambda a, value: np.full_like(a, value),
    "zero_": np.zeros_like,
}

FLOAT_ONLY = {"exp", "log", "sqrt", "sigmoid", "tanh", "sin", "cos", "reciprocal"}  # int64 and bool inputs give float32
# The bounds the unary sweep gives the ops that take Scalars besides self.
UNARY_ARGS = {"clamp": (-1.5, 2.5), "clamp_min": (-1,), "clamp_max": (2,)}
# Issue 42's ops (a learner's first ops): their references and what the sweeps need to know of them.
NUMPY_REFERENCE.update(LEARNER_REFERENCE)
NUMPY_REFERENCE.update(NUMPY_REFERENCE_NN)  # torch.nn's rows (tests/python/nn_op_rows.py); None: their samples raise
FLOAT_ONLY |= LEARNER_FLOAT_ONLY
UNARY_ARGS.update(LEARNER_UNARY_ARGS)


def result_type(*operands):
    """PyTorch's promotion: operands are (dtype, priority), priority 2 for a
    tensor with dims, 1 for a 0-d tensor, 0 for a Python number."""
    cat = max(CATEGORY[d] for d, _ in operands)
    for prio in (2, 1, 0):
        found = [d for d, p in operands if p == prio and CATEGORY[d] == cat]
        if found:
            return [B, I, F][cat] if prio == 0 else max(found, key=ORDER.index)


def check(got, expected, dtype, atol=0.0):
    """got (descent) has `dtype` and matches expected (numpy) exactly for
    bool/int64, within RTOL[dtype] (plus atol) for floats."""
    assert got.dtype is dtype, (got.dtype, dtype)
    g = to_np(got)
    expected = np.asarray(expected)
    assert g.shape == expected.shape, (g.shape, expected.shape)
    if dtype.is_floating_point:
        np.testing.assert_allclose(g.astype(np.float64), expected.astype(np.float64),
                                   rtol=RTOL[dtype], atol=atol or RTOL[dtype], equal_nan=True)
    else:
        np.testing.assert_array_equal(g, expected.astype(np_dtype(dtype)))


def test_every_op_has_a_reference():
    assert set(NUMPY_REFERENCE) == set(OPS)


def test_op_table_columns():
    for name, op in OPS.items():
        assert op["kind"] in ("factory", "unary", "binary", "comparison", "reduction", "matmul", "view", "copy",
                              "inplace", "read")
        assert op["exactness"] in ("exact", "reordered", "device_math") and op["domain"] in ("any", "positive")
        assert op["schema"].startswith(op["name"] + "("), op
        assert op["name"].startswith("aten::" + op["python_name"]) and op["profiler_name"] == "aten::" + op["python_name"]
        assert callable(op_function(op))
        # nn ops: descent._C._nn only; hidden ones (threshold_backward): descent.ops.aten only, as in PyTorch
        assert hasattr(descent, op["python_name"]) == (op["python_module"] not in ("nn", "hidden")), op
        if op["kind"] == "factory":  # BackendSelect reads the last argument
            assert op["schema"].endswith("Device? device=None) -> Tensor"), op


# [SECTION] Sample calls of the op table ---------------------------------------------

def parse_sample(sample, dtype, domain, rng):
    """The op table's sample call as (descent args, numpy args)."""
    args, np_args = [], []
    for text in (s.strip() for s in sample.split(";")):
        if text.startswith("B["):  # a random bool tensor whatever the dtype under test (where's condition)
            shape = [int(v) for v in text[2:text.index("]")].split(",") if v.strip()]
            t, a = make_tensor(rng, shape, descent.bool, "contiguous", domain)
            args.append(t), np_args.append(a)
        elif text.startswith("T["):
            shape = [int(v) for v in text[2:text.index("]")].split(",") if v.strip()]  # T[]: 0-d
            t, a = make_tensor(rng, shape, dtype, "contiguous", domain)
            if text.endswith("^T"):  # the transposed (non-contiguous) view of T[...]: its dims 0 and 1 swapped
                t, a = t.transpose(0, 1), np.swapaxes(a, 0, 1)
            args.append(t), np_args.append(a)
        elif text.startswith("["):
            v = [int(s) for s in text[1:-1].split(",")]
            args.append(v), np_args.append(v)
        elif text.startswith("(T["):  # (T[3, 6], T[6, 5]^T): a Tensor[] of random tensors
            items = re.findall(r"T\[[^\]]*\](?:\^T)?", text)
            pairs = [parse_sample(i, dtype, domain, rng) for i in items]
            args.append([a[0] for a, _ in pairs]), np_args.append([n[0] for _, n in pairs])
        elif text.startswith("("):  # (None, I[5, -1]): a Tensor?[] of None and int64 tensors of those values
            items = re.findall(r"None|I\[[^\]]*\]", text)
            v = [None if i == "None" else np.array([int(s) for s in i[2:-1].split(",")]) for i in items]
            args.append([None if a is None else descent.tensor(a) for a in v]), np_args.append(v)
        elif text in ("float32", "float64", "int64", "bool"):
            args.append(getattr(descent, text)), np_args.append(getattr(descent, text))
        else:
            v = {"None": None, "True": True, "False": False}.get(text, None)
            if v is None and text != "None":
                v = float(text) if "." in text else int(text)
            args.append(v), np_args.append(v)
    return args, np_args


@pytest.mark.parametrize("dtype", DTYPES, ids=dtype_id)
@pytest.mark.parametrize("name", sorted(OPS))
def test_sample_call(name, dtype, rng):
    op = OPS[name]
    args, np_args = parse_sample(op["sample"], dtype, op["domain"], rng)
    kwargs = {"dtype": dtype} if op["kind"] == "factory" else {}
    fn = op_function(op)
    if (name, dtype) in UNSUPPORTED:  # a RuntimeError, as PyTorch's dtype checks raise
        with pytest.raises(RuntimeError):
            fn(*args, **kwargs)
        return
    got = fn(*args, **kwargs)
    if NUMPY_REFERENCE[name] is None:  # an nn row whose sample raises for every dtype (UNSUPPORTED_NN)
        return
    first_only = isinstance(got, tuple) and name not in LEARNER_TUPLES and name != "max.dim"
    if first_only:  # native_layer_norm, nll_loss_forward: their first result, as max.dim's values
        got = got[0]
    if name in FLOAT_ONLY and not dtype.is_floating_point:  # computed in float32
        np_args = [np_args[0].astype(np.float32).astype(np.float64)]
    expected = NUMPY_REFERENCE[name](*np_args, **kwargs)
    if first_only and isinstance(expected, tuple):
        expected = expected[0]
    if op["kind"] == "read":  # a Python number of the element's kind, the element exactly
        assert type(got) is type(expected) and got == expected, (got, expected)  # numpy's item(): bool, int, float
    elif name == "max.dim" or name in LEARNER_TUPLES:
        check(got.values, expected[0], got.values.dtype)
        check(got.indices, expected[1], I)
    elif name in ("empty", "empty_strided", "rand", "randn"):
        assert got.shape == expected.shape and got.dtype is dtype
    elif name in LEARNER_RANDOM:  # values: test_learner_ops.py
        assert got.shape == expected.shape and np_dtype(got.dtype) == expected.dtype, (got, expected)
    else:
        n = max(np_args[0].size, 1) if op["kind"] in ("reduction", "matmul") else 1
        check(got, expected, got.dtype, atol=n * 1e-6 if got.dtype is F else 0.0)


# [SECTION] Elementwise ----------------------------------------------------------------

# descent's own functions (torch._C._nn's gelu and silu: their sample calls and tests/python/test_activations.py).
UNARY = sorted(n for n, op in OPS.items() if op["kind"] == "unary" and op["python_module"] == "")
# Two tensors (pow.Tensor_Scalar, pow.Scalar and rsub.Scalar, which take a number, are tested by their
# sample calls, test_pow_scalar and test_reflected_ops.py).
BINARY = sorted(n for n, op in OPS.items() if op["kind"] in ("binary", "comparison") and op["python_module"] == ""
                and not re.search(r"Scalar (exponent|self|other|threshold)", op["schema"]))
BROADCAST_PAIRS = [((3, 1, 4), (5, 4)), ((), ()), ((2, 3), ()), ((), (4,)), ((0, 3), (1, 3)),
                   ((4, 1), (1, 5)), ((2, 1, 3), (2, 4, 1)), ((3,), (3,)), ((0,), ())]


def compute(a, b, ct):
    """Operands cast to the common dtype, then widened to float64 for the reference."""
    a, b = a.astype(np_dtype(ct)), b.astype(np_dtype(ct))
    return (a.astype(np.float64), b.astype(np.float64)) if ct.is_floating_point else (a, b)


@pytest.mark.parametrize("dtype", DTYPES, ids=dtype_id)
@pytest.mark.parametrize("name", UNARY)
def test_unary(name, dtype, make):
    fn = getattr(descent, name)
    args = UNARY_ARGS.get(name, ())
    for shape, layout in itertools.product(SHAPES, LAYOUTS):
        x, a = make(shape, dtype, layout, OPS[name]["domain"])
        if (name, dtype) in UNSUPPORTED:
            with pytest.raises(RuntimeError):
                fn(x, *args)
            continue
        out_dtype = F if name in FLOAT_ONLY and not dtype.is_floating_point else dtype
        if name in UNARY_ARGS and not dtype.is_floating_point:  # the bounds promote as Python numbers
            out_dtype = F if any(isinstance(v, float) for v in args) else I
        a = a.astype(np_dtype(out_dtype))
        expected = NUMPY_REFERENCE[name](a.astype(np.float64) if out_dtype.is_floating_point else a, *args)
        check(fn(x, *args), expected, out_dtype)
        check(getattr(x, name)(*args), expected, out_dtype)  # the method


@pytest.mark.parametrize("db", DTYPES, ids=dtype_id)
@pytest.mark.parametrize("da", DTYPES, ids=dtype_id)
@pytest.mark.parametrize("name", BINARY)
def test_binary(name, da, db, make):
    fn = getattr(descent, OPS[name]["python_name"])
    domain = OPS[name]["domain"]
    for k, ((sa, sb), layout) in enumerate(itertools.product(BROADCAST_PAIRS, LAYOUTS)):
        x, a = make(sa, da, layout, domain)
        y, b = make(sb, db, LAYOUTS[k % len(LAYOUTS)], domain)
        ct = result_type((da, 2 if x.dim() else 1), (db, 2 if y.dim() else 1))
        if name == "sub" and B in (da, db):  # either operand bool, as PyTorch's sub_check
            with pytest.raises(RuntimeError, match="Subtraction"):
                fn(x, y)
            continue
        if OPS[name]["python_name"] == "pow" and da is B and db is B:
            with pytest.raises(NotImplementedError, match="\"pow\" not implemented for 'Bool'"):
                fn(x, y)
            continue
        if name == "div" and not ct.is_floating_point:
            ct = F  # true division
        if name == "floor_divide" and (ct is B or (not ct.is_floating_point and not np.all(b != 0))):
            with pytest.raises(RuntimeError, match="div_floor_cpu|ZeroDivisionError"):  # bool; an integer 0 divisor
                fn(x, y)
            continue
        out_dtype = B if OPS[name]["kind"] == "comparison" else ct
        expected = NUMPY_REFERENCE[name](*compute(a, b, ct))
        check(fn(x, y), expected, out_dtype)


@pytest.mark.parametrize("name", ["add", "sub", "mul", "div", "pow.Tensor_Tensor", "eq", "ne", "lt", "le", "gt", "ge"])
@pytest.mark.parametrize("dtype", DTYPES, ids=dtype_id)
@pytest.mark.parametrize("number", [2, 1.5, True], ids=["int", "float", "bool"])
def test_python_number_operand(name, dtype, number, make):
    """x op 2 / x op 1.5 / x op True, and the reflected forms the Tensor class has."""
    x, a = make((3, 4), dtype, "stepped", "positive")
    ct = result_type((dtype, 2), ({bool: B, int: I, float: F}[type(number)], 0))
    if name == "sub" and (dtype is B or isinstance(number, bool)):  # a bool on either side, as PyTorch's sub_check
        with pytest.raises(RuntimeError, match="Subtraction"):
            descent.sub(x, number)
        with pytest.raises(RuntimeError, match="Subtraction"):
            number - x
        return
    if name == "div" and not ct.is_floating_point:
        ct = F
    out_dtype = B if OPS[name]["kind"] == "comparison" else ct
    n = np.array(number)
    # x ** 2 is aten::pow.Tensor_Scalar (the binding tries that overload first), with the same values.
    check(getattr(descent, OPS[name]["python_name"])(x, number), NUMPY_REFERENCE[name](*compute(a, n, ct)), out_dtype)
    reflected = {"add": lambda: number + x, "sub": lambda: number - x, "mul": lambda: number * x,
                 "div": lambda: number / x, "pow.Tensor_Tensor": lambda: number ** x}
    if name in reflected:
        check(reflected[name](), NUMPY_REFERENCE[name](*compute(n, a, ct)), out_dtype)
    if name in COMPARISON_OPERATORS:  # x op n, and n op x, which Python turns into x's mirrored operator
        op, mirrored = COMPARISON_OPERATORS[name]
        check(op(x, number), NUMPY_REFERENCE[name](*compute(a, n, ct)), out_dtype)
        check(op(number, x), NUMPY_REFERENCE[name](*compute(n, a, ct)), out_dtype)
        check(getattr(x, name)(number), NUMPY_REFERENCE[name](*compute(a, n, ct)), out_dtype)  # the method
        assert mirrored(x, number).tolist() == op(number, x).tolist()


# Each comparison's Python operator, and the one Python calls for `number op tensor`.
COMPARISON_OPERATORS = {"eq": (operator.eq, operator.eq), "ne": (operator.ne, operator.ne),
                        "lt": (operator.lt, operator.gt), "le": (operator.le, operator.ge),
                        "gt": (operator.gt, operator.lt), "ge": (operator.ge, operator.le)}


def test_comparison_operators_return_tensors():
    """!=, <= and >= are ops of the table (ne, le, ge), not Python's identity fallbacks."""
    one, zero = descent.ones(1), descent.zeros(1)
    for expr, want in [(one != zero, [True]), (one != one, [False]), (one <= zero, [False]), (zero <= one, [True]),
                       (one <= one, [True]), (one >= zero, [True]), (zero >= one, [False]), (one >= one, [True])]:
        assert isinstance(expr, descent.Tensor) and expr.dtype is B and expr.tolist() == want
    x = descent.tensor([float("nan"), 1.0, 2.0])
    assert (x != x).tolist() == [True, False, False]                  # NaN is unequal to itself
    assert (x <= x).tolist() == [False, True, True] and (x >= x).tolist() == [False, True, True]
    assert (x != 1).tolist() == [True, False, True] and (1 <= x).tolist() == [False, True, True]
    assert descent.ne(x, 2.0).tolist() == [True, True, False] and descent.ge(x, 2).tolist() == [False, False, True]
    assert x.le(descent.tensor(1.5)).tolist() == [False, True, False]
    with pytest.raises(RuntimeError, match=re.escape("The size of tensor a (3) must match the size of tensor b (2) at non-singleton dimension 0")):
        descent.le(x, descent.ones(2))
    for name in ("ne", "le", "ge"):  # rows of the op table: `descent ops` lists them and the verifier runs them
        assert OPS[name]["kind"] == "comparison"
        assert OPS[name]["schema"] == f"aten::{name}.Tensor(Tensor self, Tensor other) -> Tensor"
        verdicts = descent.verify(name)
        assert len(verdicts) == len(ALL_DTYPES) and all(v["op"] == f"aten::{name}.Tensor" and v["passed"] for v in verdicts)


def test_numpy_operand_on_the_left():
    """numpy defers to descent.Tensor (__array_priority__, as PyTorch sets): a numpy
    scalar works like a Python number and gives a Tensor, and so does an array,
    read as tensor() reads it (Note [What an argument accepts], arg_parser.cpp)."""
    t = descent.tensor([1.0, 2.0])
    for expr, want in [(lambda: np.float64(2) + t, [3.0, 4.0]), (lambda: np.float64(2) * t, [2.0, 4.0]),
                       (lambda: np.float64(5) - t, [4.0, 3.0]), (lambda: np.float64(4) / t, [4.0, 2.0]),
                       (lambda: np.float64(2) ** t, [2.0, 4.0]), (lambda: np.int64(2) + t, [3.0, 4.0]),
                       (lambda: np.float32(2) + t, [3.0, 4.0]), (lambda: np.float64(2) == t, [False, True]),
                       (lambda: np.float64(2) != t, [True, False]), (lambda: np.float64(2) > t, [True, False]),
                       (lambda: np.float64(2) <= t, [False, True])]:
        got = expr()
        assert type(got) is descent.Tensor and got.tolist() == want
    assert (np.float64(2) + t).dtype is F                                # a number, not a float64 tensor
    for expr, want in [(lambda: np.ones(2) + t, [2.0, 3.0]), (lambda: np.ones(2) * t, [1.0, 2.0]),
                       (lambda: np.ones(2) < t, [False, True]), (lambda: np.array(1.0) - t, [0.0, -1.0]),
                       (lambda: np.ones(2) == t, [True, False]), (lambda: np.ones(2) != t, [False, True])]:
        got = expr()
        assert type(got) is descent.Tensor and got.tolist() == want
    assert descent.Tensor.__array_priority__ == 1000
    np.testing.assert_array_equal(np.asarray(t), [1.0, 2.0])             # conversions still work


def test_promotion_examples():
    """The cases Note [Type promotion] and PyTorch's documentation spell out."""
    i, f, b = descent.tensor([1, 2]), descent.tensor([1.0, 2.0]), descent.tensor([True, False])
    assert (i / i).dtype is F
    assert (i + 1.5).dtype is F and (i + 1).dtype is I and (i + True).dtype is I
    assert (f + descent.tensor(2.0, dtype=D)).dtype is F          # 0-d loses to a tensor with dims
    assert (i + descent.tensor(2.0, dtype=D)).dtype is D          # ... unless it brings a higher category
    assert (descent.tensor(1) + descent.tensor(2.0, dtype=D)).dtype is D
    assert (descent.tensor(1) + 2.5).dtype is F                   # a Python float means the default float
    assert (b + b).dtype is B and (b + b).tolist() == [True, False]
    assert (b * b).tolist() == [True, False] and (b + 1).dtype is I
    assert (i < f).dtype is B and (f == 1).dtype is B and (b > 0.5).dtype is B
    assert (f.to(D) * 2).dtype is D and (i ** 2).dtype is I and (i ** 0.5).dtype is F
    assert descent.sum(i).dtype is I and descent.sum(b).dtype is I and descent.sum(b).item() == 1
    assert descent.exp(i).dtype is F and descent.neg(i).dtype is I
    with pytest.raises(NotImplementedError, match="abs_cpu"):  # PyTorch has no abs of bool
        descent.abs(b)


def test_alpha():
    x, y = descent.tensor([1.0, 2.0]), descent.tensor([10.0, 20.0])
    assert descent.add(x, y, alpha=2).tolist() == [21.0, 42.0]
    assert descent.sub(x, y, alpha=0.5).tolist() == [-4.0, -8.0]
    assert x.add(y, alpha=-1).tolist() == [-9.0, -18.0]
    i = descent.tensor([1, 2])
    assert descent.add(i, i, alpha=3).tolist() == [4, 8]
    with pytest.raises(RuntimeError, match="alpha"):
        descent.add(i, i, alpha=1.5)


def test_integer_edge_cases():
    i = descent.tensor([2, 3, -4])
    assert (i ** 3).tolist() == [8, 27, -64] and (i ** 0).tolist() == [1, 1, 1]
    with pytest.raises(RuntimeError, match="Integers to negative integer powers are not allowed"):
        i ** -1                                                    # a Python int exponent: pow.Tensor_Scalar
    # A tensor of exponents may be negative: PyTorch's powi gives 1 for 1, +-1 for -1, else 0.
    base = descent.tensor([2, 1, -1, -1, 0, -3])
    assert (base ** descent.tensor([-1, -5, -3, -2, -1, -2])).tolist() == [0, 1, -1, 1, 0, 0]
    big = descent.tensor([2 ** 62])
    assert (big * 4).tolist() == [0]                               # wraps, like PyTorch
    assert descent.abs(descent.tensor([-(2 ** 63)])).tolist() == [-(2 ** 63)]


@pytest.mark.parametrize("variant", ["reference", "optimized"])
def test_abs_of_negative_zero_is_positive_zero(variant):
    descent.set_kernel_variant(variant)
    try:
        for dtype in (F, D):
            x = descent.tensor([-0.0, 0.0, -1.5, float("-inf")], dtype=dtype)
            got = descent.abs(x)
            assert got.tolist() == [0.0, 0.0, 1.5, math.inf]
            assert [math.copysign(1.0, v) for v in got.tolist()] == [1.0, 1.0, 1.0, 1.0]  # no -0.0 left
            assert math.copysign(1.0, abs(descent.tensor(-0.0, dtype=dtype)).item()) == 1.0
        assert math.copysign(1.0, descent.abs(descent.tensor([float("-nan")])).tolist()[0]) == 1.0
    finally:
        descent.set_kernel_variant("auto")


def test_nan_and_inf():
    x = descent.tensor([float("nan"), float("inf"), -1.0, 0.0])
    assert np.isnan(to_np(descent.relu(x))[0]) and to_np(descent.relu(x))[1:].tolist() == [math.inf, 0.0, 0.0]
    assert (x == x).tolist() == [False, True, True, True]
    assert to_np(1.0 / descent.tensor([0.0, -0.0])).tolist() == [math.inf, -math.inf]
    assert math.isnan(descent.max(x).item())
