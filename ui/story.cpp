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

std::string arg_string(const trace::Span& s, const char* key) {
  const trace::ArgValue* v = s.find_arg(key);
  const std::string* x = v ? std::get_if<std::string>(v) : nullptr;
  return x ? *x : std::string();
}

bool has_backend(const std::string& keyset) {
  return keyset.find("CPU") != std::string::npos || keyset.find("Sim") != std::string::npos ||
         keyset.find("CUDA") != std::string::npos;
}

// The facts of root r's call: one pass over its down steps.
CallFacts call_facts(const Story& s, size_t r) {
  using trace::Floor;
  const trace::Trace& t = *s.trace;
  CallFacts c;
  auto first = [](size_t& slot, size_t i) {
    if (slot == SIZE_MAX) slot = i;
  };
  for (size_t k = s.down_step[s.roots[r]]; k <= s.up_step[s.roots[r]]; ++k) {
    if (!s.steps[k].down) continue;
    const size_t i = s.steps[k].span;
    const trace::Span& sp = t.spans[i];
    if (sp.floor != Floor::Python && sp.floor != Floor::None) first(c.first_below_python, i);
    const size_t p = s.parent_index[i];
    const trace::Floor pf = p == SIZE_MAX ? Floor::None : t.spans[p].floor;
    switch (sp.floor) {
      case Floor::Dispatch: {
        const std::string keyset = arg_string(sp, "keyset");
        c.device_keys |= keyset.find("Sim") != std::string::npos || keyset.find("CUDA") != std::string::npos;
        // An op called from Python or the binding, not a redispatch nor an op called by another kernel.
        if (sp.find_arg("redispatch") || pf == Floor::Dispatch || pf == Floor::Autograd || pf == Floor::Kernels) break;
        first(c.first_dispatch, i);
        if (!sp.find_arg("keyset")) break;
        if (arg_string(sp, "fallthrough").find("Autograd") != std::string::npos)
          first(c.autograd_fell_through, i);
        else if (!has_backend(keyset))
          first(c.factory, i);
        else if (keyset.find("Autograd") == std::string::npos)
          first(c.no_autograd_key, i);
        break;
      }
      case Floor::Kernels: {
        if (sp.name.starts_with("parallel_for")) break;
        const std::string v = arg_string(sp, "variant");
        if (v == "reference" || v == "optimized")
          first(c.cpu_kernel, i);
        else if (v == "sim" || v == "cuda")
          first(c.device_kernel, i);
        else if (v.starts_with("view"))
          first(c.view_kernel, i);
        else if (v.empty() && sp.args.empty())
          first(c.stopped_kernel, i);
        break;
      }
      case Floor::Allocator:
        if (sp.name == "caching_free") first(c.free_span, i);
        break;
      case Floor::Streams: {
        const std::string api = arg_string(sp, "api");
        if (api.find("ynchronize") != std::string::npos || sp.name == "event_synchronize")
          first(c.wait, i);
        else if (sp.name.find("Memcpy") != std::string::npos)
          first(c.copy, i);
        else if (sp.name.starts_with("event_") || sp.name == "stream_wait_event")
          first(c.event, i);
        break;
      }
      default:
        break;
    }
  }
  return c;
}

}  // namespace

int building_floor(trace::Floor f) {
  const int i = static_cast<int>(f);
  if (i >= 1 && i <= kBuildingFloors) return i;
  return f == trace::Floor::Device ? kBuildingFloors : 0;
}

bool is_helper_span(const Story& s, size_t i) {
  const size_t p = s.parent_index[i];
  if (p == SIZE_MAX) return false;  // a root is the statement itself
  const trace::Span& sp = s.trace->spans[i];
  const trace::Span& parent = s.trace->spans[p];
  if (sp.floor == trace::Floor::Python && parent.floor == trace::Floor::Python) return true;  // a Python helper
  // A redispatch: above it, among the spans of the same name (the op's
  // dispatch, its Autograd kernel), one on its own floor already.
  for (size_t a = p; a != SIZE_MAX && s.trace->spans[a].name == sp.name; a = s.parent_index[a]) {
    if (s.trace->spans[a].floor == sp.floor) return true;
  }
  return false;
}

namespace {

// The tree: each span's parent (a backward node run on another thread under
// the span that made it ready), self times, the roots on the told thread, and
// the children as one flat list in start order.
void link_tree(Story& s, const trace::Trace& t) {
  const size_t n = t.spans.size();
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
}

// The steps: a depth-first walk of each root on the told thread, into each
// span and out of it (a folded helper has no steps of its own).
void walk_steps(Story& s, const trace::Trace& t, bool fold_helpers) {
  const size_t n = t.spans.size();
  // Depth-first walk of each root on the told thread, iteratively (a loaded
  // file may nest deeper than the C++ stack could recurse).
  struct Frame {
    size_t span;
    size_t next_child;
    bool folded;  // a helper with no steps of its own (Note [The beginner's story])
  };
  std::vector<Frame> stack;
  s.steps.reserve(2 * n);
  for (size_t root : s.roots) {
    stack.push_back({root, 0, false});
    s.down_step[root] = s.steps.size();
    s.steps.push_back({root, true, t.spans[root].start_ns});
    while (!stack.empty()) {
      Frame& f = stack.back();
      if (f.next_child < s.children(f.span).size()) {
        const size_t c = s.children(f.span)[f.next_child++];
        s.depth[c] = static_cast<int>(stack.size());
        const bool fold = fold_helpers && is_helper_span(s, c);
        if (!fold) {
          s.down_step[c] = s.steps.size();
          s.steps.push_back({c, true, t.spans[c].start_ns});
        }
        stack.push_back({c, 0, fold});
      } else {
        if (!f.folded) {
          s.up_step[f.span] = s.steps.size();
          s.steps.push_back({f.span, false, t.spans[f.span].end_ns});
        }
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
}

// Per root its floors' steps and facts; the repeats inside a call (by path of
// names) and the calls of each line (by the root's name): Note [Cold and warm times].
void index_calls(Story& s, const trace::Trace& t) {
  const size_t n = t.spans.size();
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
  s.facts.resize(s.roots.size());
  for (size_t r = 0; r < s.roots.size(); ++r) s.facts[r] = call_facts(s, r);
  // Repeats inside a call: spans grouped by the path of names from their
  // root (a hash of the parent's path and the span's name), in story order.
  s.repeat_group.assign(n, UINT32_MAX);
  {
    std::vector<uint64_t> path_hash(n, 0);
    std::unordered_map<uint64_t, uint32_t> group_of;
    for (const Step& st : s.steps) {
      if (!st.down) continue;
      const size_t i = st.span, p = s.parent_index[i];
      const uint64_t parent = p == SIZE_MAX ? 0 : path_hash[p];
      path_hash[i] = (parent * 0x100000001b3ULL) ^ std::hash<std::string_view>{}(t.spans[i].name);
      if (p == SIZE_MAX) continue;  // a root is repeated by its line (below), not inside a call
      const auto [it, fresh] = group_of.emplace(path_hash[i], static_cast<uint32_t>(s.repeats.size()));
      if (fresh) s.repeats.emplace_back();
      s.repeat_group[i] = it->second;
      if (s.repeats[it->second].size() <= kMaxWarmSamples) s.repeats[it->second].push_back(i);
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
}

}  // namespace

Story build_story(const trace::Trace& t, bool fold_helpers) {
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
  link_tree(s, t);
  walk_steps(s, t, fold_helpers);
  index_calls(s, t);
  return s;
}

size_t root_of_span(const Story& s, size_t i) {
  while (s.parent_index[i] != SIZE_MAX) i = s.parent_index[i];
  return i;
}

size_t root_of_step(const Story& s, size_t step) {
  const size_t root = root_of_span(s, s.steps[step].span);
  const auto it = std::lower_bound(s.roots.begin(), s.roots.end(), root,
                                   [&](size_t a, size_t b) { return s.down_step[a] < s.down_step[b]; });
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

// "synchronize, floor 7"
std::string named(const Story& s, size_t i) {
  return s.trace->spans[i].name + ", floor " + std::to_string(static_cast<int>(s.trace->spans[i].floor));
}
const std::string& name_of(const Story& s, size_t i) { return s.trace->spans[i].name; }

// What the call did instead of reaching a floor, for the reasons below.
std::string instead(const Story& s, const CallFacts& c) {
  if (c.first_below_python == SIZE_MAX) return "nothing below floor 1 ran";
  if (c.free_span != SIZE_MAX && c.first_dispatch == SIZE_MAX) return "it only freed a block (caching_free, floor 6)";
  if (c.wait != SIZE_MAX && c.first_dispatch == SIZE_MAX) return "it only waited (" + named(s, c.wait) + ")";
  return "it went straight to " + named(s, c.first_below_python);
}

// Why the call of root r never reaches floor `f`, derived from what the trace
// recorded for it (CallFacts), in a short sentence a learner can check.
std::string skip_reason(const Story& s, int f, size_t r) {
  const bool anywhere = s.floor_anywhere[f];  // does any call of the trace reach this floor?
  const auto format = s.trace->metadata.find("source.format");
  if (format != s.trace->metadata.end() && format->second == "kineto") {
    return anywhere ? "PyTorch's profiler recorded nothing on this floor for this call"
                    : "PyTorch's profiler records no event on this floor (it has no span for its binding, its "
                      "key-set computation, or CPU allocations unless asked)";
  }
  const CallFacts& c = s.facts[r];
  const trace::Span& root = s.trace->spans[s.roots[r]];
  const bool ops = c.first_dispatch != SIZE_MAX;
  const bool del = root.name.starts_with("del ");
  switch (f) {
    case 1:
      return "the call did not start in Python: its first span is " + named(s, s.roots[r]);
    case 2:
      if (c.first_below_python == SIZE_MAX) {
        return del ? "nothing below floor 1 was recorded: freeing a CPU tensor is not traced"
                   : "nothing below floor 1 was recorded: the statement ran no op";
      }
      return "no op's arguments were parsed: C++ was entered directly (" + named(s, c.first_below_python) + ")";
    case 3:
      return ops ? "no op was dispatched on this thread" : "no op was dispatched: " + instead(s, c);
    case 4:
      if (!ops) return "no op was dispatched: " + instead(s, c);
      if (c.autograd_fell_through != SIZE_MAX)
        return name_of(s, c.autograd_fell_through) + " has no derivative: its Autograd key fell through";
      if (c.factory != SIZE_MAX) {
        return name_of(s, c.factory) + " is a factory: no tensor argument, so no Autograd key (key set " +
               arg_string(s.trace->spans[c.factory], "keyset") + ")";
      }
      if (c.no_autograd_key != SIZE_MAX) {
        return name_of(s, c.no_autograd_key) + " ran with the Autograd keys excluded (key set " +
               arg_string(s.trace->spans[c.no_autograd_key], "keyset") + ")";
      }
      return "the ops dispatched ran no Autograd kernel (no key set was recorded to say why)";
    case 5:
      if (!ops) return "no op was dispatched: " + instead(s, c);
      return "no kernel ran: the call stopped at the dispatcher (an error)";
    case 6:
      if (c.view_kernel != SIZE_MAX && c.cpu_kernel == SIZE_MAX && c.device_kernel == SIZE_MAX) {
        return "nothing allocated: " + name_of(s, c.view_kernel) + " is a view of memory that exists";
      }
      if (c.stopped_kernel != SIZE_MAX)
        return "nothing allocated: " + name_of(s, c.stopped_kernel) + " raised before making its output";
      if (!ops) return "no allocator span: " + instead(s, c) + (del ? " (freeing a CPU tensor is not traced)" : "");
      return "nothing allocated: the call made no new memory (in place, or a result that existed)";
    case 8:
      if (!s.floor_steps[r][7].empty()) {
        if (c.wait != SIZE_MAX) return "nothing launched: on floor 7 it only waited (" + name_of(s, c.wait) + ")";
        if (c.copy != SIZE_MAX) return "nothing launched: on floor 7 it queued a copy, which is no kernel";
        if (c.event != SIZE_MAX) return "nothing launched: on floor 7 it only recorded or waited for an event";
        return "nothing launched: what it queued on floor 7 is no kernel";
      }
      [[fallthrough]];
    case 7:
      if (c.cpu_kernel != SIZE_MAX && c.device_kernel == SIZE_MAX) {
        return "CPU tensors go no deeper than floor 6: " + name_of(s, c.cpu_kernel) + " ran its " +
               arg_string(s.trace->spans[c.cpu_kernel], "variant") + " loop on the calling thread";
      }
      if (c.free_span != SIZE_MAX && !ops) return "nothing queued: a freed block goes back to the pool, on the host";
      if (!ops) return "nothing queued: " + instead(s, c);
      if (c.view_kernel != SIZE_MAX && c.device_kernel == SIZE_MAX) return "nothing queued: a view moves no data";
      if (c.stopped_kernel != SIZE_MAX) return "nothing queued: the kernel raised before its loop";
      if (c.device_kernel != SIZE_MAX)
        return "nothing queued: " + name_of(s, c.device_kernel) + " only made its output";
      return c.device_keys ? "nothing was queued on a device stream in this call"
                           : "no op of this call ran on a device: nothing was queued or launched";
    default:
      return "not reached";
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
  // Going up, the floor of the span left shows it, as the detail panel does.
  const int left = st.down ? 0 : building_floor(s.trace->spans[st.span].floor);
  if (left != 0) {
    out[left].span = st.span;
    if (out[left].state != FloorState::Active) out[left].state = FloorState::Visited;
  }
  for (int f = 1; f <= kBuildingFloors; ++f) {
    const std::vector<size_t>& downs = s.floor_steps[r][f];
    out[f].spans_in_call = static_cast<int>(downs.size());
    if (out[f].state == FloorState::Active || f == left) continue;
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
  t.inclusive_ns = t.own_inclusive_ns = s.trace->spans[span].duration_ns();
  t.self_ns = t.own_self_ns = s.self_ns[span];
  if (s.down_step[span] == SIZE_MAX) return t;
  t.warm = is_warm(s, span);
  // The path of child positions from the root to `span`.
  std::vector<size_t> path;
  size_t root = span;
  for (size_t p = s.parent_index[span]; p != SIZE_MAX; root = p, p = s.parent_index[p]) {
    path.push_back(s.child_pos[root]);
  }
  std::reverse(path.begin(), path.end());
  const size_t r = root_of_step(s, s.down_step[span]);
  const std::vector<size_t>& line = s.lines[s.line_of_root[r]];
  std::vector<int64_t> incl, self;
  if (line.size() < 2) {  // a line run once: its repeats inside the call, if any
    if (s.repeat_group[span] == UINT32_MAX) return t;
    const std::vector<size_t>& same = s.repeats[s.repeat_group[span]];
    if (same.size() < 2) return t;
    t.cold_inclusive_ns = s.trace->spans[same[0]].duration_ns();
    t.cold_known = true;
    if (same.size() < 3) return t;  // one later pass: its own time, no median of one (Note [Cold and warm times])
    for (size_t k = 1; k < same.size(); ++k) {
      incl.push_back(s.trace->spans[same[k]].duration_ns());
      self.push_back(s.self_ns[same[k]]);
    }
    t.warm_samples = static_cast<int>(incl.size());
    t.inclusive_ns = median(incl);
    t.self_ns = median(self);
    return t;
  }
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
      t.cold_known = true;
      continue;
    }
    incl.push_back(s.trace->spans[at].duration_ns());
    self.push_back(s.self_ns[at]);
  }
  if (incl.empty()) return t;
  t.warm_samples = static_cast<int>(incl.size());
  t.across_runs = true;
  t.inclusive_ns = median(incl);
  t.self_ns = median(self);
  return t;
}

namespace {
std::string duration_text_ns(int64_t ns) { return trace::format_duration(ns); }
}  // namespace

std::string timing_text(const Timing& t) {
  const std::string lead = std::string(time_word(t)) + " " + duration_text_ns(t.lead_inclusive_ns()) + " inclusive, " +
                           duration_text_ns(t.lead_self_ns()) + " self";
  const std::string cold = t.cold_known ? "cold first call " + duration_text_ns(t.cold_inclusive_ns) : "";
  if (t.leads_with_median()) return lead + "  (" + time_source(t) + (cold.empty() ? "" : "; " + cold) + ")";
  if (t.warm_samples > 0) {  // a cold span whose line's later calls give a warm median
    Timing later = t;
    later.warm = true;
    return lead + "  (" + time_source(later) + ": " + duration_text_ns(t.inclusive_ns) + ")";
  }
  if (t.warm && t.cold_known) return lead + "  (a repeat inside its line, its own time; " + cold + ")";
  return lead;
}

std::string time_source(const Timing& t) {
  if (t.leads_with_median()) {
    if (t.warm_samples == 1) return t.across_runs ? "the warm run's time" : "the warm pass's time";
    return "the warm median of " + std::to_string(t.warm_samples) + (t.across_runs ? " runs" : " passes");
  }
  return t.warm ? "a repeat's own time, warm" : "a first call, cold";
}

RunOf run_of_step(const Story& s, size_t step) {
  RunOf r;
  if (step >= s.steps.size() || s.roots.empty()) return r;
  const size_t root = root_of_step(s, step);
  const std::vector<size_t>& line = s.lines[s.line_of_root[root]];
  r.n = line.size();
  r.k = static_cast<size_t>(std::find(line.begin(), line.end(), root) - line.begin()) + 1;
  return r;
}

bool is_warm(const Story& s, size_t span) {
  if (span >= s.down_step.size() || s.down_step[span] == SIZE_MAX || s.roots.empty()) return false;
  const size_t root = root_of_step(s, s.down_step[span]);
  const std::vector<size_t>& line = s.lines[s.line_of_root[root]];
  if (!line.empty() && line.front() != root) return true;  // a repeat of its line
  if (s.repeat_group[span] == UINT32_MAX) return false;
  return s.repeats[s.repeat_group[span]].front() != span;  // a repeat inside its call
}

size_t median_run_step(const Story& s, size_t step) {
  if (step >= s.steps.size() || s.roots.empty()) return step;
  const size_t root = root_of_step(s, step);
  const std::vector<size_t>& line = s.lines[s.line_of_root[root]];
  if (line.size() < 3) return step;
  std::vector<size_t> warm(line.begin() + 1, line.end());  // positions in `roots`, the cold first left out
  const auto time = [&](size_t r) { return s.trace->spans[s.roots[r]].duration_ns(); };
  std::sort(warm.begin(), warm.end(), [&](size_t a, size_t b) { return time(a) < time(b); });
  const size_t to = warm[(warm.size() - 1) / 2];
  const size_t offset = step - s.down_step[s.roots[root]];
  const size_t first = s.down_step[s.roots[to]], last = s.up_step[s.roots[to]];
  return std::min(first + offset, last);
}

}  // namespace descent::ui
