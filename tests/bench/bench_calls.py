"""Per-call cost of a few Python calls into one build of descent: operators,
methods and functions on 1-element tensors. For before/after comparisons of
the Python floor: build both versions, then run this against each in turn
(several times, taking turns), e.g.

    python3 tests/bench/bench_calls.py build-before/python
    python3 tests/bench/bench_calls.py build/python

Each line is the minimum and the median of 40 timings of 20000 calls (after a
warm-up). On a shared machine the minimum is the steadier of the two.
"""
import sys

from bench import timings_ns  # tests/bench/bench.py, beside this file


def main():
    sys.path.insert(0, sys.argv[1] if len(sys.argv) > 1 else "build/python")
    import descent
    a, b = descent.randn(1), descent.randn(1)
    calls = [("a + b", lambda: a + b), ("a.add(b)", lambda: a.add(b)), ("descent.add(a, b)", lambda: descent.add(a, b)),
             ("a + 1", lambda: a + 1), ("a.sum()", lambda: a.sum()), ("a.view(1)", lambda: a.view(1)),
             ("a.dim()", lambda: a.dim())]
    for name, fn in calls:
        lo, med = timings_ns(fn, n=20000, reps=40)
        print(f"{name:18s} min {lo:6.0f} ns  median {med:6.0f} ns")


if __name__ == "__main__":
    main()
