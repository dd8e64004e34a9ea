"""What descent.cuda and descent.sim share: one device kind's Python API,
with torch.cuda's names, signatures and defaults (floor 1 over the binding's
functions in floors/binding/device_object.cpp, which reach floors 6 and 7).

descent.cuda and descent.sim are each a `_DeviceModule` of their kind bound
into the module's namespace (`_DeviceModule("cuda").export(globals())`), so
`descent.sim.synchronize()` is `descent.cuda.synchronize()` for sim:0, and
their Stream and Event classes are classes of their own (descent.cuda.Stream,
descent.sim.Stream).

Note [Streams in Python]
~~~~~~~~~~~~~~~~~~~~~~~~
A stream is a queue of the device's (Note [Streams and the two clocks],
floors/streams/streams.h). Python holds it as (device, stream_id): id 0 is the
device's default stream, Stream() makes a new one. Each thread has a current
stream per device: the one every device op of that thread enqueues on, and
the one the caching allocator gives memory for. `with descent.cuda.stream(s):`
makes s current for the block and restores the previous one after, as
torch.cuda.stream does. An Event is a marker on a stream: record() enqueues
it, wait() makes later work on another stream wait for it (the host does
not wait), synchronize() makes the host wait, elapsed_time() reads the
device's clock between two of them.

Note [The allocator's history from Python]
~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
PyTorch keeps the history of its caching allocator behind a private API in
torch.cuda.memory: _record_memory_history(enabled="all") starts a ring of
trace entries (alloc, free_requested, free_completed, segment_alloc,
segment_free, oom) and _snapshot() returns {"segments": [...],
"device_traces": [[entry, ...] per device]}. descent gives the same two
functions in a `memory` submodule of each kind (descent.sim.memory,
descent.cuda.memory), made here rather than as files of their own so that one
definition serves both kinds; `import descent.sim.memory` finds it in
sys.modules. It also holds the public memory functions, as torch.cuda.memory
does. An entry is {"action", "addr", "size", "stream", "time_ns"}: time_ns
(the tracer's clock, the one a Trace's spans are on) where PyTorch has
time_us, and no "frames" (descent records no stacks: context= and stacks= are
accepted and ignored). enabled="state" (stacks of live blocks only) is
refused. The app replays this history over a snapshot (ui/memory_model.h,
Note [Replaying the allocator's history]).
"""
import sys
import types

from . import _C


class _StreamBase:
    """A stream of one device (Note [Streams in Python]); the kind's module subclasses it."""
    _kind = None  # "cuda" or "sim", set by the subclass
    __slots__ = ("device", "stream_id")

    def __new__(cls, device=None, priority=0, **kwargs):
        """Stream(device=None, priority=0): a new stream on the device (the current one when None).
        `priority` is accepted and ignored: descent's streams have none."""
        self = object.__new__(cls)
        self.device = _resolve(cls._kind, device)
        if "stream_id" in kwargs:  # an existing stream: Stream(stream_id=0, device=...)
            self.stream_id = int(kwargs.pop("stream_id"))
            _C._check_device(self.device)
        else:
            self.stream_id = _C._new_stream(self.device)
        if kwargs:
            raise TypeError(f"Stream() got an unexpected keyword argument '{next(iter(kwargs))}'")
        return self

    @classmethod
    def _wrap(cls, device, stream_id):
        return cls(device, stream_id=stream_id)

    def query(self):
        """Whether every piece of work queued on the stream has finished."""
        return _C._stream_query(self.device, self.stream_id)

    def synchronize(self):
        """The host waits until the stream is empty (a floor-7 span "stream_synchronize")."""
        _C._stream_synchronize(self.device, self.stream_id)

    def wait_event(self, event):
        """Work submitted to this stream from now on waits for `event`; the host does not wait."""
        event.wait(self)

    def wait_stream(self, stream):
        """Work submitted to this stream from now on waits for the work queued on `stream` so far."""
        self.wait_event(stream.record_event())

    def record_event(self, event=None):
        """Records `event` (a new one when None) on this stream and returns it."""
        if event is None:
            event = _module_of(self._kind).Event()
        event.record(self)
        return event

    @property
    def cuda_stream(self):
        """The cudaStream_t as an int (0 for the default stream, and on sim:0)."""
        return _C._stream_native(self.device, self.stream_id)

    def __eq__(self, other):
        if isinstance(other, _StreamBase):
            return self.device == other.device and self.stream_id == other.stream_id
        return False

    def __hash__(self):
        return hash((self.stream_id, self.device))

    def __repr__(self):
        if self._kind == "cuda":
            return f"<descent.cuda.Stream device={self.device} cuda_stream={self.cuda_stream:#x}>"
        return f"<descent.{self._kind}.Stream device={self.device} stream_id={self.stream_id}>"


class _EventBase(_C._EventBase):
    """A marker on a stream (Note [Streams in Python]); the kind's module subclasses it."""
    _kind = None

    def __new__(cls, enable_timing=False, blocking=False, interprocess=False):
        return super().__new__(cls, enable_timing=enable_timing, blocking=blocking, interprocess=interprocess)

    def record(self, stream=None):
        """Enqueues the marker on `stream` (the current stream when None)."""
        if stream is None:
            stream = _module_of(self._kind).current_stream()
        self._record(stream.device, stream.stream_id)

    def wait(self, stream=None):
        """Work submitted to `stream` (the current stream when None) from now on waits for this event."""
        if stream is None:
            stream = _module_of(self._kind).current_stream()
        self._wait(stream.device, stream.stream_id)

    def __repr__(self):
        if self._handle:
            return f"<descent.{self._kind}.Event {self._handle:#x}>"
        return f"<descent.{self._kind}.Event uninitialized>"


class _StreamContext:
    """`with descent.cuda.stream(s):`: s is the thread's current stream on its device inside the block."""

    def __init__(self, stream, kind):
        self.stream = stream
        self._kind = kind
        self._saved = None

    def __enter__(self):
        s = self.stream
        if s is None:  # stream(None) does nothing, as torch's
            return None
        self._saved = _C._current_stream(s.device)
        _C._set_current_stream(s.device, s.stream_id)
        return s

    def __exit__(self, *exc):
        if self.stream is not None:
            _C._set_current_stream(self.stream.device, self._saved)
        return False


def _resolve(kind, device):
    """device=None, an int, a str or a descent.device, as a device of `kind` (torch's _get_device_index)."""
    if device is None:
        return _C.device(f"{kind}:0")
    if isinstance(device, bool):
        raise TypeError(f"expected a {kind} device or an int, not bool")
    if isinstance(device, int):
        return _C.device(f"{kind}:{max(device, 0)}")
    if isinstance(device, str):
        device = _C.device(device)
    if not isinstance(device, _C.device):
        raise TypeError(f"expected a {kind} device, an int or a str, not {type(device).__name__}")
    if device.type != kind:
        raise ValueError(f"Expected a {kind} device, but got: {device}")
    return device


_modules = {}


def _module_of(kind):
    return _modules[kind]


class _DeviceModule:
    """The functions of descent.cuda or descent.sim, bound to their kind."""

    def __init__(self, kind, stream_class, event_class):
        self.kind = kind
        self.Stream = stream_class
        self.Event = event_class

    def export(self, namespace):
        names = ["is_available", "device_count", "current_device", "get_device_name", "synchronize",
                 "current_stream", "default_stream", "set_stream", "stream", "memory_allocated", "memory_reserved",
                 "max_memory_allocated", "max_memory_reserved", "memory_stats", "reset_peak_memory_stats",
                 "reset_accumulated_memory_stats", "empty_cache", "memory_snapshot", "memory_summary"]
        for name in names:
            namespace[name] = getattr(self, name)
        namespace["OutOfMemoryError"] = _C.OutOfMemoryError
        namespace["_is_in_bad_fork"] = self._is_in_bad_fork
        namespace["memory"] = self._memory_module(names)
        _modules[self.kind] = self
        return names + ["Stream", "Event", "StreamContext", "OutOfMemoryError", "memory"]

    def _memory_module(self, names):
        """descent.<kind>.memory (Note [The allocator's history from Python])."""
        m = types.ModuleType(f"descent.{self.kind}.memory",
                             f"descent.{self.kind}.memory: the caching allocator's statistics, snapshots and history.")
        for name in names:
            if "memory" in name or name == "empty_cache":
                setattr(m, name, getattr(self, name))
        m._record_memory_history = self._record_memory_history
        m._snapshot = self._snapshot
        sys.modules[m.__name__] = m
        return m

    # Devices.
    def is_available(self):
        """Whether this machine has a device of this kind descent can use."""
        return self.device_count() > 0

    def device_count(self):
        return _C._device_count(self.kind)

    def _is_in_bad_fork(self):
        """torch.cuda._is_in_bad_fork: whether this process is a child forked after its parent used
        this kind of device (Note [Devices after fork]); such a child cannot use one."""
        return _C._in_bad_fork(self.kind)

    def current_device(self):
        """The index of the current device (descent selects none: always 0)."""
        return 0

    def get_device_name(self, device=None):
        return _C._get_device_name(_resolve(self.kind, device))

    def synchronize(self, device=None):
        """The host waits for every stream of the device (a floor-7 span "synchronize")."""
        _C._synchronize(_resolve(self.kind, device))

    # Streams.
    def current_stream(self, device=None):
        """This thread's current stream on the device (its default stream until set)."""
        d = _resolve(self.kind, device)
        return self.Stream._wrap(d, _C._current_stream(d))

    def default_stream(self, device=None):
        d = _resolve(self.kind, device)
        _C._check_device(d)
        return self.Stream._wrap(d, 0)

    def set_stream(self, stream):
        """Makes `stream` the thread's current stream on its device (None: does nothing)."""
        if stream is not None:
            _C._set_current_stream(stream.device, stream.stream_id)

    def stream(self, stream):
        """A context manager: `stream` is current inside the block, the previous one after it."""
        return _StreamContext(stream, self.kind)

    # Memory: the device's caching allocator (floor 6), under torch.cuda's names.
    def _initialized(self):
        return self.kind == "sim" or self.is_available()

    def memory_stats(self, device=None):
        """The caching allocator's statistics, torch.cuda.memory_stats()'s keys ({} when there is no device)."""
        if not self._initialized():
            return {}
        return _C._memory_stats(_resolve(self.kind, device))

    def _stat(self, key, device):
        return self.memory_stats(device).get(key, 0)

    def memory_allocated(self, device=None):
        """Bytes in blocks handed to tensors now."""
        return self._stat("allocated_bytes.all.current", device)

    def max_memory_allocated(self, device=None):
        return self._stat("allocated_bytes.all.peak", device)

    def memory_reserved(self, device=None):
        """Bytes in segments the allocator holds from the device, cached or not."""
        return self._stat("reserved_bytes.all.current", device)

    def max_memory_reserved(self, device=None):
        return self._stat("reserved_bytes.all.peak", device)

    def reset_peak_memory_stats(self, device=None):
        _C._reset_peak_memory_stats(_resolve(self.kind, device))

    def reset_accumulated_memory_stats(self, device=None):
        _C._reset_accumulated_memory_stats(_resolve(self.kind, device))

    def empty_cache(self):
        """Gives the current device's unused cached segments back (cudaFree, or the simulated arena)."""
        if self._initialized():
            _C._empty_cache(_resolve(self.kind, None))

    def memory_snapshot(self, mempool_id=None):
        """Every device's segments, each a dict with its blocks, as torch.cuda.memory_snapshot() gives them."""
        if mempool_id is not None:
            raise NotImplementedError("memory_snapshot(mempool_id=...): descent has no memory pools")
        if not self._initialized():
            return []
        out = []
        for i in range(self.device_count()):
            for segment in _C._memory_snapshot(_resolve(self.kind, i)):
                # The keys torch 2.11 gives that descent's allocator has one answer for: no expandable
                # segments, no private memory pools (the default pool is (0, 0)), and no stacks recorded.
                segment.update(segment_pool_id=(0, 0), is_expandable=False, frames=[])
                for block in segment["blocks"]:
                    block["frames"] = []
                out.append(segment)
        return out

    def memory_summary(self, device=None, abbreviated=False):
        """The caching allocator's statistics as a table, in torch.cuda.memory_summary()'s layout: for each
        metric its current, peak, total allocated and total freed values, all pools and then the large and
        small pools apart (abbreviated=True: all pools only). On sim:0 the title names descent's simulated
        device; the rows are PyTorch's."""
        d = _resolve(self.kind, device)
        stats = self.memory_stats(d)
        return _summary_table(stats, d, self.kind, abbreviated)

    def _record_memory_history(self, enabled="all", context="all", stacks="all", max_entries=sys.maxsize,
                               device=None):
        """torch.cuda.memory._record_memory_history: enabled="all" keeps the device's allocator history (the
        newest `max_entries` entries), None stops it and drops the entries (Note [The allocator's history
        from Python])."""
        if enabled not in ("all", None):
            raise ValueError(f"_record_memory_history(enabled={enabled!r}): descent records 'all' or None "
                             "(it keeps no stacks, so 'state' has nothing to record)")
        if not self._initialized():
            return
        _C._record_memory_history(_resolve(self.kind, device), enabled == "all", min(max_entries, 2**63 - 1))

    def _snapshot(self, device=None):
        """torch.cuda.memory._snapshot: {"segments": memory_snapshot(), "device_traces": one list of history
        entries per device}. `device` is accepted as torch's is: every device is in it."""
        if not self._initialized():
            return {"segments": [], "device_traces": []}
        return {"segments": self.memory_snapshot(),
                "device_traces": [_C._memory_history(_resolve(self.kind, i)) for i in range(self.device_count())]}


StreamContext = _StreamContext


# The summary table (memory_summary): 75 characters between the bars, as PyTorch prints it.
_WIDTH = 75


def _scaled(value, reference, step, threshold, units):
    """`value` in the unit that suits `reference` (the row's first column picks it for the rows under it)."""
    unit = units[0]
    for bigger in units[1:]:
        if reference < threshold:
            break
        unit, value, reference = bigger, value // step, reference / step
    return value, unit


def _size_cell(value, reference):
    v, unit = _scaled(value, reference, 1024, 768 * 1024, ["B  ", "KiB", "MiB", "GiB", "TiB", "PiB"])
    return f"{v:6d} {unit}"


def _count_cell(value, reference):
    v, unit = _scaled(value, reference, 1000, 750 * 1000, [" ", "K", "M"])
    return f"{v:7d} {unit} "


_SUMMARY_ROWS = [  # (the stats' key, the row's name, its cell)
    ("allocated_bytes", "Allocated memory", _size_cell),
    ("active_bytes", "Active memory", _size_cell),
    ("requested_bytes", "Requested memory", _size_cell),
    ("reserved_bytes", "GPU reserved memory", _size_cell),
    ("inactive_split_bytes", "Non-releasable memory", _size_cell),
    ("allocation", "Allocations", _count_cell),
    ("active", "Active allocs", _count_cell),
    ("segment", "GPU reserved segments", _count_cell),
    ("inactive_split", "Non-releasable allocs", _count_cell),
]
_OVERSIZE_ROWS = [("oversize_allocations", "Oversize allocations"), ("oversize_segments", "Oversize GPU segments")]


def _summary_table(stats, device, kind, abbreviated):
    index = int(str(device).split(":")[1]) if ":" in str(device) else 0
    title = ("PyTorch CUDA memory summary" if kind == "cuda" else "descent sim memory summary") + f", device ID {index}"
    ooms = f"{'CUDA' if kind == 'cuda' else 'sim'} OOMs: {stats.get('num_ooms', 0)}"
    retries = f"{'cudaMalloc' if kind == 'cuda' else 'raw alloc'} retries: {stats.get('num_alloc_retries', 0)}"
    lines = ["=" * _WIDTH, (" " * 18 + title).ljust(_WIDTH), "-" * _WIDTH,
             (" " * 12 + ooms).ljust(36) + "|" + (" " * 8 + retries).ljust(38), "=" * _WIDTH,
             "        Metric         | Cur Usage  | Peak Usage | Tot Alloc  | Tot Freed  "]

    def row(name, cells):
        return f" {name:<21} | " + " | ".join(cells) + " "

    for key, name, cell in _SUMMARY_ROWS:
        lines.append("-" * _WIDTH)
        pools = [("all", name)] + ([] if abbreviated else [("large_pool", "      from large pool"),
                                                            ("small_pool", "      from small pool")])
        columns = ("current", "peak", "allocated", "freed")
        reference = [stats.get(f"{key}.all.{c}", 0) for c in columns]
        for pool, label in pools:
            values = [stats.get(f"{key}.{pool}.{c}", 0) for c in columns]
            lines.append(row(label, [cell(v, r) for v, r in zip(values, reference)]))
    for key, name in _OVERSIZE_ROWS:
        lines.append("-" * _WIDTH)
        values = [stats.get(f"{key}.{c}", 0) for c in ("current", "peak", "allocated", "freed")]
        lines.append(row(name, [_count_cell(v, v) for v in values]))
    lines.append("=" * _WIDTH)
    return "".join(f"|{line}|\n" for line in lines)
