"""The CPU matmul's ladder (Note [Matmul rungs], floors/kernels/cpu/matmul_rungs.cpp):
choosing a rung, the trace naming the one that ran, the packed rung (Note
[Packed matmul]) within the product bound on transposed and batched operands,
and `descent bench matmul --ladder --device cpu`."""
import subprocess

import numpy as np
import pytest

import descent
from conftest import cli


@pytest.fixture
def rung():
    """Sets the CPU's rung for one test; 'auto' again after it."""
    yield lambda name: descent._C._set_matmul_rung("cpu", name)
    descent._C._set_matmul_rung("cpu", "auto")


def within_product_bound(got, a, b):
    """|got - AB| <= 2 gamma_K (|A||B|): both the reference's and a fused chain's distance (Note [Device matmul bound])."""
    a64, b64 = a.astype(np.float64), b.astype(np.float64)
    k = a.shape[-1]
    eps = 2.0 ** -24 if a.dtype == np.float32 else 2.0 ** -53
    gamma = k * eps / (1 - k * eps)
    return np.all(np.abs(got.astype(np.float64) - a64 @ b64) <= 2 * gamma * (np.abs(a64) @ np.abs(b64)) * (1 + 1e-12))


def test_the_cpu_ladder_and_its_errors(rung):
    assert descent._C._matmul_rungs("cpu") == ["reference", "register", "packed"]
    assert descent._C._matmul_rung("cpu") == "auto"
    rung("packed")
    assert descent._C._matmul_rung("cpu") == "packed"
    with pytest.raises(ValueError, match="'blas' is not a matmul rung of cpu; choose one of 'auto', 'reference'"):
        rung("blas")
    with pytest.raises(TypeError):
        descent._C._set_matmul_rung(3, "auto")
    with pytest.raises(TypeError):
        descent._C._set_matmul_rung("cpu", 3)


def test_the_trace_names_the_rung_that_ran(rung):
    descent.manual_seed(4)
    a, b = descent.randn(100, 90), descent.randn(90, 80)
    descent.set_kernel_variant("reference")
    try:
        want = np.asarray(a @ b)
    finally:
        descent.set_kernel_variant("auto")
    for name in ["reference", "register", "packed", "auto"]:
        rung(name)
        with descent.trace(python_functions=False) as t:
            got = np.asarray(a @ b)
        ran = descent._C._last_matmul_run("cpu")["rung"]
        assert ran == (name if name != "auto" else "packed") or (name in ("packed", "auto") and ran == "register")
        assert [s["args"]["rung"] for s in t.result.spans() if "rung" in s["args"]] == [ran], name  # mm's kernel span
        if ran == "packed":
            assert within_product_bound(got, np.asarray(a), np.asarray(b)), name
        else:
            assert got.tobytes() == want.tobytes(), name


@pytest.mark.parametrize("dtype", [descent.float32, descent.float64])
def test_packed_on_transposed_and_batched_operands(rung, dtype):
    rng = np.random.default_rng(9)
    np_dtype = np.float32 if dtype == descent.float32 else np.float64
    rung("packed")
    a = rng.uniform(-2, 2, (3, 129, 65)).astype(np_dtype)
    b = rng.uniform(-2, 2, (3, 257, 65)).astype(np_dtype)
    for threads in (1, descent.get_num_threads()):
        saved = descent.get_num_threads()
        descent.set_num_threads(threads)
        try:
            x, y = descent.from_numpy(a), descent.from_numpy(b)
            got = np.asarray(x @ y.transpose(1, 2))  # bmm of a permuted view, read through its strides
            assert within_product_bound(got, a, b.transpose(0, 2, 1))
            got = np.asarray(x[0].t() @ x[1])  # both operands of mm transposed or not: 65 x 129 @ 129 x 65
            assert within_product_bound(got, a[0].T, a[1])
        finally:
            descent.set_num_threads(saved)


def test_bench_ladder_prints_every_rung():
    r = subprocess.run([cli(), "bench", "matmul", "--ladder", "--device", "cpu", "--sizes", "48", "--threads", "1"],
                       capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stdout + r.stderr
    rows = [line.split() for line in r.stdout.splitlines()[2:]]
    assert [row[2] for row in rows if row[2] != "torch"] == ["reference", "register", "packed", "auto:register"]
    assert all(row[-1] == "ok" for row in rows if row[2] != "torch"), r.stdout
