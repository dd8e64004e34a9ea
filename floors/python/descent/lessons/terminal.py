"""`descent lesson`: the lessons in a terminal.

    descent lesson                          the lessons, with your progress
    descent lesson NAME                     a lesson: prose, trace trees, predictions asked on stdin
    descent lesson NAME --answers b,a,12    the same, answers taken from the list (for scripts)
    descent lesson NAME --step K            only step K (from 1)
    descent lesson NAME --check FILE.py     grades your solution of the lesson's exercise (exit 0 or 1)
    descent lesson NAME --hints | --solution
    descent lesson NAME --handout DIR       each step as Markdown with its trace tree
    descent lesson --validate [PATH]        runs lessons as their author's test (exit 0 when all hold)
    descent lesson [NAME] --reset           forgets your progress (one lesson's, or all)

Exit status: 0 when all went well (every prediction answered right, the
exercise passed, every lesson valid), 1 when not, 2 when the command could not
do what was asked (no such lesson, a file that is not a lesson).
"""
import os
import sys
import textwrap
import threading
import time

from . import catalog, check, directory, find, load, paths, progress, run_step, validate
from .format import LessonError
from . import runner as _runner

RULE = "\u2500" * 4


def add_parser(sub):
    """Adds `lesson` to the `descent` command's subparsers."""
    p = sub.add_parser("lesson", help="guided lessons down the floors (descent lesson lists them)",
                       description="Guided lessons: each step runs traced, and its answers are read off the trace.")
    p.add_argument("name", nargs="?", help="a lesson's name or number (descent lesson lists them)")
    p.add_argument("--answers", metavar="A,B,...",
                   help="answers to the predictions, in order, instead of asking on stdin (a letter, a choice's "
                        "text or a number each)")
    p.add_argument("--step", type=int, metavar="K", help="only step K (from 1)")
    p.add_argument("--check", metavar="FILE.py", help="grade your solution of the lesson's exercise")
    p.add_argument("--exercise", type=int, metavar="K", help="which exercise --check grades, when there are several "
                   "(from 1)")
    p.add_argument("--limit", type=float, metavar="SECONDS", help="--check's time limit (the exercise's own by "
                   "default)")
    p.add_argument("--hints", action="store_true", help="print the exercises' hints")
    p.add_argument("--solution", action="store_true", help="print the exercises' reference solutions")
    p.add_argument("--handout", metavar="DIR", help="write each step as Markdown with its trace tree into DIR")
    p.add_argument("--validate", nargs="?", const="", metavar="PATH",
                   help="parse and run lessons (a file, or a folder: the lessons folder by default) and check "
                        "that every selector, answer and exercise holds")
    p.add_argument("--reset", action="store_true", help="forget your progress (the named lesson's, or all)")
    p.set_defaults(fn=main)
    return p


def main(args):
    try:
        if args.validate is not None:
            return cmd_validate(args.validate or None)
        if args.reset:
            return cmd_reset(args.name)
        if args.name is None:
            return cmd_list()
        lesson = load(args.name)
        if args.check:
            return cmd_check(lesson, args)
        if args.hints or args.solution:
            return cmd_hints(lesson, args.solution)
        if args.handout:
            return cmd_handout(lesson, args.handout)
        return cmd_run(lesson, args)
    except LessonError as e:
        print(f"descent lesson: {e}", file=sys.stderr)
        return 2


# [SECTION] Listing and progress ------------------------------------------------------------------------

def cmd_list():
    entries = catalog()
    if not entries:
        print(f"descent lesson: no lessons in {directory()} (set DESCENT_LESSONS to a folder of lessons)")
        return 2
    print(f"The lessons ({directory()}); your progress is kept in {progress.path()}\n")
    width = max(len(e["name"]) for e in entries)
    for e in entries:
        number = "" if e["number"] is None else str(e["number"])
        if e["error"]:
            print(f"{number:>3} {e['name']:{width}}  cannot be read: {e['error']}")
            continue
        p = e["progress"]
        right = sum(1 for v in p["predictions"].values() if v)
        done = sum(1 for v in p["exercises"].values() if v)
        state = (f"{len(p['seen'])}/{e['steps']} steps seen, {right}/{e['predictions']} predictions right, "
                 f"{done}/{e['exercises']} exercise{'s' if e['exercises'] != 1 else ''} done")
        print(f"{number:>3} {e['name']:{width}}  {e['title']}\n    {'':{width}}  {state}")
    print("\nOpen one with: descent lesson NAME (or its number)")
    return 0


def cmd_reset(name):
    if name is None:
        progress.reset()
        print(f"forgot all progress ({progress.path()})")
        return 0
    lesson = load(name)
    progress.reset(lesson.name)
    print(f"forgot your progress in '{lesson.name}'")
    return 0


# [SECTION] Running a lesson -------------------------------------------------------------------------------

class _Answers:
    """Where answers come from: the --answers list, else stdin (EOF: no answer). At the prompt, an answer
    that cannot be read (a letter past the choices, a word for a number) is asked again; from the list it
    is judged as it is, wrong."""

    def __init__(self, given):
        self.given = None if given is None else [a.strip() for a in given.split(",")]

    def next(self, prompt, why_not=lambda typed: ""):
        if self.given is not None:
            if not self.given:
                print(f"{prompt}(no answer given)")
                return None
            a = self.given.pop(0)
            print(f"{prompt}{a}")
            if why_not(a):
                print(f"({why_not(a)}: judged wrong)")
            return a
        while True:
            try:
                typed = input(prompt)
            except EOFError:
                print("(no answer)")
                return None
            problem = why_not(typed)
            if not problem:
                return typed
            print(f"{problem}. Try again (Ctrl+D shows the answer).")

    def skip(self):
        """Drops the listed answer of a question that cannot be asked, so the next ones stay in step."""
        if self.given:
            self.given.pop(0)


def _unreadable(entry, typed):
    """Why `typed` is no answer to the prediction `entry` at all ("" when it is one, right or wrong)."""
    from .selector import number_of, reading_of
    t = typed.strip()
    choices = entry["choices"]
    if not t:
        return "no answer typed"
    if choices:
        if reading_of(t, choices) is not None:
            return ""
        last = len(choices)
        return (f"'{t}' is none of the choices: type a letter a to {chr(ord('a') + last - 1)}, a number 1 to "
                f"{last}, or a choice's text")
    if entry["kind"] == "number" and number_of(t) is None:
        return f"'{t}' is not a number"
    return ""


def _indent(text, by="    "):
    return textwrap.indent(text.rstrip("\n"), by, lambda line: True)


def cmd_run(lesson, args):
    answers = _Answers(args.answers)
    steps = range(len(lesson.steps))
    if args.step is not None:
        if not 1 <= args.step <= len(lesson.steps):
            print(f"descent lesson: '{lesson.name}' has steps 1 to {len(lesson.steps)}, not {args.step}",
                  file=sys.stderr)
            return 2
        steps = [args.step - 1]
    questions = sum(len(lesson.steps[i].predictions) for i in steps)
    if answers.given is not None and len(answers.given) > questions:
        where = f"step {args.step} of '{lesson.name}'" if args.step is not None else f"'{lesson.name}'"
        print(f"descent lesson: --answers: {where} has {questions} question(s), not {len(answers.given)}",
              file=sys.stderr)
        return 2
    number = f" {lesson.number}" if lesson.number is not None else ""
    print(f"Lesson{number}: {lesson.title}\n")
    print(f"What it teaches: {lesson.teaches}")
    print(f"What it assumes: {lesson.assumes}\n")
    if lesson.intro and args.step is None:
        print(lesson.intro + "\n")
    asked = right = 0
    for i in steps:
        step = lesson.steps[i]
        print(f"{RULE} Step {i + 1} of {len(lesson.steps)}: {step.title} {RULE}\n")
        if step.prose:
            print(step.prose + "\n")
        if step.run is not None:
            r = run_step(lesson, i)
            sim = " (a simulated device: this machine has no NVIDIA GPU)" if r["device"] == "sim:0" else ""
            print(f"The code, run on {r['device']}{sim}:\n{_indent(r['code'])}\n")
            for k, entry in enumerate(r["predictions"]):
                asked += 1
                right += _ask(lesson, i, k, entry, r, answers)
            if r["output"]:  # after the questions: what a step prints may be an answer
                print(f"It printed:\n{_indent(r['output'])}\n")
            if r["tree"]:
                print(f"The trace:\n{r['tree'].rstrip()}\n")
            if r.get("compare"):
                print(f"PyTorch's own profile of the same code: {r['compare']}\n(beside descent's trace: "
                      f"descent app --lesson {lesson.name} --lesson-step {i + 1}, then 3 for the Compare tab)\n")
            if r["error"]:
                print(f"The code raised (this is the step's outcome):\n{_indent(r['error'])}\n")
            for look in r["looks"]:
                if look["problem"]:
                    print(f"Look at: {look['selector']} -- {look['problem']}\n")
                else:
                    value = f" = {look['value']}" if look["value"] is not None else ""
                    print(f"Look at ({look['selector']}){value}:\n    {look['span']['line_text']}\n")
        if step.exercise is not None:
            _show_exercise(lesson, i)
        progress.mark_seen(lesson.name, i)
    if asked:
        print(f"{right} of {asked} predictions right.")
    return 0 if right == asked else 1


def _ask(lesson, i, k, entry, result, answers):
    """Asks prediction k of step i, then reveals the answer with its evidence. Returns whether it was right."""
    from . import answer
    print(f"Predict: {entry['ask']}")
    for j, c in enumerate(entry["choices"]):
        print(f"  {chr(ord('a') + j)}) {c}")
    if entry["problem"]:
        answers.skip()
        print(f"(this question cannot be answered here: {entry['problem']})\n")
        return False
    hint = " (a letter)" if entry["choices"] else (f" (a number, {entry['tolerance']})" if entry["tolerance"]
                                                   else "")
    typed = answers.next(f"Your answer{hint}: ", lambda t: _unreadable(entry, t))
    if typed is None:
        print(f"The answer: {entry['answer_text']}.")
        verdict = False
    else:
        verdict = answer(lesson, i, k, typed, result)["right"]
        print(("Right: " if verdict else "Not quite: the answer is ") + f"{entry['answer_text']}.")
    if entry["evidence"]:
        print(f"The evidence, from this run's trace:\n{_indent(entry['evidence'])}")
    if entry["explain"]:
        print(textwrap.fill(entry["explain"], 100))
    print()
    return verdict


def _show_exercise(lesson, i):
    ex = lesson.steps[i].exercise
    which = [j for j, _ in lesson.exercises()].index(i) + 1
    flag = f" --exercise {which}" if len(lesson.exercises()) > 1 else ""
    print(f"Exercise: {ex.goal}\n")
    print(f"Starting code (on {_runner.device_name(ex.device)}):\n{_indent(ex.start.text)}\n")
    print(f"Write your version in a file and check it:  descent lesson {lesson.name} --check FILE.py{flag}")
    print(f"A hint:  descent lesson {lesson.name} --hints    (the solution: --solution)\n")


def cmd_hints(lesson, solution):
    exercises = lesson.exercises()
    if not exercises:
        print(f"'{lesson.name}' has no exercise")
        return 0
    for n, (i, ex) in enumerate(exercises, 1):
        print(f"Exercise {n} (step {i + 1}): {ex.goal}")
        for h in ex.hints:
            print(textwrap.fill(h, 100, initial_indent="  hint: ", subsequent_indent="        "))
        if solution:
            print(f"  the solution:\n{_indent(ex.solution.text, '    ')}")
        print()
    return 0


# [SECTION] Checking an exercise ---------------------------------------------------------------------------

def cmd_check(lesson, args):
    exercises = lesson.exercises()
    if not exercises:
        print(f"descent lesson: '{lesson.name}' has no exercise to check", file=sys.stderr)
        return 2
    k = args.exercise
    if k is None:
        if len(exercises) > 1:
            listed = "; ".join(f"{n}: {ex.goal}" for n, (_, ex) in enumerate(exercises, 1))
            print(f"descent lesson: '{lesson.name}' has {len(exercises)} exercises: say which with --exercise K "
                  f"({listed})", file=sys.stderr)
            return 2
        k = 1
    if not 1 <= k <= len(exercises):
        print(f"descent lesson: '{lesson.name}' has exercises 1 to {len(exercises)}, not {k}", file=sys.stderr)
        return 2
    step, ex = exercises[k - 1]
    try:
        with open(args.check, encoding="utf-8") as f:
            code = f.read()
    except (OSError, UnicodeDecodeError) as e:
        print(f"descent lesson: cannot read {args.check}: {getattr(e, 'strerror', None) or e}", file=sys.stderr)
        return 2
    limit = args.limit or ex.limit_s
    _last_resort(limit, limit + 10)
    result = check(lesson, step, code, limit)
    if result["output"]:
        print(f"Your code printed:\n{_indent(result['output'])}\n")
    if result["passed"]:
        print(f"PASSED ({result['seconds']:.2f} s): {result['reason']}")
        return 0
    print(f"FAILED: {result['reason']}")
    if result["error"] and "raised" not in result["reason"]:
        print(_indent(result["error"]))
    return 1


def _last_resort(limit, seconds):
    """Ends the process when a check outlives its limit inside a C call that Python cannot interrupt
    (Note [Stopping student code]). It fires while the student's code runs, when runner.py has sys.stdout
    pointed at a buffer of its own: the reason is written to file descriptor 1 itself."""
    def end():
        text = (f"FAILED: stopped after {seconds:g} s: the code ran past its {limit:g} s limit and could not "
                "be stopped from Python (a C call that never returns, or a trace too large to read back)\n")
        try:
            sys.__stdout__.flush()  # what was printed before the check, in its order
        except (AttributeError, OSError, ValueError):
            pass
        os.write(1, text.encode("utf-8", "replace"))
        os._exit(1)
    t = threading.Timer(seconds, end)
    t.daemon = True
    t.start()


# [SECTION] Validating, for authors ------------------------------------------------------------------------

def cmd_validate(where):
    from .format import parse_file
    files = paths(where)
    if where and not os.path.exists(where):
        print(f"descent lesson: {where} does not exist", file=sys.stderr)
        return 2
    if not files:
        print(f"descent lesson: no lesson files (*.md) in {where or directory()}", file=sys.stderr)
        return 2
    failed = 0
    began = time.perf_counter()
    for p in files:
        t0 = time.perf_counter()
        try:
            lesson = parse_file(p)
        except LessonError as e:
            print(f"FAIL {os.path.basename(p)}\n  {e}")
            failed += 1
            continue
        problems = validate(lesson)
        took = time.perf_counter() - t0
        counts = (f"{len(lesson.steps)} steps, {len(lesson.predictions())} prediction{'s' if len(lesson.predictions()) != 1 else ''}, "
                  f"{len(lesson.exercises())} exercise{'s' if len(lesson.exercises()) != 1 else ''}")
        if problems:
            failed += 1
            print(f"FAIL {lesson.name} ({counts}) in {took:.1f} s")
            for pr in problems:
                print(_indent(pr, "  "))
        else:
            print(f"ok   {lesson.name:18} ({counts}) in {took:.1f} s")
    total = time.perf_counter() - began
    print(f"{len(files) - failed} of {len(files)} lessons valid in {total:.1f} s")
    return 1 if failed else 0


# [SECTION] The handout -------------------------------------------------------------------------------------

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
        try:
            p = subprocess.run(argv, capture_output=True, text=True, timeout=120,
                               env=dict(os.environ, XDG_DATA_HOME=data))
        except (OSError, subprocess.TimeoutExpired) as e:
            return f"the app did not draw it: {e}"
    if p.returncode != 0 or not os.path.exists(path):
        return f"the app did not draw it: {(p.stderr or p.stdout).strip().splitlines()[-1:] or p.returncode}"
    return ""


def cmd_handout(lesson, out_dir, pictures=True):
    """Writes index.md and one step-K.md per step: the prose, the app's picture of the step (where the app
    is built), the code, its trace tree, the questions with the answers this run gave (at the bottom), and
    the exercise with its hints."""
    try:
        os.makedirs(out_dir, exist_ok=True)
    except OSError as e:
        print(f"descent lesson: cannot write into {out_dir}: {e.strerror}", file=sys.stderr)
        return 2
    no_pictures = ""
    number = f"Lesson {lesson.number}: " if lesson.number is not None else ""
    index = [f"# {number}{lesson.title}", "", f"**What it teaches:** {lesson.teaches}", "",
             f"**What it assumes:** {lesson.assumes}", ""]
    if lesson.intro:
        index += [lesson.intro, ""]
    written = []
    for i, step in enumerate(lesson.steps):
        name = f"step-{i + 1:02d}.md"
        index.append(f"{i + 1}. [{step.title}]({name})")
        md = [f"# {i + 1}. {step.title}", "", f"*{number}{lesson.title}*", ""]
        if step.prose:
            md += [step.prose, ""]
        answers = []
        if step.run is not None and pictures and not no_pictures:
            picture = f"step-{i + 1:02d}.png"
            no_pictures = _step_picture(lesson, i, os.path.join(out_dir, picture))
            if not no_pictures:
                md += [f"![The app at this step: the building, the timeline and the question]({picture})", ""]
        if step.run is not None:
            r = run_step(lesson, i)
            md += [f"Run on `{r['device']}`:", "", "```python", r["code"].rstrip(), "```", ""]
            for k, entry in enumerate(r["predictions"]):
                md.append(f"**Predict {k + 1}.** {entry['ask']}")
                md += [""] + [f"- {chr(ord('a') + j)}) {c}" for j, c in enumerate(entry["choices"])] + [""]
                answers.append((k, entry))
            if r["output"]:  # after the questions, as in the terminal
                md += ["It printed:", "", "```text", r["output"].rstrip(), "```", ""]
            md += ["The trace (`descent trace` shows the same tree):", "", "```text", r["tree"].rstrip(), "```", ""]
            if r["error"]:
                md += ["The code raised:", "", "```text", r["error"].rstrip(), "```", ""]
            for look in r["looks"]:
                if not look["problem"]:
                    md += [f"Look at `{look['selector']}`:", "", "```text", look["span"]["line_text"], "```", ""]
        if step.exercise is not None:
            ex = step.exercise
            md += [f"## Exercise: {ex.goal}", "", "Starting code:", "", "```python", ex.start.text.rstrip(), "```",
                   "", f"Check your solution: `descent lesson {lesson.name} --check FILE.py`", ""]
            md += [f"- Hint: {h}" for h in ex.hints] + [""]
        if answers:
            md += ["## Answers (from this run)", ""]
            for k, entry in answers:
                md.append(f"{k + 1}. **{entry['answer_text'] or '(could not be computed)'}**. "
                          f"{entry['explain']}".rstrip())
                if entry["evidence"]:
                    md += ["", "   ```text", _indent(entry["evidence"], "   "), "   ```"]
            md.append("")
        path = os.path.join(out_dir, name)
        with open(path, "w", encoding="utf-8") as f:
            f.write("\n".join(md).rstrip() + "\n")
        written.append(path)
    with open(os.path.join(out_dir, "index.md"), "w", encoding="utf-8") as f:
        f.write("\n".join(index).rstrip() + "\n")
    print(f"wrote {len(written) + 1} files into {out_dir} (index.md, {os.path.basename(written[0])} ...)")
    if pictures and no_pictures:
        print(f"(no pictures of the steps: {no_pictures})")
    return 0
