"""tools/check-docs (docs that cannot drift): it passes on the tree, and it
fails, one line per problem, on broken examples made here: a section index out
of order, a Note nobody wrote, a trace whose decision changed, a trace nobody
named, a reading path through a function that does not exist. The traces are
checked against a stand-in `build/descent` that prints a stored trace, so
these tests need no build; ctest's `docs` runs the real commands.

[SECTION] The tree
[SECTION] Section indexes and Notes
[SECTION] Traces
[SECTION] The reading path and the size table
"""
import os
import pathlib
import stat
import subprocess
import sys
import textwrap

ROOT = pathlib.Path(__file__).resolve().parent.parent.parent
CHECK = ROOT / "tools" / "check-docs"


def check(root, *only, build=None):
    args = [sys.executable, str(CHECK), "--root", str(root), "--only", ",".join(only)]
    if build is not None:
        args += ["--build", str(build)]
    return subprocess.run(args, capture_output=True, text=True, timeout=300)


def write(root, rel, text):
    p = root / rel
    p.parent.mkdir(parents=True, exist_ok=True)
    p.write_text(textwrap.dedent(text).lstrip("\n"), encoding="utf-8")
    return p


# [SECTION] The tree ------------------------------------------------------------------------

def test_the_tree_passes_every_check_but_the_traces():
    p = check(ROOT, "sections", "notes", "sizes", "reading")
    assert p.returncode == 0, p.stdout + p.stderr
    assert p.stdout.startswith("check-docs: ok")


# [SECTION] Section indexes and Notes -------------------------------------------------------

SECTIONED = """
    // A file with an index.
    //
    // [SECTION] First: what comes first
    // [SECTION] Second
    // [SECTION] Third
    int a;

    // [SECTION] First ------------------------------------------------------
    int b;
    // [SECTION] Second -----------------------------------------------------
    int c;
    // [SECTION] Third (Note [Cited]) -----------------------------------------
    int d;
    """


def test_a_matching_section_index_passes(tmp_path):
    write(tmp_path, "a.cpp", SECTIONED)
    p = check(tmp_path, "sections")
    assert p.returncode == 0, p.stdout


def test_a_section_index_out_of_order_fails(tmp_path):
    write(tmp_path, "a.cpp", SECTIONED.replace("// [SECTION] Second\n    // [SECTION] Third\n",
                                               "// [SECTION] Third\n    // [SECTION] Second\n"))
    p = check(tmp_path, "sections")
    assert p.returncode == 1
    (line,) = p.stdout.splitlines()
    assert line.startswith("a.cpp:4: the index lists 'Third' out of order"), line


def test_a_section_missing_from_the_index_and_one_that_is_gone_fail(tmp_path):
    write(tmp_path, "b.py", '''
        """A module.

        [SECTION] One
        [SECTION] Gone
        """
        # [SECTION] One ---------------------------------------------------
        # [SECTION] Two ---------------------------------------------------
        x = 1
        # [SECTION] Three, without its rule
        ''')
    p = check(tmp_path, "sections")
    assert p.returncode == 1
    assert p.stdout.splitlines() == [
        "b.py:9: a [SECTION] line in the body without its ---- rule (a divider ends in ----)",
        "b.py:4: the index lists 'Gone', but no divider has that name",
        "b.py:7: the divider 'Two' is missing from the index at the top of the file",
    ]


def test_a_note_nobody_wrote_fails_and_a_wrapped_name_resolves(tmp_path):
    write(tmp_path, "n.cpp", """
        // Note [A note with a long name]
        // ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
        // Text.
        int x;  // Note [A note with a long name], and Note [Nobody wrote this]
        // See Note [A note with a
        // long name].
        """)
    p = check(tmp_path, "notes")
    assert p.returncode == 1
    assert p.stdout.splitlines() == ["n.cpp:4: Note [Nobody wrote this] is referred to, but no file has that note"]


# [SECTION] Traces --------------------------------------------------------------------------

SHOWN = """
    # A project

    ```
    $ build/descent trace "x + 1"
    descent trace: 4 spans; tracer cost 30.2 ns per span (included in the times below); clock: tsc (invariant)
    [1 python   ] x + 1                                                      82.9 us
      [2 binding  ] add  overload=aten::add.Tensor python=Tensor.__add__     31.0 us
        [3 dispatch ] aten::add  keyset=CPU|AutogradCPU kernel=AutogradCPU    27.9 us
          [4 autograd ] aten::add  graph=none: no input requires grad         23.4 us
    ```
    """

MANIFEST = """
    in: README.md
    at: $ build/descent trace "x + 1"
    run: build/descent trace "x + 1"
    """


def fake_build(tmp_path, output):
    """A build directory whose `descent` prints `output`, whatever it is asked."""
    build = tmp_path / "fakebuild"
    build.mkdir()
    (build / "out.txt").write_text(textwrap.dedent(output).lstrip("\n"), encoding="utf-8")
    d = build / "descent"
    d.write_text('#!/bin/sh\ncat "$(dirname "$0")/out.txt"\n')
    d.chmod(d.stat().st_mode | stat.S_IEXEC)
    return build


def relines(text, old, new):
    assert old in text
    return text.replace(old, new)


def test_a_trace_run_again_with_other_times_passes(tmp_path):
    write(tmp_path, "README.md", SHOWN)
    write(tmp_path, "docs/traces.txt", MANIFEST)
    out = relines(SHOWN.split("```")[1], "82.9 us", "1.2 ms").replace("$ build", "# build")
    out = relines(out, "30.2 ns per span", "55.0 ns per span")
    p = check(tmp_path, "traces", build=fake_build(tmp_path, out))
    assert p.returncode == 0, p.stdout


def test_a_trace_with_a_changed_decision_fails(tmp_path):
    write(tmp_path, "README.md", SHOWN)
    write(tmp_path, "docs/traces.txt", MANIFEST)
    out = relines(SHOWN.split("```")[1], "kernel=AutogradCPU", "kernel=CPU")
    p = check(tmp_path, "traces", build=fake_build(tmp_path, out))
    assert p.returncode == 1
    (line,) = p.stdout.splitlines()
    assert line == ("README.md:8: span 3 shown is [3] aten::add  keyset=CPU|AutogradCPU kernel=AutogradCPU; "
                    "the command now gives [3] aten::add  keyset=CPU|AutogradCPU kernel=CPU"), line


def test_a_trace_with_a_span_more_fails(tmp_path):
    write(tmp_path, "README.md", SHOWN)
    write(tmp_path, "docs/traces.txt", MANIFEST)
    out = SHOWN.split("```")[1] + "        [3 dispatch ] aten::add  redispatch=true keyset=CPU kernel=CPU   1 us\n"
    out = relines(out, "4 spans", "5 spans")
    p = check(tmp_path, "traces", build=fake_build(tmp_path, out))
    assert p.returncode == 1
    assert p.stdout.splitlines() == [
        "README.md:5: the trace shows 4 spans; the command now records 5",
        "README.md:9: span 5 shown is (none); the command now gives [3] aten::add  redispatch=true keyset=CPU kernel=CPU",
    ]


def test_an_excerpt_is_found_in_order_and_a_varying_argument_is_not_compared(tmp_path):
    write(tmp_path, "README.md", """
        ```
        $ build/descent trace "y"
        ...
          [7 streams  ] enqueue  stream=0 queue_depth=2     589 ns
            [8 launch   ] simLaunchKernel  kernel=add_float32 correlation=2     457 ns
              -> device: add_float32  sim:0 stream 0, 2.68 ms after the launch began     10.9 us
        ...
        ```
        """)
    write(tmp_path, "docs/traces.txt", MANIFEST.replace('"x + 1"', '"y"') + "vary: queue_depth\n")
    out = """
        [1 python   ] y     1 us
          [7 streams  ] enqueue  stream=0 queue_depth=1     589 ns
            [8 launch   ] simLaunchKernel  kernel=fill_float32 correlation=1     457 ns
          [7 streams  ] enqueue  stream=0 queue_depth=1     589 ns
            [8 launch   ] simLaunchKernel  kernel=add_float32 correlation=2     457 ns
              -> device: add_float32  sim:0 stream 0, 9.1 us after the launch began     1.9 us
        """
    assert check(tmp_path, "traces", build=fake_build(tmp_path, out)).returncode == 0
    broken = tmp_path / "broken"
    broken.mkdir()
    write(broken, "README.md", (tmp_path / "README.md").read_text())
    write(broken, "docs/traces.txt", (tmp_path / "docs/traces.txt").read_text())
    p = check(broken, "traces", build=fake_build(broken, out.replace("add_float32 correlation=2", "add_float32 correlation=3")))
    assert p.returncode == 1
    (line,) = p.stdout.splitlines()
    assert line == ("README.md:5: span [8] simLaunchKernel  kernel=add_float32 correlation=2 is not what the command "
                    "gives there ([8] simLaunchKernel  kernel=fill_float32 correlation=1)"), line


def test_a_trace_nobody_named_and_an_entry_for_nothing_fail(tmp_path):
    write(tmp_path, "README.md", SHOWN)
    write(tmp_path, "tracer/README.md", "```\n[5 kernels  ] aten::add  variant=optimized   1 us\n```\n")
    write(tmp_path, "docs/traces.txt", MANIFEST + "\nin: ui/README.md\nat: nothing\nrun: build/descent x\n")
    p = check(tmp_path, "traces", build=fake_build(tmp_path, SHOWN.split("```")[1]))
    assert p.returncode == 1
    assert p.stdout.splitlines() == [
        "docs/traces.txt:5: no trace in ui/README.md has the line 'nothing'",
        "tracer/README.md:2: a trace is shown here that docs/traces.txt does not name",
    ]


def test_a_trace_recorded_on_the_h200_is_parsed_and_skipped_without_a_gpu(tmp_path):
    if subprocess.run("nvidia-smi -L", shell=True, capture_output=True).returncode == 0:
        import pytest
        pytest.skip("this machine has a GPU: the trace would be run")
    write(tmp_path, "README.md", SHOWN)
    write(tmp_path, "docs/traces.txt", MANIFEST + "needs: cuda\n")
    p = check(tmp_path, "traces", build=fake_build(tmp_path, "nothing like the trace\n"))
    assert p.returncode == 0, p.stdout
    assert "README.md:4: skipped: recorded on the H200 host" in p.stdout


# [SECTION] The reading path and the size table ---------------------------------------------

def test_a_reading_path_through_a_missing_function_fails(tmp_path):
    write(tmp_path, "f.cpp", "int call_me(int x) {\n  return helper(x);\n}\nint declared(int);\n")
    write(tmp_path, "g.py", "def walk(x):\n    return x\n")
    items = ["`call_me` in `f.cpp`", "`helper` in `f.cpp`", "`declared` in `f.cpp`", "`walk` in `g.py`",
             "`walk` in `nope.py`"] + ["`call_me` in `f.cpp`"] * 5
    write(tmp_path, "README.md", "## A reading path\n\n" + "".join(f"{k + 1}. {s}: why.\n" for k, s in enumerate(items)))
    p = check(tmp_path, "reading")
    assert p.returncode == 1
    assert p.stdout.splitlines() == [
        "README.md:4: f.cpp defines no function helper",
        "README.md:5: f.cpp defines no function declared",
        "README.md:7: nope.py does not exist",
    ]


def test_a_size_table_out_of_date_fails(tmp_path):
    lines = subprocess.run([sys.executable, str(ROOT / "tools" / "size-table"), "--root", str(ROOT)],
                           capture_output=True, text=True, check=True).stdout.splitlines()
    # A copy of the tree's kernels folder, one line short of what the table says.
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    k = next(i for i, l in enumerate(lines) if "`floors/kernels/`" in l)
    n = int(lines[k].split("|")[4])
    stale = readme.replace(lines[k], lines[k].replace(f"| {n} |", f"| {n - 1} |"))
    assert stale != readme
    # The check reads the tree it is given: give it this tree with the stale README.
    for rel in ("floors", "tracer", "ui"):
        os.symlink(ROOT / rel, tmp_path / rel)
    write(tmp_path, "README.md", stale)
    p = check(tmp_path, "sizes")
    assert p.returncode == 1
    (line,) = p.stdout.splitlines()
    assert line.endswith(f"`floors/kernels/` has {n} lines in the tree, the table says {n - 1} "
                         "(run tools/size-table --write)"), line
