"""descent.utils._python_dispatch, as torch.utils._python_dispatch: TorchDispatchMode.

    class LoggingMode(TorchDispatchMode):
        def __torch_dispatch__(self, func, types, args=(), kwargs=None):
            print(func)                     # aten.mm.default, aten.add.Tensor, ...
            return func(*args, **(kwargs or {}))

    with LoggingMode():
        y = x @ w + b

A mode sees every op that reaches the dispatcher's Python key, which sits
beneath autograd: it sees the ops autograd's kernels and the composites
produced (aten.mm for `@`, aten.t and aten.addmm for linear), and, during a
backward, the ops of each node's formula. Inside __torch_dispatch__ the mode
is popped and every key above Python excluded, so func(*args) runs the op
beneath the Python key (Note [The Python key], floors/binding/python_dispatch.cpp).

Where descent differs: the stack is the calling thread's, and a backward's
nodes for a device run on that device's engine thread (Note [Which thread
runs a node], floors/autograd/engine.cpp), which does not see the mode, so a
mode sees a CPU backward's ops but not a sim:0 or cuda one's (PyTorch carries
its mode stack to the engine's threads). `types` is always () (descent has
no tensor subclasses with __torch_dispatch__).
"""
import contextlib
import threading

from .. import _C
from .._ops import op_overload

__all__ = ["TorchDispatchMode", "_get_current_dispatch_mode", "_get_current_dispatch_mode_stack",
           "_push_mode", "_pop_mode", "_pop_mode_temporarily", "_disable_current_modes"]

_state = threading.local()  # .stack: this thread's modes, innermost last (TorchDispatchModeTLS)


def _stack():
    s = getattr(_state, "stack", None)
    if s is None:
        s = _state.stack = []
    return s


def _dispatch(name, args, kwargs):
    """What the Python key's fallback calls (python_dispatch.cpp): the innermost mode's __torch_dispatch__,
    with that mode popped for its length, as PyTorch's dispatch_on_mode does."""
    func = op_overload(name)
    with _pop_mode_temporarily() as mode:
        return mode.__torch_dispatch__(func, (), args, kwargs)


_handler_set = False


def _push_mode(mode):
    """Pushes `mode` on this thread's stack; the first one adds the Python key to the thread's calls."""
    global _handler_set
    if not _handler_set:
        _C._set_torch_dispatch_handler(_dispatch)
        _handler_set = True
    s = _stack()
    s.append(mode)
    if len(s) == 1:
        _C._dispatch_tls_set_dispatch_key_included("Python", True)


def _pop_mode():
    """Pops the innermost mode and returns it; the last one out takes the Python key from the thread's calls."""
    s = _stack()
    if not s:
        raise AssertionError("Trying to pop from an empty mode stack")
    mode = s.pop()
    if not s:
        _C._dispatch_tls_set_dispatch_key_included("Python", False)
    return mode


@contextlib.contextmanager
def _pop_mode_temporarily():
    mode = _pop_mode()
    try:
        yield mode
    finally:
        _push_mode(mode)


@contextlib.contextmanager
def _disable_current_modes():
    """No mode for the length of the block (they come back after it)."""
    popped = [_pop_mode() for _ in range(len(_stack()))]
    try:
        yield popped
    finally:
        for mode in reversed(popped):
            _push_mode(mode)


def _get_current_dispatch_mode():
    s = _stack()
    return s[-1] if s else None


def _get_current_dispatch_mode_stack():
    return list(_stack())


class TorchDispatchMode:
    """A context manager whose __torch_dispatch__(func, types, args, kwargs) runs in place of every op that
    reaches the Python key while it is active, as torch.utils._python_dispatch.TorchDispatchMode."""

    def __init__(self, _dispatch_key=None):
        if _dispatch_key is not None:
            raise NotImplementedError("TorchDispatchMode(_dispatch_key=...): descent's modes sit at the Python key only")

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        raise NotImplementedError()

    def __enter__(self):
        _push_mode(self)
        return self

    def __exit__(self, exc_type, exc_val, exc_tb):
        s = _stack()
        if not s or s[-1] is not self:
            raise RuntimeError("TorchDispatchMode: modes must be exited in the reverse order they were entered")
        _pop_mode()

    @classmethod
    def push(cls, *args, **kwargs):
        return cls(*args, **kwargs)

    @classmethod
    def is_infra_mode(cls):
        return False
