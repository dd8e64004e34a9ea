// One trace of several ranks: Note [Merging the ranks' traces] (trace.h).
#include <algorithm>
#include <map>

#include "tracer/trace.h"

namespace descent::trace {

namespace {

// A collective as the backends name it on their rows: an MPI call, on the worker's row or its caller's
// ("MPI_Allreduce"), or NCCL's launch ("cudaLaunchKernel  kernel=ncclAllReduce").
std::string collective_name(const Span& s) {
  if (s.name.rfind("MPI_", 0) == 0) return s.name;
  if (s.floor == Floor::Launch) {
    const ArgValue* k = s.find_arg("kernel");
    if (k && std::holds_alternative<std::string>(*k) && std::get<std::string>(*k).rfind("nccl", 0) == 0)
      return std::get<std::string>(*k);
  }
  return {};
}

}  // namespace

Trace merge_ranks(const std::vector<Trace>& ranks) {
  Trace out;
  if (ranks.empty()) return out;
  out.span_cost_ns = ranks[0].span_cost_ns;
  uint64_t id_base = 0;
  uint32_t thread_base = 0;
  // Per collective name, per rank, the merged ids of its calls in start order.
  std::map<std::string, std::vector<std::vector<std::pair<int64_t, uint64_t>>>> calls;
  for (size_t r = 0; r < ranks.size(); ++r) {
    const Trace& t = ranks[r];
    const std::string rank = "rank " + std::to_string(r);
    uint64_t max_id = 0;
    uint32_t threads = 0;
    for (const Span& s : t.spans) {
      Span m = s;
      m.id += id_base;
      if (m.parent != 0) m.parent += id_base;
      m.thread += thread_base;
      max_id = std::max(max_id, s.id);
      threads = std::max(threads, s.thread + 1);
      if (const std::string c = collective_name(s); !c.empty()) {
        auto& per_rank = calls[c];
        per_rank.resize(ranks.size());
        per_rank[r].push_back({s.start_ns, m.id});
      }
      out.spans.push_back(std::move(m));
    }
    for (const Flow& f : t.flows) out.flows.push_back({f.from + id_base, f.to + id_base, f.name});
    // Each row named by its rank: "rank 1: thread 0", "rank 1: cuda:0 stream 7".
    for (uint32_t k = 0; k < threads; ++k) {
      const std::string old_key = "thread." + std::to_string(k), new_key = "thread." + std::to_string(k + thread_base);
      const auto name = t.metadata.find(old_key);
      out.metadata[new_key] = rank + ": " + (name != t.metadata.end() ? name->second : "thread " + std::to_string(k));
      const auto device = t.metadata.find(old_key + ".device");
      if (device != t.metadata.end()) out.metadata[new_key + ".device"] = device->second;
      out.metadata[new_key + ".rank"] = std::to_string(r);
    }
    // Rank 0's metadata as it is; another rank's under "rank<r>." (its dropped spans, its device's clock).
    for (const auto& [key, value] : t.metadata) {
      if (key.rfind("thread.", 0) == 0) continue;
      if (r == 0)
        out.metadata.emplace(key, value);
      else if (key.rfind("fingerprint.", 0) != 0)
        out.metadata.emplace("rank" + std::to_string(r) + "." + key, value);
    }
    id_base += max_id;
    thread_base += threads;
  }
  out.metadata["ranks"] = std::to_string(ranks.size());
  // The k-th call of a collective on each rank is one collective: an arrow from rank r's to rank r + 1's.
  for (auto& [name, per_rank] : calls) {
    for (auto& v : per_rank) std::sort(v.begin(), v.end());
    for (size_t r = 0; r + 1 < per_rank.size(); ++r) {
      const size_t n = std::min(per_rank[r].size(), per_rank[r + 1].size());
      for (size_t k = 0; k < n; ++k)
        out.flows.push_back({per_rank[r][k].second, per_rank[r + 1][k].second, "collective"});
    }
  }
  std::sort(out.spans.begin(), out.spans.end(), span_order);
  return out;
}

}  // namespace descent::trace
