"""Grad mode and inference mode, as torch.autograd.grad_mode has them.

    with descent.no_grad():          # a flag the Autograd kernels read: no key set changes
        y = x + 1
    with descent.inference_mode():   # the Autograd keys excluded; tensors made here have none
        z = x + 1

Each is a context manager and a decorator. See Note [Grad mode is a flag, not
a key] (floors/core/grad_mode.h).
"""
import functools

from . import _C


class _Mode:
    """Base: saves the thread's state on entry and restores it on exit."""

    def _apply(self):
        raise NotImplementedError

    def __enter__(self):
        self._saved = _C._local_state()
        self._apply()
        return self

    def __exit__(self, *exc):
        _C._set_local_state(self._saved)
        return False

    def __call__(self, fn):
        @functools.wraps(fn)
        def wrapper(*args, **kwargs):
            with self.__class__(*self._args):
                return fn(*args, **kwargs)
        return wrapper


class no_grad(_Mode):
    """Grad mode off inside: nothing is recorded for backward."""
    _args = ()

    def _apply(self):
        _C._set_grad_enabled(False)


class enable_grad(_Mode):
    """Grad mode on inside (inside a no_grad block, say)."""
    _args = ()

    def _apply(self):
        _C._set_grad_enabled(True)


class set_grad_enabled(_Mode):
    """Grad mode set to `mode`: at once when called, as PyTorch's is.

    `descent.set_grad_enabled(False)` on its own line turns grad mode off until
    it is turned on again; as `with set_grad_enabled(False):` the mode before
    it comes back at the block's end; as a decorator, around each call only
    (the call that made the decorator puts the mode back at once). PyTorch's
    torch.autograd.grad_mode.set_grad_enabled does the same three things.
    """

    def __init__(self, mode):
        if not isinstance(mode, bool):
            raise TypeError(f"set_grad_enabled(): mode must be a bool, not {type(mode).__name__}")
        self._args = (mode,)
        self._prev = _C.is_grad_enabled()
        _C._set_grad_enabled(mode)  # at once: a plain call is not a no-op

    def __enter__(self):
        return self  # the mode was set by the constructor

    def __exit__(self, *exc):
        _C._set_grad_enabled(self._prev)
        return False

    def __call__(self, fn):
        _C._set_grad_enabled(self._prev)  # decorating changes nothing outside the calls
        return super().__call__(fn)


class inference_mode(_Mode):
    """Inference mode inside (mode=True), or out of it inside one (False)."""

    def __init__(self, mode=True):
        if not isinstance(mode, bool):
            raise TypeError(f"inference_mode(): mode must be a bool, not {type(mode).__name__}")
        self._args = (mode,)

    def _apply(self):
        _C._set_inference_mode(self._args[0])


is_grad_enabled = _C.is_grad_enabled
is_inference_mode_enabled = _C.is_inference_mode_enabled
