"""`descent bench matmul --ladder`: every rung of a device's matmul ladder
(Note [The matmul ladder], floors/kernels/matmul_ladder.h) timed beside
PyTorch's product (cuBLAS on a GPU) measured in the same run, with each
rung's verdict from the verifier.

    descent bench matmul --ladder [--device cuda:0] [--sizes 1024,4096,8192]
                                  [--dtypes bfloat16,float16,float32] [--reps 5]

Each rung (descent._C._set_matmul_rung) multiplies two n x n matrices of
uniform values in [-1, 1) after one warm-up product; the time is the median
of `reps` products, each timed by the device's events on its stream (on
sim:0, its events too: the simulated device's own clock). PyTorch's side,
when torch imports and has the device (cuda:N only), is torch.matmul on
the same sizes, timed by torch.cuda.Event the same way, TF32 off (so float32
multiplies in float32, as descent does). TFLOP/s counts 2 n^3 operations.
The verdict is descent verify's for that rung and dtype (the ladder's
shapes: odd sizes, tile edges, transposed operands and a batch); `ok` when
all of them hold. Rungs 1 and 2 above 2048 are timed once: they are slow on
purpose.
"""
import statistics

import descent
from descent import _C

TENSOR_CORE_RUNGS = ("wmma", "wgmma")


def _device_module(device):
    return descent.cuda if device.startswith("cuda") else descent.sim


def _time_ms(device, fn, reps):
    mod = _device_module(device)
    fn()  # warm-up
    times = []
    for _ in range(reps):
        start, end = mod.Event(enable_timing=True), mod.Event(enable_timing=True)
        start.record()
        fn()
        end.record()
        end.synchronize()
        times.append(start.elapsed_time(end))
    return statistics.median(times)


def _torch_ms(device, n, dtype_name, reps):
    """torch.matmul's median time (ms) on the same device, or None without torch or the device."""
    if not device.startswith("cuda"):
        return None
    try:
        import torch
    except ImportError:
        return None
    if not torch.cuda.is_available():
        return None
    torch.backends.cuda.matmul.allow_tf32 = False
    dt = getattr(torch, dtype_name)
    dev = torch.device(device)
    a = torch.rand(n, n, device=dev, dtype=torch.float32).mul_(2).sub_(1).to(dt)
    b = torch.rand(n, n, device=dev, dtype=torch.float32).mul_(2).sub_(1).to(dt)
    torch.matmul(a, b)
    times = []
    for _ in range(reps):
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        torch.matmul(a, b)
        end.record()
        end.synchronize()
        times.append(start.elapsed_time(end))
    return statistics.median(times)


def _verdicts(device, seed=1):
    """{(rung, dtype): (passed, first failure)} from the verifier's ladder verdicts."""
    out = {}
    for v in _C._verify_matmul_rungs(seed, device):
        rung = v["op"].split("[", 1)[1].split("]", 1)[0]
        key = (rung, v["dtype"])
        ok, why = out.get(key, (True, ""))
        if not v["passed"] and ok:
            ok, why = False, f"{v['op']}: {v['detail']}"
        out[key] = (ok, why)
    return out


def matmul_ladder(device, sizes, dtypes, reps, echo=print):
    """Prints one line per (dtype, size, rung) and PyTorch's beside; returns 1 if a verdict failed."""
    rungs = _C._matmul_rungs(device)
    echo(f"descent bench matmul --ladder on {device}: rungs {', '.join(rungs)}; "
         f"median of {reps} after a warm-up, device events; TFLOP/s = 2 n^3 / time")
    verdicts = _verdicts(device)
    failed = 0
    echo(f"{'dtype':9} {'n':>5}  {'rung':15} {'ms':>10} {'TFLOP/s':>9} {'x torch':>8}  verdict  kernel")
    for dtype_name in dtypes:
        dt = getattr(descent, dtype_name)
        for n in sizes:
            a = (descent.rand(n, n, device=device) * 2 - 1).to(dt)
            b = (descent.rand(n, n, device=device) * 2 - 1).to(dt)
            flops = 2.0 * n ** 3
            torch_ms = _torch_ms(device, n, dtype_name, reps)
            if torch_ms is not None:
                echo(f"{dtype_name:9} {n:>5}  {'torch (cuBLAS)':15} {torch_ms:>10.3f} "
                     f"{flops / torch_ms / 1e9:>9.3g} {1.0:>8.2f}")
            for rung in rungs:
                if rung in TENSOR_CORE_RUNGS and dtype_name not in ("float16", "bfloat16"):
                    continue
                _C._set_matmul_rung(device, rung)
                try:
                    slow = rung in ("naive", "shared_tiles") and n > 2048
                    ms = _time_ms(device, lambda: a @ b, 1 if slow else reps)
                    ran = _C._last_matmul_run()
                finally:
                    _C._set_matmul_rung(device, "auto")
                ok, why = verdicts.get((rung, dtype_name), (True, "no verdict"))
                failed += not ok
                ratio = f"{torch_ms / ms:>8.2f}" if torch_ms is not None else f"{'-':>8}"
                note = f" (ran {ran['rung']}: {ran['fallback']})" if ran["rung"] != rung else ""
                echo(f"{dtype_name:9} {n:>5}  {rung:15} {ms:>10.3f} {flops / ms / 1e9:>9.3g} {ratio}  "
                     f"{'ok' if ok else 'FAIL':7}  {ran['kernel']}{note}{'' if ok else '  ' + why}")
            del a, b
    return 1 if failed else 0


def add_parser(sub):
    b = sub.add_parser("bench", help="time descent's kernels beside PyTorch's")
    b.add_argument("what", choices=["matmul"], help="what to time")
    b.add_argument("--ladder", action="store_true", required=True,
                   help="every rung of the device's matmul ladder (Note [The matmul ladder])")
    b.add_argument("--device", default=None, help="cuda:0 where there is one, else sim:0")
    b.add_argument("--sizes", default=None,
                   help="n of the n x n x n products, comma-separated (1024,4096,8192 on CUDA; 64,128 on sim:0, "
                        "whose threads run one after another on a CPU core)")
    b.add_argument("--dtypes", default="bfloat16,float16,float32", help="comma-separated")
    b.add_argument("--reps", type=int, default=5, help="timed products per rung (their median)")
    b.set_defaults(fn=run)


def run(args):
    device = args.device or ("cuda:0" if descent.cuda.is_available() else "sim:0")
    sizes = [int(s) for s in (args.sizes or ("1024,4096,8192" if device.startswith("cuda") else "64,128")).split(",") if s]
    dtypes = [d for d in args.dtypes.split(",") if d]
    return matmul_ladder(device, sizes, dtypes, max(1, args.reps))
