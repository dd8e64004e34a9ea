"""descent.lessons: guided lessons down the floors, each answer read off the trace of what ran.

The lesson files live in lessons/ at the project's top level (lessons/README.md
is the author's guide). This package reads them (format.py), runs their steps
traced and reads what they point at (runner.py, selector.py), keeps a
student's progress (progress.py), decides which lesson files may run their
code (trust.py: Note [Trusting a lesson]), and is the `descent lesson` command
(terminal.py). The app's embedded interpreter calls the functions below,
which return plain data:

    import descent.lessons as L
    L.catalog()                      # [{name, number, title, teaches, steps, ..., progress, error}]
    lesson = L.load("dispatcher")    # a Lesson (format.py), or LessonError naming file and line (Untrusted:
                                     #   a file from outside the lessons folder that the user has not trusted)
    r = L.run_step(lesson, 0)        # {prose, code, trace, tree, looks, predictions, exercise, ...}
    L.answer(lesson, 0, 0, "b", r)   # {right, answer_text, evidence, explain}; recorded in the progress
    L.check(lesson, 3, code)         # {passed, reason, trace, ...}; recorded in the progress
    L.validate(lesson)               # [] when every selector, answer and exercise holds
"""
import os

from . import progress, trust
from .format import LessonError, parse, parse_file
from .runner import LimitExceeded, check_exercise, check_in_child, device_name, judge, run_step, time_limit, validate
from .trust import Untrusted

__all__ = ["LessonError", "LimitExceeded", "Untrusted", "answer", "catalog", "check", "check_in_child",
           "device_name", "directory", "find", "installed_folders", "load", "parse", "parse_file", "paths",
           "progress", "run_step", "time_limit", "trust", "validate"]


def installed_folders():
    """The lessons folders the package finds beside itself, in the order it looks: the build's copy
    (build/python/descent -> build/lessons), then the source tree's (floors/python/descent -> lessons/).
    Their lessons are trusted (Note [Trusting a lesson]); $DESCENT_LESSONS is not among them."""
    here = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))  # .../python/descent
    out = []
    for up in (2, 3):
        d = here
        for _ in range(up):
            d = os.path.dirname(d)
        candidate = os.path.join(d, "lessons")
        if os.path.isdir(candidate):
            out.append(candidate)
    return out


def directory():
    """The lessons folder: $DESCENT_LESSONS, else the first installed folder (installed_folders)."""
    env = os.environ.get("DESCENT_LESSONS")
    if env:
        return env
    found = installed_folders()
    if found:
        return found[0]
    here = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    return os.path.join(os.path.dirname(os.path.dirname(here)), "lessons")


def paths(where=None):
    """The lesson files in a folder (the lessons folder by default), in their order; a file path as itself."""
    where = where or directory()
    if os.path.isfile(where):
        return [where]
    try:
        names = os.listdir(where)
    except OSError:
        return []
    files = [os.path.join(where, n) for n in names if n.endswith(".md") and n.lower() != "readme.md"]
    return sorted(files, key=lambda p: (os.path.basename(p).split("-")[0].zfill(4), os.path.basename(p)))


def load(name, require_trust=True):
    """The lesson called `name` (its name, its number, or a path to a file); LessonError when it is not
    there or does not parse, and Untrusted (a LessonError) when it may not run its code and
    `require_trust` (Note [Trusting a lesson]): pass False only to read it (hints, a reset), never to run."""
    lesson = parse_file(find(name))
    if require_trust:
        trust.require(lesson)
    return lesson


def find(name):
    """The path of the lesson called `name`: a file path, a lesson's name (dispatcher), its number (3 or
    03) or its file name (03-dispatcher.md)."""
    if os.path.sep in name or name.endswith(".md"):
        if os.path.isfile(name):
            return name
    from .format import name_of
    known = []
    for p in paths():
        naming = name_of(p)
        if naming is None:
            continue
        number, short = naming
        known.append(short)
        if name in (short, os.path.basename(p), os.path.basename(p)[:-3]) or \
                (name.isdigit() and number is not None and int(name) == number):
            return p
    listed = ", ".join(known) or f"none in {directory()}"
    raise LessonError(name, 0, f"no lesson called '{name}' (the lessons: {listed})")


def catalog(where=None):
    """One dict per lesson file, in order: name, number, title, teaches, assumes, path, steps,
    predictions, exercises, progress ({seen, predictions, exercises}), untrusted ("" or why it may not run
    its code: Note [Trusting a lesson]; listing it runs nothing), and error ("" or the LessonError's text,
    for a file that does not parse: the others are listed all the same)."""
    out = []
    for p in paths(where):
        from .format import name_of
        naming = name_of(p) or (None, os.path.splitext(os.path.basename(p))[0])
        entry = {"name": naming[1], "number": naming[0], "path": p, "title": "", "teaches": "", "assumes": "",
                 "steps": 0, "predictions": 0, "exercises": 0, "error": "", "untrusted": ""}
        try:
            lesson = parse_file(p)
        except LessonError as e:
            entry["error"] = str(e)
        else:
            entry.update(title=lesson.title, teaches=lesson.teaches, assumes=lesson.assumes,
                         steps=len(lesson.steps), predictions=len(lesson.predictions()),
                         exercises=len(lesson.exercises()), untrusted=trust.check(lesson))
        entry["progress"] = progress.of(entry["name"])
        out.append(entry)
    return out


def answer(lesson, step, k, typed, result, record=True):
    """Judges a student's answer to prediction k of a step, given that step's run_step result. Returns
    {right, answer_text, evidence, explain}, and records the first answer in the progress."""
    right, shown = judge(lesson, step, k, result, typed)
    entry = result["predictions"][k]
    if record:
        progress.record_prediction(lesson.name, step, k, right)
    return {"right": right, "answer_text": shown, "evidence": entry["evidence"], "explain": entry["explain"]}


def check(lesson, step, code, limit_s=None, record=True, in_child=False):
    """check_exercise (or, with `in_child`, check_in_child: the code run in a process of its own and the
    verdict given here, Note [The grader's child]), with the outcome recorded in the progress."""
    result = (check_in_child if in_child else check_exercise)(lesson, step, code, limit_s)
    if record:
        progress.record_exercise(lesson.name, step, result["passed"])
    return result
