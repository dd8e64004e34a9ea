// Helpers shared by the caching allocator's two test files.
#pragma once

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

constexpr size_t kKiB = 1024;         // bytes
constexpr size_t kMiB = 1024 * kKiB;  // bytes
constexpr size_t kGiB = 1024 * kMiB;  // bytes

inline uintptr_t addr(const DataPtr& p) { return reinterpret_cast<uintptr_t>(p.ptr); }
inline int64_t i64(size_t n) { return static_cast<int64_t>(n); }

// A segment's blocks as text, e.g. "512 used(100) | 2096640 free".
inline std::string layout(const SegmentInfo& seg) {
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

}  // namespace
}  // namespace descent::alloc
