"""A soak test: 8 threads of ops, backward and traced runs, on cpu and sim:0 at once.

Each thread, in a fresh interpreter, loops for DESCENT_SOAK_SECONDS (60 under
the sanitizers, where the ASan suite runs it as issue 41 asks; 10 in a
release build) over a mix a busy classroom makes: a small MLP step with
backward on its device, a traced call (blocks nest across threads, Note
[Nested recordings] in tracer/tracer.h), views written in place, a
device-to-host copy, a freed graph. Every result is checked against numpy
in the thread that made it, so a race shows as a wrong number, not only as
a crash. The run passes when every thread finished at least one round of
each kind, no check failed, and stderr holds no sanitizer report.
"""
import os
import textwrap

from conftest import run_python

SANITIZED = "libasan" in os.environ.get("LD_PRELOAD", "")
SECONDS = float(os.environ.get("DESCENT_SOAK_SECONDS", "60" if SANITIZED else "10"))

SOAK = textwrap.dedent("""
    import os, sys, threading, time
    import numpy as np
    import descent

    SECONDS = float(os.environ["SOAK_SECONDS"])
    THREADS = 8
    failures = []
    rounds = [dict(mlp=0, traced=0, views=0, graph=0) for _ in range(THREADS)]

    def check(cond, what):
        if not cond:
            failures.append(what)

    def mlp(device, rng):
        x = rng.standard_normal((16, 8)).astype(np.float32)
        w = rng.standard_normal((8, 4)).astype(np.float32)
        tx = descent.tensor(x, device=device)
        tw = descent.tensor(w, device=device, requires_grad=True)
        loss = (tx @ tw).relu().sum()
        loss.backward()
        want = x.T @ ((x @ w) > 0).astype(np.float32)
        check(np.allclose(tw.grad.cpu().numpy(), want, rtol=1e-4, atol=1e-4), f"mlp grad on {device}")

    def traced(device):
        with descent.trace(python_functions=False) as t:
            y = descent.ones(3, 3, device=device) * 2 + 1
            s = y.sum().item()
        check(s == 27.0, f"traced sum on {device}: {s}")
        names = {sp["name"] for sp in t.result.spans()}
        check("aten::mul" in names and "aten::add" in names, f"traced names on {device}")

    def views(device):
        base = descent.zeros(4, 6, device=device)
        col = base.t()[2]          # a strided view
        col.add_(1)                # written in place through the view
        base[1:3, ::2].fill_(5)
        got = base.cpu().numpy()
        want = np.zeros((4, 6), np.float32)
        want[:, 2] += 1
        want[1:3, ::2] = 5
        check(np.array_equal(got, want), f"views on {device}")

    def graph(device):
        total = descent.zeros((), device=device, requires_grad=True)
        for _ in range(200):
            total = total + 1       # a chain, freed when `total` goes
        check(total.item() == 200.0, f"chain on {device}")
        del total

    def worker(i):
        rng = np.random.default_rng(i)
        device = "cpu" if i % 2 == 0 else "sim:0"
        end = time.monotonic() + SECONDS
        try:
            while time.monotonic() < end:
                mlp(device, rng); rounds[i]["mlp"] += 1
                traced(device); rounds[i]["traced"] += 1
                views(device); rounds[i]["views"] += 1
                graph(device); rounds[i]["graph"] += 1
        except Exception as e:  # a wrong error is a failure too
            failures.append(f"thread {i} on {device}: {type(e).__name__}: {e}")

    threads = [threading.Thread(target=worker, args=(i,)) for i in range(THREADS)]
    for t in threads: t.start()
    for t in threads: t.join(SECONDS + 300)
    check(not any(t.is_alive() for t in threads), "a thread still runs: a hang")
    for i, r in enumerate(rounds):
        check(min(r.values()) >= 1, f"thread {i} finished no full round: {r}")
    print("failures:", failures[:10])
    print("rounds:", sum(sum(r.values()) for r in rounds))
    sys.stdout.flush()
    sys.exit(1 if failures else 0)
""")


def test_eight_threads_of_ops_backward_and_traces():
    r = run_python(SOAK, timeout=SECONDS + 400, SOAK_SECONDS=str(SECONDS))
    assert r.returncode == 0, r.stdout + r.stderr[-4000:]
    assert "failures: []" in r.stdout, r.stdout
    for report in ("ERROR: AddressSanitizer", "runtime error:", "ERROR: LeakSanitizer", "ThreadSanitizer"):
        assert report not in r.stderr, r.stderr[-4000:]
