// The memory panel's model. See memory_model.h and Note [Replaying the allocator's history].
#include "ui/memory_model.h"

#include <algorithm>
#include <cstdio>
#include <tuple>

#include "floors/allocator/allocator.h"

namespace descent::ui {

const char* block_state_name(BlockState s) {
  switch (s) {
    case BlockState::Allocated:
      return "active_allocated";
    case BlockState::PendingFree:
      return "active_pending_free";
    case BlockState::Free:
      return "inactive";
  }
  return "inactive";
}

BlockState block_state_from_name(const std::string& name) {
  if (name == "active_allocated") return BlockState::Allocated;
  if (name == "active_pending_free") return BlockState::PendingFree;
  return BlockState::Free;
}

namespace {
constexpr const char* kActionNames[] = {
    "alloc", "free_requested", "free_completed", "segment_alloc", "segment_free", "oom", "?"};
static_assert(sizeof kActionNames / sizeof kActionNames[0] == size_t(MemEntry::Action::Unknown) + 1);
}  // namespace

const char* entry_action_name(MemEntry::Action a) { return kActionNames[size_t(a)]; }

MemEntry::Action entry_action_from_name(const std::string& name) {
  for (size_t k = 0; k < size_t(MemEntry::Action::Unknown); ++k)
    if (name == kActionNames[k]) return MemEntry::Action(k);
  return MemEntry::Action::Unknown;
}

// [SECTION] Replaying the history ------------------------------------------------------

namespace {

// The segment holding `addr`, or segments.end().
std::vector<MemSegment>::iterator segment_of(std::vector<MemSegment>& segments, uint64_t addr) {
  auto it = std::upper_bound(segments.begin(), segments.end(), addr,
                             [](uint64_t a, const MemSegment& s) { return a < s.address; });
  if (it == segments.begin()) return segments.end();
  --it;
  return addr < it->address + it->size ? it : segments.end();
}

// The block of `s` starting at `addr`, or s.blocks.end().
std::vector<MemBlock>::iterator block_at(MemSegment& s, uint64_t addr) {
  return std::find_if(s.blocks.begin(), s.blocks.end(), [&](const MemBlock& b) { return b.address == addr; });
}

uint64_t rounded(uint64_t n) {  // the allocator's round_size
  const uint64_t m = alloc::kMinBlockSize;
  return n < m ? m : (n + m - 1) / m * m;
}

}  // namespace

bool apply_entry(std::vector<MemSegment>& segments, const MemEntry& e) {
  using A = MemEntry::Action;
  switch (e.action) {
    case A::SegmentAlloc: {
      if (segment_of(segments, e.addr) != segments.end()) return false;
      MemSegment s;
      s.address = e.addr;
      s.size = e.size;
      s.small = e.size == alloc::kSmallBuffer;
      s.stream = e.stream;
      s.blocks.push_back(MemBlock{e.addr, e.size, 0, BlockState::Free});
      auto at = std::lower_bound(segments.begin(), segments.end(), e.addr,
                                 [](const MemSegment& x, uint64_t a) { return x.address < a; });
      segments.insert(at, std::move(s));
      return true;
    }
    case A::SegmentFree: {
      auto s = segment_of(segments, e.addr);
      if (s == segments.end() || s->address != e.addr) return false;
      segments.erase(s);
      return true;
    }
    case A::Alloc: {
      auto s = segment_of(segments, e.addr);
      if (s == segments.end()) return false;
      auto b = block_at(*s, e.addr);
      const uint64_t want = rounded(e.size);
      if (b == s->blocks.end() || b->state != BlockState::Free || b->size < want) return false;
      const uint64_t rest = b->size - want;
      const bool split = s->small ? rest >= alloc::kMinBlockSize : rest > alloc::kSmallSize;
      b->state = BlockState::Allocated;
      b->requested = e.size;
      if (split) {
        b->size = want;
        s->blocks.insert(b + 1, MemBlock{e.addr + want, rest, 0, BlockState::Free});
      }
      return true;
    }
    case A::FreeRequested: {
      auto s = segment_of(segments, e.addr);
      if (s == segments.end()) return false;
      auto b = block_at(*s, e.addr);
      if (b == s->blocks.end() || b->state != BlockState::Allocated) return false;
      b->state = BlockState::PendingFree;
      return true;
    }
    case A::FreeCompleted: {
      auto s = segment_of(segments, e.addr);
      if (s == segments.end()) return false;
      auto b = block_at(*s, e.addr);
      if (b == s->blocks.end() || b->state == BlockState::Free) return false;
      b->state = BlockState::Free;
      b->requested = 0;
      // Merge with free neighbours: the lower block takes the higher one's bytes.
      if (b + 1 != s->blocks.end() && (b + 1)->state == BlockState::Free) {
        b->size += (b + 1)->size;
        b = s->blocks.erase(b + 1) - 1;
      }
      if (b != s->blocks.begin() && (b - 1)->state == BlockState::Free) {
        (b - 1)->size += b->size;
        s->blocks.erase(b);
      }
      return true;
    }
    case A::Oom:
      return true;
    case A::Unknown:
      return false;
  }
  return false;
}

MemoryAt replay(const DeviceMemory& d, int64_t t_ns) {
  MemoryAt m;
  m.segments = d.before;
  for (const MemEntry& e : d.history) {
    if (e.time_ns > t_ns) break;
    if (!apply_entry(m.segments, e) && m.problem.empty()) {
      char buf[160];
      std::snprintf(buf, sizeof buf, "entry %zu (%s at 0x%llx, %llu B) does not fit the blocks replayed so far",
                    m.replayed, entry_action_name(e.action), static_cast<unsigned long long>(e.addr),
                    static_cast<unsigned long long>(e.size));
      m.problem = buf;
    }
    m.replayed++;
  }
  return m;
}

bool same_memory(const std::vector<MemSegment>& a, const std::vector<MemSegment>& b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i) {
    const MemSegment &x = a[i], &y = b[i];
    if (x.address != y.address || x.size != y.size || x.small != y.small || x.blocks.size() != y.blocks.size())
      return false;
    for (size_t k = 0; k < x.blocks.size(); ++k) {
      const MemBlock &p = x.blocks[k], &q = y.blocks[k];
      if (p.address != q.address || p.size != q.size || p.state != q.state) return false;
    }
  }
  return true;
}

std::pair<size_t, uint64_t> entry_in_span(const DeviceMemory& d, int64_t start_ns, int64_t end_ns) {
  using A = MemEntry::Action;
  auto first = std::lower_bound(d.history.begin(), d.history.end(), start_ns,
                                [](const MemEntry& e, int64_t t) { return e.time_ns < t; });
  for (auto it = first; it != d.history.end() && it->time_ns <= end_ns; ++it) {
    if (it->action == A::Alloc || it->action == A::FreeRequested || it->action == A::FreeCompleted)
      return {size_t(it - d.history.begin()), it->addr};
  }
  return {SIZE_MAX, 0};
}

size_t allocator_span_at(const Story& s, size_t step) {
  if (step >= s.steps.size()) return SIZE_MAX;
  const auto& spans = s.trace->spans;
  size_t i = s.steps[step].span;
  if (building_floor(spans[i].floor) != 6) {
    const FloorView v = floors_at(s, step)[6];
    if (v.state != FloorState::Active) return SIZE_MAX;
    i = v.span;
  }
  while (s.parent_index[i] != SIZE_MAX && building_floor(spans[s.parent_index[i]].floor) == 6) i = s.parent_index[i];
  return i;
}

DeviceMemoryView device_memory_at(const DeviceMemory& d, const Story& s, size_t step, int64_t now_ns) {
  DeviceMemoryView v;
  v.at = replay(d, now_ns);
  const size_t span = allocator_span_at(s, step);
  if (span != SIZE_MAX) {
    const trace::Span& sp = s.trace->spans[span];
    std::tie(v.entry, v.highlight) = entry_in_span(d, sp.start_ns, sp.end_ns);
  }
  return v;
}

// [SECTION] Drawing helpers -----------------------------------------------------------

std::vector<std::pair<float, float>> block_extents(const MemSegment& s, float width, float min_px) {
  std::vector<std::pair<float, float>> out(s.blocks.size());
  if (s.blocks.empty() || s.size == 0) return out;
  min_px = std::min(min_px, width / static_cast<float>(s.blocks.size()));
  // Blocks narrower than min_px get min_px; the others share what is left in proportion.
  std::vector<float> w(s.blocks.size());
  std::vector<bool> pinned(s.blocks.size(), false);
  for (int pass = 0; pass < 4; ++pass) {  // pinning one block can push another under min_px
    float room = width;
    double rest_bytes = 0;
    for (size_t k = 0; k < s.blocks.size(); ++k) {
      if (pinned[k])
        room -= min_px;
      else
        rest_bytes += static_cast<double>(s.blocks[k].size);
    }
    bool changed = false;
    for (size_t k = 0; k < s.blocks.size(); ++k) {
      if (pinned[k]) {
        w[k] = min_px;
        continue;
      }
      w[k] = rest_bytes > 0 ? static_cast<float>(room * static_cast<double>(s.blocks[k].size) / rest_bytes) : 0;
      if (w[k] < min_px) {
        pinned[k] = true;
        changed = true;
      }
    }
    if (!changed) break;
  }
  float x = 0;
  for (size_t k = 0; k < s.blocks.size(); ++k) {
    out[k] = {x, x + std::max(w[k], pinned[k] ? min_px : 0.0f)};
    x = out[k].second;
  }
  return out;
}

}  // namespace descent::ui
