// The explainers of explain.h: how they read a span, and one explainer per
// kind of span, each family of floors in a file of its own. Internal to
// explain*.cpp: nothing here is promised to the rest of the app (explain.h
// is). See Note [Explaining a span] in explain.h.
//
// [SECTION] Reading a span
// [SECTION] The explainers, by family of floors
#pragma once

#include <algorithm>
#include <cstdio>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "ui/explain.h"

namespace descent::ui::explaining {

using trace::Floor;
using trace::Span;

// [SECTION] Reading a span -------------------------------------------------------------

// The span and its place in the story, for the explainers below.
struct At {
  const Story& s;
  size_t i;
  const Span& sp;
  const trace::Trace& t() const { return *s.trace; }
  const Span* parent() const {
    const size_t p = s.parent_index[i];
    return p == SIZE_MAX ? nullptr : &t().spans[p];
  }
  size_t parent_index() const { return s.parent_index[i]; }
  std::span<const size_t> children() const { return s.children(i); }
  // The nearest ancestor on floor f (SIZE_MAX when none).
  size_t ancestor_on(Floor f) const {
    for (size_t p = s.parent_index[i]; p != SIZE_MAX; p = s.parent_index[p])
      if (t().spans[p].floor == f) return p;
    return SIZE_MAX;
  }
};

inline bool has(const Span& s, const char* key) { return s.find_arg(key) != nullptr; }

inline std::string str(const Span& s, const char* key, const std::string& fallback = "") {
  const trace::ArgValue* v = s.find_arg(key);
  if (!v) return fallback;
  if (const auto* x = std::get_if<std::string>(v)) return *x;
  if (const auto* x = std::get_if<int64_t>(v)) return std::to_string(*x);
  if (const auto* x = std::get_if<bool>(v)) return *x ? "true" : "false";
  return fallback;
}

inline int64_t num(const Span& s, const char* key, int64_t fallback = -1) {
  const trace::ArgValue* v = s.find_arg(key);
  if (!v) return fallback;
  if (const auto* x = std::get_if<int64_t>(v)) return *x;
  if (const auto* x = std::get_if<double>(v)) return static_cast<int64_t>(*x);
  if (const auto* x = std::get_if<bool>(v)) return *x;
  return fallback;
}

inline bool flag(const Span& s, const char* key) {
  const trace::ArgValue* v = s.find_arg(key);
  if (!v) return false;
  if (const auto* b = std::get_if<bool>(v)) return *b;
  if (const auto* x = std::get_if<int64_t>(v)) return *x != 0;
  if (const auto* x = std::get_if<std::string>(v)) return *x == "true";
  return false;
}

// 512 B, 2 MiB, 1.5 KiB.
inline std::string bytes_text(int64_t n) {
  if (n < 0) return "?";
  const char* units[] = {"B", "KiB", "MiB", "GiB"};
  double v = static_cast<double>(n);
  int u = 0;
  while (v >= 1024 && u < 3) v /= 1024, ++u;
  char buf[32];
  if (u == 0 || v == static_cast<double>(static_cast<int64_t>(v)))
    std::snprintf(buf, sizeof buf, "%.0f %s", v, units[u]);
  else
    std::snprintf(buf, sizeof buf, "%.1f %s", v, units[u]);
  return buf;
}

inline std::string plural(int64_t n, const char* one, const char* many) {
  return std::to_string(n) + " " + (n == 1 ? one : many);
}

inline bool starts_with(const std::string& s, std::string_view p) { return std::string_view(s).starts_with(p); }
inline bool contains(const std::string& s, std::string_view p) { return s.find(p) != std::string::npos; }

// "aten::add_" -> "add_"
inline std::string short_op(const std::string& name) { return starts_with(name, "aten::") ? name.substr(6) : name; }
inline bool is_inplace_name(const std::string& name) {
  return !name.empty() && name.back() == '_' && !starts_with(short_op(name), "_");
}

// The device a key set's backend names: "CPU", "Sim", "CUDA" (the highest, as the dispatcher takes it).
inline std::string backend_of(const std::string& keyset) {
  if (contains(keyset, "CUDA")) return "CUDA";
  if (contains(keyset, "Sim")) return "Sim";
  if (contains(keyset, "CPU")) return "CPU";
  return "";
}

// Each key of an "A|B|C" list.
inline std::vector<std::string> keys_of(const std::string& keyset) {
  std::vector<std::string> out;
  size_t at = 0;
  while (at <= keyset.size() && !keyset.empty()) {
    const size_t bar = std::min(keyset.find('|', at), keyset.size());
    out.push_back(keyset.substr(at, bar - at));
    at = bar + 1;
  }
  return out;
}

inline Explanation make(const char* kind, std::string title) {
  Explanation e;
  e.kind = kind;
  e.title = std::move(title);
  return e;
}

inline void say(Explanation& e, std::string s) { e.sentences.push_back(std::move(s)); }
inline void note(Explanation& e, const char* name) {
  if (std::find(e.notes.begin(), e.notes.end(), name) == e.notes.end()) e.notes.emplace_back(name);
}
inline void pytorch(Explanation& e, const char* file, const char* function) { e.pytorch.push_back({file, function}); }

// [SECTION] The explainers, by family of floors -----------------------------------------

// explain_python.cpp: floors 1 and 2, the user's Python and the binding
Explanation python_statement(const At& a);  // a line of the user's code (a floor-1 root)
Explanation python_function(const At& a);   // a function of the descent package
Explanation binding_op(const At& a);        // the binding's call of an op: the overload, the wrapped numbers
Explanation binding_tensor(const At& a);    // descent.tensor(...): Python data made a tensor
Explanation binding_backward(const At& a);  // _run_backward: into the engine
Explanation binding_index(const At& a);     // x[i] and x[i] = v: the index read in C, its ops
Explanation binding_read(const At& a);      // a read of a device tensor's values, which waits

// explain_dispatch.cpp: floors 3 and 4, the dispatcher and autograd
Explanation dispatch_span(const At& a);      // a dispatch or a redispatch: the key set, what fell through, the kernel
Explanation autograd_kernel(const At& a);    // an Autograd kernel: the node recorded, or why none
Explanation autograd_evaluate(const At& a);  // backward running a node

// explain_kernels.cpp: floors 5 and 6, the kernels and the allocators
Explanation kernel_span(const At& a);      // a kernel: checks, promotion, the loop chosen
Explanation parallel_span(const At& a);    // a parallel_for: the loop split over threads
Explanation cpu_alloc(const At& a);        // the CPU allocator
Explanation caching_alloc(const At& a);    // the caching allocator: a hit, a split, a new segment
Explanation allocator_other(const At& a);  // a free, a raw allocation, an empty_cache

// explain_device.cpp: floors 7 to 9, the streams, the launch and the device
Explanation streams_span(const At& a);  // an enqueue, a copy, a wait on a stream
Explanation launch_span(const At& a);   // a kernel launch: the grid
Explanation device_span(const At& a);   // work on the device's own clock

}  // namespace descent::ui::explaining
