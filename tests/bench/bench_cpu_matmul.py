"""The CPU's packed matmul rung beside torch.mm in the same process (issue 19: at most 1.2x
torch's time at 512^2 and 2048^2, with all threads and with one). descent and torch take
turns, --turns times each (descent, torch, descent, torch, ...; 20 by default), so that a
machine whose cores are shared shows in both; each turn is the median of 40 products at 512
and 9 at 2048 (10 and 3 on one thread) after two unseen. Printed: the median turn of each
and their ratio (on the H200 host turns of torch alone move between 0.2 and 0.66 ms at 512^2,
so one or two turns say little); the median over the turns of each descent turn's ratio to
the torch turn beside it (paired: a moment when the host is busy slows both turns of a pair,
where the two medians may fall on turns of different moments); then the best turn of each.

Each turn starts after a rest (--pause, 0.1 s). torch's OpenMP threads go on spinning for a
while after its products, and descent's products right after a torch turn ran beside them:
on the H200 host (16 threads, 512^2) the first took 2.1 and 2.6 ms in two calls and the next
ones stayed slow (0.33-1.4 ms) for ten to fifteen more, against 0.29-0.30 ms steady; after a
rest of 0.01 s or more the first took 0.54-0.60 ms and the next 0.31-0.39 (0.1 s leaves a
margin). Without the rest, descent ran beside torch's spinning threads at the start of every
turn while torch never ran beside descent's (its workers spin only 0.1 ms); the bench's
512^2 ratio moved between 0.85 and 1.76 over 14 runs, and the same grid of tasks timed right
after torch's turn came out 16-18% slower than timed later in the same rounds
(docs/BENCHMARKS.md, session 9).

    PYTHONPATH=build/python python3 tests/bench/bench_cpu_matmul.py [TAG] [--threads 16,1] [--turns 20] [--pause 0.1]
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


def median_ms(fn, n, pause):
    time.sleep(pause)  # the other library's threads stop spinning (the module's docstring)
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
    p.add_argument("--turns", type=int, default=20)
    p.add_argument("--pause", type=float, default=0.1, help="seconds of rest before each turn")
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
                turns.append((median_ms(lambda: a @ b, reps, args.pause),
                              median_ms(lambda: torch.mm(ta, tb), reps, args.pause) if torch else nan))
            d, t = (statistics.median(x[i] for x in turns) for i in (0, 1))
            paired = statistics.median(x[0] / x[1] for x in turns)
            bd, bt = (min(x[i] for x in turns) for i in (0, 1))
            print(f"{args.tag:12s} n={n:5d} threads={threads:2d} median turn: descent {d:8.3f} ms  "
                  f"torch {t:8.3f} ms  ratio {d / t:5.2f}  paired {paired:5.2f}   best turn: {bd:.3f} / "
                  f"{bt:.3f} ms  ratio {bd / bt:5.2f}", flush=True)


if __name__ == "__main__":
    main()
