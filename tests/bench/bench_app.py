"""The app's speed under Xvfb with Mesa's software renderer (llvmpipe).

    python3 tests/bench/bench_app.py --build build [--runs 3]

Measures, each as the median over --runs separate processes:
- the median frame while the token plays through a ~200-span trace, redrawing
  only what changed (the default where the back buffer is kept) and redrawing
  every frame whole, at 1600x1000;
- how long after start the first frame of the sample call is on screen;
- a 1,000,000-span trace (a DESCENT_TRACE-style loop, saved in descent's
  format): how long until its first frame, and the median frame while the
  timeline pans across it;
- a 1000-iteration loop's story (about 34,000 steps): the median frame at
  1920x1080 when each frame opens a step far from the last (`--bench-jump`,
  as a click on the timeline or a search does);
- while the user's code runs on the Python thread (`--bench-stop`, at
  1920x1080): the median and p90 frame with the ~300-span trace playing
  meanwhile, and, once Stop is pressed, the time until the prompt is back
  (the app's own clock, from the key to the result shown): for
  `while True: pass`, and for a loop of traced adds stopped after about a
  second (its time goes into collecting the spans it recorded into a trace),
  with the longest frame drawn while it stopped.
Targets (issue 9): 8 ms a frame animating, 1 s to the first frame, 2 s to open
the 1M-span trace, 16 ms a frame panning it. Issue 23: 8 ms a frame at
1920x1080 while code runs, 200 ms from Stop to the prompt, 16 ms to open a step of
a 22,000-step story.
"""
import argparse
import os
import re
import statistics
import subprocess
import sys
import tempfile

SIZE = "1600x1000"


def app_output(build, size, *args):
    cmd = ["xvfb-run", "-a", "-s", f"-screen 0 {size}x24 -noreset", os.path.join(build, "descent-app"), "--size", size,
           *args]
    return subprocess.run(cmd, capture_output=True, text=True, check=True, timeout=600).stdout


def app_run(build, *args, size=SIZE):
    out = app_output(build, size, *args)
    m = re.search(r"first frame ([\d.]+) s after start\s+median ([\d.]+) ms\s+p90 ([\d.]+) ms", out)
    if not m:
        raise RuntimeError(f"no benchmark line in: {out!r}")
    return float(m.group(1)), float(m.group(2)), float(m.group(3))


def app_stop_run(build, *args):
    """--bench-stop's line: (median frame, p90 frame, stop to prompt ms, longest frame while stopping, spans)."""
    out = app_output(build, "1920x1080", "--bench-stop", *args)
    m = re.search(r"median ([\d.]+) ms\s+p90 ([\d.]+) ms.*stop to prompt ([\d.]+) ms\s+frames meanwhile \d+, "
                  r"max ([\d.]+) ms\s+spans (\d+)", out)
    if not m:
        raise RuntimeError(f"no --bench-stop line in: {out!r}")
    return tuple(float(g) for g in m.groups())


def save_trace(build, code, path):
    subprocess.run([os.path.join(build, "descent"), "trace", code, "--save", path], check=True,
                   stdout=subprocess.DEVNULL, env=dict(os.environ, DESCENT_TRACE_MAX_SPANS="4000000"))
    spans = subprocess.run([sys.executable, "-c", f"import descent; print(len(descent._C._load_trace({path!r}).spans()))"],
                           capture_output=True, text=True, check=True,
                           env=dict(os.environ, PYTHONPATH=os.path.join(build, "python"))).stdout.strip()
    return int(spans)


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--build", default="build")
    p.add_argument("--runs", type=int, default=3)
    args = p.parse_args()
    tmp = tempfile.mkdtemp(prefix="descent-bench-app-")
    small = os.path.join(tmp, "small.descent")
    big = os.path.join(tmp, "big.descent")
    n_small = save_trace(args.build, "x = descent.randn(32, 32)\nfor i in range(20): y = (x @ x).relu().sum()", small)
    n_big = save_trace(args.build, "x = descent.ones(2, 2)\nfor i in range(111111): x + 1", big)
    loop = os.path.join(tmp, "loop.descent")
    n_loop = save_trace(args.build, "x = descent.ones(2, 2)\nfor i in range(1000): x + 1", loop)
    rows = []

    def measure(label, target, pick, *app_args, run=app_run, **run_args):
        values = [pick(run(args.build, *app_args, **run_args)) for _ in range(args.runs)]
        rows.append((label, statistics.median(values), min(values), max(values), target))

    measure(f"median frame, animating a {n_small}-span trace (redraw what changed)", "≤ 8 ms", lambda r: r[1],
            "--trace", small, "--bench-frames", "300")
    measure(f"median frame, animating a {n_small}-span trace (every frame whole)", "", lambda r: r[1],
            "--trace", small, "--bench-frames", "300", "--redraw", "full")
    measure("first frame of the sample call, after start (s)", "≤ 1 s", lambda r: r[0], "--bench-frames", "10")
    measure(f"{n_big}-span trace: first frame after start (s)", "≤ 2 s", lambda r: r[0],
            "--trace", big, "--bench-frames", "200", "--bench-pan")
    measure(f"{n_big}-span trace: median frame panning the timeline", "≤ 16 ms", lambda r: r[1],
            "--trace", big, "--bench-frames", "200", "--bench-pan")
    measure(f"{n_big}-span trace: median frame panning, every frame whole", "", lambda r: r[1],
            "--trace", big, "--bench-frames", "200", "--bench-pan", "--redraw", "full")
    steps = 2 * n_loop
    measure(f"1920x1080: a {steps}-step story (a 1000-iteration loop): median frame opening a far step each frame",
            "≤ 16 ms", lambda r: r[1], "--trace", loop, "--bench-frames", "200", "--bench-jump", size="1920x1080")
    endless = "while True: pass"
    adds = "x = descent.ones(2)\nwhile True: x + 1"
    measure(f"1920x1080: median frame while `{endless}` runs, the {n_small}-span trace playing", "≤ 8 ms",
            lambda r: r[0], "--trace", small, "--code", endless, "--bench-frames", "300", run=app_stop_run)
    measure(f"1920x1080: p90 frame while `{endless}` runs, the {n_small}-span trace playing", "", lambda r: r[1],
            "--trace", small, "--code", endless, "--bench-frames", "300", run=app_stop_run)
    measure(f"Stop to prompt, `{endless}`", "≤ 200 ms", lambda r: r[2], "--code", endless, "--bench-frames", "60",
            run=app_stop_run)
    spans = []
    measure("Stop to prompt, a loop of traced adds stopped after 60 frames", "", lambda r: spans.append(r[4]) or r[2],
            "--code", adds, "--bench-frames", "60", run=app_stop_run)
    rows[-1] = (rows[-1][0] + f" (~{statistics.median(spans) / 1e6:.1f}M spans)",) + rows[-1][1:]
    measure("longest frame drawn between that Stop and the prompt", "", lambda r: r[3],
            "--code", adds, "--bench-frames", "60", run=app_stop_run)
    print(f"| what | median of {args.runs} runs | min | max | target |")
    print("|---|---|---|---|---|")
    for label, med, lo, hi, target in rows:
        unit = "s" if "(s)" in label else "ms"
        print(f"| {label.replace(' (s)', '')} | {med:.3g} {unit} | {lo:.3g} | {hi:.3g} | {target} |")


if __name__ == "__main__":
    main()
