// descent Trace: queries, the tree printer and the structure check.
//
// [SECTION] Queries
// [SECTION] Formatting helpers
// [SECTION] Tree printer
// [SECTION] Repeated runs
// [SECTION] Structure check
// [SECTION] Files
#include "tracer/trace.h"

#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <cinttypes>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

namespace descent::trace {

// [SECTION] Queries --------------------------------------------------------------

const ArgValue* Span::find_arg(const std::string& key) const {
  for (const SpanArg& a : args) {
    if (a.key == key) return &a.value;
  }
  return nullptr;
}

namespace {
constexpr size_t kDenseSlack = 65536;  // ids below 4 * spans + this go in SpanIndex's table
}  // namespace

SpanIndex::SpanIndex(const Trace& t) {
  for (size_t i = 0; i < t.spans.size(); ++i) add(t.spans[i].id, i);
}

bool SpanIndex::add(uint64_t id, size_t index) {
  if (find(id) != SIZE_MAX) return false;
  ++count_;
  const uint64_t limit = 4 * static_cast<uint64_t>(count_) + kDenseSlack;
  if (id < limit && index < UINT32_MAX) {
    if (id >= dense_.size()) dense_.resize(std::max<size_t>(id + 1, std::min<uint64_t>(2 * dense_.size(), limit)), 0);
    dense_[id] = static_cast<uint32_t>(index + 1);
  } else {
    sparse_.emplace(id, index);
  }
  return true;
}

size_t SpanIndex::find(uint64_t id) const {
  if (id < dense_.size()) {
    if (dense_[id] != 0) return dense_[id] - 1;
  }
  if (sparse_.empty()) return SIZE_MAX;
  const auto it = sparse_.find(id);
  return it == sparse_.end() ? SIZE_MAX : it->second;
}

namespace {
// Orders span indices by start time, ties by id.
void sort_by_start(const Trace& t, std::vector<size_t>& indices) {
  std::stable_sort(indices.begin(), indices.end(), [&](size_t a, size_t b) {
    const Span& x = t.spans[a];
    const Span& y = t.spans[b];
    return x.start_ns != y.start_ns ? x.start_ns < y.start_ns : x.id < y.id;
  });
}
}  // namespace

std::vector<size_t> children_of(const Trace& t, uint64_t parent_id) {
  std::vector<size_t> out;
  for (size_t i = 0; i < t.spans.size(); ++i) {
    if (t.spans[i].parent == parent_id) out.push_back(i);
  }
  sort_by_start(t, out);
  return out;
}

// [SECTION] Formatting helpers -------------------------------------------------

namespace {

constexpr size_t kIndentPerDepth = 2;      // spaces
constexpr size_t kMaxIndentDepth = 40;     // levels drawn as indentation
constexpr size_t kMaxDurationColumn = 96;  // characters; longer lines just get a gap
constexpr size_t kDurationWidth = 9;       // e.g. " 12.3 us"
constexpr size_t kMaxProblemsShown = 20;

std::string printf_string(const char* fmt, double v) {
  char buf[64];
  std::snprintf(buf, sizeof buf, fmt, v);
  return buf;
}

// A value in [1, 1000) with three significant figures: 1.23, 12.3, 123.
std::string three_figures(double v) {
  if (v < 10) return printf_string("%.2f", v);
  if (v < 100) return printf_string("%.1f", v);
  return printf_string("%.0f", v);
}

}  // namespace

std::string format_duration(int64_t ns) {
  if (ns < 0) return std::to_string(ns) + " ns";
  if (ns < 1000) return std::to_string(ns) + " ns";
  static constexpr const char* kUnits[] = {"us", "ms", "s"};
  double v = static_cast<double>(ns) / 1000.0;
  for (int u = 0; u < 3; ++u) {
    // Move up a unit when rounding would print "1000".
    if (v < 999.5 || u == 2) return three_figures(v) + " " + kUnits[u];
    v /= 1000.0;
  }
  return "";
}

namespace {

// Control bytes shown as escapes, so a span stays on one line.
std::string printable(const std::string& s) {
  std::string out;
  for (unsigned char c : s) {
    if (c == '\n')
      out += "\\n";
    else if (c == '\t')
      out += "\\t";
    else if (c < 0x20 || c == 0x7f) {
      static constexpr char kHex[] = "0123456789abcdef";
      out += "\\x";
      out += kHex[c >> 4];
      out += kHex[c & 15];
    } else
      out += static_cast<char>(c);
  }
  return out;
}

std::string format_value(const ArgValue& v) {
  if (const auto* i = std::get_if<int64_t>(&v)) return std::to_string(*i);
  if (const auto* d = std::get_if<double>(&v)) return printf_string("%.3g", *d);
  if (const auto* b = std::get_if<bool>(&v)) return *b ? "true" : "false";
  return printable(std::get<std::string>(v));
}

// `[3 dispatch ] add  keyset=CPU kernel=CPU` (without indentation or duration).
std::string describe(const Span& s) {
  char floor[32];
  std::snprintf(floor, sizeof floor, "[%d %-9s] ", static_cast<int>(s.floor), floor_name(s.floor));
  std::string line = floor + printable(s.name);
  bool first = true;
  for (const SpanArg& a : s.args) {
    if (a.key == kDecidedAt) continue;  // a source line, for the app (Note [Where a span decided])
    line += first ? "  " : " ";
    line += printable(a.key) + "=" + format_value(a.value);
    first = false;
  }
  return line;
}

// `-> device: add_kernel  cuda:0 stream 7, 12.3 us after the launch began`:
// a device span under its launch, timed from the launch's start.
std::string describe_device_work(const Trace& t, const Span& d, const Span& launch) {
  std::string line = "-> device: " + printable(d.name);
  const auto row = t.metadata.find("thread." + std::to_string(d.thread));
  if (row != t.metadata.end()) line += "  " + printable(row->second) + ",";
  int64_t after = 0;
  const bool overflow = __builtin_sub_overflow(d.start_ns, launch.start_ns, &after);
  if (!overflow && after != INT64_MIN) {
    line += after >= 0 ? " " + format_duration(after) + " after the launch began"
                       : " " + format_duration(-after) + " before the launch began (clocks disagree)";
  }
  return line;
}

}  // namespace

// [SECTION] Tree printer ------------------------------------------------------------

std::string format_tree(const Trace& t) {
  const size_t n = t.spans.size();
  std::unordered_map<uint64_t, size_t> by_id;
  for (size_t i = 0; i < n; ++i) by_id.emplace(t.spans[i].id, i);

  // Roots: no parent, or a parent that is missing or itself (malformed traces).
  std::unordered_map<uint64_t, std::vector<size_t>> children;
  std::vector<size_t> roots;
  for (size_t i = 0; i < n; ++i) {
    const Span& s = t.spans[i];
    if (s.parent == 0 || s.parent == s.id || !by_id.count(s.parent))
      roots.push_back(i);
    else
      children[s.parent].push_back(i);
  }
  sort_by_start(t, roots);
  std::stable_sort(roots.begin(), roots.end(),
                   [&](size_t a, size_t b) { return t.spans[a].thread < t.spans[b].thread; });
  for (auto& [id, list] : children) sort_by_start(t, list);

  // Depth-first walk without recursion (a fuzzed trace may be very deep).
  struct Line {
    std::string left;
    int64_t duration_ns;
    bool header;
  };
  std::vector<Line> lines;
  std::vector<bool> visited(n, false);
  // Note [Device spans] in tracer.h: which clock device times are on, then
  // each device span again under the launch its "ac2g" flow leaves.
  for (const auto& [key, label] :
       {std::pair{"device.clock", "device clock: "}, std::pair{"device.timing", "device timing: "}}) {
    const auto it = t.metadata.find(key);
    if (it != t.metadata.end()) lines.push_back({label + printable(it->second), 0, true});
  }
  std::unordered_map<uint64_t, std::vector<size_t>> device_work;  // launch span id -> device spans
  for (const Flow& f : t.flows) {
    const auto to = by_id.find(f.to);
    if (f.name == "ac2g" && to != by_id.end() && t.spans[to->second].floor == Floor::Device) {
      device_work[f.from].push_back(to->second);
    }
  }
  for (auto& [id, list] : device_work) sort_by_start(t, list);
  const auto row_name = [&](uint32_t thread) {
    const std::string key = "thread." + std::to_string(thread);
    const auto it = t.metadata.find(key);
    const bool device = t.metadata.count(key + ".device") > 0;
    return "thread " + std::to_string(thread) + (device && it != t.metadata.end() ? " (" + it->second + ")" : "");
  };
  const bool many_threads =
      std::any_of(t.spans.begin(), t.spans.end(), [&](const Span& s) { return s.thread != t.spans[0].thread; });
  int64_t current_thread = -1;
  for (size_t root : roots) {
    if (many_threads && t.spans[root].thread != current_thread) {
      current_thread = t.spans[root].thread;
      lines.push_back({row_name(t.spans[root].thread), 0, true});
    }
    std::vector<std::pair<size_t, size_t>> stack = {{root, 0}};  // (span index, depth)
    while (!stack.empty()) {
      const auto [i, depth] = stack.back();
      stack.pop_back();
      if (visited[i]) continue;
      visited[i] = true;
      const Span& s = t.spans[i];
      // Past kMaxIndentDepth levels the depth is written as a number, so a
      // very deep (fuzzed) trace prints in linear, not quadratic, space.
      std::string indent = depth <= kMaxIndentDepth ? std::string(depth * kIndentPerDepth, ' ')
                                                    : std::string(kMaxIndentDepth * kIndentPerDepth, ' ') + "(depth " +
                                                          std::to_string(depth) + ") ";
      lines.push_back({indent + describe(s), s.duration_ns(), false});
      if (const auto work = device_work.find(s.id); work != device_work.end()) {
        for (size_t d : work->second) {
          lines.push_back({indent + "  " + describe_device_work(t, t.spans[d], s), t.spans[d].duration_ns(), false});
        }
      }
      const auto it = children.find(s.id);
      if (it == children.end()) continue;
      for (auto c = it->second.rbegin(); c != it->second.rend(); ++c) stack.push_back({*c, depth + 1});
    }
  }

  size_t column = 0;
  for (const Line& l : lines) {
    if (!l.header) column = std::max(column, l.left.size());
  }
  column = std::min(column, kMaxDurationColumn);
  std::string out;
  for (const Line& l : lines) {
    out += l.left;
    if (!l.header) {
      const std::string d = format_duration(l.duration_ns);
      out += std::string(l.left.size() < column ? column - l.left.size() : 0, ' ');
      out += std::string(2 + (d.size() < kDurationWidth ? kDurationWidth - d.size() : 0), ' ') + d;
    }
    out += '\n';
  }
  const auto unreached = static_cast<size_t>(std::count(visited.begin(), visited.end(), false));
  if (unreached > 0) out += "(" + std::to_string(unreached) + " spans not reachable from a root: parent cycle)\n";
  return out;
}

// [SECTION] Repeated runs ---------------------------------------------------------------

namespace {

// Children of every span by index, in start order; roots (no parent, or one
// missing or itself) in `roots`, in start order.
struct Tree {
  std::vector<std::vector<size_t>> children;
  std::vector<size_t> roots;
};

Tree tree_of(const Trace& t) {
  Tree tree;
  tree.children.resize(t.spans.size());
  const SpanIndex index(t);
  for (size_t i = 0; i < t.spans.size(); ++i) {
    const Span& s = t.spans[i];
    const size_t p = s.parent == 0 || s.parent == s.id ? SIZE_MAX : index.find(s.parent);
    if (p == SIZE_MAX)
      tree.roots.push_back(i);
    else
      tree.children[p].push_back(i);
  }
  sort_by_start(t, tree.roots);
  for (auto& list : tree.children) sort_by_start(t, list);
  return tree;
}

int64_t median(std::vector<int64_t> v) {
  std::sort(v.begin(), v.end());
  const size_t m = v.size() / 2;
  return v.size() % 2 ? v[m] : v[m - 1] + (v[m] - v[m - 1]) / 2;
}

// The roots of the code's thread (the thread of the earliest root), split
// into `runs` runs; std::invalid_argument when they do not split evenly.
std::vector<size_t> code_roots(const Trace& t, const Tree& tree, size_t runs) {
  if (runs < 1) throw std::invalid_argument("warm medians: runs must be at least 1, got " + std::to_string(runs));
  std::vector<size_t> roots;
  if (!tree.roots.empty()) {
    const uint32_t thread = t.spans[tree.roots.front()].thread;
    for (size_t r : tree.roots) {
      if (t.spans[r].thread == thread && t.spans[r].name != kEndOfRecordingWait) roots.push_back(r);
    }
  }
  if (roots.empty() || roots.size() % runs != 0) {
    throw std::invalid_argument("warm medians: the code's thread has " + std::to_string(roots.size()) +
                                " top-level spans, which do not split into " + std::to_string(runs) + " equal runs");
  }
  return roots;
}

// warm_medians on a tree already built; also returns the last run's spans
// with their depths, depth-first (for the printer).
std::vector<WarmTime> warm_medians_of(const Trace& t, const Tree& tree, size_t runs,
                                      std::vector<std::pair<size_t, size_t>>* last_run) {
  const std::vector<size_t> roots = code_roots(t, tree, runs);
  const std::vector<int64_t> corrected = corrected_durations(t);
  const size_t per_run = roots.size() / runs;
  std::vector<WarmTime> out(t.spans.size());
  // Depth-first over the last run, carrying each span's match in every run
  // (SIZE_MAX: none). No recursion: a fuzzed trace may be very deep.
  struct Item {
    std::vector<size_t> match;  // match[r]: the span at the same place in run r
    size_t depth;
  };
  std::vector<Item> stack;
  for (size_t j = per_run; j-- > 0;) {
    Item item{std::vector<size_t>(runs), 0};
    for (size_t r = 0; r < runs; ++r) item.match[r] = roots[r * per_run + j];
    stack.push_back(std::move(item));
  }
  while (!stack.empty()) {
    Item item = std::move(stack.back());
    stack.pop_back();
    const size_t span = item.match[runs - 1];
    if (last_run) last_run->push_back({span, item.depth});
    WarmTime& w = out[span];
    std::vector<int64_t> warm;
    for (size_t r = 0; r < runs; ++r) {
      const size_t m = item.match[r];
      if (m == SIZE_MAX || t.spans[m].name != t.spans[span].name) {
        item.match[r] = SIZE_MAX;  // a run that went another way: nothing below matches either
        continue;
      }
      if (r == 0)
        w.cold_ns = corrected[m];
      else
        warm.push_back(corrected[m]);
    }
    if (!warm.empty()) {
      w.warm_ns = median(warm);
      w.warm_samples = static_cast<int>(warm.size());
    }
    const std::vector<size_t>& kids = tree.children[span];
    for (size_t p = kids.size(); p-- > 0;) {
      Item child{std::vector<size_t>(runs, SIZE_MAX), item.depth + 1};
      for (size_t r = 0; r < runs; ++r) {
        const size_t m = item.match[r];
        if (m != SIZE_MAX && p < tree.children[m].size()) child.match[r] = tree.children[m][p];
      }
      stack.push_back(std::move(child));
    }
  }
  return out;
}

}  // namespace

std::vector<int64_t> corrected_durations(const Trace& t) {
  const Tree tree = tree_of(t);
  // Descendants counted bottom-up over a depth-first order of the forest.
  std::vector<size_t> order;
  order.reserve(t.spans.size());
  std::vector<size_t> stack(tree.roots.rbegin(), tree.roots.rend());
  std::vector<bool> seen(t.spans.size(), false);
  while (!stack.empty()) {
    const size_t i = stack.back();
    stack.pop_back();
    if (seen[i]) continue;
    seen[i] = true;
    order.push_back(i);
    for (size_t c : tree.children[i]) stack.push_back(c);
  }
  std::vector<uint64_t> descendants(t.spans.size(), 0);
  std::vector<uint64_t> args(t.spans.size(), 0);  // arguments recorded by the span and its descendants
  for (size_t i = 0; i < t.spans.size(); ++i) args[i] = t.spans[i].args.size();
  std::vector<size_t> parent(t.spans.size(), SIZE_MAX);
  for (size_t i = 0; i < t.spans.size(); ++i) {
    for (size_t c : tree.children[i]) parent[c] = i;
  }
  for (size_t k = order.size(); k-- > 0;) {
    const size_t i = order[k];
    if (parent[i] != SIZE_MAX) {
      descendants[parent[i]] += 1 + descendants[i];
      args[parent[i]] += args[i];
    }
  }
  std::vector<int64_t> out(t.spans.size());
  const auto valid = [](double v) { return std::isfinite(v) && v > 0 ? v : 0.0; };
  const double cost = valid(t.span_cost_ns);  // what a span costs the spans around it
  const auto in_metadata = [&](const char* key) -> std::optional<double> {
    const auto it = t.metadata.find(key);
    if (it == t.metadata.end()) return std::nullopt;
    return valid(std::strtod(it->second.c_str(), nullptr));
  };
  // What a span costs itself: the part of its own begin and end between its
  // two clock reads. Traces from before it was measured take the whole cost.
  const double self = in_metadata("tracer.span_self_cost_ns").value_or(cost);
  // A statement run by the Python package (a floor-1 root) costs itself
  // more: the profile hook's events for its frame (measured by
  // descent.tracing). Older traces give only the excess over a whole span.
  const std::optional<double> statement_self = in_metadata("tracer.statement_self_cost_ns");
  const std::optional<double> statement_excess = in_metadata("tracer.statement_cost_ns");
  const double statement = statement_self ? *statement_self : statement_excess ? cost + *statement_excess : self;
  const double per_arg = in_metadata("tracer.arg_cost_ns").value_or(0);  // each argument a span records
  for (size_t i = 0; i < t.spans.size(); ++i) {
    const double measured = static_cast<double>(t.spans[i].duration_ns());
    const bool is_statement = parent[i] == SIZE_MAX && t.spans[i].floor == Floor::Python;
    const double own = is_statement ? statement : self;
    const double taken = own + cost * static_cast<double>(descendants[i]) + per_arg * static_cast<double>(args[i]);
    out[i] = static_cast<int64_t>(std::llround(std::max(measured - taken, 0.0)));
  }
  return out;
}

std::vector<WarmTime> warm_medians(const Trace& t, size_t runs) {
  return warm_medians_of(t, tree_of(t), runs, nullptr);
}

std::string format_tree_repeated(const Trace& t, size_t runs) {
  const Tree tree = tree_of(t);
  std::vector<std::pair<size_t, size_t>> last_run;  // (span, depth), depth-first
  const std::vector<WarmTime> times = warm_medians_of(t, tree, runs, &last_run);
  std::vector<std::string> lefts;
  size_t column = 0;
  for (const auto& [span, depth] : last_run) {
    std::string indent = depth <= kMaxIndentDepth ? std::string(depth * kIndentPerDepth, ' ')
                                                  : std::string(kMaxIndentDepth * kIndentPerDepth, ' ') + "(depth " +
                                                        std::to_string(depth) + ") ";
    lefts.push_back(indent + describe(t.spans[span]));
    column = std::max(column, lefts.back().size());
  }
  column = std::min(column, kMaxDurationColumn);
  const auto cell = [](int64_t ns) {
    const std::string d = ns < 0 ? "-" : format_duration(ns);
    return std::string(2 + (d.size() < kDurationWidth ? kDurationWidth - d.size() : 0), ' ') + d;
  };
  const auto pad = [&](const std::string& left) {
    return left + std::string(left.size() < column ? column - left.size() : 0, ' ');
  };
  const auto title = [](const std::string& s) {
    return std::string(2 + (s.size() < kDurationWidth ? kDurationWidth - s.size() : 0), ' ') + s;
  };
  std::string out = pad("the last of " + std::to_string(runs) + " runs") + title("warm") + title("cold") + "\n";
  for (size_t k = 0; k < last_run.size(); ++k) {
    const WarmTime& w = times[last_run[k].first];
    out += pad(lefts[k]) + cell(w.warm_ns) + cell(w.cold_ns) + "\n";
  }
  // Spans of the last run's time on other threads: not in the tree.
  if (!last_run.empty()) {
    const std::vector<size_t> roots = code_roots(t, tree, runs);
    const Span& first = t.spans[roots[roots.size() - roots.size() / runs]];
    const Span& last = t.spans[roots.back()];
    size_t others = 0;
    for (const Span& s : t.spans) {
      others += s.thread != first.thread && s.start_ns >= first.start_ns && s.start_ns <= last.end_ns;
    }
    if (others > 0) {
      out += "(and " + std::to_string(others) +
             " spans on other threads during the last run, e.g. parallel_for's "
             "chunks: not in this tree; the trace and its Chrome export have them)\n";
    }
  }
  return out;
}

// [SECTION] Structure check ------------------------------------------------------------

namespace {
std::string name_of(const Span& s) { return "span " + std::to_string(s.id) + " \"" + printable(s.name) + "\""; }
}  // namespace

std::string check_structure(const Trace& t) {
  std::vector<std::string> problems;
  SpanIndex by_id;
  for (size_t i = 0; i < t.spans.size(); ++i) {
    const Span& s = t.spans[i];
    if (s.id == 0) problems.push_back(name_of(s) + ": id must be > 0");
    if (!by_id.add(s.id, i)) {
      problems.push_back(name_of(s) + ": duplicate id (also used by \"" + printable(t.spans[by_id.find(s.id)].name) +
                         "\")");
    }
    if (s.end_ns < s.start_ns) {
      problems.push_back(name_of(s) + ": ends before it starts (" + std::to_string(s.start_ns) + " > " +
                         std::to_string(s.end_ns) + " ns)");
    }
  }
  for (const Span& s : t.spans) {
    if (s.parent == 0) continue;
    if (s.parent == s.id) {
      problems.push_back(name_of(s) + ": is its own parent");
      continue;
    }
    const size_t parent = by_id.find(s.parent);
    if (parent == SIZE_MAX) {
      problems.push_back(name_of(s) + ": parent " + std::to_string(s.parent) + " does not exist");
      continue;
    }
    const Span& p = t.spans[parent];
    if (p.thread != s.thread) {
      problems.push_back(name_of(s) + ": on thread " + std::to_string(s.thread) + " but its parent " + name_of(p) +
                         " is on thread " + std::to_string(p.thread));
    }
    if (s.start_ns < p.start_ns || s.end_ns > p.end_ns) {
      problems.push_back(name_of(s) + " [" + std::to_string(s.start_ns) + ", " + std::to_string(s.end_ns) +
                         "] ns is not inside its parent " + name_of(p) + " [" + std::to_string(p.start_ns) + ", " +
                         std::to_string(p.end_ns) + "] ns");
    }
  }
  // Parent cycles: walk up from each span. 1 = on the current walk, 2 = done.
  std::vector<uint8_t> state(t.spans.size(), 0);
  std::vector<size_t> walk;
  for (size_t i = 0; i < t.spans.size(); ++i) {
    walk.clear();
    for (size_t j = i; state[j] != 2;) {
      if (state[j] == 1) {
        problems.push_back(name_of(t.spans[j]) + ": its parent chain forms a cycle");
        break;
      }
      state[j] = 1;
      walk.push_back(j);
      const Span& s = t.spans[j];
      const size_t parent = (s.parent == 0 || s.parent == s.id) ? SIZE_MAX : by_id.find(s.parent);
      if (parent == SIZE_MAX) break;
      j = parent;
    }
    for (size_t k : walk) state[k] = 2;
  }

  if (problems.empty()) return "";
  std::string out;
  for (size_t k = 0; k < problems.size() && k < kMaxProblemsShown; ++k) out += problems[k] + "\n";
  if (problems.size() > kMaxProblemsShown) {
    out += "... and " + std::to_string(problems.size() - kMaxProblemsShown) + " more problems\n";
  }
  return out;
}

// [SECTION] Files ----------------------------------------------------------------------

// Note [Saving a file whole]
// ~~~~~~~~~~~~~~~~~~~~~~~~~~~
// Writing a file in place (open with O_TRUNC, write) destroys the old one
// first: a SIGKILL, a crash or a full disk halfway leaves half a trace, or an
// empty app.conf, and the good file is gone. So a save never touches the file
// it replaces until the new one is whole:
//   1. the text goes to a temporary file in the same folder (a hidden,
//      unique name, created with O_EXCL as mkstemp does, so two saves never
//      share one), with the old file's permissions;
//   2. every write() is checked (a short write is continued, EINTR retried),
//      then fsync() and close(), whose errors are real: a full disk or a
//      quota can first be reported there;
//   3. rename() puts it over the target in one step: a reader, or the
//      program after a crash, sees the old file or the new, never a part;
//   4. the folder is fsynced too, so the rename itself survives a power cut.
// On any failure the temporary file is removed, the old file stays as it was,
// and the error names the path and the reason from strerror ("cannot write
// 'a.trace': No space left on device"). A process killed between 1 and 3
// leaves its hidden temporary file behind (nothing can run after SIGKILL),
// but never a damaged target; the next save of the same target removes the
// temporary files of that target older than an hour (a save in progress in
// another process is younger than that). The temporary file is beside the target, not
// in /tmp, because rename() cannot cross file systems.
// Two targets are not replaced: a directory is an error before anything is
// written, and a file that exists but is not a regular one (/dev/stdout, a
// pipe) is written in place, since it cannot be renamed over. A symbolic
// link to a file is followed, so the file it names is replaced, not the link.
namespace {

[[noreturn]] void fail_write(const std::string& path, int error) {
  throw std::runtime_error("cannot write '" + path + "': " + std::strerror(error));
}

// The temporary files ".<base>.tmp-<16 hex digits>" in `dir` that a killed save
// of <base> left, an hour old or more (Note [Saving a file whole]); best effort.
void remove_stale_temporaries(const std::string& dir, const std::string& base) {
  constexpr time_t kStaleSeconds = 3600;
  const std::string prefix = "." + base + ".tmp-";
  DIR* d = ::opendir(dir.c_str());
  if (d == nullptr) return;
  const time_t now = ::time(nullptr);
  while (const dirent* e = ::readdir(d)) {
    const std::string_view name = e->d_name;
    if (name.size() != prefix.size() + 16 || !name.starts_with(prefix)) continue;
    if (name.substr(prefix.size()).find_first_not_of("0123456789abcdef") != std::string_view::npos) continue;
    const std::string full = (dir == "/" ? "/" : dir + "/") + std::string(name);
    struct stat st;
    if (::lstat(full.c_str(), &st) == 0 && S_ISREG(st.st_mode) && now - st.st_mtime >= kStaleSeconds) {
      ::unlink(full.c_str());
    }
  }
  ::closedir(d);
}

// Writes all of `text` to `fd`; 0, or the errno of the write that failed.
int write_all(int fd, const std::string& text) {
  const char* p = text.data();
  size_t left = text.size();
  while (left > 0) {
    const ssize_t n = ::write(fd, p, std::min<size_t>(left, size_t{1} << 30));
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return errno;
    if (n == 0) return EIO;  // no progress and no error: give up rather than spin
    p += n;
    left -= static_cast<size_t>(n);
  }
  return 0;
}

// The one in-place case: a target that exists and is not a regular file.
void write_in_place(const std::string& path, const std::string& text) {
  const int fd = ::open(path.c_str(), O_WRONLY | O_TRUNC | O_CLOEXEC);
  if (fd < 0) fail_write(path, errno);
  const int error = write_all(fd, text);
  if (::close(fd) != 0 && error == 0) fail_write(path, errno);
  if (error != 0) fail_write(path, error);
}

}  // namespace

void write_text_file(const std::string& path, const std::string& text) {
  if (path.empty()) fail_write(path, ENOENT);
  std::string target = path;
  struct stat st;
  bool exists = ::lstat(path.c_str(), &st) == 0;
  if (exists && S_ISLNK(st.st_mode)) {  // follow the link to the file it names
    char* real = ::realpath(path.c_str(), nullptr);
    if (real != nullptr) {
      target = real;
      std::free(real);
      exists = ::stat(target.c_str(), &st) == 0;
    } else {
      exists = false;  // a dangling link: replaced by the new file
    }
  }
  if (exists && S_ISDIR(st.st_mode)) fail_write(path, EISDIR);
  if (exists && !S_ISREG(st.st_mode)) return write_in_place(path, text);

  const size_t slash = target.rfind('/');
  const std::string dir = slash == std::string::npos ? "." : slash == 0 ? "/" : target.substr(0, slash);
  const std::string base = slash == std::string::npos ? target : target.substr(slash + 1);
  // 1. A temporary file of a unique name beside the target.
  static std::atomic<uint64_t> counter{0};
  constexpr uint64_t kSpread = 0x9e3779b97f4a7c15;  // 2^64 over the golden ratio: counts spread over every digit
  const uint64_t salt = static_cast<uint64_t>(::getpid()) << 32 ^
                        static_cast<uint64_t>(std::chrono::steady_clock::now().time_since_epoch().count());
  std::string tmp;
  int fd = -1;
  for (int attempt = 0; fd < 0; ++attempt) {
    char suffix[40];
    std::snprintf(suffix, sizeof suffix, ".tmp-%016" PRIx64, salt + kSpread * ++counter);
    tmp = (dir == "/" ? "/" : dir + "/") + "." + base + suffix;
    fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0666);  // the umask applies
    if (fd < 0 && (errno != EEXIST || attempt == 100)) fail_write(path, errno);
  }
  if (exists) (void)::fchmod(fd, st.st_mode & 07777);  // keep the old file's permissions
  // 2. Every write, the fsync and the close checked.
  int error = write_all(fd, text);
  if (error == 0 && ::fsync(fd) != 0) error = errno;
  if (::close(fd) != 0 && error == 0) error = errno;
  // 3. Renamed over the target in one step.
  if (error == 0 && ::rename(tmp.c_str(), target.c_str()) != 0) error = errno;
  if (error != 0) {
    ::unlink(tmp.c_str());
    fail_write(path, error);
  }
  remove_stale_temporaries(dir, base);
  // 4. The folder, so that the rename is on the disk too (best effort: some
  // file systems refuse to fsync a directory, and the file is whole anyway).
  const int dir_fd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (dir_fd >= 0) {
    (void)::fsync(dir_fd);
    ::close(dir_fd);
  }
}

}  // namespace descent::trace
