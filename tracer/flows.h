// Internal to the tracer: the process-wide list of flows between threads
// (Note [Flows between threads] in tracer.h) that add_flow appends to and
// start(), stop() and snapshot() (tracer.cpp) clear and resolve. Promises
// nothing to other code.
#pragma once

#include <cstdint>
#include <vector>

#include "tracer/trace.h"
#include "tracer/tracer.h"

namespace descent::trace::detail {

// Forgets every flow recorded (start(): the older recordings' go).
void clear_flows();
// Appends one flow to the list, under its lock; add_flow has checked that
// both refs are valid and of the current recording.
void queue_flow(const SpanRef& from, const SpanRef& to, const char* name);

// Where one buffer's spans landed in a collected Trace: ids first .. first + count - 1.
struct BufferIds {
  const void* buffer;
  uint64_t first;
  uint64_t count;
};
// Appends to t.flows the flows of recording `epoch` whose two spans are both in t.
void resolve_flows(Trace& t, const std::vector<BufferIds>& ids, uint64_t epoch);

}  // namespace descent::trace::detail
