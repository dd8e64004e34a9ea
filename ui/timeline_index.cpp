// The timeline's index: rows, lanes and the level-of-detail walk. See
// timeline_index.h and Note [Timeline level of detail].
//
// [SECTION] Building
// [SECTION] Walking a lane
#include "ui/timeline_index.h"

#include <algorithm>
#include <cmath>
#include <unordered_map>

namespace descent::ui {

namespace {

// Double times to the int64 clock, saturated (a view may be zoomed far out).
int64_t ceil_ns(double t) {
  if (!(t > -9.2e18)) return INT64_MIN;
  if (t > 9.2e18) return INT64_MAX;
  return static_cast<int64_t>(std::ceil(t));
}
int64_t floor_ns(double t) {
  if (!(t > -9.2e18)) return INT64_MIN;
  if (t > 9.2e18) return INT64_MAX;
  return static_cast<int64_t>(std::floor(t));
}

constexpr uint32_t kUnknownDepth = UINT32_MAX;  // not computed yet
constexpr uint32_t kOnPath = UINT32_MAX - 1;    // on the walk up (a cycle guard)

}  // namespace

// [SECTION] Building ------------------------------------------------------------------

TimelineIndex TimelineIndex::build(const trace::Trace& t, const std::vector<size_t>& parent_index) {
  TimelineIndex x;
  const size_t n = t.spans.size();
  if (n == 0) return x;

  // Rows: one key per (device, thread); the trace is sorted by thread, so a
  // one-entry cache answers almost every span without touching the map.
  std::vector<uint32_t> row(n);
  std::unordered_map<uint64_t, uint32_t> key_id;
  std::vector<uint64_t> keys;
  uint64_t last_key = UINT64_MAX;
  uint32_t last_id = 0;
  for (size_t i = 0; i < n; ++i) {
    const trace::Span& s = t.spans[i];
    const uint64_t key = (uint64_t{s.floor == trace::Floor::Device} << 32) | s.thread;
    if (key != last_key) {
      const auto [it, fresh] = key_id.emplace(key, static_cast<uint32_t>(keys.size()));
      if (fresh) keys.push_back(key);
      last_key = key;
      last_id = it->second;
    }
    row[i] = last_id;
  }
  std::vector<uint32_t> order(keys.size());  // provisional id -> row number
  {
    std::vector<uint32_t> by_key(keys.size());
    for (uint32_t k = 0; k < keys.size(); ++k) by_key[k] = k;
    std::sort(by_key.begin(), by_key.end(), [&](uint32_t a, uint32_t b) { return keys[a] < keys[b]; });
    for (uint32_t r = 0; r < by_key.size(); ++r) order[by_key[r]] = r;
    x.rows_.resize(keys.size());
    for (uint32_t r = 0; r < by_key.size(); ++r) {
      TimelineRow& tr = x.rows_[r];
      tr.thread = static_cast<uint32_t>(keys[by_key[r]] & 0xffffffffu);
      tr.device = (keys[by_key[r]] >> 32) != 0;
      const std::string n = std::to_string(tr.thread);
      tr.label = tr.device ? "device (thread " + n + ")" : "thread " + n;
      // A row the metadata names keeps that name: a device's ("sim:0 stream 0": Note [Device spans]), every
      // row of a merged trace ("rank 1: thread 0": Note [Merging the ranks' traces]), a Chrome file's.
      const auto name = t.metadata.find("thread." + n);
      if (name != t.metadata.end() && !name->second.empty())
        tr.label = tr.device ? name->second + " (device clock)" : name->second;
    }
  }
  for (uint32_t& r : row) r = order[r];

  // Depth in the row: the parent's + 1 when the parent is in the same row.
  // Walked up iteratively with memo, so O(n) in all, whatever the nesting.
  std::vector<uint32_t> depth(n, kUnknownDepth);
  std::vector<size_t> path;
  for (size_t i = 0; i < n; ++i) {
    size_t p = i;
    while (depth[p] == kUnknownDepth) {
      const size_t q = p < parent_index.size() ? parent_index[p] : SIZE_MAX;
      if (q == SIZE_MAX || q >= n || row[q] != row[p] || depth[q] == kOnPath) {
        depth[p] = 0;
        break;
      }
      depth[p] = kOnPath;
      path.push_back(p);
      p = q;
    }
    while (!path.empty()) {
      const size_t c = path.back();
      path.pop_back();
      depth[c] = depth[parent_index[c]] + 1;
    }
  }

  // Lanes: (row, depth), rows in order, depth 0 first.
  for (size_t i = 0; i < n; ++i) {
    TimelineRow& r = x.rows_[row[i]];
    r.depths = std::max<size_t>(r.depths, size_t{depth[i]} + 1);
    ++r.spans;
  }
  size_t lanes = 0;
  for (size_t r = 0; r < x.rows_.size(); ++r) {
    x.rows_[r].first_lane = lanes;
    lanes += x.rows_[r].depths;
    x.row_of_lane_.insert(x.row_of_lane_.end(), x.rows_[r].depths, static_cast<uint32_t>(r));
  }
  // Counting sort of the spans by lane, stable: the trace's order (by start
  // within a thread) is kept inside each lane.
  x.lane_of_span_.resize(n);
  x.lane_begin_.assign(lanes + 1, 0);
  for (size_t i = 0; i < n; ++i) {
    const uint32_t lane = static_cast<uint32_t>(x.rows_[row[i]].first_lane + depth[i]);
    x.lane_of_span_[i] = lane;
    ++x.lane_begin_[lane + 1];
  }
  for (size_t l = 0; l < lanes; ++l) x.lane_begin_[l + 1] += x.lane_begin_[l];
  x.span_.resize(n);
  {
    std::vector<size_t> next(x.lane_begin_.begin(), x.lane_begin_.end() - 1);
    for (size_t i = 0; i < n; ++i) x.span_[next[x.lane_of_span_[i]]++] = i;
  }

  x.start_.resize(n);
  x.end_.resize(n);
  x.max_end_.resize(n);
  x.disjoint_.assign(lanes, 1);
  x.min_ns_ = INT64_MAX;
  x.max_ns_ = INT64_MIN;
  for (size_t l = 0; l < lanes; ++l) {
    const auto b = x.span_.begin() + static_cast<ptrdiff_t>(x.lane_begin_[l]);
    const auto e = x.span_.begin() + static_cast<ptrdiff_t>(x.lane_begin_[l + 1]);
    auto by_start = [&](size_t a, size_t c) { return t.spans[a].start_ns < t.spans[c].start_ns; };
    if (!std::is_sorted(b, e, by_start)) std::stable_sort(b, e, by_start);  // a loaded file out of order
    int64_t running = INT64_MIN;
    for (size_t k = x.lane_begin_[l]; k < x.lane_begin_[l + 1]; ++k) {
      const trace::Span& s = t.spans[x.span_[k]];
      x.start_[k] = s.start_ns;
      x.end_[k] = std::max(s.start_ns, s.end_ns);  // a malformed end before start draws as an instant
      if (x.start_[k] < running) x.disjoint_[l] = 0;
      running = std::max(running, x.end_[k]);
      x.max_end_[k] = running;
      x.min_ns_ = std::min(x.min_ns_, x.start_[k]);
      x.max_ns_ = std::max(x.max_ns_, x.end_[k]);
    }
  }
  return x;
}

// [SECTION] Walking a lane ---------------------------------------------------------

size_t TimelineIndex::visit(size_t row, size_t depth, double t0, double t1, double ns_per_pixel,
                            TimelineSink sink) const {
  if (row >= rows_.size() || depth >= rows_[row].depths) return 0;
  return visit_lane(rows_[row].first_lane + depth, t0, t1, ns_per_pixel, sink);
}

size_t TimelineIndex::visit_lane(size_t lane, double t0, double t1, double ns_per_pixel, TimelineSink sink) const {
  if (lane >= lanes() || !(t0 <= t1)) return 0;
  const size_t base = lane_begin_[lane];
  const size_t n = lane_begin_[lane + 1] - base;
  const int64_t* S = start_.data() + base;
  const int64_t* E = end_.data() + base;
  const int64_t* M = max_end_.data() + base;
  const int64_t lo_ns = ceil_ns(t0);                                    // overlap: end >= t0
  const int64_t hi_ns = floor_ns(t1);                                   // overlap: start <= t1
  const double w = ns_per_pixel > 0 ? kMergePixels * ns_per_pixel : 0;  // narrower than this is merged
  auto narrow = [&](size_t k) { return static_cast<double>(E[k] - S[k]) < w; };

  size_t i = static_cast<size_t>(std::lower_bound(M, M + n, lo_ns) - M);
  const size_t hi = static_cast<size_t>(std::upper_bound(S, S + n, hi_ns) - S);
  size_t visited = 0;
  auto emit = [&](size_t first, size_t count, int64_t end_ns) {
    TimelineItem it;
    it.span = count == 1 ? span_[base + first] : SIZE_MAX;
    it.first = first;
    it.count = count;
    it.start_ns = S[first];
    it.end_ns = count == 1 ? E[first] : end_ns;
    sink(it);
    ++visited;
  };

  if (!disjoint_[lane]) {
    // Overlapping lane: span by span inside the window (see the Note).
    size_t first = SIZE_MAX, count = 0;
    int64_t block_end = 0;
    auto close = [&] {
      if (count > 0) emit(first, count, block_end);
      first = SIZE_MAX;
      count = 0;
    };
    for (; i < hi; ++i) {
      if (E[i] < lo_ns) {
        close();
      } else if (!narrow(i)) {
        close();
        emit(i, 1, E[i]);
      } else if (count > 0 && static_cast<double>(S[i]) < static_cast<double>(block_end) + w) {
        ++count;
        block_end = std::max(block_end, E[i]);
      } else {
        close();
        first = i;
        count = 1;
        block_end = E[i];
      }
    }
    close();
    return visited;
  }

  // Disjoint lane: ends are sorted too, and every span in [i, hi) overlaps.
  while (i < hi) {
    if (!narrow(i)) {
      emit(i, 1, E[i]);
      ++i;
      continue;
    }
    const size_t first = i;
    size_t k = i;
    for (;;) {
      // Jump one merge width: to the first span starting at or after S[k] + w.
      const int64_t limit = ceil_ns(static_cast<double>(S[k]) + w);
      const size_t j = static_cast<size_t>(std::lower_bound(S + k + 1, S + hi, limit) - S);
      if (j - 1 > k && !narrow(j - 1)) {  // only the last span jumped over can be wide
        emit(first, j - 1 - first, E[j - 2]);
        i = j - 1;
        break;
      }
      if (j < hi && narrow(j) && static_cast<double>(S[j]) < static_cast<double>(E[j - 1]) + w) {
        k = j;
        continue;
      }
      emit(first, j - first, E[j - 1]);
      i = j;
      break;
    }
  }
  return visited;
}

}  // namespace descent::ui
