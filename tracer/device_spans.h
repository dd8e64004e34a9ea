// Internal to the tracer: what start(), stop() and snapshot() (tracer.cpp)
// call to keep the device spans of a recording (Note [Device spans] in
// tracer.h). Promises nothing to other code.
#pragma once

#include <cstdint>

#include "tracer/trace.h"

namespace descent::trace::detail {

// Forgets every device span; later ones that began before `start_ns` (a
// worker still finishing the last recording's work) are not kept. start()
// calls it before switching tracing on.
void clear_device_spans(int64_t start_ns);

// Appends to t the device spans that began at or after `since_ns`: ids from
// `next_id` (advanced), rows from `first_thread` in the order (device,
// stream), named in t.metadata, with "device.clock" (and
// "tracer.dropped_device_spans" when some were not kept).
void collect_device_spans(Trace& t, uint32_t first_thread, uint64_t& next_id, int64_t since_ns);

// Appends to t.flows an "ac2g" flow from each launch span to the device
// spans of its correlation id (both in t).
void join_device_flows(Trace& t);

}  // namespace descent::trace::detail
