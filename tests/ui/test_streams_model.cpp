// The streams model without a window (Note [The queue at time t],
// ui/streams_model.h): a hand-made trace of two launches, a wait and a launch
// the device never reached, then a real recording on sim:0.
//
// The real recording doubles as the app test's trace of a sim:0 call while
// Python's traces lack device spans: with DESCENT_UI_WRITE_FIXTURE=PATH set,
// SimRecording writes it there (tests/ui/data/sim_add.descent is made so).
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <cstdlib>
#include <thread>

#include "floors/launch/launch.h"
#include "floors/streams/sim_runtime.h"
#include "floors/streams/streams.h"
#include "tests/tracer/trace_test_util.h"
#include "tracer/tracer.h"
#include "ui/story.h"
#include "ui/streams_model.h"

namespace descent::ui {
namespace {

using trace::Floor;
using trace::SpanArg;
using trace::test_util::make_span;

// [SECTION] A hand-made trace ------------------------------------------------------------

// y = x.add(1).mul(2); y.item() on sim:0, then a launch on stream 1 that the
// recording stopped before the device reached. Times in ns.
trace::Trace two_launches_and_a_wait() {
  trace::Trace t;
  auto launch = [](uint64_t id, uint64_t parent, const char* kernel, int64_t a, int64_t b, int64_t stream,
                   int64_t correlation) {
    return make_span(id, parent, Floor::Launch, "simLaunchKernel", a, b, 0,
                     {{"kernel", std::string(kernel)},
                      {"grid", int64_t{1}},
                      {"block", int64_t{256}},
                      {"shared_bytes", int64_t{0}},
                      {"stream", stream},
                      {"correlation", correlation}});
  };
  auto enqueue = [](uint64_t id, uint64_t parent, int64_t a, int64_t b, int64_t stream, int64_t depth) {
    return make_span(id, parent, Floor::Streams, "enqueue", a, b, 0, {{"stream", stream}, {"queue_depth", depth}});
  };
  t.spans.push_back(make_span(1, 0, Floor::Python, "y = x.add(1).mul(2); y.item()", 0, 10000));
  t.spans.push_back(make_span(2, 1, Floor::Kernels, "aten::add", 100, 2000));
  t.spans.push_back(enqueue(3, 2, 200, 1000, 0, 1));
  t.spans.push_back(launch(4, 3, "add_float32", 300, 900, 0, 1));
  t.spans.push_back(make_span(5, 1, Floor::Kernels, "aten::mul", 2100, 4000));
  t.spans.push_back(enqueue(6, 5, 2200, 3000, 0, 2));
  t.spans.push_back(launch(7, 6, "mul_float32", 2300, 2900, 0, 2));
  t.spans.push_back(make_span(8, 1, Floor::Streams, ".item()", 5000, 9000, 0,
                              {{"device", std::string("sim:0")}, {"api", std::string("simDeviceSynchronize")}}));
  t.spans.push_back(launch(9, 1, "fill_float32", 9100, 9500, 1, 3));
  auto device = [](uint64_t id, const char* name, int64_t a, int64_t b, int64_t correlation) {
    return make_span(id, 0, Floor::Device, name, a, b, 1,
                     {{"device", std::string("sim:0")}, {"stream", int64_t{0}}, {"correlation", correlation}});
  };
  t.spans.push_back(device(20, "add_float32", 1500, 4500, 1));
  t.spans.push_back(device(21, "mul_float32", 4500, 6000, 2));
  t.flows.push_back({4, 20, "ac2g"});
  t.flows.push_back({7, 21, "ac2g"});
  t.metadata["thread.1"] = "sim:0 stream 0";
  t.metadata["thread.1.device"] = "sim:0";
  return t;
}

size_t index_of(const trace::Trace& t, uint64_t id) {
  for (size_t i = 0; i < t.spans.size(); ++i) {
    if (t.spans[i].id == id) return i;
  }
  return SIZE_MAX;
}

TEST(StreamsModel, OneLanePerStreamNamedAsTheDeviceRow) {
  const trace::Trace t = two_launches_and_a_wait();
  const StreamsModel m = build_streams(t);
  ASSERT_EQ(m.lanes.size(), 2u);
  EXPECT_EQ(m.lanes[0].label, "sim:0 stream 0");
  EXPECT_EQ(m.lanes[0].device, "sim:0");
  EXPECT_EQ(m.lanes[0].stream, 0);
  EXPECT_EQ(m.lanes[0].thread, 1u);
  ASSERT_EQ(m.lanes[0].work.size(), 2u);
  const DeviceWork& add = m.lanes[0].work[0];
  EXPECT_EQ(add.name, "add_float32");
  EXPECT_EQ(add.launch_span, index_of(t, 4));
  EXPECT_EQ(add.enqueue_span, index_of(t, 3));
  EXPECT_EQ(add.device_span, index_of(t, 20));
  EXPECT_EQ(add.queued_ns, 900);  // the launch's end: the host had control back
  EXPECT_EQ(add.queue_depth, 1);
  EXPECT_EQ(m.lanes[0].work[1].queue_depth, 2);
  // The launch the device never reached, on a stream with no device row.
  EXPECT_EQ(m.lanes[1].label, "stream 1 (no device span recorded)");
  ASSERT_EQ(m.lanes[1].work.size(), 1u);
  EXPECT_EQ(m.lanes[1].work[0].name, "fill_float32");
  EXPECT_EQ(m.lanes[1].work[0].start_ns, kNever);
}

TEST(StreamsModel, TheQueueAtTimeT) {
  const trace::Trace t = two_launches_and_a_wait();
  const StreamsModel m = build_streams(t);
  const StreamLane& lane = m.lanes[0];
  LaneAt a = lane_at(lane, 500);  // inside the first launch: nothing handed over yet
  EXPECT_EQ(a.ahead, 2u);
  EXPECT_EQ(a.queue_length(), 0u);
  EXPECT_EQ(a.queue_depth, -1);
  a = lane_at(lane, 950);  // the launch returned, the kernel waits
  EXPECT_EQ(a.queued, std::vector<size_t>{0});
  EXPECT_EQ(a.running, SIZE_MAX);
  EXPECT_EQ(a.queue_depth, 1);
  a = lane_at(lane, 1600);
  EXPECT_EQ(a.running, 0u);
  EXPECT_TRUE(a.queued.empty());
  a = lane_at(lane, 3000);  // add still running, mul queued behind it
  EXPECT_EQ(a.running, 0u);
  EXPECT_EQ(a.queued, std::vector<size_t>{1});
  EXPECT_EQ(a.queue_length(), 2u);
  EXPECT_EQ(a.queue_depth, 2);  // what the runtime counted at mul's enqueue agrees
  a = lane_at(lane, 4600);
  EXPECT_EQ(a.running, 1u);
  EXPECT_EQ(a.done, std::vector<size_t>{0});
  a = lane_at(lane, 7000);  // drained
  EXPECT_EQ(a.done, (std::vector<size_t>{0, 1}));
  EXPECT_EQ(a.queue_length(), 0u);
  EXPECT_EQ(state_at(m.lanes[1].work[0], 9999), WorkState::Queued);  // never ran: queued to the end
  EXPECT_STREQ(state_word(WorkState::Running), "running");
}

TEST(StreamsModel, AWaitWaitsForWhatIsStillOnTheDevice) {
  const trace::Trace t = two_launches_and_a_wait();
  const StreamsModel m = build_streams(t);
  const trace::Span& item = t.spans[index_of(t, 8)];
  EXPECT_TRUE(is_sync_span(item));
  EXPECT_FALSE(is_sync_span(t.spans[index_of(t, 3)]));  // an enqueue is not a wait
  const auto w = waited_for(m, item);                   // add ended at 4500, before the wait: only mul
  ASSERT_EQ(w.size(), 1u);
  EXPECT_EQ(w[0], (std::pair<size_t, size_t>{0, 1}));
}

TEST(StreamsModel, WhatFloorsSevenAndEightDecidedInWords) {
  const trace::Trace t = two_launches_and_a_wait();
  const StreamsModel m = build_streams(t);
  const std::string launch = device_decision(t, m, index_of(t, 4));
  EXPECT_NE(launch.find("kernel add_float32: grid 1 x block 256 threads, 0 B shared memory, on stream 0"),
            std::string::npos)
      << launch;
  EXPECT_NE(launch.find("after the launch returned"), std::string::npos) << launch;
  EXPECT_EQ(device_decision(t, m, index_of(t, 3)),
            "on stream 0, queue depth 1: nothing ahead of it, the device can start at once");
  EXPECT_EQ(device_decision(t, m, index_of(t, 6)), "on stream 0, queue depth 2: this work and 1 ahead of it");
  EXPECT_EQ(device_decision(t, m, index_of(t, 8)),
            "the host waits (simDeviceSynchronize) for 1 piece of work still on sim:0");
  EXPECT_NE(device_decision(t, m, index_of(t, 9)).find("recording ended before the device ran it"), std::string::npos);
  EXPECT_EQ(device_decision(t, m, index_of(t, 2)), "");  // not a device floor
}

TEST(StreamsModel, TimeAtAPlaybackPosition) {
  const trace::Trace t = two_launches_and_a_wait();
  const Story s = build_story(t);
  ASSERT_GE(s.steps.size(), 4u);
  EXPECT_EQ(time_at(s, 0), s.steps[0].at_ns);
  EXPECT_EQ(time_at(s, 1.5), (s.steps[1].at_ns + s.steps[2].at_ns) / 2);
  EXPECT_EQ(time_at(s, 1e9), s.steps.back().at_ns);  // clamped to the last step
}

TEST(StreamsModel, ATraceWithoutDeviceWorkHasNoLanes) {
  trace::Trace t;
  t.spans.push_back(make_span(1, 0, Floor::Python, "x + 1", 0, 100));
  t.spans.push_back(make_span(2, 1, Floor::Kernels, "aten::add", 10, 90));
  EXPECT_TRUE(build_streams(t).empty());
  EXPECT_EQ(device_decision(t, build_streams(t), 1), "");
}

// [SECTION] A real recording on sim:0 ---------------------------------------------------------

// descent.ones(4, device="sim:0") + 1, then a synchronize: the floors 7 and 8
// spans, the device's spans, their flows and the row names are the tracer's
// own, recorded through launch_sim and streams::synchronize; the spans above
// floor 7 are stand-ins named as Python's call names them (the Python side of
// device tensors is landing). The fill kernel takes 300 us after the add is
// queued, so the add kernel visibly waits behind it in the queue, and the add
// runs until the host waits for it: each kernel holds the stream until the
// host has done what the test asserts came first.
std::atomic<bool> g_add_queued{false};

trace::Trace record_sim_add() {
  g_add_queued.store(false);
  const Device sim{DeviceType::Sim, 0};
  const streams::Stream s = streams::current_stream(sim);
  streams::synchronize(sim);  // an empty queue to start from
  trace::start();
  {
    trace::ScopedSpan line(Floor::Python, "y = descent.ones(4, device=\"sim:0\") + 1");
    {
      trace::ScopedSpan bind(Floor::Binding, "ones");
      trace::ScopedSpan disp(Floor::Dispatch, "aten::ones");
      disp.arg("kernel", "Sim");
      trace::ScopedSpan kern(Floor::Kernels, "aten::ones");
      kern.arg("variant", "sim");
      {
        trace::ScopedSpan alloc(Floor::Allocator, "caching_alloc");
        alloc.arg("bytes", int64_t{512});
      }
      // The fill kernel runs until the add is queued behind it (however long a
      // busy machine keeps this thread from enqueueing it), then 300 us more.
      launch::launch_sim(s, launch::linear_launch("fill_float32", "aten::ones", 4), [](const launch::Dim3&) {
        const auto give_up = std::chrono::steady_clock::now() + std::chrono::seconds(10);
        while (!g_add_queued.load() && std::chrono::steady_clock::now() < give_up)
          std::this_thread::sleep_for(std::chrono::microseconds(50));
        std::this_thread::sleep_for(std::chrono::microseconds(300));
      });
    }
    {
      trace::ScopedSpan bind(Floor::Binding, "add");
      trace::ScopedSpan disp(Floor::Dispatch, "aten::add");
      disp.arg("kernel", "Sim");
      trace::ScopedSpan kern(Floor::Kernels, "aten::add");
      kern.arg("variant", "sim");
      {
        trace::ScopedSpan alloc(Floor::Allocator, "caching_alloc");
        alloc.arg("bytes", int64_t{512});
      }
      // The add kernel runs until the host waits for it in the synchronize
      // below, so the wait always finds it on the stream, however the
      // threads were scheduled (a slow sanitized build once let the add
      // finish before the host reached the synchronize).
      launch::launch_sim(s, launch::linear_launch("add_float32", "aten::add", 4), [s](const launch::Dim3&) {
        const auto give_up = std::chrono::steady_clock::now() + std::chrono::seconds(10);
        while (streams::SimRuntime::get().waiting_hosts(s) == 0 && std::chrono::steady_clock::now() < give_up)
          std::this_thread::sleep_for(std::chrono::microseconds(50));
      });
      g_add_queued.store(true);
    }
  }
  {
    trace::ScopedSpan line(Floor::Python, "descent.sim.synchronize()");
    trace::ScopedSpan bind(Floor::Binding, "_synchronize");
    streams::synchronize(sim, "synchronize");
  }
  trace::Trace t = trace::stop();
  t.metadata["fixture"] =
      "tests/ui/test_streams_model.cpp: floors 7, 8 and the device recorded on sim:0; the spans above are stand-ins";
  return t;
}

TEST(StreamsModel, SimRecording) {
  const trace::Trace t = record_sim_add();
  const StreamsModel m = build_streams(t);
  ASSERT_EQ(m.lanes.size(), 1u);
  const StreamLane& lane = m.lanes[0];
  EXPECT_EQ(lane.label, "sim:0 stream 0");
  EXPECT_EQ(lane.device, "sim:0");
  ASSERT_EQ(lane.work.size(), 2u);
  EXPECT_EQ(lane.work[0].name, "fill_float32");
  EXPECT_EQ(lane.work[1].name, "add_float32");
  for (const DeviceWork& w : lane.work) {
    EXPECT_NE(w.launch_span, SIZE_MAX);
    EXPECT_NE(w.enqueue_span, SIZE_MAX);
    EXPECT_NE(w.device_span, SIZE_MAX);
  }
  EXPECT_EQ(lane.work[1].queue_depth, 2);  // the fill kernel was still on the stream
  // The add kernel sat queued behind the fill kernel: its launch returned long before it ran.
  EXPECT_GE(lane.work[1].start_ns, lane.work[0].end_ns);
  EXPECT_GT(lane.work[1].start_ns - lane.work[1].queued_ns, 100000);
  const LaneAt a = lane_at(lane, lane.work[1].queued_ns);
  EXPECT_EQ(a.queue_length(), 2u);
  // The synchronize waited for the add kernel.
  size_t sync = SIZE_MAX;
  for (size_t i = 0; i < t.spans.size(); ++i) {
    if (is_sync_span(t.spans[i])) sync = i;
  }
  ASSERT_NE(sync, SIZE_MAX);
  EXPECT_FALSE(waited_for(m, t.spans[sync]).empty());
  EXPECT_GE(t.spans[sync].end_ns, lane.work[1].end_ns);
  // The story reaches floor 8, and the device work is not a step of it.
  const Story s = build_story(t);
  bool launch_step = false;
  for (const Step& st : s.steps) launch_step |= t.spans[st.span].floor == Floor::Launch;
  EXPECT_TRUE(launch_step);
  for (const Step& st : s.steps) EXPECT_NE(t.spans[st.span].floor, Floor::Device);
  if (const char* path = std::getenv("DESCENT_UI_WRITE_FIXTURE")) trace::save(t, path);
}

}  // namespace
}  // namespace descent::ui
