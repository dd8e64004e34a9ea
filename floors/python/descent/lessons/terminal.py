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

The command's pieces: what it prints and how (terminal_text.py, Note [Text
the terminal shows]), running a lesson and its hints (terminal_run.py), a
class's answers (terminal_class.py), checking an exercise (terminal_check.py)
and the handouts (terminal_handout.py); listing, resetting, validating and
trusting are here.
"""
import os
import sys
import time

from . import catalog, directory, load, paths, progress, store, trust, validate
from .format import LessonError
from .terminal_check import cmd_check, cmd_watch
from .terminal_class import cmd_tally
from .terminal_handout import cmd_handout
from .terminal_run import cmd_hints, cmd_run
from .terminal_text import echo, indent, shown  # noqa: F401 (shown: the tests' and the app's)
from .trust import Untrusted


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
                echo(indent(pr, "  "))
        else:
            echo(f"ok   {lesson.name:18} ({counts}{warn_note}) in {took:.1f} s")
        warnings += len(warned)
        for w in warned:  # Note [Never give an answer away]: a warning does not fail the lesson
            echo(indent("warning: " + w, "  "))
    total = time.perf_counter() - began
    warn_note = f" ({warnings} warning{'s' if warnings != 1 else ''})" if warnings else ""
    echo(f"{len(files) - failed} of {len(files)} lessons valid in {total:.1f} s{warn_note}")
    return 1 if failed else 0


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
