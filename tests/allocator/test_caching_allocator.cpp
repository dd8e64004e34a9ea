// Tests for the caching allocator and HostArenaBackend
// (floors/allocator/caching_allocator.cpp), case by case along
// Note [Caching allocator policy], then a randomized run against a model.
//
// [SECTION] Rounding, pools and segments
// [SECTION] Best fit, splitting and coalescing
// [SECTION] Streams and empty_cache
// [SECTION] Out of memory
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

#include "tests/allocator/caching_test_util.h"

namespace descent::alloc {
namespace {

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
    EXPECT_EQ(layout(snap.segments[0]),
              "12288 free | 4096 used(4096) | " + std::to_string(kSmallBuffer - 16 * kKiB) + " free");
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
  DataPtr live = alloc.allocate(100);           // small segment, stream 0, stays
  alloc.allocate(3 * kMiB).release();           // large segment, wholly free
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
    if (r < 70) return 1 + rng() % (64 * kKiB);                      // small pool, mostly
    if (r < 95) return 64 * kKiB + rng() % (kSmallSize + kMiB / 2);  // around the pool border
    return kSmallSize + rng() % (12 * kMiB);                         // large pool, both segment rules
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

// The free lists' nodes are reused and rewritten in place on the hit path
// (Note [The hit path]): after every operation the lists must be in order,
// and every allocation must take the best fit a snapshot taken before it
// shows (the smallest free block of its stream and pool, the lowest address
// among equals), whatever the history of splits and merges.
TEST(CachingAllocatorRandomized, EveryAllocationTakesTheBestFitTheSnapshotShows) {
  constexpr int kOps = 3000;
  HostArenaBackend backend(kGiB, "sim:0");
  CachingAllocator alloc(backend);
  std::mt19937 rng(7);
  std::vector<DataPtr> live;
  auto random_size = [&rng]() -> size_t {
    unsigned r = rng() % 100;
    if (r < 75) return 1 + rng() % (256 * kKiB);
    if (r < 90) return 256 * kKiB + rng() % kSmallSize;
    return kSmallSize + rng() % (24 * kMiB);
  };
  for (int op = 0; op < kOps; ++op) {
    if (live.empty() || rng() % 100 < 52) {
      const size_t n = random_size();
      const StreamId stream = static_cast<StreamId>(rng() % 3);
      const size_t rounded =
          n < kMinBlockSize ? kMinBlockSize : (n + kMinBlockSize - 1) / kMinBlockSize * kMinBlockSize;
      const bool small = rounded <= kSmallSize;
      size_t best_size = SIZE_MAX;
      uintptr_t best_addr = 0;
      for (const SegmentInfo& seg : alloc.snapshot().segments) {
        if (seg.stream != stream || (seg.segment_type == "small") != small) continue;
        for (const BlockInfo& b : seg.blocks)
          if (b.state == "inactive" && b.size >= rounded &&
              std::tie(b.size, b.address) < std::tie(best_size, best_addr)) {
            best_size = b.size;
            best_addr = b.address;
          }
      }
      live.push_back(alloc.allocate(n, stream));
      const AllocDecision d = alloc.last_decision();
      ASSERT_EQ(d.cache_hit, best_size != SIZE_MAX) << "op " << op;
      if (d.cache_hit) {
        ASSERT_EQ(addr(live.back()), best_addr) << "op " << op;
      }
    } else {
      const size_t i = rng() % live.size();
      live[i].release();
      live[i] = live.back();
      live.pop_back();
    }
    if (op % 700 == 699) alloc.empty_cache();
    ASSERT_NO_THROW(alloc.check_invariants()) << "op " << op;
  }
  for (DataPtr& p : live) p.release();
  alloc.check_invariants();
  for (const SegmentInfo& seg : alloc.snapshot().segments) EXPECT_EQ(seg.blocks.size(), 1u);
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
