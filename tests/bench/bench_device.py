#!/usr/bin/env python3
"""descent's device reductions and matrix product beside PyTorch's, in one run.

    python3 tests/bench/bench_device.py --build build [--device cuda:0] [--sum-log2 28] [--matmul 4096]

Times, on the device's own clock (events around the calls on the stream,
the median of 7 repetitions after a warm-up): a float32 sum of 2**28
elements (bytes read per second) and of each row of a square matrix of as
many; a float32 add and copy of 2**28 elements (bytes read and written per
second); a float32 4096 x 4096 x 4096 matrix product (2 n**3 operations per
second), and the same in bfloat16 and float16 (descent's tensor-core kernel
beside cuBLAS's, reported without a target). descent's side is tests/bench/bench_device (C++, through the
dispatcher); PyTorch's is torch.sum and torch.matmul (cuBLAS; TF32 off, so
both multiply in float32) timed with torch.cuda.Event the same way. Prints
each pair, the ratio, and the target of the device floors: sum >= 0.95 of
PyTorch's bandwidth, matmul >= 0.8 of cuBLAS (docs/BENCHMARKS.md).
"""
import argparse
import json
import os
import statistics
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
TARGETS = {"sum_float32": 0.95, "sum_dim1_float32": None, "add_float32": 0.95, "copy_float32": 0.95, "matmul_float32": 0.8}


def torch_side(device, sum_log2, n, reps=7):
    import torch
    torch.backends.cuda.matmul.allow_tf32 = False
    dev = torch.device(device)

    def device_ms(fn, calls):
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        times = []
        for r in range(reps + 2):
            start.record()
            for _ in range(calls):
                fn()
            end.record()
            end.synchronize()
            if r >= 2:
                times.append(start.elapsed_time(end) / calls)
        return statistics.median(times)

    out = {}
    x = torch.rand(2 ** sum_log2, device=dev) * 2 - 1
    ms = device_ms(lambda: x.sum(), 10)
    out["sum_float32"] = (ms, x.numel() * 4 / (ms * 1e-3) / 1e12, "TB/s")
    m = x.view(2 ** (sum_log2 // 2), -1)
    ms = device_ms(lambda: m.sum(1), 10)
    out["sum_dim1_float32"] = (ms, m.numel() * 4 / (ms * 1e-3) / 1e12, "TB/s")
    y = torch.rand(2 ** sum_log2, device=dev)
    ms = device_ms(lambda: x + y, 10)
    out["add_float32"] = (ms, x.numel() * 12 / (ms * 1e-3) / 1e12, "TB/s")
    z = torch.empty_like(x)
    ms = device_ms(lambda: z.copy_(x), 10)
    out["copy_float32"] = (ms, x.numel() * 8 / (ms * 1e-3) / 1e12, "TB/s")
    del x, m, y, z
    a, b = torch.rand(n, n, device=dev), torch.rand(n, n, device=dev)
    ms = device_ms(lambda: torch.matmul(a, b), 3)
    out["matmul_float32"] = (ms, 2 * n ** 3 / (ms * 1e-3) / 1e12, "TFLOP/s")
    for dt, name in ((torch.bfloat16, "matmul_bfloat16"), (torch.float16, "matmul_float16")):
        a16, b16 = a.to(dt), b.to(dt)
        ms = device_ms(lambda: torch.matmul(a16, b16), 10)
        out[name] = (ms, 2 * n ** 3 / (ms * 1e-3) / 1e12, "TFLOP/s")
    return out


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--build", default="build")
    ap.add_argument("--device", default="cuda:0")
    ap.add_argument("--sum-log2", type=int, default=28)
    ap.add_argument("--matmul", type=int, default=4096)
    args = ap.parse_args()
    exe = os.path.join(args.build, "tests", "bench", "bench_device")
    run = subprocess.run([exe, "--device", args.device, "--sum-log2", str(args.sum_log2), "--matmul", str(args.matmul)],
                         capture_output=True, text=True, check=True)
    sys.stderr.write(run.stderr)
    ours = {d["name"]: (d["ms"], d["rate"], d["unit"]) for d in map(json.loads, run.stdout.splitlines())}
    if not ours:
        return 0
    try:
        theirs = torch_side(args.device, args.sum_log2, args.matmul)
    except ImportError:
        theirs = {}
    print(f"{'what':18} {'descent':>22} {'pytorch':>22} {'ratio':>6}  target")
    failed = False
    for name, (ms, rate, unit) in ours.items():
        line = f"{name:18} {ms:8.3f} ms {rate:7.2f} {unit:7}"
        if name in theirs:
            tms, trate, _ = theirs[name]
            ratio = rate / trate
            target = TARGETS.get(name)
            line += f" {tms:8.3f} ms {trate:7.2f} {unit:7} {ratio:6.2f}"
            if target:
                line += f"  >= {target} {'ok' if ratio >= target else 'MISSED'}"
                failed |= ratio < target
        print(line)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
