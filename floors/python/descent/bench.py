"""`descent bench matmul --ladder`: every rung of a device's matmul ladder
timed beside PyTorch's product measured in the same run, each with its
verdict. One command for both ladders: the CPU's (Note [Matmul rungs],
floors/kernels/cpu/matmul_rungs.cpp) and a device's (Note [The matmul ladder],
floors/kernels/ladder/matmul_ladder.h), each chosen by _C._set_matmul_rung(device, rung).

    descent bench matmul --ladder [--device cpu|sim:0|cuda:0] [--sizes N,..]
        on a device: [--dtypes bfloat16,float16,float32] [--reps 5]
        on the CPU:  [--threads all,1] [--slow] [--clock thread]

On a device, each rung multiplies two n x n matrices of uniform values in
[-1, 1) after one warm-up product; the time is the median of `reps`
products, each timed by the device's events on its stream (on sim:0, its
events too: the simulated device's own clock). PyTorch's side, when torch
imports and has the device (cuda:N only), is torch.matmul on the same sizes,
timed by torch.cuda.Event the same way, TF32 off (so float32 multiplies in
float32, as descent does). TFLOP/s counts 2 n^3 operations. The verdict is
descent verify's for that rung and dtype (the ladder's shapes: odd sizes,
tile edges, transposed operands and a batch); `ok` when all of them hold.
Rungs 1 and 2 above 2048 are timed once: they are slow on purpose.

On the CPU: float32 n x n x n products; each rung is warmed up (two runs),
then timed over repeats that fill about a second (at least 3), and the
median is shown, as is GFLOP/s = 2 n^3 / time. PyTorch's torch.mm on the
same numbers is timed the same way with torch.set_num_threads(threads). The
verdict holds each rung's result to the bound both the register-blocked and
the packed rung obey: within gamma_n (|A||B|) of the exact product (Note
[Device matmul bound]; numpy computes the exact product's stand-in and
|A||B| in float64, before any timing and half a second before the first:
its BLAS's threads spin for a while after a product, on the same cores).
The reference rung (the plain loop) is run only up to 512 unless --slow: at
2048 it takes minutes.
"""
import os
import statistics
import sys
import time

import descent
from descent import _C

TENSOR_CORE_RUNGS = ("wmma", "wgmma")


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


def verdict(got, exact, abs_prod, k):
    """'ok' when every element is within gamma_k (|A||B|) of the float64 product `exact`, else the worst ratio."""
    eps = 2.0 ** -24
    gamma = k * eps / (1 - k * eps)
    import numpy as np

    err = np.abs(got.astype(np.float64) - exact)
    allowed = gamma * abs_prod * (1 + 4 * k * 2.0 ** -53)
    worst = float(np.max(err / np.maximum(allowed, 1e-300)))
    return "ok" if np.all(err <= allowed) else f"FAIL ({worst:.2f}x the bound)"


def torch_or_none():
    try:
        import torch
        return torch
    except ImportError:
        return None


def ladder_cpu(args, sizes):
    """The CPU's rungs and torch.mm, for each size and thread count; returns the exit status."""
    import numpy as np

    torch = torch_or_none()
    all_threads = os.cpu_count() or 1
    threads_list = [all_threads if t == "all" else int(t) for t in args.threads.split(",")]
    rungs = _C._matmul_rungs("cpu")
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
            # numpy's products (its BLAS's threads spin a while after each,
            # on the cores the rungs are timed on) come first, then a pause.
            exact, abs_prod = a64 @ b64, np.abs(a64) @ np.abs(b64)
            time.sleep(0.5)
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
                    time.sleep(0.1)  # torch's OpenMP threads spin a while after its products, too
                for rung in rungs + ["auto"]:
                    if rung == "reference" and n > 512 and not args.slow:
                        print(f"{n:>5} {threads:>7} {rung:10} {'-':>10} {'-':>9} {'-':>8}  skipped (--slow runs it)")
                        continue
                    _C._set_matmul_rung("cpu", rung)
                    t = median_seconds(lambda: a @ b, clock=clock)
                    got = np.asarray(a @ b)
                    ran = _C._last_matmul_run("cpu")["rung"]
                    name = rung if rung != "auto" else f"auto:{ran}"
                    v = verdict(got, exact, abs_prod, n)
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


def _torch_ms(device, n, dtype_name, reps, tf32=False):
    """torch.matmul's median time (ms) on the same device, or None without torch or the device."""
    if not device.startswith("cuda"):
        return None
    try:
        import torch
    except ImportError:
        return None
    if not torch.cuda.is_available():
        return None
    torch.backends.cuda.matmul.allow_tf32 = tf32
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
    torch.backends.cuda.matmul.allow_tf32 = False
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


def _tf32_rows(device, n, a, b, reps, verdicts, echo):
    """float32 in TF32 (Note [TF32 matmul]): cuBLAS with allow_tf32 and descent's wmma rung; 1 if its verdict failed."""
    flops = 2.0 * n ** 3
    torch_ms = _torch_ms(device, n, "float32", reps, tf32=True)
    if torch_ms is not None:
        echo(f"{'float32':9} {n:>5}  {'torch tf32':15} {torch_ms:>10.3f} {flops / torch_ms / 1e9:>9.3g} {1.0:>8.2f}")
    _C._set_matmul_rung(device, "wmma")
    _C._set_cublas_allow_tf32(True)
    try:
        ms = _time_ms(device, lambda: a @ b, reps)
        ran = _C._last_matmul_run(device)
    finally:
        _C._set_cublas_allow_tf32(False)
        _C._set_matmul_rung(device, "auto")
    ok, why = verdicts.get(("wmma tf32", "float32"), (True, "no verdict"))
    ratio = f"{torch_ms / ms:>8.2f}" if torch_ms is not None else f"{'-':>8}"
    echo(f"{'float32':9} {n:>5}  {'wmma tf32':15} {ms:>10.3f} {flops / ms / 1e9:>9.3g} {ratio}  "
         f"{'ok' if ok else 'FAIL':7}  {ran['kernel']}{'' if ok else '  ' + why}")
    return 0 if ok else 1


def ladder_device(device, sizes, dtypes, reps, echo=print):
    """A device's rungs: one line per (dtype, size, rung) and PyTorch's beside; returns 1 if a verdict failed."""
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
                    ran = _C._last_matmul_run(device)
                finally:
                    _C._set_matmul_rung(device, "auto")
                ok, why = verdicts.get((rung, dtype_name), (True, "no verdict"))
                failed += not ok
                ratio = f"{torch_ms / ms:>8.2f}" if torch_ms is not None else f"{'-':>8}"
                note = f" (ran {ran['rung']}: {ran['fallback']})" if ran["rung"] != rung else ""
                echo(f"{dtype_name:9} {n:>5}  {rung:15} {ms:>10.3f} {flops / ms / 1e9:>9.3g} {ratio}  "
                     f"{'ok' if ok else 'FAIL':7}  {ran['kernel']}{note}{'' if ok else '  ' + why}")
            if dtype_name == "float32" and device.startswith("cuda") and "wmma" in rungs:
                failed += _tf32_rows(device, n, a, b, reps, verdicts, echo)
            del a, b
    return 1 if failed else 0


def add_parser(sub):
    b = sub.add_parser("bench", help="time a kernel's ladder beside PyTorch's (descent bench matmul --ladder)")
    b.add_argument("what", choices=["matmul"], help="what to time")
    b.add_argument("--ladder", action="store_true", required=True,
                   help="every rung of the device's matmul ladder, plainest first")
    b.add_argument("--device", default=None, help="cpu, sim:0 or cuda:N (cuda:0 where there is one, else cpu)")
    b.add_argument("--sizes", default=None,
                   help="n of the n x n x n products, comma-separated (512,2048 on the CPU; 1024,4096,8192 on CUDA; "
                        "64,128 on sim:0, whose threads run one after another on a CPU core)")
    b.add_argument("--dtypes", default=None, help="comma-separated (a device's; the CPU times float32)")
    b.add_argument("--reps", type=int, default=5, help="a device's timed products per rung (their median)")
    b.add_argument("--threads", default="all,1", help="the CPU's thread counts, comma-separated ('all': every core)")
    b.add_argument("--slow", action="store_true", help="also run the CPU's reference loop past n = 512")
    b.add_argument("--clock", choices=["wall", "thread"], default="wall",
                   help="thread: time the CPU's one-thread rows by this thread's CPU time (a busy shared machine)")
    b.set_defaults(fn=run)


MAX_SIZE = 16384  # an n past this would ask for gigabytes before it is timed


def _usage(message):
    """A misused option: one line, exit status 2, as argparse's own errors (no traceback)."""
    print(f"descent bench: {message}", file=sys.stderr)
    return 2


def _int_list(text, option, low, high):
    """The comma-separated whole numbers of `option`, each in [low, high]; or a one-line message."""
    values = []
    for item in text.split(","):
        item = item.strip()
        try:
            v = int(item)
        except ValueError:
            return None, f"{option}: expected whole numbers separated by commas, not {item!r}"
        if not low <= v <= high:
            return None, f"{option}: each must be from {low} to {high}, not {v}"
        values.append(v)
    return values, None


def run(args):
    if args.device is not None:
        try:
            descent.device(args.device)
        except (RuntimeError, ValueError) as e:
            return _usage(f"--device: {e}")
    device = args.device or ("cuda:0" if descent.cuda.is_available() else "cpu")
    if device.startswith("cuda") and not descent.cuda.is_available():
        return _usage(f"--device {device}: there is no CUDA device here (descent.cuda.is_available() is False)")
    on_cpu = device == "cpu"
    default_sizes = "512,2048" if on_cpu else "1024,4096,8192" if device.startswith("cuda") else "64,128"
    sizes, problem = _int_list(args.sizes or default_sizes, "--sizes", 1, MAX_SIZE)
    if problem:
        return _usage(problem)
    if args.reps < 1:
        return _usage(f"--reps: expected 1 or more, not {args.reps}")
    if on_cpu:
        _, problem = _int_list(args.threads.replace("all", "1"), "--threads", 1, 1024)
        if problem:
            return _usage(problem)
        if args.dtypes not in (None, "float32"):
            print("descent bench: the CPU's ladder is timed in float32 only", file=sys.stderr)
            return 2
        return ladder_cpu(args, sizes)
    dtypes = [d for d in (args.dtypes or "bfloat16,float16,float32").split(",") if d]
    return ladder_device(device, sizes, dtypes, max(1, args.reps))
