// The story of a call: steps, floors at a step, warm medians. See story.h.
#include "ui/story.h"

#include <algorithm>
#include <string_view>
#include <unordered_map>

namespace descent::ui {

// [SECTION] Steps ----------------------------------------------------------------

namespace {

// The thread told: the first one with a span on a building floor.
uint32_t story_thread(const trace::Trace& t) {
  for (const trace::Span& s : t.spans) {
    if (building_floor(s.floor) != 0 && s.floor != trace::Floor::Device) return s.thread;
  }
  return 0;
}

bool starts_before(const trace::Trace& t, size_t a, size_t b) {
  const trace::Span& x = t.spans[a];
  const trace::Span& y = t.spans[b];
  return x.start_ns != y.start_ns ? x.start_ns < y.start_ns : x.id < y.id;
}

}  // namespace

int building_floor(trace::Floor f) {
  const int i = static_cast<int>(f);
  if (i >= 1 && i <= kBuildingFloors) return i;
  return f == trace::Floor::Device ? kBuildingFloors : 0;
}

Story build_story(const trace::Trace& t) {
  Story s;
  s.trace = &t;
  const size_t n = t.spans.size();
  s.parent_index.assign(n, SIZE_MAX);
  s.self_ns.assign(n, 0);
  s.depth.assign(n, 0);
  s.down_step.assign(n, SIZE_MAX);
  s.up_step.assign(n, SIZE_MAX);
  s.child_pos.assign(n, 0);
  s.child_begin.assign(n + 1, 0);
  if (n == 0) return s;
  s.thread = story_thread(t);

  const trace::SpanIndex by_id(t);
  for (size_t i = 0; i < n; ++i) {
    const trace::Span& sp = t.spans[i];
    s.self_ns[i] = sp.duration_ns();
    s.floor_anywhere[building_floor(sp.floor)] = true;
    const size_t p = sp.parent != 0 && sp.parent != sp.id ? by_id.find(sp.parent) : SIZE_MAX;
    if (p != SIZE_MAX) {
      s.parent_index[i] = p;
      s.self_ns[p] -= sp.duration_ns();
      ++s.child_begin[p + 1];
    } else if (sp.thread == s.thread) {
      s.roots.push_back(i);
    }
  }
  // A backward node run on its device's thread (Note [Which thread runs a
  // node], engine.cpp) is told as a child of the span that made it ready.
  for (const trace::Flow& f : t.flows) {
    if (f.name != "backward") continue;
    const size_t from = by_id.find(f.from), to = by_id.find(f.to);
    if (from == SIZE_MAX || to == SIZE_MAX || s.parent_index[to] != SIZE_MAX) continue;
    s.parent_index[to] = from;
    s.self_ns[from] -= t.spans[to].duration_ns();
    ++s.child_begin[from + 1];
  }
  // Children as one flat list (one allocation, not one per span).
  for (size_t i = 0; i < n; ++i) s.child_begin[i + 1] += s.child_begin[i];
  s.child_list.resize(s.child_begin[n]);
  std::vector<size_t> fill(s.child_begin.begin(), s.child_begin.end() - 1);
  for (size_t i = 0; i < n; ++i) {
    if (s.parent_index[i] != SIZE_MAX) s.child_list[fill[s.parent_index[i]]++] = i;
  }
  for (size_t i = 0; i < n; ++i) {
    auto* first = s.child_list.data() + s.child_begin[i];
    auto* last = s.child_list.data() + s.child_begin[i + 1];
    // Spans are stored by (thread, start, id), so children usually come in order already.
    if (!std::is_sorted(first, last, [&](size_t a, size_t b) { return starts_before(t, a, b); })) {
      std::stable_sort(first, last, [&](size_t a, size_t b) { return starts_before(t, a, b); });
    }
    for (auto* c = first; c != last; ++c) s.child_pos[*c] = static_cast<uint32_t>(c - first);
  }
  std::stable_sort(s.roots.begin(), s.roots.end(), [&](size_t a, size_t b) { return starts_before(t, a, b); });

  // Depth-first walk of each root on the told thread, iteratively (a loaded
  // file may nest deeper than the C++ stack could recurse).
  struct Frame {
    size_t span;
    size_t next_child;
  };
  std::vector<Frame> stack;
  s.steps.reserve(2 * n);
  for (size_t root : s.roots) {
    stack.push_back({root, 0});
    s.down_step[root] = s.steps.size();
    s.steps.push_back({root, true, t.spans[root].start_ns});
    while (!stack.empty()) {
      Frame& f = stack.back();
      if (f.next_child < s.children(f.span).size()) {
        const size_t c = s.children(f.span)[f.next_child++];
        s.depth[c] = static_cast<int>(stack.size());
        s.down_step[c] = s.steps.size();
        s.steps.push_back({c, true, t.spans[c].start_ns});
        stack.push_back({c, 0});
      } else {
        s.up_step[f.span] = s.steps.size();
        s.steps.push_back({f.span, false, t.spans[f.span].end_ns});
        stack.pop_back();
      }
    }
  }
  // Depth of spans on other threads (the timeline stacks them too).
  for (size_t i = 0; i < n; ++i) {
    if (s.down_step[i] != SIZE_MAX) continue;
    int d = 0;
    for (size_t p = s.parent_index[i]; p != SIZE_MAX && d < 1 << 20; p = s.parent_index[p]) ++d;
    s.depth[i] = d;
  }

  // Per root, the down steps of its spans on each floor, in order.
  s.floor_steps.resize(s.roots.size());
  for (size_t r = 0; r < s.roots.size(); ++r) {
    const size_t first = s.down_step[s.roots[r]];
    const size_t last = s.up_step[s.roots[r]];
    for (size_t k = first; k <= last; ++k) {
      if (!s.steps[k].down) continue;
      const int f = building_floor(t.spans[s.steps[k].span].floor);
      if (f != 0) s.floor_steps[r][f].push_back(k);
    }
  }
  std::unordered_map<std::string_view, size_t> line_index;
  s.line_of_root.resize(s.roots.size());
  for (size_t r = 0; r < s.roots.size(); ++r) {
    const auto [it, fresh] = line_index.emplace(t.spans[s.roots[r]].name, s.lines.size());
    if (fresh) s.lines.emplace_back();
    s.lines[it->second].push_back(r);
    s.line_of_root[r] = it->second;
  }
  return s;
}

size_t root_of_span(const Story& s, size_t i) {
  while (s.parent_index[i] != SIZE_MAX) i = s.parent_index[i];
  return i;
}

size_t root_of_step(const Story& s, size_t step) {
  const size_t root = root_of_span(s, s.steps[step].span);
  const auto it = std::lower_bound(s.roots.begin(), s.roots.end(), root, [&](size_t a, size_t b) {
    return s.down_step[a] < s.down_step[b];
  });
  return static_cast<size_t>(it - s.roots.begin());
}

int token_floor(const Story& s, size_t step) {
  const Step& st = s.steps[step];
  if (st.down) return building_floor(s.trace->spans[st.span].floor);
  const size_t p = s.parent_index[st.span];
  return p == SIZE_MAX ? 1 : building_floor(s.trace->spans[p].floor);
}

// [SECTION] Floors at a step ---------------------------------------------------

namespace {

// Why a call never reaches floor `f`, in a sentence a learner can check.
std::string skip_reason(const Story& s, int f, size_t root) {
  const bool anywhere = s.floor_anywhere[f];  // does any call of the trace reach this floor?
  const auto format = s.trace->metadata.find("source.format");
  if (format != s.trace->metadata.end() && format->second == "kineto") {
    return anywhere ? "PyTorch's profiler recorded nothing on this floor for this call"
                    : "PyTorch's profiler records no event on this floor (it has no span for its binding, its "
                      "key-set computation, or CPU allocations unless asked)";
  }
  switch (f) {
    case 1: return "no Python code of descent ran for this call";
    case 2: return "the call never crossed into C++ (descent._C)";
    case 3: return "no op was dispatched";
    case 4:
      return anywhere ? "this call's ops have no derivative (a factory, a comparison): their Autograd key falls through"
                      : "no op with a derivative ran: factories and comparisons fall through their Autograd key";
    case 5: return "no kernel ran";
    case 6: return "nothing was allocated: the call made no new memory";
    case 8:
      if (!s.floor_steps[root][7].empty()) {
        return "this call launched nothing: on floor 7 it only waited for the device or queued a copy";
      }
      [[fallthrough]];
    case 7:
      return anywhere ? "this call ran on the CPU: nothing was queued or launched"
                      : "CPU tensors stop at floor 5: the kernel ran on the calling thread";
    default: return "not reached";
  }
}

}  // namespace

std::array<FloorView, kBuildingFloors + 1> floors_at(const Story& s, size_t step) {
  std::array<FloorView, kBuildingFloors + 1> out;
  if (s.steps.empty()) {
    for (int f = 1; f <= kBuildingFloors; ++f) out[f].skip_reason = "no call: the trace is empty";
    return out;
  }
  step = std::min(step, s.steps.size() - 1);
  const size_t r = root_of_step(s, step);
  // The open spans: the path from the root down to the span entered at this
  // step (or to the parent of the span left at it).
  const Step& st = s.steps[step];
  for (size_t p = st.down ? st.span : s.parent_index[st.span]; p != SIZE_MAX; p = s.parent_index[p]) {
    const int f = building_floor(s.trace->spans[p].floor);
    if (f != 0 && out[f].state != FloorState::Active) {
      out[f].state = FloorState::Active;
      out[f].span = p;  // the innermost, met first going up
    }
  }
  for (int f = 1; f <= kBuildingFloors; ++f) {
    const std::vector<size_t>& downs = s.floor_steps[r][f];
    out[f].spans_in_call = static_cast<int>(downs.size());
    if (out[f].state == FloorState::Active) continue;
    if (downs.empty()) {
      out[f].skip_reason = skip_reason(s, f, r);
      continue;
    }
    const auto it = std::upper_bound(downs.begin(), downs.end(), step);
    if (it == downs.begin()) {
      out[f].state = FloorState::Ahead;
      out[f].span = s.steps[downs.front()].span;
    } else {
      out[f].state = FloorState::Visited;
      out[f].span = s.steps[*(it - 1)].span;
    }
  }
  return out;
}

// [SECTION] Warm repeats --------------------------------------------------------

namespace {

int64_t median(std::vector<int64_t> v) {
  std::sort(v.begin(), v.end());
  const size_t m = v.size() / 2;
  return v.size() % 2 ? v[m] : (v[m - 1] + v[m]) / 2;
}

}  // namespace

Timing timing_of(const Story& s, size_t span) {
  Timing t;
  t.inclusive_ns = s.trace->spans[span].duration_ns();
  t.self_ns = s.self_ns[span];
  if (s.down_step[span] == SIZE_MAX) return t;
  // The path of child positions from the root to `span`.
  std::vector<size_t> path;
  size_t root = span;
  for (size_t p = s.parent_index[span]; p != SIZE_MAX; root = p, p = s.parent_index[p]) {
    path.push_back(s.child_pos[root]);
  }
  std::reverse(path.begin(), path.end());
  const size_t r = root_of_step(s, s.down_step[span]);
  const std::vector<size_t>& line = s.lines[s.line_of_root[r]];
  if (line.size() < 2) return t;
  std::vector<int64_t> incl, self;
  for (size_t k = 0; k < line.size() && k <= kMaxWarmSamples; ++k) {
    size_t at = s.roots[line[k]];
    bool found = true;
    for (size_t pos : path) {
      if (pos >= s.children(at).size()) {
        found = false;
        break;
      }
      at = s.children(at)[pos];
    }
    if (!found || s.trace->spans[at].name != s.trace->spans[span].name) continue;
    if (k == 0) {
      t.cold_inclusive_ns = s.trace->spans[at].duration_ns();
      continue;
    }
    incl.push_back(s.trace->spans[at].duration_ns());
    self.push_back(s.self_ns[at]);
  }
  if (incl.empty()) return t;
  t.warm_samples = static_cast<int>(incl.size());
  t.inclusive_ns = median(incl);
  t.self_ns = median(self);
  return t;
}

}  // namespace descent::ui
