// The device's queues at a moment. See streams_model.h and Note [The queue at time t].
//
// [SECTION] Arguments
// [SECTION] Building the model
// [SECTION] A stream at time t
// [SECTION] Host waits
// [SECTION] What floors 7 and 8 decided, in words
#include "ui/streams_model.h"

#include <algorithm>
#include <map>
#include <tuple>
#include <unordered_map>

namespace descent::ui {

// [SECTION] Arguments ------------------------------------------------------------------------

namespace {

int64_t int_arg(const trace::Span& s, const char* key, int64_t fallback = -1) {
  const trace::ArgValue* v = s.find_arg(key);
  if (!v) return fallback;
  if (const auto* i = std::get_if<int64_t>(v)) return *i;
  if (const auto* d = std::get_if<double>(v)) return static_cast<int64_t>(*d);
  return fallback;
}

std::string str_arg(const trace::Span& s, const char* key) {
  const trace::ArgValue* v = s.find_arg(key);
  if (!v) return {};
  if (const auto* t = std::get_if<std::string>(v)) return *t;
  return {};
}

std::string meta(const trace::Trace& t, const std::string& key) {
  const auto it = t.metadata.find(key);
  return it == t.metadata.end() ? std::string() : it->second;
}

// A host span that hands work to a stream: a descent launch (floor 8, with
// its kernel) or a descent copy (floor 7, with its correlation id).
bool hands_over_work(const trace::Span& s) {
  if (!s.find_arg("stream")) return false;
  if (s.floor == trace::Floor::Launch) return s.find_arg("kernel") != nullptr;
  return s.floor == trace::Floor::Streams && s.find_arg("correlation") && !s.find_arg("api");
}

}  // namespace

// [SECTION] Building the model -----------------------------------------------------------------

StreamsModel build_streams(const trace::Trace& t) {
  StreamsModel m;
  const size_t n = t.spans.size();
  if (n == 0) return m;
  const trace::SpanIndex by_id(t);
  std::vector<size_t> source_of(n, SIZE_MAX);   // device span -> the host span its flow leaves
  std::vector<bool> has_device_work(n, false);  // host span -> a flow reaches a device span
  for (const trace::Flow& f : t.flows) {
    const size_t a = by_id.find(f.from), b = by_id.find(f.to);
    if (a == SIZE_MAX || b == SIZE_MAX || t.spans[b].floor != trace::Floor::Device) continue;
    if (t.spans[a].floor == trace::Floor::Device) continue;
    if (source_of[b] == SIZE_MAX) source_of[b] = a;
    has_device_work[a] = true;
  }

  // Lanes: one per device row; launches that never reached a device row join
  // the lane of their stream id (or one of their own).
  std::map<uint32_t, size_t> lane_of_thread;
  auto lane_for_row = [&](const trace::Span& d) -> StreamLane& {
    const auto [it, fresh] = lane_of_thread.emplace(d.thread, m.lanes.size());
    if (fresh) {
      StreamLane l;
      l.thread = d.thread;
      const std::string row = "thread." + std::to_string(d.thread);
      l.device = str_arg(d, "device");
      if (l.device.empty()) l.device = meta(t, row + ".device");
      l.stream = int_arg(d, "stream");
      l.label = meta(t, row);
      if (l.label.empty()) {
        l.label = !l.device.empty() && l.stream >= 0 ? l.device + " stream " + std::to_string(l.stream)
                                                     : "device (thread " + std::to_string(d.thread) + ")";
      }
      m.lanes.push_back(std::move(l));
    }
    return m.lanes[it->second];
  };
  auto fill_host_side = [&](DeviceWork& w, size_t launch) {
    const trace::Span& l = t.spans[launch];
    w.launch_span = launch;
    w.queued_ns = l.end_ns;
    if (l.find_arg("queue_depth")) {
      w.enqueue_span = launch;
    } else {
      const size_t p = l.parent ? by_id.find(l.parent) : SIZE_MAX;
      if (p != SIZE_MAX && t.spans[p].floor == trace::Floor::Streams && t.spans[p].find_arg("queue_depth")) {
        w.enqueue_span = p;
      }
    }
    if (w.enqueue_span != SIZE_MAX) w.queue_depth = int_arg(t.spans[w.enqueue_span], "queue_depth");
  };
  for (size_t i = 0; i < n; ++i) {
    const trace::Span& d = t.spans[i];
    if (d.floor != trace::Floor::Device) continue;
    DeviceWork w;
    w.device_span = i;
    w.name = d.name;
    w.start_ns = d.start_ns;
    w.end_ns = std::max(d.start_ns, d.end_ns);
    w.queued_ns = d.start_ns;
    if (source_of[i] != SIZE_MAX) fill_host_side(w, source_of[i]);
    lane_for_row(d).work.push_back(std::move(w));
  }
  for (size_t i = 0; i < n; ++i) {
    const trace::Span& l = t.spans[i];
    if (has_device_work[i] || !hands_over_work(l)) continue;
    DeviceWork w;
    w.name = l.floor == trace::Floor::Launch ? str_arg(l, "kernel") : l.name;
    if (w.name.empty()) w.name = l.name;
    fill_host_side(w, i);
    const int64_t stream = int_arg(l, "stream");
    auto it = std::find_if(m.lanes.begin(), m.lanes.end(), [&](const StreamLane& x) { return x.stream == stream; });
    if (it == m.lanes.end()) {
      StreamLane x;
      x.stream = stream;
      x.label = "stream " + std::to_string(stream) + " (no device span recorded)";
      m.lanes.push_back(std::move(x));
      it = m.lanes.end() - 1;
    }
    it->work.push_back(std::move(w));
  }
  for (StreamLane& l : m.lanes) {
    std::stable_sort(l.work.begin(), l.work.end(), [](const DeviceWork& a, const DeviceWork& b) {
      return std::tie(a.queued_ns, a.start_ns) < std::tie(b.queued_ns, b.start_ns);
    });
  }
  std::stable_sort(m.lanes.begin(), m.lanes.end(), [](const StreamLane& a, const StreamLane& b) {
    const bool ua = a.device.empty(), ub = b.device.empty();  // lanes of a known device first
    return std::tie(ua, a.device, a.stream, a.label) < std::tie(ub, b.device, b.stream, b.label);
  });
  return m;
}

// [SECTION] A stream at time t ----------------------------------------------------------------

WorkState state_at(const DeviceWork& w, int64_t t) {
  if (t >= w.end_ns) return WorkState::Done;
  if (t >= w.start_ns) return WorkState::Running;
  if (t >= w.queued_ns) return WorkState::Queued;
  return WorkState::Ahead;
}

const char* state_word(WorkState s) {
  switch (s) {
    case WorkState::Ahead:
      return "ahead";
    case WorkState::Queued:
      return "queued";
    case WorkState::Running:
      return "running";
    case WorkState::Done:
      return "done";
  }
  return "?";
}

LaneAt lane_at(const StreamLane& lane, int64_t t) {
  LaneAt a;
  int64_t latest = INT64_MIN;
  for (size_t k = 0; k < lane.work.size(); ++k) {
    const DeviceWork& w = lane.work[k];
    switch (state_at(w, t)) {
      case WorkState::Ahead:
        ++a.ahead;
        break;
      case WorkState::Queued:
        a.queued.push_back(k);
        break;
      case WorkState::Running:
        a.running = k;
        break;
      case WorkState::Done:
        a.done.push_back(k);
        break;
    }
    if (w.queue_depth >= 0 && w.queued_ns <= t && w.queued_ns >= latest) {
      latest = w.queued_ns;
      a.queue_depth = w.queue_depth;
    }
  }
  // Finished in the order they finished (a stream's order, unless a loaded
  // trace put overlapping work on one row).
  std::stable_sort(a.done.begin(), a.done.end(),
                   [&](size_t x, size_t y) { return lane.work[x].end_ns < lane.work[y].end_ns; });
  return a;
}

int64_t time_at(const Story& s, double position) {
  if (s.steps.empty()) return 0;
  const size_t k = std::min(static_cast<size_t>(std::max(position, 0.0)), s.steps.size() - 1);
  const int64_t a = s.steps[k].at_ns;
  if (k + 1 >= s.steps.size()) return a;
  const double f = std::clamp(position - static_cast<double>(k), 0.0, 1.0);
  return a + static_cast<int64_t>(f * static_cast<double>(s.steps[k + 1].at_ns - a));
}

// [SECTION] Host waits ------------------------------------------------------------------------

bool is_sync_span(const trace::Span& s) {
  return s.floor == trace::Floor::Streams && str_arg(s, "api").find("ynchronize") != std::string::npos;
}

std::vector<std::pair<size_t, size_t>> waited_for(const StreamsModel& m, const trace::Span& wait) {
  std::vector<std::pair<size_t, size_t>> out;
  const int64_t stream = int_arg(wait, "stream");
  const std::string device = str_arg(wait, "device");
  for (size_t l = 0; l < m.lanes.size(); ++l) {
    const StreamLane& lane = m.lanes[l];
    if (stream >= 0 && lane.stream != stream) continue;
    if (stream < 0 && !device.empty() && !lane.device.empty() && lane.device != device) continue;
    for (size_t k = 0; k < lane.work.size(); ++k) {
      const DeviceWork& w = lane.work[k];
      if (w.queued_ns <= wait.start_ns && w.end_ns > wait.start_ns) out.emplace_back(l, k);
    }
  }
  return out;
}

// [SECTION] What floors 7 and 8 decided, in words ---------------------------------------------

namespace {

const DeviceWork* work_of_host_span(const StreamsModel& m, size_t i) {
  for (const StreamLane& l : m.lanes) {
    for (const DeviceWork& w : l.work) {
      if (w.launch_span == i) return &w;
    }
  }
  return nullptr;
}

std::string when_it_ran(const DeviceWork* w) {
  if (!w) return "";
  if (w->start_ns == kNever) return "; the recording ended before the device ran it";
  const int64_t gap = w->start_ns - w->queued_ns;
  if (gap >= 0) return "; the device started it " + trace::format_duration(gap) + " after the launch returned";
  return "; the idle device started it " + trace::format_duration(-gap) + " before the launch returned";
}

std::string depth_words(int64_t depth) {
  if (depth < 0) return "";
  if (depth == 0) return ", queue depth 0 (already taken by the device)";
  if (depth == 1) return ", queue depth 1: nothing ahead of it, the device can start at once";
  return ", queue depth " + std::to_string(depth) + ": this work and " + std::to_string(depth - 1) + " ahead of it";
}

}  // namespace

std::string device_decision(const trace::Trace& t, const StreamsModel& m, size_t i) {
  const trace::Span& s = t.spans[i];
  const int64_t stream = int_arg(s, "stream");
  const std::string on_stream = stream >= 0 ? "on stream " + std::to_string(stream) : "";
  if (s.floor == trace::Floor::Launch && s.find_arg("kernel")) {
    std::string grid = std::to_string(int_arg(s, "grid", 1));
    if (s.find_arg("grid_y") || s.find_arg("grid_z")) {
      grid += "x" + std::to_string(int_arg(s, "grid_y", 1)) + "x" + std::to_string(int_arg(s, "grid_z", 1));
    }
    std::string line = "kernel " + str_arg(s, "kernel") + ": grid " + grid + " x block " +
                       std::to_string(int_arg(s, "block", 0)) + " threads, " +
                       std::to_string(std::max<int64_t>(0, int_arg(s, "shared_bytes", 0))) + " B shared memory";
    if (!on_stream.empty()) line += ", " + on_stream;
    return line + when_it_ran(work_of_host_span(m, i));
  }
  if (s.floor != trace::Floor::Streams) return "";
  if (is_sync_span(s)) {
    const size_t n = waited_for(m, s).size();
    const std::string what = stream >= 0                     ? "stream " + std::to_string(stream)
                             : !str_arg(s, "device").empty() ? str_arg(s, "device")
                                                             : std::string("the device");
    if (n == 0) return "the host asks " + str_arg(s, "api") + ": nothing left on " + what + ", no wait";
    return "the host waits (" + str_arg(s, "api") + ") for " + std::to_string(n) +
           (n == 1 ? " piece of work" : " pieces of work") + " still on " + what;
  }
  if (s.find_arg("queue_depth") && !s.find_arg("correlation")) {  // the enqueue around a launch
    return (on_stream.empty() ? std::string("queued") : on_stream) + depth_words(int_arg(s, "queue_depth"));
  }
  if (hands_over_work(s)) {  // a copy
    const int64_t bytes = int_arg(s, "bytes");
    std::string line = "a copy" + (bytes >= 0 ? " of " + std::to_string(bytes) + " B" : std::string()) +
                       (on_stream.empty() ? "" : " " + on_stream) + depth_words(int_arg(s, "queue_depth"));
    return line + when_it_ran(work_of_host_span(m, i));
  }
  return "";
}

}  // namespace descent::ui
