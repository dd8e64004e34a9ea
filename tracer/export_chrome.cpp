// Chrome Trace Event JSON export (loads in Perfetto and chrome://tracing).
//
// [SECTION] JSON writing helpers
// [SECTION] Events
// [SECTION] Document and file
//
// Every span becomes one complete event ("ph": "X") with its start and
// duration in microseconds, its floor and its source site ("src": "file:line")
// among its args; "M" events name the process and the threads; a
// flow becomes a pair of flow events ("s", "f") that Perfetto draws as an
// arrow. Thread ids ("tid") are the Trace's thread numbers plus one: as in
// the files of other tools, they start at 1 (some viewers treat tid 0 as
// "no thread"). Device rows (Note [Device spans] in tracer.h: the threads
// the metadata "thread.N.device" names a device for) go in a process of
// their own per device, named after it ("cuda:0"), and their spans take
// Kineto's categories ("kernel", "gpu_memcpy", "gpu_memset") instead of the
// floor's name, with the launch's arrow as Kineto draws it (flow events of
// category "ac2g"), so the file reads like PyTorch's profiler's. descent's own data (span_cost_ns, "tracer.clock", the other
// metadata) goes in a top-level "otherData" object, where Kineto and
// Perfetto keep a trace's extra data. from_chrome_json() (load_chrome.cpp)
// reads it all back. The format is described in Google's "Trace Event
// Format" document.
//
// Note [Chrome export times from a base]
// ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
// A span's times are nanoseconds of the steady clock, which counts from the
// machine's boot. Chrome JSON writes microseconds, and a reader holds them in
// a double: past 2^42 us (51 days of uptime) a double of microseconds no
// longer holds every nanosecond, and a quarter of the spans of a trace
// recorded then read back a nanosecond or more away (half of them past 102
// days). So "ts" counts from a base, the earliest start rounded down to a
// whole microsecond, and otherData holds the base as an integer
// ("ts_base_ns", which JSON readers keep exact) for from_chrome_json() to
// add back: the file reads back exactly for any trace shorter than 51 days.
// Viewers show the times from the base. Found while writing tests/fuzz's
// check that the export reads back as it was written (fuzz.h); the fuzz
// corpora hold a trace recorded after 300 days of uptime.
#include <algorithm>
#include <charconv>
#include <cinttypes>
#include <cmath>
#include <cstdio>
#include <map>
#include <set>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "tracer/trace.h"

namespace descent::trace {

namespace {

constexpr int kPid = 1;               // the host process: descent
constexpr int kFirstDevicePid = 100;  // the first device's process; the others follow in name order
constexpr uint32_t kFirstTid = 1;     // "tid" of the Trace's thread 0
constexpr int64_t kNsPerUs = 1000;

std::string tid_of(uint32_t thread) { return std::to_string(uint64_t{thread} + kFirstTid); }

// The process of each row: kPid, or its device's (Note [Device spans]).
class Processes {
 public:
  explicit Processes(const Trace& t) {
    std::map<std::string, int> pid_of_device;
    for (const auto& [key, value] : t.metadata) {
      if (key.starts_with("thread.") && key.ends_with(".device")) pid_of_device.emplace(value, 0);
    }
    int next = kFirstDevicePid;
    for (auto& [device, pid] : pid_of_device) {
      pid = next++;
      devices_.push_back({pid, device});
    }
    for (const auto& [key, value] : t.metadata) {
      if (!key.starts_with("thread.") || !key.ends_with(".device")) continue;
      uint32_t thread = 0;
      const char* first = key.data() + 7;
      const char* last = key.data() + key.size() - 7;
      const auto r = std::from_chars(first, last, thread);
      if (r.ec == std::errc() && r.ptr == last) pid_.emplace(thread, pid_of_device.at(value));
    }
  }
  int of(uint32_t thread) const {
    const auto it = pid_.find(thread);
    return it == pid_.end() ? kPid : it->second;
  }
  const std::vector<std::pair<int, std::string>>& devices() const { return devices_; }

 private:
  std::unordered_map<uint32_t, int> pid_;
  std::vector<std::pair<int, std::string>> devices_;  // (pid, "cuda:0")
};

// A span's "cat": its floor's name, or for device work Kineto's category.
const char* category_of(const Span& s) {
  if (s.floor != Floor::Device) return floor_name(s.floor);
  const ArgValue* work = s.find_arg("work");  // Note [Device spans]
  const std::string* w = work ? std::get_if<std::string>(work) : nullptr;
  if (w != nullptr) return *w == "memcpy" ? "gpu_memcpy" : *w == "memset" ? "gpu_memset" : "kernel";
  // A span loaded from Kineto's file has no "work": its name says, as Kineto names copies.
  if (s.name.starts_with("Memcpy ")) return "gpu_memcpy";
  if (s.name.starts_with("Memset ")) return "gpu_memset";
  return "kernel";
}

// [SECTION] JSON writing helpers -----------------------------------------------

// Length of the valid UTF-8 sequence starting at s[i], or 0 when invalid.
size_t utf8_length(const std::string& s, size_t i) {
  const auto byte = [&](size_t k) { return static_cast<unsigned char>(s[k]); };
  const unsigned char c = byte(i);
  size_t len = 0;
  uint32_t min_code = 0;
  if (c >= 0xc2 && c <= 0xdf)
    len = 2, min_code = 0x80;
  else if (c >= 0xe0 && c <= 0xef)
    len = 3, min_code = 0x800;
  else if (c >= 0xf0 && c <= 0xf4)
    len = 4, min_code = 0x10000;
  else
    return 0;
  if (i + len > s.size()) return 0;
  uint32_t code = c & (0xff >> (len + 1));
  for (size_t k = 1; k < len; ++k) {
    if ((byte(i + k) & 0xc0) != 0x80) return 0;
    code = (code << 6) | (byte(i + k) & 0x3f);
  }
  const bool surrogate = code >= 0xd800 && code <= 0xdfff;
  return (code < min_code || code > 0x10ffff || surrogate) ? 0 : len;
}

}  // namespace

// A JSON string literal. Invalid UTF-8 bytes become U+FFFD so parsers accept it.
void append_json_string(std::string& out, const std::string& s) {
  out += '"';
  for (size_t i = 0; i < s.size();) {
    const auto c = static_cast<unsigned char>(s[i]);
    if (c >= 0x80) {
      const size_t len = utf8_length(s, i);
      if (len == 0) {
        out += "\\ufffd";
        ++i;
      } else {
        out.append(s, i, len);
        i += len;
      }
      continue;
    }
    switch (c) {
      case '"':
        out += "\\\"";
        break;
      case '\\':
        out += "\\\\";
        break;
      case '\n':
        out += "\\n";
        break;
      case '\t':
        out += "\\t";
        break;
      case '\r':
        out += "\\r";
        break;
      default:
        if (c < 0x20 || c == 0x7f) {
          char buf[8];
          std::snprintf(buf, sizeof buf, "\\u%04x", c);
          out += buf;
        } else {
          out += static_cast<char>(c);
        }
    }
    ++i;
  }
  out += '"';
}

// JSON has no NaN or infinity: those are written as strings.
void append_json_value(std::string& out, const ArgValue& v) {
  if (const auto* i = std::get_if<int64_t>(&v)) {
    out += std::to_string(*i);
  } else if (const auto* d = std::get_if<double>(&v)) {
    if (std::isnan(*d)) {
      out += "\"nan\"";
    } else if (std::isinf(*d)) {
      out += *d > 0 ? "\"inf\"" : "\"-inf\"";
    } else {
      char buf[40];  // shortest text that reads back to the same double
      out.append(buf, std::to_chars(buf, buf + sizeof buf, *d).ptr);
    }
  } else if (const auto* b = std::get_if<bool>(&v)) {
    out += *b ? "true" : "false";
  } else {
    append_json_string(out, std::get<std::string>(v));
  }
}

namespace {

// Nanoseconds as microseconds with three decimals, exactly (integer arithmetic).
void append_us(std::string& out, int64_t ns) {
  const bool negative = ns < 0;
  const uint64_t mag = negative ? 0 - static_cast<uint64_t>(ns) : static_cast<uint64_t>(ns);
  char buf[40];
  std::snprintf(buf, sizeof buf, "%s%" PRIu64 ".%03" PRIu64, negative ? "-" : "", mag / 1000, mag % 1000);
  out += buf;
}

// [SECTION] Events -------------------------------------------------------------

void append_span_event(std::string& out, const Span& s, int pid, int64_t base_ns) {
  out += "{\"name\":";
  append_json_string(out, s.name);
  out += ",\"cat\":";
  append_json_string(out, category_of(s));
  out += ",\"ph\":\"X\",\"ts\":";
  append_us(out, s.start_ns - base_ns);
  out += ",\"dur\":";
  append_us(out, s.duration_ns());
  out += ",\"pid\":" + std::to_string(pid) + ",\"tid\":" + tid_of(s.thread) + ",\"args\":{";
  bool has_floor_arg = false;
  bool has_src_arg = false;
  for (size_t k = 0; k < s.args.size(); ++k) {
    if (k > 0) out += ',';
    append_json_string(out, s.args[k].key);
    out += ':';
    append_json_value(out, s.args[k].value);
    has_floor_arg = has_floor_arg || s.args[k].key == "floor";
    has_src_arg = has_src_arg || s.args[k].key == "src";
  }
  bool any = !s.args.empty();
  if (!s.file.empty() && !has_src_arg) {  // "floors/dispatch/dispatcher.cpp:148" (Note [Span source sites])
    if (any) out += ',';
    out += "\"src\":";
    append_json_string(out, s.file + ":" + std::to_string(s.line));
    any = true;
  }
  if (!has_floor_arg) {  // no duplicate keys; last, where from_chrome_json() looks for it
    if (any) out += ',';
    out += "\"floor\":" + std::to_string(static_cast<int>(s.floor));
  }
  out += "}}";
}

// A process name (thread: none) or a thread's name.
void append_name_event(std::string& out, const char* what, int pid, const uint32_t* thread, const std::string& name) {
  out += "{\"name\":\"";
  out += what;
  out += "\",\"ph\":\"M\",\"pid\":" + std::to_string(pid);
  if (thread != nullptr) out += ",\"tid\":" + tid_of(*thread);
  out += ",\"args\":{\"name\":";
  append_json_string(out, name);
  out += "}}";
}

// Flow `f` as a pair of flow events: "s" at the start of the span it leaves,
// "f" (bound to the enclosing slice, "bp": "e") at the start of the span it
// reaches. args.span is the position of the bound X event among the file's X
// events, so that from_chrome_json() binds to exactly that span even when a
// child starts at the same time; other readers bind by time.
// A launch's arrow to its device work ("ac2g") has Kineto's category too.
void append_flow_events(std::string& out, const Flow& f, uint64_t number, const Span& from, size_t from_index,
                        const Span& to, size_t to_index, const Processes& processes, int64_t base_ns) {
  const auto one = [&](const char* phase, const Span& s, size_t index) {
    out += ",\n{\"name\":";
    append_json_string(out, f.name);
    out += f.name == "ac2g" ? ",\"cat\":\"ac2g\",\"ph\":\"" : ",\"cat\":\"flow\",\"ph\":\"";
    out += phase;
    out += "\",\"id\":" + std::to_string(number) + ",\"ts\":";
    append_us(out, s.start_ns - base_ns);
    out += ",\"pid\":" + std::to_string(processes.of(s.thread)) + ",\"tid\":" + tid_of(s.thread);
    if (phase[0] == 'f') out += ",\"bp\":\"e\"";
    out += ",\"args\":{\"span\":" + std::to_string(index) + "}}";
  };
  one("s", from, from_index);
  one("f", to, to_index);
}

}  // namespace

// [SECTION] Document and file ----------------------------------------------------

std::string to_chrome_json(const Trace& t) {
  std::string out = "{\"traceEvents\":[\n";
  const Processes processes(t);
  append_name_event(out, "process_name", kPid, nullptr, "descent");
  for (const auto& [pid, device] : processes.devices()) {
    out += ",\n";
    append_name_event(out, "process_name", pid, nullptr, device);
  }
  std::set<uint32_t> threads;
  for (const Span& s : t.spans) threads.insert(s.thread);
  for (uint32_t tid : threads) {
    // A "thread.N" metadata entry, when present, names thread N.
    const auto it = t.metadata.find("thread." + std::to_string(tid));
    out += ",\n";
    append_name_event(out, "thread_name", processes.of(tid), &tid,
                      it != t.metadata.end() ? it->second : "thread " + std::to_string(tid));
  }
  // Note [Chrome export times from a base]. A trace with a time before 0
  // (only an edited file has one) keeps base 0, so no subtraction overflows.
  int64_t base_ns = 0;
  if (!t.spans.empty()) {
    base_ns = t.spans.front().start_ns;
    for (const Span& s : t.spans) base_ns = std::min(base_ns, s.start_ns);
    base_ns = base_ns < 0 ? 0 : base_ns - base_ns % kNsPerUs;
  }
  for (const Span& s : t.spans) {
    out += ",\n";
    append_span_event(out, s, processes.of(s.thread), base_ns);
  }
  if (!t.flows.empty()) {
    std::unordered_map<uint64_t, size_t> index_of;  // span id -> position
    for (size_t k = 0; k < t.spans.size(); ++k) index_of.emplace(t.spans[k].id, k);
    for (size_t k = 0; k < t.flows.size(); ++k) {
      const auto from = index_of.find(t.flows[k].from);
      const auto to = index_of.find(t.flows[k].to);
      if (from == index_of.end() || to == index_of.end()) continue;  // a flow to nowhere draws nothing
      append_flow_events(out, t.flows[k], k + 1, t.spans[from->second], from->second, t.spans[to->second], to->second,
                         processes, base_ns);
    }
  }
  out += "\n],\n\"displayTimeUnit\":\"ns\",\n\"otherData\":{";
  out += "\"span_cost_ns\":";
  append_json_value(out, t.span_cost_ns);
  out += ",\"ts_base_ns\":" + std::to_string(base_ns);
  for (const auto& [key, value] : t.metadata) {
    if (key == "span_cost_ns" || key == "ts_base_ns") continue;  // no duplicate keys
    out += ',';
    append_json_string(out, key);
    out += ':';
    append_json_string(out, value);
  }
  out += "}}\n";
  return out;
}

void save_chrome_json(const Trace& t, const std::string& path) { write_text_file(path, to_chrome_json(t)); }

}  // namespace descent::trace
