"""descent.sim: the simulated device sim:0, with torch.cuda's names.

sim:0 exists in every build: its memory is a host arena behind the same
caching allocator as a GPU's, its streams are queues drained by a worker
thread each, and its kernels run over a grid of blocks on that worker
(Note [The simulated device], floors/streams/sim_runtime.cpp). So everything
descent.cuda offers works here on any machine:

    x = descent.ones(4, device="sim:0")
    s = descent.sim.Stream()
    with descent.sim.stream(s):
        y = x * 2
    descent.sim.synchronize()
    descent.sim.memory_allocated(), descent.sim.memory_snapshot()

and two of its own: memory_capacity() and set_memory_capacity(bytes), the
arena's size (8 GiB, or DESCENT_SIM_MEMORY), to meet OutOfMemoryError on
purpose.
"""
from . import _C
from ._device import _DeviceModule, _EventBase, _StreamBase, StreamContext  # noqa: F401


class Stream(_StreamBase):
    """A stream of sim:0: Stream(device=None, priority=0) makes a new one."""
    _kind = "sim"
    __slots__ = ()


class Event(_EventBase):
    """An event of sim:0: Event(enable_timing=False, blocking=False, interprocess=False)."""
    _kind = "sim"


def memory_capacity():
    """sim:0's memory, in bytes: the most its caching allocator may reserve."""
    return _C._sim_memory_capacity()


def set_memory_capacity(nbytes):
    """Sets sim:0's memory to `nbytes` (its cache is emptied first; RuntimeError while tensors live there).
    An allocation past it raises descent.OutOfMemoryError, with PyTorch's message."""
    _C._set_sim_memory_capacity(nbytes)


__all__ = _DeviceModule("sim", Stream, Event).export(globals()) + ["memory_capacity", "set_memory_capacity"]
