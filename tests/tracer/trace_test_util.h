// What the tracer's tests and the app's model tests share: a span found by
// name, and a span built field by field.
#pragma once

#include <string_view>
#include <utility>
#include <vector>

#include "tracer/trace.h"

namespace descent::trace::test_util {

// The first span named `name`, or nullptr.
inline const Span* find(const Trace& t, std::string_view name) {
  for (const Span& s : t.spans) {
    if (s.name == name) return &s;
  }
  return nullptr;
}

inline Span make_span(uint64_t id, uint64_t parent, Floor floor, const char* name, int64_t start, int64_t end,
                      uint32_t thread = 0, std::vector<SpanArg> args = {}) {
  Span s;
  s.id = id;
  s.parent = parent;
  s.floor = floor;
  s.name = name;
  s.start_ns = start;
  s.end_ns = end;
  s.thread = thread;
  s.args = std::move(args);
  return s;
}

}  // namespace descent::trace::test_util
