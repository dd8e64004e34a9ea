// The timeline's index: the spans of a trace laid out in rows and lanes, and
// a level-of-detail walk over what one lane shows between two times.
//
// [SECTION] Rows and lanes
// [SECTION] Items (what a walk visits)
// [SECTION] The index
//
// Plain data, no ImGui: panel_timeline.cpp draws it, tests/ui checks it
// against a brute-force filter. See Note [Timeline level of detail].
//
// Note [Timeline level of detail]
// ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
// A frame may show a million spans in 1600 pixels; drawing each one costs
// O(spans) and gives a grey smear. The index keeps, per lane (a row's spans
// at one depth), the spans' starts and ends in start order plus a running
// maximum of the ends. Spans of one depth on one thread are nested siblings,
// so they do not overlap ("disjoint" lanes) and both starts and ends are
// sorted. A walk over [t0, t1] at `ns_per_pixel`:
//   1. finds by binary search the first span whose running max end >= t0
//      and the last span whose start <= t1: nothing outside is touched;
//   2. visits a span at least kMergePixels wide as itself;
//   3. starts a merged block at a narrower span and, one pixel width w at a
//      time, jumps by binary search to the first span starting at or after
//      (start of the last span taken) + w. In a disjoint lane only the last
//      span jumped over can be wide (a wide one starting inside the step ends
//      past it, and every later span starts after that end), so it is checked
//      and left for step 2. The block grows while the next span is narrow and
//      starts less than w after the block's end, then is visited as one item.
// Each jump moves at least w forward, so a lane costs
// O(pixels / kMergePixels * log n), whatever the number of spans. A lane
// whose spans overlap (a loaded file with unnested events on one thread) is
// walked span by span inside the window, merging runs the same way: correct,
// but linear in the spans visible; descent's own traces never produce one.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "tracer/trace.h"

namespace descent::ui {

// [SECTION] Rows and lanes ---------------------------------------------------------

constexpr double kMergePixels = 1.5;  // spans narrower than this many pixels are merged

// A row of the chart: one thread's host spans, or one thread's device spans
// (Floor::Device; PyTorch's Chrome traces put GPU kernels on threads of their own).
struct TimelineRow {
  uint32_t thread = 0;    // Span::thread
  bool device = false;    // holds the Floor::Device spans of `thread`
  size_t first_lane = 0;  // lanes first_lane .. first_lane + depths - 1, depth 0 first
  size_t depths = 0;      // number of lanes (the deepest span's depth + 1)
  size_t spans = 0;       // spans in the row
  std::string
      label;  // "thread 0"; a device row by its metadata name, "sim:0 stream 0 (device clock)", else "device (thread 3)"
};

// [SECTION] Items (what a walk visits) ---------------------------------------------

// One rectangle to draw: a span, or a run of narrow spans merged into one block.
struct TimelineItem {
  size_t span = SIZE_MAX;  // index into Trace::spans; SIZE_MAX for a merged block
  size_t first = 0;        // position in the lane of the first span covered
  size_t count = 1;        // spans covered (lane positions first .. first + count - 1)
  int64_t start_ns = 0;    // the first span's start
  int64_t end_ns = 0;      // the latest end among the spans covered
  bool merged() const { return span == SIZE_MAX; }
};

// A non-owning reference to a callable taking a const TimelineItem&, so the
// walk can live in the .cpp without std::function's allocation.
class TimelineSink {
 public:
  template <class F>
  TimelineSink(F& f) : obj_(&f), call_([](void* o, const TimelineItem& it) { (*static_cast<F*>(o))(it); }) {}
  void operator()(const TimelineItem& it) const { call_(obj_, it); }

 private:
  void* obj_;
  void (*call_)(void*, const TimelineItem&);
};

// [SECTION] The index ----------------------------------------------------------------

class TimelineIndex {
 public:
  TimelineIndex() = default;
  // Lays out `t`: rows sorted host before device, then by thread; a span's depth
  // is its parent's + 1 when the parent (parent_index, as in Story) is in the
  // same row, else 0. O(n) plus a sort of any lane not already in start order.
  static TimelineIndex build(const trace::Trace& t, const std::vector<size_t>& parent_index);

  const std::vector<TimelineRow>& rows() const { return rows_; }
  size_t lanes() const { return lane_begin_.size() - (lane_begin_.empty() ? 0 : 1); }
  size_t lane_size(size_t lane) const { return lane_begin_[lane + 1] - lane_begin_[lane]; }
  bool lane_disjoint(size_t lane) const { return disjoint_[lane] != 0; }  // see the Note
  size_t lane_of_span(size_t span) const { return lane_of_span_[span]; }
  size_t row_of_lane(size_t lane) const { return row_of_lane_[lane]; }
  size_t span_at(size_t lane, size_t pos) const { return span_[lane_begin_[lane] + pos]; }
  int64_t min_ns() const { return min_ns_; }  // earliest start (0 when empty)
  int64_t max_ns() const { return max_ns_; }  // latest end (0 when empty)
  size_t size() const { return span_.size(); }

  // Calls `sink` once per item of lane (row, depth) overlapping [t0, t1]
  // (start <= t1 and end >= t0), in start order, merging spans narrower than
  // kMergePixels * ns_per_pixel. Returns the number of items visited.
  size_t visit(size_t row, size_t depth, double t0, double t1, double ns_per_pixel, TimelineSink sink) const;
  size_t visit_lane(size_t lane, double t0, double t1, double ns_per_pixel, TimelineSink sink) const;

 private:
  std::vector<TimelineRow> rows_;
  std::vector<size_t> lane_begin_;      // per lane: offset of its first span in the arrays below; one past the end last
  std::vector<uint8_t> disjoint_;       // per lane: spans do not overlap (the fast walk applies)
  std::vector<uint32_t> row_of_lane_;   // per lane: its row
  std::vector<uint32_t> lane_of_span_;  // per span of the trace: its lane
  std::vector<size_t> span_;            // per lane position: index into Trace::spans
  std::vector<int64_t> start_, end_;    // per lane position: the span's times, ns
  std::vector<int64_t> max_end_;        // per lane position: running max of end_ within the lane
  int64_t min_ns_ = 0, max_ns_ = 0;
};

}  // namespace descent::ui
