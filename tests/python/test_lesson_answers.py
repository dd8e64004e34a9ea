"""No answer given away, and the format refuses what it cannot read (issue 43).

Each leak the issue found is a test here, read off what a student sees: the terminal's transcript, the
students' handout, the validator's warnings. Then the format's refusals (an unknown block kind, an unclosed
fence, an exercise whose checks pass on less than its goal), a typed answer with a unit, `--check` naming
its lesson, and `--watch` giving a verdict for each save.
"""
import os
import signal
import subprocess
import time

import pytest

from descent import lessons as L
from descent.lessons import runner
from descent.lessons import selector as S

from conftest import cli

# The lessons folder, the CLI runner, trusting a written lesson and the private progress folder (an
# autouse fixture) are test_lessons.py's.
from test_lessons import LESSONS_DIR, _private_progress, run_cli, trusted  # noqa: F401  (a fixture)


def between(text, start, end):
    """The part of `text` after the first `start` and before the next `end`."""
    a = text.index(start) + len(start)
    return text[a:text.index(end, a)]


# [SECTION] The evidence after a question ---------------------------------------------------------------

@pytest.mark.parametrize("name,later", [("dispatcher", "fallthrough="), ("autograd", "saved=")])
def test_the_evidence_shows_only_the_argument_asked(tmp_path, name, later):
    """Lesson 3 step 1 and lesson 4 step 1: the first question's evidence was the span's whole line, which
    holds the second question's answer (fallthrough=, saved=)."""
    r = run_cli(name, "--step", "1", "--answers", "a,a", tmp_path=tmp_path)
    seen = between(r.stdout, "Predict:", "Predict:")  # all the student sees before the second question
    assert "The evidence, from this run's trace:" in seen, r.stdout
    assert later not in seen, seen


def test_every_evidence_line_holds_one_argument_at_most():
    for path in L.paths(LESSONS_DIR):
        lesson = L.load(path)
        for i, step in enumerate(lesson.steps):
            if step.run is None or not step.predictions:
                continue
            r = L.run_step(lesson, i)
            for p, entry in zip(step.predictions, r["predictions"]):
                for line in entry["evidence"].splitlines():
                    if line.startswith("..."):
                        continue
                    args = line.split("] ", 1)[1].split("  ", 1)[1:]  # what follows the span's name
                    assert not args or args[0].count("=") <= 1, (lesson.name, i + 1, line)
                    if p.answer.kind == "value":
                        assert args and args[0].startswith(p.answer.selector.arg + "="), (lesson.name, i + 1, line)


# [SECTION] The validator's warnings ------------------------------------------------------------------------

LEAKY = """# Leaky

```lesson
teaches: Nothing.
assumes: Nothing.
```

## The kernel is {answer}

The dispatcher picks AutogradCPU first.

```setup
x = descent.ones(2)
```

```run cpu
y = x * 2
```

```predict
ask: Which kernel runs first?
choices:
  - CPU
  - AutogradCPU
answer: floor=3 span=aten::mul nth=1 arg=kernel
{allow}
```

## Again

```run cpu
y = x * 2
```

```setup
x = descent.ones(2)
```

```predict
ask: And the redispatch?
choices:
  - CPU
  - AutogradCPU
answer: floor=3 span=aten::mul arg.redispatch=true arg=kernel
```
"""


def test_the_validator_warns_of_an_answer_in_the_prose_and_of_a_rerun(tmp_path):
    path = tmp_path / "01-leaky.md"
    path.write_text(LEAKY.format(answer="chosen", allow=""))
    trusted(path, tmp_path)
    r = run_cli("--validate", str(path), tmp_path=tmp_path)
    assert r.returncode == 0, r.stdout  # warnings do not fail a lesson
    assert "2 warnings" in r.stdout, r.stdout
    assert "01-leaky.md:20: step 1: predict 1: its answer (AutogradCPU) is written" in r.stdout, r.stdout
    assert "step 2: predict 1: step 1 ran the same code" in r.stdout, r.stdout


def test_a_teacher_silences_a_warning_per_question(tmp_path):
    path = tmp_path / "01-leaky.md"
    path.write_text(LEAKY.format(answer="chosen", allow="allow: answer-in-prose"))
    trusted(path, tmp_path)
    r = run_cli("--validate", str(path), tmp_path=tmp_path)
    assert r.returncode == 0 and "1 warning" in r.stdout and "its answer" not in r.stdout, r.stdout
    path.write_text(LEAKY.format(answer="chosen", allow="allow: answer-in-pros"))
    r = run_cli("--validate", str(path), tmp_path=tmp_path)
    assert r.returncode == 1 and "01-leaky.md:26: unknown warning 'answer-in-pros' after 'allow:'" in r.stdout, \
        r.stdout


def test_the_title_counts_as_prose(tmp_path):
    path = tmp_path / "01-leaky.md"
    path.write_text(LEAKY.format(answer="AutogradCPU", allow="").replace("The dispatcher picks AutogradCPU first.",
                                                                       "Guess."))
    trusted(path, tmp_path)
    r = run_cli("--validate", str(path), tmp_path=tmp_path)
    assert "its answer (AutogradCPU) is written" in r.stdout, r.stdout


def test_no_lesson_gives_an_answer_away():
    """The validator's warnings over the lessons folder: none (each step asks before it tells)."""
    for path in L.paths(LESSONS_DIR):
        lesson = L.load(path)
        warned = []
        assert runner.validate(lesson, warnings=warned) == [], path
        assert warned == [], warned


def test_a_number_is_found_as_its_word():
    assert runner._appears("8", 8, "One line, eight floors")
    assert runner._appears("8", 8, "1. python ... 8. launch")
    assert not runner._appears("8", 8, "a 2x8 matrix and 18 more")
    assert not runner._appears("yes", True, "yes, it does")


# [SECTION] Two handouts ----------------------------------------------------------------------------------

def test_the_students_handout_holds_no_answer(tmp_path):
    out = tmp_path / "handout"
    r = run_cli("dispatcher", "--handout", str(out), tmp_path=tmp_path)
    assert r.returncode == 0, r.stdout + r.stderr
    lesson = L.load("dispatcher")
    for who in ("student", "teacher"):
        assert sorted(f for f in os.listdir(out / who) if f.endswith(".md")) == \
            ["index.md"] + [f"step-{k:02d}.md" for k in range(1, len(lesson.steps) + 1)]
    student = (out / "student" / "step-01.md").read_text()
    teacher = (out / "teacher" / "step-01.md").read_text()
    assert "**Predict 1.**" in student and "**Predict 2.**" in student and "- b) AutogradCPU" in student
    for leak in ("kernel=AutogradCPU", "The trace", "## Answers", "keyset=", "Look at"):
        assert leak not in student, leak
    assert "## Answers (from this run)" in teacher and "kernel=AutogradCPU" in teacher and "keyset=" in teacher
    assert "First, untraced, the step's setup" in student  # what runs unseen is shown to both
    six = (out / "student" / "step-06.md").read_text()
    assert "## Exercise:" in six and "inference_mode" not in six.split("## Exercise:")[1]  # no solution
    assert "The reference solution:" in (out / "teacher" / "step-06.md").read_text()


def test_the_teachers_key_holds_the_teachers_notes(tmp_path):
    out = tmp_path / "handout"
    r = run_cli("map", "--handout", str(out), tmp_path=tmp_path)
    assert r.returncode == 0, r.stdout + r.stderr
    assert "For the teacher:" in (out / "teacher" / "step-01.md").read_text()
    assert "For the teacher:" not in (out / "student" / "step-01.md").read_text()


# [SECTION] The format refuses what it cannot read ---------------------------------------------------------

HEAD = "# T\n\n```lesson\nteaches: a\nassumes: b\n```\n\n## S\n\n"


def test_an_unknown_block_kind_is_an_error_naming_the_known_ones():
    with pytest.raises(L.LessonError) as e:
        L.parse(HEAD + "```run cpu\ny = 1\n```\n\n```predcit\nask: q\nanswer: python y\n```\n", "t.md")
    assert e.value.line == 14
    assert "unknown block kind 'predcit'" in str(e.value) and "predict" in str(e.value) and "python" in str(e.value)
    L.parse(HEAD + "```run cpu\ny = 1\n```\n\n```python\nprint('prose')\n```\n\n```\nplain\n```\n", "t.md")


def test_an_unclosed_fence_is_reported_at_its_own_line():
    with pytest.raises(L.LessonError) as e:
        L.parse(HEAD + "```run cpu\ny = 1\n\n```predict\nask: q\nanswer: python y\n```\n", "t.md")
    assert e.value.line == 10 and "```run block is never closed: line 13 opens '```predict'" in str(e.value)
    with pytest.raises(L.LessonError) as e:
        L.parse(HEAD + "```run cpu\ny = 1\n```\n\n```text\nnever closed\n", "t.md")
    assert e.value.line == 14 and "```text block is never closed" in str(e.value)
    # A longer fence may hold shorter ones: a lesson shown inside a lesson, as lessons/README.md does.
    L.parse(HEAD + "```run cpu\ny = 1\n```\n\n````markdown\n```predict\nask: q\n```\n````\n", "t.md")


EXERCISE = HEAD + """```exercise
goal: y is x doubled, and z is y plus one.
check: y.tolist() == [2.0, 2.0]
{more}hint: a hint
```

```setup
x = descent.ones(2)
y = x * 2
```

```start
y = x * 3
z = y + 1
```

```solution
y = x * 2
z = y + 1
```
"""


def test_an_exercise_that_passes_on_less_than_its_goal_is_refused():
    """The checks must test the whole goal: an empty start, or the start without its last statement,
    that passes means they do not (lesson 4's exercise passed with its code deleted)."""
    lesson = L.parse(EXERCISE.format(more=""), os.path.join(LESSONS_DIR, "99-t.md"))
    problems = runner.validate(lesson)
    assert any("the exercise passes with no code at all" in p for p in problems), problems
    lesson = L.parse(EXERCISE.format(more="check: z.tolist() == [3.0, 3.0]\n"), os.path.join(LESSONS_DIR, "99-t.md"))
    assert runner.validate(lesson) == []


def test_without_last_statement():
    assert runner._without_last_statement("a = 1\nfor i in range(2):\n    a += i\n") == "a = 1\n"
    assert runner._without_last_statement("a = 1\n") == ""


def test_check_names_the_lesson_it_was_opened_as(tmp_path):
    solution = tmp_path / "s.py"
    solution.write_text("with descent.inference_mode():\n    y = x * 2\n")
    r = run_cli("3", "--check", str(solution), "--exercise", "1", tmp_path=tmp_path)
    assert r.returncode == 0, r.stdout + r.stderr
    assert r.stdout.startswith("PASSED"), r.stdout  # the verdict first, as always
    last = r.stdout.splitlines()[-1]
    assert last.startswith("(graded against lesson 3 'dispatcher' (") and "03-dispatcher.md), exercise 1 (step 6):" \
        in last, r.stdout


# [SECTION] Units in a typed answer --------------------------------------------------------------------------

def test_a_unit_the_question_shows_is_accepted():
    ask = "How many more bytes does the allocator reserve?"
    assert S.number_in("2 MiB", ask) == 2097152 and S.number_in("2MiB", ask) == 2097152
    assert S.number_in("4 KiB", ask) == 4096 and S.number_in("4096 bytes", ask) == 4096
    assert S.number_in("2 MB", ask) == 2_000_000
    assert S.number_in("2 ms", ask) is None  # not a unit of bytes
    assert S.number_in("256 threads", "How many threads are in each block?") == 256
    assert S.number_in("256 apples", "How many threads are in each block?") is None
    assert S.number_in("1 µs", "How long, in ns?") == 1000


def test_the_terminal_judges_2_mib(tmp_path):
    r = run_cli("caching-allocator", "--step", "3", "--answers", "2 MiB,4 KiB", tmp_path=tmp_path)
    assert "Your answer: 2 MiB\nRight: 2097152." in r.stdout, r.stdout
    assert "Your answer: 4 KiB\nRight: 4096." in r.stdout, r.stdout


# [SECTION] Watch mode ------------------------------------------------------------------------------------

def _read_until(proc, text, timeout=60):
    out = ""
    end = time.monotonic() + timeout
    while text not in out:
        assert time.monotonic() < end, f"no {text!r} in {out!r}"
        line = proc.stdout.readline()
        assert line, f"the watcher ended before {text!r}: {out!r}"
        out += line
    return out


def test_watch_checks_each_save_and_ends_on_ctrl_c(tmp_path):
    code = tmp_path / "mine.py"
    env = dict(os.environ, XDG_DATA_HOME=str(tmp_path / "data"), DESCENT_LESSONS=LESSONS_DIR,
               PYTHONUNBUFFERED="1")
    proc = subprocess.Popen([cli(), "lesson", "dispatcher", "--exercise", "1", "--watch", str(code)],
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=env)
    try:
        _read_until(proc, "Ctrl-C ends it.")
        code.write_text("with descent.no_grad():\n    y = x * 2\n")
        first = _read_until(proc, "Waiting for the next save")
        assert "FAILED: the goal is not met" in first and "check 1" in first, first
        time.sleep(0.05)
        code.write_text("with descent.inference_mode():\n    y = x * 2\n")
        second = _read_until(proc, "Waiting for the next save")
        assert "PASSED" in second and "check 2" in second, second
        proc.send_signal(signal.SIGINT)
        rest, _ = proc.communicate(timeout=30)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert proc.returncode == 0, rest
    assert "Stopped watching" in rest and "after 2 checks" in rest and "Traceback" not in rest, rest


# [SECTION] A class's answers ---------------------------------------------------------------------------------

def test_a_class_answers_into_a_shared_folder_and_the_teacher_counts(tmp_path):
    shared = tmp_path / "class"
    for student, picks in (("ann", "b,a"), ("bob", "b,a"), ("cy", "AutogradCPU,c"), ("d d", "a,a")):
        r = run_cli("dispatcher", "--step", "1", "--answers", picks, "--answers-to", str(shared), "--student",
                    student, tmp_path=tmp_path)
        assert "Right" in r.stdout or "Not quite" in r.stdout, r.stdout + r.stderr
    r = run_cli("dispatcher", "--step", "1", "--answers", "a,a", "--answers-to", str(shared), "--student", "ann",
                tmp_path=tmp_path)  # ann changes her mind: still one answer of hers
    assert sorted(os.listdir(shared / "dispatcher" / "step-01-q-1")) == ["ann.txt", "bob.txt", "cy.txt", "d_d.txt"]
    r = run_cli("dispatcher", "--tally", str(shared), "--step", "1", tmp_path=tmp_path)
    assert r.returncode == 0, r.stdout + r.stderr
    first = between(r.stdout, "Step 1, question 1:", "Step 1, question 2:")
    assert "4 answers" in first
    assert "a)   2  ##" in first and "b)   2  ##" in first and "c)   0" in first, first
    second = r.stdout.split("Step 1, question 2:")[1]
    assert "a)   3  ###" in second and "c)   1  #" in second, second
    r = run_cli("autograd", "--tally", str(shared), tmp_path=tmp_path)
    assert r.returncode == 1 and "no answers to 'autograd'" in r.stderr
