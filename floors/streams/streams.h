// Floor 7, the stream queues: where device work waits its turn.
//
// [SECTION] Streams and events
// [SECTION] A device kind's runtime
// [SECTION] Current stream, synchronization, copies
//
// See floors/streams/README.md for the floor in a paragraph, and
// Note [Streams and the two clocks] below.
//
// Note [Streams and the two clocks]
// ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
// A kernel call on a device tensor does not run the kernel: it puts the work
// on a *stream*, a first-in-first-out queue of the device, and returns. The
// device takes work off each queue in order, later; work on two streams may
// overlap. So a traced device call has two clocks: when the host got control
// back (the launch span on floor 8 ends after microseconds) and when the
// device did the work (a span on the device's row, floor "device", which can
// start long after). Reading a value on the host (`.item()`, `.cpu()`,
// `synchronize()`) must wait until the queue has drained up to the work that
// produced it: those waits are spans of this floor of their own
// ("synchronize", "stream_synchronize", "event_synchronize"), so a learner
// sees where the host waited and why.
//
// Both device kinds sit behind one interface, DeviceRuntime:
// - cuda:N, the CUDA runtime's streams (cudaStream_t) and events.
// - sim:0, the simulated device: every stream is a queue of tasks drained by
//   its own worker thread (sim_runtime.cpp); an event is a marker task. Its
//   memory is a host arena, so a simulated device pointer is a host pointer,
//   but nothing on the host reads it except through a copy on a stream.
// Every stream of a device has an id: 0 is the device's default stream
// (PyTorch's "default stream" of each device), new_stream() makes others.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>

#include "floors/allocator/allocator.h"
#include "floors/core/device.h"
#include "tracer/tracer.h"

namespace descent::streams {

// [SECTION] Streams and events ---------------------------------------------------

struct Stream {
  Device device{DeviceType::Sim, 0};  // never the CPU
  int64_t id = 0;                     // 0: the device's default stream
  bool operator==(const Stream&) const = default;
  std::string str() const;  // "sim:0 stream 0"
};

// One event, recorded on a stream: it completes when the device reaches it.
// Created by DeviceRuntime::create_event.
struct EventImpl {
  virtual ~EventImpl() = default;
  virtual void record(const Stream& s) = 0;       // enqueue the marker on s
  virtual void block(const Stream& s) = 0;        // work enqueued on s after this waits for the marker
  virtual bool query() = 0;                       // true when the device has passed the marker (or none was recorded)
  virtual void synchronize() = 0;                 // the host waits for the marker
  virtual double elapsed_ms(EventImpl& end) = 0;  // device time from this marker to `end`'s; both must be complete
  bool recorded = false;
  Stream stream;  // where it was last recorded
};

// [SECTION] A device kind's runtime ------------------------------------------------

// What the floors below the kernels need from a kind of device. One instance
// per DeviceType (runtime()); every method takes the device index or a Stream.
class DeviceRuntime {
 public:
  virtual ~DeviceRuntime() = default;
  virtual DeviceType type() const = 0;
  // 0 when none is usable; unavailable_reason() then says why in one line.
  virtual int device_count() = 0;
  virtual std::string unavailable_reason() = 0;
  virtual std::string device_name(int index) = 0;  // "NVIDIA H200", "descent simulated device"
  // What the device says of its own speed, for the roofline of the kernels'
  // spans (Note [A roofline for every kernel span], floors/kernels/roofline.h):
  // 0 where it says nothing (the simulated device is the host's cores).
  struct Limits {
    int sms = 0, cc_major = 0, cc_minor = 0, bus_bits = 0;
    double clock_hz = 0, memory_clock_hz = 0;  // the maximum clocks it reports
  };
  virtual Limits limits(int /*index*/) { return {}; }

  // Raw memory for the caching allocator (floor 6): cudaMalloc, or the arena.
  virtual alloc::RawBackend& memory(int index) = 0;

  // Streams.
  virtual int64_t create_stream(int index) = 0;      // a new stream's id (> 0)
  virtual void* native(const Stream& s) = 0;         // cudaStream_t; nullptr on sim
  virtual void synchronize(const Stream& s) = 0;     // the host waits until s is empty
  virtual bool query(const Stream& s) = 0;           // s is empty now
  virtual int64_t queue_depth(const Stream& s) = 0;  // work enqueued and not finished; -1 when unknown
  virtual void synchronize_device(int index) = 0;    // every stream of the device
  virtual bool idle(int index) = 0;                  // no work waits or runs on any stream of the device

  virtual std::unique_ptr<EventImpl> create_event(int index, bool enable_timing) = 0;

  // Enqueues a copy on the stream and returns (copy_bytes below waits where
  // the host needs the bytes). Host pointers are pageable unless `pinned`; a
  // copy from pageable host memory has read its source when this returns
  // (staged), as cudaMemcpyAsync's has.
  enum class CopyKind : uint8_t { HostToDevice, DeviceToHost, DeviceToDevice };
  virtual void copy(void* dst, const void* src, size_t nbytes, CopyKind kind, const Stream& s, bool pinned) = 0;
};

// The runtime for `t` (Sim or CUDA; the CUDA one exists in every build and
// reports 0 devices without the toolkit). std::logic_error for the CPU.
DeviceRuntime& runtime(DeviceType t);

// Whether this process is a child forked after it used devices of kind `t`
// (Note [Devices after fork] in streams.cpp): such a child has none of them,
// and every call that needs one raises. torch.cuda._is_in_bad_fork() asks this.
bool in_bad_fork(DeviceType t);

// Raises RuntimeError when `d` is not a usable device of this machine:
// "cuda:1 is not available: ..." naming the reason in one line.
void check_device(Device d);

// [SECTION] Current stream, synchronization, copies ---------------------------------

// The calling thread's current stream for `d` (the default stream, id 0,
// until set_current_stream names another), as in PyTorch.
Stream current_stream(Device d);
void set_current_stream(const Stream& s);
Stream default_stream(Device d);

// Waits on the host, inside a floor-7 span named `why` ("synchronize",
// ".item()", ".cpu()"): for every stream of the device.
void synchronize(Device d, const char* why = "synchronize");
void synchronize(const Stream& s, const char* why = "stream_synchronize");

// A copy of nbytes between two memories, on the current stream of the device
// side (traced on floor 7 as cudaMemcpyAsync or simMemcpyAsync, with the
// device's own span on the device row). Device-to-host queues the copy, then
// waits for the stream (a floor-7 span), so the bytes are there on return:
// cudaMemcpyAsync then cudaStreamSynchronize, as PyTorch's copy_ does.
// `why` names that wait; null: the thread's ReadReason (".cpu()",
// ".item()"), else "synchronize". Pinned host memory makes a host-to-device
// or device-to-host copy asynchronous (non_blocking), as in PyTorch: the
// caller synchronizes.
void copy_bytes(void* dst, Device dst_device, const void* src, Device src_device, size_t nbytes, bool pinned = false,
                const char* why = nullptr);

// Why the host reads a device's memory, while one lives on this thread: the
// name of the wait of every device-to-host copy made meanwhile (".item()",
// "print"), so that the one wait of a read says what the program was doing
// when it stopped (Note [Reading a device tensor waits],
// floors/binding/device_object.cpp). They nest; the innermost names.
class ReadReason {
 public:
  explicit ReadReason(const char* why);
  ~ReadReason();
  ReadReason(const ReadReason&) = delete;
  ReadReason& operator=(const ReadReason&) = delete;
  static const char* current();  // "synchronize" when none lives

 private:
  const char* previous_;
};

// Note [Which op faulted]
// ~~~~~~~~~~~~~~~~~~~~~~~
// A kernel that faults on a GPU (an illegal address, a failed assert) is not
// reported by its launch, which returned long before: the CUDA runtime
// reports it at a later call, any call, often a synchronize, and from then
// on every call fails. So each launch notes its op and kernel here, in a
// small ring per device (a store of two pointers, no lock), and a device
// fault found later says which work was in flight: "the device faulted
// running work launched before this call; the last launched on cuda:0:
// aten::index (index_gather_float32), ...". On sim:0 the worker knows the
// kernel it was running and names it directly.
void note_launch(Device d, const char* op, const char* kernel);
// The last launches noted on `d`, newest first: "aten::add (add_float32), ...".
std::string recent_launches(Device d);

// The simulated device's queue (sim_runtime.cpp): puts `task` on sim stream
// `s` for its worker thread and returns the number of tasks in the queue,
// this one included. launch_sim and the sim's copies and events use it. A
// task that throws is a device fault: the stream remembers the first one and
// the next synchronization on that device raises it (as a CUDA error is
// sticky and reported by a later call).
int64_t sim_enqueue(const Stream& s, std::function<void()> task);

// From a task of sim:0's worker: puts its work on the trace's device row
// (Note [Device spans]) from start_ns, read by the task when it began, to
// now, with what every sim span shares (device, stream, correlation, the
// clock); `d` brings the rest (name, kind of work, grid or bytes). Nothing
// when tracing is off or start_ns is 0 (it was off when the task began).
void record_sim_span(trace::DeviceSpan d, const Stream& s, int64_t start_ns, uint64_t correlation);

}  // namespace descent::streams
