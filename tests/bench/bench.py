#!/usr/bin/env python3
"""descent's per-call benchmarks beside PyTorch's, measured in the same run.

    python3 tests/bench/bench.py --build build [--torch-cpp] [--out FILE]

Times, with tracing compiled in and switched off: a 1-element CPU add through
the dispatcher from C++ (bench_descent) and from Python; a 512x512 float32
matmul from Python, on all threads and on one; the tracer's cost per span, on
and off; a traced `x + y` timed as `descent trace --repeat` times it (the
warm median with the tracer's cost taken out) beside the same statement
untraced. When PyTorch is importable, the same calls through PyTorch
(torch.add from Python; at::add from C++ with --torch-cpp, compiled here
against the installed torch). Method: warm-up, then the median of 7
repetitions (tests/bench/timing.h; per_call_ns below for Python). The C++
programs run as --runs separate processes, descent's and PyTorch's taking
turns, and each number is the median over those processes: on a shared
virtual machine one process can land on a busy core and run at half speed
for its whole life (seen on the H200 host: 0.16 µs and 0.28-0.36 µs for the
same add in consecutive processes).
"""
import argparse
import json
import os
import platform
import statistics
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))


def timings_ns(fn, n=200000, reps=7):
    """The minimum and the median over `reps` timings of n calls of fn, in ns a call, after a warm-up."""
    for _ in range(min(n, 2000)):
        fn()
    runs = []
    for _ in range(reps):
        t = time.perf_counter_ns()
        for _ in range(n):
            fn()
        runs.append((time.perf_counter_ns() - t) / n)
    return min(runs), statistics.median(runs)


def per_call_ns(fn, n=200000, reps=7):
    return timings_ns(fn, n, reps)[1]


def run_json_lines(cmd):
    out = subprocess.run(cmd, check=True, capture_output=True, text=True).stdout
    return {d["name"]: d["ns"] for d in map(json.loads, out.splitlines())}


def python_side(lib, prefix):
    """The Python-side timings of `lib` (descent or torch, which share these
    names), each under its name with `prefix` in front."""
    a, b = lib.randn(1), lib.randn(1)
    ma, mb = lib.randn(512, 512), lib.randn(512, 512)
    threads = lib.get_num_threads()
    x16 = lib.randn(16, requires_grad=True)

    def forward_backward():  # (x*x).sum() and its backward, over 16 elements
        (x16 * x16).sum().backward()
    r = {"py_add_1elem": per_call_ns(lambda: lib.add(a, b)),
         "py_fwd_bwd_16": per_call_ns(forward_backward, n=20000),
         "py_add_operator_1elem": per_call_ns(lambda: a + b),
         "py_add_method_1elem": per_call_ns(lambda: a.add(b)),
         "py_dim": per_call_ns(lambda: a.dim()),
         "matmul_threads": threads,
         "py_matmul_512": per_call_ns(lambda: lib.matmul(ma, mb), n=5)}
    lib.set_num_threads(1)
    r["py_matmul_512_1thread"] = per_call_ns(lambda: lib.matmul(ma, mb), n=5)
    if hasattr(lib._C, "_matmul_isas"):  # descent: each vector unit of Note [Register-blocked matmul]
        widest = lib._C._matmul_isa()
        for isa in lib._C._matmul_isas():
            lib._C._set_matmul_isa(isa)
            r[f"py_matmul_512_1thread_{isa}"] = per_call_ns(lambda: lib.matmul(ma, mb), n=5)
        lib._C._set_matmul_isa(widest)
    lib.set_num_threads(threads)
    return {prefix + name: value for name, value in r.items()}


def traced_add(descent, runs=201, rounds=11):
    """A 1-element `x + y` traced as `descent trace --repeat` runs it: the warm
    median of the statement's span with the tracer's cost taken out (Note
    [Warm medians] in tracer/trace.h), beside the same compiled statement
    untraced, timed alone as the span times it (descent._C._time_statement:
    from before its frame to after, each value released after the next run,
    as the trace holds it), so that the two differ only by the tracing. The
    two take turns, `rounds` times `runs` statements each, and each is the
    median over the rounds: a machine's slow spells (on the development VM
    and the H200 host, stretches of a second where everything costs twice as
    much) then fall on both sides alike instead of on whichever ran then.
    Also the statement through eval() in a Python loop, which adds the loop,
    the call and the value's release to what a span holds."""
    from descent import tracing
    env = {"descent": descent, "x": descent.randn(1), "y": descent.randn(1)}
    compiled = compile("x + y", "<bench>", "eval")
    traced, untraced = [], []
    for _ in range(rounds):
        result, error = tracing.run("x + y", env=env, echo=None, repeat=runs)
        if error is not None:
            raise error
        traced += [w[0] for s, w in zip(result.spans(), result.warm_medians(runs))
                   if w is not None and s["parent"] == 0 and s["name"] == "x + y"]
        untraced.append(statistics.median(descent._C._time_statement(compiled, env, runs)))
    return {"py_add_traced_corrected": statistics.median(traced),
            "py_add_untraced_same": statistics.median(untraced),
            "py_add_untraced_eval_loop": per_call_ns(lambda: eval(compiled, env)),
            "py_add_traced_spans": len(result.spans()) / runs,
            "py_add_traced_span_cost": result.span_cost_ns}


def median_of_runs(commands, runs):
    """Runs each command `runs` times, taking turns; the median of every number."""
    seen = {}
    for _ in range(runs):
        for cmd in commands:
            for name, ns in run_json_lines(cmd).items():
                seen.setdefault(name, []).append(ns)
    return {name: statistics.median(values) for name, values in seen.items()}, seen


def build_torch_cpp():
    import torch
    prefix = os.path.dirname(torch.__file__)
    exe = os.path.join(os.environ.get("TMPDIR", "/tmp"), "bench_torch")
    abi = int(torch._C._GLIBCXX_USE_CXX11_ABI)
    cmd = ["g++", "-O2", "-std=c++17", f"-D_GLIBCXX_USE_CXX11_ABI={abi}", f"-I{ROOT}",
           f"-I{prefix}/include", os.path.join(HERE, "bench_torch.cpp"), f"-L{prefix}/lib",
           "-ltorch_cpu", "-lc10", f"-Wl,-rpath,{prefix}/lib", "-o", exe]
    subprocess.run(cmd, check=True)
    return exe


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--build", default=os.path.join(ROOT, "build"))
    p.add_argument("--torch-cpp", action="store_true", help="also build and time at::add (needs torch's headers)")
    p.add_argument("--out", help="write the markdown table here too")
    p.add_argument("--runs", type=int, default=5, help="processes per C++ benchmark (median over them)")
    args = p.parse_args()

    sys.path.insert(0, os.path.join(args.build, "python"))
    import descent

    programs = [[os.path.join(args.build, "tests", "bench", "bench_descent")]]
    if args.torch_cpp:
        programs.append([build_torch_cpp()])
    r, per_run = median_of_runs(programs, args.runs)
    r.update(python_side(descent, ""))
    r.update(traced_add(descent))
    try:
        import torch
        r.update(python_side(torch, "torch_"))
        r["torch_version"] = torch.__version__
    except ImportError:
        pass

    def row(what, ours, theirs, target):
        o = r.get(ours)
        t = r.get(theirs) if theirs else None
        fmt = lambda ns: "-" if ns is None else (f"{ns / 1e6:.2f} ms" if ns >= 1e6 else  # noqa
                                                 f"{ns / 1000:.3f} µs" if ns >= 100 else f"{ns:.2f} ns")
        ratio = f"{o / t:.2f}x" if o is not None and t else "-"
        return f"| {what} | {fmt(o)} | {fmt(t)} | {ratio} | {target} |"

    lines = [
        f"Machine: {platform.node()} ({platform.processor() or platform.machine()}), Python {platform.python_version()}, "
        f"PyTorch {r.get('torch_version', 'not installed')}. Ratio = descent / PyTorch (lower is faster).",
        "",
        "| what | descent | PyTorch | ratio | target |",
        "|---|---|---|---|---|",
        row("C++ add, 1-element CPU tensors, through the dispatcher (boxed call)", "cpp_add_1elem", "torch_cpp_add_1elem",
            "≤ 0.3 µs"),
        row("C++ add, 1-element CPU tensors, typed call (unboxed kernel)", "cpp_add_1elem_typed", "torch_cpp_add_1elem",
            "≤ 0.3 µs"),
        row("C++ add, typed call, beside at::add under c10::InferenceMode", "cpp_add_1elem_typed",
            "torch_cpp_add_1elem_inference", ""),
        row("C++ add, typed call, one input requiring grad (AddBackward0 recorded)", "cpp_add_1elem_grad",
            "torch_cpp_add_1elem_grad", "≤ 0.6 µs"),
        row("C++ empty({0})", "cpp_empty_0", "torch_cpp_empty_0", ""),
        row("Python `descent.add(a, b)` / `torch.add(a, b)`, 1 element", "py_add_1elem", "torch_py_add_1elem", "≤ 1.0 µs"),
        row("Python `a + b`, 1 element", "py_add_operator_1elem", "torch_py_add_operator_1elem", ""),
        row("Python `a.add(b)`, 1 element", "py_add_method_1elem", "torch_py_add_method_1elem", ""),
        row("Python `(x*x).sum().backward()`, 16 elements (forward and backward)", "py_fwd_bwd_16",
            "torch_py_fwd_bwd_16", "≤ 15 µs"),
        row("Python `x.dim()` (smallest crossing into C++)", "py_dim", "torch_py_dim", ""),
        row(f"Python `matmul`, 512x512 float32, all threads (descent {r['matmul_threads']}, "
            f"PyTorch {r.get('torch_matmul_threads', '-')})", "py_matmul_512", "torch_py_matmul_512", ""),
        row("Python `matmul`, 512x512 float32, one thread (`set_num_threads(1)`)", "py_matmul_512_1thread",
            "torch_py_matmul_512_1thread", ""),
        *[row(f"the same, descent's tiles on {isa} vectors", f"py_matmul_512_1thread_{isa}", None, "")
          for isa in ("sse2", "avx2", "avx512", "generic") if f"py_matmul_512_1thread_{isa}" in r],
        row("tracer span, tracing off (one branch)", "span_off", None, ""),
        row("tracer span, tracing on (begin + end, hot loop)", "span_on", None, "≤ 10 ns"),
        row("tracer span, tracing on (calibrated at start)", "span_cost_calibrated", None, "≤ 10 ns"),
        row("the tracer's clock read alone (rdtsc on x86-64, through a call)", "clock_read", None, ""),
        row("rdtsc inline, per read (a span reads it twice)", "clock_read_inline", None, ""),
        row(f"C++ add with tracing on ({r.get('spans_per_add', 0):.0f} spans recorded)", "cpp_add_1elem_traced", None, ""),
        row("what tracing adds to that add, per span", "tracing_cost_per_span_in_add", None, ""),
    ]
    if "py_add_traced_corrected" in r:
        within = r["py_add_traced_corrected"] / r["py_add_untraced_same"] - 1
        lines.append(row(f"Python `x + y` traced, `--repeat`'s warm median with the tracer's cost taken out "
                         f"({r['py_add_traced_spans']:.0f} spans at {r['py_add_traced_span_cost']:.1f} ns; "
                         f"{within:+.0%} from untraced)", "py_add_traced_corrected", None,
                         "within 25% of untraced"))
        lines.append(row("the same `x + y` untraced (its compiled statement timed alone, as its span times it)",
                         "py_add_untraced_same", None, ""))
        lines.append(row("the same `x + y` untraced through eval() in a Python loop (the loop and call included)",
                         "py_add_untraced_eval_loop", None, ""))
    if "tracy_method_per_span_wall" in r:
        n = r["tracy_method_threads"]
        lines.append(row(f"tracer span, Tracy's method: {n:.0f} threads of real work, wall-time difference "
                         "/ all spans", "tracy_method_per_span_wall", None, "≤ 10 ns (Tracy: 2.25 ns)"))
        lines.append(row("the same, per thread (wall-time difference x threads / spans)",
                         "tracy_method_per_span_per_thread", None, ""))
    if "span_on" in r and "clock_read_inline" in r:
        r["span_bookkeeping"] = r["span_on"] - 2 * r["clock_read_inline"]
        lines.append(row("tracer span minus its two clock reads (the tracer's own work)", "span_bookkeeping", None, ""))
    spread = lambda name: ", ".join(f"{ns:.0f}" for ns in per_run.get(name, []))  # noqa
    lines += ["", f"C++ add per process, ns ({args.runs} processes each, taking turns): descent "
              f"{spread('cpp_add_1elem')}; at::add {spread('torch_cpp_add_1elem') or '-'}."]
    text = "\n".join(lines)
    print(text)
    if args.out:
        with open(args.out, "w") as f:
            f.write(text + "\n")


if __name__ == "__main__":
    main()
