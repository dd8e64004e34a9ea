"""`descent lesson NAME --check FILE.py` grades a solution of the lesson's exercise; `--watch FILE.py`
grades it again each time it is saved."""
import os
import sys
import time

from . import check, store
from .format import MAX_LIMIT_S
from .terminal_text import RULE, echo, indent

CHECK_MAX_BYTES = 1 << 20  # a --check solution file: 1 MiB


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
        echo(f"Your code printed:\n{indent(result['output'])}\n")
    if result["passed"]:
        echo(f"PASSED ({result['seconds']:.2f} s): {result['reason']}")
        return 0
    echo(f"FAILED: {result['reason']}")
    if result["error"] and "raised" not in result["reason"]:
        echo(indent(result["error"]))
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
