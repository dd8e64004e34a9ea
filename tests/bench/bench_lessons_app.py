"""Opening a lesson's step in the app (issue 21: ≤ 300 ms for CPU steps on the 2-core dev machine).

    python3 tests/bench/bench_lessons_app.py --build build [--runs 3]

For every step of every lesson whose code runs on the CPU, the app is started
headless on that step (`--lesson NAME --lesson-step K`) and its state dump
read: `open_ms` is the app's own clock from the request to the Python thread
until the step's story is on screen (the setup, the traced run, the
selectors, the story, the timeline and the streams model built), the first
frame not included. Each step's time is the median of --runs processes;
printed as a Markdown row for docs/BENCHMARKS.md: the median over steps, the
slowest step, and how many steps are within the target.
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile


def cpu_steps(build):
    code = ("import json, descent.lessons as L\n"
            "out = []\n"
            "for c in L.catalog():\n"
            "    les = L.load(c['name'])\n"
            "    out += [[c['name'], k + 1] for k, s in enumerate(les.steps) if s.run is not None and s.run.device == 'cpu']\n"
            "print(json.dumps(out))")
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True,
                       env=dict(os.environ, PYTHONPATH=os.path.join(build, "python")))
    return json.loads(r.stdout)


def open_ms(build, name, step, tmp):
    state, png = os.path.join(tmp, "state.json"), os.path.join(tmp, "shot.png")
    subprocess.run(["xvfb-run", "-a", "-s", "-screen 0 1280x720x24 -noreset", os.path.join(build, "descent-app"),
                    "--size", "1280x720", "--lesson", name, "--lesson-step", str(step), "--screenshot", png,
                    "--state", state], check=True, capture_output=True, timeout=300,
                   env=dict(os.environ, XDG_DATA_HOME=os.path.join(tmp, "data")))
    with open(state) as f:
        return json.load(f)["lesson"]["open_ms"]


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--build", default="build")
    p.add_argument("--runs", type=int, default=3)
    args = p.parse_args()
    tmp = tempfile.mkdtemp(prefix="descent-bench-lessons-")
    times = {}
    for name, step in cpu_steps(args.build):
        times[(name, step)] = statistics.median(open_ms(args.build, name, step, tmp) for _ in range(args.runs))
    slowest = max(times, key=times.get)
    within = sum(t <= 300 for t in times.values())
    print("| what | median over steps | slowest | within 300 ms | target |")
    print("|---|---|---|---|---|")
    print(f"| opening a CPU step in the app ({len(times)} steps, each the median of {args.runs} runs) | "
          f"{statistics.median(times.values()):.0f} ms | {times[slowest]:.0f} ms ({slowest[0]} step {slowest[1]}) | "
          f"{within} of {len(times)} | ≤ 300 ms |")


if __name__ == "__main__":
    main()
