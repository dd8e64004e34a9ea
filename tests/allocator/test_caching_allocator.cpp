// Tests for the caching allocator and HostArenaBackend
// (floors/allocator/caching_allocator.cpp), case by case along
// Note [Caching allocator policy], then a randomized run against a model.
//
// [SECTION] Helpers
// [SECTION] Rounding, pools and segments
// [SECTION] Best fit, splitting and coalescing
// [SECTION] Streams and empty_cache
// [SECTION] Out of memory
// [SECTION] Streams and deferred frees
// [SECTION] The out-of-memory path in PyTorch's order
// [SECTION] max_split_size and oversize blocks
// [SECTION] Statistics, snapshot and history
// [SECTION] Edge cases and the backend
// [SECTION] Randomized run against a model, and threads
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <map>
#include <random>
#include <sstream>
#include <string>
#include <thread>
#include <tuple>
#include <vector>

#include "floors/allocator/allocator.h"
#include "tracer/trace.h"

namespace descent::alloc {
namespace {

// [SECTION] Helpers ------------------------------------------------------------------

constexpr size_t kKiB = 1024;        // bytes
constexpr size_t kMiB = 1024 * kKiB;  // bytes
constexpr size_t kGiB = 1024 * kMiB;  // bytes

uintptr_t addr(const DataPtr& p) { return reinterpret_cast<uintptr_t>(p.ptr); }
int64_t i64(size_t n) { return static_cast<int64_t>(n); }

// A segment's blocks as text, e.g. "512 used(100) | 2096640 free".
std::string layout(const SegmentInfo& seg) {
  std::string out;
  for (const BlockInfo& b : seg.blocks) {
    if (!out.empty()) out += " | ";
    out += std::to_string(b.size) +
           (b.state == "active_allocated" ? " used(" + std::to_string(b.requested_size) + ")" : " free");
  }
  return out;
}

// A generous backend and an allocator over it (the backend must outlive it).
struct CachingTest : ::testing::Test {
  HostArenaBackend backend{kGiB, "sim:0"};
  CachingAllocator alloc{backend};
};

// [SECTION] Rounding, pools and segments ------------------------------------------

TEST_F(CachingTest, RoundsUpToMinBlockSize) {
  const size_t cases[][2] = {{1, 512}, {512, 512}, {513, 1024}, {1000, 1024}};
  for (const auto& c : cases) {
    DataPtr p = alloc.allocate(c[0]);
    AllocDecision d = alloc.last_decision();
    EXPECT_EQ(d.requested, c[0]);
    EXPECT_EQ(d.rounded, c[1]);
    EXPECT_EQ(d.block_size, c[1]);
    EXPECT_EQ(p.nbytes, c[0]);
    EXPECT_EQ(addr(p) % kAlignment, 0u);
    p.release();
  }
}

TEST_F(CachingTest, OneMiBIsSmallAndOneMoreByteIsLarge) {
  DataPtr s = alloc.allocate(kSmallSize);
  EXPECT_TRUE(alloc.last_decision().small_pool);
  DataPtr l = alloc.allocate(kSmallSize + 1);
  EXPECT_FALSE(alloc.last_decision().small_pool);
  EXPECT_EQ(alloc.last_decision().rounded, kSmallSize + 512);
  Snapshot snap = alloc.snapshot();
  ASSERT_EQ(snap.segments.size(), 2u);
  for (const SegmentInfo& seg : snap.segments)
    EXPECT_EQ(seg.total_size, seg.segment_type == "small" ? kSmallBuffer : kLargeBuffer);
  l.release();                              // the large segment is now wholly free
  DataPtr s2 = alloc.allocate(kSmallSize);  // the small segment's other half
  EXPECT_TRUE(alloc.last_decision().cache_hit);
  DataPtr s3 = alloc.allocate(kSmallSize);  // the small pool is full and cannot use the large block
  EXPECT_FALSE(alloc.last_decision().cache_hit);
  EXPECT_EQ(alloc.stats().num_raw_mallocs, 3);
  for (DataPtr* p : {&s, &s2, &s3}) p->release();
}

TEST_F(CachingTest, FirstSmallAllocCreatesOneSegmentAndSplits) {
  DataPtr p = alloc.allocate(100);
  AllocDecision d = alloc.last_decision();
  EXPECT_FALSE(d.cache_hit);
  EXPECT_TRUE(d.split);
  EXPECT_EQ(d.block_size, 512u);
  Snapshot snap = alloc.snapshot();
  ASSERT_EQ(snap.segments.size(), 1u);
  const SegmentInfo& seg = snap.segments[0];
  EXPECT_EQ(seg.address, addr(p));
  EXPECT_EQ(seg.total_size, kSmallBuffer);
  EXPECT_EQ(seg.segment_type, "small");
  EXPECT_EQ(seg.allocated_size, 512u);
  EXPECT_EQ(seg.active_size, 512u);
  EXPECT_EQ(seg.requested_size, 100u);
  EXPECT_EQ(layout(seg), "512 used(100) | " + std::to_string(kSmallBuffer - 512) + " free");
  const CachingStats& s = snap.stats;
  EXPECT_EQ(s.num_allocs, 1);
  EXPECT_EQ(s.num_cache_misses, 1);
  EXPECT_EQ(s.num_splits, 1);
  EXPECT_EQ(s.num_raw_mallocs, 1);
  EXPECT_EQ(s.allocated_bytes, 512);
  EXPECT_EQ(s.reserved_bytes, i64(kSmallBuffer));
  EXPECT_EQ(backend.in_use(), kSmallBuffer);
  p.release();
}

TEST_F(CachingTest, SecondSmallAllocHitsTheCache) {
  DataPtr a = alloc.allocate(100);
  DataPtr b = alloc.allocate(600);
  EXPECT_TRUE(alloc.last_decision().cache_hit);
  EXPECT_EQ(addr(b), addr(a) + 512);  // carved from the first segment's remainder
  CachingStats s = alloc.stats();
  EXPECT_EQ(s.num_raw_mallocs, 1);
  EXPECT_EQ(s.num_cache_hits, 1);
  EXPECT_EQ(s.allocated_bytes, 512 + 1024);
  a.release();
  b.release();
}

TEST(CachingAllocatorSegments, LargeSegmentsAre20MiBOrRoundedTo2MiB) {
  struct Case {
    size_t n, segment, block;
    bool split;
  };
  const Case cases[] = {
      {kSmallSize + 1, kLargeBuffer, kSmallSize + 512, true},  // under 10 MiB: a 20 MiB segment
      {3 * kMiB, kLargeBuffer, 3 * kMiB, true},
      {10 * kMiB - 512, kLargeBuffer, 10 * kMiB - 512, true},
      {10 * kMiB, 10 * kMiB, 10 * kMiB, false},           // from 10 MiB: rounded to 2 MiB; exact fit
      {10 * kMiB + 1, 12 * kMiB, 10 * kMiB + 512, true},  // remainder 2 MiB - 512 > 1 MiB: split
      {11 * kMiB + 1, 12 * kMiB, 12 * kMiB, false},       // remainder 1 MiB - 512: handed out whole
  };
  for (const Case& c : cases) {
    HostArenaBackend backend(kGiB, "sim:0");
    CachingAllocator alloc(backend);
    DataPtr p = alloc.allocate(c.n);
    AllocDecision d = alloc.last_decision();
    EXPECT_FALSE(d.small_pool) << c.n;
    EXPECT_EQ(d.block_size, c.block) << c.n;
    EXPECT_EQ(d.split, c.split) << c.n;
    Snapshot snap = alloc.snapshot();
    ASSERT_EQ(snap.segments.size(), 1u);
    EXPECT_EQ(snap.segments[0].total_size, c.segment) << c.n;
    EXPECT_EQ(snap.stats.allocated_bytes, i64(c.block)) << c.n;
    p.release();
  }
}

// [SECTION] Best fit, splitting and coalescing ---------------------------------------

TEST_F(CachingTest, BestFitPicksTheSmallestSufficientBlock) {
  // One small segment: a(4K) g(512) b(16K) g(512) c(8K) g(512) tail; then free a, b, c.
  DataPtr a = alloc.allocate(4 * kKiB), g1 = alloc.allocate(512);
  DataPtr b = alloc.allocate(16 * kKiB), g2 = alloc.allocate(512);
  DataPtr c = alloc.allocate(8 * kKiB), g3 = alloc.allocate(512);
  uintptr_t at_a = addr(a), at_b = addr(b), at_c = addr(c);
  a.release();
  b.release();
  c.release();
  EXPECT_EQ(addr(alloc.allocate(6 * kKiB)), at_c);   // 8K fits best, not 16K or the tail
  EXPECT_EQ(addr(alloc.allocate(3 * kKiB)), at_a);   // 4K
  EXPECT_EQ(addr(alloc.allocate(10 * kKiB)), at_b);  // 16K
  EXPECT_TRUE(alloc.last_decision().cache_hit);
  EXPECT_TRUE(alloc.last_decision().split);
  EXPECT_EQ(alloc.stats().num_raw_mallocs, 1);
  for (DataPtr* g : {&g1, &g2, &g3}) g->release();
  alloc.check_invariants();
}

TEST_F(CachingTest, LargePoolKeepsSmallRemaindersInTheBlock) {
  DataPtr a = alloc.allocate(5 * kMiB);
  DataPtr guard = alloc.allocate(2 * kMiB);  // keeps a from merging with the 13 MiB tail
  uintptr_t at_a = addr(a);
  a.release();

  DataPtr p = alloc.allocate(4 * kMiB + 512 * kKiB);  // remainder 0.5 MiB <= 1 MiB: no split
  AllocDecision d = alloc.last_decision();
  EXPECT_EQ(addr(p), at_a);
  EXPECT_FALSE(d.split);
  EXPECT_EQ(d.block_size, 5 * kMiB);
  EXPECT_EQ(alloc.stats().allocated_bytes, i64(7 * kMiB));
  p.release();

  DataPtr q = alloc.allocate(3 * kMiB);  // remainder 2 MiB > 1 MiB: split
  EXPECT_EQ(addr(q), at_a);
  EXPECT_TRUE(alloc.last_decision().split);
  EXPECT_EQ(alloc.last_decision().block_size, 3 * kMiB);
  q.release();
  guard.release();
  alloc.check_invariants();
}

TEST(CachingAllocatorCoalescing, ThreeNeighboursBecomeOneBlockInAnyOrder) {
  std::vector<int> order = {0, 1, 2};
  do {
    HostArenaBackend backend(kGiB, "sim:0");
    CachingAllocator alloc(backend);
    DataPtr p[3] = {alloc.allocate(4 * kKiB), alloc.allocate(4 * kKiB), alloc.allocate(4 * kKiB)};
    DataPtr guard = alloc.allocate(4 * kKiB);
    for (int i : order) p[i].release();
    Snapshot snap = alloc.snapshot();
    ASSERT_EQ(snap.segments.size(), 1u);
    EXPECT_EQ(layout(snap.segments[0]), "12288 free | 4096 used(4096) | " + std::to_string(kSmallBuffer - 16 * kKiB) +
                                            " free");
    EXPECT_EQ(snap.stats.num_merges, 2) << order[0] << order[1] << order[2];
    alloc.check_invariants();

    guard.release();  // merges with both sides: the segment is one free block again
    snap = alloc.snapshot();
    EXPECT_EQ(layout(snap.segments[0]), std::to_string(kSmallBuffer) + " free");
    EXPECT_EQ(snap.stats.num_merges, 4);
    EXPECT_EQ(snap.stats.allocated_bytes, 0);
  } while (std::next_permutation(order.begin(), order.end()));
}

TEST_F(CachingTest, AFreedBlockIsReused) {
  DataPtr a = alloc.allocate(4 * kKiB);
  uintptr_t at = addr(a);
  a.release();
  DataPtr b = alloc.allocate(4 * kKiB);
  EXPECT_EQ(addr(b), at);
  EXPECT_TRUE(alloc.last_decision().cache_hit);
  EXPECT_EQ(alloc.stats().num_raw_mallocs, 1);
}

// [SECTION] Streams and empty_cache ----------------------------------------------------

TEST_F(CachingTest, ABlockFreedOnOneStreamIsNotHandedToAnother) {
  DataPtr a = alloc.allocate(4 * kKiB, /*stream=*/1);
  uintptr_t at = addr(a);
  a.release();
  DataPtr b = alloc.allocate(4 * kKiB, /*stream=*/2);
  EXPECT_FALSE(alloc.last_decision().cache_hit);
  EXPECT_NE(addr(b), at);
  Snapshot snap = alloc.snapshot();
  ASSERT_EQ(snap.segments.size(), 2u);
  EXPECT_EQ(snap.segments[0].stream + snap.segments[1].stream, 3) << "one segment per stream";

  DataPtr c = alloc.allocate(4 * kKiB, /*stream=*/1);  // stream 1's own block comes back
  EXPECT_TRUE(alloc.last_decision().cache_hit);
  EXPECT_EQ(addr(c), at);
}

TEST_F(CachingTest, EmptyCacheFreesOnlyWhollyFreeSegments) {
  DataPtr live = alloc.allocate(100);          // small segment, stream 0, stays
  alloc.allocate(3 * kMiB).release();          // large segment, wholly free
  alloc.allocate(100, /*stream=*/5).release();  // small segment of stream 5, wholly free
  EXPECT_EQ(alloc.stats().reserved_bytes, i64(2 * kSmallBuffer + kLargeBuffer));

  alloc.empty_cache();
  CachingStats s = alloc.stats();
  EXPECT_EQ(s.num_raw_frees, 2);
  EXPECT_EQ(s.reserved_bytes, i64(kSmallBuffer));
  EXPECT_EQ(backend.in_use(), kSmallBuffer);
  Snapshot snap = alloc.snapshot();
  ASSERT_EQ(snap.segments.size(), 1u);
  EXPECT_EQ(snap.segments[0].address, addr(live));
  std::memset(live.ptr, 0x5A, 100);  // still ours
  alloc.check_invariants();
}

// [SECTION] Out of memory ----------------------------------------------------------------

TEST(CachingAllocatorOom, CachedSegmentsAreReleasedAndTheRetrySucceeds) {
  HostArenaBackend backend(24 * kMiB, "sim:0");
  CachingAllocator alloc(backend);
  // A 20 MiB segment of stream 1, cached and wholly free (stream 0 cannot use it).
  alloc.allocate(3 * kMiB, /*stream=*/1).release();
  DataPtr small = alloc.allocate(100);      // 2 MiB segment: 22 MiB in use
  DataPtr big = alloc.allocate(12 * kMiB);  // 34 MiB > 24: refused, cache released, retried
  ASSERT_NE(big.ptr, nullptr);
  CachingStats s = alloc.stats();
  EXPECT_EQ(s.num_free_retries, 1);
  EXPECT_EQ(s.num_raw_frees, 1);
  EXPECT_EQ(s.num_ooms, 0);
  EXPECT_EQ(s.reserved_bytes, i64(14 * kMiB));
  EXPECT_EQ(backend.in_use(), 14 * kMiB);
  small.release();
  big.release();
  alloc.check_invariants();
}

TEST(CachingAllocatorOom, ImpossibleRequestRaisesWithAskedAllocatedReserved) {
  HostArenaBackend backend(24 * kMiB, "sim:0");
  CachingAllocator alloc(backend);
  // 20 MiB reserved, 3 MiB allocated; the free 17 MiB are too few for 18 MiB.
  DataPtr held = alloc.allocate(3 * kMiB);
  try {
    alloc.allocate(18 * kMiB);
    FAIL() << "expected OutOfMemoryError";
  } catch (const OutOfMemoryError& e) {
    std::string msg = e.what();
    EXPECT_EQ(msg.substr(0, msg.find(" If reserved")),
              "sim out of memory. Tried to allocate 18.00 MiB. sim:0 has a total capacity of 24.00 MiB of which "
              "4.00 MiB is free. Of the allocated memory 3.00 MiB is allocated by descent, and 17.00 MiB is "
              "reserved by descent but unallocated.");
  }
  CachingStats s = alloc.stats();
  EXPECT_EQ(s.num_ooms, 1);
  EXPECT_EQ(s.num_free_retries, 1);
  EXPECT_EQ(s.num_allocs, 1);
  DataPtr after = alloc.allocate(100);  // the allocator is still usable
  EXPECT_NE(after.ptr, nullptr);
  EXPECT_THROW(alloc.allocate(SIZE_MAX), OutOfMemoryError);
  EXPECT_EQ(alloc.stats().num_ooms, 2);
  held.release();
  after.release();
  alloc.check_invariants();
}

// [SECTION] Streams and deferred frees --------------------------------------------------

// A backend with streams: its events complete when the test says so (or at
// synchronize_device), and it logs what the allocator asked of it.
class FakeStreamBackend : public HostArenaBackend {
 public:
  using HostArenaBackend::HostArenaBackend;
  struct Event {
    StreamId stream;
    bool done = false;
    bool released = false;
  };
  void* raw_malloc(size_t n) override {
    void* p = HostArenaBackend::raw_malloc(n);
    log.push_back("malloc " + format_size(n) + (p == nullptr ? " refused" : ""));
    return p;
  }
  void raw_free(void* p, size_t n) override {
    log.push_back("free " + format_size(n));
    HostArenaBackend::raw_free(p, n);
  }
  void* record_event(StreamId s) override {
    events.push_back(Event{s});
    log.push_back("record_event " + std::to_string(s));
    return reinterpret_cast<void*>(events.size());  // a handle: index + 1, never dereferenced
  }
  bool event_done(void* e) override { return event(e).done; }
  void release_event(void* e) override { event(e).released = true; }
  void synchronize_device() override {
    log.push_back("synchronize_device");
    for (Event& e : events) e.done = true;
  }
  Event& event(void* e) { return events.at(reinterpret_cast<uintptr_t>(e) - 1); }

  std::vector<Event> events;
  std::vector<std::string> log;
};

// One value of memory_stats() by its PyTorch key.
int64_t stat(const CachingAllocator& alloc, const std::string& key) {
  for (const auto& [k, v] : alloc.memory_stats())
    if (k == key) return v;
  ADD_FAILURE() << "no statistic " << key;
  return -1;
}

TEST(CachingAllocatorStreams, CrossStreamReuseWaitsForTheEvent) {
  FakeStreamBackend backend(kGiB, "sim:0");
  CachingAllocator alloc(backend);
  DataPtr p = alloc.allocate(4 * kKiB, /*stream=*/1);
  const uintptr_t at = addr(p);
  alloc.record_stream(p, 1);  // its own stream: nothing to wait for
  alloc.record_stream(p, 2);
  alloc.record_stream(p, 2);  // once per stream
  p.release();
  ASSERT_EQ(backend.events.size(), 1u);
  EXPECT_EQ(backend.events[0].stream, 2);
  EXPECT_EQ(stat(alloc, "allocation.all.current"), 0);    // the free was requested...
  EXPECT_EQ(stat(alloc, "active.all.current"), 1);        // ... but has not completed
  EXPECT_EQ(stat(alloc, "active_bytes.all.current"), 4096);
  EXPECT_EQ(stat(alloc, "requested_bytes.all.current"), 4096);
  alloc.check_invariants();

  DataPtr q = alloc.allocate(4 * kKiB, 1);  // the event has not passed: p's block is not reused
  EXPECT_NE(addr(q), at);
  backend.events[0].done = true;
  DataPtr r = alloc.allocate(4 * kKiB, 1);  // allocation processes events first: now it is
  EXPECT_EQ(addr(r), at);
  EXPECT_TRUE(alloc.last_decision().cache_hit);
  EXPECT_TRUE(backend.events[0].released);
  EXPECT_EQ(stat(alloc, "active.all.current"), 2);
  alloc.check_invariants();
}

TEST(CachingAllocatorStreams, EventsOfAStreamCompleteInOrderAndABlockWaitsForAllItsStreams) {
  FakeStreamBackend backend(kGiB, "sim:0");
  CachingAllocator alloc(backend);
  DataPtr p = alloc.allocate(4 * kKiB), guard1 = alloc.allocate(512);
  DataPtr q = alloc.allocate(4 * kKiB), guard2 = alloc.allocate(512);
  const uintptr_t at_p = addr(p), at_q = addr(q);
  alloc.record_stream(p, 2);
  alloc.record_stream(q, 2);
  alloc.record_stream(q, 3);
  p.release();  // event 0 on stream 2
  q.release();  // events 1 (stream 2) and 2 (stream 3)
  ASSERT_EQ(backend.events.size(), 3u);
  auto states = [&alloc] {
    std::string out;
    const Snapshot snap = alloc.snapshot();
    for (const BlockInfo& b : snap.segments.at(0).blocks) out += b.state + " ";
    return out;
  };
  backend.events[1].done = true;  // behind event 0 on stream 2: not looked at yet
  backend.events[2].done = true;
  alloc.allocate(100).release();
  EXPECT_EQ(states(), "active_pending_free active_allocated active_pending_free active_allocated inactive ");
  backend.events[0].done = true;
  alloc.allocate(100).release();  // both complete; the allocation took p's old block's start, then freed it
  EXPECT_EQ(states(), "inactive active_allocated inactive active_allocated inactive ");
  EXPECT_EQ(addr(alloc.allocate(4 * kKiB)), at_p);
  EXPECT_EQ(addr(alloc.allocate(4 * kKiB)), at_q);
  guard1.release();
  guard2.release();
  alloc.check_invariants();
}

TEST(CachingAllocatorStreams, RecordStreamRejectsPointersItDidNotHandOut) {
  HostArenaBackend backend(kGiB, "sim:0"), other_backend(kGiB, "sim:1");
  CachingAllocator alloc(backend), other(other_backend);
  int not_ours = 0;
  EXPECT_THROW(alloc.record_stream(&not_ours, 2), std::invalid_argument);
  DataPtr theirs = other.allocate(100);
  alloc.record_stream(theirs, 2);  // another allocator's DataPtr: ignored, as PyTorch
  alloc.record_stream(DataPtr{}, 2);
  DataPtr p = alloc.allocate(100);
  void* raw = p.ptr;
  p.release();
  try {
    alloc.record_stream(raw, 2);
    FAIL() << "expected std::invalid_argument";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("is not a live block of sim:0's caching allocator"), std::string::npos)
        << e.what();
  }
  alloc.check_invariants();
}

TEST(CachingAllocatorStreams, EmptyCacheWaitsForPendingFrees) {
  FakeStreamBackend backend(kGiB, "sim:0");
  CachingAllocator alloc(backend);
  DataPtr p = alloc.allocate(3 * kMiB);
  alloc.record_stream(p, 4);
  p.release();
  backend.log.clear();
  alloc.empty_cache();
  EXPECT_EQ(backend.log, (std::vector<std::string>{"synchronize_device", "free 20.00 MiB"}));
  EXPECT_EQ(stat(alloc, "num_sync_all_streams"), 1);
  EXPECT_EQ(stat(alloc, "reserved_bytes.all.current"), 0);
  EXPECT_TRUE(backend.events[0].released);
}

// [SECTION] The out-of-memory path in PyTorch's order ---------------------------------

TEST(CachingAllocatorOom, CachedBlocksAreFreedThenTheDeviceSynchronizedThenTheMessage) {
  FakeStreamBackend backend(24 * kMiB, "sim:0");
  CachingAllocator alloc(backend);
  alloc.record_memory_history(true);
  DataPtr x = alloc.allocate(3 * kMiB);  // a 20 MiB segment, split
  alloc.record_stream(x, 2);
  x.release();                        // waits for stream 2
  DataPtr y = alloc.allocate(100);    // a 2 MiB segment: 22 MiB in use
  backend.log.clear();
  // 18 MiB: more than x's segment's free 17 MiB, and than the 2 MiB the backend has left.
  DataPtr big = alloc.allocate(18 * kMiB);
  EXPECT_EQ(backend.log, (std::vector<std::string>{"malloc 18.00 MiB refused", "synchronize_device",
                                                   "free 20.00 MiB", "malloc 18.00 MiB"}));
  EXPECT_EQ(stat(alloc, "num_alloc_retries"), 1);
  EXPECT_EQ(stat(alloc, "num_sync_all_streams"), 1);
  EXPECT_EQ(stat(alloc, "num_device_free"), 1);
  EXPECT_EQ(stat(alloc, "num_ooms"), 0);

  backend.log.clear();
  try {
    alloc.allocate(15 * kMiB);  // a 16 MiB segment; 4 MiB are free and nothing cached can go
    FAIL() << "expected OutOfMemoryError";
  } catch (const OutOfMemoryError& e) {
    EXPECT_STREQ(e.what(),
                 "sim out of memory. Tried to allocate 16.00 MiB. sim:0 has a total capacity of 24.00 MiB of which "
                 "4.00 MiB is free. Of the allocated memory 18.00 MiB is allocated by descent, and 2.00 MiB is "
                 "reserved by descent but unallocated. If reserved but unallocated memory is large try setting "
                 "DESCENT_ALLOC_CONF=max_split_size_mb:N to avoid fragmentation. See Note [Caching allocator "
                 "policy] in floors/allocator/caching_allocator.cpp.");
  }
  EXPECT_EQ(backend.log, (std::vector<std::string>{"malloc 16.00 MiB refused", "malloc 16.00 MiB refused"}));
  EXPECT_EQ(stat(alloc, "num_alloc_retries"), 2);
  EXPECT_EQ(stat(alloc, "num_sync_all_streams"), 2);
  EXPECT_EQ(stat(alloc, "num_ooms"), 1);
  std::vector<TraceEntry> h = alloc.memory_history();
  ASSERT_FALSE(h.empty());
  EXPECT_STREQ(action_name(h.back().action), "oom");
  EXPECT_EQ(h.back().size, 15 * kMiB);  // the rounded request, as PyTorch
  EXPECT_EQ(h.back().addr, 4 * kMiB);  // the device's free bytes, as PyTorch
  y.release();
  big.release();
  alloc.check_invariants();
}

TEST(CachingAllocatorOom, CudaMessageNamesTheGpu) {
  HostArenaBackend backend(4 * kMiB, "cuda:1");
  CachingAllocator alloc(backend);
  try {
    alloc.allocate(1ull << 50);  // 1 PiB, as the H200 fixture asked
    FAIL() << "expected OutOfMemoryError";
  } catch (const OutOfMemoryError& e) {
    const std::string msg = e.what();
    EXPECT_EQ(msg.substr(0, msg.find(" Of the")),
              "CUDA out of memory. Tried to allocate 1048576.00 GiB. GPU 1 has a total capacity of 4.00 MiB of "
              "which 4.00 MiB is free.");
  }
}

TEST(CachingAllocatorFormat, FormatSizeFollowsPyTorch) {
  const std::pair<uint64_t, const char*> cases[] = {
      {0, "0 bytes"},           {1024, "1024 bytes"},         {1025, "1.00 KiB"},
      {1048576, "1024.00 KiB"}, {1048577, "1.00 MiB"},        {2096640, "2.00 MiB"},
      {kGiB, "1024.00 MiB"},    {1ull << 50, "1048576.00 GiB"}};
  for (const auto& [n, text] : cases) EXPECT_EQ(format_size(n), text) << n;
}

// [SECTION] max_split_size and oversize blocks ------------------------------------------

TEST(CachingAllocatorOversize, OversizeBlocksAreNeverSplitAndServeOnlyCloseRequests) {
  HostArenaBackend backend(kGiB, "sim:0");
  CachingAllocator alloc(backend);
  EXPECT_EQ(alloc.max_split_size(), kNoMaxSplitSize);
  EXPECT_EQ(stat(alloc, "max_split_size"), -1);
  EXPECT_THROW(alloc.set_max_split_size(20 * kMiB), std::invalid_argument);  // must be > 20 MiB
  alloc.set_max_split_size(32 * kMiB);
  EXPECT_EQ(stat(alloc, "max_split_size"), i64(32 * kMiB));

  DataPtr a = alloc.allocate(60 * kMiB);  // a 60 MiB oversize segment
  const uintptr_t at_a = addr(a);
  EXPECT_FALSE(alloc.last_decision().split);
  EXPECT_EQ(stat(alloc, "oversize_segments.current"), 1);
  EXPECT_EQ(stat(alloc, "oversize_allocations.current"), 1);
  EXPECT_THROW(alloc.set_max_split_size(64 * kMiB), std::logic_error);  // segments held
  a.release();
  EXPECT_EQ(stat(alloc, "oversize_allocations.current"), 0);
  EXPECT_EQ(stat(alloc, "oversize_allocations.freed"), 1);

  DataPtr b = alloc.allocate(30 * kMiB);  // below max_split_size: never an oversize block
  EXPECT_FALSE(alloc.last_decision().cache_hit);
  EXPECT_NE(addr(b), at_a);
  b.release();
  DataPtr c = alloc.allocate(50 * kMiB);  // oversize, within 20 MiB of the 60 MiB block: takes it whole
  EXPECT_TRUE(alloc.last_decision().cache_hit);
  EXPECT_EQ(addr(c), at_a);
  EXPECT_EQ(alloc.last_decision().block_size, 60 * kMiB);
  c.release();
  DataPtr d = alloc.allocate(33 * kMiB);  // 60 >= 33 + 20: too wasteful, a new 34 MiB segment
  EXPECT_FALSE(alloc.last_decision().cache_hit);
  EXPECT_EQ(alloc.last_decision().block_size, 34 * kMiB);
  EXPECT_EQ(stat(alloc, "oversize_segments.current"), 2);  // 60 and 34 MiB; 30 MiB is not oversize
  EXPECT_EQ(stat(alloc, "oversize_allocations.allocated"), 3);
  EXPECT_EQ(stat(alloc, "oversize_allocations.current"), 1);
  d.release();
  alloc.check_invariants();
}

TEST(CachingAllocatorOversize, OutOfMemoryReleasesCachedOversizeBlocksFirst) {
  FakeStreamBackend backend(80 * kMiB, "sim:0");
  CachingAllocator alloc(backend);
  alloc.set_max_split_size(32 * kMiB);
  alloc.allocate(60 * kMiB).release();
  backend.log.clear();
  DataPtr p = alloc.allocate(33 * kMiB);  // the 60 MiB block is too wasteful; 34 more MiB do not fit
  EXPECT_EQ(backend.log, (std::vector<std::string>{"malloc 34.00 MiB refused", "free 60.00 MiB", "malloc 34.00 MiB"}));
  EXPECT_EQ(stat(alloc, "num_alloc_retries"), 0);  // release_available_cached_blocks is not the retry
  EXPECT_EQ(stat(alloc, "num_sync_all_streams"), 0);
  EXPECT_EQ(stat(alloc, "oversize_segments.current"), 1);
  p.release();
  alloc.check_invariants();
}

TEST(CachingAllocatorOversize, DescentAllocConfSetsMaxSplitSize) {
  HostArenaBackend backend(kGiB, "sim:0");
  ::setenv("DESCENT_ALLOC_CONF", "max_split_size_mb:64", 1);
  {
    CachingAllocator alloc(backend);
    EXPECT_EQ(alloc.max_split_size(), 64 * kMiB);
  }
  for (const char* bad : {"max_split_size_mb:20", "max_split_size_mb:x", "expandable_segments:True"}) {
    ::setenv("DESCENT_ALLOC_CONF", bad, 1);
    EXPECT_THROW(CachingAllocator{backend}, std::invalid_argument) << bad;
  }
  ::unsetenv("DESCENT_ALLOC_CONF");
}

// [SECTION] Statistics, snapshot and history ----------------------------------------------

TEST(CachingAllocatorSnapshot, SegmentsAndBlocksInPyTorchsWords) {
  FakeStreamBackend backend(kGiB, "cuda:1");
  CachingAllocator alloc(backend);
  DataPtr p = alloc.allocate(100);
  DataPtr q = alloc.allocate(3000);
  alloc.record_stream(q, 5);
  q.release();  // pending: waits for stream 5
  DataPtr l = alloc.allocate(3 * kMiB, /*stream=*/7);
  Snapshot snap = alloc.snapshot();
  ASSERT_EQ(snap.segments.size(), 2u);
  const SegmentInfo& small = snap.segments[0].segment_type == "small" ? snap.segments[0] : snap.segments[1];
  const SegmentInfo& large = &small == &snap.segments[0] ? snap.segments[1] : snap.segments[0];
  EXPECT_EQ(small.device, 1);
  EXPECT_EQ(small.address, addr(p));
  EXPECT_EQ(small.total_size, kSmallBuffer);
  EXPECT_EQ(small.allocated_size, 512u);
  EXPECT_EQ(small.active_size, 512u + 3072u);
  EXPECT_EQ(small.requested_size, 3100u);
  EXPECT_EQ(small.stream, 0);
  ASSERT_EQ(small.blocks.size(), 3u);
  const BlockInfo expected[] = {{addr(p), 512, 100, "active_allocated"},
                                {addr(p) + 512, 3072, 3000, "active_pending_free"},
                                {addr(p) + 3584, kSmallBuffer - 3584, 0, "inactive"}};
  for (size_t i = 0; i < 3; ++i) {
    EXPECT_EQ(small.blocks[i].address, expected[i].address) << i;
    EXPECT_EQ(small.blocks[i].size, expected[i].size) << i;
    EXPECT_EQ(small.blocks[i].requested_size, expected[i].requested_size) << i;
    EXPECT_EQ(small.blocks[i].state, expected[i].state) << i;
  }
  EXPECT_EQ(large.segment_type, "large");
  EXPECT_EQ(large.stream, 7);
  EXPECT_EQ(large.total_size, kLargeBuffer);
  EXPECT_EQ(layout(large), "3145728 used(3145728) | 17825792 free");
  EXPECT_TRUE(snap.device_traces.empty());  // history is off by default
  p.release();
  l.release();
}

TEST(CachingAllocatorHistory, RecordsPyTorchsTraceEntriesInABoundedRing) {
  FakeStreamBackend backend(kGiB, "sim:0");
  CachingAllocator alloc(backend);
  alloc.allocate(100).release();  // not recorded: history is off
  EXPECT_TRUE(alloc.memory_history().empty());
  alloc.empty_cache();

  alloc.record_memory_history(true);
  DataPtr a = alloc.allocate(1000, /*stream=*/3);
  const uintptr_t at = addr(a);
  alloc.record_stream(a, 4);
  a.release();
  alloc.empty_cache();  // completes the free, then releases the segment
  std::vector<TraceEntry> h = alloc.memory_history();
  const std::tuple<const char*, uintptr_t, size_t> expected[] = {{"segment_alloc", at, kSmallBuffer},
                                                                 {"alloc", at, 1000},
                                                                 {"free_requested", at, 1000},
                                                                 {"free_completed", at, 1000},
                                                                 {"segment_free", at, kSmallBuffer}};
  ASSERT_EQ(h.size(), 5u);
  for (size_t i = 0; i < h.size(); ++i) {
    EXPECT_STREQ(action_name(h[i].action), std::get<0>(expected[i])) << i;
    EXPECT_EQ(h[i].addr, std::get<1>(expected[i])) << i;
    EXPECT_EQ(h[i].size, std::get<2>(expected[i])) << i;
    EXPECT_EQ(h[i].stream, 3) << i;
    if (i > 0) {
      EXPECT_GE(h[i].time_ns, h[i - 1].time_ns) << i;
    }
  }
  EXPECT_EQ(alloc.snapshot().device_traces.size(), 5u);

  alloc.record_memory_history(true, 3);  // a smaller ring keeps the newest
  h = alloc.memory_history();
  ASSERT_EQ(h.size(), 3u);
  EXPECT_STREQ(action_name(h[0].action), "free_requested");
  DataPtr b = alloc.allocate(2000);  // segment_alloc and alloc push the two oldest out
  h = alloc.memory_history();
  ASSERT_EQ(h.size(), 3u);
  EXPECT_STREQ(action_name(h[0].action), "segment_free");
  EXPECT_STREQ(action_name(h[2].action), "alloc");
  EXPECT_EQ(h[2].size, 2000u);

  alloc.record_memory_history(false);
  b.release();
  EXPECT_TRUE(alloc.memory_history().empty());
  EXPECT_THROW(alloc.record_memory_history(true, 0), std::invalid_argument);
}

TEST_F(CachingTest, ResetPeakAndResetAccumulated) {
  DataPtr big = alloc.allocate(3 * kMiB);
  DataPtr p = alloc.allocate(100);
  big.release();
  alloc.reset_peak();
  EXPECT_EQ(stat(alloc, "allocated_bytes.all.peak"), 512);
  EXPECT_EQ(stat(alloc, "allocated_bytes.large_pool.peak"), 0);
  EXPECT_EQ(stat(alloc, "allocated_bytes.all.allocated"), i64(3 * kMiB + 512));
  alloc.reset_accumulated();
  EXPECT_EQ(stat(alloc, "allocated_bytes.all.allocated"), 0);
  EXPECT_EQ(stat(alloc, "allocated_bytes.all.freed"), 0);
  EXPECT_EQ(stat(alloc, "allocated_bytes.all.current"), 512);
  EXPECT_EQ(stat(alloc, "num_device_alloc"), 0);
  p.release();
}

// The sequence in tests/allocator/data/script.txt, and after it every
// statistic PyTorch's policy gives, derived by hand step by step (the script's
// comments say what each step does). tools/allocator-vs-torch.py runs the same
// sequence on torch.cuda: its output must equal this table.
TEST(CachingAllocatorScript, ScriptedSequenceGivesPyTorchsStatistics) {
  HostArenaBackend backend(kGiB, "cuda:0");
  CachingAllocator alloc(backend);
  std::ifstream script(DESCENT_ALLOC_SCRIPT);
  ASSERT_TRUE(script) << "cannot read " << DESCENT_ALLOC_SCRIPT;
  std::map<std::string, DataPtr> tensors;
  std::string line;
  for (int lineno = 1; std::getline(script, line); ++lineno) {
    std::istringstream words(line.substr(0, line.find('#')));
    std::string op, name;
    size_t bytes = 0;
    if (!(words >> op)) continue;
    if (op == "alloc" && words >> name >> bytes) {
      tensors[name] = alloc.allocate(bytes);
    } else if (op == "free" && words >> name && tensors.count(name) > 0) {
      tensors[name].release();
      tensors.erase(name);
    } else if (op == "empty_cache") {
      alloc.empty_cache();
    } else {
      FAIL() << "script.txt:" << lineno << ": cannot read '" << line << "'";
    }
    alloc.check_invariants();
  }

  struct Row {
    const char* family;
    int64_t all[4], small[4], large[4];  // current, peak, allocated, freed
  };
  const Row rows[] = {
      {"allocation", {3, 6, 11, 8}, {2, 4, 5, 3}, {1, 3, 6, 5}},
      {"active", {3, 6, 11, 8}, {2, 4, 5, 3}, {1, 3, 6, 5}},
      {"segment", {3, 3, 4, 1}, {1, 1, 1, 0}, {2, 2, 3, 1}},
      {"inactive_split", {4, 5, 7, 3}, {2, 2, 3, 1}, {2, 3, 4, 2}},
      {"allocated_bytes",
       {4147200, 52381696, 86986240, 82839040},
       {1001472, 2050048, 2051072, 1049600},
       {3145728, 51380224, 84935168, 81789440}},
      {"active_bytes",
       {4147200, 52381696, 86986240, 82839040},
       {1001472, 2050048, 2051072, 1049600},
       {3145728, 51380224, 84935168, 81789440}},
      {"requested_bytes",
       {4146428, 51332348, 84887294, 80740866},
       {1000700, 2049276, 2049789, 1049089},
       {3145728, 50331648, 82837505, 79691777}},
      {"reserved_bytes",
       {56623104, 56623104, 77594624, 20971520},
       {2097152, 2097152, 2097152, 0},
       {54525952, 54525952, 75497472, 20971520}},
      {"inactive_split_bytes",
       {25212928, 25212928, 51380736, 26167808},
       {1095680, 2096640, 3146240, 2050560},
       {24117248, 24117248, 48234496, 24117248}},
  };
  std::map<std::string, int64_t> expected = {{"num_alloc_retries", 0}, {"num_ooms", 0},
                                             {"num_sync_all_streams", 1},  // empty_cache
                                             {"num_device_alloc", 4},      {"num_device_free", 1},
                                             {"max_split_size", -1}};
  const char* metrics[] = {"current", "peak", "allocated", "freed"};
  for (const Row& r : rows)
    for (int m = 0; m < 4; ++m) {
      expected[std::string(r.family) + ".all." + metrics[m]] = r.all[m];
      expected[std::string(r.family) + ".small_pool." + metrics[m]] = r.small[m];
      expected[std::string(r.family) + ".large_pool." + metrics[m]] = r.large[m];
    }
  for (const char* family : {"oversize_allocations", "oversize_segments"})
    for (const char* metric : metrics) expected[std::string(family) + "." + metric] = 0;

  const MemoryStats got = alloc.memory_stats();
  ASSERT_EQ(got.size(), expected.size()) << "torch.cuda.memory_stats() has 122 keys";
  auto e = expected.begin();  // a std::map: sorted, PyTorch's order
  for (const auto& [key, value] : got) {
    EXPECT_EQ(key, e->first);
    EXPECT_EQ(value, e->second) << key;
    ++e;
  }
  for (auto& [name, p] : tensors) p.release();
  alloc.check_invariants();
}

// [SECTION] Edge cases and the backend ---------------------------------------------------

TEST_F(CachingTest, ZeroBytesGivesAnEmptyDataPtr) {
  DataPtr p = alloc.allocate(0);
  EXPECT_EQ(p.ptr, nullptr);
  EXPECT_EQ(p.deleter, nullptr);
  p.release();
  CachingStats s = alloc.stats();
  EXPECT_EQ(s.num_allocs, 0);
  EXPECT_EQ(s.num_raw_mallocs, 0);
}

TEST_F(CachingTest, PeaksAreHighWaterMarksUntilReset) {
  alloc.allocate(3 * kMiB).release();
  DataPtr p = alloc.allocate(100);
  CachingStats s = alloc.stats();
  EXPECT_EQ(s.peak_allocated_bytes, i64(3 * kMiB));
  EXPECT_EQ(s.peak_reserved_bytes, i64(kLargeBuffer + kSmallBuffer));
  alloc.empty_cache();
  alloc.reset_peak();
  s = alloc.stats();
  EXPECT_EQ(s.peak_allocated_bytes, 512);
  EXPECT_EQ(s.peak_reserved_bytes, i64(kSmallBuffer));
  p.release();
}

TEST_F(CachingTest, FreeingAnUnknownPointerIsIgnoredButCaught) {
  DataPtr good = alloc.allocate(100);
  int not_ours = 0;
  DataPtr bogus{&not_ours, sizeof not_ours, good.deleter, good.ctx};
  bogus.release();  // must not crash or corrupt anything
  EXPECT_EQ(alloc.stats().allocated_bytes, 512);
  EXPECT_THROW(alloc.check_invariants(), std::logic_error);
  good.release();
  EXPECT_EQ(alloc.stats().allocated_bytes, 0);
}

TEST(CachingAllocatorLifetime, DestructorReturnsEverySegment) {
  HostArenaBackend backend(kGiB, "sim:0");
  {
    CachingAllocator alloc(backend);
    [[maybe_unused]] DataPtr live = alloc.allocate(100);  // deliberately never released
    alloc.allocate(3 * kMiB).release();
    EXPECT_EQ(backend.in_use(), kSmallBuffer + kLargeBuffer);
  }
  EXPECT_EQ(backend.in_use(), 0u);
}

TEST(HostArenaBackend, AlignsCountsAndRefusesPastCapacity) {
  HostArenaBackend backend(3 * kMiB, "sim:0");
  EXPECT_STREQ(backend.name(), "sim:0");
  void* a = backend.raw_malloc(2 * kMiB);
  ASSERT_NE(a, nullptr);
  EXPECT_EQ(reinterpret_cast<uintptr_t>(a) % kAlignment, 0u);
  EXPECT_EQ(backend.in_use(), 2 * kMiB);
  EXPECT_EQ(backend.raw_malloc(2 * kMiB), nullptr);
  EXPECT_EQ(backend.raw_malloc(SIZE_MAX), nullptr);
  void* b = backend.raw_malloc(kMiB);  // exactly at capacity
  ASSERT_NE(b, nullptr);
  EXPECT_EQ(backend.in_use(), 3 * kMiB);
  backend.raw_free(a, 2 * kMiB);
  backend.raw_free(b, kMiB);
  EXPECT_EQ(backend.in_use(), 0u);
}

TEST_F(CachingTest, AllocationsAndFreesAreTracedOnFloorSix) {
  trace::start();
  alloc.allocate(100).release();
  trace::Trace t = trace::stop();
  auto find = [&t](const char* name) -> const trace::Span* {
    for (const trace::Span& s : t.spans)
      if (s.name == name) return &s;
    return nullptr;
  };
  const trace::Span *a = find("caching_alloc"), *raw = find("raw_malloc"), *f = find("caching_free");
  ASSERT_TRUE(a && raw && f);
  EXPECT_EQ(a->floor, trace::Floor::Allocator);
  EXPECT_EQ(raw->parent, a->id);  // the backend was called inside the allocation
  using V = trace::ArgValue;
  const std::pair<const char*, V> expected[] = {
      {"bytes", V{int64_t{512}}}, {"pool", V{std::string("small")}}, {"hit", V{false}}, {"block", V{int64_t{512}}}};
  for (const auto& [key, value] : expected) {
    ASSERT_NE(a->find_arg(key), nullptr) << key;
    EXPECT_EQ(*a->find_arg(key), value) << key;
  }
  ASSERT_NE(f->find_arg("block"), nullptr);
  EXPECT_EQ(*f->find_arg("block"), V{int64_t{512}});
}

// [SECTION] Randomized run against a model, and threads -----------------------------------

// True when the n bytes at p all equal `pattern` (memcmp in chunks: fast under ASan).
bool holds_pattern(const void* p, size_t n, unsigned char pattern) {
  static unsigned char chunk[64 * 1024];
  std::memset(chunk, pattern, sizeof chunk);
  const auto* bytes = static_cast<const unsigned char*>(p);
  for (size_t off = 0; off < n; off += sizeof chunk)
    if (std::memcmp(bytes + off, chunk, std::min(sizeof chunk, n - off)) != 0) return false;
  return true;
}

struct LiveBlock {
  DataPtr p;
  unsigned char pattern;
  size_t block;  // block size the allocator reported
};

// Compares the snapshot with the model: blocks tile segments, sums match stats.
void expect_consistent(const CachingAllocator& alloc, const std::vector<LiveBlock>& live) {
  Snapshot snap = alloc.snapshot();
  int64_t reserved = 0, allocated = 0, model_allocated = 0;
  size_t requested = 0, model_requested = 0, num_allocated = 0;
  for (const LiveBlock& l : live) {
    model_allocated += i64(l.block);
    model_requested += l.p.nbytes;
  }
  uintptr_t prev_end = 0;
  for (const SegmentInfo& seg : snap.segments) {
    ASSERT_GE(seg.address, prev_end) << "segments out of address order or overlapping";
    prev_end = seg.address + seg.total_size;
    size_t offset = 0;
    for (const BlockInfo& b : seg.blocks) {
      ASSERT_EQ(b.address, seg.address + offset) << "blocks do not tile the segment";
      offset += b.size;
      if (b.state != "active_allocated") continue;
      allocated += i64(b.size);
      requested += b.requested_size;
      num_allocated++;
    }
    ASSERT_EQ(offset, seg.total_size);
    reserved += i64(seg.total_size);
  }
  EXPECT_EQ(allocated, snap.stats.allocated_bytes);
  EXPECT_EQ(reserved, snap.stats.reserved_bytes);
  EXPECT_EQ(model_allocated, snap.stats.allocated_bytes);
  EXPECT_EQ(requested, model_requested);
  EXPECT_EQ(num_allocated, live.size());
  EXPECT_EQ(snap.stats.num_cache_hits + snap.stats.num_cache_misses, snap.stats.num_allocs);
  EXPECT_NO_THROW(alloc.check_invariants());
}

TEST(CachingAllocatorRandomized, TwoThousandOpsMatchAModelOfLiveBytes) {
  constexpr int kOps = 2000;
  HostArenaBackend backend(kGiB, "sim:0");
  CachingAllocator alloc(backend);
  std::mt19937 rng(20240611);
  std::vector<LiveBlock> live;
  auto random_size = [&rng]() -> size_t {
    unsigned r = rng() % 100;
    if (r < 70) return 1 + rng() % (64 * kKiB);                   // small pool, mostly
    if (r < 95) return 64 * kKiB + rng() % (kSmallSize + kMiB / 2);  // around the pool border
    return kSmallSize + rng() % (12 * kMiB);                       // large pool, both segment rules
  };
  for (int op = 0; op < kOps; ++op) {
    if (live.empty() || rng() % 100 < 55) {
      size_t n = random_size();
      DataPtr p = alloc.allocate(n, static_cast<StreamId>(rng() % 2));
      auto pattern = static_cast<unsigned char>(1 + op % 251);
      std::memset(p.ptr, pattern, n);
      live.push_back({p, pattern, alloc.last_decision().block_size});
    } else {
      size_t i = rng() % live.size();
      ASSERT_TRUE(holds_pattern(live[i].p.ptr, live[i].p.nbytes, live[i].pattern)) << "op " << op;
      live[i].p.release();
      live[i] = live.back();
      live.pop_back();
    }
    if (op % 500 == 499) alloc.empty_cache();
    if (op % 100 == 99 || op == kOps - 1) {
      ASSERT_NO_FATAL_FAILURE(expect_consistent(alloc, live)) << "op " << op;
      std::vector<LiveBlock> sorted = live;
      std::sort(sorted.begin(), sorted.end(), [](auto& a, auto& b) { return addr(a.p) < addr(b.p); });
      for (size_t i = 1; i < sorted.size(); ++i)
        ASSERT_LE(addr(sorted[i - 1].p) + sorted[i - 1].p.nbytes, addr(sorted[i].p)) << "overlap at op " << op;
    }
  }
  for (LiveBlock& l : live) {
    ASSERT_TRUE(holds_pattern(l.p.ptr, l.p.nbytes, l.pattern));
    l.p.release();
  }
  live.clear();
  expect_consistent(alloc, live);
  for (const SegmentInfo& seg : alloc.snapshot().segments) EXPECT_EQ(seg.blocks.size(), 1u);
  alloc.empty_cache();
  EXPECT_EQ(alloc.stats().reserved_bytes, 0);
  EXPECT_EQ(backend.in_use(), 0u);
}

TEST(CachingAllocatorThreads, ConcurrentAllocAndFreeStayConsistent) {
  constexpr int kThreads = 4;
  constexpr int kOps = 1000;
  HostArenaBackend backend(kGiB, "sim:0");
  CachingAllocator alloc(backend);
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&alloc, t] {
      std::mt19937 rng(static_cast<unsigned>(t));
      std::vector<DataPtr> mine;
      for (int op = 0; op < kOps; ++op) {
        if (mine.empty() || rng() % 2 == 0) {
          size_t n = 1 + rng() % (32 * kKiB);
          mine.push_back(alloc.allocate(n, /*stream=*/t % 2));
          std::memset(mine.back().ptr, t, n);
        } else {
          mine.back().release();
          mine.pop_back();
        }
      }
      for (DataPtr& p : mine) p.release();
    });
  }
  for (auto& th : threads) th.join();
  CachingStats s = alloc.stats();
  EXPECT_EQ(s.allocated_bytes, 0);
  EXPECT_EQ(s.num_cache_hits + s.num_cache_misses, s.num_allocs);
  alloc.check_invariants();
}

}  // namespace
}  // namespace descent::alloc
