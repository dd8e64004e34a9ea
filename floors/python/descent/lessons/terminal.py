"""`descent lesson`: the lessons in a terminal.

    descent lesson                          the lessons, with your progress
    descent lesson NAME                     a lesson: prose, trace trees, predictions asked on stdin
    descent lesson NAME --answers b,a,12    the same, answers taken from the list (for scripts)
    descent lesson NAME --step K            only step K (from 1)
    descent lesson NAME --check FILE.py     grades your solution of the lesson's exercise (exit 0 or 1)
    descent lesson NAME --watch FILE.py     grades it again each time FILE.py is saved (Ctrl-C ends it)
    descent lesson NAME --answers-to DIR    also writes each answer into DIR, a folder the class shares
    descent lesson NAME --tally DIR         how many of the class picked each choice (Note [A class's answers])
    descent lesson NAME --hints | --solution
    descent lesson NAME --handout DIR       two handouts in Markdown: DIR/student (no answers), DIR/teacher (the key)
    descent lesson --validate [PATH]        runs lessons as their author's test (exit 0 when all hold)
    descent lesson [NAME] --reset           forgets your progress (one lesson's, or all)
    descent lesson --trust FILE             shows every block of code FILE runs, and trusts it

A lesson file from outside the installed lessons folder runs nothing until it
is trusted (Note [Trusting a lesson] in trust.py): running it, checking,
validating and writing its handout refuse with one line saying how.

Exit status: 0 when all went well (every prediction answered right, the
exercise passed, every lesson valid), 1 when not (an untrusted lesson, a
handout that could not be written, included), 2 when the command could not
do what was asked (no such lesson, a file that is not a lesson).

Note [Text the terminal shows]
~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
A terminal obeys the control characters in what it is sent: ESC starts a
sequence that can move the cursor, erase a line, set the window's title or
(on some terminals) write a file; a carriage return or a backspace draws
over what was shown; Unicode's bidirectional overrides reorder a line of
code so that it reads as something else than what runs ("Trojan Source",
CVE-2021-42574). A lesson, the code's output and a student's file can all
hold them, and the point of showing code is that what the student sees is
what runs. So everything this command prints goes through shown(): each C0
control but newline and tab, DEL, the C1 controls (0x80-0x9f: 0x9b is a
one-byte ESC [) and the bidirectional controls are written as escapes
(\\x1b, \\u202e), as Python's repr() writes them.
"""
import os
import re
import sys
import textwrap
import time

from . import catalog, check, directory, load, paths, progress, run_step, store, trust, validate
from .format import MAX_LIMIT_S, LessonError
from .trust import Untrusted
from . import runner as _runner

_CONTROLS = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069]")
CHECK_MAX_BYTES = 1 << 20  # a --check solution file: 1 MiB


def shown(text):
    """`text` with its control characters written as escapes (Note [Text the terminal shows])."""
    return _CONTROLS.sub(lambda m: f"\\x{ord(m.group()):02x}" if ord(m.group()) < 0x100
                         else f"\\u{ord(m.group()):04x}", text)


def echo(*parts, sep=" ", end="\n", file=None, flush=False):
    """print(), through shown()."""
    print(shown(sep.join(str(p) for p in parts)), end=end, file=file if file is not None else sys.stdout,
          flush=flush)

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
    p.add_argument("--watch", metavar="FILE.py", help="check FILE.py against the lesson's exercise each time it is "
                   "saved, until Ctrl-C")
    p.add_argument("--answers-to", metavar="DIR", help="also write each answer into DIR (a folder the class "
                   "shares), one file per student and question, for the teacher's --tally")
    p.add_argument("--student", metavar="NAME", help="the name --answers-to files the answers under ($USER@host by "
                   "default)")
    p.add_argument("--tally", metavar="DIR", help="count the class's answers in DIR (written by --answers-to), "
                   "per question and choice")
    p.add_argument("--hints", action="store_true", help="print the exercises' hints")
    p.add_argument("--solution", action="store_true", help="print the exercises' reference solutions")
    p.add_argument("--handout", metavar="DIR", help="write two handouts as Markdown: DIR/student (questions, no "
                   "answers, no traces) and DIR/teacher (the key: traces, output, answers)")
    p.add_argument("--validate", nargs="?", const="", metavar="PATH",
                   help="parse and run lessons (a file, or a folder: the lessons folder by default) and check "
                        "that every selector, answer and exercise holds")
    p.add_argument("--reset", action="store_true", help="forget your progress (the named lesson's, or all)")
    p.add_argument("--trust", metavar="FILE",
                   help="show every block of code a lesson file from outside the lessons folder would run (its "
                        "setup blocks and checks included), then trust it: until then it runs nothing")
    p.set_defaults(fn=main)
    return p


def main(args):
    try:
        if args.trust is not None:
            return cmd_trust(args.trust)
        if args.validate is not None:
            return cmd_validate(args.validate or None)
        if args.reset:
            return cmd_reset(args.name)
        if args.name is None:
            return cmd_list()
        if args.hints or args.solution:  # reading only: an untrusted lesson's hints run nothing
            return cmd_hints(load(args.name, require_trust=False), args.solution)
        lesson = load(args.name)  # Untrusted unless it may run its code (Note [Trusting a lesson])
        if args.tally:
            return cmd_tally(lesson, args)
        if args.watch:
            return cmd_watch(lesson, args)
        if args.check:
            return cmd_check(lesson, args)
        if args.handout:
            return cmd_handout(lesson, args.handout)
        return cmd_run(lesson, args)
    except Untrusted as e:
        echo(f"descent lesson: {e}", file=sys.stderr)
        return 1
    except LessonError as e:
        echo(f"descent lesson: {e}", file=sys.stderr)
        return 2


# [SECTION] Listing and progress ------------------------------------------------------------------------

def cmd_list():
    entries = catalog()
    if not entries:
        echo(f"descent lesson: no lessons in {directory()} (set DESCENT_LESSONS to a folder of lessons)")
        return 2
    echo(f"The lessons ({directory()}); your progress is kept in {progress.path()}\n")
    width = max(len(e["name"]) for e in entries)
    for e in entries:
        number = "" if e["number"] is None else str(e["number"])
        if e["error"]:
            echo(f"{number:>3} {e['name']:{width}}  cannot be read: {e['error']}")
            continue
        if e["untrusted"]:  # Note [Trusting a lesson]
            echo(f"{number:>3} {e['name']:{width}}  {e['title']}\n    {'':{width}}  runs nothing until you trust it: "
                 f"descent lesson --trust {e['path']}")
            continue
        p = e["progress"]
        right = sum(1 for v in p["predictions"].values() if v)
        done = sum(1 for v in p["exercises"].values() if v)
        state = (f"{len(p['seen'])}/{e['steps']} steps seen, {right}/{e['predictions']} predictions right, "
                 f"{done}/{e['exercises']} exercise{'s' if e['exercises'] != 1 else ''} done")
        echo(f"{number:>3} {e['name']:{width}}  {e['title']}\n    {'':{width}}  {state}")
    echo("\nOpen one with: descent lesson NAME (or its number)")
    return 0


def cmd_reset(name):
    if name is None:
        if not progress.reset():
            return 1
        echo(f"forgot all progress ({progress.path()})")
        return 0
    lesson = load(name, require_trust=False)
    if not progress.reset(lesson.name):
        return 1
    echo(f"forgot your progress in '{lesson.name}'")
    return 0


# [SECTION] Running a lesson -------------------------------------------------------------------------------

class _Answers:
    """Where answers come from: the --answers list, else stdin (EOF: no answer). At the prompt, an answer
    that cannot be read (a letter past the choices, a word for a number) is asked again; from the list it
    is judged as it is, wrong."""

    def __init__(self, given):
        self.given = None if given is None else [a.strip() for a in given.split(",")]
        self.class_folder = None  # a _ClassFolder (--answers-to), or None

    def next(self, prompt, why_not=lambda typed: ""):
        if self.given is not None:
            if not self.given:
                echo(f"{prompt}(no answer given)")
                return None
            a = self.given.pop(0)
            echo(f"{prompt}{a}")
            if why_not(a):
                echo(f"({why_not(a)}: judged wrong)")
            return a
        while True:
            try:
                typed = input(prompt)
            except EOFError:
                echo("(no answer)")
                return None
            problem = why_not(typed)
            if not problem:
                return typed
            echo(f"{problem}. Try again (Ctrl+D shows the answer).")

    def skip(self):
        """Drops the listed answer of a question that cannot be asked, so the next ones stay in step."""
        if self.given:
            self.given.pop(0)


def _unreadable(entry, typed):
    """Why `typed` is no answer to the prediction `entry` at all ("" when it is one, right or wrong)."""
    from .selector import number_in, reading_of
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
    if entry["kind"] == "number" and number_in(t, entry["ask"]) is None:
        return f"'{t}' is not a number" + (" in a unit the question asks in" if any(c.isdigit() for c in t) else "")
    return ""


def _indent(text, by="    "):
    return textwrap.indent(text.rstrip("\n"), by, lambda line: True)


def cmd_run(lesson, args):
    answers = _Answers(args.answers)
    if args.answers_to:
        try:
            answers.class_folder = _ClassFolder(args.answers_to, lesson, args.student)
        except (OSError, ValueError) as e:
            why = store.reason(e) if isinstance(e, OSError) else str(e)
            echo(f"descent lesson: --answers-to: cannot write into {args.answers_to}: {why}", file=sys.stderr)
            return 2
    steps = range(len(lesson.steps))
    if args.step is not None:
        if not 1 <= args.step <= len(lesson.steps):
            echo(f"descent lesson: '{lesson.name}' has steps 1 to {len(lesson.steps)}, not {args.step}",
                  file=sys.stderr)
            return 2
        steps = [args.step - 1]
    questions = sum(len(lesson.steps[i].predictions) for i in steps)
    if answers.given is not None and len(answers.given) > questions:
        where = f"step {args.step} of '{lesson.name}'" if args.step is not None else f"'{lesson.name}'"
        echo(f"descent lesson: --answers: {where} has {questions} question(s), not {len(answers.given)}",
              file=sys.stderr)
        return 2
    number = f" {lesson.number}" if lesson.number is not None else ""
    echo(f"Lesson{number}: {lesson.title}\n")
    echo(f"What it teaches: {lesson.teaches}")
    echo(f"What it assumes: {lesson.assumes}\n")
    if lesson.intro and args.step is None:
        echo(lesson.intro + "\n")
    asked = right = 0
    for i in steps:
        step = lesson.steps[i]
        echo(f"{RULE} Step {i + 1} of {len(lesson.steps)}: {step.title} {RULE}\n")
        if step.prose:
            echo(step.prose + "\n")
        if step.setup is not None:  # Note [Nothing runs unseen]
            echo(f"First, untraced, the step's setup ({_lines(step.setup.text)}):\n{_indent(step.setup.text)}\n")
        if step.run is not None:
            device = _runner.device_name(step.run.device)
            sim = " (a simulated device: this machine has no NVIDIA GPU)" if device == "sim:0" else ""
            echo(f"The code, run on {device}{sim}:\n{_indent(step.run.text)}\n")
            r = run_step(lesson, i)
            for k, entry in enumerate(r["predictions"]):
                asked += 1
                right += _ask(lesson, i, k, entry, r, answers)
            if r["output"]:  # after the questions: what a step prints may be an answer
                echo(f"It printed:\n{_indent(r['output'])}\n")
            if r["tree"]:
                echo(f"The trace:\n{r['tree'].rstrip()}\n")
            if r.get("compare"):
                echo(f"PyTorch's own profile of the same code: {r['compare']}\n(beside descent's trace: "
                      f"descent app --lesson {lesson.name} --lesson-step {i + 1}, then 3 for the Compare tab)\n")
            if r["error"]:
                echo(f"The code raised (this is the step's outcome):\n{_indent(r['error'])}\n")
            for look in r["looks"]:
                if look["problem"]:
                    echo(f"Look at: {look['selector']} -- {look['problem']}\n")
                else:
                    value = f" = {look['value']}" if look["value"] is not None else ""
                    echo(f"Look at ({look['selector']}){value}:\n    {look['span']['line_text']}\n")
        if step.exercise is not None:
            _show_exercise(lesson, i)
        progress.mark_seen(lesson.name, i)
    if asked:
        echo(f"{right} of {asked} predictions right.")
    return 0 if right == asked else 1


# Note [Nothing runs unseen]
# ~~~~~~~~~~~~~~~~~~~~~~~~~~
# A step's ```setup runs untraced before its code, so its trace never shows
# it; the terminal prints it, whole, before the step runs, and then the code
# itself. Whole rather than folded to one line: the setup is where the names
# the step's questions are about are made (the longest in lessons/ is 18
# lines), and a fold would hide exactly the lines that run unseen. What a
# lesson from outside the lessons folder runs beyond that (its answers'
# python, its checks) is shown once, when it is trusted (cmd_trust).

def _lines(text):
    n = len(text.rstrip("\n").split("\n"))
    return f"{n} line{'s' if n != 1 else ''}"


def _ask(lesson, i, k, entry, result, answers):
    """Asks prediction k of step i, then reveals the answer with its evidence. Returns whether it was right."""
    from . import answer
    echo(f"Predict: {entry['ask']}")
    for j, c in enumerate(entry["choices"]):
        echo(f"  {chr(ord('a') + j)}) {c}")
    if entry["problem"]:
        answers.skip()
        echo(f"(this question cannot be answered here: {entry['problem']})\n")
        return False
    hint = " (a letter)" if entry["choices"] else (f" (a number, {entry['tolerance']})" if entry["tolerance"]
                                                   else "")
    typed = answers.next(f"Your answer{hint}: ", lambda t: _unreadable(entry, t))
    if typed is None:
        echo(f"The answer: {entry['answer_text']}.")
        verdict = False
    else:
        verdict = answer(lesson, i, k, typed, result)["right"]
        if answers.class_folder is not None:
            answers.class_folder.record(i, k, entry, typed)
        echo(("Right: " if verdict else "Not quite: the answer is ") + f"{entry['answer_text']}.")
    if entry["evidence"]:
        echo(f"The evidence, from this run's trace:\n{_indent(entry['evidence'])}")
    if entry["explain"]:
        echo(textwrap.fill(entry["explain"], 100))
    echo()
    return verdict


# Note [A class's answers]
# ~~~~~~~~~~~~~~~~~~~~~~~~
# A teacher asking a class wants to see how many picked each choice before
# revealing the answer, without a server: every student's terminal runs
# `descent lesson NAME --answers-to DIR`, DIR a folder they all can write (a
# network share, a shared home), and each answer is one small file,
# DIR/LESSON/step-KK-q-N/STUDENT.txt, holding the choice's index (or the
# typed text); a student who answers again replaces their own file, whole
# (store.write_atomic), so a count is one answer per student.
# `descent lesson NAME --tally DIR` reads the folder and prints, for each
# question, how many chose each choice (and how many answered), so the
# presenter can show it. The student's name is --student, else $USER@host;
# it becomes a file name, so only letters, digits and . _ - @ are kept.

class _ClassFolder:
    """Where --answers-to writes a student's answers (Note [A class's answers])."""

    def __init__(self, root, lesson, student=None):
        import getpass
        import socket
        if student is None:
            try:
                student = f"{getpass.getuser()}@{socket.gethostname()}"
            except (KeyError, OSError):
                student = f"student-{os.getpid()}"
        self.student = _file_name(student)
        if not self.student:
            raise ValueError(f"--student {student!r} leaves no letter or digit for a file name")
        self.folder = os.path.join(root, _file_name(lesson.name))
        os.makedirs(self.folder, exist_ok=True)

    def record(self, i, k, entry, typed):
        from .selector import reading_of
        d = os.path.join(self.folder, f"step-{i + 1:02d}-q-{k + 1}")
        choice = reading_of(typed, entry["choices"]) if entry["choices"] else None
        text = str(choice) if choice is not None else typed.strip()
        try:
            os.makedirs(d, exist_ok=True)
            store.write_atomic(os.path.join(d, self.student + ".txt"), (text + "\n").encode("utf-8"))
        except OSError as e:
            echo(f"(your answer was not written into {d}: {store.reason(e)})")


def _file_name(text):
    return re.sub(r"[^A-Za-z0-9._@-]", "_", text).strip("._")[:80]


def cmd_tally(lesson, args):
    """Counts the class's answers in args.tally per question and choice (Note [A class's answers])."""
    folder = os.path.join(args.tally, _file_name(lesson.name))
    if not os.path.isdir(folder):
        echo(f"descent lesson: no answers to '{lesson.name}' in {args.tally} (students write them with "
             f"descent lesson {lesson.name} --answers-to {args.tally})", file=sys.stderr)
        return 1
    steps = range(len(lesson.steps)) if args.step is None else [args.step - 1]
    for i in steps:
        if not 0 <= i < len(lesson.steps):
            echo(f"descent lesson: '{lesson.name}' has steps 1 to {len(lesson.steps)}, not {args.step}",
                 file=sys.stderr)
            return 2
        for k, p in enumerate(lesson.steps[i].predictions):
            d = os.path.join(folder, f"step-{i + 1:02d}-q-{k + 1}")
            picked = []
            try:
                names = sorted(n for n in os.listdir(d) if n.endswith(".txt"))
            except OSError:
                names = []
            for n in names:
                try:
                    data = store.read_bytes(os.path.join(d, n), 4096)
                except store.Unreadable:
                    continue
                if data is not None:
                    picked.append(data.decode("utf-8", "replace").strip())
            echo(f"Step {i + 1}, question {k + 1}: {p.ask}")
            echo(f"  {len(picked)} answer{'s' if len(picked) != 1 else ''}")
            if p.choices:
                for j, c in enumerate(p.choices):
                    n = picked.count(str(j))
                    echo(f"  {chr(ord('a') + j)}) {n:3}  {'#' * n:20}  {c}")
            else:
                counts = {}
                for a in picked:
                    counts[a] = counts.get(a, 0) + 1
                for a, n in sorted(counts.items(), key=lambda kv: -kv[1])[:12]:
                    echo(f"  {n:3}  {a}")
            echo()
    return 0


def _show_exercise(lesson, i):
    ex = lesson.steps[i].exercise
    which = [j for j, _ in lesson.exercises()].index(i) + 1
    flag = f" --exercise {which}" if len(lesson.exercises()) > 1 else ""
    echo(f"Exercise: {ex.goal}\n")
    echo(f"Starting code (on {_runner.device_name(ex.device)}):\n{_indent(ex.start.text)}\n")
    echo(f"Write your version in a file and check it:  descent lesson {lesson.name} --check FILE.py{flag}")
    echo(f"A hint:  descent lesson {lesson.name} --hints    (the solution: --solution)\n")


def cmd_hints(lesson, solution):
    exercises = lesson.exercises()
    if not exercises:
        echo(f"'{lesson.name}' has no exercise")
        return 0
    for n, (i, ex) in enumerate(exercises, 1):
        echo(f"Exercise {n} (step {i + 1}): {ex.goal}")
        for h in ex.hints:
            echo(textwrap.fill(h, 100, initial_indent="  hint: ", subsequent_indent="        "))
        if solution:
            echo(f"  the solution:\n{_indent(ex.solution.text, '    ')}")
        echo()
    return 0


# [SECTION] Checking an exercise ---------------------------------------------------------------------------

def _which_exercise(lesson, args):
    """(step index, exercise) that --check or --watch grades, or None after saying why not."""
    exercises = lesson.exercises()
    if not exercises:
        echo(f"descent lesson: '{lesson.name}' has no exercise to check", file=sys.stderr)
        return None
    k = args.exercise
    if k is None:
        if len(exercises) > 1:
            listed = "; ".join(f"{n}: {ex.goal}" for n, (_, ex) in enumerate(exercises, 1))
            echo(f"descent lesson: '{lesson.name}' has {len(exercises)} exercises: say which with --exercise K "
                  f"({listed})", file=sys.stderr)
            return None
        k = 1
    if not 1 <= k <= len(exercises):
        echo(f"descent lesson: '{lesson.name}' has exercises 1 to {len(exercises)}, not {k}", file=sys.stderr)
        return None
    step, ex = exercises[k - 1]
    return step, ex


def _graded(lesson, step, ex):
    """Which lesson, exercise and step a check grades against, in words: the lesson as it was opened
    (a name, a number, or a file from elsewhere), so that a student who opened the wrong one sees it."""
    k = [i for i, _ in lesson.exercises()].index(step) + 1
    number = f"lesson {lesson.number} " if lesson.number is not None else "lesson "
    return f"{number}'{lesson.name}' ({lesson.path}), exercise {k} (step {step + 1}): {ex.goal}"


def cmd_check(lesson, args):
    which = _which_exercise(lesson, args)
    if which is None:
        return 2
    step, ex = which
    rc = _check_file(lesson, step, ex, args.check, args.limit)
    if rc != 2:  # after the verdict: the grader's first line is always its own (Note [The grader's child])
        echo(f"(graded against {_graded(lesson, step, ex)})")
    return rc


def _check_file(lesson, step, ex, path, limit_arg):
    """Grades the solution in `path`: 0 passed, 1 failed, 2 when it cannot be read or the limit is wrong."""
    try:
        data = store.read_bytes(path, CHECK_MAX_BYTES)
        if data is None:
            raise store.Unreadable("No such file or directory")
        code = data.decode("utf-8")
    except (store.Unreadable, UnicodeDecodeError) as e:
        why = "it is not UTF-8 text" if isinstance(e, UnicodeDecodeError) else str(e)
        echo(f"descent lesson: cannot read {path}: {why}", file=sys.stderr)
        return 2
    limit = limit_arg or ex.limit_s
    if not 0 < limit <= MAX_LIMIT_S:
        echo(f"descent lesson: --limit: expected seconds between 0 and {MAX_LIMIT_S:g}, not {limit:g}",
             file=sys.stderr)
        return 2
    result = check(lesson, step, code, limit, in_child=True)  # Note [The grader's child]
    if result["output"]:
        echo(f"Your code printed:\n{_indent(result['output'])}\n")
    if result["passed"]:
        echo(f"PASSED ({result['seconds']:.2f} s): {result['reason']}")
        return 0
    echo(f"FAILED: {result['reason']}")
    if result["error"] and "raised" not in result["reason"]:
        echo(_indent(result["error"]))
    return 1


WATCH_POLL_S = 0.25  # how often --watch looks at the file's time and size


def _stamp(path):
    try:
        st = os.stat(path)
    except OSError:
        return None
    return (st.st_mtime_ns, st.st_size, st.st_ino)


def cmd_watch(lesson, args):
    """Checks the file each time it is saved (its modification time, size or inode changes: an editor that
    saves by renaming a new file over it makes a new inode), as rustlings' watch does, until Ctrl-C, which
    ends it with exit status 0. The first check runs at once when the file is there."""
    which = _which_exercise(lesson, args)
    if which is None:
        return 2
    step, ex = which
    echo(f"Watching {args.watch} against {_graded(lesson, step, ex)}\nEach save is checked. Ctrl-C ends it.\n")
    seen, checks = None, 0
    try:
        while True:
            stamp = _stamp(args.watch)
            if stamp is not None and stamp != seen:
                seen = stamp
                checks += 1
                echo(f"{RULE} check {checks}, {time.strftime('%H:%M:%S')} {RULE}")
                rc = _check_file(lesson, step, ex, args.watch, args.limit)
                if rc == 2 and args.limit:
                    return 2  # a wrong --limit stays wrong: the next save would say the same
                echo(f"\nWaiting for the next save of {args.watch} (Ctrl-C ends it).", flush=True)
            time.sleep(WATCH_POLL_S)
    except KeyboardInterrupt:
        echo(f"\nStopped watching {args.watch} after {checks} check{'s' if checks != 1 else ''}.")
        return 0


# [SECTION] Validating, for authors ------------------------------------------------------------------------

def cmd_validate(where):
    from .format import parse_file
    files = paths(where)
    if where and not os.path.exists(where):
        echo(f"descent lesson: {where} does not exist", file=sys.stderr)
        return 2
    if not files:
        echo(f"descent lesson: no lesson files (*.md) in {where or directory()}", file=sys.stderr)
        return 2
    failed = warnings = 0
    began = time.perf_counter()
    parsed = []  # (path, Lesson or the LessonError), every file read before any runs
    for p in files:
        try:
            parsed.append((p, parse_file(p)))
        except LessonError as e:
            parsed.append((p, e))
    refused = [trust.check(lesson) for _, lesson in parsed if not isinstance(lesson, LessonError)]
    if any(refused):  # Note [Trusting a lesson]: nothing runs, not even the trusted ones beside it
        for why in refused:
            if why:
                echo(f"descent lesson: {why}", file=sys.stderr)
        return 1
    for p, lesson in parsed:
        t0 = time.perf_counter()
        if isinstance(lesson, LessonError):
            echo(f"FAIL {os.path.basename(p)}\n  {lesson}")
            failed += 1
            continue
        warned = []
        problems = validate(lesson, warnings=warned)
        took = time.perf_counter() - t0
        counts = (f"{len(lesson.steps)} steps, {len(lesson.predictions())} prediction{'s' if len(lesson.predictions()) != 1 else ''}, "
                  f"{len(lesson.exercises())} exercise{'s' if len(lesson.exercises()) != 1 else ''}")
        warn_note = f", {len(warned)} warning{'s' if len(warned) != 1 else ''}" if warned else ""
        if problems:
            failed += 1
            echo(f"FAIL {lesson.name} ({counts}{warn_note}) in {took:.1f} s")
            for pr in problems:
                echo(_indent(pr, "  "))
        else:
            echo(f"ok   {lesson.name:18} ({counts}{warn_note}) in {took:.1f} s")
        warnings += len(warned)
        for w in warned:  # Note [Never give an answer away]: a warning does not fail the lesson
            echo(_indent("warning: " + w, "  "))
    total = time.perf_counter() - began
    warn_note = f" ({warnings} warning{'s' if warnings != 1 else ''})" if warnings else ""
    echo(f"{len(files) - failed} of {len(files)} lessons valid in {total:.1f} s{warn_note}")
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
                    teacher += ["", "   ```text", _indent(entry["evidence"], "   "), "   ```"]
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


# [SECTION] Trusting a lesson file --------------------------------------------------------------------------

def cmd_trust(target):
    """Shows every block of code the lesson file (or each lesson file of a folder) would run, then trusts it
    (Note [Trusting a lesson]). A file that does not parse is not trusted: it runs nothing anyway."""
    from .format import parse_file
    files = paths(target) if os.path.isdir(target) else [target]
    if not files:
        echo(f"descent lesson: no lesson files (*.md) in {target}", file=sys.stderr)
        return 2
    for p in files:
        lesson = parse_file(p)  # LessonError: main() names the file and the line
        if trust.installed(p):
            echo(f"{p} is one of the installed lessons: it is trusted already")
            continue
        show_code(lesson)
        try:
            where = trust.record(lesson)
        except OSError as e:
            echo(f"descent lesson: cannot record the trust in {trust.store_path()}: {store.reason(e)}",
                 file=sys.stderr)
            return 1
        echo(f"Trusted {p} (sha256 {lesson.sha256}), in {where}. If the file changes, it is untrusted again.\n")
    return 0


def show_code(lesson):
    """Every block of code in `lesson` that opening, checking or validating it runs, with the file's line
    numbers, in the order of the file."""
    def block(what, code):
        lines = code.text.rstrip("\n").split("\n")
        echo(f"  {what} (line{'s' if len(lines) > 1 else ''} {code.line}"
             f"{'-' + str(code.line + len(lines) - 1) if len(lines) > 1 else ''}):")
        for n, line in enumerate(lines, code.line):
            echo(f"    {n:5} | {line}")

    echo(f"{lesson.path}: {len(lesson.steps)} step(s), sha256 {lesson.sha256}")
    echo("Every piece of Python it runs when it is opened, checked or validated:\n")
    for i, step in enumerate(lesson.steps):
        echo(f"Step {i + 1} (line {step.line}): {step.title}")
        if step.setup is not None:
            block("setup, run untraced before the step's code and the exercise's", step.setup)
        if step.run is not None:
            block(f"run {step.run.device}", step.run)
        for k, p in enumerate(step.predictions, 1):
            if p.answer.kind == "python":
                echo(f"  predict {k} (line {p.line}), its answer, evaluated over the step's variables:")
                for line in p.answer.text.split("\n"):
                    echo(f"          | {line}")
        if step.compare:
            echo(f"  compare: reads the PyTorch profile {step.compare}")
        ex = step.exercise
        if ex is not None:
            echo(f"  exercise (line {ex.line}), its checks, evaluated after the student's code:")
            for text, _, line in ex.checks:
                for n, piece in enumerate(text.split("\n")):
                    echo(f"    {line + n:5} | {piece}")
            block("exercise start (run when the lesson is validated)", ex.start)
            block("exercise solution (run when the lesson is validated)", ex.solution)
        echo()
