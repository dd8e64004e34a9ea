// The timeline's index (ui/timeline_index.h): rows and lanes, and the
// level-of-detail walk checked against a brute-force filter on random traces.
// See Note [Timeline level of detail].
#include "ui/timeline_index.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <random>

#include "ui/story.h"

namespace descent::ui {
namespace {

using trace::Floor;
using trace::Span;
using trace::Trace;

// A trace under construction, with the parent_index the Story would give.
struct Builder {
  Trace t;
  std::vector<size_t> parent;
  size_t add(uint32_t thread, Floor floor, int64_t start, int64_t end, size_t parent_pos = SIZE_MAX) {
    Span s;
    s.id = t.spans.size() + 1;
    s.parent = parent_pos == SIZE_MAX ? 0 : t.spans[parent_pos].id;
    s.floor = floor;
    s.name = "s";
    s.start_ns = start;
    s.end_ns = end;
    s.thread = thread;
    t.spans.push_back(std::move(s));
    parent.push_back(parent_pos);
    return t.spans.size() - 1;
  }
};

// Nested children inside [start, end) of `parent_pos`, durations spread over
// several orders of magnitude so that any zoom has both wide and narrow spans.
void add_children(Builder& b, std::mt19937_64& rng, uint32_t thread, Floor floor, size_t parent_pos, int64_t start,
                  int64_t end, int depth) {
  if (depth >= 5 || end - start < 4) return;
  int64_t at = start + static_cast<int64_t>(rng() % 3);
  while (at < end) {
    const int64_t max_len = std::max<int64_t>(1, (end - at) / (1 + static_cast<int64_t>(rng() % 4)));
    const int64_t small = 1 + static_cast<int64_t>(rng() % static_cast<uint64_t>(max_len / 50 + 1));
    const int64_t len = rng() % 5 == 0 ? max_len : small;
    if (at + len > end) break;
    const size_t c = b.add(thread, floor, at, at + len, parent_pos);
    add_children(b, rng, thread, floor, c, at, at + len, depth + 1);
    at += len + static_cast<int64_t>(rng() % 20);
  }
}

Builder random_trace(uint64_t seed) {
  std::mt19937_64 rng(seed);
  Builder b;
  for (uint32_t thread = 0; thread < 3; ++thread) {
    int64_t at = static_cast<int64_t>(rng() % 100);
    for (int r = 0; r < 20; ++r) {
      const int64_t len = 1 + static_cast<int64_t>(rng() % (rng() % 2 ? 100000 : 300));
      const size_t root = b.add(thread, Floor::Python, at, at + len);
      add_children(b, rng, thread, Floor::Kernels, root, at, at + len, 1);
      // A kernel launched from the root, on the same thread's device row.
      if (thread == 1) b.add(thread, Floor::Device, at + len / 2, at + len / 2 + len / 3, root);
      at += len + static_cast<int64_t>(rng() % 1000);
    }
  }
  // Thread 3: unnested, overlapping events at depth 0 (a loaded Chrome file).
  for (int k = 0; k < 300; ++k) {
    const int64_t s = static_cast<int64_t>(rng() % 200000);
    b.add(3, Floor::Python, s, s + 1 + static_cast<int64_t>(rng() % (rng() % 3 ? 50 : 20000)));
  }
  // The trace's order: (thread, start, id); parent positions follow the move.
  std::vector<size_t> order(b.t.spans.size());
  for (size_t i = 0; i < order.size(); ++i) order[i] = i;
  std::stable_sort(order.begin(), order.end(), [&](size_t x, size_t y) {
    const Span& a = b.t.spans[x];
    const Span& c = b.t.spans[y];
    return a.thread != c.thread ? a.thread < c.thread : a.start_ns < c.start_ns;
  });
  std::vector<size_t> where(order.size());
  for (size_t i = 0; i < order.size(); ++i) where[order[i]] = i;
  Builder sorted;
  for (size_t i = 0; i < order.size(); ++i) {
    sorted.t.spans.push_back(b.t.spans[order[i]]);
    const size_t p = b.parent[order[i]];
    sorted.parent.push_back(p == SIZE_MAX ? SIZE_MAX : where[p]);
  }
  return sorted;
}

TEST(TimelineIndex, RowsAndLanes) {
  const Builder b = random_trace(1);
  const TimelineIndex x = TimelineIndex::build(b.t, b.parent);
  ASSERT_EQ(x.size(), b.t.spans.size());
  // Host rows first, then device rows, each by thread.
  ASSERT_EQ(x.rows().size(), 5u);
  EXPECT_FALSE(x.rows()[3].device);
  EXPECT_TRUE(x.rows()[4].device);
  EXPECT_EQ(x.rows()[4].thread, 1u);
  EXPECT_EQ(x.rows()[4].label, "device (thread 1)");
  // Named by the metadata when the tracer named it (Note [Device spans]).
  Builder named = random_trace(1);
  named.t.metadata["thread.1"] = "sim:0 stream 0";
  EXPECT_EQ(TimelineIndex::build(named.t, named.parent).rows()[4].label, "sim:0 stream 0 (device clock)");
  std::vector<int> seen(b.t.spans.size(), 0);
  for (size_t lane = 0; lane < x.lanes(); ++lane) {
    const TimelineRow& row = x.rows()[x.row_of_lane(lane)];
    for (size_t k = 0; k < x.lane_size(lane); ++k) {
      const size_t s = x.span_at(lane, k);
      ++seen[s];
      EXPECT_EQ(x.lane_of_span(s), lane);
      EXPECT_EQ(b.t.spans[s].thread, row.thread);
      EXPECT_EQ(b.t.spans[s].floor == Floor::Device, row.device);
      const size_t p = b.parent[s];
      const bool parent_here = p != SIZE_MAX && x.row_of_lane(x.lane_of_span(p)) == x.row_of_lane(lane);
      EXPECT_EQ(lane - row.first_lane, parent_here ? x.lane_of_span(p) - row.first_lane + 1 : 0u);
      if (k > 0) {
        EXPECT_LE(b.t.spans[x.span_at(lane, k - 1)].start_ns, b.t.spans[s].start_ns);
      }
    }
  }
  for (int c : seen) EXPECT_EQ(c, 1);
  // Nested lanes are disjoint; thread 3's overlapping events are not.
  EXPECT_TRUE(x.lane_disjoint(x.rows()[0].first_lane));
  EXPECT_FALSE(x.lane_disjoint(x.rows()[3].first_lane));
}

// Every item overlaps the window, covers consecutive lane positions once,
// merges only narrow spans; every overlapping span is covered, wide ones alone.
void check_walk(const Trace& t, const TimelineIndex& x, size_t lane, double t0, double t1, double npp) {
  const double w = kMergePixels * npp;
  std::vector<TimelineItem> items;
  auto collect = [&](const TimelineItem& it) { items.push_back(it); };
  const size_t visited = x.visit_lane(lane, t0, t1, npp, collect);
  ASSERT_EQ(visited, items.size());
  const size_t n = x.lane_size(lane);
  std::vector<int> covered(n, 0);
  size_t last_end = 0;
  for (const TimelineItem& it : items) {
    ASSERT_GE(it.count, 1u);
    ASSERT_LE(it.first + it.count, n);
    EXPECT_GE(it.first, last_end) << "items in lane order, not overlapping";
    last_end = it.first + it.count;
    int64_t max_end = INT64_MIN;
    for (size_t k = it.first; k < it.first + it.count; ++k) {
      const Span& s = t.spans[x.span_at(lane, k)];
      ++covered[k];
      max_end = std::max(max_end, s.end_ns);
      EXPECT_TRUE(static_cast<double>(s.start_ns) <= t1 && static_cast<double>(s.end_ns) >= t0)
          << "item covers a span outside the window";
      if (it.merged()) {
        EXPECT_LT(static_cast<double>(s.duration_ns()), w) << "a wide span was merged";
      }
    }
    EXPECT_EQ(it.start_ns, t.spans[x.span_at(lane, it.first)].start_ns);
    EXPECT_EQ(it.end_ns, max_end);
    if (!it.merged()) {
      EXPECT_EQ(it.count, 1u);
      EXPECT_EQ(it.span, x.span_at(lane, it.first));
    }
  }
  for (size_t k = 0; k < n; ++k) {
    const Span& s = t.spans[x.span_at(lane, k)];
    const bool overlaps = static_cast<double>(s.start_ns) <= t1 && static_cast<double>(s.end_ns) >= t0;
    EXPECT_EQ(covered[k], overlaps ? 1 : 0) << "lane " << lane << " position " << k;
  }
}

TEST(TimelineIndex, WalkMatchesBruteForce) {
  for (uint64_t seed = 1; seed <= 6; ++seed) {
    const Builder b = random_trace(seed);
    const TimelineIndex x = TimelineIndex::build(b.t, b.parent);
    std::mt19937_64 rng(seed * 7919);
    const double span = static_cast<double>(x.max_ns() - x.min_ns());
    for (int q = 0; q < 60; ++q) {
      const double zoom = std::pow(10.0, -static_cast<double>(rng() % 60) / 10.0);  // 1 .. 1e-6 of the trace
      const double width = std::max(1.0, span * zoom);
      const double t0 =
          static_cast<double>(x.min_ns()) - width * 0.1 + static_cast<double>(rng() % 1000) / 1000.0 * span;
      const double t1 = t0 + width;
      const double npp = width / 1600.0;
      for (size_t lane = 0; lane < x.lanes(); ++lane) {
        check_walk(b.t, x, lane, t0, t1, npp);
        if (::testing::Test::HasFailure()) return;
      }
    }
  }
}

TEST(TimelineIndex, EmptyTraceAndBadWindows) {
  const TimelineIndex empty = TimelineIndex::build(Trace{}, {});
  EXPECT_EQ(empty.lanes(), 0u);
  EXPECT_TRUE(empty.rows().empty());
  size_t calls = 0;
  auto count = [&](const TimelineItem&) { ++calls; };
  EXPECT_EQ(empty.visit(0, 0, 0, 100, 1, count), 0u);
  const Builder b = random_trace(3);
  const TimelineIndex x = TimelineIndex::build(b.t, b.parent);
  EXPECT_EQ(x.visit(0, 0, 100, 0, 1, count), 0u);    // t1 < t0
  EXPECT_EQ(x.visit(99, 0, 0, 1e9, 1, count), 0u);   // no such row
  EXPECT_EQ(x.visit(0, 999, 0, 1e9, 1, count), 0u);  // no such depth
  EXPECT_EQ(calls, 0u);
  // Far beyond the int64 clock both ways: everything, merged.
  EXPECT_GT(x.visit(0, 0, -1e30, 1e30, 1e26, count), 0u);
}

// A million spans laid out as descent records a loop: roots on two threads,
// each with nested children, and kernels on a device row.
TEST(TimelineIndex, MillionSpans) {
  Builder b;
  b.t.spans.reserve(1000000);
  b.parent.reserve(1000000);
  std::mt19937_64 rng(42);
  for (uint32_t thread = 0; thread < 2; ++thread) {
    int64_t at = 0;
    for (int r = 0; r < 50000; ++r) {
      const int64_t len = 8000 + static_cast<int64_t>(rng() % 4000);
      const size_t root = b.add(thread, Floor::Python, at, at + len);
      int64_t c_at = at + 100;
      for (int c = 0; c < 3; ++c) {  // 3 children with 2 grandchildren each: 10 spans a root
        const size_t child = b.add(thread, Floor::Dispatch, c_at, c_at + 2000, root);
        b.add(thread, Floor::Kernels, c_at + 100, c_at + 900, child);
        b.add(thread, Floor::Allocator, c_at + 1000, c_at + 1900, child);
        c_at += 2500;
      }
      at += len + 500 + static_cast<int64_t>(rng() % 1000);
    }
  }
  ASSERT_EQ(b.t.spans.size(), 1000000u);
  const auto t0 = std::chrono::steady_clock::now();
  const TimelineIndex x = TimelineIndex::build(b.t, b.parent);
  const auto t1 = std::chrono::steady_clock::now();
  const double build_ms = std::chrono::duration<double, std::milli>(t1 - t0).count();
  ASSERT_EQ(x.size(), 1000000u);
  ASSERT_EQ(x.lanes(), 6u);  // two threads, three depths each

  // Full zoom-out at 1600 pixels, then a window of 1/1000 of the trace.
  auto walk_all = [&](double v0, double v1) {
    size_t items = 0;
    auto count = [&](const TimelineItem&) { ++items; };
    for (size_t lane = 0; lane < x.lanes(); ++lane) x.visit_lane(lane, v0, v1, (v1 - v0) / 1600.0, count);
    return items;
  };
  const double lo = static_cast<double>(x.min_ns()), hi = static_cast<double>(x.max_ns());
  const auto q0 = std::chrono::steady_clock::now();
  const size_t full = walk_all(lo, hi);
  const auto q1 = std::chrono::steady_clock::now();
  const double mid = (lo + hi) / 2, narrow = (hi - lo) / 1000;
  const size_t zoomed = walk_all(mid, mid + narrow);
  const auto q2 = std::chrono::steady_clock::now();
  std::printf("1M spans: build %.1f ms, full zoom-out %zu items in %.3f ms, 1/1000 zoom %zu items in %.3f ms\n",
              build_ms, full, std::chrono::duration<double, std::milli>(q1 - q0).count(), zoomed,
              std::chrono::duration<double, std::milli>(q2 - q1).count());
  EXPECT_LE(full, 5000u);
  EXPECT_GT(zoomed, 0u);
  EXPECT_LE(zoomed, 5000u);
  EXPECT_LT(build_ms, 5000.0);  // loose: sanitizer and debug builds too
}

// The Story's parent_index is what the app passes: build_story then the index.
TEST(TimelineIndex, FromStory) {
  const Builder b = random_trace(5);
  const Story s = build_story(b.t);
  const TimelineIndex x = TimelineIndex::build(b.t, s.parent_index);
  for (size_t i = 0; i < b.t.spans.size(); ++i) {
    const size_t lane = x.lane_of_span(i);
    const TimelineRow& row = x.rows()[x.row_of_lane(lane)];
    if (!row.device && b.t.spans[i].thread == s.thread) {
      EXPECT_EQ(static_cast<int>(lane - row.first_lane), s.depth[i]);
    }
  }
}

}  // namespace
}  // namespace descent::ui
