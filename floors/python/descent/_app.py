"""What the app (ui/, which embeds this interpreter) asks of the package.

The app owns no runtime logic: it runs the user's code through run() below,
which traces it with descent.tracing like `descent trace` does, and reads the
Trace object that comes back. Everything the code prints is captured for the
app's console; an exception is returned as text, never raised into the app.
"""
import contextlib
import io
import sys
import traceback

from . import _C, tracing

_env = None  # the console's namespace: one for the app's whole life


def namespace():
    """The namespace the app's code and console statements run in."""
    global _env
    if _env is None:
        _env = {"descent": sys.modules["descent"], "__name__": "__descent_app__"}
    return _env


def memory():
    """The allocators' statistics now (the CPU allocator's, until device memory exists)."""
    return dict(_C._cpu_allocator_stats())


def run(code, repeat=1):
    """Runs `code` traced, `repeat` times (each statement a floor-1 span each
    time, so the app can show warm medians). Returns a dict: trace (a Trace,
    or None when the code does not parse), output (what it printed), error
    (the exception as text, or ""), before and after (memory())."""
    out = io.StringIO()
    before = memory()
    result, error = None, ""
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(out):
        try:
            result, exc = tracing.run(code, env=namespace(), repeat=repeat)
            if exc is not None:
                error = "".join(traceback.format_exception(type(exc), exc, exc.__traceback__.tb_next))
        except SyntaxError as e:
            error = "".join(traceback.format_exception_only(type(e), e))
        except BaseException as e:  # noqa: BLE001  (the app must survive anything the code does)
            error = "".join(traceback.format_exception(type(e), e, e.__traceback__))
    return {"trace": result, "output": out.getvalue(), "error": error, "before": before, "after": memory()}
