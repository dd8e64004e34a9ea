// The caching allocator against PyTorch's policy: streams and deferred frees,
// the out-of-memory path in PyTorch's order, max_split_size, and PyTorch's
// statistics, snapshot and history after a scripted sequence (the policy's
// basics are in test_caching_allocator.cpp).
//
// [SECTION] Streams and deferred frees
// [SECTION] The out-of-memory path in PyTorch's order
// [SECTION] max_split_size and oversize blocks
// [SECTION] Statistics, snapshot and history
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
  EXPECT_EQ(stat(alloc, "allocation.all.current"), 0);  // the free was requested...
  EXPECT_EQ(stat(alloc, "active.all.current"), 1);      // ... but has not completed
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
  x.release();                      // waits for stream 2
  DataPtr y = alloc.allocate(100);  // a 2 MiB segment: 22 MiB in use
  backend.log.clear();
  // 18 MiB: more than x's segment's free 17 MiB, and than the 2 MiB the backend has left.
  DataPtr big = alloc.allocate(18 * kMiB);
  EXPECT_EQ(backend.log, (std::vector<std::string>{"malloc 18.00 MiB refused", "synchronize_device", "free 20.00 MiB",
                                                   "malloc 18.00 MiB"}));
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
  EXPECT_EQ(h.back().addr, 4 * kMiB);   // the device's free bytes, as PyTorch
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
      {0, "0 bytes"},        {1024, "1024 bytes"},  {1025, "1.00 KiB"},    {1048576, "1024.00 KiB"},
      {1048577, "1.00 MiB"}, {2096640, "2.00 MiB"}, {kGiB, "1024.00 MiB"}, {1ull << 50, "1048576.00 GiB"}};
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

// The fixture under a suite name of this file's own (gtest refuses one suite
// name over two translation units' copies of the fixture).
struct CachingStatsTest : CachingTest {};

TEST_F(CachingStatsTest, ResetPeakAndResetAccumulated) {
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
  std::map<std::string, int64_t> expected = {
      {"num_alloc_retries", 0}, {"num_ooms", 0},        {"num_sync_all_streams", 1},  // empty_cache
      {"num_device_alloc", 4},  {"num_device_free", 1}, {"max_split_size", -1}};
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

}  // namespace
}  // namespace descent::alloc
