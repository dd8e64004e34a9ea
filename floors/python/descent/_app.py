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
    """The CPU allocator's statistics now."""
    return dict(_C._cpu_allocator_stats())


def _devices_to_watch():
    """The devices whose caching allocator a run records: sim:0, and cuda:0 where a GPU is usable.
    Switching the history on makes the device's allocator; that costs a CPU-only line nothing, since a
    recording waits at its end only for devices with work still queued (tracing.py)."""
    kinds = ["sim"] + (["cuda"] if _C._device_count("cuda") > 0 else [])
    return [_C.device(f"{k}:0") for k in kinds]


def _device_memory(d):
    """One device's caching allocator now: its segments (memory_snapshot()'s dicts) and memory_stats()."""
    return {"segments": _C._memory_snapshot(d), "stats": dict(_C._memory_stats(d))}


def run(code, repeat=1):
    """Runs `code` traced, `repeat` times (each statement a floor-1 span each
    time, so the app can show warm medians). Returns a dict: trace (a Trace,
    or None when the code does not parse), output (what it printed), error
    (the exception as text, or ""), before and after (memory()), and devices:
    for each device watched, {"device", "before", "after" (_device_memory),
    "history" (the caching allocator's entries during the run, time_ns on the
    trace's clock)} -- what the memory panel replays (Note [Replaying the
    allocator's history], ui/memory_model.h). The history is switched on for
    the run and off after it (which drops entries recorded before the run, as
    switching it off does in PyTorch); see _devices_to_watch for which devices,
    each kept only when it holds memory or the run used it."""
    out = io.StringIO()
    watched = _devices_to_watch()
    dev_before = [_device_memory(d) for d in watched]
    for d in watched:
        _C._record_memory_history(d, True)
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
    after = memory()
    devices = []
    for d, b in zip(watched, dev_before):
        history = _C._memory_history(d)
        _C._record_memory_history(d, False)
        if history or b["segments"]:  # a device the code used, now or before
            devices.append({"device": str(d), "before": b, "after": _device_memory(d), "history": history})
    return {"trace": result, "output": out.getvalue(), "error": error, "before": before, "after": after,
            "devices": devices}
