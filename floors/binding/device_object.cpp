// Devices from Python: what descent.cuda and descent.sim (floors/python/
// descent/cuda.py, sim.py) are made of, as torch.cuda is made of
// torch._C._cuda_* functions and the _CudaEventBase type; and the tensor
// methods that read or move a device tensor.
//
// [SECTION] Device arguments
// [SECTION] Devices and streams
// [SECTION] Events
// [SECTION] Memory
// [SECTION] Tensors on devices: reading on the host, pinned memory, record_stream
// [SECTION] Init
//
// The Python modules turn `device=None`, an int, a str or a descent.device
// into one device and call these with it; a Stream is a Python object
// holding its device and stream id (descent/_device.py).
#include <memory>
#include <string>

#include "floors/binding/binding.h"
#include "floors/core/grad_mode.h"
#include "floors/kernels/device/device_reduce.h"
#include "floors/streams/device_memory.h"
#include "floors/streams/streams.h"
#include "tracer/tracer.h"

namespace descent::binding {

namespace {

// [SECTION] Device arguments -------------------------------------------------------------

// A descent.device or a str ("sim:0", "cuda:1"); a TypeError otherwise.
Device device_arg(PyObject* o, const char* fn) {
  if (Py_TYPE(o) == &g_device_type) return device_of(o);
  DESCENT_CHECK(PyUnicode_Check(o), TypeError, fn, "(): expected a device, not ", Py_TYPE(o)->tp_name);
  return Device::parse(utf8_text(o));
}

// A device with streams that this machine has (streams::check_device's one-line RuntimeError otherwise).
Device usable_device(PyObject* o, const char* fn) {
  const Device d = device_arg(o, fn);
  streams::check_device(d);
  return d;
}

DeviceType kind_arg(PyObject* o) {
  DESCENT_CHECK(PyUnicode_Check(o), TypeError, "expected 'sim' or 'cuda', not ", Py_TYPE(o)->tp_name);
  const std::string k = utf8_text(o);
  if (k == "sim") return DeviceType::Sim;
  if (k == "cuda") return DeviceType::CUDA;
  throw ValueError(str("expected 'sim' or 'cuda', not '", k, "'"));
}

// (device, stream_id) as the Python Stream passes them: a stream the device
// has (the runtime's RuntimeError otherwise). Checked here, where raising is
// safe: an unknown id reaching the caching allocator would fail later inside
// a tensor's deleter, where nothing may throw.
streams::Stream stream_args(PyObject* args, const char* fn) {
  PyObject* dev = nullptr;
  long long id = 0;
  if (!PyArg_ParseTuple(args, "OL", &dev, &id)) throw TypeError("");  // keeps Python's error
  const streams::Stream s{usable_device(dev, fn), id};
  DESCENT_CHECK(id >= 0, Error, fn, "(): ", s.device.str(), " has no stream ", id);
  if (id != 0) streams::runtime(s.device.type).query(s);  // raises for a stream the device never made
  return s;
}

// [SECTION] Devices and streams ----------------------------------------------------------

PyObject* py_device_count(PyObject*, PyObject* kind) {
  DESCENT_PY_TRY return PyLong_FromLong(streams::runtime(kind_arg(kind)).device_count());
  DESCENT_PY_CATCH(nullptr)
}
PyObject* py_unavailable_reason(PyObject*, PyObject* kind) {
  DESCENT_PY_TRY
  return PyUnicode_FromString(streams::runtime(kind_arg(kind)).unavailable_reason().c_str());
  DESCENT_PY_CATCH(nullptr)
}
PyObject* py_in_bad_fork(PyObject*, PyObject* kind) {
  DESCENT_PY_TRY
  return PyBool_FromLong(streams::in_bad_fork(kind_arg(kind)));
  DESCENT_PY_CATCH(nullptr)
}
PyObject* py_check_device(PyObject*, PyObject* dev) {
  DESCENT_PY_TRY usable_device(dev, "device");
  Py_RETURN_NONE;
  DESCENT_PY_CATCH(nullptr)
}
PyObject* py_device_name(PyObject*, PyObject* dev) {
  DESCENT_PY_TRY
  const Device d = usable_device(dev, "get_device_name");
  return PyUnicode_FromString(streams::runtime(d.type).device_name(d.index).c_str());
  DESCENT_PY_CATCH(nullptr)
}
// torch.cuda.synchronize(): the host waits for every stream of the device, in a floor-7 span "synchronize".
PyObject* py_synchronize(PyObject*, PyObject* dev) {
  DESCENT_PY_TRY
  const Device d = usable_device(dev, "synchronize");
  GilRelease release;
  streams::synchronize(d, "synchronize");
  Py_RETURN_NONE;
  DESCENT_PY_CATCH(nullptr)
}
// torch.cuda._sleep(cycles): a kernel on the device's current stream that spins for that many clock cycles.
PyObject* py_cuda_sleep(PyObject*, PyObject* args) {
  DESCENT_PY_TRY
  PyObject* dev = nullptr;
  long long cycles = 0;
  if (!PyArg_ParseTuple(args, "OL", &dev, &cycles)) return nullptr;
  const Device d = usable_device(dev, "_sleep");
  DESCENT_CHECK(d.type == DeviceType::CUDA, ValueError, "_sleep: a CUDA device, not ", d.str());
#ifdef DESCENT_HAVE_CUDA
  kernels::device::cuda_sleep(streams::current_stream(d), int64_t(cycles));
#endif
  Py_RETURN_NONE;
  DESCENT_PY_CATCH(nullptr)
}
// tracing.py, before it stops a recording: wait for the work already queued
// on every device in use, so that its device spans are in the trace.
PyObject* py_synchronize_devices_in_use(PyObject*, PyObject*) {
  DESCENT_PY_TRY
  GilRelease release;
  streams::synchronize_devices_in_use();
  Py_RETURN_NONE;
  DESCENT_PY_CATCH(nullptr)
}
PyObject* py_current_stream(PyObject*, PyObject* dev) {
  DESCENT_PY_TRY return PyLong_FromLongLong(streams::current_stream(usable_device(dev, "current_stream")).id);
  DESCENT_PY_CATCH(nullptr)
}
PyObject* py_set_current_stream(PyObject*, PyObject* args) {
  DESCENT_PY_TRY streams::set_current_stream(stream_args(args, "set_stream"));
  Py_RETURN_NONE;
  DESCENT_PY_CATCH(nullptr)
}
PyObject* py_new_stream(PyObject*, PyObject* dev) {
  DESCENT_PY_TRY
  const Device d = usable_device(dev, "Stream");
  return PyLong_FromLongLong(streams::runtime(d.type).create_stream(d.index));
  DESCENT_PY_CATCH(nullptr)
}
PyObject* py_stream_synchronize(PyObject*, PyObject* args) {
  DESCENT_PY_TRY
  const streams::Stream s = stream_args(args, "Stream.synchronize");
  GilRelease release;
  streams::synchronize(s, "stream_synchronize");
  Py_RETURN_NONE;
  DESCENT_PY_CATCH(nullptr)
}
PyObject* py_stream_query(PyObject*, PyObject* args) {
  DESCENT_PY_TRY
  const streams::Stream s = stream_args(args, "Stream.query");
  return PyBool_FromLong(streams::runtime(s.device.type).query(s));
  DESCENT_PY_CATCH(nullptr)
}
// The cudaStream_t (0 for the default stream and on sim:0), for Stream's repr.
PyObject* py_stream_native(PyObject*, PyObject* args) {
  DESCENT_PY_TRY
  const streams::Stream s = stream_args(args, "Stream.native");
  return PyLong_FromVoidPtr(streams::runtime(s.device.type).native(s));
  DESCENT_PY_CATCH(nullptr)
}

// [SECTION] Events -------------------------------------------------------------------------

// _C._EventBase: torch._C._CudaEventBase's part. The runtime's event is
// made when first recorded, on the recording stream's device, as CUDA
// events are created lazily in PyTorch.
struct EventObject {
  PyObject_HEAD std::unique_ptr<streams::EventImpl> impl;
  Device device;
  bool enable_timing;
};
PyTypeObject g_event_type = {PyVarObject_HEAD_INIT(nullptr, 0) "descent._C._EventBase"};

EventObject* as_event(PyObject* o) { return reinterpret_cast<EventObject*>(o); }

PyObject* event_new(PyTypeObject* type, PyObject* args, PyObject* kwargs) {
  int enable_timing = 0, blocking = 0, interprocess = 0;
  static const char* kw[] = {"enable_timing", "blocking", "interprocess", nullptr};
  if (!PyArg_ParseTupleAndKeywords(args, kwargs, "|ppp:Event", const_cast<char**>(kw), &enable_timing, &blocking,
                                   &interprocess))
    return nullptr;
  if (interprocess) {
    PyErr_SetString(PyExc_NotImplementedError, "Event(interprocess=True): descent shares no events between processes");
    return nullptr;
  }
  PyObject* o = type->tp_alloc(type, 0);
  if (!o) return nullptr;
  new (&as_event(o)->impl) std::unique_ptr<streams::EventImpl>();
  as_event(o)->device = Device{};
  as_event(o)->enable_timing = enable_timing != 0;  // `blocking` changes how CUDA waits, not what: accepted
  return o;
}
void event_dealloc(PyObject* o) {
  as_event(o)->impl.~unique_ptr();
  Py_TYPE(o)->tp_free(o);
}

// The event's runtime object for stream `s`, made on first use.
streams::EventImpl& event_for(EventObject* e, const streams::Stream& s) {
  if (!e->impl) {
    e->impl = streams::runtime(s.device.type).create_event(s.device.index, e->enable_timing);
    e->device = s.device;
  }
  DESCENT_CHECK(e->device == s.device, Error, "Event device ", e->device.str(),
                " does not match recording stream's device ", s.device.str(), ".");
  return *e->impl;
}

PyObject* event_record(PyObject* o, PyObject* args) {
  DESCENT_PY_TRY
  const streams::Stream s = stream_args(args, "Event.record");
  trace::ScopedSpan span(trace::Floor::Streams, "event_record");
  span.arg("stream", s.id);
  event_for(as_event(o), s).record(s);
  Py_RETURN_NONE;
  DESCENT_PY_CATCH(nullptr)
}
// Work enqueued on the stream from now on waits for the event (cudaStreamWaitEvent); the host does not wait.
PyObject* event_wait(PyObject* o, PyObject* args) {
  DESCENT_PY_TRY
  const streams::Stream s = stream_args(args, "Event.wait");
  EventObject* e = as_event(o);
  if (!e->impl) Py_RETURN_NONE;  // never recorded: nothing to wait for, as CUDA's
  trace::ScopedSpan span(trace::Floor::Streams, "stream_wait_event");
  span.arg("stream", s.id);
  e->impl->block(s);
  Py_RETURN_NONE;
  DESCENT_PY_CATCH(nullptr)
}
PyObject* event_query(PyObject* o, PyObject*) {
  DESCENT_PY_TRY
  EventObject* e = as_event(o);
  return PyBool_FromLong(!e->impl || e->impl->query());
  DESCENT_PY_CATCH(nullptr)
}
PyObject* event_synchronize(PyObject* o, PyObject*) {
  DESCENT_PY_TRY
  EventObject* e = as_event(o);
  if (!e->impl) Py_RETURN_NONE;
  trace::ScopedSpan span(trace::Floor::Streams, "event_synchronize");
  span.arg("stream", e->impl->stream.id);
  GilRelease release;
  e->impl->synchronize();
  Py_RETURN_NONE;
  DESCENT_PY_CATCH(nullptr)
}
// Milliseconds of device time from this event to `end`, PyTorch's messages when it cannot say.
PyObject* event_elapsed_time(PyObject* o, PyObject* end) {
  DESCENT_PY_TRY
  DESCENT_CHECK(PyObject_TypeCheck(end, &g_event_type), TypeError, "elapsed_time(): expected an Event, not ",
                Py_TYPE(end)->tp_name);
  EventObject *a = as_event(o), *b = as_event(end);
  DESCENT_CHECK(a->enable_timing && b->enable_timing, Error,
                "Both events must be created with argument 'enable_timing=True'.");
  DESCENT_CHECK(a->impl && b->impl && a->impl->recorded && b->impl->recorded, Error,
                "Both events must be recorded before calculating elapsed time.");
  DESCENT_CHECK(a->device == b->device, Error, "Both events must be on the same device: ", a->device.str(), " and ",
                b->device.str());
  return PyFloat_FromDouble(a->impl->elapsed_ms(*b->impl));
  DESCENT_PY_CATCH(nullptr)
}
PyObject* event_device(PyObject* o, void*) {
  EventObject* e = as_event(o);
  if (!e->impl) Py_RETURN_NONE;
  return device_object(e->device);
}
PyObject* event_enable_timing(PyObject* o, void*) { return PyBool_FromLong(as_event(o)->enable_timing); }
PyObject* event_recorded(PyObject* o, void*) {
  EventObject* e = as_event(o);
  return PyBool_FromLong(e->impl && e->impl->recorded);
}
// An id for the repr: the runtime object's address, 0 before the first record.
PyObject* event_handle(PyObject* o, void*) { return PyLong_FromVoidPtr(as_event(o)->impl.get()); }

PyMethodDef event_methods[] = {
    {"_record", event_record, METH_VARARGS, "_record(device, stream_id): enqueues the event's marker on the stream"},
    {"_wait", event_wait, METH_VARARGS, "_wait(device, stream_id): later work on the stream waits for the event"},
    {"query", event_query, METH_NOARGS, "whether the device has passed the event (True when never recorded)"},
    {"synchronize", event_synchronize, METH_NOARGS, "the host waits until the device has passed the event"},
    {"elapsed_time", event_elapsed_time, METH_O, "milliseconds of device time from this event to end_event"},
    {nullptr, nullptr, 0, nullptr},
};
PyGetSetDef event_getset[] = {
    {"device", event_device, nullptr, "the device it was recorded on; None before", nullptr},
    {"enable_timing", event_enable_timing, nullptr, "whether elapsed_time() may use it", nullptr},
    {"_recorded", event_recorded, nullptr, "whether it was recorded", nullptr},
    {"_handle", event_handle, nullptr, "the runtime event's address, 0 before the first record", nullptr},
    {nullptr, nullptr, nullptr, nullptr, nullptr},
};

// [SECTION] Memory ---------------------------------------------------------------------------

alloc::CachingAllocator& allocator_arg(PyObject* dev, const char* fn) {
  return streams::device_allocator(usable_device(dev, fn));
}

// torch.cuda.memory_stats(device): the allocator's statistics under PyTorch's keys, in its (sorted) order.
PyObject* py_memory_stats(PyObject*, PyObject* dev) {
  DESCENT_PY_TRY
  const alloc::MemoryStats stats = allocator_arg(dev, "memory_stats").memory_stats();
  PyObject* d = PyDict_New();
  if (!d) return nullptr;
  for (const auto& [key, value] : stats) {
    PyObject* v = PyLong_FromLongLong(value);
    if (!v || PyDict_SetItemString(d, key.c_str(), v) < 0) {
      Py_XDECREF(v);
      Py_DECREF(d);
      return nullptr;
    }
    Py_DECREF(v);
  }
  return d;
  DESCENT_PY_CATCH(nullptr)
}
PyObject* py_reset_peak(PyObject*, PyObject* dev) {
  DESCENT_PY_TRY allocator_arg(dev, "reset_peak_memory_stats").reset_peak();
  Py_RETURN_NONE;
  DESCENT_PY_CATCH(nullptr)
}
PyObject* py_reset_accumulated(PyObject*, PyObject* dev) {
  DESCENT_PY_TRY
  allocator_arg(dev, "reset_accumulated_memory_stats").reset_accumulated();
  Py_RETURN_NONE;
  DESCENT_PY_CATCH(nullptr)
}
// The CPU allocator's statistics (descent's own: the CPU has no caching allocator).
PyObject* py_cpu_stats(PyObject*, PyObject*) {
  alloc::CpuStats s = alloc::cpu_stats();
  return Py_BuildValue("{s:L,s:L,s:L,s:L}", "allocated_bytes", (long long)s.allocated_bytes, "peak_allocated_bytes",
                       (long long)s.peak_allocated_bytes, "num_allocs", (long long)s.num_allocs, "num_frees",
                       (long long)s.num_frees);
}
PyObject* py_empty_cache(PyObject*, PyObject* dev) {
  DESCENT_PY_TRY
  alloc::CachingAllocator& a = allocator_arg(dev, "empty_cache");
  GilRelease release;  // it may wait for the device (pending frees)
  a.empty_cache();
  Py_RETURN_NONE;
  DESCENT_PY_CATCH(nullptr)
}

PyObject* block_dict(const alloc::BlockInfo& b) {
  return Py_BuildValue("{s:K,s:n,s:n,s:s}", "address", (unsigned long long)b.address, "size", Py_ssize_t(b.size),
                       "requested_size", Py_ssize_t(b.requested_size), "state", b.state.c_str());
}
PyObject* segment_dict(const alloc::SegmentInfo& s) {
  PyObject* blocks = py_list(s.blocks.size(), [&](size_t i) { return block_dict(s.blocks[i]); });
  if (!blocks) return nullptr;
  PyObject* d = Py_BuildValue("{s:i,s:K,s:n,s:n,s:n,s:n,s:L,s:s,s:N}", "device", s.device, "address",
                              (unsigned long long)s.address, "total_size", Py_ssize_t(s.total_size), "allocated_size",
                              Py_ssize_t(s.allocated_size), "active_size", Py_ssize_t(s.active_size), "requested_size",
                              Py_ssize_t(s.requested_size), "stream", (long long)s.stream, "segment_type",
                              s.segment_type.c_str(), "blocks", blocks);
  return d;
}
// torch.cuda.memory_snapshot()'s list of segments, for one device.
PyObject* py_memory_snapshot(PyObject*, PyObject* dev) {
  DESCENT_PY_TRY
  const alloc::Snapshot snap = allocator_arg(dev, "memory_snapshot").snapshot();
  return py_list(snap.segments.size(), [&](size_t i) { return segment_dict(snap.segments[i]); });
  DESCENT_PY_CATCH(nullptr)
}

// torch.cuda.memory._record_memory_history(enabled, max_entries=...) for one
// device: _record_memory_history(device, enabled, max_entries). Switching it
// off drops the entries, as PyTorch's does.
PyObject* py_record_memory_history(PyObject*, PyObject* args) {
  DESCENT_PY_TRY
  PyObject* dev = nullptr;
  int enabled = 0;
  long long max_entries = static_cast<long long>(alloc::kDefaultHistoryEntries);
  if (!PyArg_ParseTuple(args, "Op|L", &dev, &enabled, &max_entries)) throw TypeError("");  // keeps Python's error
  DESCENT_CHECK(max_entries > 0, ValueError, "_record_memory_history(): max_entries must be positive, got ",
                max_entries);
  allocator_arg(dev, "_record_memory_history").record_memory_history(enabled != 0, size_t(max_entries));
  Py_RETURN_NONE;
  DESCENT_PY_CATCH(nullptr)
}
// The device's history, oldest first: the dicts of torch.cuda.memory._snapshot()'s
// "device_traces", with time_ns (the tracer's clock, as the trace's spans) for time_us.
PyObject* py_memory_history(PyObject*, PyObject* dev) {
  DESCENT_PY_TRY
  const std::vector<alloc::TraceEntry> h = allocator_arg(dev, "_memory_history").memory_history();
  return py_list(h.size(), [&](size_t i) {
    const alloc::TraceEntry& e = h[i];
    return Py_BuildValue("{s:s,s:K,s:n,s:L,s:L}", "action", alloc::action_name(e.action), "addr",
                         (unsigned long long)e.addr, "size", Py_ssize_t(e.size), "stream", (long long)e.stream,
                         "time_ns", (long long)e.time_ns);
  });
  DESCENT_PY_CATCH(nullptr)
}

PyObject* py_sim_memory_capacity(PyObject*, PyObject*) {
  DESCENT_PY_TRY return PyLong_FromSize_t(streams::sim_memory_capacity());
  DESCENT_PY_CATCH(nullptr)
}
PyObject* py_set_sim_memory_capacity(PyObject*, PyObject* n) {
  DESCENT_PY_TRY
  DESCENT_CHECK(PyLong_Check(n) && !PyBool_Check(n), TypeError, "set_memory_capacity(): expected an int of bytes, not ",
                Py_TYPE(n)->tp_name);
  const long long bytes = PyLong_AsLongLong(n);
  if (bytes == -1 && PyErr_Occurred()) return nullptr;
  DESCENT_CHECK(bytes > 0, ValueError, "set_memory_capacity(): expected a positive number of bytes, got ", bytes);
  streams::set_sim_memory_capacity(size_t(bytes));
  Py_RETURN_NONE;
  DESCENT_PY_CATCH(nullptr)
}

}  // namespace

// [SECTION] Tensors on devices ----------------------------------------------------------------

// Note [Reading a device tensor waits]
// ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
// A device tensor's elements are not in host memory, and may not even be
// computed yet: the kernels that make them sit in the stream's queue (Note
// [Streams and the two clocks], streams.h). So everything that shows a device
// tensor's values on the host -- repr and print, .item() (and through it
// bool(), float(), int()), .tolist(), .cpu() -- does what PyTorch does:
//   0. a floor-2 span named for the reason opens: the read crossed into C++;
//   1. an op of the table reads the values: .item() is aten::item ->
//      aten::_local_scalar_dense, the others aten::to -> aten::_to_copy ->
//      aten::empty, aten::copy_ with device=cpu (floor 5's copy between
//      devices, Note [Copies between devices]);
//   2. that op queues the copy on the device's current stream, behind the
//      kernels that compute the values (cudaMemcpyAsync; simMemcpyAsync on
//      sim:0), and the host then waits for the stream once
//      (cudaStreamSynchronize), in a floor-7 span named for the reason
//      (".item()", ".tolist()", ".cpu()", "print": streams::ReadReason),
//      so a trace says why the program stopped there and for how long.
// The one wait covers every kernel queued before and the copy itself. As in
// torch.profiler, the copy's launch comes first and the wait after it: the
// host does not wait for the queue to drain before asking for the copy.
// Only .cpu() is differentiable (its result's grad_fn is ToCopyBackward0, as
// in PyTorch); the others read values and record no graph. numpy() and
// the buffer protocol do neither: as in PyTorch, they refuse a device tensor
// (TypeError: "can't convert sim:0 device type tensor to numpy. Use
// Tensor.cpu() to copy the tensor to host memory first.") rather than hide a
// copy and a wait inside numpy.asarray.
Tensor host_copy(const Tensor& t, const char* why, bool record_grad) {
  if (t.device().type == DeviceType::CPU) return t;
  trace::ScopedSpan span(trace::Floor::Binding, why);  // where the read crossed into C++: Tensor.item, ...
  GilRelease release;
  streams::ReadReason reason(why);
  AutoGradMode mode(record_grad && grad_mode_enabled());  // reading values records no graph; x.cpu() does
  return call(Op::to, t, IValue(), IValue(Device{}), false);
}

IValue read_item(const Tensor& t, const char* why) {
  std::optional<trace::ScopedSpan> span;  // a read that waits: a device tensor's
  if (t.device().type != DeviceType::CPU) span.emplace(trace::Floor::Binding, why);
  GilRelease release;
  streams::ReadReason reason(why);
  Stack s;
  s.push(IValue::borrow(t));
  call_boxed(Op::item, s);
  return std::move(s[0]);
}

namespace {

// t._host(why): a CPU tensor with t's values (t itself on the CPU), after a wait named `why`.
PyObject* m_host(PyObject* o, PyObject* why) {
  DESCENT_PY_TRY
  DESCENT_CHECK(PyUnicode_Check(why), TypeError, "_host(why): expected a str");
  const Tensor& t = unwrap(o);
  if (t.device().type == DeviceType::CPU) {
    Py_INCREF(o);
    return o;
  }
  return wrap(host_copy(t, trace::intern(utf8_text(why))));
  DESCENT_PY_CATCH(nullptr)
}

// Tensor.cpu(): self when on the CPU, else a copy through aten::to after a wait named ".cpu()".
PyObject* m_cpu(PyObject* o, PyObject*) {
  DESCENT_PY_TRY
  const Tensor& t = unwrap(o);
  if (t.device().type == DeviceType::CPU) {
    Py_INCREF(o);
    return o;
  }
  return wrap(host_copy(t, ".cpu()", /*record_grad=*/true));
  DESCENT_PY_CATCH(nullptr)
}

PyObject* get_is_cuda(PyObject* o, void*) {
  DESCENT_PY_TRY return PyBool_FromLong(unwrap(o).device().type == DeviceType::CUDA);
  DESCENT_PY_CATCH(nullptr)
}

// Tensor.pin_memory(): a copy in page-locked host memory (Note [Pinned host memory], host_memory.cpp).
PyObject* m_pin_memory(PyObject* o, PyObject*) {
  DESCENT_PY_TRY
  const Tensor& t = unwrap(o);
  DESCENT_CHECK(t.device().type == DeviceType::CPU, Error, "cannot pin '", t.device().str(),
                "' memory: only dense CPU tensors can be pinned");
  if (t.storage()->pinned) {
    Py_INCREF(o);
    return o;
  }
  Tensor out;
  {
    GilRelease release;
    auto storage =
        Ref<StorageImpl>::make(streams::pinned_allocate(size_t(t.numel()) * element_size(t.dtype())), Device{});
    storage->pinned = true;
    out = Tensor(Ref<TensorImpl>::make(std::move(storage), t.dtype(), t.sizes(), contiguous_strides(t.sizes()), 0));
    call(Op::copy_, out, t, false);
  }
  return wrap(std::move(out));
  DESCENT_PY_CATCH(nullptr)
}
PyObject* m_is_pinned(PyObject* o, PyObject* args, PyObject* kwargs) {
  PyObject* device = Py_None;  // accepted, as torch's is_pinned(device=None)
  static const char* kw[] = {"device", nullptr};
  if (!PyArg_ParseTupleAndKeywords(args, kwargs, "|O:is_pinned", const_cast<char**>(kw), &device)) return nullptr;
  DESCENT_PY_TRY return PyBool_FromLong(unwrap(o).storage()->pinned);
  DESCENT_PY_CATCH(nullptr)
}

// Tensor._record_stream(device, stream_id): the memory is used on that stream
// too; the caching allocator will not reuse it before the work queued there
// by the time it is freed has run (Note [Deferred frees]).
PyObject* m_record_stream(PyObject* o, PyObject* args) {
  DESCENT_PY_TRY
  const Tensor& t = unwrap(o);
  const streams::Stream s = stream_args(args, "record_stream");
  DESCENT_CHECK(t.device() == s.device, Error, "record_stream(): the tensor is on ", t.device().str(),
                " and the stream on ", s.device.str());
  streams::device_allocator(t.device()).record_stream(t.storage()->data, s.id);
  Py_RETURN_NONE;
  DESCENT_PY_CATCH(nullptr)
}

PyMethodDef device_functions[] = {
    {"_device_count", py_device_count, METH_O, "_device_count('sim' | 'cuda'): devices of that kind here"},
    {"_device_unavailable_reason", py_unavailable_reason, METH_O, "why that kind has no device here ('' if it has)"},
    {"_in_bad_fork", py_in_bad_fork, METH_O, "_in_bad_fork('sim' | 'cuda'): forked after this kind was used"},
    {"_check_device", py_check_device, METH_O, "RuntimeError in one line unless the device is usable"},
    {"_get_device_name", py_device_name, METH_O, "the device's name"},
    {"_synchronize", py_synchronize, METH_O, "waits for every stream of the device"},
    {"_cuda_sleep", py_cuda_sleep, METH_VARARGS, "_cuda_sleep(device, cycles): a kernel that spins that long"},
    {"_synchronize_devices_in_use", py_synchronize_devices_in_use, METH_NOARGS,
     "waits for every device with memory in use, in floor-7 spans 'wait for the devices (end of recording)'"},
    {"_current_stream", py_current_stream, METH_O, "this thread's current stream id on the device"},
    {"_set_current_stream", py_set_current_stream, METH_VARARGS, "_set_current_stream(device, stream_id)"},
    {"_new_stream", py_new_stream, METH_O, "a new stream on the device: its id"},
    {"_stream_synchronize", py_stream_synchronize, METH_VARARGS, "_stream_synchronize(device, stream_id)"},
    {"_stream_query", py_stream_query, METH_VARARGS, "_stream_query(device, stream_id): whether it is empty"},
    {"_stream_native", py_stream_native, METH_VARARGS, "_stream_native(device, stream_id): the cudaStream_t, or 0"},
    {"_memory_stats", py_memory_stats, METH_O, "the device's caching allocator statistics, torch's keys"},
    {"_cpu_allocator_stats", py_cpu_stats, METH_NOARGS, "the CPU allocator's statistics"},
    {"_reset_peak_memory_stats", py_reset_peak, METH_O, "every peak statistic of the device becomes its current"},
    {"_reset_accumulated_memory_stats", py_reset_accumulated, METH_O, "the allocated/freed sums and counts restart"},
    {"_empty_cache", py_empty_cache, METH_O, "returns the device's unused cached segments"},
    {"_memory_snapshot", py_memory_snapshot, METH_O, "the device's segments and blocks, memory_snapshot()'s dicts"},
    {"_record_memory_history", py_record_memory_history, METH_VARARGS,
     "_record_memory_history(device, enabled, max_entries=10000): the allocator's history on or off"},
    {"_memory_history", py_memory_history, METH_O, "the device's allocation history, oldest first (dicts)"},
    {"_sim_memory_capacity", py_sim_memory_capacity, METH_NOARGS, "sim:0's memory, in bytes"},
    {"_set_sim_memory_capacity", py_set_sim_memory_capacity, METH_O, "sets sim:0's memory, in bytes"},
    {nullptr, nullptr, 0, nullptr},
};

}  // namespace

PyMethodDef g_device_tensor_methods[] = {
    {"cpu", m_cpu, METH_NOARGS, "self on the CPU, or a copy there (after waiting for the device)"},
    {"_host", m_host, METH_O, "_host(why): cpu(), with the wait named `why`"},
    {"pin_memory", m_pin_memory, METH_NOARGS, "a copy in pinned (page-locked) host memory"},
    {"is_pinned", reinterpret_cast<PyCFunction>(reinterpret_cast<void (*)()>(m_is_pinned)),
     METH_VARARGS | METH_KEYWORDS, "whether the tensor is in pinned host memory"},
    {"_record_stream", m_record_stream, METH_VARARGS, "_record_stream(device, stream_id)"},
    {nullptr, nullptr, 0, nullptr},
};
PyGetSetDef g_device_tensor_getset[] = {
    {"is_cuda", get_is_cuda, nullptr, "whether the tensor is on a CUDA device", nullptr},
    {nullptr, nullptr, nullptr, nullptr, nullptr},
};

// [SECTION] Init ------------------------------------------------------------------------------

bool init_devices(PyObject* m) {
  g_event_type.tp_basicsize = sizeof(EventObject);
  g_event_type.tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_BASETYPE;
  g_event_type.tp_new = event_new;
  g_event_type.tp_dealloc = event_dealloc;
  g_event_type.tp_methods = event_methods;
  g_event_type.tp_getset = event_getset;
  g_event_type.tp_doc = "The C side of descent.cuda.Event and descent.sim.Event: a marker on a stream.";
  if (PyType_Ready(&g_event_type) < 0) return false;
  Py_INCREF(&g_event_type);
  if (PyModule_AddObject(m, "_EventBase", reinterpret_cast<PyObject*>(&g_event_type)) < 0) return false;
  return PyModule_AddFunctions(m, device_functions) == 0 && init_matmul_ladder(m) && init_distributed(m);
}

}  // namespace descent::binding
