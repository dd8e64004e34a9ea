// What the caching allocator reports: PyTorch's statistics (memory_stats),
// the snapshot in memory_snapshot()'s words, the allocation history, the
// settings, the invariant checks the tests use, and the host arena the
// simulated device and the tests allocate from. The policy itself is in
// caching_allocator.cpp (Note [Caching allocator policy]).
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "floors/allocator/caching_allocator_impl.h"

namespace descent::alloc {

const char* action_name(TraceEntry::Action a) {
  switch (a) {
    case TraceEntry::Action::Alloc:
      return "alloc";
    case TraceEntry::Action::FreeRequested:
      return "free_requested";
    case TraceEntry::Action::FreeCompleted:
      return "free_completed";
    case TraceEntry::Action::SegmentAlloc:
      return "segment_alloc";
    case TraceEntry::Action::SegmentFree:
      return "segment_free";
    case TraceEntry::Action::Oom:
      return "oom";
  }
  return "?";
}

CachingStats CachingAllocator::Impl::summary_locked() const {
  CachingStats s;
  s.allocated_bytes = stats.allocated_bytes[kAggregateStat].current;
  s.reserved_bytes = stats.reserved_bytes[kAggregateStat].current;
  s.peak_allocated_bytes = stats.allocated_bytes[kAggregateStat].peak;
  s.peak_reserved_bytes = stats.reserved_bytes[kAggregateStat].peak;
  s.num_allocs = stats.allocation[kAggregateStat].allocated;
  s.num_cache_hits = num_cache_hits;
  s.num_cache_misses = num_cache_misses;
  s.num_splits = num_splits;
  s.num_merges = num_merges;
  s.num_raw_mallocs = stats.num_device_alloc;
  s.num_raw_frees = stats.num_device_free;
  s.num_ooms = stats.num_ooms;
  s.num_free_retries = num_free_retries;
  return s;
}

// [SECTION] Settings, snapshot and checks ---------------------------------------------

CachingStats CachingAllocator::stats() const {
  std::lock_guard<std::mutex> lock(impl_->mu);
  return impl_->summary_locked();
}

DeviceStats CachingAllocator::device_stats() const {
  std::lock_guard<std::mutex> lock(impl_->mu);
  return impl_->stats;
}

MemoryStats CachingAllocator::memory_stats() const {
  const DeviceStats s = device_stats();
  MemoryStats out;
  auto add_stat = [&out](const std::string& prefix, const Stat& st) {
    out.emplace_back(prefix + ".allocated", st.allocated);
    out.emplace_back(prefix + ".current", st.current);
    out.emplace_back(prefix + ".freed", st.freed);
    out.emplace_back(prefix + ".peak", st.peak);
  };
  auto add_array = [&add_stat](const std::string& name, const StatArray& a) {
    add_stat(name + ".all", a[kAggregateStat]);
    add_stat(name + ".large_pool", a[kLargePoolStat]);
    add_stat(name + ".small_pool", a[kSmallPoolStat]);
  };
  add_array("active", s.active);
  add_array("active_bytes", s.active_bytes);
  add_array("allocated_bytes", s.allocated_bytes);
  add_array("allocation", s.allocation);
  add_array("inactive_split", s.inactive_split);
  add_array("inactive_split_bytes", s.inactive_split_bytes);
  out.emplace_back("max_split_size", s.max_split_size);
  out.emplace_back("num_alloc_retries", s.num_alloc_retries);
  out.emplace_back("num_device_alloc", s.num_device_alloc);
  out.emplace_back("num_device_free", s.num_device_free);
  out.emplace_back("num_ooms", s.num_ooms);
  out.emplace_back("num_sync_all_streams", s.num_sync_all_streams);
  add_stat("oversize_allocations", s.oversize_allocations);
  add_stat("oversize_segments", s.oversize_segments);
  add_array("requested_bytes", s.requested_bytes);
  add_array("reserved_bytes", s.reserved_bytes);
  add_array("segment", s.segment);
  std::sort(out.begin(), out.end());  // PyTorch's order; the lines above are already in it
  return out;
}

void CachingAllocator::reset_peak() {
  std::lock_guard<std::mutex> lock(impl_->mu);
  DeviceStats& s = impl_->stats;
  for (StatArray* a : {&s.allocation, &s.segment, &s.active, &s.inactive_split, &s.allocated_bytes, &s.reserved_bytes,
                       &s.active_bytes, &s.inactive_split_bytes, &s.requested_bytes})
    for (Stat& st : *a) st.peak = st.current;
  s.oversize_allocations.peak = s.oversize_allocations.current;
  s.oversize_segments.peak = s.oversize_segments.current;
}

void CachingAllocator::reset_accumulated() {
  std::lock_guard<std::mutex> lock(impl_->mu);
  DeviceStats& s = impl_->stats;
  for (StatArray* a : {&s.allocation, &s.segment, &s.active, &s.inactive_split, &s.allocated_bytes, &s.reserved_bytes,
                       &s.active_bytes, &s.inactive_split_bytes, &s.requested_bytes})
    for (Stat& st : *a) st.allocated = st.freed = 0;
  for (Stat* st : {&s.oversize_allocations, &s.oversize_segments}) st->allocated = st->freed = 0;
  s.num_alloc_retries = s.num_ooms = s.num_sync_all_streams = s.num_device_alloc = s.num_device_free = 0;
}

void CachingAllocator::set_max_split_size(size_t bytes) {
  if (bytes <= kLargeBuffer)
    throw std::invalid_argument("set_max_split_size: " + format_size(bytes) + " is too small, must be more than " +
                                format_size(kLargeBuffer));
  std::lock_guard<std::mutex> lock(impl_->mu);
  if (!impl_->segments.empty())
    throw std::logic_error(std::string("set_max_split_size: ") + impl_->backend.name() +
                           "'s caching allocator still holds " + std::to_string(impl_->segments.size()) +
                           " segment(s); free every tensor and call empty_cache() first");
  impl_->max_split_size = bytes;
  impl_->stats.max_split_size = static_cast<int64_t>(bytes);
}

size_t CachingAllocator::max_split_size() const {
  std::lock_guard<std::mutex> lock(impl_->mu);
  return impl_->max_split_size;
}

void CachingAllocator::record_memory_history(bool enabled, size_t max_entries) {
  if (enabled && max_entries == 0) throw std::invalid_argument("record_memory_history: max_entries must be > 0");
  std::lock_guard<std::mutex> lock(impl_->mu);
  Impl& m = *impl_;
  std::vector<TraceEntry> kept;
  if (enabled && m.history_on) {  // keep the newest entries that fit
    for (size_t i = 0; i < m.history.size(); ++i) kept.push_back(m.history[(m.history_next + i) % m.history.size()]);
    if (kept.size() > max_entries) kept.erase(kept.begin(), kept.end() - static_cast<ptrdiff_t>(max_entries));
  }
  m.history = std::move(kept);
  m.history_next = 0;
  m.history_on = enabled;
  m.history_max = enabled ? max_entries : kDefaultHistoryEntries;
}

std::vector<TraceEntry> CachingAllocator::memory_history() const {
  std::lock_guard<std::mutex> lock(impl_->mu);
  const Impl& m = *impl_;
  std::vector<TraceEntry> out;
  out.reserve(m.history.size());
  for (size_t i = 0; i < m.history.size(); ++i) out.push_back(m.history[(m.history_next + i) % m.history.size()]);
  return out;
}

Snapshot CachingAllocator::snapshot() const {
  Snapshot snap;
  snap.device_traces = memory_history();
  std::lock_guard<std::mutex> lock(impl_->mu);
  for (const auto& [addr, seg] : impl_->segments) {
    SegmentInfo info;
    info.device = impl_->device;
    info.address = addr;
    info.total_size = seg.size;
    info.stream = seg.stream;
    info.segment_type = seg.small ? "small" : "large";
    for (const Block* b = seg.head; b != nullptr; b = b->next) {
      const bool active = b->allocated || b->pending();
      info.blocks.push_back(BlockInfo{b->addr, b->size, b->requested,
                                      b->allocated ? "active_allocated"
                                      : active     ? "active_pending_free"
                                                   : "inactive"});
      if (b->allocated) info.allocated_size += b->size;
      if (active) {
        info.active_size += b->size;
        info.requested_size += b->requested;
      }
    }
    snap.segments.push_back(std::move(info));
  }
  snap.stats = impl_->summary_locked();
  return snap;
}

void CachingAllocator::check_invariants() const {
  std::lock_guard<std::mutex> lock(impl_->mu);
  const Impl& m = *impl_;
  auto fail = [](const std::string& what) { throw std::logic_error("descent caching allocator: " + what); };
  if (m.num_unknown_frees > 0)
    fail(std::to_string(m.num_unknown_frees) + " free(s) of pointers this allocator did not hand out");

  // What the blocks say, per pool (0 small, 1 large), to compare with the statistics.
  struct Sums {
    int64_t segments = 0, reserved = 0, allocs = 0, allocated = 0, active = 0, active_bytes = 0, requested = 0,
            inactive_split = 0, inactive_split_bytes = 0;
  } sums[2];
  size_t num_free = 0, num_live = 0, num_waits = 0;
  for (const auto& [addr, seg] : m.segments) {
    Sums& s = sums[seg.small ? 0 : 1];
    s.segments++;
    s.reserved += static_cast<int64_t>(seg.size);
    uintptr_t expect = addr;
    const Block* prev = nullptr;
    for (const Block* b = seg.head; b != nullptr; prev = b, b = b->next) {
      std::string where = "block at offset " + std::to_string(b->addr - addr);
      const auto size = static_cast<int64_t>(b->size);
      if (b->addr != expect || b->prev != prev) fail(where + " does not follow its neighbour");
      if (b->size == 0 || b->size % kMinBlockSize != 0) fail(where + " has a bad size");
      if (b->small != seg.small || b->stream != seg.stream) fail(where + " disagrees with its segment");
      const bool listed = m.free_list(b->small).count(const_cast<Block*>(b)) > 0;
      if (listed != b->listed || (listed && *b->where != b)) fail(where + " is listed but does not know its place");
      if (b->allocated || b->pending()) {
        if (listed) fail(where + " is active but on a free list");
        s.active++;
        s.active_bytes += size;
        s.requested += static_cast<int64_t>(b->requested);
      }
      if (b->allocated) {
        if (b->owner != this) fail(where + " is allocated but does not name its allocator");
        if (b->event_count != 0) fail(where + " is allocated but waits for events");
        s.allocs++;
        s.allocated += size;
        num_live++;
      } else if (b->pending()) {
        if (!b->stream_uses.empty()) fail(where + " waits for events but still lists stream uses");
        num_waits += static_cast<size_t>(b->event_count);
      } else {
        if (prev != nullptr && !prev->allocated && !prev->pending()) fail(where + " is free next to a free block");
        if (!listed) fail(where + " is free but not listed");
        if (!b->stream_uses.empty()) fail(where + " is free but lists stream uses");
        if (b->is_split()) {
          s.inactive_split++;
          s.inactive_split_bytes += size;
        }
        num_free++;
      }
      expect = b->addr + b->size;
    }
    if (expect != addr + seg.size) fail("blocks do not cover their segment exactly");
  }
  size_t num_events = 0;
  for (const auto& [stream, queue] : m.events) num_events += queue.size();
  if (num_events != num_waits) fail("pending events and blocks waiting for them disagree");
  if (num_live != m.num_live) fail("the count of live blocks and the blocks disagree");
  if (num_free != m.small_free.size() + m.large_free.size()) fail("free lists and blocks disagree");
  // Impl::take_node writes list nodes in place: the lists must still be in order.
  for (const FreeList* list : {&m.small_free, &m.large_free})
    if (!std::is_sorted(list->begin(), list->end(), BlockOrder{})) fail("a free list is out of order");

  const DeviceStats& st = m.stats;
  auto expect_stat = [&](const char* name, const StatArray& a, int64_t Sums::*field) {
    const int64_t small = sums[0].*field, large = sums[1].*field;
    if (a[kSmallPoolStat].current != small || a[kLargePoolStat].current != large ||
        a[kAggregateStat].current != small + large)
      fail(std::string(name) + ".current does not match the blocks (" + std::to_string(a[kAggregateStat].current) +
           " vs " + std::to_string(small + large) + ")");
  };
  expect_stat("segment", st.segment, &Sums::segments);
  expect_stat("reserved_bytes", st.reserved_bytes, &Sums::reserved);
  expect_stat("allocation", st.allocation, &Sums::allocs);
  expect_stat("allocated_bytes", st.allocated_bytes, &Sums::allocated);
  expect_stat("active", st.active, &Sums::active);
  expect_stat("active_bytes", st.active_bytes, &Sums::active_bytes);
  expect_stat("requested_bytes", st.requested_bytes, &Sums::requested);
  expect_stat("inactive_split", st.inactive_split, &Sums::inactive_split);
  expect_stat("inactive_split_bytes", st.inactive_split_bytes, &Sums::inactive_split_bytes);
}

// [SECTION] HostArenaBackend -----------------------------------------------------

HostArenaBackend::HostArenaBackend(size_t capacity_bytes, const char* name) : capacity_(capacity_bytes), name_(name) {}

void* HostArenaBackend::raw_malloc(size_t nbytes) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (nbytes > capacity_ - in_use_) return nullptr;  // in_use_ <= capacity_ always: no underflow
    in_use_ += nbytes;
  }
  // std::aligned_alloc wants a size that is a non-zero multiple of the alignment.
  void* ptr = std::aligned_alloc(kAlignment, round_up(nbytes == 0 ? 1 : nbytes, kAlignment));
  if (ptr == nullptr) {
    std::lock_guard<std::mutex> lock(mu_);
    in_use_ -= nbytes;
  }
  return ptr;
}

void HostArenaBackend::raw_free(void* ptr, size_t nbytes) {
  if (ptr == nullptr) return;
  std::free(ptr);
  std::lock_guard<std::mutex> lock(mu_);
  in_use_ -= nbytes;
}

size_t HostArenaBackend::in_use() const {
  std::lock_guard<std::mutex> lock(mu_);
  return in_use_;
}

}  // namespace descent::alloc
