"""Which lesson files may run their code: the installed ones, and those the user trusted.

    descent lesson --trust FILE      shows every block of code FILE would run, and trusts it

Note [Trusting a lesson]
~~~~~~~~~~~~~~~~~~~~~~~~
Opening a lesson runs its code: the ```setup blocks (which the student never
sees traced), the ```run blocks, the python answers of its questions, its
exercise's start and solution (when validated) and its check: lines. A lesson
file is Python with Markdown around it, so one downloaded from anywhere can
read ~/.ssh or start a shell the moment it is opened. Jupyter answers the
same problem for notebooks by trusting only what the user trusted; so here:
a lesson in the installed lessons folder (the one the package finds beside
itself, build/lessons or the source tree's lessons/, never $DESCENT_LESSONS
alone, which is only where to look) is trusted; any other file runs nothing
until `descent lesson --trust FILE` has shown the user every block of code
it would run and recorded the SHA-256 of the file's bytes in the trust store,
$XDG_DATA_HOME/descent/trusted.json. Trust is in the content: the hash is of
the very bytes that are parsed and run (format.parse_file reads the file
once), so a file edited after it was trusted is untrusted again, and a file
swapped between the check and the run is not the file that runs. Paths are
compared after resolving links, so a link in the lessons folder that points
outside it is not installed. The store is written whole (store.py), like
the progress; a store that cannot be read trusts nothing.
"""
import datetime
import json
import os

from . import store
from .format import LessonError

MAX_BYTES = 4 << 20  # the trust store: 4 MiB, tens of thousands of files


class Untrusted(LessonError):
    """A lesson from outside the installed lessons folder that the user has not trusted (Note [Trusting a
    lesson]). str() is one line that says how to trust it."""

    def __init__(self, path, message):
        super().__init__(path, 0, message)

    def __str__(self):
        return self.message


def store_path():
    base = os.environ.get("XDG_DATA_HOME") or os.path.join(os.path.expanduser("~"), ".local", "share")
    return os.path.join(base, "descent", "trusted.json")


def installed(path):
    """Whether `path` lies in an installed lessons folder (links resolved)."""
    from . import installed_folders
    real = os.path.realpath(path)
    for folder in installed_folders():
        folder = os.path.realpath(folder)
        if os.path.commonpath([real, folder]) == folder:
            return True
    return False


def _load():
    """{sha256: {"path", "trusted"}} of the trust store; empty when there is none or it cannot be read."""
    p = store_path()
    data = store.read_json_or_warn(p, MAX_BYTES, "the trust store", "no lesson outside the installed folder is trusted")
    if data is None:
        return {}
    files = data.get("files") if isinstance(data, dict) else None
    if not isinstance(files, dict):
        store.warn_once(("trust", p, "shape"), f"descent lesson: the trust store {p} is not one this version "
                                               "wrote; no lesson outside the installed folder is trusted")
        return {}
    return {k: v for k, v in files.items() if isinstance(k, str) and len(k) == 64 and isinstance(v, dict)
            and isinstance(v.get("path"), str)}


def check(lesson):
    """"" when `lesson` (parsed by format.parse_file, so its sha256 is of the bytes it holds) may run its
    code, else why not, in one line that says how to trust it."""
    if installed(lesson.path):
        return ""
    files = _load()
    if lesson.sha256 in files:
        return ""
    real = os.path.realpath(lesson.path)
    command = f"descent lesson --trust {_quoted(lesson.path)}"
    if any(v["path"] == real for v in files.values()):
        return (f"{lesson.path} changed since you trusted it, and a lesson runs its code when it is opened: "
                f"read it again, then trust it with: {command}")
    return (f"{lesson.path} is not trusted: it is not one of the installed lessons, and a lesson runs its "
            f"code (setup blocks and checks too) when it is opened. See that code and trust it with: {command}")


def require(lesson):
    """Raises Untrusted unless `lesson` may run its code."""
    why = check(lesson)
    if why:
        raise Untrusted(lesson.path, why)


def record(lesson):
    """Trusts the bytes `lesson` was parsed from (its sha256), in place of any earlier trust of the same
    file. Raises OSError when the store cannot be written (the old store is kept)."""
    real = os.path.realpath(lesson.path)
    files = {k: v for k, v in _load().items() if v["path"] != real}
    files[lesson.sha256] = {"path": real,
                            "trusted": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds")}
    p = store_path()
    os.makedirs(os.path.dirname(p), exist_ok=True)
    text = json.dumps({"version": 1, "files": files}, indent=1, sort_keys=True) + "\n"
    store.write_atomic(p, text.encode("utf-8"))
    return p


def _quoted(path):
    import shlex
    return shlex.quote(path)
