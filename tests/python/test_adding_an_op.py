"""docs/ADDING_AN_OP.md, done: its code blocks, as written there, applied to a
scratch copy of the tree, which is then built and runs the new op (log1p) on
the CPU and sim:0, against numpy, through autograd and the verifier.

The build is a slow test, not in the default run (the placing of the blocks
is, and takes a tenth of a second): it configures and builds the library
and the Python extension from nothing (7m41s on two cores, measured under load). Run it
with DESCENT_SLOW_TESTS=1:

    DESCENT_SLOW_TESTS=1 PYTHONPATH=build/python python3 -m pytest -q tests/python/test_adding_an_op.py

The blocks' places are kept here, one anchor a block (the line the block goes
after); a block of the document that names no known place, or an anchor that
is not in the tree exactly once, fails the test, so the document and this
test move together.

[SECTION] The document's blocks
[SECTION] The scratch build
"""
import os
import pathlib
import re
import shutil
import subprocess
import sys

import pytest

ROOT = pathlib.Path(__file__).resolve().parent.parent.parent
DOC = ROOT / "docs" / "ADDING_AN_OP.md"

slow = pytest.mark.skipif(os.environ.get("DESCENT_SLOW_TESTS") != "1",
                          reason="slow (a scratch build from nothing): DESCENT_SLOW_TESTS=1 runs it")


# [SECTION] The document's blocks -------------------------------------------------------------

# (file, where) as a block's first line names them -> the line it goes after (a regex, matched once)
ANCHORS = {
    ("floors/dispatch/ops.h", "a row of DESCENT_FORALL_OPS"): r'^  _\(log2, "aten::log2\(',
    ("floors/kernels/elementwise.h", "beside Log2F"): r"^struct Log2F\b[^\n]*\n(?:.*\n)*?\};$",
    ("floors/kernels/elementwise.h", "a row of DESCENT_FORALL_UNARY_FNS"): r"^  _\(log2, Log2F\) +\\$",
    ("floors/autograd/derivatives_pointwise.cpp", "the backward function"): r"^void log2_backward\(.*$",
    ("floors/autograd/derivatives_pointwise.cpp", "a row of the derivatives' table"):
        r'^    \{Op::log2, "Log2Backward0".*$',
    ("tests/python/learner_reference.py", "LEARNER_REFERENCE and LEARNER_FLOAT_ONLY"):
        (r'^    "log10": np\.log10, "log2": np\.log2,$', r"^LEARNER_FLOAT_ONLY = .*$"),
    ("tests/python/test_autograd.py", "a gradcheck case"): r'^    "log2": \(lambda.*$',
}
HEAD = re.compile(r"^(?://|#) (?P<file>[\w./-]+): (?P<where>.+)$")


def blocks():
    """The document's code blocks that name a file: (file, where, lines)."""
    out = []
    text = DOC.read_text(encoding="utf-8")
    for m in re.finditer(r"^```(?:cpp|python)\n(.*?)^```$", text, re.M | re.S):
        lines = m.group(1).rstrip("\n").split("\n")
        head = HEAD.match(lines[0])
        if head:
            out.append((head["file"], head["where"], lines[1:]))
    return out


def insert_after(text, anchor, lines, what):
    found = list(re.finditer(anchor, text, re.M))
    assert len(found) == 1, f"{what}: the anchor {anchor!r} is in the file {len(found)} times, not once"
    end = text.find("\n", found[0].end())  # after the whole line the anchor ends in
    end = len(text) if end < 0 else end
    return text[:end] + "\n" + "\n".join(lines) + text[end:]


def apply(scratch):
    seen = set()
    for file, where, lines in blocks():
        key = (file, where)
        assert key in ANCHORS, f"docs/ADDING_AN_OP.md has a block for {file} ({where}) this test does not place"
        seen.add(key)
        path = scratch / file
        text = path.read_text(encoding="utf-8")
        anchor = ANCHORS[key]
        if isinstance(anchor, tuple):  # one line a place: a dict entry, then a set
            for a, line in zip(anchor, lines):
                text = insert_after(text, a, [line], f"{file} ({where})")
        else:
            text = insert_after(text, anchor, lines, f"{file} ({where})")
        path.write_text(text, encoding="utf-8")
    assert seen == set(ANCHORS), f"the document lost blocks: {sorted(set(ANCHORS) - seen)}"
    # ... and the count below the table
    ops = scratch / "floors/dispatch/ops.h"
    text = ops.read_text(encoding="utf-8")
    n = int(re.search(r"static_assert\(kNumOps == (\d+),", text)[1])
    ops.write_text(text.replace(f"kNumOps == {n},", f"kNumOps == {n + 1},"), encoding="utf-8")


def test_the_document_names_every_place_once(tmp_path):
    """Fast, and in the default run: every block of the document has its place in the tree, once."""
    for file in {f for f, _ in ANCHORS} | {"floors/dispatch/ops.h"}:
        (tmp_path / file).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(ROOT / file, tmp_path / file)
    apply(tmp_path)
    # each block whole, on lines of its own, and the lines around it whole too
    added = {}
    for file, _, lines in blocks():
        added.setdefault(file, []).extend(lines)
    for file, lines in added.items():
        after = (tmp_path / file).read_text(encoding="utf-8").split("\n")
        before = (ROOT / file).read_text(encoding="utf-8").split("\n")
        for line in lines:
            assert line in after, (file, line)
        kept = [l for l in after if l not in lines]
        assert all(l in before for l in kept if "kNumOps ==" not in l), file


# [SECTION] The scratch build -----------------------------------------------------------------

def run(args, **kw):
    p = subprocess.run(args, capture_output=True, text=True, **kw)
    assert p.returncode == 0, f"{' '.join(map(str, args))}:\n{p.stdout[-4000:]}\n{p.stderr[-4000:]}"
    return p.stdout


@slow
def test_the_worked_example_builds_and_runs(tmp_path):
    scratch = tmp_path / "descent"
    files = subprocess.run(["git", "ls-files", "--cached", "--others", "--exclude-standard"], cwd=ROOT,
                           capture_output=True, text=True, check=True).stdout.split("\n")
    for rel in filter(None, files):
        src = ROOT / rel
        if src.is_file() and not src.is_symlink():
            (scratch / rel).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(src, scratch / rel)
    apply(scratch)
    build = scratch / "build"
    run(["cmake", "-S", scratch, "-B", build, "-DCMAKE_BUILD_TYPE=Release", "-DDESCENT_UI=OFF", "-DDESCENT_CUDA=OFF",
         "-DDESCENT_TESTS=OFF"])
    run(["cmake", "--build", build, "-j", str(os.cpu_count() or 2), "--target", "descent_C", "descent_python"],
        timeout=3000)
    env = dict(os.environ, PYTHONPATH=str(build / "python"), DESCENT_CLI=str(build / "descent"),
               PYTHONDONTWRITEBYTECODE="1")
    out = run([sys.executable, "-c", """
import numpy as np, descent
x = descent.rand(4, 5) * 3
y = descent.log1p(x)
assert np.allclose(y.numpy(), np.log1p(x.numpy()), rtol=1e-6), (y, x)
assert x.log1p().tolist() == y.tolist()
assert descent.log1p(descent.tensor([0, 1])).dtype is descent.float32
x.requires_grad_(True)
z = x.log1p()
assert type(z.grad_fn).__name__ == "Log1PBackward0", z.grad_fn
z.sum().backward()
assert np.allclose(x.grad.numpy(), 1 / (1 + x.detach().numpy()), rtol=1e-6)
s = descent.log1p(x.detach().to("sim:0"))
assert s.cpu().tolist() == y.tolist()
print("log1p ok")
"""], env=env)
    assert "log1p ok" in out
    verdict = run([build / "descent", "verify", "--op", "log1p"], env=env)
    assert "log1p" in verdict
    run([build / "descent", "verify", "--op", "log1p", "--device", "sim:0"], env=env)
    run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-k", "log1p",
         scratch / "tests/python/test_ops.py", scratch / "tests/python/test_autograd.py"], env=env, cwd=scratch)
