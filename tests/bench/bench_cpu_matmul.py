"""The CPU's packed matmul rung beside torch.mm in the same process (issue 19: at most 1.2x
torch's time at 512^2 and 2048^2, with all threads and with one). descent and torch take
turns, --turns times each (descent, torch, descent, torch, ...; 10 by default), so that a
machine whose cores are shared shows in both; each turn is the median of 40 products at 512
and 9 at 2048 (10 and 3 on one thread) after two unseen. Printed: the median turn of each
and their ratio (on the H200 host turns of torch alone move between 0.2 and 0.66 ms at 512^2,
so one or two turns say little), then the best turn of each.

    PYTHONPATH=build/python python3 tests/bench/bench_cpu_matmul.py [TAG] [--threads 16,1] [--turns 10]
"""
import argparse
import os
import statistics
import time

import descent

try:
    import torch
except ImportError:
    torch = None


def median_ms(fn, n):
    fn()
    fn()
    times = []
    for _ in range(n):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return statistics.median(times) * 1e3


def main():
    p = argparse.ArgumentParser()
    p.add_argument("tag", nargs="?", default="packed")
    p.add_argument("--threads", default=f"{os.cpu_count()},1")
    p.add_argument("--turns", type=int, default=10)
    args = p.parse_args()
    descent._C._set_matmul_rung("cpu", "packed")  # what "auto" takes at these sizes
    nan = float("nan")
    for threads in [int(t) for t in args.threads.split(",")]:
        descent.set_num_threads(threads)
        if torch:
            torch.set_num_threads(threads)
        for n in (512, 2048):
            reps = (40 if n == 512 else 9) if threads > 1 else (10 if n == 512 else 3)
            a, b = descent.rand(n, n), descent.rand(n, n)
            ta, tb = (torch.rand(n, n), torch.rand(n, n)) if torch else (None, None)
            turns = []
            for _ in range(args.turns):
                turns.append((median_ms(lambda: a @ b, reps),
                              median_ms(lambda: torch.mm(ta, tb), reps) if torch else nan))
            d, t = (statistics.median(x[i] for x in turns) for i in (0, 1))
            bd, bt = (min(x[i] for x in turns) for i in (0, 1))
            print(f"{args.tag:12s} n={n:5d} threads={threads:2d} median turn: descent {d:8.3f} ms  "
                  f"torch {t:8.3f} ms  ratio {d / t:5.2f}   best turn: {bd:.3f} / {bt:.3f} ms  "
                  f"ratio {bd / bt:5.2f}", flush=True)


if __name__ == "__main__":
    main()
