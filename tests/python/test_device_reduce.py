"""Reductions, matrix products and indexing on devices from Python: sim:0
always, cuda:0 where there is one, against the CPU (tests/kernels/
test_device_reduce_matmul.cpp holds the thorough sweep; these check that the
Python surface reaches the device kernels and that the verifier runs there)."""
import math
import os
import subprocess
import sys

import pytest

import descent
from conftest import DEVICES




def _close(a, b, rel=1e-5):
    a, b = a.tolist(), b.tolist()
    flat = lambda x: [y for z in x for y in flat(z)] if isinstance(x, list) else [x]  # noqa: E731
    for x, y in zip(flat(a), flat(b)):
        assert (math.isnan(x) and math.isnan(y)) or abs(x - y) <= rel * max(1.0, abs(x)), (x, y)


@pytest.mark.parametrize("device", DEVICES)
def test_reductions_and_products_run_on_the_device(device):
    descent.manual_seed(0)
    x = descent.randn(7, 300)
    w = descent.randn(300, 5)
    xd, wd = x.to(device), w.to(device)
    assert str(xd.sum().device) == device
    _close(xd.sum().to("cpu"), x.sum())
    _close(xd.sum(1, keepdim=True).to("cpu"), x.sum(1, keepdim=True))
    _close(xd.T.mean(0).to("cpu"), x.T.mean(0))
    values, indices = xd.max(1)
    v_cpu, i_cpu = x.max(1)
    assert values.to("cpu").tolist() == v_cpu.tolist() and indices.to("cpu").tolist() == i_cpu.tolist()
    assert xd.max().to("cpu").item() == x.max().item()
    _close((xd @ wd).to("cpu"), x @ w, rel=1e-4)
    _close(xd[descent.tensor([6, 0, -1])].to("cpu"), x[descent.tensor([6, 0, -1])])


@pytest.mark.parametrize("device", DEVICES)
def test_index_put_accumulates_as_the_cpu(device):
    x = descent.zeros(4, 3)
    i = descent.tensor([1, 1, 3, 1])
    v = descent.ones(4, 3)
    xd = x.to(device)
    x.index_put_((i,), v, True)
    xd.index_put_((i.to(device),), v.to(device), True)
    assert xd.to("cpu").tolist() == x.tolist()


@pytest.mark.parametrize("device", DEVICES)
def test_verify_on_the_device(device):
    verdicts = descent.verify("sum", device=device) + descent.verify("mm", device=device)
    assert verdicts and all(v["passed"] for v in verdicts), [v for v in verdicts if not v["passed"]]
    claims = {(v["op"], v["dtype"]): v["claim"] for v in verdicts}
    assert claims[("aten::sum", "float32")] == "bound"
    assert claims[("aten::mm", "int64")] == "bit-for-bit"


def test_cli_verify_device():
    r = subprocess.run([sys.executable, "-m", "descent", "verify", "--op", "max", "--device", "sim:0"],
                       capture_output=True, text=True, env=os.environ)
    assert r.returncode == 0, r.stdout + r.stderr
    assert "sim" in r.stdout and "FAIL" not in r.stdout
