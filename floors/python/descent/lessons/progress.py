"""A student's progress through the lessons, kept between runs.

One JSON file, $XDG_DATA_HOME/descent/progress.json (~/.local/share/descent/
when XDG_DATA_HOME is unset), shared by the terminal and the app:

    {"version": 1, "lessons": {"dispatcher": {"seen": [0, 1, 2],
                                              "predictions": {"1.0": true, "2.0": false},
                                              "exercises": {"3": true}}}}

Steps and predictions are numbered from 0 inside the file ("step.prediction").
A prediction keeps the student's first answer (right or not), as a class would
count it; an exercise, once passed, stays passed. A file that cannot be read
is treated as empty and replaced at the next save (it holds nothing a lesson
cannot give back).
"""
import json
import os
import tempfile

VERSION = 1


def path():
    base = os.environ.get("XDG_DATA_HOME") or os.path.join(os.path.expanduser("~"), ".local", "share")
    return os.path.join(base, "descent", "progress.json")


def load():
    try:
        with open(path(), encoding="utf-8") as f:
            data = json.load(f)
    except (OSError, ValueError):
        return {"version": VERSION, "lessons": {}}
    if not isinstance(data, dict) or not isinstance(data.get("lessons"), dict):
        return {"version": VERSION, "lessons": {}}
    return data


def save(data):
    """Writes the file whole, through a temporary file renamed over it (never half written)."""
    p = path()
    os.makedirs(os.path.dirname(p), exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=".progress.", dir=os.path.dirname(p))
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            json.dump(data, f, indent=1, sort_keys=True)
        os.replace(tmp, p)
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise


def _entry(data, lesson):
    e = data["lessons"].setdefault(lesson, {})
    if not isinstance(e, dict):
        e = data["lessons"][lesson] = {}
    for key, empty in (("seen", []), ("predictions", {}), ("exercises", {})):
        if not isinstance(e.get(key), type(empty)):
            e[key] = empty
    return e


def mark_seen(lesson, step):
    data = load()
    e = _entry(data, lesson)
    if step not in e["seen"]:
        e["seen"] = sorted(set(e["seen"]) | {step})
        save(data)


def record_prediction(lesson, step, k, right):
    data = load()
    e = _entry(data, lesson)
    e["predictions"].setdefault(f"{step}.{k}", bool(right))
    save(data)


def record_exercise(lesson, step, passed):
    data = load()
    e = _entry(data, lesson)
    e["exercises"][str(step)] = bool(passed) or bool(e["exercises"].get(str(step)))
    save(data)


def of(lesson):
    """{seen, predictions, exercises} for one lesson (empty when it was never opened)."""
    return _entry(load(), lesson)


def reset(lesson=None):
    """Forgets one lesson's progress, or everyone's."""
    if lesson is None:
        try:
            os.unlink(path())
        except FileNotFoundError:
            pass
        return
    data = load()
    if data["lessons"].pop(lesson, None) is not None:
        save(data)
