"""The lessons (lessons/*.md) and descent.lessons: every lesson validates end to end on this machine
(gpu steps on sim:0 without an NVIDIA GPU), the `descent lesson` command's exit codes, bad lesson files,
and a mutation test of the parser.

The mutation test runs DESCENT_LESSON_MUTATIONS random mutations of the real lesson files through the
parser (default 100,000; a full run is about 25 s on an idle 2-core VM): no crash, no hang, and every
file that does not parse gives one LessonError naming the file and a line of it.
"""
import importlib.util
import json
import os
import random
import shutil
import subprocess
import sys
import threading
import time

import pytest

import descent
from descent import lessons as L
from descent.lessons import format as F
from descent.lessons import runner

from conftest import cli

LESSONS_DIR = os.path.normpath(os.path.join(os.path.dirname(__file__), "..", "..", "lessons"))
LESSON_FILES = L.paths(LESSONS_DIR)


def run_cli(*args, tmp_path, stdin="", timeout=180):
    env = dict(os.environ, XDG_DATA_HOME=str(tmp_path / "data"), DESCENT_LESSONS=LESSONS_DIR)
    return subprocess.run([cli(), "lesson", *args], capture_output=True, text=True, input=stdin,
                          timeout=timeout, env=env)


def trusted(path, tmp_path):
    """Trusts a lesson file written by the test (Note [Trusting a lesson]): it is outside the lessons
    folder, so until then the command runs nothing of it."""
    r = run_cli("--trust", str(path), tmp_path=tmp_path)
    assert r.returncode == 0 and "Trusted" in r.stdout, r.stdout + r.stderr
    return path


@pytest.fixture(autouse=True)
def _private_progress(tmp_path, monkeypatch):
    """Progress goes to a folder of the test's own, never the user's."""
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "data"))
    monkeypatch.setenv("DESCENT_LESSONS", LESSONS_DIR)


# [SECTION] The eleven lessons ---------------------------------------------------------------------------

def test_there_are_eleven_lessons_in_order():
    names = [F.name_of(p) for p in LESSON_FILES]
    assert [n for n, _ in names] == list(range(11))
    assert [name for _, name in names] == ["map", "python-to-cpp", "tensors-and-views", "dispatcher", "autograd",
                                           "kernels", "caching-allocator", "streams", "launch", "training-step",
                                           "compiler"]


@pytest.mark.parametrize("path", LESSON_FILES, ids=lambda p: os.path.basename(p))
def test_lesson_validates(path):
    lesson = F.parse_file(path)
    assert len(lesson.predictions()) >= 2, "each lesson asks at least two predictions"
    assert len(lesson.exercises()) >= 1, "each lesson has an exercise"
    assert runner.validate(lesson) == []


def test_lessons_hold_beside_live_device_tensors():
    """The app's console may hold tensors on sim:0 when a lesson opens: the allocator's steps use a
    stream of their own and count from where they start, so their answers do not change."""
    keep = [descent.empty(n, device="sim:0") for n in (1000, 300_000, 5_000_000, 10)]
    del keep[1]  # a free block in each pool of the default stream
    lesson = F.parse_file(os.path.join(LESSONS_DIR, "06-caching-allocator.md"))
    assert runner.validate(lesson) == []
    answers = [[p["answer_text"] for p in runner.run_step(lesson, i)["predictions"]] for i in range(4)]
    assert answers == [["no", "yes"], ["4096", "large"], ["2097152", "4096"], ["2097152", "0"]]
    assert descent.sim.current_stream().stream_id == 0  # the steps' own streams were put back
    del keep


def test_every_step_opens_quickly():
    """A step opens in well under the app's 300 ms: few spans to turn into a tree (the verifier's gradchecks,
    traced, once made 37,000), and a time bound loose enough for a loaded 2-core VM. A process's first CUDA
    call starts the driver's context and CUPTI (seconds on the H200 host): that is paid before timing."""
    if descent.cuda.is_available():
        (descent.ones(1, device="cuda") + 1).cpu()
        with descent.trace():
            (descent.ones(1, device="cuda") + 1).cpu()
    for path in LESSON_FILES:
        lesson = F.parse_file(path)
        for i, step in enumerate(lesson.steps):
            if step.run is None:
                continue
            began = time.perf_counter()
            r = runner.run_step(lesson, i)
            took = time.perf_counter() - began
            assert len(r["trace"].spans()) < 3000, f"{path}: step {i + 1} traces {len(r['trace'].spans())} spans"
            if 'probe("torch")' in step.run.text and importlib.util.find_spec("torch"):
                continue  # lesson 0 imports torch in a fresh Python where it is installed: seconds of torch's own
            assert took < 2.0, f"{path}: step {i + 1} took {took:.2f} s to open"


def test_validate_all_within_two_minutes(tmp_path):
    """`descent lesson --validate` of the eleven lessons, end to end, as CI runs it (docs/BENCHMARKS.md)."""
    began = time.perf_counter()
    r = run_cli("--validate", LESSONS_DIR, tmp_path=tmp_path)
    took = time.perf_counter() - began
    assert r.returncode == 0, r.stdout + r.stderr
    assert "11 of 11 lessons valid" in r.stdout
    assert took < 120, f"--validate took {took:.1f} s"


def test_the_guides_minimal_lesson_validates(tmp_path):
    """lessons/README.md's minimal lesson, copied out as an author would, validates as it stands."""
    guide = open(os.path.join(LESSONS_DIR, "README.md"), encoding="utf-8").read()
    start = guide.index("````markdown\n") + len("````markdown\n")
    path = tmp_path / "10-my-lesson.md"
    path.write_text(guide[start:guide.index("````", start)])
    lesson = F.parse_file(str(path))
    assert (lesson.number, lesson.name, len(lesson.steps)) == (10, "my-lesson", 2)
    assert runner.validate(lesson) == []


def test_answers_are_computed_not_written():
    """No prediction's answer is a constant: each reads the run (a selector or an expression)."""
    for path in LESSON_FILES:
        for _, p in F.parse_file(path).predictions():
            if p.answer.kind == "python":
                code = p.answer.expression
                assert code.co_names or code.co_varnames, f"{path}:{p.line}: the answer reads nothing"
            else:
                assert p.answer.selector is not None


def test_map_names_the_binding_function_its_trace_points_into():
    """Lesson 0 names `op_function` as the function a call crosses into: the binding span's line in the
    trace lies inside that function of floors/binding/module.cpp."""
    import re
    lesson = L.load("map")
    i = next(k for k, st in enumerate(lesson.steps) if st.run is not None and "descent.zeros" in st.run.text)
    spans = F._selector.Spans(runner.run_step(lesson, i)["trace"])
    binding = F._selector.Selector.parse("floor=2 span=zeros").one(spans)
    root = os.path.dirname(LESSONS_DIR)
    lines = open(os.path.join(root, binding.file), encoding="utf-8").read().split("\n")[:binding.line]
    defined = next(m.group(1) for line in reversed(lines) for m in [re.match(r"^\S.*?\b(\w+)\(.*\{$", line)] if m)
    assert (binding.file, defined) == ("floors/binding/module.cpp", "op_function")
    text = open(lesson.path, encoding="utf-8").read()
    assert text.count("`op_function`") >= 2


def test_run_step_returns_plain_data():
    """What the app's embedded interpreter gets: text, numbers, lists, dicts, and the Trace."""
    lesson = L.load("dispatcher")
    r = L.run_step(lesson, 0)
    trace = r.pop("trace")
    assert trace is not None and trace.spans()
    json.dumps(r)  # everything else is plain data
    assert r["looks"][0]["span"]["name"] == "aten::mul" and r["looks"][0]["problem"] == ""
    first = r["predictions"][0]
    assert first["answer_text"] == "AutogradCPU" and first["choice"] == 1
    assert "kernel=AutogradCPU" in first["evidence"]
    verdict = L.answer(lesson, 0, 0, "b", r)
    assert verdict["right"] and verdict["answer_text"] == "AutogradCPU"
    assert not L.answer(lesson, 0, 0, "a", r)["right"]
    assert L.progress.of("dispatcher")["predictions"] == {"0.0": True}  # the first answer counts


def test_teacher_notes_stay_out_of_the_prose():
    """A ```teacher block is the teacher's alone: kept apart from the prose the class sees."""
    text = ("# T\n\n```lesson\nteaches: t\nassumes: a\n```\n\n## One\n\nSeen by all.\n\n```teacher\n"
            "Ask first.\n```\n\n```run cpu\ny = descent.ones(2)\n```\n\n```teacher\nThen reveal.\n```\n")
    step = F.parse(text, "t.md").steps[0]
    assert step.prose == "Seen by all." and step.teacher == "Ask first.\n\nThen reveal."
    with pytest.raises(F.LessonError, match=r"t.md:12: expected nothing after ```teacher"):
        F.parse(text.replace("```teacher\nAsk", "```teacher x\nAsk"), "t.md")
    assert L.load("map").steps[0].teacher  # the first lesson has notes for the class's first question


def test_a_compare_block_names_a_pytorch_profile_that_the_step_reads(tmp_path):
    """```compare: a torch.profiler file beside the lesson, read by the step's code as `pytorch`; a missing
    file is named at its line."""
    import shutil
    data = tmp_path / "data"
    data.mkdir()
    shutil.copy(os.path.join(L.directory(), "data", "torch_profile_cpu_mlp_step.json"), data / "p.json")
    text = ("# T\n\n```lesson\nteaches: t\nassumes: a\n```\n\n## One\n\n```compare\ndata/p.json\n```\n\n"
            "```run cpu\ny = descent.ones(2)\n```\n\n```predict\nask: How many backward nodes did PyTorch run?\n"
            "answer: python sum(s['name'].startswith('autograd::engine::evaluate_function') for s in pytorch.spans())\n"
            "explain: eight\n```\n")
    path = tmp_path / "t.md"
    path.write_text(text)
    lesson = F.parse(text, str(path))
    assert lesson.steps[0].compare == str(data / "p.json")
    r = L.run_step(lesson, 0)
    assert r["compare"] == str(data / "p.json") and r["predictions"][0]["answer"] == 8, r["predictions"]
    with pytest.raises(F.LessonError, match=r"t.md:11: no PyTorch profile at data/none.json"):
        F.parse(text.replace("data/p.json", "data/none.json"), str(path))


def test_the_apps_lesson_requests():
    """descent._app.lesson, what the app's Lesson tab asks: no answer before it is judged, a reveal that
    records nothing, an exercise checked with its trace, and errors as replies, never raised."""
    from descent import _app

    def ask(**req):
        r = _app.lesson(json.dumps(req))
        return r, json.loads(r["lesson"])

    _, cat = ask(do="catalog")
    assert cat["kind"] == "catalog" and [e["name"] for e in cat["lessons"]][:2] == ["map", "python-to-cpp"]
    r, step = ask(do="open", name="autograd", step=0)
    assert step["kind"] == "step" and r["trace"] is not None and step["looks"][0]["span_id"] > 0
    assert step["lesson"]["intro"] and step["predictions"][0]["choices"][0] == "MulBackward0"
    assert "answer" not in json.dumps(step["predictions"])  # nothing gives the answer away
    _, rev = ask(do="reveal", k=1)
    assert rev["revealed"] and rev["answer_text"] == "self, other" and rev["right"] is None
    _, ans = ask(do="answer", k=0, typed="2")
    assert ans["right"] is False and ans["answer_text"] == "MulBackward0" and ans["evidence_span_id"] > 0
    assert ans["progress"]["predictions"] == {"0.0": False}  # the reveal recorded nothing
    ask(do="open", name="map", step=5)
    r, chk = ask(do="check", code="y = descent.ones(4, device=device) * 2")
    assert chk["passed"] and r["trace"] is not None and chk["progress"]["exercises"] == {"5": True}
    _, other = ask(do="answer", k=0, typed="1", name="autograd", step=0)  # meant for a step no longer open
    assert other["kind"] == "error" and "step 6 of map is open now" in other["error"]
    for req, words in (({"do": "open", "name": "nope"}, "no lesson called 'nope'"),
                       ({"do": "open", "name": "map", "step": 40}, "not 41"),
                       ({"do": "answer", "k": 9}, "no prediction 10"),
                       ({"do": "dance"}, "unknown lesson request")):
        _, bad = ask(**req)
        assert bad["kind"] == "error" and words in bad["error"], bad
    assert json.loads(_app.lesson("not json")["lesson"])["kind"] == "error"


def test_catalog_lists_every_lesson_and_a_broken_one(tmp_path):
    for p in LESSON_FILES[:2]:
        (tmp_path / os.path.basename(p)).write_text(open(p, encoding="utf-8").read())
    (tmp_path / "05-broken.md").write_text("# Broken\n\nno lesson block\n")
    entries = L.catalog(str(tmp_path))
    assert [e["name"] for e in entries] == ["map", "python-to-cpp", "broken"]
    assert entries[0]["title"].startswith("The map") and entries[0]["steps"] >= 5 and not entries[0]["error"]
    assert entries[2]["error"].startswith(str(tmp_path / "05-broken.md") + ":3:")


# [SECTION] The command -----------------------------------------------------------------------------------

def test_cli_lists_the_lessons_with_progress(tmp_path):
    r = run_cli(tmp_path=tmp_path)
    assert r.returncode == 0, r.stderr
    for name in ("map", "dispatcher", "training-step"):
        assert name in r.stdout
    assert "0/8 predictions right" in r.stdout


def test_cli_answers_right_and_wrong(tmp_path):
    right = "a,b,12,7,24,a,2,b"  # lesson 2's answers do not depend on the machine
    r = run_cli("tensors-and-views", "--answers", right, tmp_path=tmp_path)
    assert r.returncode == 0, r.stdout + r.stderr
    assert "8 of 8 predictions right" in r.stdout
    assert "[5 kernels  ] aten::t" in r.stdout  # the trace trees are printed
    progress = json.load(open(tmp_path / "data" / "descent" / "progress.json"))
    entry = progress["lessons"]["tensors-and-views"]
    assert entry["seen"] == [0, 1, 2, 3, 4] and all(entry["predictions"].values())
    listing = run_cli(tmp_path=tmp_path).stdout
    assert "5/5 steps seen, 8/8 predictions right" in listing

    r = run_cli("tensors-and-views", "--answers", "b,b,12,7,24,a,2,b", tmp_path=tmp_path / "other")
    assert r.returncode == 1
    assert "Not quite: the answer is (3, 1)." in r.stdout and "7 of 8 predictions right" in r.stdout


def test_cli_answers_from_stdin_and_reset(tmp_path):
    r = run_cli("2", "--step", "2", tmp_path=tmp_path, stdin="12\n7\n")
    assert r.returncode == 0, r.stdout + r.stderr
    assert r.stdout.count("Right: ") == 2
    r = run_cli("tensors-and-views", "--reset", tmp_path=tmp_path)
    assert r.returncode == 0 and "forgot" in r.stdout
    assert "0/5 steps seen" in run_cli(tmp_path=tmp_path).stdout


PRINTER = """# A step that prints its answer

```lesson
teaches: t
assumes: a
```

## It prints

```run cpu
y = descent.ones(3)
print(f"y holds {y.numel()} elements")
```

```predict
ask: How many elements does y hold?
answer: python y.numel()
```

```predict
ask: Which floor does descent.ones reach first?
choices:
  - python
  - binding
  - dispatch
answer: python span("span=ones").floor_name
```
"""


def test_cli_prints_the_output_after_the_questions(tmp_path):
    """What a step prints may be an answer (lesson 0 lists the libraries' sizes, then asks which is the
    largest): the terminal and the handout show it once the questions were answered."""
    path = tmp_path / "01-printer.md"
    path.write_text(PRINTER)
    trusted(path, tmp_path)
    r = run_cli(str(path), "--answers", "3,b", tmp_path=tmp_path)
    assert r.returncode == 0, r.stdout + r.stderr
    out = r.stdout
    assert out.index("Predict: How many elements") < out.index("Right: 3.") < out.index("Right: binding.") \
        < out.index("It printed:\n    y holds 3 elements"), out
    r = run_cli(str(path), "--handout", str(tmp_path / "handout"), tmp_path=tmp_path)
    assert r.returncode == 0, r.stdout + r.stderr
    step = (tmp_path / "handout" / "teacher" / "step-01.md").read_text()
    assert step.index("**Predict 2.**") < step.index("y holds 3 elements")
    assert "y holds 3 elements" not in (tmp_path / "handout" / "student" / "step-01.md").read_text()


def test_cli_asks_again_after_a_typo(tmp_path):
    """At the prompt, an answer that is no answer (a letter or a number past the choices, a word for a
    number, nothing) is asked again, naming what is valid; from --answers it is judged wrong. More
    --answers than questions is the command's error, as the app's --answer is."""
    path = tmp_path / "01-printer.md"
    path.write_text(PRINTER)
    trusted(path, tmp_path)
    r = run_cli(str(path), tmp_path=tmp_path, stdin="three\n\n3\nz\n7\n2\n")
    assert r.returncode == 0, r.stdout + r.stderr
    assert "'three' is not a number. Try again" in r.stdout and "no answer typed. Try again" in r.stdout
    assert "'z' is none of the choices: type a letter a to c, a number 1 to 3, or a choice's text" in r.stdout
    assert "'7' is none of the choices" in r.stdout and "2 of 2 predictions right" in r.stdout
    r = run_cli(str(path), "--answers", "3,z", tmp_path=tmp_path)
    assert r.returncode == 1 and "('z' is none of the choices" in r.stdout and "1 of 2 predictions right" in r.stdout
    r = run_cli(str(path), "--answers", "3,b,c", tmp_path=tmp_path)
    assert (r.returncode, r.stdout) == (2, "")
    assert r.stderr == "descent lesson: --answers: 'printer' has 2 question(s), not 3\n", r.stderr
    r = run_cli("map", "--step", "2", "--answers", "b,b", tmp_path=tmp_path)
    assert r.returncode == 2 and r.stderr == "descent lesson: --answers: step 2 of 'map' has 1 question(s), not 2\n"


def test_cli_check_says_why_when_the_last_resort_ends_it(tmp_path):
    """When the time limit cannot stop the code (a C call that never returns, a trace too large to read
    back), the grader kills the child process that runs it (Note [The grader's child]) and says why, with
    what the code wrote to its stdout shown as the code's. Here the code ignores the alarm that would stop
    it, and starts a process of its own, which goes with it."""
    code = tmp_path / "stubborn.py"
    pid_file = tmp_path / "pid"
    code.write_text("import signal, os, subprocess\nsignal.signal(signal.SIGALRM, signal.SIG_IGN)\nprint('hidden')\n"
                    "os.write(1, b'written\\n')\n"
                    f"subprocess.Popen(['sh', '-c', 'echo $$ > {pid_file}; exec sleep 60'])\n"
                    "while True:\n    pass\n")
    began = time.perf_counter()
    r = run_cli("dispatcher", "--check", str(code), "--exercise", "1", "--limit", "1", tmp_path=tmp_path)
    assert r.returncode == 1, r.stdout + r.stderr
    assert "\nFAILED: stopped after 11 s: the code ran past its 1 s limit" in r.stdout, r.stdout + r.stderr
    assert r.stdout.startswith("Your code printed:\n    written\n"), r.stdout
    assert time.perf_counter() - began < 30
    pid = int(pid_file.read_text())
    try:
        with open(f"/proc/{pid}/stat") as f:
            state = f.read().rsplit(")", 1)[1].split()[0]
    except FileNotFoundError:
        state = "gone"
    assert state in ("gone", "Z", "X"), f"the code's own process {pid} outlived the grader's kill ({state})"


def test_cli_check(tmp_path):
    lesson = L.load("dispatcher")
    (_, ex), (_, library_ex) = lesson.exercises()  # inference_mode, then descent.library
    good, bad, endless, broken = (tmp_path / n for n in ("good.py", "bad.py", "endless.py", "broken.py"))
    good.write_text(ex.solution.text)
    bad.write_text(ex.start.text)
    endless.write_text("while True:\n    try:\n        pass\n    except Exception:\n        pass\n")
    broken.write_text("y = (\n")
    r = run_cli("dispatcher", "--check", str(good), tmp_path=tmp_path)
    assert r.returncode == 2 and "has 2 exercises: say which with --exercise K" in r.stderr, r.stderr
    r = run_cli("dispatcher", "--check", str(good), "--exercise", "1", tmp_path=tmp_path)
    assert r.returncode == 0 and "PASSED" in r.stdout, r.stdout + r.stderr
    library_good = tmp_path / "library_good.py"
    library_good.write_text(library_ex.solution.text)
    r = run_cli("dispatcher", "--check", str(library_good), "--exercise", "2", tmp_path=tmp_path)
    assert r.returncode == 0 and "PASSED" in r.stdout, r.stdout + r.stderr
    r = run_cli("dispatcher", "--check", str(good), "--exercise", "2", tmp_path=tmp_path)
    assert r.returncode == 1 and "found nothing: the selector 'floor=5 span=aten::neg' matched no span" in r.stdout
    r = run_cli("dispatcher", "--check", str(bad), "--exercise", "1", tmp_path=tmp_path)
    assert r.returncode == 1 and 'This check is false: `count("floor=4") == 0`' in r.stdout, r.stdout
    began = time.perf_counter()
    r = run_cli("dispatcher", "--check", str(endless), "--limit", "1", "--exercise", "1", tmp_path=tmp_path)
    assert r.returncode == 1 and "stopped after 1 s" in r.stdout, r.stdout + r.stderr
    assert time.perf_counter() - began < 30
    r = run_cli("dispatcher", "--check", str(broken), "--exercise", "1", tmp_path=tmp_path)
    assert r.returncode == 1 and "not valid Python (line 1)" in r.stdout
    r = run_cli("dispatcher", "--check", str(tmp_path / "missing.py"), "--exercise", "1", tmp_path=tmp_path)
    assert r.returncode == 2 and "cannot read" in r.stderr
    r = run_cli("no-such-lesson", tmp_path=tmp_path)
    assert r.returncode == 2 and "no lesson called 'no-such-lesson'" in r.stderr
    progress = json.load(open(tmp_path / "data" / "descent" / "progress.json"))
    assert progress["lessons"]["dispatcher"]["exercises"] == {"5": True, "6": True}  # a pass stays a pass


def test_cli_validate_reports_a_broken_lesson(tmp_path):
    src = open(os.path.join(LESSONS_DIR, "03-dispatcher.md"), encoding="utf-8").read()
    bad = tmp_path / "03-dispatcher.md"
    bad.write_text(src.replace("answer: floor=3 span=aten::sin arg.redispatch=true arg=kernel",
                               "answer: floor=3 span=aten::sinn arg.redispatch=true arg=kernel"))
    trusted(bad, tmp_path)
    r = run_cli("--validate", str(bad), tmp_path=tmp_path)
    assert r.returncode == 1
    assert "03-dispatcher.md:73: step 2: predict: the answer cannot be read: the selector" in r.stdout, r.stdout
    assert "matched no span (floor 3 has: aten::sin)" in r.stdout, r.stdout
    bad.write_text(src.replace("```start\nwith descent.no_grad():", "```start\nwith descent.inference_mode():"))
    trusted(bad, tmp_path)  # edited: trusted again
    r = run_cli("--validate", str(bad), tmp_path=tmp_path)
    assert r.returncode == 1 and "starting code already meets its goal" in r.stdout, r.stdout


def test_cli_handout(tmp_path):
    """The teacher's key (handout/teacher): each step with its picture, trace and answers. The students'
    handout beside it holds none of them (tests/python/test_lesson_answers.py)."""
    out = tmp_path / "handout" / "teacher"
    r = run_cli("map", "--handout", str(tmp_path / "handout"), tmp_path=tmp_path)
    assert r.returncode == 0, r.stderr
    lesson = L.load("map")
    files = sorted(f for f in os.listdir(out) if f.endswith(".md"))
    assert files == ["index.md"] + [f"step-{k:02d}.md" for k in range(1, len(lesson.steps) + 1)]
    step1 = (out / "step-01.md").read_text()
    # Each step that runs code has the app's picture of it, where the app is built and can draw.
    from descent.__main__ import app_path
    if os.access(app_path(), os.X_OK) and (os.environ.get("DISPLAY") or shutil.which("xvfb-run")):
        shots = sorted(f for f in os.listdir(out) if f.endswith(".png"))
        assert shots == [f"step-{k + 1:02d}.png" for k, st in enumerate(lesson.steps) if st.run is not None], r.stdout
        assert "](step-01.png)" in step1
        with open(out / "step-01.png", "rb") as f:
            assert f.read(8) == b"\x89PNG\r\n\x1a\n"
    else:
        assert "no pictures of the steps" in r.stdout
    assert "```text\n" in step1 and "*LaunchKernel" not in step1.split("## Answers")[0].split("```text")[0]
    assert "LaunchKernel  kernel=mul_float32" in step1  # the trace tree
    assert "## Answers (from this run)" in step1 and "mul_float32" in step1.split("## Answers")[1]


# [SECTION] The format, malformed ------------------------------------------------------------------------

MINIMAL = """# T

```lesson
teaches: t
assumes: a
```

## S

```run cpu
y = descent.ones(2) + 1
```

```predict
ask: q
choices:
  - CPU
  - AutogradCPU
answer: floor=3 span=aten::add arg=kernel
```
"""


@pytest.mark.parametrize("mutation, line, words", [
    (lambda s: s.replace("# T\n", "T\n"), 1, "expected the lesson's title"),
    (lambda s: s.replace("```lesson", "```lessn"), 3, "expected a ```lesson block"),
    (lambda s: s.replace("assumes: a\n", ""), 3, "needs 'assumes:'"),
    (lambda s: s.replace("teaches: t", "teach: t"), 4, "unknown key 'teach'"),
    (lambda s: s.replace("```run cpu", "```run tpu"), 10, "expected ```run [cpu|gpu] [raises]"),
    (lambda s: s.replace("y = descent.ones(2) + 1", "y = descent.ones(2) +"), 11, "not valid Python"),
    (lambda s: s.replace("arg=kernel", "arg=kernel nth=zero"), 19, "after 'nth='"),
    (lambda s: s.replace("answer: floor=3", "answer: flor=3"), 19, "unknown key 'flor'"),
    (lambda s: s.replace("answer: floor=3 span=aten::add arg=kernel", "answer: python (("), 19, "Python expression"),
    (lambda s: s.replace("  - AutogradCPU\n", ""), 16, "at least two choices"),
    (lambda s: s.replace("  - AutogradCPU", "  AutogradCPU"), 18, "expected a line '- choice'"),
    (lambda s: s + "```look\n", 21, "never closed"),
    (lambda s: s.replace("```run cpu\ny = descent.ones(2) + 1\n```\n", ""), 8, "```run block or an ```exercise"),
    (lambda s: s + "\n```start\nx = 1\n```\n", 22, "must follow its ```exercise block"),
    (lambda s: s.replace("## S", "## "), 8, "expected a step title"),
    (lambda s: s + "\n```exercise\ngoal: g\ncheck: True\nhint: h\n```\n```start\nx = 1\n```\n", 29,
     "expected a ```solution block"),
    (lambda s: s + "\n```exercise\ngoal: g\nhint: h\n```\n", 22, "at least one 'check:'"),
    (lambda s: s.replace("ask: q", "ask: q\nask: r"), 16, "'ask:' is given twice"),
    (lambda s: s.replace("answer: floor=3 span=aten::add arg=kernel", "answer: floor=3 span=aten::add"), 19,
     "expected 'arg=KEY'"),
    (lambda s: s.replace('span=aten::add arg', 'span="aten::add arg'), 19, "closing \""),
])
def test_malformed_lesson_names_file_and_line(mutation, line, words):
    assert F.parse(MINIMAL, "m.md").steps  # the unmutated text parses
    with pytest.raises(F.LessonError) as e:
        F.parse(mutation(MINIMAL), "lessons/m.md")
    assert e.value.path == "lessons/m.md" and e.value.line == line, str(e.value)
    assert words in e.value.message and str(e.value).startswith(f"lessons/m.md:{line}: ")


def test_bytes_that_are_not_utf8_name_their_line():
    with pytest.raises(F.LessonError) as e:
        F.parse(MINIMAL.encode().replace(b"assumes: a", b"assumes: \xff"), "x.md")
    assert e.value.line == 5 and "UTF-8" in e.value.message


def test_time_limit_off_the_main_thread():
    """The app runs lessons on a thread of its own: there a watchdog stops the code."""
    outcome = []

    def student():
        try:
            with runner.time_limit(0.5):
                while True:
                    pass
        except runner.LimitExceeded:
            outcome.append("stopped")
    t = threading.Thread(target=student)
    began = time.perf_counter()
    t.start()
    t.join(30)
    assert outcome == ["stopped"] and time.perf_counter() - began < 10


def test_selector_words_and_tolerances():
    s = F._selector.Selector.parse('floor=dispatch span="aten::add" under=\'y = x + 1\' arg.redispatch=true nth=-1 '
                                   'arg=kernel')
    assert (s.floor, s.span, s.under, s.args, s.nth, s.arg) == (3, "aten::add", "y = x + 1",
                                                               [("redispatch", "true")], -1, "kernel")
    T = F._selector.Tolerance.parse
    assert T("10%").accepts(105, 100) and not T("10%").accepts(111, 100)
    assert T("x3").accepts(290, 100) and not T("x3").accepts(20, 100) and T("5").accepts(96, 100)
    with pytest.raises(F._selector.SelectorError):
        T("x0.5")


def test_kernel_selector_finds_cuda_kernels_by_correlation():
    """On a GPU the device's span is named by the kernel's C++ symbol (CUPTI's name); `kernel=` joins it to
    its launch, so the lessons' gpu steps read it on cuda:0 as on sim:0. The H200 recording shows it."""
    trace = descent._C._load_trace(os.path.join(os.path.dirname(__file__), "..", "tracer", "data",
                                                "h200_cuda_add.descent"))
    spans = F._selector.Spans(trace)
    add = F._selector.Selector.parse("floor=9 kernel=add_float32").one(spans)
    assert "BinaryLoop<float, descent::kernels::AddF," in add.name and add.args["correlation"] == 2
    launch = F._selector.Selector.parse("floor=8 span=*LaunchKernel kernel=fill_*").one(spans)
    assert launch.name == "cudaLaunchKernel" and launch.args["kernel"] == "fill_float32"
    assert len(F._selector.Selector.parse("floor=9 kernel=*_float32").all(spans)) == 2


# [SECTION] Mutations: hostile lesson files through the parser --------------------------------------------

FRAGMENTS = ["```", "````", "~~~", "```run cpu", "```run gpu raises", "```predict", "```exercise", "```start",
             "```solution", "```look", "```setup", "```lesson", "## ", "# ", "## Step", "- ", "  - x", "choices:",
             "answer: count", "answer: python", "answer: floor=3 arg=", "check: (", "check: True", "hint:",
             "tolerance: x", "tolerance: 5%", "ask:", "goal:", "limit: 0", "limit: 1e400", "device: tpu",
             "span=\"", "nth=0", "arg.=x", "floor=99", "    indented", "\t", ":", "=", "\\", "'", '"', "*", "[",
             "x" * 300, "é", "\u2028", "\r", ""]


def mutate(rng, lines):
    """A copy of `lines` with one to three random edits: lines dropped, repeated, swapped, cut, inserted
    from FRAGMENTS, or characters changed."""
    lines = list(lines)
    for _ in range(rng.randint(1, 3)):
        op = rng.randrange(9)
        n = len(lines)
        k = rng.randrange(n) if n else 0
        if op == 0 and n:
            del lines[k]
        elif op == 1 and n:
            lines.insert(k, lines[k])
        elif op == 2 and n > 1:
            j = rng.randrange(n)
            lines[k], lines[j] = lines[j], lines[k]
        elif op == 3:
            lines.insert(k, rng.choice(FRAGMENTS))
        elif op == 4 and n:
            line = lines[k]
            p = rng.randrange(len(line) + 1)
            lines[k] = line[:p] + rng.choice(FRAGMENTS) + line[p:]
        elif op == 5 and n:
            line = lines[k]
            if line:
                p = rng.randrange(len(line))
                lines[k] = line[:p] + chr(rng.choice([0, 9, 32, 34, 35, 39, 45, 58, 61, 96, 126, 0xE9, 0xFFFF,
                                                       rng.randrange(32, 127)])) + line[p + 1:]
        elif op == 6:
            lines = lines[:k]
        elif op == 7 and n:
            j = min(n, k + rng.randint(1, 20))
            del lines[k:j]
        elif op == 8 and n:
            lines[k] = "  " + lines[k] if rng.random() < 0.5 else lines[k].lstrip()
    return lines


def test_mutated_lessons_give_one_error_naming_a_line():
    count = int(os.environ.get("DESCENT_LESSON_MUTATIONS", "100000"))
    rng = random.Random(21)
    sources = [(p, open(p, encoding="utf-8").read().split("\n")) for p in LESSON_FILES]
    failures, errors, slowest = [], 0, 0.0
    began = time.perf_counter()
    with runner.time_limit(600):  # a hang fails the test instead of stopping the run
        for i in range(count):
            path, lines = sources[i % len(sources)]
            text = "\n".join(mutate(rng, lines))
            data = text.encode("utf-8", "surrogatepass")
            if i % 97 == 0:  # now and then, bytes that are not UTF-8
                cut = rng.randrange(len(data) + 1)
                data = data[:cut] + bytes([rng.choice([0x80, 0xC3, 0xFF])]) + data[cut:]
            t0 = time.perf_counter()
            try:
                F.parse(data, path)
            except F.LessonError as e:
                errors += 1
                if not (1 <= e.line <= len(lines) + 25 and str(e).startswith(f"{path}:{e.line}: ") and e.message):
                    failures.append((i, str(e)[:200]))
            except Exception as e:  # noqa: BLE001  (any other exception is a parser bug)
                failures.append((i, f"{type(e).__name__}: {e}"[:200]))
            slowest = max(slowest, time.perf_counter() - t0)
    took = time.perf_counter() - began
    print(f"{count} mutations in {took:.1f} s: {errors} gave a LessonError, slowest parse {slowest * 1e3:.1f} ms")
    assert not failures, failures[:5]
    assert errors > count // 4  # the mutations do break files
    assert slowest < 2.0
