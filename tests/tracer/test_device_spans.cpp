// Device spans (Note [Device spans] in tracer.h): work timed on a device's
// own clock, recorded from another thread, on rows of its own, joined to its
// launch by an "ac2g" flow; kept by both file formats; shown under the
// launch in the tree. The CUPTI side needs a GPU: test_cupti.cpp.
//
// [SECTION] Helpers
// [SECTION] Recording and joining
// [SECTION] Snapshots
// [SECTION] Files
// [SECTION] The tree
// [SECTION] CUPTI without a device
#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <thread>
#include <tuple>
#include <vector>

#include "tests/tracer/trace_test_util.h"
#include "tracer/cupti.h"
#include "tracer/trace.h"
#include "tracer/tracer.h"

namespace descent::trace {
namespace {

// [SECTION] Helpers -------------------------------------------------------------

using test_util::find;

constexpr const char* kSimClock = "simulated device worker (host clock)";

// A floor-8 launch span with a fresh correlation id, as floors/launch records it.
uint64_t traced_launch(const char* name = "simLaunchKernel") {
  ScopedSpan launch(Floor::Launch, name);
  const uint64_t id = next_correlation();
  launch.arg("kernel", "add_kernel");
  launch.arg("correlation", static_cast<int64_t>(id));
  return id;
}

// What a stream worker records for one kernel it ran.
DeviceSpan kernel_span(const char* name, int64_t stream, uint64_t correlation, int64_t start_ns, int64_t end_ns) {
  DeviceSpan d;
  d.name = name;
  d.device = "sim:0";
  d.stream = stream;
  d.start_ns = start_ns;
  d.end_ns = end_ns;
  d.correlation = correlation;
  d.grid[0] = 4, d.grid[1] = 1, d.grid[2] = 1;
  d.block[0] = 256, d.block[1] = 1, d.block[2] = 1;
  d.shared_bytes = 0;
  d.clock = kSimClock;
  return d;
}

const Flow* flow_to(const Trace& t, uint64_t to) {
  for (const Flow& f : t.flows) {
    if (f.to == to) return &f;
  }
  return nullptr;
}

int64_t int_arg(const Span& s, const char* key) {
  const ArgValue* v = s.find_arg(key);
  return v && std::holds_alternative<int64_t>(*v) ? std::get<int64_t>(*v) : -1;
}

std::string str_arg(const Span& s, const char* key) {
  const ArgValue* v = s.find_arg(key);
  return v && std::holds_alternative<std::string>(*v) ? std::get<std::string>(*v) : "";
}

// A span as the Chrome loader gives it back: no id, the source site an argument.
struct ReadBack {
  uint32_t thread;
  int64_t start_ns, end_ns;
  Floor floor;
  std::string name;
  std::vector<SpanArg> args;
  bool operator==(const ReadBack&) const = default;
  auto operator<=>(const ReadBack& o) const {
    return std::tie(thread, start_ns, end_ns, name) <=> std::tie(o.thread, o.start_ns, o.end_ns, o.name);
  }
};
std::vector<ReadBack> as_read_back(const Trace& t) {
  std::vector<ReadBack> out;
  for (const Span& s : t.spans) {
    ReadBack r{s.thread, s.start_ns, s.end_ns, s.floor, s.name, {}};
    for (const SpanArg& a : s.args) {
      if (a.key != "src") r.args.push_back(a);
    }
    out.push_back(std::move(r));
  }
  std::sort(out.begin(), out.end());
  return out;
}
// Flows as (from's name, to's name, flow name), sorted.
std::vector<std::tuple<std::string, std::string, std::string>> flows_by_name(const Trace& t) {
  const SpanIndex index(t);
  std::vector<std::tuple<std::string, std::string, std::string>> out;
  for (const Flow& f : t.flows)
    out.emplace_back(t.spans[index.find(f.from)].name, t.spans[index.find(f.to)].name, f.name);
  std::sort(out.begin(), out.end());
  return out;
}

// A recording with: a launch and its kernel on stream 0, a copy on stream 3
// with its floor-7 span, and a kernel on stream 0 whose launch was not
// traced; the device spans recorded from a worker thread.
Trace sample_recording() {
  start();
  const uint64_t add = traced_launch();
  uint64_t copy = 0;
  {
    ScopedSpan s(Floor::Streams, "memcpy_h2d");
    copy = next_correlation();
    s.arg("correlation", static_cast<int64_t>(copy));
  }
  const uint64_t untraced = next_correlation();
  std::thread worker([&] {
    const int64_t t0 = now_ns();
    record_device_span(kernel_span("add_kernel", 0, add, t0 + 1'000, t0 + 3'000));
    DeviceSpan c;
    c.name = "Memcpy HtoD (Pageable -> Device)";
    c.device = "sim:0";
    c.stream = 3;
    c.start_ns = t0 + 500;
    c.end_ns = t0 + 900;
    c.correlation = copy;
    c.work = DeviceWork::Memcpy;
    c.bytes = 4096;
    c.clock = kSimClock;
    record_device_span(c);
    record_device_span(kernel_span("orphan_kernel", 0, untraced, t0 + 4'000, t0 + 5'000));
  });
  worker.join();
  return stop();
}

// [SECTION] Recording and joining --------------------------------------------------

TEST(DeviceSpans, FromAnotherThreadJoinTheirLaunchByCorrelation) {
  const Trace t = sample_recording();
  ASSERT_EQ(check_structure(t), "");
  const Span* launch = find(t, "simLaunchKernel");
  const Span* kernel = find(t, "add_kernel");
  const Span* copy = find(t, "Memcpy HtoD (Pageable -> Device)");
  const Span* copy_launch = find(t, "memcpy_h2d");
  const Span* orphan = find(t, "orphan_kernel");
  ASSERT_TRUE(launch && kernel && copy && copy_launch && orphan);

  EXPECT_EQ(kernel->floor, Floor::Device);
  EXPECT_EQ(kernel->parent, 0u);
  EXPECT_EQ(kernel->duration_ns(), 2'000);
  EXPECT_EQ(str_arg(*kernel, "device"), "sim:0");
  EXPECT_EQ(int_arg(*kernel, "stream"), 0);
  EXPECT_EQ(int_arg(*kernel, "correlation"), int_arg(*launch, "correlation"));
  EXPECT_EQ(str_arg(*kernel, "grid"), "[4, 1, 1]");
  EXPECT_EQ(str_arg(*kernel, "block"), "[256, 1, 1]");
  EXPECT_EQ(int_arg(*kernel, "shared_bytes"), 0);
  EXPECT_EQ(str_arg(*copy, "work"), "memcpy");
  EXPECT_EQ(int_arg(*copy, "bytes"), 4096);

  // Rows of their own after the CPU thread (0), in (device, stream) order, named.
  EXPECT_EQ(launch->thread, 0u);
  EXPECT_EQ(kernel->thread, 1u);
  EXPECT_EQ(orphan->thread, 1u);
  EXPECT_EQ(copy->thread, 2u);
  EXPECT_EQ(t.metadata.at("thread.1"), "sim:0 stream 0");
  EXPECT_EQ(t.metadata.at("thread.1.device"), "sim:0");
  EXPECT_EQ(t.metadata.at("thread.2"), "sim:0 stream 3");
  EXPECT_EQ(t.metadata.at("device.clock"), std::string("sim:0: ") + kSimClock);

  // The arrows: launch -> kernel, floor-7 copy span -> copy; none for the orphan.
  ASSERT_EQ(t.flows.size(), 2u);
  const Flow* to_kernel = flow_to(t, kernel->id);
  const Flow* to_copy = flow_to(t, copy->id);
  ASSERT_TRUE(to_kernel && to_copy);
  EXPECT_EQ(to_kernel->from, launch->id);
  EXPECT_EQ(to_kernel->name, "ac2g");
  EXPECT_EQ(to_copy->from, copy_launch->id);
  EXPECT_EQ(flow_to(t, orphan->id), nullptr);
}

TEST(DeviceSpans, TheDeepestFloorWithTheIdIsTheLaunch) {
  start();
  uint64_t id = 0;
  {
    ScopedSpan copy(Floor::Streams, "memcpy_h2d");
    id = next_correlation();
    copy.arg("correlation", static_cast<int64_t>(id));
    ScopedSpan launch(Floor::Launch, "cudaMemcpyAsync");
    launch.arg("correlation", static_cast<int64_t>(id));
  }
  const int64_t now = now_ns();
  record_device_span(kernel_span("k", 0, id, now, now + 10));
  const Trace t = stop();
  ASSERT_EQ(t.flows.size(), 1u);
  EXPECT_EQ(t.flows[0].from, find(t, "cudaMemcpyAsync")->id);
}

TEST(DeviceSpans, NothingIsRecordedWithTracingOffOrFromAnEarlierRecording) {
  const int64_t before = now_ns();
  record_device_span(kernel_span("off", 0, 0, before, before + 5));  // tracing off
  start();
  record_device_span(kernel_span("last_recording", 0, 0, before, before + 5));  // began before start()
  const int64_t now = now_ns();
  DeviceSpan backwards = kernel_span("backwards", 0, 0, now, now - 5);
  record_device_span(backwards);
  const Trace t = stop();
  EXPECT_EQ(find(t, "off"), nullptr);
  EXPECT_EQ(find(t, "last_recording"), nullptr);
  const Span* b = find(t, "backwards");
  ASSERT_NE(b, nullptr);
  EXPECT_EQ(b->duration_ns(), 0);      // an end before the start is taken as the start
  EXPECT_EQ(stop().spans.size(), 0u);  // and the next recording starts empty
  start();
  EXPECT_EQ(stop().spans.size(), 0u);
}

// [SECTION] Snapshots ------------------------------------------------------------------

TEST(DeviceSpans, ASnapshotKeepsItsWindowAndJoinsOnlyLaunchesInIt) {
  start();
  const uint64_t first = traced_launch("first_launch");
  const int64_t since = now_ns();
  const uint64_t second = traced_launch("second_launch");
  std::thread worker([&] {
    const int64_t t0 = now_ns();
    record_device_span(kernel_span("early", 0, first, since - 1, since));  // before the window
    record_device_span(kernel_span("first_k", 0, first, t0, t0 + 10));     // its launch is before the window
    record_device_span(kernel_span("second_k", 0, second, t0 + 20, t0 + 30));
  });
  worker.join();
  const Trace window = snapshot(since);
  EXPECT_EQ(find(window, "early"), nullptr);
  EXPECT_EQ(find(window, "first_launch"), nullptr);
  const Span* first_k = find(window, "first_k");
  const Span* second_k = find(window, "second_k");
  ASSERT_TRUE(first_k && second_k);
  ASSERT_EQ(window.flows.size(), 1u);
  EXPECT_EQ(window.flows[0].to, second_k->id);
  EXPECT_EQ(window.flows[0].from, find(window, "second_launch")->id);
  EXPECT_EQ(check_structure(window), "");

  const Trace all = stop();  // the whole recording: both kernels joined, the early one too
  EXPECT_NE(find(all, "early"), nullptr);
  EXPECT_EQ(all.flows.size(), 3u);
}

// [SECTION] Files ----------------------------------------------------------------------

TEST(DeviceSpans, DescentFormatRoundTripKeepsThemExactly) {
  const Trace t = sample_recording();
  EXPECT_EQ(from_descent_format(to_descent_format(t)), t);
}

TEST(DeviceSpans, ChromeExportWritesThemAsKinetoDoesAndReadsThemBack) {
  const Trace t = sample_recording();
  const std::string json = to_chrome_json(t);
  EXPECT_NE(json.find("\"name\":\"add_kernel\",\"cat\":\"kernel\""), std::string::npos) << json;
  EXPECT_NE(json.find("\"cat\":\"gpu_memcpy\""), std::string::npos);
  EXPECT_NE(json.find("\"name\":\"ac2g\",\"cat\":\"ac2g\",\"ph\":\"s\""), std::string::npos);
  EXPECT_NE(json.find("\"name\":\"ac2g\",\"cat\":\"ac2g\",\"ph\":\"f\""), std::string::npos);
  // The device is a process of its own, its streams its threads.
  EXPECT_NE(json.find("{\"name\":\"process_name\",\"ph\":\"M\",\"pid\":100,\"args\":{\"name\":\"sim:0\"}}"),
            std::string::npos);
  EXPECT_NE(json.find("\"pid\":100,\"tid\":2,\"args\":{\"name\":\"sim:0 stream 0\"}"), std::string::npos);

  Trace back = from_chrome_json(json, "device.json");
  EXPECT_EQ(back.metadata.at("source.format"), "descent-chrome");
  back.metadata.erase("source.format");
  EXPECT_EQ(check_structure(back), "");
  // The loader numbers spans anew and keeps a span's source site as its
  // "src" argument: all else comes back as it was.
  EXPECT_EQ(back.metadata, t.metadata);
  EXPECT_EQ(as_read_back(back), as_read_back(t));
  EXPECT_EQ(flows_by_name(back), flows_by_name(t));
  for (const Span& s : back.spans) {
    if (s.name == "add_kernel") {
      EXPECT_EQ(s.floor, Floor::Device);
    }
  }
}

TEST(DeviceSpans, ChromeExportOfAHandBuiltTraceRoundTripsExactly) {
  Trace t;
  t.span_cost_ns = 12.5;
  t.metadata = {{"thread.1", "cuda:0 stream 7"}, {"thread.1.device", "cuda:0"}, {"device.clock", "cuda:0: CUPTI"}};
  t.spans = {
      test_util::make_span(1, 0, Floor::Launch, "cudaLaunchKernel", 1'000, 5'000, 0, {{"correlation", int64_t{3}}}),
      test_util::make_span(2, 0, Floor::Device, "k", 9'000, 9'500, 1,
                           {{"device", std::string("cuda:0")}, {"stream", int64_t{7}}, {"correlation", int64_t{3}}}),
      test_util::make_span(3, 0, Floor::Device, "Memset (Device)", 9'600, 9'700, 1,
                           {{"work", std::string("memset")}, {"bytes", int64_t{64}}}),
  };
  t.flows = {{1, 2, "ac2g"}};
  const std::string json = to_chrome_json(t);
  EXPECT_NE(json.find("\"cat\":\"gpu_memset\""), std::string::npos);
  Trace back = from_chrome_json(json);
  back.metadata.erase("source.format");
  EXPECT_EQ(back, t);
}

// [SECTION] The tree -------------------------------------------------------------------

TEST(DeviceSpans, TheTreeShowsTheDeviceClockAndEachKernelUnderItsLaunch) {
  const Trace t = sample_recording();
  const std::string tree = format_tree(t);
  EXPECT_EQ(tree.rfind(std::string("device clock: sim:0: ") + kSimClock + "\n", 0), 0u) << tree;
  const size_t launch = tree.find("simLaunchKernel");
  const size_t under = tree.find("  -> device: add_kernel  sim:0 stream 0, ");
  ASSERT_NE(launch, std::string::npos) << tree;
  ASSERT_NE(under, std::string::npos) << tree;
  EXPECT_LT(launch, under);
  EXPECT_EQ(tree.find('\n', launch), tree.rfind('\n', under));  // the very next line
  EXPECT_NE(tree.find(" after the launch began"), std::string::npos);
  EXPECT_NE(tree.find("thread 1 (sim:0 stream 0)"), std::string::npos) << tree;
  EXPECT_NE(tree.find("-> device: Memcpy HtoD (Pageable -> Device)  sim:0 stream 3,"), std::string::npos) << tree;
}

// [SECTION] CUPTI without a device -------------------------------------------------------

TEST(DeviceSpans, WithoutCuptiLaunchesGoOnUncorrelated) {
  start();
  if (cupti::active()) {
    (void)stop();
    GTEST_SKIP() << "CUPTI is collecting here (test_cupti covers it)";
  }
  EXPECT_EQ(cupti::push_correlation(), 0u);
  cupti::pop_correlation();  // harmless without a push
  EXPECT_FALSE(cupti::status().empty());
  const Trace t = stop();
  // device.timing appears only where a device was there to time.
  if (t.metadata.contains("device.timing")) {
    EXPECT_EQ(t.metadata.at("device.timing").rfind("unavailable", 0), 0u) << t.metadata.at("device.timing");
  }
}

}  // namespace
}  // namespace descent::trace
