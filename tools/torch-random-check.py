#!/usr/bin/env python3
"""descent's seeded CPU random numbers beside PyTorch's (Note [PyTorch's CPU random stream],
floors/kernels/cpu/cpu_generator.h). Run it where torch is installed, against a build:

    PYTHONPATH=build/python python3 tools/torch-random-check.py [--emit] [--strict]

Each case seeds both libraries with manual_seed, evaluates the same expression with `m` bound to
descent and then to torch, and compares the values bit for bit. It prints both side by side and
exits 1 if any case differs. A case descent cannot run yet (no randint, no randperm) is listed as
missing, and fails the run only with --strict. Without torch it prints descent's values alone.
--emit prints torch's values as a Python dict, for tests/python/test_random_stream.py.
Importing this file needs neither library."""
import argparse
import math
import struct
import sys

# (seed, expression): the expression runs with `m` as the library, after m.manual_seed(seed); a list
# expression runs its calls in order. Every call is on the CPU.
CASES = [
    (0, "m.randn(3)"),
    (0, "m.randn(3, dtype=m.float64)"),
    (0, "m.randn(15)"),
    (0, "m.randn(16)"),
    (0, "m.randn(16, dtype=m.float64)"),
    (0, "m.randn(17)"),
    (0, "m.randn(17, dtype=m.float64)"),
    (0, "m.randn(100)"),
    (0, "m.randn(100, dtype=m.float64)"),
    (0, "m.randn(4, 4)"),
    (42, "m.randn(1000)"),
    (0, "m.randn(3, dtype=m.float16)"),
    (0, "m.randn(17, dtype=m.float16)"),
    (0, "m.randn(17, dtype=m.bfloat16)"),
    (0, "m.rand(3)"),
    (0, "m.rand(100)"),
    (0, "m.rand(3, dtype=m.float64)"),
    (0, "m.rand(100, dtype=m.float16)"),
    (0, "m.rand(100, dtype=m.bfloat16)"),
    (0, "[m.randn(3), m.randn(1)]"),  # the cached sine, across calls
    (0, "[m.randn(3), m.rand(2), m.randn(20), m.randn(2)]"),
    (0, "[m.rand(5), m.randn(5), m.rand(5)]"),
    (2**32, "m.rand(3)"),  # the seed's low 32 bits
    (-1, "m.rand(3)"),
    (5489, "m.rand(3, dtype=m.float64)"),
    (0, "m.randint(0, 10, (5,))"),
    (0, "m.randint(-5, 5, (20,))"),
    (0, "m.randint(0, 2**40, (4,))"),  # a range of 2**32 or more: random64()
    (0, "m.randperm(10)"),
    (0, "m.randperm(100)"),
    (0, "m.nn.init.normal_(m.empty(5), 2.0, 3.0)"),  # normal_(mean, std), small
    (0, "m.nn.init.normal_(m.empty(20), 2.0, 3.0)"),  # and from 16 elements
    (0, "m.nn.init.uniform_(m.empty(20), -2.0, 3.0)"),
    (0, "[m.nn.Linear(3, 2).weight, m.nn.Linear(3, 2).bias]"),
    (0, "m.empty(20).uniform_(-2.0, 3.0)"),  # the in-place draws themselves
    (0, "m.empty(20, dtype=m.float64).uniform_(-2.0, 3.0)"),
    (0, "m.empty(20, dtype=m.float16).uniform_(-2.0, 3.0)"),
    (0, "m.empty(20, dtype=m.bfloat16).uniform_(-2.0, 3.0)"),
    (0, "m.empty(20).normal_(2.0, 3.0)"),
    (0, "m.empty(20, dtype=m.float64).normal_(2.0, 3.0)"),
    (0, "m.rand_like(m.empty(7))"),
    (0, "m.multinomial(m.tensor([0.1, 0.2, 0.7]), 10, replacement=True)"),
    (0, "m.randint_like(m.empty(6), 3, 9)"),
    (0, "m.empty(8).random_(0, 100)"),
    (0, "m.nn.init.kaiming_uniform_(m.empty(4, 5), a=5 ** 0.5)"),
    (0, "m.nn.Embedding(4, 3).weight"),
    (0, "m.nn.LayerNorm(3).weight"),
]


def flat(value):
    """(dtype name, list of Python numbers) of a tensor or a list of them."""
    if isinstance(value, (list, tuple)):
        parts = [flat(v) for v in value]
        return ",".join(p[0] for p in parts), [x for p in parts for x in p[1]]
    t = value.detach() if hasattr(value, "detach") else value
    values = t.reshape(-1).tolist()
    return str(t.dtype).split(".")[-1], values


def run(lib, seed, expr):
    """(dtype, values); None when the library lacks a function the case calls; ("raised", [message])."""
    lib.manual_seed(seed)
    try:
        return flat(eval(expr, {"m": lib}))
    except AttributeError:
        return None
    except Exception as e:  # a call descent refuses is a difference too
        return "raised", [f"{type(e).__name__}: {e}"]


def ulps(a, b, dtype):
    """How many float32 (float64) values lie between a and b, for those dtypes."""
    formats = {"float32": ("f", "i", 31), "float64": ("d", "q", 63)}
    if dtype not in formats or not (math.isfinite(a) and math.isfinite(b)):
        return None
    fmt, ifmt, bits = formats[dtype]
    ordered = []
    for x in (a, b):
        i = struct.unpack(ifmt, struct.pack(fmt, x))[0]
        ordered.append(i if i >= 0 else -(i & ((1 << bits) - 1)))  # negative floats count down from -0
    return abs(ordered[0] - ordered[1])


def show(values, limit=8):
    shown = ", ".join(f"{v:.8g}" if isinstance(v, float) else str(v) for v in values[:limit])
    return f"[{shown}{', ...' if len(values) > limit else ''}] ({len(values)})"


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--emit", action="store_true", help="print torch's values as a Python dict")
    parser.add_argument("--strict", action="store_true", help="a case descent cannot run fails the run")
    args = parser.parse_args()
    import descent
    try:
        import torch
    except ImportError:
        torch = None
    if torch is None:
        print("torch is not importable here: descent's values alone")
    else:
        capability = torch.backends.cpu.get_cpu_capability() if hasattr(torch.backends, "cpu") else "?"
        print(f"torch {torch.__version__}, CPU capability {capability} (float32 randn from 16 elements runs "
              "the AVX2 kernel on AVX2 and AVX-512 CPUs, which descent follows; ATEN_CPU_CAPABILITY=default "
              "gives torch's scalar one)")
    mismatches, missing, emitted = [], [], {}
    for seed, expr in CASES:
        label = f"manual_seed({seed}); {expr}"
        ours = run(descent, seed, expr)
        theirs = run(torch, seed, expr) if torch is not None else None
        if theirs is not None:
            emitted[label] = theirs[1]
        if ours is None:
            missing.append(label)
            print(f"MISSING   {label}: descent lacks a function it calls")
            if theirs is not None:
                print(f"    torch   {theirs[0]} {show(theirs[1])}")
            continue
        if theirs is None:
            print(f"          {label}\n    descent {ours[0]} {show(ours[1])}")
            continue
        same = ours[0] == theirs[0] and len(ours[1]) == len(theirs[1]) and all(
            (a == b and math.copysign(1, a) == math.copysign(1, b)) if isinstance(a, float) else a == b
            for a, b in zip(ours[1], theirs[1]))
        print(f"{'ok' if same else 'MISMATCH':9} {label}")
        print(f"    descent {ours[0]} {show(ours[1])}\n    torch   {theirs[0]} {show(theirs[1])}")
        if not same:
            mismatches.append(label)
            if ours[0] != theirs[0] or len(ours[1]) != len(theirs[1]):
                continue
            differ = [i for i, (a, b) in enumerate(zip(ours[1], theirs[1])) if a != b]
            print(f"    {len(differ)} of {len(ours[1])} differ; first at {differ[:8]}:")
            for i in differ[:4]:
                a, b = ours[1][i], theirs[1][i]
                print(f"      [{i}] descent {a!r} torch {b!r} ({ulps(a, b, ours[0])} ulps apart)")
    if args.emit and emitted:
        print("\nTORCH_VALUES = {")
        for label, values in emitted.items():
            print(f"    {label!r}: {values!r},")
        print("}")
    print(f"\n{len(CASES)} cases: {len(mismatches)} differ, {len(missing)} missing in descent"
          + ("" if torch is not None else " (no torch: nothing compared)"))
    for label in mismatches:
        print(f"  differs: {label}")
    return 1 if mismatches or (args.strict and missing) else 0


if __name__ == "__main__":
    sys.exit(main())
