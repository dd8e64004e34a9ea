"""The Python API of devices, with PyTorch's names: descent.sim and
descent.cuda (streams, events, synchronize, memory statistics and
snapshots), tensors moving between devices, reading a device tensor on the
host and the wait that shows in the trace, pinned memory, and autograd on
sim:0. Everything runs on sim:0, which every build has; the CUDA parts skip
where there is no GPU."""
import gc
import pathlib
import re

import pytest

import descent
from conftest import needs_cuda
from descent import _C

SIM = "sim:0"


def floors_of(trace):
    return {s["floor_name"] for s in trace.spans()}


# [SECTION] Devices -------------------------------------------------------------------------

def test_sim_is_always_there():
    assert descent.sim.is_available() and descent.sim.device_count() == 1
    assert descent.sim.current_device() == 0
    assert descent.sim.get_device_name() == "descent simulated device"
    assert descent.sim.get_device_name(0) == descent.sim.get_device_name(SIM)
    descent.sim.synchronize()
    descent.sim.synchronize(SIM)
    descent.sim.synchronize(descent.device(SIM))


def test_a_device_of_another_kind_is_refused():
    with pytest.raises(ValueError, match="Expected a sim device, but got: cpu"):
        descent.sim.synchronize("cpu")
    with pytest.raises(TypeError):
        descent.sim.synchronize(1.5)


def test_cuda_without_a_gpu_says_why_in_one_line():
    """No GPU, or a build without CUDA (-DDESCENT_CUDA=OFF or no toolkit): is_available()
    is False and every way of asking for cuda raises RuntimeError itself in one line, the
    factories included (not NotImplementedError, a subclass, which would mean the call found
    no CUDA kernel); a build without CUDA says so in each of them."""
    if descent.cuda.is_available():
        pytest.skip("this machine has a GPU")
    assert descent.cuda.device_count() == 0
    messages = []
    for ask in (lambda: descent.ones(2, device="cuda"), lambda: descent.ones(2).cuda(),
                lambda: descent.zeros(2, device="cuda:9"), lambda: descent.arange(3, device="cuda"),
                lambda: descent.ones(2).to("cuda:0"), lambda: descent.cuda.synchronize(),
                lambda: descent.cuda.Stream(), lambda: descent.cuda.current_stream()):
        with pytest.raises(RuntimeError) as e:
            ask()
        assert type(e.value) is RuntimeError, repr(e.value)
        assert "\n" not in str(e.value) and str(e.value), str(e.value)
        messages.append(str(e.value))
    without = ["descent was built without CUDA" in m for m in messages]
    assert all(without) or not any(without), messages
    # torch.cuda answers these without a GPU too
    assert descent.cuda.memory_allocated() == 0 and descent.cuda.memory_stats() == {}
    assert descent.cuda.memory_snapshot() == []
    descent.cuda.empty_cache()


def test_device_factories_and_properties():
    x = descent.ones(4, device=SIM)
    assert x.device == descent.device(SIM) and str(x.device) == SIM
    assert not x.is_cuda and not descent.ones(2).is_cuda
    assert descent.zeros(2, 3, device=descent.device("sim")).device == x.device
    assert descent.arange(5, device=SIM).tolist() == [0, 1, 2, 3, 4]
    assert descent.full((2,), 7.0, device=SIM).tolist() == [7.0, 7.0]


# [SECTION] Moving tensors ----------------------------------------------------------------------

def test_to_and_cpu():
    x = descent.tensor([[1.0, 2.0], [3.0, 4.0]])
    s = x.to(SIM)
    assert s.device == descent.device(SIM) and s.dtype is descent.float32
    assert s.to(SIM)._is_same(s)  # nothing changes: to() returns self, as torch's
    assert s.to("sim")._is_same(s)
    d = x.to(SIM, descent.float64)  # device and dtype, positionally
    assert d.device == s.device and d.dtype is descent.float64
    assert x.to(descent.device(SIM), dtype=descent.int64).tolist() == [[1, 2], [3, 4]]
    back = s.cpu()
    assert back.device == descent.device("cpu") and back.tolist() == x.tolist()
    assert x.cpu() is x
    assert x.t().to(SIM).cpu().tolist() == [[1.0, 3.0], [2.0, 4.0]]  # strided on the host
    assert s.to(SIM, non_blocking=True)._is_same(s)
    assert s.to("cpu", non_blocking=False).tolist() == x.tolist()
    with pytest.raises(TypeError, match="non_blocking"):
        s.to("cpu", non_blocking=1)


def test_an_op_mixing_devices_names_both():
    with pytest.raises(RuntimeError) as e:
        descent.ones(2, device=SIM) + descent.ones(2)
    assert "sim:0" in str(e.value) and "cpu" in str(e.value)


def test_a_cpu_number_goes_with_a_device_tensor():
    x = descent.ones(3, device=SIM)
    assert (x * 2 + 1).tolist() == [3.0, 3.0, 3.0]  # the numbers are 0-d CPU wrapped numbers


# [SECTION] Reading a device tensor on the host ------------------------------------------------

def test_reading_values_copies_to_the_host():
    x = descent.tensor([1.5, -2.0, 3.0]).to(SIM)
    assert x.tolist() == [1.5, -2.0, 3.0]
    assert x[0].item() == 1.5
    assert float(x[2]) == 3.0 and int(x[1]) == -2 and bool(x[0])
    assert repr(x) == "tensor([ 1.5000, -2.0000,  3.0000], device='sim:0')"
    assert repr(descent.arange(3, device=SIM)) == "tensor([0, 1, 2], device='sim:0')"
    assert repr(descent.ones(2, device=SIM, dtype=descent.float64)) == \
        "tensor([1., 1.], device='sim:0', dtype=descent.float64)"
    r = descent.ones(2, device=SIM, requires_grad=True)
    assert repr(r) == "tensor([1., 1.], device='sim:0', requires_grad=True)"
    assert repr(r * 2) == "tensor([2., 2.], device='sim:0', grad_fn=<MulBackward0>)"


def test_numpy_refuses_a_device_tensor_as_pytorch_does():
    np = pytest.importorskip("numpy")
    x = descent.ones(2, device=SIM)
    message = ("can't convert sim:0 device type tensor to numpy. Use Tensor.cpu() to copy the tensor to host "
               "memory first.")
    with pytest.raises(TypeError) as e:
        x.numpy()
    assert str(e.value) == message
    with pytest.raises(TypeError):
        memoryview(x)
    with pytest.raises(TypeError):
        np.asarray(x)
    assert x.cpu().numpy().tolist() == [1.0, 1.0]


def test_item_waits_in_a_span_named_for_it():
    x = descent.ones(64, device=SIM)
    with descent.trace() as t:
        v = x.sum().item()
    assert v == 64.0
    spans = t.result.spans()
    waits = [s for s in spans if s["floor_name"] == "streams" and s["name"] == ".item()"]
    assert len(waits) == 1, t.result.format_tree()
    assert waits[0]["args"]["api"] == "simStreamSynchronize"
    copy = [s for s in spans if s["floor_name"] == "streams" and s["name"] == "simMemcpyAsync"]
    assert copy and copy[0]["end_ns"] <= waits[0]["start_ns"]  # the copy is queued first, then the one wait


@pytest.mark.parametrize("read, why", [(lambda x: x.tolist(), ".tolist()"), (lambda x: x.cpu(), ".cpu()"),
                                       (repr, "print")])
def test_every_read_names_its_wait(read, why):
    x = descent.ones(3, device=SIM)
    with descent.trace() as t:
        read(x)
    assert any(s["floor_name"] == "streams" and s["name"] == why for s in t.result.spans()), t.result.format_tree()


# [SECTION] Streams and events ----------------------------------------------------------------

def test_current_and_default_streams():
    d = descent.sim.default_stream()
    assert d == descent.sim.current_stream() == descent.sim.current_stream(SIM) == descent.sim.current_stream(0)
    assert d.stream_id == 0 and d.device == descent.device(SIM)
    assert repr(d) == "<descent.sim.Stream device=sim:0 stream_id=0>"
    assert d.query()
    d.synchronize()
    assert d != descent.ones(1) and hash(d) == hash(descent.sim.default_stream())


def test_a_stream_context_sets_and_restores_the_current_stream():
    s = descent.sim.Stream()
    assert s.stream_id > 0 and s != descent.sim.default_stream()
    assert isinstance(s, descent.sim.Stream) and not isinstance(s, descent.cuda.Stream)
    with descent.sim.stream(s) as entered:
        assert entered is s
        assert descent.sim.current_stream() == s
        y = descent.ones(8, device=SIM) * 3  # enqueued on s
        with descent.sim.stream(None):  # does nothing, as torch's
            assert descent.sim.current_stream() == s
    assert descent.sim.current_stream() == descent.sim.default_stream()
    s.synchronize()
    assert s.query()
    assert y.tolist() == [3.0] * 8
    descent.sim.set_stream(s)
    assert descent.sim.current_stream() == s
    descent.sim.set_stream(descent.sim.default_stream())


def test_the_context_restores_after_an_exception():
    s = descent.sim.Stream()
    with pytest.raises(KeyError):
        with descent.sim.stream(s):
            raise KeyError("x")
    assert descent.sim.current_stream() == descent.sim.default_stream()


def test_events_order_two_streams():
    a, b = descent.sim.Stream(), descent.sim.Stream()
    start, end = descent.sim.Event(enable_timing=True), descent.sim.Event(enable_timing=True)
    assert repr(start) == "<descent.sim.Event uninitialized>" and start.query() and start.device is None
    with descent.sim.stream(a):
        start.record()
        x = descent.ones(1000, device=SIM)
        for _ in range(5):
            x = x * 1.5
        end.record()
    assert start.device == descent.device(SIM) and re.match(r"<descent.sim.Event 0x[0-9a-f]+>", repr(start))
    b.wait_event(end)  # b's later work waits for a's
    with descent.sim.stream(b):
        y = x + 1
    e = b.record_event()
    assert isinstance(e, descent.sim.Event)
    e.synchronize()
    assert e.query() and end.query()
    assert y[0].item() == 1.5 ** 5 + 1
    ms = start.elapsed_time(end)
    assert isinstance(ms, float) and ms >= 0
    b.wait_stream(a)
    descent.sim.synchronize()


def test_elapsed_time_needs_timing_and_recorded_events():
    plain, timed = descent.sim.Event(), descent.sim.Event(enable_timing=True)
    plain.record()
    timed.record()
    descent.sim.synchronize()
    with pytest.raises(RuntimeError, match="enable_timing=True"):
        plain.elapsed_time(timed)
    with pytest.raises(RuntimeError, match="Both events must be recorded"):
        timed.elapsed_time(descent.sim.Event(enable_timing=True))
    with pytest.raises(NotImplementedError):
        descent.sim.Event(interprocess=True)


# [SECTION] Memory ----------------------------------------------------------------------------

MIB = 1 << 20


def test_memory_allocated_and_reserved_follow_allocations_and_frees():
    descent.sim.synchronize()
    descent.sim.empty_cache()
    base = descent.sim.memory_allocated()
    x = descent.empty(MIB // 4, device=SIM)  # exactly 1 MiB of float32: the small pool's largest
    assert descent.sim.memory_allocated() == base + MIB
    assert descent.sim.memory_reserved() >= descent.sim.memory_allocated()
    assert descent.sim.max_memory_allocated() >= base + MIB
    y = descent.empty(3 * MIB // 4, device=SIM)  # 3 MiB: the large pool
    assert descent.sim.memory_allocated() == base + 4 * MIB
    del x, y
    descent.sim.synchronize()
    assert descent.sim.memory_allocated() == base
    reserved = descent.sim.memory_reserved()
    assert reserved >= 4 * MIB  # freed blocks stay cached
    descent.sim.empty_cache()
    assert descent.sim.memory_reserved() < reserved
    descent.sim.reset_peak_memory_stats()
    assert descent.sim.max_memory_allocated() == descent.sim.memory_allocated()
    assert descent.sim.max_memory_reserved() == descent.sim.memory_reserved()


def test_memory_stats_has_pytorchs_keys():
    x = descent.ones(10, device=SIM)
    stats = descent.sim.memory_stats()
    for key in ("allocated_bytes.all.current", "allocated_bytes.small_pool.peak", "reserved_bytes.large_pool.freed",
                "active_bytes.all.allocated", "requested_bytes.all.current", "segment.all.current",
                "num_alloc_retries", "num_ooms", "num_device_alloc", "num_device_free", "max_split_size",
                "oversize_allocations.current", "inactive_split_bytes.all.current", "num_sync_all_streams"):
        assert key in stats, key
    assert list(stats) == sorted(stats)
    assert stats["allocated_bytes.all.current"] == descent.sim.memory_allocated()
    assert stats["requested_bytes.all.current"] >= 40
    del x


def test_memory_snapshot_has_pytorchs_structure():
    x = descent.ones(100, device=SIM)
    snap = descent.sim.memory_snapshot()
    assert isinstance(snap, list) and snap
    seg = snap[0]
    # torch 2.11's keys, read on the H200 host: every one of them, no more
    assert set(seg) == {"device", "address", "total_size", "allocated_size", "active_size", "requested_size",
                        "stream", "segment_type", "blocks", "segment_pool_id", "is_expandable", "frames"}
    assert seg["device"] == 0 and seg["segment_type"] in ("small", "large")
    assert seg["segment_pool_id"] == (0, 0) and seg["is_expandable"] is False and seg["frames"] == []
    for s in snap:
        assert sum(b["size"] for b in s["blocks"]) == s["total_size"]
        assert s["blocks"][0]["address"] == s["address"]
        for b in s["blocks"]:
            assert set(b) == {"address", "size", "requested_size", "state", "frames"}
            assert b["state"] in ("active_allocated", "active_pending_free", "inactive")
    mine = [b for s in snap for b in s["blocks"] if b["address"] == x.data_ptr()]
    assert len(mine) == 1 and mine[0]["state"] == "active_allocated" and mine[0]["requested_size"] == 400


def test_empty_cache_returns_unused_segments():
    x = descent.ones(1000, device=SIM)
    del x
    descent.sim.synchronize()
    descent.sim.empty_cache()
    assert all(any(b["state"] != "inactive" for b in s["blocks"]) for s in descent.sim.memory_snapshot())


def test_an_allocation_past_sim_capacity_raises_out_of_memory():
    """In a process of its own: the capacity changes only while nothing lives on sim:0."""
    code = r"""
import descent
MIB = 1 << 20
before = descent.sim.memory_capacity()
descent.sim.set_memory_capacity(64 * MIB)
assert descent.sim.memory_capacity() == 64 * MIB
try:
    descent.empty(32 * MIB, device="sim:0")  # 128 MiB of float32
    raise SystemExit("no OutOfMemoryError")
except descent.OutOfMemoryError as e:
    assert isinstance(e, RuntimeError)
    print(e)
assert descent.sim.OutOfMemoryError is descent.OutOfMemoryError is descent.cuda.OutOfMemoryError
assert descent.sim.memory_stats()["num_ooms"] == 1
y = descent.ones(MIB, device="sim:0")  # 4 MiB still fits
try:
    descent.sim.set_memory_capacity(before)
    raise SystemExit("capacity changed while a tensor lives on sim:0")
except RuntimeError as e:
    assert "free its tensors first" in str(e)
del y
descent.sim.set_memory_capacity(before)
try:
    descent.sim.set_memory_capacity(0)
    raise SystemExit("a capacity of 0 was taken")
except ValueError:
    pass
"""
    import os
    import subprocess
    import sys
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=dict(os.environ), timeout=120)
    assert r.returncode == 0, r.stdout + r.stderr
    message = r.stdout.strip()
    # PyTorch's shape: "CUDA out of memory. Tried to allocate 128.00 MiB. GPU 0 has a total capacity of ..."
    assert message.startswith("sim out of memory. Tried to allocate 128.00 MiB. sim:0 has a total capacity of "
                              "64.00 MiB of which "), message
    assert "Of the allocated memory" in message and "is reserved by descent but unallocated" in message


def test_record_stream_defers_reuse():
    s = descent.sim.Stream()
    x = descent.ones(256, device=SIM)
    s.wait_stream(descent.sim.current_stream())   # x is filled on the default stream: s must not read it before
    x.record_stream(s)
    with descent.sim.stream(s):
        y = x * 2
    del x
    descent.sim.synchronize()
    assert y.tolist() == [2.0] * 256
    with pytest.raises(RuntimeError):
        descent.ones(2, device=SIM).record_stream(_FakeStream())


class _FakeStream:
    device = descent.device("sim:0")
    stream_id = 12345


# [SECTION] Pinned memory ------------------------------------------------------------------------

def test_pinned_memory():
    x = descent.arange(6, dtype=descent.float32).view(2, 3)
    assert not x.is_pinned()
    p = x.pin_memory()
    assert p.is_pinned() and p.pin_memory() is p and p.tolist() == x.tolist()
    assert p.device == descent.device("cpu") and not x.is_pinned()
    s = p.to(SIM, non_blocking=True)
    descent.sim.synchronize()  # a non_blocking copy from pinned memory: wait before relying on it
    assert s.tolist() == x.tolist()
    s2 = p.to(SIM)  # not non_blocking: safe to write into p at once
    p.fill_(9)
    assert s2.tolist() == x.tolist()
    with pytest.raises(RuntimeError, match="only dense CPU tensors can be pinned"):
        s.pin_memory()


def test_a_copy_from_pinned_memory_is_asynchronous_only_when_asked():
    p = descent.ones(1000).pin_memory()
    descent.ones(1, device=SIM)
    with descent.trace() as t:
        a = p.to(SIM, non_blocking=True)  # aten's _to_copy: empty there, copy_(p, non_blocking=True)
        b = p.to(SIM)
        c = descent.empty(1000, device=SIM).copy_(p, non_blocking=True)
        descent.sim.synchronize()
    spans = t.result.spans()
    waits = [s for s in spans if s["floor_name"] == "streams" and s["name"] == "copy from pinned memory"]
    assert len(waits) == 1, t.result.format_tree()  # b's only
    device = [s["name"] for s in spans if s["floor_name"] == "device" and s["name"].startswith("Memcpy")]
    assert device.count("Memcpy HtoD (Pinned -> Device)") == 3, device
    assert a.tolist() == b.tolist() == c.tolist() == [1.0] * 1000
    q = descent.ones(10)
    with descent.trace() as t:
        q.to(SIM)  # pageable memory: staged before to() returns, so nothing to wait for
        descent.sim.synchronize()
    names = [s["name"] for s in t.result.spans() if s["floor_name"] in ("device", "streams")]
    assert "Memcpy HtoD (Pageable -> Device)" in names and "copy from pinned memory" not in names, names


# [SECTION] The two clocks in a trace --------------------------------------------------------

def test_a_traced_device_add_reaches_every_floor_and_the_device_clock():
    from descent import tracing
    descent.ones(4, device=SIM)  # the first call's one-time costs stay out of the recording
    trace, error = tracing.run("y = descent.ones(4, device='sim:0') + 1\ndescent.sim.synchronize()", echo=None)
    assert error is None
    floors = floors_of(trace)
    assert {"python", "binding", "dispatch", "autograd", "kernels", "allocator", "streams", "launch",
            "device"} <= floors, sorted(floors)
    spans = {s["id"]: s for s in trace.spans()}
    device = [s for s in spans.values() if s["floor_name"] == "device"]
    launches = [s for s in spans.values() if s["floor_name"] == "launch"]
    assert device and launches
    # Each device span is joined by a flow to the host span that put it on the queue.
    flows = trace.flows()
    joined = {to for _, to, _ in flows}
    assert any(s["id"] in joined for s in device), flows
    for frm, to, _ in flows:
        if to in spans and spans[to]["floor_name"] == "device":
            assert spans[frm]["floor_name"] in ("launch", "streams")
            assert spans[to]["start_ns"] >= spans[frm]["start_ns"]  # the device ran it after it was enqueued
    assert any(s["floor_name"] == "streams" and s["name"] == "synchronize" for s in spans.values())


# [SECTION] Autograd on a device --------------------------------------------------------------

def test_autograd_on_sim():
    x = descent.ones(3, device=SIM, requires_grad=True)
    (x * x).sum().backward()
    assert x.grad is not None and x.grad.device == descent.device(SIM)
    assert x.grad.tolist() == [2.0, 2.0, 2.0]


def test_gradients_cross_devices_back():
    x = descent.tensor([1.0, 2.0], requires_grad=True)
    y = x.to(SIM) * 3
    y.sum().backward()
    assert x.grad.device == descent.device("cpu") and x.grad.tolist() == [3.0, 3.0]
    z = descent.ones(2, device=SIM, requires_grad=True)
    z.cpu().sum().backward()
    assert z.grad.device == descent.device(SIM) and z.grad.tolist() == [1.0, 1.0]


# [SECTION] CUDA ------------------------------------------------------------------------------

@needs_cuda
def test_cuda_api():
    x = descent.ones(4, device="cuda")
    assert x.is_cuda and x.device == descent.device("cuda:0")
    assert descent.ones(2).cuda().device == x.device and x.cuda()._is_same(x)
    assert descent.cuda.get_device_name()
    s = descent.cuda.Stream()
    assert re.match(r"<descent.cuda.Stream device=cuda:0 cuda_stream=0x[0-9a-f]+>", repr(s))
    start, end = descent.cuda.Event(enable_timing=True), descent.cuda.Event(enable_timing=True)
    with descent.cuda.stream(s):
        start.record()
        y = x * 2 + 1
        end.record()
    end.synchronize()
    assert start.elapsed_time(end) >= 0
    assert y.tolist() == [3.0] * 4 and y.sum().item() == 12.0
    assert descent.cuda.memory_allocated() > 0 and descent.cuda.memory_snapshot()
    p = descent.ones(1000).pin_memory()
    assert p.is_pinned() and p.to("cuda", non_blocking=True).cpu().tolist() == [1.0] * 1000
    with pytest.raises(TypeError, match="can't convert cuda:0 device type tensor to numpy"):
        x.numpy()
    g = descent.ones(3, device="cuda", requires_grad=True)
    (g * g).sum().backward()
    assert g.grad.device == x.device and g.grad.tolist() == [2.0] * 3


# [SECTION] The allocator's history (Note [The allocator's history from Python]) ----------------

def test_record_memory_history_and_snapshot_have_pytorchs_private_names():
    import descent.sim.memory as memory  # a submodule, as torch.cuda.memory
    assert memory is descent.sim.memory and memory.memory_allocated is not None
    descent.sim.synchronize()
    memory._record_memory_history(enabled="all", max_entries=1000)
    try:
        x = descent.ones(1000, device=SIM)
        addr = x.data_ptr()
        del x
        descent.sim.synchronize()
        z = descent.ones(1000, device=SIM)
        snap = memory._snapshot()
    finally:
        memory._record_memory_history(enabled=None)
    assert set(snap) == {"segments", "device_traces"} and len(snap["device_traces"]) == 1
    assert snap["segments"] == descent.sim.memory_snapshot()
    trace = snap["device_traces"][0]
    for e in trace:
        assert set(e) == {"action", "addr", "size", "stream", "time_ns"}
        assert e["action"] in ("alloc", "free_requested", "free_completed", "segment_alloc", "segment_free", "oom")
    mine = [e["action"] for e in trace if e["addr"] == addr and e["action"] != "segment_alloc"]
    assert mine == ["alloc", "free_requested", "free_completed", "alloc"]  # the cached block, reused
    assert z.data_ptr() == addr and [e["size"] for e in trace if e["addr"] == addr][-1] == 4000
    times = [e["time_ns"] for e in trace]
    assert times == sorted(times)
    assert memory._snapshot()["device_traces"] == [[]]  # switched off: the entries are dropped
    del z


def test_memory_history_keeps_the_newest_entries_and_refuses_what_it_cannot_record():
    descent.sim.memory._record_memory_history(max_entries=2)
    try:
        xs = [descent.ones(10, device=SIM) for _ in range(3)]
        trace = descent.sim.memory._snapshot()["device_traces"][0]
        assert len(trace) == 2 and trace[-1]["addr"] == xs[-1].data_ptr()
    finally:
        descent.sim.memory._record_memory_history(None)
    with pytest.raises(ValueError, match="'state'"):
        descent.sim.memory._record_memory_history("state")
    with pytest.raises(ValueError, match="max_entries"):
        _C._record_memory_history(SIM, True, 0)
    assert descent.cuda.memory._record_memory_history.__doc__ and "memory" in descent.cuda.__all__


def test_the_apps_run_returns_the_history_with_the_snapshots():
    from descent import _app
    code = 'x = descent.ones(1000, device="sim:0"); y = x + 1; del x; z = descent.ones(1000, device="sim:0")'
    # Earlier tests' sim:0 tensors in reference cycles would otherwise be freed by a
    # collection that happens to run inside the recording, before its first span.
    gc.collect()
    r = _app.run(code)
    assert r["error"] == ""
    (sim,) = [d for d in r["devices"] if d["device"] == "sim:0"]
    assert set(sim) == {"device", "before", "after", "history"}
    assert set(sim["before"]) == {"segments", "stats"} and "allocated_bytes.all.current" in sim["after"]["stats"]
    allocs = [e for e in sim["history"] if e["action"] == "alloc"]
    assert len(allocs) == 3 and allocs[0]["addr"] == allocs[2]["addr"]  # z took x's block
    spans = r["trace"].spans()
    lo, hi = min(s["start_ns"] for s in spans), max(s["end_ns"] for s in spans)
    assert all(lo <= e["time_ns"] <= hi for e in sim["history"])  # on the trace's clock
    assert descent.sim.memory._snapshot()["device_traces"] == [[]]  # the run switched it off again


def test_tensor_takes_a_device_as_torch_tensor_does():
    """descent.tensor(data, *, dtype=None, device=None, requires_grad=False), torch.tensor's signature."""
    t = descent.tensor([[1.0, 2.0], [3.0, 4.0]], device="sim:0", requires_grad=True)
    assert str(t.device) == "sim:0" and t.requires_grad and t.is_leaf
    assert t.tolist() == [[1.0, 2.0], [3.0, 4.0]]
    assert descent.tensor([1, 2], dtype=descent.float64, device="cpu").dtype is descent.float64
    with pytest.raises(TypeError):
        descent.tensor([1.0], descent.float64)  # keyword-only, as torch's


# [SECTION] memory_summary: PyTorch's table ---------------------------------------------------

SUMMARY_H200 = pathlib.Path(__file__).resolve().parent / "data" / "torch_memory_summary_h200.txt"
_UNITS = {"B": 1, "KiB": 1024, "MiB": 1024 ** 2, "GiB": 1024 ** 3, "K": 1000, "M": 1000 ** 2}


def _stats_from_table(text):
    """The statistics torch.cuda.memory_summary() was printed from, as far as its cells say (a cell in KiB
    is read as that many whole KiB: the table floors each value to its unit)."""
    rows = {"Allocated memory": "allocated_bytes", "Active memory": "active_bytes", "Requested memory":
            "requested_bytes", "GPU reserved memory": "reserved_bytes", "Non-releasable memory":
            "inactive_split_bytes", "Allocations": "allocation", "Active allocs": "active",
            "GPU reserved segments": "segment", "Non-releasable allocs": "inactive_split",
            "Oversize allocations": "oversize_allocations", "Oversize GPU segments": "oversize_segments"}
    stats, key = {"num_ooms": 0, "num_alloc_retries": 0}, None
    for line in text.splitlines():
        cells = [c.strip() for c in line.strip("|").split("|")]
        if len(cells) != 5 or cells[0] == "Metric":
            continue
        name = cells[0]
        if name in rows:
            key, pool = rows[name], "all"
        else:
            pool = "large_pool" if "large" in name else "small_pool"
        prefix = f"{key}." if key.startswith("oversize") else f"{key}.{pool}."
        for column, cell in zip(("current", "peak", "allocated", "freed"), cells[1:]):
            number, *unit = cell.split()
            stats[prefix + column] = int(number) * _UNITS.get(unit[0] if unit else "B", 1)
    return stats


def test_memory_summary_prints_pytorchs_table():
    from descent._device import _summary_table
    torch_text = SUMMARY_H200.read_text()       # torch.cuda.memory_summary() on the H200 host, PyTorch 2.11
    assert _summary_table(_stats_from_table(torch_text), "cuda:0", "cuda", False) == torch_text


def test_memory_summary_of_sim0_reads_its_allocator():
    x = descent.ones(1000, device="sim:0")
    text = descent.sim.memory_summary()
    assert "descent sim memory summary, device ID 0" in text
    allocated = next(ln for ln in text.splitlines() if ln.startswith("| Allocated memory"))
    assert allocated.split("|")[2].strip() == _size(descent.sim.memory_allocated())
    short = descent.sim.memory_summary(abbreviated=True)
    assert "from large pool" not in short and "from small pool" in text
    del x


def _size(n):
    from descent._device import _size_cell
    return _size_cell(n, n).strip()
