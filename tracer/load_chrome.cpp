// Loading Chrome Trace Event JSON: descent's own export and PyTorch's profiler.
//
// [SECTION] Errors and small readers
// [SECTION] Placing events on floors
// [SECTION] Reading the events
// [SECTION] Threads, ids and parents
// [SECTION] Flows
// [SECTION] Metadata
// [SECTION] Entry points
//
// Note [Placing PyTorch's events on floors]
// ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
// torch.profiler writes Kineto's JSON: complete events ("X") with a category
// ("cat") that says which layer recorded them. They land on descent's floors:
//   python_function, user_annotation          -> Python (1)
//   Trace ("PyTorch Profiler (0)", the profiler's own wrapper around the
//       recording)                             -> no floor (None): it is not
//       a layer the call went through;
//   cpu_op "aten::*"                           -> Dispatch (3), nested or not:
//       every one is a call the dispatcher routed (RecordFunction is opened
//       by the dispatcher's call, once per op: aten::ones, and aten::empty
//       and aten::fill_ that its kernel calls); Kineto records no separate
//       kernel event, so the kernel's work is the op's self time;
//   cpu_op named "*Backward*", "autograd::*" or "torch::autograd::*"
//       (AccumulateGrad, CopySlices, evaluate_function) -> Autograd (4);
//   other cpu_op (record_function scopes, "ProfilerStep#3") -> Python (1);
//   cuda_runtime, cuda_driver                  -> by name, kCudaApiFloors:
//       allocation calls (cudaMalloc, cudaFree...) -> Allocator (6),
//       stream and event calls, synchronisation, and copies and memsets
//       (cudaMemcpyAsync: work put on a stream, as descent's memcpy spans
//       are)                                   -> Streams (7),
//       the rest (cudaLaunchKernel, cuLaunchKernelEx...) -> Launch (8);
//   kernel, gpu_memcpy, gpu_memset, gpu_user_annotation -> Device (9), on
//       rows of their own: a device row is never the same thread as a CPU
//       row, even when the file gives both the same pid and tid;
//   overhead (the profiler's own buffer requests) -> not loaded, counted in
//       the metadata "chrome.skipped_events" with the events of phases we do
//       not read (instants "i", counters "C", async "b"/"e", "B"/"E" pairs);
//   any other category                          -> Python (1), so nothing a
//       tool recorded as a complete event is lost.
// Files written by to_chrome_json() name the floor in "cat" (device work:
// Kineto's categories above, on rows the metadata names) and are read back
// as they were, their times from the base in otherData's "ts_base_ns" (Note
// [Chrome export times from a base] in export_chrome.cpp). Chrome events have no parent field: parents are rebuilt per
// row from time containment (Note [Parents from time containment]).
//
// Note [Parents from time containment]
// ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
// On each row the events are sorted by start, longer first on a tie, and
// walked with a stack of the open ancestors: an event's parent is the
// innermost open one that contains it entirely. An event that starts inside
// another but ends after it (a hostile or clock-skewed file) does not become
// its child: it becomes a child of the nearest ancestor that does contain it,
// or a root, and "chrome.overlapping_spans" counts such events. So the loaded
// trace always passes check_structure(), whatever the file says.
#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <limits>
#include <sstream>
#include <string_view>
#include <unordered_map>

#include "tracer/json.h"
#include "tracer/trace.h"

namespace descent::trace {

namespace {

using json::Type;
using json::Value;

constexpr double kNsPerUs = 1000.0;
constexpr std::string_view kDescentMagic = "descent-trace";  // first bytes of descent's own format
constexpr double kMaxAbsNs = 9.0e18;  // below INT64_MAX (9.22e18), with room for start + duration

// [SECTION] Errors and small readers -----------------------------------------------

// Errors that name the source and, for one event, its index and name.
struct Errors {
  const std::string& source;
  [[noreturn]] void file(const std::string& what) const { throw TraceFormatError(source + ": " + what); }
  [[noreturn]] void event(size_t index, const Value& e, const std::string& what) const {
    std::string where = source + ": traceEvents[" + std::to_string(index) + "]";
    if (e.is_object()) {
      if (const Value* name = e.find("name"); name && name->is_string()) {
        where += " (\"" + std::string(name->as_string().substr(0, 60)) + "\")";
      }
    }
    throw TraceFormatError(where + ": " + what);
  }
};

// Compact JSON text of a value, for arguments that are arrays or objects
// (Kineto's "grid": [1, 1, 1]) and for metadata values that are not strings.
void append_json(std::string& out, const Value& v) {
  switch (v.type()) {
    case Type::Null:
      out += "null";
      break;
    case Type::Bool:
      out += v.as_bool() ? "true" : "false";
      break;
    case Type::Number: {
      char buf[40];
      const auto r = v.is_integer() ? std::to_chars(buf, buf + sizeof buf, v.as_int())
                                    : std::to_chars(buf, buf + sizeof buf, v.as_double());
      out.append(buf, r.ptr);
      break;
    }
    case Type::String:
      out += '"';
      out += v.as_string();  // as read: only for display
      out += '"';
      break;
    case Type::Array:
      out += '[';
      for (size_t i = 0; i < v.size(); ++i) {
        if (i) out += ", ";
        append_json(out, v[i]);
      }
      out += ']';
      break;
    case Type::Object:
      out += '{';
      for (size_t i = 0; i < v.size(); ++i) {
        if (i) out += ", ";
        out += '"';
        out += v.key(i);
        out += "\": ";
        append_json(out, v.value(i));
      }
      out += '}';
      break;
  }
}

std::string text_of(const Value& v) {
  if (v.is_string()) return std::string(v.as_string());
  std::string out;
  append_json(out, v);
  return out;
}

ArgValue arg_value(const Value& v) {
  switch (v.type()) {
    case Type::Number:
      if (v.is_integer()) return v.as_int();
      return v.as_double();
    case Type::Bool:
      return v.as_bool();
    default:
      return text_of(v);
  }
}

// A pid or tid: a number or a string ("Spans", "PyTorch Profiler"); absent is "".
std::string id_text(const Value* v) { return v == nullptr ? std::string() : text_of(*v); }

// [SECTION] Placing events on floors ---------------------------------------------

struct CudaApiFloor {
  std::string_view prefix;
  Floor floor;
};

// CUDA runtime and driver calls by name prefix; the first match wins, and a
// call that matches none is Launch. See Note [Placing PyTorch's events on floors].
constexpr CudaApiFloor kCudaApiFloors[] = {
    {"cudaMalloc", Floor::Allocator},  // cudaMalloc, cudaMallocAsync, cudaMallocHost ...
    {"cudaFree", Floor::Allocator},    // cudaFree, cudaFreeAsync, cudaFreeHost
    {"cudaHostAlloc", Floor::Allocator},
    {"cudaHostRegister", Floor::Allocator},
    {"cudaHostUnregister", Floor::Allocator},
    {"cuMemAlloc", Floor::Allocator},
    {"cuMemFree", Floor::Allocator},
    {"cuMemCreate", Floor::Allocator},
    {"cuMemMap", Floor::Allocator},
    {"cuMemUnmap", Floor::Allocator},
    {"cuMemRelease", Floor::Allocator},
    {"cudaStream", Floor::Streams},  // Synchronize, WaitEvent, Query, Create ...
    {"cudaEvent", Floor::Streams},   // Record, Synchronize, Query, Create ...
    {"cudaDeviceSynchronize", Floor::Streams},
    {"cuStream", Floor::Streams},
    {"cuEvent", Floor::Streams},
    {"cuCtxSynchronize", Floor::Streams},
    {"cudaMemcpy", Floor::Streams},  // cudaMemcpy, cudaMemcpyAsync, cudaMemcpy2DAsync ...
    {"cudaMemset", Floor::Streams},
    {"cuMemcpy", Floor::Streams},
    {"cuMemset", Floor::Streams},
};

Floor cuda_api_floor(std::string_view name) {
  for (const CudaApiFloor& row : kCudaApiFloors) {
    if (name.substr(0, row.prefix.size()) == row.prefix) return row.floor;
  }
  return Floor::Launch;
}

bool is_device_category(std::string_view cat) {
  return cat == "kernel" || cat == "gpu_memcpy" || cat == "gpu_memset" || cat == "gpu_user_annotation";
}

bool is_aten(std::string_view cat, std::string_view name) {
  return (cat == "cpu_op" || cat == "operator") && name.substr(0, 6) == "aten::";
}

// The floor of a PyTorch event (Note [Placing PyTorch's events on floors]).
Floor kineto_floor(std::string_view cat, std::string_view name) {
  if (is_device_category(cat)) return Floor::Device;
  if (cat == "cuda_runtime" || cat == "cuda_driver") return cuda_api_floor(name);
  if (cat == "Trace") return Floor::None;
  if (is_aten(cat, name)) return Floor::Dispatch;
  if (cat == "cpu_op" || cat == "operator") {
    if (name.find("Backward") != std::string_view::npos || name.substr(0, 10) == "autograd::" ||
        name.substr(0, 17) == "torch::autograd::")
      return Floor::Autograd;
  }
  return Floor::Python;
}

// The floor named by a descent export's "cat" ("python", "kernels" ...).
Floor floor_from_name(std::string_view cat) {
  for (int f = 0; f < kNumFloors; ++f) {
    if (cat == floor_name(static_cast<Floor>(f))) return static_cast<Floor>(f);
  }
  return Floor::None;
}

// [SECTION] Reading the events -------------------------------------------------------

// One complete event, before it has an id, a thread or a parent.
struct RawSpan {
  size_t event = 0;  // index in traceEvents
  uint32_t row = 0;  // index in Loader::rows_
  double ts_us = 0;  // as in the file
  int64_t dur_ns = 0;
  int64_t start_ns = 0;  // set once the base is known
  const Value* json = nullptr;
};

// One flow event ("s", "t" or "f").
struct RawFlow {
  size_t event = 0;
  char phase = 's';
  bool bind_enclosing = false;  // "bp": "e", or always for "s" and "t"
  std::string pid, tid;
  double ts_us = 0;
  std::string name;
  int64_t span_ordinal = -1;  // descent's own export: args.span, the X event it binds to
};

struct Row {
  bool device = false;
  std::string pid, tid;
  uint32_t thread = 0;
};

class Loader {
 public:
  Loader(const std::string& text, const std::string& source) : doc_(json::parse(text, source)), err_{source} {}

  Trace run() {
    const Value& root = doc_.root();
    const Value* events = &root;
    if (root.is_object()) {
      events = root.find("traceEvents");
      if (events == nullptr) err_.file("the top-level object has no \"traceEvents\" member (not a Chrome trace?)");
      if (!events->is_array()) {
        err_.file(std::string("\"traceEvents\" is ") + json::type_name(events->type()) +
                  ", expected an array of events");
      }
      // descent's own export: its data in "otherData" (tids from 1), or, in
      // files written before that, in "metadata" (tids from 0).
      for (const char* key : {"otherData", "metadata"}) {
        const Value* meta = root.find(key);
        if (meta && meta->is_object() && meta->find("span_cost_ns") != nullptr) {
          descent_ = true;
          descent_data_ = meta;
          first_tid_ = std::string_view(key) == "otherData" ? 1 : 0;
          break;
        }
      }
    } else if (!root.is_array()) {
      err_.file(std::string("the top level is ") + json::type_name(root.type()) +
                ": expected an object with \"traceEvents\" or an array of events");
    }
    span_of_event_.assign(events->size(), -1);
    for (size_t i = 0; i < events->size(); ++i) read_event(i, (*events)[i]);
    Trace t;
    place_spans(t);
    link_flows(t);
    add_base(t);
    fill_metadata(t, root);
    return t;
  }

 private:
  double number_field(size_t i, const Value& e, const char* key, bool required, double fallback) const {
    const Value* v = e.find(key);
    if (v == nullptr) {
      if (required) err_.event(i, e, std::string("missing \"") + key + "\"");
      return fallback;
    }
    if (!v->is_number()) {
      err_.event(i, e, std::string("\"") + key + "\" is " + json::type_name(v->type()) + ", expected a number");
    }
    return v->as_double();  // finite: JSON has no NaN or infinity, and the reader refuses 1e400
  }

  // The time in nanoseconds from the base, or an error when it does not fit.
  int64_t to_ns(size_t i, const Value& e, double us, const char* what) const {
    const double ns = us * kNsPerUs;
    if (!(std::fabs(ns) < kMaxAbsNs)) err_.event(i, e, std::string(what) + " is out of range (more than 285 years)");
    return std::llround(ns);
  }

  uint32_t row_of(bool device, std::string pid, std::string tid) {
    std::string key = (device ? "d" : "c") + pid + '\x1f' + tid;
    const auto [it, added] = row_index_.try_emplace(std::move(key), static_cast<uint32_t>(rows_.size()));
    if (added) rows_.push_back({device, std::move(pid), std::move(tid), 0});
    return it->second;
  }

  void read_event(size_t i, const Value& e) {
    if (!e.is_object()) err_.event(i, e, std::string("is ") + json::type_name(e.type()) + ", expected an object");
    const Value* ph = e.find("ph");
    if (ph == nullptr) err_.event(i, e, "missing \"ph\" (the event's phase)");
    if (!ph->is_string())
      err_.event(i, e, std::string("\"ph\" is ") + json::type_name(ph->type()) + ", expected a string");
    const std::string_view phase = ph->as_string();
    const Value* name = e.find("name");
    if (name != nullptr && !name->is_string()) {
      err_.event(i, e, std::string("\"name\" is ") + json::type_name(name->type()) + ", expected a string");
    }
    const Value* cat = e.find("cat");
    const std::string_view category = cat && cat->is_string() ? cat->as_string() : std::string_view();
    if (phase == "X") {
      const double ts = number_field(i, e, "ts", true, 0);
      const double dur = number_field(i, e, "dur", false, 0);
      if (dur < 0) err_.event(i, e, "negative \"dur\"");
      if (!descent_ && category == "overhead") {
        ++skipped_;
        return;
      }
      RawSpan s;
      s.event = i;
      s.row = row_of(!descent_ && is_device_category(category), id_text(e.find("pid")), id_text(e.find("tid")));
      s.ts_us = ts;
      s.dur_ns = to_ns(i, e, dur, "\"dur\"");
      s.json = &e;
      min_ts_us_ = std::min(min_ts_us_, ts);
      spans_.push_back(s);
    } else if (phase == "s" || phase == "t" || phase == "f") {
      RawFlow f;
      f.event = i;
      f.phase = phase[0];
      const Value* bp = e.find("bp");
      f.bind_enclosing = phase != "f" || (bp && bp->is_string() && bp->as_string() == "e");
      f.pid = id_text(e.find("pid"));
      f.tid = id_text(e.find("tid"));
      f.ts_us = number_field(i, e, "ts", true, 0);
      f.name = name ? std::string(name->as_string()) : std::string();
      const Value* id = e.find("id");
      if (id == nullptr) id = e.find("bind_id");
      if (id == nullptr) err_.event(i, e, "a flow event without \"id\"");
      if (const Value* args = e.find("args"); descent_ && args && args->is_object()) {
        if (const Value* k = args->find("span"); k && k->is_number() && k->is_integer()) f.span_ordinal = k->as_int();
      }
      flows_[std::string(category) + '\x1f' + text_of(*id)].push_back(std::move(f));
    } else if (phase == "M") {
      const Value* args = e.find("args");
      const Value* label = args && args->is_object()
                               ? args->find(name && name->as_string() == "process_labels" ? "labels" : "name")
                               : nullptr;
      if (name == nullptr || label == nullptr || !label->is_string()) return;
      const std::string pid = id_text(e.find("pid"));
      if (name->as_string() == "thread_name")
        thread_names_[pid + '\x1f' + id_text(e.find("tid"))] = label->as_string();
      else if (name->as_string() == "process_labels")
        process_labels_[pid] = label->as_string();
    } else {
      ++skipped_;
    }
  }

  // [SECTION] Threads, ids and parents -------------------------------------------------

  // Thread numbers: descent's own files keep theirs; other files number CPU
  // rows in order of appearance, then device rows.
  void number_rows() {
    uint32_t next = 0;
    for (const bool device : {false, true}) {
      for (Row& r : rows_) {
        if (r.device != device) continue;
        uint64_t tid = 0;
        const auto res = std::from_chars(r.tid.data(), r.tid.data() + r.tid.size(), tid);
        const bool numeric = res.ec == std::errc() && res.ptr == r.tid.data() + r.tid.size() && tid >= first_tid_ &&
                             tid - first_tid_ <= UINT32_MAX;
        r.thread = descent_ && numeric ? static_cast<uint32_t>(tid - first_tid_) : next++;
      }
    }
  }

  void place_spans(Trace& t) {
    number_rows();
    base_us_ = descent_ || spans_.empty() ? 0.0 : std::floor(min_ts_us_);
    for (RawSpan& s : spans_) {
      s.start_ns = to_ns(s.event, *s.json, s.ts_us - base_us_, "\"ts\"");
      if (__builtin_add_overflow(s.start_ns, s.dur_ns, &s.dur_ns)) s.dur_ns = INT64_MAX;  // dur_ns is now the end
    }
    // Sorted as a Trace wants them: by thread, then start; longer first on a
    // tie, so that a parent comes before a child that starts with it.
    std::vector<size_t> order(spans_.size());
    for (size_t k = 0; k < order.size(); ++k) order[k] = k;
    std::sort(order.begin(), order.end(), [&](size_t a, size_t b) {
      const RawSpan& x = spans_[a];
      const RawSpan& y = spans_[b];
      const uint32_t tx = rows_[x.row].thread, ty = rows_[y.row].thread;
      if (tx != ty) return tx < ty;
      if (x.start_ns != y.start_ns) return x.start_ns < y.start_ns;
      if (x.dur_ns != y.dur_ns) return x.dur_ns > y.dur_ns;
      return x.event < y.event;
    });
    t.spans.resize(spans_.size());
    // Note [Parents from time containment]. `aten` marks spans inside an aten op.
    struct Open {
      size_t index;  // in t.spans
    };
    std::vector<Open> stack;
    for (size_t k = 0; k < order.size(); ++k) {
      const RawSpan& r = spans_[order[k]];
      Span& s = t.spans[k];
      s.id = k + 1;
      s.thread = rows_[r.row].thread;
      s.start_ns = r.start_ns;
      s.end_ns = r.dur_ns;
      if (k > 0 && t.spans[k - 1].thread != s.thread) stack.clear();
      bool overlapped = false;
      while (!stack.empty() && t.spans[stack.back().index].end_ns < s.end_ns) {
        overlapped = overlapped || t.spans[stack.back().index].end_ns > s.start_ns;
        stack.pop_back();
      }
      overlapping_ += overlapped;
      s.parent = stack.empty() ? 0 : t.spans[stack.back().index].id;
      read_span_fields(*r.json, s);
      stack.push_back({k});
      span_of_event_[r.event] = static_cast<int64_t>(k);
    }
  }

  void read_span_fields(const Value& e, Span& s) const {
    const Value* name = e.find("name");
    s.name = name ? std::string(name->as_string()) : std::string();
    const Value* cat = e.find("cat");
    const std::string_view category = cat && cat->is_string() ? cat->as_string() : std::string_view();
    // descent's export names device work by Kineto's categories (export_chrome.cpp), the rest by floor.
    s.floor = !descent_                      ? kineto_floor(category, s.name)
              : is_device_category(category) ? Floor::Device
                                             : floor_from_name(category);
    const Value* args = e.find("args");
    if (args == nullptr || !args->is_object()) return;
    s.args.reserve(args->size());
    for (size_t k = 0; k < args->size(); ++k) s.args.push_back({std::string(args->key(k)), arg_value(args->value(k))});
    // to_chrome_json() adds "floor": <number> last, unless the span has a "floor" of its own.
    if (descent_ && !s.args.empty() && s.args.back().key == "floor" &&
        s.args.back().value == ArgValue{int64_t{static_cast<int>(s.floor)}}) {
      s.args.pop_back();
    }
  }

  // [SECTION] Flows ----------------------------------------------------------------------

  // The span a flow event binds to, as an index in t.spans, or -1.
  int64_t bind(const Trace& t, const RawFlow& f) const {
    if (f.span_ordinal >= 0) {  // descent's export says which X event
      if (static_cast<uint64_t>(f.span_ordinal) >= x_events_.size()) return -1;
      return span_of_event_[x_events_[static_cast<size_t>(f.span_ordinal)]];
    }
    const double rel = f.ts_us - base_us_;
    if (!(std::fabs(rel * kNsPerUs) < kMaxAbsNs)) return -1;
    const int64_t ts = std::llround(rel * kNsPerUs);
    for (const bool device : {false, true}) {
      const auto row = row_index_.find((device ? "d" : "c") + f.pid + '\x1f' + f.tid);
      if (row == row_index_.end()) continue;
      const uint32_t thread = rows_[row->second].thread;
      // The last span of the thread that starts at or before ts (or, for an
      // "f" without "bp": "e", the first that starts at or after it).
      const auto first = std::lower_bound(t.spans.begin(), t.spans.end(), thread,
                                          [](const Span& s, uint32_t th) { return s.thread < th; });
      const auto last =
          std::upper_bound(first, t.spans.end(), thread, [](uint32_t th, const Span& s) { return th < s.thread; });
      if (!f.bind_enclosing) {
        const auto it = std::lower_bound(first, last, ts, [](const Span& s, int64_t v) { return s.start_ns < v; });
        if (it != last) return it - t.spans.begin();
        continue;
      }
      auto it = std::upper_bound(first, last, ts, [](int64_t v, const Span& s) { return v < s.start_ns; });
      if (it == first) continue;
      // Walk up from the last span started: the innermost one still open at ts.
      for (size_t k = static_cast<size_t>(it - 1 - t.spans.begin());;) {
        const Span& s = t.spans[k];
        if (s.end_ns >= ts) return static_cast<int64_t>(k);
        if (s.parent == 0) break;
        k = s.parent - 1;  // ids are positions + 1
      }
    }
    return -1;
  }

  void link_flows(Trace& t) {
    for (size_t k = 0; k < spans_.size(); ++k) x_events_.push_back(spans_[k].event);
    std::vector<const std::vector<RawFlow>*> groups;
    for (auto& [key, list] : flows_) {
      // A flow's events in the order of the arrow ("f" may come first in the file).
      const auto rank = [](char phase) { return phase == 's' ? 0 : phase == 't' ? 1 : 2; };
      std::stable_sort(list.begin(), list.end(), [&](const RawFlow& a, const RawFlow& b) {
        return rank(a.phase) != rank(b.phase) ? rank(a.phase) < rank(b.phase) : a.ts_us < b.ts_us;
      });
      groups.push_back(&list);
    }
    // In file order, so that the result does not depend on the hash map.
    std::sort(groups.begin(), groups.end(), [](auto* a, auto* b) { return a->front().event < b->front().event; });
    // (groups start with distinct events, so this order is total)
    for (const auto* list : groups) {
      int64_t previous = -1;  // the span the arrow so far reached
      std::string name;
      for (const RawFlow& f : *list) {
        const int64_t at = bind(t, f);
        if (f.phase == 's') {
          previous = at;
          name = f.name;
          continue;
        }
        if (previous >= 0 && at >= 0) {
          t.flows.push_back({t.spans[static_cast<size_t>(previous)].id, t.spans[static_cast<size_t>(at)].id, name});
        } else {
          ++unmatched_flows_;
        }
        previous = f.phase == 't' ? at : -1;
      }
      if (previous >= 0 && list->back().phase != 'f') ++unmatched_flows_;  // a start that nothing finished
    }
  }

  // descent's export writes times from a base (Note [Chrome export times
  // from a base] in export_chrome.cpp); files written before it have none.
  void add_base(Trace& t) const {
    const Value* base = descent_ ? descent_data_->find("ts_base_ns") : nullptr;
    if (base == nullptr) return;
    if (!base->is_number() || !base->is_integer()) {
      const std::string what =
          base->is_number() ? "a number with a fraction or past int64" : json::type_name(base->type());
      err_.file("\"ts_base_ns\" is " + what + ", expected an integer (nanoseconds)");
    }
    for (Span& s : t.spans) {
      if (__builtin_add_overflow(s.start_ns, base->as_int(), &s.start_ns) ||
          __builtin_add_overflow(s.end_ns, base->as_int(), &s.end_ns)) {
        err_.file("\"ts_base_ns\" " + std::to_string(base->as_int()) + " puts span \"" + s.name.substr(0, 60) +
                  "\" out of range (past 292 years)");
      }
    }
  }

  // [SECTION] Metadata -----------------------------------------------------------------

  void fill_metadata(Trace& t, const Value& root) {
    auto& m = t.metadata;
    if (descent_) {
      const Value& meta = *descent_data_;
      for (size_t k = 0; k < meta.size(); ++k) {
        const Value& v = meta.value(k);
        if (meta.key(k) == "ts_base_ns") {
          continue;  // add_base()
        } else if (meta.key(k) != "span_cost_ns") {
          m[std::string(meta.key(k))] = text_of(v);
        } else if (v.is_number()) {
          t.span_cost_ns = v.as_double();
        } else if (v.is_string()) {  // "nan", "inf", "-inf"
          std::from_chars(v.as_string().data(), v.as_string().data() + v.as_string().size(), t.span_cost_ns);
        }
      }
      m["source.format"] = "descent-chrome";
    } else {
      const bool kineto = root.is_object() && (root.find("schemaVersion") || root.find("deviceProperties"));
      m["source.format"] = kineto ? "kineto" : "chrome";
      if (root.is_object()) read_top_level(m, root);
      for (const Row& r : rows_) {
        const auto name = thread_names_.find(r.pid + '\x1f' + r.tid);
        std::string text = name != thread_names_.end() ? trimmed(name->second) : "pid " + r.pid + " tid " + r.tid;
        const auto label = process_labels_.find(r.pid);
        if (label != process_labels_.end()) text = trimmed(label->second) + ": " + text;
        m["thread." + std::to_string(r.thread)] = text;
      }
      if (base_us_ != 0) {
        char buf[40];
        m["chrome.base_us"] = std::string(buf, std::to_chars(buf, buf + sizeof buf, base_us_).ptr);
      }
    }
    if (skipped_) m["chrome.skipped_events"] = std::to_string(skipped_);
    if (overlapping_) m["chrome.overlapping_spans"] = std::to_string(overlapping_);
    if (unmatched_flows_) m["chrome.unmatched_flows"] = std::to_string(unmatched_flows_);
  }

  static std::string trimmed(std::string_view s) {
    while (!s.empty() && s.back() == ' ') s.remove_suffix(1);
    while (!s.empty() && s.front() == ' ') s.remove_prefix(1);
    return std::string(s);
  }

  // Kineto's top level: scalars as "chrome.<key>", devices as "device".
  static void read_top_level(std::map<std::string, std::string>& m, const Value& root) {
    for (size_t k = 0; k < root.size(); ++k) {
      const Value& v = root.value(k);
      if (v.is_array() || v.is_object()) continue;
      m["chrome." + std::string(root.key(k))] = text_of(v);
    }
    const Value* devices = root.find("deviceProperties");
    if (devices == nullptr || !devices->is_array()) return;
    std::string all;
    for (size_t k = 0; k < devices->size(); ++k) {
      const Value& d = (*devices)[k];
      if (!d.is_object()) continue;
      const Value* id = d.find("id");
      const Value* name = d.find("name");
      const std::string n = id ? text_of(*id) : std::to_string(k);
      if (name) m["device." + n + ".name"] = text_of(*name);
      if (!all.empty()) all += ", ";
      all += "cuda:" + n + (name ? " (" + text_of(*name) + ")" : "");
    }
    if (!all.empty()) m["device"] = all;
  }

  json::Document doc_;
  Errors err_;
  bool descent_ = false;                 // written by to_chrome_json()
  const Value* descent_data_ = nullptr;  // its "otherData" (or, in older files, "metadata")
  uint64_t first_tid_ = 0;               // the tid of its thread 0: 1, or 0 in older files
  std::vector<RawSpan> spans_;
  std::vector<Row> rows_;
  std::unordered_map<std::string, uint32_t> row_index_;          // "c" or "d", pid, '\x1f', tid -> rows_
  std::unordered_map<std::string, std::vector<RawFlow>> flows_;  // cat '\x1f' id -> its events in file order
  std::unordered_map<std::string, std::string> thread_names_;    // pid '\x1f' tid -> name
  std::unordered_map<std::string, std::string> process_labels_;  // pid -> "GPU 0"
  std::vector<int64_t> span_of_event_;                           // event index -> t.spans index, -1 for other events
  std::vector<size_t> x_events_;                                 // event index of each X event, in file order
  double min_ts_us_ = std::numeric_limits<double>::infinity();
  double base_us_ = 0;
  size_t skipped_ = 0;
  size_t overlapping_ = 0;
  size_t unmatched_flows_ = 0;
};

}  // namespace

// [SECTION] Entry points ------------------------------------------------------------------

Trace from_chrome_json(const std::string& text, const std::string& source_name) {
  return Loader(text, source_name).run();
}

Trace load_any(const std::string& path) {
  std::error_code ec;
  const auto status = std::filesystem::status(path, ec);
  if (ec && ec != std::errc::no_such_file_or_directory)
    throw TraceFormatError(path + ": cannot open the file: " + ec.message());
  if (!std::filesystem::exists(status)) throw TraceFormatError(path + ": cannot open the file: no such file");
  if (std::filesystem::is_directory(status)) throw TraceFormatError(path + ": cannot open the file: it is a directory");
  if (!std::filesystem::is_regular_file(status))
    throw TraceFormatError(path + ": cannot open the file: not a regular file");
  std::ifstream f(path, std::ios::binary);
  if (!f) throw TraceFormatError(path + ": cannot open the file");
  // The first bytes decide, before a large file that is not a trace is read
  // into memory: descent's own loader checks its header the same way.
  std::string head(kDescentMagic.size(), '\0');
  f.read(head.data(), static_cast<std::streamsize>(head.size()));
  head.resize(static_cast<size_t>(f.gcount()));
  if (head == kDescentMagic) return load(path);
  size_t first = head.find_first_not_of(" \t\r\n");
  for (char c; first == std::string::npos && f.get(c);) {  // a long run of whitespace: read on
    head += c;
    if (c != ' ' && c != '\t' && c != '\r' && c != '\n') first = head.size() - 1;
  }
  if (f.bad()) throw TraceFormatError(path + ": error reading the file");
  if (first == std::string::npos || (head[first] != '{' && head[first] != '[')) {
    throw TraceFormatError(path + ":1: " +
                           (head.empty()                 ? std::string("the file is empty")
                            : first == std::string::npos ? std::string("the file holds only whitespace")
                                                         : std::string("bad magic (not a trace file)")) +
                           ": expected descent's format (a first line 'descent-trace N') or Chrome Trace Event "
                           "JSON (an object with \"traceEvents\" or an array of events)");
  }
  const uintmax_t bytes = std::filesystem::file_size(path, ec);
  if (ec) throw TraceFormatError(path + ": cannot open the file: " + ec.message());
  check_memory_to_load(path, bytes);
  f.clear();
  f.seekg(0);
  std::ostringstream buffer;
  buffer << f.rdbuf();
  if (f.bad()) throw TraceFormatError(path + ": error reading the file");
  return from_chrome_json(std::move(buffer).str(), path);
}

}  // namespace descent::trace
