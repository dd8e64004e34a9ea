#!/usr/bin/env python3
"""Prints the dispatch keys PyTorch and descent give the same tensors, side by
side, and exits 1 where they differ (run on the H200 host, where torch is
installed: PYTHONPATH=build/python python3 tools/compare-keys.py). CUDA tensors
are compared where both have a GPU; sim:0's keys are printed beside."""
import sys

import descent
import torch


def cases(lib, keys, cuda):
    """(name, printed key set) for the same situations in torch and descent."""
    out = [("cpu tensor", keys(lib.ones(2))),
           ("int tensor", keys(lib.arange(4)))]
    t = lib.ones(2)
    t.requires_grad_()
    out.append(("requires_grad", keys(t)))
    out.append(("a view", keys(lib.ones(2, 3)[0])))
    with lib.no_grad():
        out.append(("made under no_grad", keys(lib.ones(2))))
    with lib.inference_mode():
        out.append(("made in inference mode", keys(lib.ones(2))))
        out.append(("tls include, inference mode", str(lib._C._dispatch_tls_local_include_set())))
    out.append(("tls include", str(lib._C._dispatch_tls_local_include_set())))
    if cuda:
        out.append(("cuda tensor", keys(lib.ones(2, device="cuda"))))
        c = lib.ones(2, device="cuda")
        c.requires_grad_()
        out.append(("cuda, requires_grad", keys(c)))
        out.append(("cuda, moved there", keys(lib.ones(2).to("cuda"))))
        out.append(("cuda, a result", keys(lib.ones(2, device="cuda") + 1)))
    return out


def main():
    cuda = descent.cuda.is_available() and torch.cuda.is_available()
    ours = cases(descent, lambda t: str(descent._C._dispatch_keys(t)), cuda)
    theirs = cases(torch, lambda t: str(torch._C._dispatch_keys(t)), cuda)
    bad = 0
    for (name, d), (_, t) in zip(ours, theirs):
        same = d == t
        bad += not same
        print(f"{'ok  ' if same else 'DIFF'} {name:28} descent: {d}\n{'':33} torch:   {t}")
    excluded_torch = str(torch._C._dispatch_tls_local_exclude_set())
    print(f"info tls exclude (torch lists every backend's Autocast key; descent has CPU, CUDA, Sim):\n"
          f"{'':33} descent: {descent._C._dispatch_tls_local_exclude_set()}\n{'':33} torch:   {excluded_torch}")
    sim = descent.ones(2, device="sim:0")
    print(f"info sim:0 (descent's own backend; torch has none):\n{'':33} descent: {descent._C._dispatch_keys(sim)}")
    print(f"{len(ours) - bad} of {len(ours)} key sets agree")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
