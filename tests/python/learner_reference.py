"""The numpy references of issue 42's ops (a learner's first ops), which
test_ops.py adds to its NUMPY_REFERENCE, and what the op-table sweeps need to
know about them: which draw random numbers (their sample calls compare shape
and dtype; test_learner_ops.py checks their values), which return (values,
indices), which compute in float32 for integer inputs, and the bounds the
unary sweep gives clip."""
import math

import numpy as np

from conftest import np_dtype


def _dt(x, dtype):
    return np_dtype(dtype) if dtype is not None else x.dtype


def _like(value):
    def f(x, *args, dtype=None, device=None):
        return np.full(x.shape, args[0] if value is None else value).astype(_dt(x, dtype))
    return f


def _new(value):
    def f(x, size, *args, dtype=None, device=None):
        return np.full(size, args[0] if value is None else value).astype(_dt(x, dtype))
    return f


def _eye(n, m=None, dtype=None, device=None):
    return np.eye(n, m).astype(np_dtype(dtype) if dtype is not None else np.float32)


def _squeeze_dims(x, dims):
    dims = [d % max(x.ndim, 1) for d in ([dims] if isinstance(dims, int) else dims)]
    keep = tuple(d for d in dims if x.ndim and x.shape[d] == 1)
    return np.squeeze(x, keep) if keep else x


def _arg(fn):
    def f(x, dim=None, keepdim=False):
        if dim is None:
            r = fn(x.reshape(-1))
            return np.array(r).reshape([1] * x.ndim) if keepdim else np.array(r)
        return fn(x, axis=dim % max(x.ndim, 1), keepdims=keepdim)
    return f


def _var(fn):
    def by_dim(x, dim=None, unbiased=True, keepdim=False, correction=None):
        ddof = correction if correction is not None else (1 if unbiased else 0)
        axis = None if dim is None else tuple(d % x.ndim for d in dim)
        return fn(x.astype(np.float64), axis=axis, ddof=ddof, keepdims=keepdim)
    return by_dim


def _sort(x, dim=-1, descending=False):
    key = -x.astype(np.float64) if descending else x
    idx = np.argsort(key, axis=dim, kind="stable")
    return np.take_along_axis(x, idx, axis=dim), idx


def _topk(x, k, dim=-1, largest=True, sorted=True):
    v, i = _sort(x, dim, largest)
    return np.take(v, range(k), axis=dim), np.take(i, range(k), axis=dim)


def _unfold(x, d, size, step):
    windows = np.lib.stride_tricks.sliding_window_view(x, size, axis=d)
    return np.take(windows, range(0, windows.shape[d], step), axis=d)


def _as_strided(x, size, stride, offset=None):
    flat = np.ascontiguousarray(x).reshape(-1)[offset or 0:]
    return np.lib.stride_tricks.as_strided(flat, size, [s * x.itemsize for s in stride]).copy()


def _norm(x, ord=2, dim=None, keepdim=False, dtype=None):
    axis = None if dim is None else tuple(dim)
    return np.sum(np.abs(x) ** ord, axis=axis, keepdims=keepdim) ** (1.0 / ord)


_erf = np.vectorize(math.erf, otypes=[np.float64])


def _gelu(x, approximate=0):
    """aten::gelu's expressions (Note [gelu and silu as aten computes them], elementwise.h), in float64."""
    v = x.astype(np.float64)
    if approximate == 1:
        y = 0.5 * v * (1 + np.tanh(np.sqrt(2 / np.pi) * (v + 0.044715 * v ** 3)))
    else:
        y = v * 0.5 * (1 + _erf(v / np.sqrt(2)))
    return y.astype(x.dtype)


def _gelu_backward(g, x, approximate=0):
    v = x.astype(np.float64)
    if approximate == 1:
        beta, kappa = np.sqrt(2 / np.pi), 0.044715
        t = np.tanh(beta * (v + kappa * v ** 3))
        d = 0.5 * (1 + t) + 0.5 * v * (1 - t * t) * beta * (1 + 3 * kappa * v * v)
    else:
        d = 0.5 * (1 + _erf(v / np.sqrt(2))) + v * np.exp(-0.5 * v * v) / np.sqrt(2 * np.pi)
    return (g.astype(np.float64) * d).astype(np.result_type(g, x))


def _sigmoid(v):
    return 1 / (1 + np.exp(-v))


def _shape_only(shape_of):
    return shape_of


LEARNER_REFERENCE = {
    "empty_like": _like(0), "zeros_like": _like(0), "ones_like": _like(1), "full_like": _like(None),
    "rand_like": _like(0.5), "randn_like": _like(0.0), "randint_like": lambda x, high, **kw: _like(0)(x, **kw),
    "new_empty": _new(0), "new_zeros": _new(0), "new_ones": _new(1), "new_full": _new(None),
    "eye": _eye, "eye.m": _eye,
    "uniform_": lambda x, a=0, b=1: x.copy(), "normal_": lambda x, a=0, b=1: x.copy(),
    "random_": lambda x, a, b=None: x.copy(),
    "randint": lambda high, size, dtype=None, device=None: np.zeros(size, np_dtype(dtype) if dtype else np.int64),
    "randint.low": lambda low, high, size, dtype=None, device=None: np.zeros(size, np_dtype(dtype) if dtype else np.int64),
    "randperm": lambda n, dtype=None, device=None: np.arange(n).astype(np_dtype(dtype) if dtype else np.int64),
    "multinomial": lambda p, n, replacement=False: np.zeros(p.shape[:-1] + (n,), np.int64),
    "log10": np.log10, "log2": np.log2,
    "clip": lambda x, lo=None, hi=None: np.clip(x, lo, hi),
    "floor_divide": np.floor_divide,
    "narrow": lambda x, d, start, length: np.take(x, range(start, start + length), axis=d),
    "squeeze": np.squeeze, "squeeze.dim": _squeeze_dims, "squeeze.dims": _squeeze_dims,
    "stack": lambda tensors, dim=0: np.stack(tensors, axis=dim),
    "tril": lambda x, k=0: np.tril(x, k), "triu": lambda x, k=0: np.triu(x, k),
    "where.self": np.where, "where.ScalarOther": np.where, "where.ScalarSelf": np.where, "where.Scalar": np.where,
    "masked_fill": lambda x, mask, v: np.where(mask, np.array(v).astype(x.dtype), x),
    "argmax": _arg(np.argmax), "argmin": _arg(np.argmin),
    "all": np.all, "all.dim": lambda x, d, keepdim=False: np.all(x, axis=d, keepdims=keepdim),
    "any": np.any, "any.dim": lambda x, d, keepdim=False: np.any(x, axis=d, keepdims=keepdim),
    "var": lambda x, unbiased=True: _var(np.var)(x, None, unbiased),
    "var.dim": _var(np.var), "var.correction": lambda x, dim=None, **kw: _var(np.var)(x, dim, **kw),
    "std": lambda x, unbiased=True: _var(np.std)(x, None, unbiased),
    "std.dim": _var(np.std), "std.correction": lambda x, dim=None, **kw: _var(np.std)(x, dim, **kw),
    "clamp.Tensor": lambda x, lo=None, hi=None: np.minimum(np.maximum(x, lo), hi),
    "clamp_": lambda x, lo=None, hi=None: np.clip(x, lo, hi).astype(x.dtype),
    "isclose": lambda a, b, rtol=1e-05, atol=1e-08, equal_nan=False: np.isclose(
        a.astype(np.float64), b.astype(np.float64), rtol, atol, equal_nan),
    "linalg_vector_norm": _norm,
    "sort": _sort, "topk": _topk, "unfold": _unfold, "as_strided": _as_strided,
    "gelu": _gelu, "gelu_backward": _gelu_backward,
    "silu": lambda x: (x.astype(np.float64) * _sigmoid(x.astype(np.float64))).astype(x.dtype),
    "silu_backward": lambda g, x: (g.astype(np.float64) * _sigmoid(x.astype(np.float64)) * (
        1 + x.astype(np.float64) * (1 - _sigmoid(x.astype(np.float64))))).astype(np.result_type(g, x)),
    "randint_like.low_dtype": lambda x, low, high, **kw: _like(0)(x, **kw),
}

# Their sample calls draw random numbers or leave memory unset: compared by shape (and dtype where the dtype under
# test is theirs); test_learner_ops.py checks their values.
LEARNER_RANDOM = {"empty_like", "new_empty", "rand_like", "randn_like", "randint_like", "randint_like.low_dtype",
                  "uniform_", "normal_", "random_", "randint", "randint.low", "randperm", "multinomial"}
LEARNER_TUPLES = {"sort", "topk"}  # (values, indices), as max.dim
LEARNER_FLOAT_ONLY = {"log10", "log2"}
LEARNER_UNARY_ARGS = {"clip": (-1.5, 2.5)}
# Rows whose kernels, or whose parts' kernels, are the CPU's only (a row that says "CPU"): the device sweeps
# leave them out (a device tensor is refused at dispatch, naming the op and the key). None since every row runs
# on sim:0 and cuda (Note [Masks on a device], and the host round trips of sort, topk and the integer draws).
LEARNER_CPU_ONLY = set()
# Their sample calls draw random numbers: on a device the counters' (uniform_, normal_, rand_like, randn_like) or
# the CPU's, copied over (randint, random_, randperm, multinomial): shape and dtype are compared.
LEARNER_DEVICE_RANDOM = {"uniform_", "normal_", "rand_like", "randn_like", "randint", "randint.low", "randint_like",
                         "randint_like.low_dtype",
                         "random_", "randperm", "multinomial"}
LEARNER_UNINITIALISED = {"empty_like", "new_empty"}
