"""The compiled-call verifier's suite (what `descent verify --compiled` is to run): every case proved and
bitwise equal to eager, gradients included, or within the stated bound where a decomposition adds in another
order (Note [Decomposing before fusion])."""
import pytest

from descent._compile import verify


@pytest.fixture(autouse=True)
def cache(monkeypatch, tmp_path):
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))


def test_the_suite_passes():
    rows = verify.suite()
    names = ["pointwise chain", "unary ops", "broadcasting", "views", "reduction", "float64",
             "mlp, with grads", "attention, with grads", "mse_loss, decomposed",
             "softmax, decomposed", "log_softmax, decomposed, with grads", "layer_norm, decomposed"]
    assert [r[0] for r in rows] == names + [n + " on sim:0" for n in names]  # the CPU, then sim:0
    failed = [r for r in rows if not r[1]]
    assert not failed, verify.format_suite(failed)
    assert all("proved" in r[2] for r in rows)
    detail = dict((r[0], r[2]) for r in rows)
    assert "forward/backward partitioned" in detail["attention, with grads"]
    assert "bitwise equal to eager" in detail["mse_loss, decomposed"]  # the kernel's own order
    assert detail["reduction on sim:0"].startswith("1 fused kernel(s), 1 proved")  # the device's interpreter
    assert "within 77 * u * scale of eager" in detail["softmax, decomposed"]  # another order: the bound
    text = verify.format_suite(rows)
    assert text.splitlines()[0].startswith("ok    pointwise chain")


def test_descent_verify_compiled_runs_the_suite():
    """`descent verify --compiled`: the suite's rows, then the count that holds; exit 0 when all hold."""
    import os
    import subprocess
    import sys
    r = subprocess.run([sys.executable, "-m", "descent", "verify", "--compiled"], capture_output=True, text=True,
                       timeout=240, env=dict(os.environ))
    assert r.returncode == 0, r.stdout + r.stderr
    last = r.stdout.strip().splitlines()[-1]
    assert last.endswith("compiled functions hold") and last.split()[0] == last.split()[2], last
    assert "attention, with grads" in r.stdout
