// The memory panel's model (ui/memory_model.h) against a real caching
// allocator: replaying its history over its snapshot before must give its
// snapshot after, at every entry (Note [Replaying the allocator's history]).
#include "ui/memory_model.h"

#include <gtest/gtest.h>

#include "floors/allocator/allocator.h"

namespace descent::ui {
namespace {

std::vector<MemSegment> segments_of(const alloc::Snapshot& s) {
  std::vector<MemSegment> out;
  for (const alloc::SegmentInfo& si : s.segments) {
    MemSegment m{si.address, si.total_size, si.segment_type == "small", si.stream, {}};
    for (const alloc::BlockInfo& b : si.blocks)
      m.blocks.push_back(MemBlock{b.address, b.size, b.requested_size, block_state_from_name(b.state)});
    out.push_back(std::move(m));
  }
  return out;
}

std::vector<MemEntry> entries_of(const std::vector<alloc::TraceEntry>& h) {
  std::vector<MemEntry> out;
  for (const alloc::TraceEntry& e : h)
    out.push_back(MemEntry{entry_action_from_name(alloc::action_name(e.action)), e.addr, e.size, e.stream, e.time_ns});
  return out;
}

// Replays the history one entry at a time, checking each step against the
// allocator's own snapshot taken right after that entry.
struct Recorder {
  alloc::HostArenaBackend backend{64 << 20, "test"};
  alloc::CachingAllocator a{backend};
  DeviceMemory d;
  std::vector<std::vector<MemSegment>> after_each;  // the allocator's picture after each step

  void begin() {
    d.before = segments_of(a.snapshot());
    a.record_memory_history(true);
  }
  void step() { after_each.push_back(segments_of(a.snapshot())); }
  void end() {
    d.history = entries_of(a.memory_history());
    d.after = segments_of(a.snapshot());
    a.record_memory_history(false);
  }
};

TEST(MemoryModel, ReplayingTheWholeHistoryGivesTheSnapshotAfter) {
  Recorder r;
  DataPtr warm = r.a.allocate(3000);  // a segment before the recording starts
  r.begin();
  DataPtr x = r.a.allocate(4000);       // a hit in the cached segment, split
  DataPtr big = r.a.allocate(3 << 20);  // the large pool: a 20 MiB segment, split
  x.release();                          // free, merged with the free rest
  DataPtr z = r.a.allocate(4000);       // the cached block again
  big.release();
  r.a.empty_cache();  // the large segment goes back
  r.end();
  ASSERT_FALSE(r.d.history.empty());
  const MemoryAt all = replay(r.d, INT64_MAX);
  EXPECT_EQ(all.problem, "");
  EXPECT_EQ(all.replayed, r.d.history.size());
  EXPECT_TRUE(same_memory(all.segments, r.d.after));
  const MemoryAt none = replay(r.d, r.d.history.front().time_ns - 1);
  EXPECT_EQ(none.replayed, 0u);
  EXPECT_TRUE(same_memory(none.segments, r.d.before));
  // The large segment existed between its segment_alloc and segment_free.
  size_t seg_alloc = SIZE_MAX;
  for (size_t k = 0; k < r.d.history.size(); ++k)
    if (r.d.history[k].action == MemEntry::Action::SegmentAlloc) seg_alloc = k;
  ASSERT_NE(seg_alloc, SIZE_MAX);
  const MemoryAt mid = replay(r.d, r.d.history[seg_alloc + 1].time_ns);
  ASSERT_EQ(mid.segments.size(), 2u);
  EXPECT_FALSE(mid.segments[0].small == mid.segments[1].small);
  z.release();
  warm.release();
}

TEST(MemoryModel, EachEntryMatchesTheAllocatorAtThatMoment) {
  Recorder r;
  r.begin();
  std::vector<DataPtr> live;
  for (size_t n : {100, 5000, 700, 1 << 20, 300, 12 << 20}) {
    live.push_back(r.a.allocate(n));
    r.step();
  }
  for (size_t k : {1, 3, 0, 5}) {
    live[k].release();
    r.step();
  }
  r.end();
  // After step i the history has some entries; replaying exactly those must give the picture then.
  std::vector<MemSegment> segs = r.d.before;
  size_t e = 0;
  const auto h = r.a.memory_history();  // off now: empty
  EXPECT_TRUE(h.empty());
  for (size_t i = 0; i < r.after_each.size(); ++i) {
    // Apply entries until the picture matches this step's (each step adds one to three entries).
    size_t applied = 0;
    while (!same_memory(segs, r.after_each[i]) && e < r.d.history.size()) {
      ASSERT_TRUE(apply_entry(segs, r.d.history[e])) << "entry " << e;
      ++e;
      ++applied;
    }
    EXPECT_TRUE(same_memory(segs, r.after_each[i])) << "step " << i;
    EXPECT_GE(applied, 1u) << "step " << i;
  }
  for (DataPtr& p : live) p.release();
}

TEST(MemoryModel, AFreeWaitingForAnotherStreamIsPendingUntilItCompletes) {
  Recorder r;
  r.begin();
  DataPtr p = r.a.allocate(2048);
  r.a.record_stream(p, 1);
  const uint64_t addr = reinterpret_cast<uint64_t>(p.ptr);
  p.release();                   // free_requested: waits for stream 1's event
  DataPtr q = r.a.allocate(64);  // processes the events: free_completed
  r.end();
  size_t requested = SIZE_MAX;
  for (size_t k = 0; k < r.d.history.size(); ++k)
    if (r.d.history[k].action == MemEntry::Action::FreeRequested) requested = k;
  ASSERT_NE(requested, SIZE_MAX);
  ASSERT_EQ(r.d.history[requested + 1].action, MemEntry::Action::FreeCompleted);
  // Just after the request, before its completion:
  DeviceMemory cut = r.d;
  cut.history.resize(requested + 1);
  const MemoryAt then = replay(cut, INT64_MAX);
  ASSERT_EQ(then.segments.size(), 1u);
  EXPECT_EQ(then.segments[0].blocks[0].address, addr);
  EXPECT_EQ(then.segments[0].blocks[0].state, BlockState::PendingFree);
  EXPECT_TRUE(same_memory(replay(r.d, INT64_MAX).segments, r.d.after));
  // The span that freed it: its entry is found by time.
  const auto [k, a] = entry_in_span(r.d, r.d.history[requested].time_ns, r.d.history[requested].time_ns);
  EXPECT_EQ(k, requested);
  EXPECT_EQ(a, addr);
  q.release();
}

TEST(MemoryModel, AnEntryThatDoesNotFitIsReportedNotApplied) {
  DeviceMemory d;
  d.history.push_back(MemEntry{MemEntry::Action::Alloc, 0x1000, 512, 0, 5});
  const MemoryAt m = replay(d, 10);
  EXPECT_TRUE(m.segments.empty());
  EXPECT_NE(m.problem.find("alloc at 0x1000"), std::string::npos);
}

TEST(MemoryModel, BlockExtentsKeepSmallBlocksVisibleAndFillTheBar) {
  MemSegment s{0, 2 << 20, true, 0, {}};
  s.blocks = {{0, 4096, 4000, BlockState::Allocated},
              {4096, 4096, 4000, BlockState::Allocated},
              {8192, (2 << 20) - 8192, 0, BlockState::Free}};
  const auto x = block_extents(s, 300, 4);
  ASSERT_EQ(x.size(), 3u);
  EXPECT_FLOAT_EQ(x[0].first, 0);
  EXPECT_FLOAT_EQ(x[0].second - x[0].first, 4);
  EXPECT_FLOAT_EQ(x[1].second - x[1].first, 4);
  EXPECT_FLOAT_EQ(x[2].second, 300);
  EXPECT_FLOAT_EQ(x[1].second, x[2].first);
}

}  // namespace
}  // namespace descent::ui
