#!/usr/bin/env python3
"""Runs the caching allocator's scripted sequence (tests/allocator/data/script.txt)
on torch.cuda and prints torch.cuda.memory_stats() after it as JSON, so that it
can be compared with the values descent's test derives by hand from PyTorch's
rules (CachingAllocatorScript.ScriptedSequenceGivesPyTorchsStatistics in
tests/allocator/test_caching_policy.cpp). Run it on a CUDA host, in a fresh
process (nothing else may have used the device's caching allocator):

    python3 tools/allocator-vs-torch.py            # the JSON
    python3 tools/allocator-vs-torch.py --check    # also compare with the test's table; exit 1 where they differ

Every tensor is torch.empty(n, dtype=torch.uint8, device="cuda"), so a request is
exactly n bytes, as descent's allocate(n) in the test."""
import argparse
import json
import os
import re
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SCRIPT = os.path.join(ROOT, "tests", "allocator", "data", "script.txt")
TEST = os.path.join(ROOT, "tests", "allocator", "test_caching_policy.cpp")


def read_script(path):
    """[(op, name, bytes)] from script.txt; the format is described at its top."""
    steps = []
    with open(path) as f:
        for lineno, line in enumerate(f, 1):
            words = line.split("#", 1)[0].split()
            if not words:
                continue
            if words[0] == "alloc" and len(words) == 3:
                steps.append(("alloc", words[1], int(words[2])))
            elif words[0] == "free" and len(words) == 2:
                steps.append(("free", words[1], 0))
            elif words == ["empty_cache"]:
                steps.append(("empty_cache", "", 0))
            else:
                sys.exit(f"{path}:{lineno}: cannot read {line.strip()!r}")
    return steps


def run_on_torch(steps):
    import torch

    if not torch.cuda.is_available():
        sys.exit("torch.cuda is not available on this machine")
    if torch.cuda.memory_stats().get("num_device_alloc", 0) != 0:
        sys.exit("the caching allocator was used before the script: run this in a fresh process")
    tensors = {}
    for op, name, nbytes in steps:
        if op == "alloc":
            tensors[name] = torch.empty(nbytes, dtype=torch.uint8, device="cuda")
        elif op == "free":
            del tensors[name]
        else:
            torch.cuda.empty_cache()
    torch.cuda.synchronize()
    stats = dict(torch.cuda.memory_stats())
    info = {"torch": torch.__version__, "device": torch.cuda.get_device_name()}
    del tensors
    return stats, info


def expected_from_test(path):
    """The test's table of expected values: {key: value}, as the test builds it."""
    text = open(path).read()
    start = text.find("TEST(CachingAllocatorScript, ScriptedSequenceGivesPyTorchsStatistics)")
    if start < 0:
        sys.exit(f"{path}: the scripted test is not there any more")
    body = text[start:]
    body = body[: body.find("\n}\n")]
    metrics = ["current", "peak", "allocated", "freed"]
    expected = {}
    row = re.compile(r'\{"(\w+)",\s*\{([\d,\s]+)\},\s*\{([\d,\s]+)\},\s*\{([\d,\s]+)\}\}')
    for family, *pools in row.findall(body):
        for pool, values in zip(["all", "small_pool", "large_pool"], pools):
            for metric, value in zip(metrics, values.split(",")):
                expected[f"{family}.{pool}.{metric}"] = int(value)
    for key, value in re.findall(r'\{"(num_\w+|max_split_size)",\s*(-?\d+)\}', body):
        expected[key] = int(value)
    for family in ("oversize_allocations", "oversize_segments"):
        for metric in metrics:
            expected[f"{family}.{metric}"] = 0
    if len(expected) != 122:
        sys.exit(f"{path}: read {len(expected)} expected values from the test's table, not 122")
    return expected


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--script", default=SCRIPT, help="the sequence to run (default: the test's)")
    parser.add_argument("--check", action="store_true", help="compare with the test's expected values")
    args = parser.parse_args()

    stats, info = run_on_torch(read_script(args.script))
    print(json.dumps({"info": info, "memory_stats": dict(sorted(stats.items()))}, indent=1))
    if not args.check:
        return 0
    expected = expected_from_test(TEST)
    differ = 0
    for key in sorted(set(stats) | set(expected)):
        got, want = stats.get(key), expected.get(key)
        if got != want:
            differ += 1
            print(f"DIFFERS {key}: torch {got}, descent's test {want}", file=sys.stderr)
    print(f"{len(expected)} keys compared, {differ} differ", file=sys.stderr)
    return 1 if differ else 0


if __name__ == "__main__":
    sys.exit(main())
