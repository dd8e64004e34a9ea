"""`descent bench matmul --ladder`: every rung of a device's matmul ladder
(Note [Matmul rungs], floors/kernels/matmul_rungs.cpp) timed beside PyTorch's
matmul in the same process, with each rung's verdict.

    descent bench matmul --ladder --device cpu [--sizes 512,2048] [--threads all,1] [--slow] [--clock thread]

Method: float32 n x n x n products; each rung is chosen with
_set_matmul_rung, warmed up (two runs), then timed over repeats that fill
about a second (at least 3), and the median is shown, as is GFLOP/s =
2 n^3 / time. PyTorch's torch.mm on the same numbers is timed the same way
with torch.set_num_threads(threads). The verdict holds each rung's result to
the bound both the register-blocked and the packed rung obey: within
gamma_n (|A||B|) of the exact product (Note [Device matmul bound]; numpy
computes the exact product's stand-in and |A||B| in float64). The reference
rung (the plain loop) is run only up to 512 unless --slow: at 2048 it takes
minutes.
"""
import os
import statistics
import sys
import time

import numpy as np

import descent
from descent import _C


def median_seconds(fn, budget=1.0, clock=time.perf_counter):
    """The median of repeated fn() after two warm-up runs: enough repeats to fill `budget` seconds, 3 to 50."""
    fn()
    t0 = clock()
    fn()
    once = max(clock() - t0, 1e-9)
    times = []
    for _ in range(max(3, min(50, int(budget / once)))):
        t0 = clock()
        fn()
        times.append(clock() - t0)
    return statistics.median(times)


def verdict(got, a64, b64, abs_prod):
    """'ok' when every element is within gamma_K (|A||B|) of the float64 product, else the worst ratio."""
    k = a64.shape[1]
    eps = 2.0 ** -24
    gamma = k * eps / (1 - k * eps)
    err = np.abs(got.astype(np.float64) - a64 @ b64)
    allowed = gamma * abs_prod * (1 + 4 * k * 2.0 ** -53)
    worst = float(np.max(err / np.maximum(allowed, 1e-300)))
    return "ok" if np.all(err <= allowed) else f"FAIL ({worst:.2f}x the bound)"


def torch_or_none():
    try:
        import torch
        return torch
    except ImportError:
        return None


def ladder_cpu(args):
    """The CPU's rungs and torch.mm, for each size and thread count; returns the exit status."""
    torch = torch_or_none()
    sizes = [int(s) for s in args.sizes.split(",")]
    all_threads = os.cpu_count() or 1
    threads_list = [all_threads if t == "all" else int(t) for t in args.threads.split(",")]
    rungs = [r for r in _C._matmul_rungs("cpu") if r != "auto"]
    saved = _C.get_num_threads(), _C._matmul_rung("cpu")
    print(f"descent bench matmul --ladder --device cpu: float32, isa={_C._matmul_isa()}, "
          f"torch {torch.__version__ if torch else '(not importable: no comparison)'}")
    print(f"{'n':>5} {'threads':>7} {'rung':10} {'ms':>10} {'GFLOP/s':>9} {'x torch':>8}  verdict")
    failed = 0
    rng = np.random.default_rng(19)
    try:
        for n in sizes:
            a_np = rng.uniform(-1, 1, (n, n)).astype(np.float32)
            b_np = rng.uniform(-1, 1, (n, n)).astype(np.float32)
            a64, b64 = a_np.astype(np.float64), b_np.astype(np.float64)
            abs_prod = np.abs(a64) @ np.abs(b64)
            a, b = descent.from_numpy(a_np), descent.from_numpy(b_np)
            flop = 2.0 * n ** 3
            for threads in threads_list:
                _C.set_num_threads(threads)
                # --clock thread: this thread's CPU time, blind to other processes' turns on a shared machine;
                # with one thread only (a pool's workers are not this thread).
                clock = time.thread_time if args.clock == "thread" and threads == 1 else time.perf_counter
                t_torch = None
                if torch is not None:
                    torch.set_num_threads(threads)
                    ta, tb = torch.from_numpy(a_np), torch.from_numpy(b_np)
                    t_torch = median_seconds(lambda: torch.mm(ta, tb), clock=clock)
                for rung in rungs + ["auto"]:
                    if rung == "reference" and n > 512 and not args.slow:
                        print(f"{n:>5} {threads:>7} {rung:10} {'-':>10} {'-':>9} {'-':>8}  skipped (--slow runs it)")
                        continue
                    _C._set_matmul_rung("cpu", rung)
                    t = median_seconds(lambda: a @ b, clock=clock)
                    got = np.asarray(a @ b)
                    ran = _C._last_matmul_rung()
                    name = rung if rung != "auto" else f"auto:{ran}"
                    v = verdict(got, a64, b64, abs_prod)
                    failed += v != "ok"
                    ratio = f"{t / t_torch:.2f}" if t_torch else "-"
                    print(f"{n:>5} {threads:>7} {name:10} {t * 1e3:>10.3f} {flop / t / 1e9:>9.1f} {ratio:>8}  {v}")
                if t_torch:
                    print(f"{n:>5} {threads:>7} {'torch':10} {t_torch * 1e3:>10.3f} {flop / t_torch / 1e9:>9.1f} "
                          f"{1.0:>8.2f}")
    finally:
        _C.set_num_threads(saved[0])
        _C._set_matmul_rung("cpu", saved[1])
    return 1 if failed else 0


def cmd_bench(args):
    if args.what != "matmul" or not args.ladder:
        print("descent bench: only `descent bench matmul --ladder` is here so far", file=sys.stderr)
        return 2
    if args.device == "cpu":
        return ladder_cpu(args)
    print(f"descent bench: no matmul ladder for device '{args.device}' here", file=sys.stderr)
    return 2


def add_parser(sub):
    b = sub.add_parser("bench", help="time a kernel's ladder beside PyTorch's (descent bench matmul --ladder)")
    b.add_argument("what", choices=["matmul"])
    b.add_argument("--ladder", action="store_true", help="every rung of the device's ladder, plainest first")
    b.add_argument("--device", default="cpu", help="cpu (the CPU's rungs)")
    b.add_argument("--sizes", default="512,2048", help="n of the n x n x n float32 products, comma-separated")
    b.add_argument("--threads", default="all,1", help="thread counts, comma-separated ('all': every core)")
    b.add_argument("--slow", action="store_true", help="also run the reference loop past n = 512")
    b.add_argument("--clock", choices=["wall", "thread"], default="wall",
                   help="thread: time one-thread rows by this thread's CPU time (a busy shared machine)")
    b.set_defaults(fn=cmd_bench)
