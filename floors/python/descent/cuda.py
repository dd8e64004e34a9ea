"""descent.cuda: NVIDIA GPUs (cuda:N), with torch.cuda's names.

    x = descent.ones(4, device="cuda")      # cuda:0, the current device
    s = descent.cuda.Stream()
    with descent.cuda.stream(s):
        y = x * 2                           # enqueued on s
    descent.cuda.synchronize()
    descent.cuda.memory_allocated(), descent.cuda.memory_snapshot()

Asking for cuda where there is none raises RuntimeError in one line saying
why (no driver, no GPU, or a build without CUDA); is_available() says False.
The functions are _device.py's, bound to "cuda" (Note [Streams in Python]).
"""
from . import _C
from ._device import _DeviceModule, _EventBase, _StreamBase, StreamContext  # noqa: F401


class Stream(_StreamBase):
    """A CUDA stream: Stream(device=None, priority=0) makes a new one."""
    _kind = "cuda"
    __slots__ = ()


class Event(_EventBase):
    """A CUDA event: Event(enable_timing=False, blocking=False, interprocess=False)."""
    _kind = "cuda"


__all__ = _DeviceModule("cuda", Stream, Event).export(globals())


def _sleep(cycles):
    """torch.cuda._sleep: a kernel on the current stream that spins for `cycles` clock cycles (tests
    use it to keep a stream busy)."""
    _C._cuda_sleep(f"cuda:{current_device()}", int(cycles))
