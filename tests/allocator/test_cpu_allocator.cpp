// Tests for the CPU allocator (floors/allocator/cpu_allocator.cpp).
//
// [SECTION] Alignment and zero bytes
// [SECTION] Statistics and tracing
// [SECTION] Errors and threads
//
// The statistics are process-wide, so every test compares before and after.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include "floors/allocator/allocator.h"
#include "tracer/trace.h"

namespace descent::alloc {
namespace {

// [SECTION] Alignment and zero bytes ----------------------------------------------

TEST(CpuAllocator, PointersAreAlignedAndWritable) {
  // Both paths of Note [Small host blocks]: malloc aligned by hand up to
  // kSmallBlock padded bytes, aligned_alloc above.
  for (size_t n : {size_t{1}, size_t{7}, size_t{63}, size_t{64}, size_t{65}, size_t{959}, size_t{960}, size_t{961},
                   size_t{1000}, size_t{1} << 20}) {
    DataPtr p = cpu_allocate(n);
    ASSERT_NE(p.ptr, nullptr) << n;
    EXPECT_EQ(reinterpret_cast<uintptr_t>(p.ptr) % kAlignment, 0u) << n;
    EXPECT_EQ(p.nbytes, n);
    EXPECT_NE(p.deleter, nullptr);
    std::memset(p.ptr, 0xAB, n);  // ASan checks that all n bytes are ours
    p.release();
    EXPECT_EQ(p.ptr, nullptr);
  }
}

TEST(CpuAllocator, ZeroBytesGivesNullAndIsNotCounted) {
  CpuStats before = cpu_stats();
  DataPtr p = cpu_allocate(0);
  EXPECT_EQ(p.ptr, nullptr);
  EXPECT_EQ(p.nbytes, 0u);
  p.release();  // safe: nothing to free
  p.release();  // and again
  CpuStats after = cpu_stats();
  EXPECT_EQ(after.num_allocs, before.num_allocs);
  EXPECT_EQ(after.num_frees, before.num_frees);
  EXPECT_EQ(after.allocated_bytes, before.allocated_bytes);
}

// [SECTION] Statistics and tracing ------------------------------------------

TEST(CpuAllocator, StatsCountAllocsFreesAndBytes) {
  CpuStats s0 = cpu_stats();
  DataPtr a = cpu_allocate(100);
  DataPtr b = cpu_allocate(4096);
  CpuStats s1 = cpu_stats();
  EXPECT_EQ(s1.allocated_bytes - s0.allocated_bytes, 4196);
  EXPECT_EQ(s1.num_allocs - s0.num_allocs, 2);
  EXPECT_EQ(s1.num_frees - s0.num_frees, 0);
  a.release();
  CpuStats s2 = cpu_stats();
  EXPECT_EQ(s2.allocated_bytes - s0.allocated_bytes, 4096);
  EXPECT_EQ(s2.num_frees - s0.num_frees, 1);
  b.release();
  CpuStats s3 = cpu_stats();
  EXPECT_EQ(s3.allocated_bytes, s0.allocated_bytes);
  EXPECT_EQ(s3.num_frees - s0.num_frees, 2);
}

TEST(CpuAllocator, PeakIsAHighWaterMarkUntilReset) {
  cpu_reset_peak();
  CpuStats s0 = cpu_stats();
  EXPECT_EQ(s0.peak_allocated_bytes, s0.allocated_bytes);
  DataPtr big = cpu_allocate(1 << 20);
  big.release();
  DataPtr small = cpu_allocate(10);
  CpuStats s1 = cpu_stats();
  EXPECT_EQ(s1.peak_allocated_bytes, s0.allocated_bytes + (1 << 20));
  cpu_reset_peak();
  EXPECT_EQ(cpu_stats().peak_allocated_bytes, s0.allocated_bytes + 10);
  small.release();
}

TEST(CpuAllocator, AllocationsAreTracedOnFloorSix) {
  trace::start();
  cpu_allocate(100).release();
  trace::Trace t = trace::stop();
  auto it = std::find_if(t.spans.begin(), t.spans.end(), [](const trace::Span& s) { return s.name == "cpu_alloc"; });
  ASSERT_NE(it, t.spans.end());
  EXPECT_EQ(it->floor, trace::Floor::Allocator);
  ASSERT_NE(it->find_arg("bytes"), nullptr);
  EXPECT_EQ(*it->find_arg("bytes"), trace::ArgValue{int64_t{100}});
}

// [SECTION] Errors and threads ----------------------------------------------------

TEST(CpuAllocator, ImpossibleSizeRaisesOutOfMemory) {
  CpuStats before = cpu_stats();
  try {
    cpu_allocate(SIZE_MAX);
    FAIL() << "expected OutOfMemoryError";
  } catch (const OutOfMemoryError& e) {
    std::string msg = e.what();
    EXPECT_NE(msg.find(std::to_string(SIZE_MAX) + " bytes"), std::string::npos) << msg;
    EXPECT_NE(msg.find("allocated"), std::string::npos) << msg;
  }
  EXPECT_EQ(cpu_stats().num_allocs, before.num_allocs);
}

TEST(CpuAllocator, ThreadsKeepTheCountsExact) {
  constexpr int kThreads = 4;
  constexpr int kIters = 2000;
  CpuStats before = cpu_stats();
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([t] {
      for (int i = 0; i < kIters; ++i) {
        DataPtr p = cpu_allocate(static_cast<size_t>(1 + (i * 37 + t) % 3000));
        static_cast<char*>(p.ptr)[0] = static_cast<char>(i);
        p.release();
      }
    });
  }
  for (auto& th : threads) th.join();
  CpuStats after = cpu_stats();
  EXPECT_EQ(after.num_allocs - before.num_allocs, kThreads * kIters);
  EXPECT_EQ(after.num_frees - before.num_frees, kThreads * kIters);
  EXPECT_EQ(after.allocated_bytes, before.allocated_bytes);
}

}  // namespace
}  // namespace descent::alloc
