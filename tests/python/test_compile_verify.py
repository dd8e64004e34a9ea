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
    on = [d for d in verify.default_devices() if d != "cpu"]  # sim:0, and cuda:0 on a GPU machine
    assert on[0] == "sim:0" and on[1:] in ([], ["cuda:0"])
    assert [r[0] for r in rows] == names + [f"{n} on {d}" for d in on for n in names]  # the CPU, then sim:0
    failed = [r for r in rows if not r[1]]
    assert not failed, verify.format_suite(failed)
    assert all("proved" in r[2] for r in rows)
    detail = dict((r[0], r[2]) for r in rows)
    assert "forward/backward partitioned" in detail["attention, with grads"]
    assert detail["mlp, with grads"].endswith("gradients match finite differences")
    assert detail["log_softmax, decomposed, with grads on sim:0"].endswith("gradients match finite differences")
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


def test_finite_differences_check_the_compiled_backward():
    # Note [The compiled backward against finite differences]: float64, random directions, gradcheck's bounds.
    import descent
    descent.manual_seed(0)
    fd = verify.finite_differences(lambda x, w: (x @ w).tanh().sum(0),
                                   [descent.randn(3, 4, requires_grad=True), descent.randn(4, 2, requires_grad=True)])
    assert fd and fd.checked == 4 and "matches central differences in 4 direction(s)" in str(fd)
    x = descent.randn(6, 5, requires_grad=True)
    assert verify.finite_differences(lambda x: descent.nn.functional.softmax(x * 2.0, -1), [x])  # rows sum to 1
    assert x.dtype == descent.float32 and x.grad is None  # float64 copies: the inputs are left alone
    assert "no input requires grad" in str(verify.finite_differences(lambda x: x.exp(), [descent.randn(3)]))


def test_finite_differences_catch_a_backward_that_agrees_with_autograd():
    # A derivative wrong in autograd itself: the compiled backward agrees with it, the differences do not.
    import descent

    class Triple(descent.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            return x * 3.0

        @staticmethod
        def backward(ctx, g):
            return g * 2.0  # the derivative is 3

    fd = verify.finite_differences(lambda x: Triple.apply(x).exp(), [descent.randn(5, requires_grad=True)])
    assert not fd
    assert str(fd).startswith("the compiled backward differs from central differences: input 0")
