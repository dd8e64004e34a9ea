// The device's queues at a moment: what each stream of a trace holds, runs
// and has finished at a time t, read from the launch spans and the device's
// own spans. The building's device strip and the streams panel draw it.
//
// [SECTION] Work on a stream
// [SECTION] Building the model
// [SECTION] A stream at time t
// [SECTION] Host waits
// [SECTION] What floors 7 and 8 decided, in words
//
// Plain data, no ImGui: tests/ui/test_streams_model.cpp checks it without a
// window. See Note [The queue at time t].
//
// Note [The queue at time t]
// ~~~~~~~~~~~~~~~~~~~~~~~~~~
// A launch puts a kernel on a stream and returns; the device runs it when the
// stream gets to it (Note [Streams and the two clocks], floors/streams/streams.h).
// A trace holds both ends of that: the host's span that let go of the work
// (the floor-8 "simLaunchKernel"/"cudaLaunchKernel", or a floor-7 copy
// "simMemcpyAsync"), and the work's own span on the device row of its stream,
// joined by an "ac2g" flow (Note [Device spans], tracer/tracer.h). So at any
// time t of the trace a piece of work is in one of four states:
//   ahead     t < the host span's end    the host has not let go of it yet
//   queued    host span's end <= t < device start   on the stream, waiting
//   running   device start <= t < device end
//   done      device end <= t
// The host span's end is when the caller got control back; the gap from it
// to the device start is the time the work sat in the queue, which is the
// lesson: the host returned before the kernel ran. The queue's length at t
// is queued + running; the floor-7 "enqueue" span (or the copy span) records
// what the runtime counted as its queue_depth at the moment of the enqueue
// (that work included), which the panel shows beside it. A stream runs its
// work in order, so a lane's work is kept in enqueue order.
// Two edge cases: the simulated device's worker may start a kernel before
// the launch span has closed, so that work is never seen queued (it runs at
// once); and work whose device span is missing from the trace (the recording
// stopped before the device got to it) stays queued to the end, said so.
// Device work with no host span in the trace appears at its own start.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "tracer/trace.h"
#include "ui/story.h"

namespace descent::ui {

// [SECTION] Work on a stream --------------------------------------------------------

constexpr int64_t kNever = INT64_MAX;  // a device time the trace does not hold

struct DeviceWork {
  size_t device_span = SIZE_MAX;  // its span on the device row; SIZE_MAX: not recorded
  size_t launch_span = SIZE_MAX;  // the host span that put it on the stream; SIZE_MAX: not in the trace
  size_t enqueue_span =
      SIZE_MAX;           // the span with its queue_depth: the floor-7 "enqueue" around a launch, or the copy itself
  std::string name;       // the kernel's (or copy's) name
  int64_t queued_ns = 0;  // when the host let go: the launch span's end (the device start without a launch)
  int64_t start_ns = kNever;  // on the device; kNever when not recorded
  int64_t end_ns = kNever;
  int64_t queue_depth = -1;  // the runtime's count at the enqueue, this work included; -1: unknown
};

// One stream of one device: a lane of the streams panel.
struct StreamLane {
  std::string label;             // "sim:0 stream 0" (the device row's name in the metadata)
  std::string device;            // "sim:0"; "" when the trace does not say
  int64_t stream = -1;           // the stream's id; -1 when unknown
  uint32_t thread = UINT32_MAX;  // its device row (Span::thread); UINT32_MAX without device spans
  std::vector<DeviceWork> work;  // in enqueue order (the order the stream runs it)
};

struct StreamsModel {
  std::vector<StreamLane> lanes;  // by device, then stream
  bool empty() const { return lanes.empty(); }
};

// [SECTION] Building the model --------------------------------------------------------

// Reads every device span, the flow that joins it to its host span, and the
// descent launches whose work never reached the device within the recording.
// A trace without device work gives an empty model. O(spans + flows).
StreamsModel build_streams(const trace::Trace& t);

// [SECTION] A stream at time t ------------------------------------------------------------

enum class WorkState { Ahead, Queued, Running, Done };
WorkState state_at(const DeviceWork& w, int64_t t);
const char* state_word(WorkState s);  // "ahead", "queued", "running", "done"

struct LaneAt {
  std::vector<size_t> queued;  // indices into StreamLane::work, the next to run first
  size_t running = SIZE_MAX;   // the work running now (a stream runs one at a time)
  std::vector<size_t> done;    // finished, the most recent last
  size_t ahead = 0;            // not yet handed to the stream
  int64_t queue_depth = -1;    // queue_depth at the latest enqueue at or before t; -1: none yet
  size_t queue_length() const { return queued.size() + (running != SIZE_MAX); }
};
LaneAt lane_at(const StreamLane& lane, int64_t t);

// The trace's time at a playback position: the step's time, moved towards
// the next step's by the fraction (how the token is drawn between floors).
int64_t time_at(const Story& s, double position);

// [SECTION] Host waits ------------------------------------------------------------------------

// A floor-7 span in which the host waits for the device (".item()",
// "synchronize", "stream_synchronize", ...): it carries an "api" argument
// naming a synchronize call. Enqueues and copies are not waits.
bool is_sync_span(const trace::Span& s);

// The work a wait waited for: on the streams it covers (its "stream"
// argument, else every stream of its "device", else every stream), the work
// handed over before the wait began and not done when it began. As
// (lane, work) pairs, in lane order.
std::vector<std::pair<size_t, size_t>> waited_for(const StreamsModel& m, const trace::Span& wait);

// [SECTION] What floors 7 and 8 decided, in words --------------------------------------------

// One line for the building about span `i` on floor 7 or 8, "" for others:
//   launch   "kernel add_float32: grid 1 x block 256 threads, 0 B shared memory, on stream 0"
//   enqueue  "on stream 0, queue depth 2: this work and 1 ahead of it"
//   wait     "the host waits (simDeviceSynchronize) for 2 pieces of work still on sim:0"
// The launch line adds when the device ran it, from the model.
std::string device_decision(const trace::Trace& t, const StreamsModel& m, size_t i);

}  // namespace descent::ui
