"""descent.compile against eager on the CPU: pointwise chains, a chain into its sum, a decomposed softmax,
a small MLP's training step, the first call's compile time and a cache hit's host cost.

    python3 tests/bench/bench_compile.py [build/python]

Each line is the median of `reps` timings (each of a few calls, after a warm-up) of eager and of the
compiled function on the same inputs, and their ratio; the compiled result is checked against eager's
first (bit for bit where Note [Fusing a chain into its reduction] says the order is eager's, within the
bound of Note [Decomposing before fusion] for the decomposed ops). The first-call time is a cold disk
cache (a fresh XDG_CACHE_HOME): capture, code generation, the system compiler, loading and the verifier.
Threads: descent's default (the machine's cores); the fused kernels are one thread.
"""
import os
import statistics
import sys
import tempfile
import time


def median_ns(fn, calls, reps=15, warm=3):
    for _ in range(warm):
        fn()
    runs = []
    for _ in range(reps):
        t = time.perf_counter_ns()
        for _ in range(calls):
            fn()
        runs.append((time.perf_counter_ns() - t) / calls)
    return statistics.median(runs)


def fmt(ns):
    return f"{ns / 1e6:8.3f} ms" if ns >= 1e6 else f"{ns / 1e3:8.1f} us"


def main():
    sys.path.insert(0, sys.argv[1] if len(sys.argv) > 1 else "build/python")
    os.environ["XDG_CACHE_HOME"] = tempfile.mkdtemp(prefix="bench_compile_")  # a cold kernel cache
    import numpy as np

    import descent
    F = descent.nn.functional

    def chain8(x):
        return ((((((x + 1.0) * 0.5).relu() - 0.25).exp() * x).sigmoid() + 2.0) / 3.0)

    def dot(x, y):
        return (x * y).sum()

    def rows(x, y):
        return ((x - y) * (x - y)).sum(-1)

    def softmax(x):
        return F.softmax(x, -1)

    descent.manual_seed(0)
    cases = [
        ("chain of 8 pointwise ops, 2^16 float32", chain8, [descent.randn(1 << 16)], 20, "bitwise"),
        ("chain of 8 pointwise ops, 2^22 float32", chain8, [descent.randn(1 << 22)], 2, "bitwise"),
        ("(x * y).sum(), 2^22 float32", dot, [descent.randn(1 << 22), descent.randn(1 << 22)], 2, "bitwise"),
        ("((x - y)**2).sum(-1), 1024 x 1024", rows, [descent.randn(1024, 1024), descent.randn(1024, 1024)], 3,
         "bitwise"),
        ("softmax(x, -1), 256 x 1024 (decomposed)", softmax, [descent.randn(256, 1024)], 5, "bound"),
    ]
    print(f"descent.compile on the CPU ({descent.get_num_threads()} threads); medians of 15 timings")
    print(f"{'case':44s} {'eager':>11s} {'compiled':>11s} {'speedup':>8s}  {'first call':>10s}  check")
    for name, f, args, calls, check in cases:
        cf = descent.compile(f)
        t = time.perf_counter()
        cf(*args)
        first = time.perf_counter() - t
        got, want = np.asarray(cf(*args)), np.asarray(f(*args))
        if check == "bitwise":
            ok = np.array_equal(got.view(np.uint32), want.view(np.uint32))
        else:
            ok = bool(np.allclose(got, want, rtol=1e-5, atol=1e-7))
        eager = median_ns(lambda: f(*args), calls)
        comp = median_ns(lambda: cf(*args), calls)
        print(f"{name:44s} {fmt(eager)} {fmt(comp)} {eager / comp:7.2f}x  {first * 1e3:7.1f} ms  "
              f"{check + (' ok' if ok else ' FAILED')}")

    # A cache hit's host cost: guards, the graph, one kernel, on one element.
    tiny = descent.randn(1)
    cf = descent.compile(chain8)
    cf(tiny)
    eager, comp = median_ns(lambda: chain8(tiny), 2000), median_ns(lambda: cf(tiny), 2000)
    print(f"{'cache hit, 1 element (host cost a call)':44s} {fmt(eager)} {fmt(comp)} {eager / comp:7.2f}x")

    # A small MLP's training step: forward, mse_loss, backward through CompiledFunctionBackward, SGD.
    def make():
        descent.manual_seed(2)
        return descent.nn.Sequential(descent.nn.Linear(64, 256), descent.nn.ReLU(), descent.nn.Linear(256, 10))
    descent.manual_seed(3)
    x, y = descent.randn(128, 64), descent.randn(128, 10)
    times = {}
    for compiled in (False, True):
        model = make()
        run = descent.compile(model) if compiled else model
        opt = descent.optim.SGD(model.parameters(), lr=0.01)

        def step():
            opt.zero_grad()
            loss = F.mse_loss(run(x), y)
            loss.backward()
            opt.step()
            return loss
        t = time.perf_counter()
        step()
        first = time.perf_counter() - t
        times[compiled] = (median_ns(step, 10), first)
    (eager, _), (comp, first) = times[False], times[True]
    print(f"{'MLP 64-256-10 training step, batch 128':44s} {fmt(eager)} {fmt(comp)} {eager / comp:7.2f}x  "
          f"{first * 1e3:7.1f} ms")


if __name__ == "__main__":
    main()
