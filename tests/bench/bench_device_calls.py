#!/usr/bin/env python3
"""Per-call costs of the device floors beside PyTorch and raw CUDA, in one run.

    python3 tests/bench/bench_device_calls.py --build build [--out FILE]

Python: `x + y` on two 1-element tensors on cuda:0 (and sim:0), host enqueue
only: bursts of 256 calls are timed, the device is synchronized between
bursts outside the clock, so that the queue never fills. PyTorch's torch.add on cuda the same way, in the
same process. C++ (bench_launch, its own process): an empty kernel launched
raw and through floor 8, the C++ add through the dispatcher beside a raw
launch of the same argument size (<<<>>>, cudaLaunchKernel, cuLaunchKernel),
a caching-allocator hit on cuda:0 and sim:0 beside
cudaMallocAsync/cudaFreeAsync. Medians of 7 repetitions after warm-up.
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))


def enqueue_ns(fn, sync, bursts=80, burst=256, reps=7):
    """Host time per call, in bursts of `burst` calls with the device
    synchronized between bursts outside the clock: a queue that filled up
    would make a launch wait for the device, and the host time would then be
    the device's (as bench_launch.cu times launches). Median over `reps`."""
    for _ in range(2000):
        fn()
    sync()
    runs = []
    for _ in range(reps):
        total = 0
        for _ in range(bursts):
            t = time.perf_counter_ns()
            for _ in range(burst):
                fn()
            total += time.perf_counter_ns() - t
            sync()
        runs.append(total / (bursts * burst))
    return statistics.median(runs)


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--build", default=os.path.join(ROOT, "build"))
    p.add_argument("--out")
    args = p.parse_args()
    sys.path.insert(0, os.path.join(args.build, "python"))
    import descent

    rows = {}
    a, b = descent.randn(1, device="sim:0"), descent.randn(1, device="sim:0")
    rows["python_sim_add_enqueue"] = enqueue_ns(lambda: a + b, descent.sim.synchronize)
    if descent.cuda.is_available():
        a, b = descent.randn(1, device="cuda"), descent.randn(1, device="cuda")
        rows["python_cuda_add_enqueue"] = enqueue_ns(lambda: a + b, descent.cuda.synchronize)
        rows["python_cuda_add_sync"] = enqueue_ns(lambda: (a + b, descent.cuda.synchronize()), lambda: None)
    try:
        import torch
        if torch.cuda.is_available():
            ta, tb = torch.randn(1, device="cuda"), torch.randn(1, device="cuda")
            rows["torch_cuda_add_enqueue"] = enqueue_ns(lambda: ta + tb, torch.cuda.synchronize)
            rows["torch_cuda_add_sync"] = enqueue_ns(lambda: (ta + tb, torch.cuda.synchronize()), lambda: None)
            rows["torch_cuda_empty_1MiB_hit"] = enqueue_ns(
                lambda: torch.empty(1 << 20, dtype=torch.uint8, device="cuda"), torch.cuda.synchronize)
    except ImportError:
        pass
    exe = os.path.join(args.build, "tests", "bench", "bench_launch")
    if os.path.exists(exe):
        out = subprocess.run([exe], check=True, capture_output=True, text=True).stdout
        for line in out.splitlines():
            d = json.loads(line)
            rows[d["name"]] = d["ns"]

    def us(k):
        return f"{rows[k] / 1000:.3f} µs" if k in rows else "n/a"

    def ratio(k, ref):
        return f"{rows[k] / rows[ref]:.2f}" if k in rows and ref in rows else "n/a"

    table = [
        "| measurement | descent | target | PyTorch / raw CUDA | ratio |",
        "|---|---|---|---|---|",
        f"| Python cuda `a + b`, 1 element, host enqueue only | {us('python_cuda_add_enqueue')} | ≤ 4.5 µs | torch {us('torch_cuda_add_enqueue')} | {ratio('python_cuda_add_enqueue', 'torch_cuda_add_enqueue')} |",
        f"| Python cuda `a + b` then synchronize | {us('python_cuda_add_sync')} | | torch {us('torch_cuda_add_sync')} | {ratio('python_cuda_add_sync', 'torch_cuda_add_sync')} |",
        f"| Python sim:0 `a + b`, host enqueue only | {us('python_sim_add_enqueue')} | | | |",
        f"| empty kernel launch through floor 8 (C++) | {us('descent_empty_launch')} | | raw <<<1,1>>> {us('raw_empty_launch')} | {ratio('descent_empty_launch', 'raw_empty_launch')} |",
        f"| C++ cuda add through the dispatcher, 1 element | {us('cuda_add_1elem_cpp')} | | raw launch of add's argument size {us('raw_loop_sized_launch')} | {ratio('cuda_add_1elem_cpp', 'raw_loop_sized_launch')} |",
        f"| raw launch of add's argument size: cudaLaunchKernel / cuLaunchKernel | | | {us('raw_cudaLaunchKernel_loop_sized')} / {us('raw_cuLaunchKernel_loop_sized')} | |",
        f"| caching-allocator hit, 1 MiB, cuda:0 (C++) | {us('cuda_alloc_hit_1MiB')} | ≤ 0.1 µs | cudaMallocAsync+Free {us('raw_cudaMallocAsync_free_1MiB')}; torch.empty from Python {us('torch_cuda_empty_1MiB_hit')} | |",
        f"| caching-allocator hit, 1 MiB, sim:0 (C++) | {us('sim_alloc_hit_1MiB')} | | | |",
    ]
    text = "\n".join(table)
    print(text)
    if args.out:
        with open(args.out, "w") as f:
            f.write(text + "\n\n" + json.dumps(rows, indent=1) + "\n")


if __name__ == "__main__":
    main()
