"""Trust in the lessons (issue 41): a lesson file from outside the lessons folder runs nothing until the
user has seen its code and trusted it (Note [Trusting a lesson]); the terminal shows every setup block and
sends no control character raw (Note [Nothing runs unseen], Note [Text the terminal shows]); --check grades
in a child process whose exit or output cannot pass it (Note [The grader's child]); and the files the
lessons keep or write survive whatever is in their place (Note [Files a lesson keeps], Note [Progress that
cannot be read]).

Each test keeps its progress and its trust store in a folder of its own (XDG_DATA_HOME).
"""
import errno
import json
import os
import stat

import pytest

from descent import lessons as L
from descent.lessons import format as F
from descent.lessons import progress, store, terminal, trust

from conftest import cli

import subprocess

LESSONS_DIR = os.path.normpath(os.path.join(os.path.dirname(__file__), "..", "..", "lessons"))
ROOT = hasattr(os, "geteuid") and os.geteuid() == 0


def run_cli(*args, tmp_path, stdin="", timeout=180, lessons=LESSONS_DIR):
    env = dict(os.environ, XDG_DATA_HOME=str(tmp_path / "data"), DESCENT_LESSONS=lessons)
    return subprocess.run([cli(), "lesson", *args], capture_output=True, text=True, input=stdin,
                          timeout=timeout, env=env)


@pytest.fixture(autouse=True)
def _private_data(tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "data"))
    monkeypatch.setenv("DESCENT_LESSONS", LESSONS_DIR)
    store._warned.clear()  # each test sees its own first warning
    yield
    store._warned.clear()


def hostile(tmp_path, marker):
    """A lesson from outside the lessons folder whose setup, answer and check each write `marker`: a
    stand-in for one that reads ~/.ssh."""
    write = f"open({str(marker)!r}, 'a').write"
    return f"""# Hostile

```lesson
teaches: t
assumes: a
```

## One

```setup
{write}('setup\\n')
x = descent.ones(2)
```

```run cpu
y = x + 1
```

```predict
ask: How many elements?
answer: python {write}('answer\\n') and y.numel()
```

## Two

```exercise
goal: Make y.
check: {write}('check\\n') > 0
check: y.tolist() == [2.0, 2.0]
hint: x + 1
```

```setup
x = descent.ones(2)
```

```start
y = x
```

```solution
y = x + 1
```
"""


# [SECTION] Trust ------------------------------------------------------------------------------------------

def test_an_untrusted_lesson_runs_nothing_until_trusted(tmp_path):
    marker = tmp_path / "ran"
    path = tmp_path / "01-hostile.md"
    path.write_text(hostile(tmp_path, marker))
    solution = tmp_path / "solution.py"
    solution.write_text("y = x + 1\n")
    for args in ([str(path), "--answers", "2"], ["--validate", str(path)], ["--validate", str(tmp_path)],
                 [str(path), "--check", str(solution)], [str(path), "--handout", str(tmp_path / "out")]):
        r = run_cli(*args, tmp_path=tmp_path)
        assert r.returncode == 1, (args, r.stdout, r.stderr)
        assert r.stdout == "" and len(r.stderr.splitlines()) == 1, (args, r.stdout, r.stderr)
        assert f"descent lesson --trust {path}" in r.stderr and "is not trusted" in r.stderr, r.stderr
        assert not marker.exists(), f"{args} ran the lesson's code before it was trusted"
    assert not (tmp_path / "out").exists()
    listing = run_cli(tmp_path=tmp_path, lessons=str(tmp_path))  # $DESCENT_LESSONS: where to look, not trust
    assert listing.returncode == 0 and not marker.exists(), listing.stdout + listing.stderr
    assert f"runs nothing until you trust it: descent lesson --trust {path}" in listing.stdout, listing.stdout
    r = run_cli("hostile", "--answers", "2", tmp_path=tmp_path, lessons=str(tmp_path))
    assert r.returncode == 1 and "is not trusted" in r.stderr and not marker.exists()
    hints = run_cli(str(path), "--hints", tmp_path=tmp_path)  # reading runs nothing, so it is allowed
    assert hints.returncode == 0 and "hint: x + 1" in hints.stdout and not marker.exists()

    r = run_cli("--trust", str(path), tmp_path=tmp_path)
    assert r.returncode == 0, r.stdout + r.stderr
    assert not marker.exists(), "trusting a lesson runs nothing"
    shown = r.stdout
    for piece in ("setup", "'setup\\n'", "'answer\\n'", "'check\\n'", "y.tolist() == [2.0, 2.0]", "start",
                  "solution", "y = x + 1"):
        assert piece in shown, (piece, shown)
    assert shown.index("Step 1") < shown.index("'setup\\n'") < shown.index("Step 2") < shown.index("'check\\n'")
    store_file = tmp_path / "data" / "descent" / "trusted.json"
    files = json.loads(store_file.read_text())["files"]
    assert list(files) == [F.parse_file(str(path)).sha256]

    r = run_cli(str(path), "--answers", "2", tmp_path=tmp_path)
    assert r.returncode == 0, r.stdout + r.stderr
    assert marker.read_text() == "setup\nanswer\n"
    r = run_cli(str(path), "--check", str(solution), tmp_path=tmp_path)
    assert r.returncode == 0 and r.stdout.startswith("PASSED"), r.stdout + r.stderr
    assert marker.read_text() == "setup\nanswer\ncheck\n"  # step 2's setup writes nothing


def test_a_trusted_file_that_changed_is_untrusted_again(tmp_path):
    marker = tmp_path / "ran"
    path = tmp_path / "01-hostile.md"
    path.write_text(hostile(tmp_path, marker))
    assert run_cli("--trust", str(path), tmp_path=tmp_path).returncode == 0
    assert run_cli(str(path), "--answers", "2", tmp_path=tmp_path).returncode == 0
    marker.unlink()
    path.write_text(path.read_text().replace("y = x + 1\n```\n\n```predict", "y = x + 2\n```\n\n```predict"))
    r = run_cli(str(path), "--answers", "2", tmp_path=tmp_path)
    assert r.returncode == 1 and "changed since you trusted it" in r.stderr and len(r.stderr.splitlines()) == 1
    assert not marker.exists()
    assert run_cli("--trust", str(path), tmp_path=tmp_path).returncode == 0
    r = run_cli(str(path), "--answers", "2", tmp_path=tmp_path)
    assert r.returncode == 0 and "y = x + 2" in r.stdout, r.stdout + r.stderr
    assert marker.exists()
    files = json.loads((tmp_path / "data" / "descent" / "trusted.json").read_text())["files"]
    assert len(files) == 1, "trusting a file again replaces its earlier trust"


def test_trust_is_of_the_bytes_that_run(tmp_path):
    """The hash is of the bytes parsed, so a lesson whose file changed after it was read is judged by what
    was read; and the installed lessons are trusted, a link out of the lessons folder is not."""
    path = tmp_path / "01-hostile.md"
    path.write_text(hostile(tmp_path, tmp_path / "ran"))
    lesson = F.parse_file(str(path))
    assert trust.check(lesson) and "is not trusted" in trust.check(lesson)
    trust.record(lesson)
    assert trust.check(lesson) == ""
    edited = F.parse(path.read_text() + "\n", str(path))  # the same path, other bytes
    assert "changed since you trusted it" in trust.check(edited)
    with pytest.raises(L.Untrusted):
        trust.require(edited)
    assert trust.check(L.load("map")) == "" and trust.installed(os.path.join(LESSONS_DIR, "00-map.md"))
    assert not trust.installed(str(path))


def test_a_link_out_of_the_lessons_folder_is_not_installed(tmp_path, monkeypatch):
    folder = tmp_path / "lessons"
    folder.mkdir()
    (folder / "01-inside.md").write_text("x")
    outside = tmp_path / "outside.md"
    outside.write_text("x")
    os.symlink(outside, folder / "02-link.md")
    monkeypatch.setattr(L, "installed_folders", lambda: [str(folder)])
    assert trust.installed(str(folder / "01-inside.md"))
    assert not trust.installed(str(folder / "02-link.md"))
    assert not trust.installed(str(folder / ".." / "outside.md"))


def test_a_trust_store_that_cannot_be_read_trusts_nothing(tmp_path, capsys):
    path = tmp_path / "01-hostile.md"
    path.write_text(hostile(tmp_path, tmp_path / "ran"))
    (tmp_path / "data" / "descent" / "trusted.json").mkdir(parents=True)
    lesson = F.parse_file(str(path))
    assert "is not trusted" in trust.check(lesson) and "is not trusted" in trust.check(lesson)
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "it is a directory" in err and "Traceback" not in err
    with pytest.raises(OSError):
        trust.record(lesson)  # cannot replace a directory: the caller says why


def test_the_app_refuses_an_untrusted_lesson():
    """The app's embedded interpreter opens lessons through load(), so it refuses the same files."""
    import tempfile
    from descent import _app
    with tempfile.TemporaryDirectory() as d:
        marker = os.path.join(d, "ran")
        path = os.path.join(d, "01-hostile.md")
        with open(path, "w") as f:
            f.write(hostile(d, marker))
        reply = json.loads(_app.lesson(json.dumps({"do": "open", "name": path, "step": 0}))["lesson"])
        assert reply["kind"] == "error" and "descent lesson --trust" in reply["error"], reply
        assert not os.path.exists(marker)


# [SECTION] What the terminal shows -----------------------------------------------------------------------

SHOWN = """# Title\x1b]0;owned\x07 here

```lesson
teaches: t\r overwritten
assumes: a
```

Prose with \u202e a reversal and \x9b a C1 escape.

## One

```setup
x = descent.ones(2)
z = 7  # made here, never traced
```

```run cpu
y = x + 1  # \x1b[2K
print("out\\x1b[31mred")
```
"""


def test_the_terminal_shows_setup_and_escapes_control_characters(tmp_path):
    path = tmp_path / "01-shown.md"
    path.write_bytes(SHOWN.encode("utf-8"))
    assert run_cli("--trust", str(path), tmp_path=tmp_path).returncode == 0
    r = subprocess.run([cli(), "lesson", str(path)], capture_output=True, timeout=180,
                       env=dict(os.environ, XDG_DATA_HOME=str(tmp_path / "data"), DESCENT_LESSONS=LESSONS_DIR))
    assert r.returncode == 0, r.stdout + r.stderr
    out = r.stdout.decode("utf-8")
    raw = [c for c in out if (ord(c) < 0x20 and c not in "\n\t") or 0x7f <= ord(c) <= 0x9f
           or 0x202a <= ord(c) <= 0x202e]
    assert raw == [], raw
    for escaped in ("Title\\x1b]0;owned\\x07 here", "t\\x0d overwritten", "\\u202e a reversal", "\\x9b a C1",
                    "# \\x1b[2K", "out\\x1b[31mred"):
        assert escaped in out, (escaped, out)
    setup = out.index("z = 7  # made here, never traced")
    assert out.index("the step's setup (2 lines)") < setup < out.index("The code, run on cpu") < out.index("The trace")
    trusted = run_cli("--trust", str(path), tmp_path=tmp_path).stdout
    assert "\x1b" not in trusted and "# \\x1b[2K" in trusted


def test_shown_escapes_what_a_terminal_obeys():
    assert terminal.shown("a\x1b[2Jb\r\x08\x7f\x00\u202e\u2066\tc\nd") == \
        "a\\x1b[2Jb\\x0d\\x08\\x7f\\x00\\u202e\\u2066\tc\nd"
    assert terminal.shown("plain \u00e9 \u2500 text") == "plain \u00e9 \u2500 text"


# [SECTION] The grader's child ----------------------------------------------------------------------------

@pytest.mark.parametrize("code, words", [
    ("import os\nos._exit(0)\n", "exited with status 0 before it reported its checks"),
    ("with descent.inference_mode():\n    y = x * 2\nimport os\nos._exit(0)\n",
     "exited with status 0 before it reported its checks"),
    ("print('PASSED (0.01 s): the goal is met: Compute y = x * 2')\n", "FAILED: the goal is not met"),
    ("import os\nos.write(1, b'PASSED (0.01 s): the goal is met\\n')\nos._exit(0)\n", "before it reported"),
    ("import sys\nsys.exit(0)\n", "Your code raised SystemExit: 0"),
    ("import os, signal\nos.kill(os.getpid(), signal.SIGKILL)\n", "was killed by signal SIGKILL"),
    ("import threading, os\nthreading.Thread(target=lambda: os._exit(0)).start()\nimport time\ntime.sleep(5)\n",
     "before it reported"),
], ids=["os._exit", "exit-after-solving", "prints-PASSED", "writes-PASSED-and-exits", "sys.exit", "sigkill",
        "exit-from-a-thread"])
def test_check_cannot_be_passed_by_ending_or_printing(tmp_path, code, words):
    solution = tmp_path / "solution.py"
    solution.write_text(code)
    r = run_cli("dispatcher", "--check", str(solution), "--exercise", "1", tmp_path=tmp_path)
    assert r.returncode == 1, r.stdout + r.stderr
    assert words in r.stdout, r.stdout
    lines = r.stdout.splitlines()
    assert not any(line.startswith("PASSED") for line in lines), r.stdout  # printed text stays indented
    assert [line for line in lines if line.startswith("FAILED: ")], r.stdout
    assert "Traceback" not in r.stderr, r.stderr
    entry = json.loads((tmp_path / "data" / "descent" / "progress.json").read_text())["lessons"]["dispatcher"]
    assert entry["exercises"] == {"5": False}


def test_check_in_child_gives_the_verdict_and_keeps_the_limit(tmp_path):
    import time
    lesson = L.load("dispatcher")
    (step, ex), _ = lesson.exercises()
    good = L.runner.check_in_child(lesson, step, ex.solution.text)
    assert good["passed"] and good["reason"].startswith("the goal is met"), good
    bad = L.runner.check_in_child(lesson, step, ex.start.text)
    assert not bad["passed"] and 'This check is false: `count("floor=4") == 0`' in bad["reason"]
    began = time.perf_counter()
    endless = L.runner.check_in_child(lesson, step, "while True:\n    pass\n", limit_s=1)
    assert not endless["passed"] and "stopped after 1 s" in endless["reason"]
    assert time.perf_counter() - began < 10


def test_a_forged_report_needs_every_check():
    """The verdict is the parent's: a report that leaves a check out, renames one or is not whole fails."""
    lesson = L.load("dispatcher")
    (step, ex), _ = lesson.exercises()
    facts = {"invalid": "", "stopped": False, "output": "", "error": "", "raised": "", "seconds": 0.0,
             "checks": [{"text": t, "outcome": "true", "detail": ""} for t, _, _ in ex.checks], "done": True}
    assert L.runner.verdict(ex, facts, 1.0)[0]
    assert not L.runner.verdict(ex, dict(facts, checks=facts["checks"][:1]), 1.0)[0]
    renamed = [dict(facts["checks"][0], text="True")] + facts["checks"][1:]
    assert not L.runner.verdict(ex, dict(facts, checks=renamed), 1.0)[0]
    assert L.runner._read_report(json.dumps(facts).encode()) is not None
    assert L.runner._read_report(json.dumps(facts).encode()[:-5]) is None
    assert L.runner._read_report(json.dumps(dict(facts, done=False)).encode()) is None


# [SECTION] progress.json --------------------------------------------------------------------------------

def progress_file(tmp_path):
    p = tmp_path / "data" / "descent" / "progress.json"
    p.parent.mkdir(parents=True, exist_ok=True)
    return p


@pytest.mark.parametrize("kind", ["fifo", "directory", "deep", "wrong-types", "dev-zero", "not-json", "huge"])
def test_progress_that_cannot_be_read_is_empty_with_one_warning(tmp_path, capsys, kind):
    p = progress_file(tmp_path)
    if kind == "fifo":
        os.mkfifo(p)
    elif kind == "directory":
        p.mkdir()
    elif kind == "deep":
        p.write_text("[" * 100_000 + "]" * 100_000)
    elif kind == "wrong-types":
        p.write_text(json.dumps({"version": 1, "lessons": {"map": {"seen": ["a", None, True, -1],
                                                                   "predictions": {"0.0": "yes", "x": True},
                                                                   "exercises": [1]},
                                                           "dispatcher": 3}}))
    elif kind == "dev-zero":
        os.symlink("/dev/zero", p)
    elif kind == "not-json":
        p.write_bytes(b"\xff{")
    else:
        p.write_bytes(b" " * (progress.MAX_BYTES + 1))
    empty = {"seen": [], "predictions": {}, "exercises": {}}
    for _ in range(3):  # read at every answer: one warning all the same
        assert progress.of("map") == empty
        assert progress.load()["lessons"].get("dispatcher") is None
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "Traceback" not in err, err
    assert str(p) in err and ("cannot be read" in err or "wrong kind" in err), err


def test_progress_keeps_the_good_values_beside_bad_ones(tmp_path, capsys):
    p = progress_file(tmp_path)
    p.write_text(json.dumps({"version": 1, "lessons": {"map": {"seen": [0, "x", 2], "predictions": {"0.0": True},
                                                               "exercises": {"5": "no"}}}}))
    assert progress.of("map") == {"seen": [0, 2], "predictions": {"0.0": True}, "exercises": {}}
    err = capsys.readouterr().err
    assert "lessons.map.seen[1]" in err and "(and 1 more)" in err
    progress.mark_seen("map", 1)
    assert json.loads(p.read_text())["lessons"]["map"]["seen"] == [0, 1, 2]


def test_the_command_runs_beside_a_progress_directory(tmp_path):
    progress_file(tmp_path).mkdir()
    r = run_cli("map", "--step", "1", tmp_path=tmp_path)
    assert r.returncode in (0, 1) and "Traceback" not in r.stderr, r.stderr
    lines = r.stderr.splitlines()
    assert len(lines) == 2, lines  # it cannot be read; it cannot be saved
    assert "cannot be read: it is a directory" in lines[0] and "cannot save your progress" in lines[1]
    assert "Is a directory" in lines[1] and "the old file is kept" in lines[1]


def test_saving_into_a_folder_that_cannot_be_written_keeps_going(tmp_path, monkeypatch, capsys):
    """Root ignores permission bits, so the folder that cannot be written is one whose parent is a file."""
    blocker = tmp_path / "file"
    blocker.write_text("")
    monkeypatch.setenv("XDG_DATA_HOME", str(blocker))
    assert progress.load()["lessons"] == {}
    progress.mark_seen("map", 0)
    assert not progress.save(progress.load())
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "cannot save your progress" in err and "Not a directory" in err, err


@pytest.mark.skipif(ROOT, reason="root writes into a read-only folder all the same; the case above covers it")
def test_saving_into_a_read_only_folder_keeps_the_old_file(tmp_path, capsys):
    p = progress_file(tmp_path)
    progress.mark_seen("map", 0)
    before = p.read_bytes()
    os.chmod(p.parent, stat.S_IRUSR | stat.S_IXUSR)
    try:
        progress.mark_seen("map", 1)
        assert p.read_bytes() == before
    finally:
        os.chmod(p.parent, stat.S_IRWXU)
    assert "Permission denied" in capsys.readouterr().err


def test_a_full_disk_keeps_the_old_file(tmp_path, monkeypatch, capsys):
    p = progress_file(tmp_path)
    progress.mark_seen("map", 0)
    before = p.read_bytes()

    def full(fd):
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
    monkeypatch.setattr(os, "fsync", full)
    progress.mark_seen("map", 1)
    monkeypatch.undo()
    assert p.read_bytes() == before
    assert sorted(os.listdir(p.parent)) == ["progress.json"], "the temporary file is removed"
    err = capsys.readouterr().err
    assert f"cannot save your progress in {p}: No space left on device (the old file is kept)" in err, err


def test_a_lesson_file_that_is_not_a_file_is_refused_unread(tmp_path):
    fifo = tmp_path / "01-fifo.md"
    os.mkfifo(fifo)
    with pytest.raises(F.LessonError, match="it is a FIFO"):
        F.parse_file(str(fifo))
    with pytest.raises(F.LessonError, match="it is a device"):
        F.parse_file("/dev/zero")


# [SECTION] The handout -------------------------------------------------------------------------------------

def test_a_handout_that_cannot_be_written_is_one_line(tmp_path):
    blocker = tmp_path / "file"
    blocker.write_text("")
    r = run_cli("map", "--handout", str(blocker / "out"), tmp_path=tmp_path)
    assert r.returncode == 1 and r.stdout == "", r.stdout
    assert r.stderr.count("\n") == 1 and "cannot write the handout" in r.stderr and "Not a directory" in r.stderr


@pytest.mark.skipif(ROOT, reason="root writes into a read-only folder all the same; the case above covers it")
def test_a_handout_into_a_read_only_folder_is_one_line(tmp_path):
    out = tmp_path / "out"
    out.mkdir()
    os.chmod(out, stat.S_IRUSR | stat.S_IXUSR)
    try:
        r = run_cli("map", "--handout", str(out), tmp_path=tmp_path)
    finally:
        os.chmod(out, stat.S_IRWXU)
    assert r.returncode == 1 and r.stderr.count("\n") == 1 and "Permission denied" in r.stderr, r.stderr


def test_a_handout_on_a_full_disk_keeps_the_old_pages(tmp_path, monkeypatch, capsys):
    out = tmp_path / "out"
    out.mkdir()
    (out / "student").mkdir()
    (out / "student" / "step-01.md").write_text("the old page\n")
    lesson = L.load("dispatcher")

    def full(fd):
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
    monkeypatch.setattr(os, "fsync", full)
    assert terminal.cmd_handout(lesson, str(out), pictures=False) == 1
    monkeypatch.undo()
    assert (out / "student" / "step-01.md").read_text() == "the old page\n"
    assert sorted(os.listdir(out / "student")) == ["step-01.md"] and os.listdir(out / "teacher") == []
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "No space left on device" in err, err
    assert terminal.cmd_handout(lesson, str(out), pictures=False) == 0
    assert (out / "student" / "step-01.md").read_text() != "the old page\n"
