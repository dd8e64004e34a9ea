"""The matmul ladder (Note [The matmul ladder], floors/kernels/matmul_ladder.h)
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
