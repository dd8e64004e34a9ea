"""The matmul ladder (Note [The matmul ladder], floors/kernels/ladder/matmul_ladder.h)
from Python: descent._C._matmul_rungs(device) lists a device's rungs,
_set_matmul_rung(device, name) picks one ('auto' the best per dtype), the
kernel span of a product names the rung that ran (rung=) and its kernel,
`descent verify --device` holds every rung to the CPU's reference, and
`descent bench matmul --ladder` times each. sim:0 runs rungs 1 to 3; cuda:0,
where there is one, all of its own (skipped here otherwise)."""
import subprocess
import sys

import numpy as np
import pytest

import descent
from descent import _C

from conftest import DEVICES, cli, needs_cuda




@pytest.fixture(autouse=True)
def auto_rungs():
    yield
    _C._set_matmul_rung("sim:0", "auto")
    if descent.cuda.is_available():
        _C._set_matmul_rung("cuda:0", "auto")


def test_sim_lists_rungs_one_to_three_and_refuses_the_others():
    assert _C._matmul_rungs("sim:0") == ["naive", "shared_tiles", "register_tiles"]
    assert _C._matmul_rung("sim:0") == "auto"
    with pytest.raises(ValueError, match="'auto', 'naive', 'shared_tiles', 'register_tiles'"):
        _C._set_matmul_rung("sim:0", "wgmma")
    assert _C._matmul_rungs("cpu") == ["reference", "register", "packed"], "one binding: the CPU's ladder too"


def rung_of_traced_mm(a, b):
    with descent.trace() as t:
        a @ b
    spans = [s for s in t.result.spans() if s["name"] == "aten::mm" and s["floor"] == 5]
    assert spans, "no aten::mm kernel span"
    return spans[-1]["args"]


@pytest.mark.parametrize("device", DEVICES)
def test_each_rung_agrees_and_the_trace_names_it(device, rng):
    a_np = rng.uniform(-1, 1, (19, 33)).astype(np.float32)
    b_np = rng.uniform(-1, 1, (33, 21)).astype(np.float32)
    a, b = descent.tensor(a_np.tolist()).to(device), descent.tensor(b_np.tolist()).to(device)
    results = []
    for rung in ["naive", "shared_tiles", "register_tiles"]:
        _C._set_matmul_rung(device, rung)
        args = rung_of_traced_mm(a, b)
        assert args["rung"] == rung
        assert args["kernel"] == _C._last_matmul_run(device)["kernel"]
        assert _C._last_matmul_run(device)["rung"] == rung
        results.append(np.asarray((a @ b).cpu()))
    for r in results[1:]:
        assert np.array_equal(r, results[0]), "rungs 1 to 3 add in the same order: the same bits"
    np.testing.assert_allclose(results[0], a_np.astype(np.float64) @ b_np, rtol=1e-5, atol=1e-5)
    _C._set_matmul_rung(device, "auto")
    assert rung_of_traced_mm(a, b)["rung"] == "register_tiles"


@needs_cuda
def test_cuda_bfloat16_takes_its_tensor_core_rung():
    a = descent.ones(256, 128, dtype=descent.bfloat16, device="cuda:0")
    b = descent.ones(128, 256, dtype=descent.bfloat16, device="cuda:0")
    best = "wgmma" if "wgmma" in _C._matmul_rungs("cuda:0") else "wmma"
    assert rung_of_traced_mm(a, b)["rung"] == best
    assert float((a @ b).float().sum().item()) == 256 * 256 * 128


# [SECTION] TF32 (Note [TF32 matmul]) ---------------------------------------------------------------

def test_tf32_is_off_until_asked_with_pytorchs_names():
    assert descent.backends.cuda.matmul.allow_tf32 is False
    assert descent.get_float32_matmul_precision() == "highest"
    try:
        descent.set_float32_matmul_precision("high")
        assert descent.backends.cuda.matmul.allow_tf32 is True
        descent.backends.cuda.matmul.allow_tf32 = False
        assert descent.get_float32_matmul_precision() == "highest"
        with pytest.raises(RuntimeError, match="set_allow_tf32_cublas expects a bool, but got int"):
            descent.backends.cuda.matmul.allow_tf32 = 1
        with pytest.raises(AttributeError, match="Unknown attribute allow_tf16"):
            descent.backends.cuda.matmul.allow_tf16
        with pytest.warns(UserWarning, match="Ignoring invalid value for float32 matmul precision"):
            descent.set_float32_matmul_precision("fast")
    finally:
        descent.backends.cuda.matmul.allow_tf32 = False


def test_sim_has_no_tensor_cores_and_ignores_tf32(rng):
    a = descent.tensor(rng.standard_normal((40, 56)).astype(np.float32))
    b = descent.tensor(rng.standard_normal((56, 48)).astype(np.float32))
    a, b = a.to("sim:0"), b.to("sim:0")
    want = (a @ b).cpu().numpy()
    try:
        descent.backends.cuda.matmul.allow_tf32 = True
        run = rung_of_traced_mm(a, b)
        assert run["rung"] == "register_tiles" and "math" not in run
        assert np.array_equal((a @ b).cpu().numpy(), want)
    finally:
        descent.backends.cuda.matmul.allow_tf32 = False


@needs_cuda
def test_cuda_float32_runs_in_tf32_only_when_allowed(rng):
    a_np = rng.standard_normal((256, 192)).astype(np.float32)
    b_np = rng.standard_normal((192, 320)).astype(np.float32)
    a, b = descent.tensor(a_np, device="cuda:0"), descent.tensor(b_np, device="cuda:0")
    exact = a_np.astype(np.float64) @ b_np
    assert rung_of_traced_mm(a, b)["rung"] == "register_tiles"
    try:
        descent.backends.cuda.matmul.allow_tf32 = True
        run = rung_of_traced_mm(a, b)
        assert run["rung"] == "wmma" and run["math"] == "tf32" and "tf32" in run["kernel"]
        got = (a @ b).cpu().numpy()
    finally:
        descent.backends.cuda.matmul.allow_tf32 = False
    err = np.abs(got - exact).max() / np.abs(exact).max()
    assert 1e-7 < err < 1e-2, err  # TF32's 10-bit mantissa: inexact, but close


@pytest.mark.parametrize("device", DEVICES)
def test_verify_covers_every_rung(device):
    ladder = _C._verify_matmul_rungs(1, device)
    for rung in _C._matmul_rungs(device):
        assert any(f"[{rung}]" in v["op"] for v in ladder), rung
    failed = [v for v in ladder if not v["passed"]]
    assert not failed, failed[:3]
    r = subprocess.run([sys.executable, "-m", "descent", "verify", "--op", "mm", "--device", device],
                       capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stdout[-2000:] + r.stderr
    for rung in _C._matmul_rungs(device):
        assert f"mm[{rung}]" in r.stdout, rung


def test_bench_ladder_on_sim_prints_every_rung_with_its_verdict():
    r = subprocess.run([sys.executable, "-m", "descent", "bench", "matmul", "--ladder", "--device", "sim:0",
                        "--sizes", "64", "--dtypes", "float32", "--reps", "1"], capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr
    for rung in ["naive", "shared_tiles", "register_tiles"]:
        line = next((ln for ln in r.stdout.splitlines() if f" {rung} " in ln), None)
        assert line is not None, r.stdout
        assert "ok" in line and "TFLOP/s" in r.stdout, line
