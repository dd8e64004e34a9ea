"""A student's progress through the lessons, kept between runs.

One JSON file, $XDG_DATA_HOME/descent/progress.json (~/.local/share/descent/
when XDG_DATA_HOME is unset), shared by the terminal and the app:

    {"version": 1, "lessons": {"dispatcher": {"seen": [0, 1, 2],
                                              "predictions": {"1.0": true, "2.0": false},
                                              "exercises": {"3": true}}}}

Steps and predictions are numbered from 0 inside the file ("step.prediction").
A prediction keeps the student's first answer (right or not), as a class would
count it; an exercise, once passed, stays passed.

Note [Progress that cannot be read]
~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
The file holds nothing a lesson cannot give back, so no state of it may stop
a lesson: a file that cannot be read (a FIFO, a directory or a link to
/dev/zero in its place, more than MAX_BYTES, JSON nested too deep) is treated
as empty, and a value of the wrong kind (a step that is not a number, an
answer that is not true or false) is left out, the rest kept; either way
with one line on stderr, once per process, never a traceback (store.py
reads it: Note [Files a lesson keeps]). Saving writes the file whole through
a temporary file; when that fails (a read-only folder, a full disk) the old
file stays as it was and one line says why, and the lesson goes on.
"""
import json
import os
import re

from . import store

VERSION = 1
MAX_BYTES = 1 << 20  # 1 MiB: ten lessons' progress is about 2 KiB
_PREDICTION = re.compile(r"^\d{1,6}\.\d{1,6}$")
_STEP = re.compile(r"^\d{1,6}$")


def path():
    base = os.environ.get("XDG_DATA_HOME") or os.path.join(os.path.expanduser("~"), ".local", "share")
    return os.path.join(base, "descent", "progress.json")


def _empty():
    return {"version": VERSION, "lessons": {}}


def load():
    """The progress, as {"version", "lessons": {name: {seen, predictions, exercises}}}: empty when there is
    none or it cannot be read (Note [Progress that cannot be read])."""
    p = path()
    data = store.read_json_or_warn(p, MAX_BYTES, "your progress file", "it is treated as empty")
    if data is None:
        return _empty()
    clean, dropped = _clean(data)
    if dropped:
        more = f" (and {len(dropped) - 1} more)" if len(dropped) > 1 else ""
        store.warn_once(("progress", p, "values"), f"descent lesson: your progress file {p} holds a value of the "
                                                   f"wrong kind at {dropped[0]}{more}: left out, the rest is kept")
    return clean


def _clean(data):
    """(the progress with only well-formed values, [where each value left out was])."""
    out, dropped = _empty(), []
    if not isinstance(data, dict) or not isinstance(data.get("lessons"), dict):
        return out, ["the top (expected {\"version\": 1, \"lessons\": {...}})"]
    for name, entry in data["lessons"].items():
        if not isinstance(entry, dict):
            dropped.append(f"lessons.{name}")
            continue
        e = out["lessons"][name] = {"seen": [], "predictions": {}, "exercises": {}}
        seen = entry.get("seen", [])
        if isinstance(seen, list):
            for k, step in enumerate(seen):
                if type(step) is int and 0 <= step < 1_000_000:
                    e["seen"].append(step)
                else:
                    dropped.append(f"lessons.{name}.seen[{k}]")
            e["seen"] = sorted(set(e["seen"]))
        else:
            dropped.append(f"lessons.{name}.seen")
        for key, pattern in (("predictions", _PREDICTION), ("exercises", _STEP)):
            values = entry.get(key, {})
            if not isinstance(values, dict):
                dropped.append(f"lessons.{name}.{key}")
                continue
            for k, v in values.items():
                if pattern.match(k) and type(v) is bool:
                    e[key][k] = v
                else:
                    dropped.append(f"lessons.{name}.{key}.{k}")
    return out, dropped


def save(data):
    """Writes the file whole (store.write_atomic). Returns whether it was saved; when not, the old file is
    kept and one line on stderr says why (Note [Progress that cannot be read])."""
    p = path()
    try:
        os.makedirs(os.path.dirname(p), exist_ok=True)
        store.write_atomic(p, (json.dumps(data, indent=1, sort_keys=True) + "\n").encode("utf-8"))
    except OSError as e:
        store.warn_once(("save", p, store.reason(e)), f"descent lesson: cannot save your progress in {p}: "
                                                      f"{store.reason(e)} (the old file is kept)")
        return False
    return True


def _entry(data, lesson):
    e = data["lessons"].setdefault(lesson, {})
    for key, empty in (("seen", []), ("predictions", {}), ("exercises", {})):
        e.setdefault(key, empty)
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
    """Forgets one lesson's progress, or everyone's. Returns whether it was forgotten (when not, one line on
    stderr said why)."""
    if lesson is None:
        p = path()
        try:
            os.unlink(p)
        except FileNotFoundError:
            pass
        except OSError as e:
            store.warn_once(("reset", p, store.reason(e)), f"descent lesson: cannot remove your progress file {p}: "
                                                           f"{store.reason(e)}")
            return False
        return True
    data = load()
    if data["lessons"].pop(lesson, None) is not None:
        return save(data)
    return True
