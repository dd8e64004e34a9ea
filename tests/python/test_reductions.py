"""Reductions and the matrix product against a float64 numpy reference.

- sum/mean over None, single dims, negative dims, lists of dims (and [] =
  all), keepdim True/False, on every dtype (sum of bool/int64 -> int64, mean
  of them -> RuntimeError, as in PyTorch), every layout, zero-size and 0-d inputs; the Tensor
  methods agree with the functions;
- max() and max(dim) returning (values, indices) with .values/.indices, ties
  (first wins) and NaN (propagates);
- matmul: 1-D@1-D, 2-D@1-D, 1-D@2-D, 2-D@2-D, batched with batch
  broadcasting, non-contiguous operands, K=0, M=0, empty batch; errors;
- int64 sums and products wrap on overflow, like the elementwise ops.
Float results must lie within n * eps * sum|terms| of the exact result
(Note [Summation bound]): descent may add in another order than numpy.
"""
import itertools
import math
import re

import numpy as np
import pytest

import descent
from conftest import DTYPES, LAYOUTS, UNSUPPORTED, dtype_id, run_python, to_np
from test_ops import EPS, NUMPY_REFERENCE, B, D, F, I, _axes, _max_dim, check, compute, result_type


REDUCE_CASES = [((2, 3, 4), [None, 0, 1, -1, [0, 2], [-1, 0], [], [0, 1, 2]]),
                ((0, 3), [None, 0, 1, [0, 1]]), ((3, 0, 2), [None, 1, 2, [0, 2]]),
                ((), [None, 0, -1, [0]]), ((7,), [None, 0, -1]), ((1, 5, 1), [None, 1, [0, 2]])]


@pytest.mark.parametrize("dtype", DTYPES, ids=dtype_id)
@pytest.mark.parametrize("name", ["sum", "mean"])
def test_sum_mean(name, dtype, make):
    fn = getattr(descent, name)
    for (shape, dims), layout in itertools.product(REDUCE_CASES, LAYOUTS):
        x, a = make(shape, dtype, layout)
        for dim, keepdim in itertools.product(dims, [False, True]):
            if (name, dtype) in UNSUPPORTED:
                with pytest.raises(RuntimeError, match="mean"):
                    fn(x, dim, keepdim)
                continue
            got = fn(x, dim, keepdim) if dim is not None or keepdim else fn(x)
            method = x.sum(dim, keepdim) if name == "sum" else x.mean(dim, keepdim)
            assert to_np(method).tobytes() == to_np(got).tobytes()   # the method runs the same kernel
            expected = NUMPY_REFERENCE[name](a, dim, keepdim)
            out_dtype = dtype if dtype.is_floating_point else I
            if not out_dtype.is_floating_point:
                check(got, expected, out_dtype)
                continue
            # Note [Summation bound]: any order of n additions is within n eps sum|x|.
            abs_sum = np.sum(np.abs(a.astype(np.float64)), axis=_axes(a, dim), keepdims=keepdim)
            n = max(a.size // max(np.size(abs_sum), 1), 1)
            bound = 2 * (n + 1) * EPS[dtype] * abs_sum / (n if name == "mean" else 1) + 1e-300
            assert got.dtype is out_dtype and to_np(got).shape == np.shape(expected)
            diff = np.abs(to_np(got).astype(np.float64) - expected)
            assert np.all((diff <= bound) | (np.isnan(diff) & np.isnan(expected))), (shape, dim, keepdim)


@pytest.mark.parametrize("dtype", DTYPES, ids=dtype_id)
def test_max(dtype, make):
    for (shape, dims), layout in itertools.product(REDUCE_CASES, LAYOUTS):
        x, a = make(shape, dtype, layout)
        if a.size == 0:
            with pytest.raises(RuntimeError, match="numel"):
                descent.max(x)
        else:
            check(descent.max(x), np.max(a), dtype)
            check(x.max(), np.max(a), dtype)
        for dim, keepdim in itertools.product([d for d in dims if isinstance(d, int)], [False, True]):
            if a.ndim and a.shape[dim] == 0:
                with pytest.raises(IndexError, match="non-zero size"):
                    descent.max(x, dim, keepdim)
                continue
            values, indices = _max_dim(a, dim, keepdim)
            r = descent.max(x, dim, keepdim=keepdim)
            check(r.values, values, dtype)
            check(r.indices, indices, I)
            v, ix = x.max(dim=dim, keepdim=keepdim)  # a (values, indices) tuple
            check(v, values, dtype), check(ix, indices, I)


@pytest.mark.parametrize("variant", ["reference", "auto"])
def test_int64_sum_and_matmul_wrap(variant):
    r = run_python("import descent\n"
                   f"descent.set_kernel_variant('{variant}')\n"
                   "x = descent.tensor([[2 ** 62, 2 ** 62]])\n"
                   "print(x.sum().item(), x.sum(1).tolist(), (x @ descent.tensor([[1], [1]])).tolist())\n")
    assert r.returncode == 0, r.stderr[-800:]
    assert r.stdout.split() == [str(-2 ** 63), f"[{-2 ** 63}]", f"[[{-2 ** 63}]]"]


def test_max_ties_and_nan():
    r = descent.max(descent.tensor([[2.0, 5.0, 5.0, 1.0], [1.0, float("nan"), 3.0, float("nan")]]), 1)
    assert r.indices.tolist() == [1, 1]                              # first maximum; first NaN
    assert r.values[0].item() == 5.0 and math.isnan(r.values[1].item())


# [SECTION] Matrix product ----------------------------------------------------------------

MATMUL_SHAPES = [((4,), (4,)), ((3, 4), (4,)), ((4,), (4, 5)), ((3, 4), (4, 5)), ((2, 3, 4), (2, 4, 5)),
                 ((2, 1, 3, 4), (5, 4, 2)), ((3, 4), (2, 4, 5)), ((2, 3, 4), (4,)), ((4,), (2, 4, 5)),
                 ((3, 0), (0, 5)), ((0, 4), (4, 5)), ((0, 3, 4), (4, 2)), ((1, 1), (1, 1)), ((2, 3, 4), (4, 5)),
                 ((2, 3, 0), (0, 5)), ((2, 0, 4), (3, 1, 4, 5))]


@pytest.mark.parametrize("da,db", [(F, F), (D, D), (I, I)], ids=str)
def test_matmul(da, db, make):
    ct = result_type((da, 2), (db, 2))
    for (sa, sb), la, lb in itertools.product(MATMUL_SHAPES, LAYOUTS, ["contiguous", "transposed"]):
        x, a = make(sa, da, la)
        y, b = make(sb, db, lb)
        got = descent.matmul(x, y)
        a64, b64 = compute(a, b, ct)
        expected = np.matmul(a64, b64)
        if not ct.is_floating_point:
            check(got, expected, ct)
            continue
        bound = 2 * (sa[-1] + 1) * EPS[ct] * np.matmul(np.abs(a64), np.abs(b64)) + 1e-300
        assert got.dtype is ct and to_np(got).shape == expected.shape, (sa, sb)
        assert np.all(np.abs(to_np(got) - expected) <= bound), (sa, sb, la, lb)
        assert np.array_equal(to_np(x @ y), to_np(got))


def test_matmul_errors():
    """PyTorch's messages: matmul's own, then those of the op it calls."""
    with pytest.raises(RuntimeError, match=re.escape(
            "both arguments to matmul need to be at least 1D, but they are 0D and 1D")):
        descent.matmul(descent.tensor(1.0), descent.ones(2))
    with pytest.raises(RuntimeError, match=re.escape('"dot" not implemented for \'Bool\'')):
        descent.matmul(descent.ones(2, dtype=B), descent.ones(2, dtype=B))
    with pytest.raises(RuntimeError, match=re.escape("mat1 and mat2 shapes cannot be multiplied (2x3 and 2x3)")):
        descent.ones(2, 3) @ descent.ones(2, 3)
    with pytest.raises(RuntimeError, match=re.escape("1D tensors expected, but got 2D and 2D tensors")):
        descent.dot(descent.ones(2, 3), descent.ones(2, 3))
    with pytest.raises(RuntimeError, match=re.escape(
            "inconsistent tensor size, expected tensor [3] and src [4] to have the same number of elements, "
            "but got 3 and 4 elements respectively")):
        descent.ones(3) @ descent.ones(4)
    with pytest.raises(RuntimeError, match=re.escape("size mismatch, got input (2), mat (2x3), vec (4)")):
        descent.mv(descent.ones(2, 3), descent.ones(4))
    # Note [matmul names the shapes it was given]: with one 1-D operand, the shapes as given.
    with pytest.raises(RuntimeError, match=re.escape("matmul(): shapes [2, 3] and [4] cannot be multiplied (3 != 4)")):
        descent.ones(2, 3) @ descent.ones(4)
    with pytest.raises(RuntimeError, match=re.escape(
            "Expected size for first two dimensions of batch2 tensor to be: [2, 3] but got: [2, 2].")):
        descent.ones(2, 2, 3) @ descent.ones(2, 2, 3)
    with pytest.raises(RuntimeError, match=re.escape("batch1 must be a 3D tensor")):
        descent.bmm(descent.ones(2, 3), descent.ones(2, 3, 3))
    with pytest.raises(RuntimeError, match=re.escape("The size of tensor a (2) must match the size of tensor b (3) at non-singleton dimension 0")):
        descent.ones(2, 2, 3) @ descent.ones(3, 3, 2)   # batch dims 2 and 3 do not broadcast


def test_matmul_on_every_vector_unit_is_the_reference_bit_for_bit():
    """Note [Register-blocked matmul]: whichever vector unit the tiles use, the
    bits are the reference loop's; the trace names the unit."""
    isas = descent._C._matmul_isas()
    widest = descent._C._matmul_isa()
    assert isas[-1] == widest and set(isas) <= {"sse2", "avx2", "avx512", "generic"}
    descent.manual_seed(3)
    a, b = descent.randn(2, 37, 300), descent.randn(2, 300, 45)
    descent.set_kernel_variant("reference")
    try:
        want = np.asarray(a @ b)
    finally:
        descent.set_kernel_variant("auto")
    descent._C._set_matmul_rung("cpu", "register")  # auto would take the packed rung here (Note [Matmul rungs])
    try:
        for isa in isas:
            descent._C._set_matmul_isa(isa)
            with descent.trace(python_functions=False) as t:
                got = np.asarray(a @ b)
            assert got.tobytes() == want.tobytes(), isa
            assert any(s["args"].get("isa") == isa for s in t.result.spans() if s["name"] == "aten::bmm"), isa
    finally:
        descent._C._set_matmul_isa(widest)
        descent._C._set_matmul_rung("cpu", "auto")
    with pytest.raises(ValueError, match="'avx9'.*choose one of 'sse2'|'avx9'.*choose one of 'generic'"):
        descent._C._set_matmul_isa("avx9")
    with pytest.raises(TypeError, match="str"):
        descent._C._set_matmul_isa(3)
