"""PyTorch's "Learning PyTorch with Examples" scripts on descent and on torch (issue 22): where each
converges (the final loss, over seeds) and how long each takes, on the same machine's CPU.

    PYTHONPATH=build/python python3 tests/bench/bench_tutorials.py [--seeds 3]

The scripts are tests/python/test_tutorials.py's, text for text; `import descent as torch` reads
`import torch` for torch's side. Each script runs once untimed on each side (imports, first calls), then
--seeds times, seeded 0, 1, 2, ...: the final printed loss's median and range, and the median wall time.
Without torch installed, only descent's side is printed. Prints Markdown for docs/BENCHMARKS.md.
"""
import argparse
import os
import statistics
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "python"))

import test_tutorials as T  # noqa: E402

NAMES = ["POLYNOMIAL_TENSOR", "POLYNOMIAL_AUTOGRAD", "POLYNOMIAL_CUSTOM_FUNCTION", "POLYNOMIAL_NN", "POLYNOMIAL_OPTIM", "POLYNOMIAL_OPTIM_RMSPROP",
         "POLYNOMIAL_MODULE", "DYNAMIC_NET"]


def measure(script, seeds, torch_module=None):
    T.run(script, seed=0, torch_module=torch_module)  # warm-up
    finals, secs = [], []
    for seed in range(seeds):
        t0 = time.perf_counter()
        losses, _ = T.run(script, seed=seed, torch_module=torch_module)
        secs.append(time.perf_counter() - t0)
        finals.append(losses[-1][1])
    return finals, secs


def loss_text(v):
    return f"{statistics.median(v):.4g} [{min(v):.4g}, {max(v):.4g}]"


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--seeds", type=int, default=3)
    args = p.parse_args()
    try:
        import torch
        torch.set_num_threads(int(os.environ.get("DESCENT_BENCH_TORCH_THREADS", torch.get_num_threads())))
    except ImportError:
        torch = None
    print(f"| script | final loss, descent (median [min, max] of {args.seeds} seeds) | final loss, torch | "
          "time, descent | time, torch | descent / torch |")
    print("|---|---|---|---|---|---|")
    for name in NAMES:
        script = getattr(T, name)
        ours, our_s = measure(script, args.seeds)
        row = f"| {name.lower()} | {loss_text(ours)} |"
        if torch is not None:
            theirs, their_s = measure(script, args.seeds, torch_module=torch)
            ratio = statistics.median(our_s) / statistics.median(their_s)
            row += (f" {loss_text(theirs)} | {statistics.median(our_s):.2f} s | {statistics.median(their_s):.2f} s |"
                    f" {ratio:.2f}x |")
        else:
            row += f" (torch not installed) | {statistics.median(our_s):.2f} s | | |"
        print(row, flush=True)


if __name__ == "__main__":
    main()
