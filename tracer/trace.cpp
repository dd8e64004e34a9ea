// descent Trace: queries, the tree printer and the structure check.
//
// [SECTION] Queries
// [SECTION] Formatting helpers
// [SECTION] Tree printer
// [SECTION] Structure check
// [SECTION] Files
#include "tracer/trace.h"

#include <algorithm>
#include <cinttypes>
#include <cstdio>
#include <fstream>
#include <string>
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
    if (c == '\n') out += "\\n";
    else if (c == '\t') out += "\\t";
    else if (c < 0x20 || c == 0x7f) {
      static constexpr char kHex[] = "0123456789abcdef";
      out += "\\x";
      out += kHex[c >> 4];
      out += kHex[c & 15];
    }
    else out += static_cast<char>(c);
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
  for (size_t k = 0; k < s.args.size(); ++k) {
    line += k == 0 ? "  " : " ";
    line += printable(s.args[k].key) + "=" + format_value(s.args[k].value);
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
    if (s.parent == 0 || s.parent == s.id || !by_id.count(s.parent)) roots.push_back(i);
    else children[s.parent].push_back(i);
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
  const bool many_threads =
      std::any_of(t.spans.begin(), t.spans.end(), [&](const Span& s) { return s.thread != t.spans[0].thread; });
  int64_t current_thread = -1;
  for (size_t root : roots) {
    if (many_threads && t.spans[root].thread != current_thread) {
      current_thread = t.spans[root].thread;
      lines.push_back({"thread " + std::to_string(current_thread), 0, true});
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
      std::string indent = depth <= kMaxIndentDepth
                               ? std::string(depth * kIndentPerDepth, ' ')
                               : std::string(kMaxIndentDepth * kIndentPerDepth, ' ') + "(depth " +
                                     std::to_string(depth) + ") ";
      lines.push_back({indent + describe(s), s.duration_ns(), false});
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

void write_text_file(const std::string& path, const std::string& text) {
  std::ofstream f(path, std::ios::binary);
  if (!f) throw std::runtime_error("cannot open '" + path + "' for writing");
  f << text;
  f.close();
  if (!f) throw std::runtime_error("error writing '" + path + "'");
}

}  // namespace descent::trace
