// The tracer's flows between threads: the list add_flow appends to, and the
// arrows of one recording resolved into span ids when it is collected (Note
// [Flows between threads] in tracer.h).
#include "tracer/flows.h"

#include <cstdint>
#include <mutex>
#include <new>
#include <vector>

#include "tracer/thread_buffer.h"

namespace descent::trace::detail {

namespace {

// One add_flow() call, as recorded (Note [Flows between threads]).
struct PendingFlow {
  SpanRef from, to;
  const char* name;
};
struct FlowList {
  std::mutex mutex;
  std::vector<PendingFlow> flows;  // this recording's and, until the next start(), older ones
};
FlowList& flow_list() {
  static FlowList* f = new FlowList;  // never destroyed: threads may outlive statics
  return *f;
}

}  // namespace

void clear_flows() {
  std::lock_guard lock(flow_list().mutex);
  flow_list().flows.clear();
}

void queue_flow(const SpanRef& from, const SpanRef& to, const char* name) {
  std::lock_guard lock(flow_list().mutex);
  try {
    flow_list().flows.push_back({from, to, name});
  } catch (const std::bad_alloc&) {  // a missing arrow, never a failed program
  }
}

// Appends to t.flows the flows of recording `epoch` whose two spans are both in t.
void resolve_flows(Trace& t, const std::vector<BufferIds>& ids, uint64_t epoch) {
  std::vector<PendingFlow> flows;
  {
    std::lock_guard lock(flow_list().mutex);
    flows = flow_list().flows;
  }
  if (flows.empty()) return;
  const SpanHandle tag = handle_tag(epoch);
  const auto id_of = [&](const SpanRef& r) -> uint64_t {  // 0: not in this recording
    if (handle_tag_of(r.span) != tag) return 0;
    for (const BufferIds& b : ids) {
      if (b.buffer == r.buffer) return handle_index(r.span) < b.count ? b.first + handle_index(r.span) : 0;
    }
    return 0;
  };
  const SpanIndex index(t);
  for (const PendingFlow& f : flows) {
    const uint64_t from = id_of(f.from), to = id_of(f.to);
    if (from == 0 || to == 0 || index.find(from) == SIZE_MAX || index.find(to) == SIZE_MAX) continue;
    t.flows.push_back({from, to, f.name ? f.name : ""});
  }
}

}  // namespace descent::trace::detail
