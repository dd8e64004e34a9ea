"""`descent lesson NAME --handout DIR`: two handouts in Markdown, the students' and the teacher's key
(Note [Two handouts])."""
import os
import sys

from . import run_step, store, trust
from .terminal_text import echo, indent, shown


def _step_picture(lesson, i, path):
    """The app's picture of step i with its question asked (headless, on a virtual display where there is
    none), or the reason there is none. Progress goes to a folder of its own: a handout opens no step for
    the student."""
    import shutil
    import subprocess
    import tempfile

    from descent.__main__ import app_path
    app = app_path()
    if not os.access(app, os.X_OK):
        return "the app is not built here"
    argv = [app, "--size", "1280x720", "--lesson", lesson.path, "--lesson-step", str(i + 1), "--screenshot", path]
    if not os.environ.get("DISPLAY"):
        if not shutil.which("xvfb-run"):
            return "no display, and xvfb-run is not installed"
        argv = ["xvfb-run", "-a", "-s", "-screen 0 1280x720x24 -noreset"] + argv
    with tempfile.TemporaryDirectory() as data:
        try:  # the app decides trust as we do, from the same store (Note [Trusting a lesson])
            trusted = store.read_bytes(trust.store_path(), trust.MAX_BYTES)
            if trusted is not None:
                os.makedirs(os.path.join(data, "descent"))
                store.write_atomic(os.path.join(data, "descent", "trusted.json"), trusted)
        except (OSError, store.Unreadable):
            pass  # the app says the lesson is untrusted, and the handout goes on without pictures
        try:
            p = subprocess.run(argv, capture_output=True, text=True, timeout=120,
                               env=dict(os.environ, XDG_DATA_HOME=data))
        except (OSError, subprocess.TimeoutExpired) as e:
            return f"the app did not draw it: {e}"
    if p.returncode != 0 or not os.path.exists(path):
        return f"the app did not draw it: {(p.stderr or p.stdout).strip().splitlines()[-1:] or p.returncode}"
    return ""


def cmd_handout(lesson, out_dir, pictures=True):
    """Writes two handouts of the lesson (Note [Two handouts]): out_dir/student/, the questions and no
    answer, and out_dir/teacher/, the key. Each is index.md and one step-KK.md per step. Each page is
    written whole (store.write_atomic): a read-only folder or a full disk is one line and exit status 1,
    with the pages already there as they were."""
    student_dir, teacher_dir = os.path.join(out_dir, "student"), os.path.join(out_dir, "teacher")
    for d in (student_dir, teacher_dir):
        try:
            os.makedirs(d, exist_ok=True)
        except OSError as e:
            echo(f"descent lesson: cannot write the handout into {out_dir}: {store.reason(e)}", file=sys.stderr)
            return 1

    def write(path, lines):
        try:
            store.write_atomic(path, (shown("\n".join(lines).rstrip()) + "\n").encode("utf-8"))
        except OSError as e:
            echo(f"descent lesson: cannot write the handout's {path}: {store.reason(e)}", file=sys.stderr)
            return False
        return True
    no_pictures = ""
    number = f"Lesson {lesson.number}: " if lesson.number is not None else ""
    index = [f"# {number}{lesson.title}", "", f"**What it teaches:** {lesson.teaches}", "",
             f"**What it assumes:** {lesson.assumes}", ""]
    if lesson.intro:
        index += [lesson.intro, ""]
    student_index, teacher_index = list(index), list(index) + [
        "*The teacher's key: each step's trace, what it printed, and the answers from this run. The "
        "students' handout, without them, is in ../student.*", ""]
    written = 0
    for i, step in enumerate(lesson.steps):
        name = f"step-{i + 1:02d}.md"
        student_index.append(f"{i + 1}. [{step.title}]({name})")
        teacher_index.append(f"{i + 1}. [{step.title}]({name})")
        head = [f"# {i + 1}. {step.title}", "", f"*{number}{lesson.title}*", ""]
        if step.prose:
            head += [step.prose, ""]
        student, teacher = list(head), list(head)
        if step.teacher:
            teacher += ["> **For the teacher:** " + step.teacher.replace("\n", "\n> "), ""]
        answers = []
        if step.run is not None and pictures and not no_pictures:
            picture = f"step-{i + 1:02d}.png"
            no_pictures = _step_picture(lesson, i, os.path.join(teacher_dir, picture))
            if not no_pictures:
                teacher += [f"![The app at this step: the building, the timeline and the question]({picture})", ""]
        if step.run is not None:
            r = run_step(lesson, i)
            code = [] if step.setup is None else ["First, untraced, the step's setup:", "", "```python",
                                                  step.setup.text.rstrip(), "```", ""]
            code += [f"Run on `{r['device']}`:", "", "```python", r["code"].rstrip(), "```", ""]
            student += code
            teacher += code
            for k, entry in enumerate(r["predictions"]):
                q = [f"**Predict {k + 1}.** {entry['ask']}", ""]
                q += [f"- {chr(ord('a') + j)}) {c}" for j, c in enumerate(entry["choices"])]
                student += q + ([""] if entry["choices"] else []) + ["Your answer: ______", ""]
                teacher += q + [""]
                answers.append((k, entry))
            if r["output"]:  # after the questions, as in the terminal
                teacher += ["It printed:", "", "```text", r["output"].rstrip(), "```", ""]
            teacher += ["The trace (`descent trace` shows the same tree):", "", "```text", r["tree"].rstrip(), "```",
                        ""]
            if r["error"]:
                teacher += ["The code raised:", "", "```text", r["error"].rstrip(), "```", ""]
            for look in r["looks"]:
                if not look["problem"]:
                    teacher += [f"Look at `{look['selector']}`:", "", "```text", look["span"]["line_text"], "```", ""]
        if step.exercise is not None:
            ex = step.exercise
            task = [f"## Exercise: {ex.goal}", "", "Starting code:", "", "```python", ex.start.text.rstrip(), "```",
                    "", f"Check your solution: `descent lesson {lesson.name} --check FILE.py`", ""]
            task += [f"- Hint: {h}" for h in ex.hints] + [""]
            student += task
            teacher += task + ["The reference solution:", "", "```python", ex.solution.text.rstrip(), "```", ""]
        if answers:
            teacher += ["## Answers (from this run)", ""]
            for k, entry in answers:
                teacher.append(f"{k + 1}. **{entry['answer_text'] or '(could not be computed)'}**. "
                               f"{entry['explain']}".rstrip())
                if entry["evidence"]:
                    teacher += ["", "   ```text", indent(entry["evidence"], "   "), "   ```"]
            teacher.append("")
        if not write(os.path.join(student_dir, name), student) or not write(os.path.join(teacher_dir, name), teacher):
            return 1
        written += 1
    if not write(os.path.join(student_dir, "index.md"), student_index) or \
            not write(os.path.join(teacher_dir, "index.md"), teacher_index):
        return 1
    echo(f"wrote two handouts of {written} steps into {out_dir}: student/ (the questions, no answers) and teacher/ "
         "(the key: traces, output, answers)")
    if pictures and no_pictures:
        echo(f"(no pictures of the steps: {no_pictures})")
    return 0


# Note [Two handouts]
# ~~~~~~~~~~~~~~~~~~~
# A handout given to students before a class must not hold what the class
# is asked to predict: the trace tree, what the code printed, the `look`
# lines (a span's whole line of arguments) and the answers all can. So
# `--handout DIR` writes two: DIR/student/, each step's prose, its code, its
# questions with their choices and a blank for the answer, and the exercise
# with its hints; and DIR/teacher/, the key, which adds the step's teacher's
# notes, the app's picture of the step, what it printed, its trace, the
# looks, the exercise's reference solution and the answers with their
# evidence (all computed from this run, as the terminal computes them).
