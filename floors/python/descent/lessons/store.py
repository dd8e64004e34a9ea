"""The files the lessons keep and write: read with care, written whole.

progress.json and trusted.json (under $XDG_DATA_HOME/descent), a lesson file
and a --check solution are read through read_bytes; progress.json,
trusted.json and the handout's pages are written through write_atomic.

Note [Files a lesson keeps]
~~~~~~~~~~~~~~~~~~~~~~~~~~~
Whatever sits at a path we read may not be what we wrote there. Reading:
the file is opened with O_NONBLOCK, so a FIFO in its place opens at once
instead of waiting for a writer that never comes; fstat on the open file
(not the path, which could change in between) refuses anything but a
regular file, so a link to /dev/zero or a directory is named, not read; and
at most `limit` bytes are read, so a file that keeps growing (or is simply
huge) costs no more memory than that. JSON is parsed with RecursionError
caught: `[[[[...` a hundred thousand deep is a file that cannot be read,
not a traceback. Writing: the text goes into a new file in the same folder
(the same file system, so the rename is one step), is flushed to the disk
(fsync), and only then renamed over the old file (os.replace); the folder
is synced too, so the rename survives a power cut. A failure at any point
(a read-only folder, a full disk) removes the new file and leaves the old
one as it was, and the caller says why in the system's own words
(strerror: "No space left on device"). These are the steps SQLite and git
take for a file that must never be seen half written.
"""
import errno
import json
import os
import secrets
import stat
import sys

_warned = set()


class Unreadable(Exception):
    """A file that is there but cannot be read as what it should be; str() says why, in a few words."""


def _kind(mode):
    for test, name in ((stat.S_ISDIR, "a directory"), (stat.S_ISFIFO, "a FIFO"), (stat.S_ISCHR, "a device"),
                       (stat.S_ISBLK, "a device"), (stat.S_ISSOCK, "a socket")):
        if test(mode):
            return name
    return "not a regular file"


def reason(e):
    """An OSError in the system's words ("No space left on device"), else its text."""
    return getattr(e, "strerror", None) or str(e) or type(e).__name__


def read_bytes(path, limit):
    """The bytes of the regular file at `path` (at most `limit` of them), or None when there is no file
    there. Unreadable when something else is in its place or it is larger. See Note [Files a lesson keeps]."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0))
    except FileNotFoundError:
        return None
    except OSError as e:
        if e.errno == errno.ENOTDIR:  # a file where a folder of the path should be: nothing is there
            return None
        raise Unreadable(reason(e)) from None
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise Unreadable(f"it is {_kind(st.st_mode)}, not a regular file")
        if st.st_size > limit:
            raise Unreadable(f"it is {st.st_size} bytes, more than the {limit} a file of its kind may hold")
        chunks, total = [], 0
        while True:
            try:
                chunk = os.read(fd, min(1 << 20, limit + 1 - total))
            except OSError as e:
                raise Unreadable(reason(e)) from None
            if not chunk:
                break
            chunks.append(chunk)
            total += len(chunk)
            if total > limit:  # it grew while it was read
                raise Unreadable(f"it holds more than the {limit} bytes a file of its kind may hold")
        return b"".join(chunks)
    finally:
        os.close(fd)


def read_json(path, limit):
    """The JSON value in the file at `path`, or None when there is no file. Unreadable when it is not a
    regular file, too large, not UTF-8, not JSON, or nested too deep for Python to read."""
    data = read_bytes(path, limit)
    if data is None:
        return None
    try:
        return json.loads(data.decode("utf-8"))
    except UnicodeDecodeError:
        raise Unreadable("it is not UTF-8 text") from None
    except RecursionError:
        raise Unreadable("its JSON is nested too deep to read") from None
    except ValueError as e:
        raise Unreadable(f"it is not JSON ({e})") from None


def write_atomic(path, data):
    """Writes `data` (bytes) as the whole new content of `path`; the old file is untouched when this
    raises OSError (Note [Files a lesson keeps]). The new file gets the permissions a new file gets
    (0666 less the umask)."""
    folder = os.path.dirname(os.path.abspath(path))
    tmp = os.path.join(folder, f".{os.path.basename(path)}.{secrets.token_hex(6)}.tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_CLOEXEC", 0), 0o666)
    try:
        view = memoryview(data)
        while view:
            n = os.write(fd, view)
            view = view[n:]
        os.fsync(fd)
        os.close(fd)
        fd = -1
        os.replace(tmp, path)
    except BaseException:
        if fd >= 0:
            os.close(fd)
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise
    try:  # the rename itself, on the disk
        dfd = os.open(folder, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(dfd)
    except OSError:
        pass
    finally:
        os.close(dfd)


def read_json_or_warn(path, limit, what, then):
    """read_json, with an unreadable file said once on stderr ("descent lesson: {what} {path} cannot be
    read: {why}; {then}") and read as None, as an absent one is."""
    try:
        return read_json(path, limit)
    except Unreadable as e:
        warn_once((what, path, str(e)), f"descent lesson: {what} {path} cannot be read: {e}; {then}")
        return None


def warn_once(key, message):
    """Prints `message` on stderr, once per process for each `key`: the progress file is read at every
    answer, and one line saying it is unreadable is enough."""
    if key in _warned:
        return
    _warned.add(key)
    try:
        print(message, file=sys.stderr)
    except (OSError, ValueError):
        pass
