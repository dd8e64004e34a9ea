// The models of a trace, built in one place. See models.h.
#include "ui/models.h"

#include <unordered_map>

namespace descent::ui {

TraceModels build_models(const trace::Trace& t, bool fold_helpers) {
  TraceModels m;
  m.folded = fold_helpers;
  m.story = build_story(t, fold_helpers);
  m.streams = build_streams(t);
  m.timeline = TimelineIndex::build(t, m.story.parent_index);
  m.flows = flow_indices(t);
  m.graph = build_graph(t);
  return m;
}

std::vector<std::pair<size_t, size_t>> flow_indices(const trace::Trace& t) {
  std::vector<std::pair<size_t, size_t>> out;
  if (t.flows.empty()) return out;
  std::unordered_map<uint64_t, size_t> by_id;
  by_id.reserve(t.spans.size());
  for (size_t i = 0; i < t.spans.size(); ++i) by_id.emplace(t.spans[i].id, i);
  for (const trace::Flow& f : t.flows) {
    const auto a = by_id.find(f.from), b = by_id.find(f.to);
    if (a != by_id.end() && b != by_id.end()) out.emplace_back(a->second, b->second);
  }
  return out;
}

}  // namespace descent::ui
