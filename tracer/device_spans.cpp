// Device spans: work timed on a device's own clock, joined to its launch.
//
// [SECTION] The pending list
// [SECTION] Rows, spans and flows
//
// See Note [Device spans] in tracer.h. Unlike a thread's spans (tracer.cpp),
// device spans arrive from a stream worker or from CUPTI's buffer callback,
// one per kernel or copy, so they go into one list under a lock, as they are,
// and become Spans only when the recording is collected.
#include <algorithm>
#include <atomic>
#include <cstdio>
#include <map>
#include <mutex>
#include <set>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "tracer/device_spans.h"
#include "tracer/tracer.h"

namespace descent::trace {

namespace {

// [SECTION] The pending list -------------------------------------------------------

// One record_device_span() call, its strings copied.
struct PendingDeviceSpan {
  DeviceSpan span;  // name and device point into the strings below
  std::string name;
  std::string device;
};

struct DeviceList {
  std::mutex mutex;
  std::vector<PendingDeviceSpan> spans;  // this recording's, in arrival order
  int64_t start_ns = INT64_MIN;          // the recording's start: earlier spans are a finished recording's
  uint64_t dropped = 0;                  // past kMaxDeviceSpans
};
DeviceList& device_list() {
  static DeviceList* d = new DeviceList;  // never destroyed: workers may outlive statics
  return *d;
}

std::atomic<uint64_t> g_next_correlation{1};

}  // namespace

uint64_t next_correlation() { return g_next_correlation.fetch_add(1, std::memory_order_relaxed); }

void record_device_span(const DeviceSpan& s) {
  if (!enabled()) return;
  DeviceList& d = device_list();
  std::lock_guard lock(d.mutex);
  // Checked again under the lock: start() and stop() switch tracing and
  // touch the list in that order, so a span lands in the recording that was
  // running when it got here, or nowhere.
  if (!enabled() || s.start_ns < d.start_ns) return;
  if (d.spans.size() >= kMaxDeviceSpans) {
    ++d.dropped;
    return;
  }
  try {
    PendingDeviceSpan p{s, std::string(s.name), std::string(s.device)};
    p.span.name = p.span.device = {};  // the caller's: read only from the copies
    d.spans.push_back(std::move(p));
  } catch (const std::bad_alloc&) {  // a missing span, never a failed program
    ++d.dropped;
  }
}

namespace detail {

void clear_device_spans(int64_t start_ns) {
  DeviceList& d = device_list();
  std::lock_guard lock(d.mutex);
  d.spans.clear();
  d.start_ns = start_ns;
  d.dropped = 0;
}

// [SECTION] Rows, spans and flows ----------------------------------------------------

namespace {

const char* work_name(DeviceWork w) {
  switch (w) {
    case DeviceWork::Kernel:
      return "kernel";
    case DeviceWork::Memcpy:
      return "memcpy";
    case DeviceWork::Memset:
      return "memset";
  }
  return "kernel";
}

// "[128, 1, 1]", as the loader writes Kineto's arrays.
std::string dims(const uint32_t d[3]) {
  std::string s = "[";
  s += std::to_string(d[0]);
  s += ", ";
  s += std::to_string(d[1]);
  s += ", ";
  s += std::to_string(d[2]);
  s += "]";
  return s;
}

std::vector<SpanArg> args_of(const DeviceSpan& s, const std::string& device) {
  std::vector<SpanArg> args;
  args.push_back({"device", device});
  args.push_back({"stream", s.stream});
  if (s.correlation != 0) args.push_back({"correlation", static_cast<int64_t>(s.correlation)});
  if (s.work == DeviceWork::Kernel) {
    if (s.grid[0] != 0) args.push_back({"grid", dims(s.grid)});
    if (s.block[0] != 0) args.push_back({"block", dims(s.block)});
    if (s.shared_bytes >= 0) args.push_back({"shared_bytes", s.shared_bytes});
  } else {
    args.push_back({"work", std::string(work_name(s.work))});
    if (s.bytes >= 0) args.push_back({"bytes", s.bytes});
  }
  return args;
}

}  // namespace

void collect_device_spans(Trace& t, uint32_t first_thread, uint64_t& next_id, int64_t since_ns) {
  std::vector<PendingDeviceSpan> spans;
  uint64_t dropped = 0;
  {
    DeviceList& d = device_list();
    std::lock_guard lock(d.mutex);
    for (const PendingDeviceSpan& p : d.spans) {
      if (p.span.start_ns >= since_ns) spans.push_back(p);
    }
    dropped = d.dropped;
  }
  // One row per (device, stream), numbered in that order after the CPU threads.
  std::map<std::pair<std::string, int64_t>, uint32_t> rows;
  std::map<std::string, std::set<std::string>> clocks;  // device -> where its times came from
  for (const PendingDeviceSpan& p : spans) {
    rows.emplace(std::pair{p.device, p.span.stream}, 0);
    if (p.span.clock != nullptr && *p.span.clock != '\0') clocks[p.device].insert(p.span.clock);
  }
  uint32_t thread = first_thread;
  for (auto& [key, row] : rows) {
    row = thread++;
    const std::string n = std::to_string(row);
    t.metadata["thread." + n] = key.first + " stream " + std::to_string(key.second);
    t.metadata["thread." + n + ".device"] = key.first;
  }
  for (const PendingDeviceSpan& p : spans) {
    Span s;
    s.id = next_id++;
    s.floor = Floor::Device;
    s.name = p.name;
    s.start_ns = p.span.start_ns;
    s.end_ns = std::max(p.span.end_ns, p.span.start_ns);
    s.thread = rows.at({p.device, p.span.stream});
    s.args = args_of(p.span, p.device);
    t.spans.push_back(std::move(s));
  }
  std::string clock;
  for (const auto& [device, names] : clocks) {
    for (const std::string& c : names) clock += (clock.empty() ? "" : "; ") + device + ": " + c;
  }
  if (!clock.empty()) t.metadata["device.clock"] = clock;
  if (dropped > 0) t.metadata["tracer.dropped_device_spans"] = std::to_string(dropped);
}

void join_device_flows(Trace& t) {
  // The launch of each correlation id: a CPU span with that int argument; of
  // several (a floor-7 copy span around a floor-8 one), the deepest floor.
  // Most recordings have no device work: they pay one compare per span.
  if (std::none_of(t.spans.begin(), t.spans.end(), [](const Span& s) { return s.floor == Floor::Device; })) return;
  std::unordered_map<int64_t, size_t> launch;
  for (size_t k = 0; k < t.spans.size(); ++k) {
    const Span& s = t.spans[k];
    if (s.floor == Floor::Device) continue;
    const ArgValue* c = s.find_arg("correlation");
    const int64_t* id = c ? std::get_if<int64_t>(c) : nullptr;
    if (id == nullptr || *id == 0) continue;
    const auto [it, added] = launch.emplace(*id, k);
    if (!added && t.spans[it->second].floor < s.floor) it->second = k;
  }
  if (launch.empty()) return;
  for (const Span& s : t.spans) {
    if (s.floor != Floor::Device) continue;
    const ArgValue* c = s.find_arg("correlation");
    const int64_t* id = c ? std::get_if<int64_t>(c) : nullptr;
    if (id == nullptr) continue;
    const auto it = launch.find(*id);
    if (it != launch.end()) t.flows.push_back({t.spans[it->second].id, s.id, "ac2g"});
  }
}

}  // namespace detail

}  // namespace descent::trace
