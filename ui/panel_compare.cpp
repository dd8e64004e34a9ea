// The compare view: PyTorch's real trace of a line (torch.profiler's Chrome
// JSON, placed on floors by the loader: Note [Placing PyTorch's events on
// floors]) beside descent's trace of the same line, floor against floor.
#include <algorithm>
#include <cstdlib>
#include <ctime>
#include <set>

#include "ui/app.h"

namespace descent::ui {

namespace {

struct FloorSummary {
  int spans = 0;
  int64_t self_ns = 0;
  std::vector<std::string> names;  // distinct, in order of appearance, a few
  bool within_dispatch = false;    // PyTorch's kernels: no event of their own, inside floor 3's self time
};

constexpr size_t kNamesShown = 4;

// Each floor's spans, self time and first names. In PyTorch's profile every
// aten op on the CPU is a call the dispatcher routed (floor 3) to a kernel
// (floor 5) that Kineto records no event for; an op that calls no other op
// (aten::to calls _to_copy, which calls copy_) did its work in that kernel,
// and it is counted on floor 5, its time inside the op's self time on floor 3
// (Note [Placing PyTorch's events on floors], tracer/load_chrome.cpp).
std::array<FloorSummary, 10> summarize(const trace::Trace& t, bool kineto) {
  std::array<FloorSummary, 10> out;
  const Story s = build_story(t);  // for self times
  std::set<uint64_t> calls_ops;    // the dispatcher calls that call another
  for (const trace::Span& sp : t.spans)
    if (sp.floor == trace::Floor::Dispatch && sp.parent != 0) calls_ops.insert(sp.parent);
  auto name = [](FloorSummary& fs, const std::string& n) {
    if (fs.names.size() < kNamesShown && std::find(fs.names.begin(), fs.names.end(), n) == fs.names.end())
      fs.names.push_back(n);
  };
  for (size_t i = 0; i < t.spans.size(); ++i) {
    const int f = static_cast<int>(t.spans[i].floor);
    if (f < 1 || f > 9) continue;
    FloorSummary& fs = out[f];
    ++fs.spans;
    fs.self_ns += s.self_ns[i];
    name(fs, t.spans[i].name);
    if (kineto && t.spans[i].floor == trace::Floor::Dispatch && !calls_ops.count(t.spans[i].id)) {
      FloorSummary& kernels = out[static_cast<int>(trace::Floor::Kernels)];
      ++kernels.spans;
      kernels.within_dispatch = true;
      name(kernels, t.spans[i].name + "'s kernel");
    }
  }
  return out;
}

// A floor's cell: its count and time (returned, for the state dump), then its first names.
std::string cell(const FloorSummary& fs) {
  if (fs.spans == 0) {
    ImGui::TextDisabled("-");
    return "-";
  }
  const std::string n = std::to_string(fs.spans);
  const std::string head =
      fs.within_dispatch
          ? n + (fs.spans == 1 ? " kernel" : " kernels") + ", no event of their own: inside floor 3's self time"
          : n + (fs.spans == 1 ? " span, " : " spans, ") + duration_text(fs.self_ns) + " self";
  ImGui::TextUnformatted(head.c_str());
  std::string names;
  for (const std::string& n : fs.names) names += (names.empty() ? "" : ", ") + n;
  ImGui::TextWrapped("%s", names.c_str());
  return head;
}

// The calls of a span's name: spans so named whose parent is not (a
// redispatch of aten::add opens aten::add inside aten::add, and PyTorch
// records the op once: Note [A span per redispatch]), in start order.
bool is_call(const trace::Trace& t, const trace::SpanIndex& index, size_t i) {
  const size_t p = index.find(t.spans[i].parent);
  return p == SIZE_MAX || t.spans[p].name != t.spans[i].name;
}

// Why PyTorch's profile has no event for a span on floor f.
const char* why_absent(int f) {
  switch (f) {
    case 1:
      return "torch.profiler records Python statements only with with_stack=True; this file has none";
    case 2:
      return "PyTorch's profiler has no span for the binding (THPVariable_* parsing its arguments)";
    case 4:
      return "the forward's Autograd kernels are not recorded on their own; autograd shows in backward's "
             "nodes (autograd::engine::evaluate_function)";
    case 5:
      return "PyTorch records the op (aten::...) but not which loop its kernel chose";
    case 6:
      return "the CPU and caching allocators record nothing unless profile_memory=True";
    default:
      return "PyTorch's profile has no event of that name";
  }
}

// The other trace's event for the current span: the same name, its k-th call
// where the current span is the k-th of its name here.
App::CompareMatch match_step(const App& app) {
  App::CompareMatch m;
  const size_t cur = app.current_span();
  if (cur == SIZE_MAX) return m;
  const trace::Trace& t = app.trace();
  const trace::SpanIndex index(t);
  size_t call = cur;  // the outermost span of its redispatch chain
  while (!is_call(t, index, call)) call = index.find(t.spans[call].parent);
  m.name = t.spans[call].name;
  for (size_t i = 0; i < t.spans.size(); ++i) {
    if (t.spans[i].name == m.name && t.spans[i].thread == t.spans[call].thread && is_call(t, index, i)) {
      ++m.k;
      if (i == call) break;
    }
  }
  const trace::Trace& o = *app.compare;
  const trace::SpanIndex other_index(o);
  std::vector<size_t> calls;
  for (size_t i = 0; i < o.spans.size(); ++i) {
    if (o.spans[i].name == m.name && is_call(o, other_index, i)) calls.push_back(i);
  }
  std::sort(calls.begin(), calls.end(), [&](size_t a, size_t b) { return o.spans[a].start_ns < o.spans[b].start_ns; });
  if (calls.empty()) {
    m.why = why_absent(building_floor(t.spans[call].floor));
  } else {
    m.other = calls[std::min(m.k, calls.size()) - 1];
    if (m.k > calls.size()) m.why = "it has fewer calls of it: the last one is shown";
    // A kernel here: PyTorch's ran inside the op's self time, with no event of its own.
    const auto format = o.metadata.find("source.format");
    const bool kineto = format != o.metadata.end() && format->second == "kineto";
    if (kineto && t.spans[cur].floor == trace::Floor::Kernels && o.spans[m.other].floor == trace::Floor::Dispatch &&
        m.why.empty()) {
      m.kernel = true;
      m.why = "its kernel (floor 5) ran inside this op's self time: Kineto records no kernel event";
    }
  }
  return m;
}

// Where and how PyTorch's file was made: a cold call on another machine.
std::string provenance(const trace::Trace& o) {
  const auto get = [&](const char* key) {
    const auto it = o.metadata.find(key);
    return it == o.metadata.end() ? std::string() : it->second;
  };
  // Kineto lists the machine's GPUs whatever the ops ran on: where they ran is
  // read off the file's own events (device work on floor 9 or none).
  const bool on_gpu = std::any_of(o.spans.begin(), o.spans.end(),
                                  [](const trace::Span& sp) { return sp.floor == trace::Floor::Device; });
  std::string s = "Recorded by torch.profiler";
  if (const std::string d = get("device"); !d.empty()) s += " on a machine with " + d;
  s += on_gpu ? ", its ops on the GPU" : ", its ops on the CPU";
  if (const std::string ns = get("chrome.baseTimeNanoseconds"); !ns.empty()) {
    const std::time_t secs = static_cast<std::time_t>(std::strtoll(ns.c_str(), nullptr, 10) / 1000000000LL);
    char day[32];
    if (std::tm tm{}; gmtime_r(&secs, &tm) && std::strftime(day, sizeof day, "%Y-%m-%d", &tm))
      s += std::string(", ") + day;
  }
  return s +
         ": one call, cold, on that machine. Its times do not compare with descent's here (another machine, "
         "and a warm median after R): compare which ops run and on which floors, not the microseconds.";
}

}  // namespace

void draw_compare(App& app) {
  app.panels_drawn.push_back("compare");
  if (!app.compare) {
    ImGui::TextWrapped(
        "Open PyTorch's own trace of the same line to put it beside descent's, floor against floor: "
        "File > Compare with PyTorch's trace, or descent app --compare FILE. torch.profiler writes one with "
        "prof.export_chrome_trace(\"t.json\"); tests/tracer/data/ holds two recorded on an H200.");
    return;
  }
  // Summaries are cached per pair of traces: a loaded Kineto file can be large.
  static const trace::Trace *cached_left = nullptr, *cached_right = nullptr;
  static std::array<FloorSummary, 10> left, right;
  if (cached_left != app.loaded.trace.get() || cached_right != app.compare.get()) {
    const auto format = app.compare->metadata.find("source.format");
    left = summarize(*app.loaded.trace, false);
    right = summarize(*app.compare, format != app.compare->metadata.end() && format->second == "kineto");
    cached_left = app.loaded.trace.get();
    cached_right = app.compare.get();
  }
  // The other side is PyTorch's profile, or another descent trace (the
  // by-hand half of a reference pair beside its autograd half, descent/pairs.py).
  const auto format = app.compare->metadata.find("source.format");
  const bool pytorch = format != app.compare->metadata.end() && format->second == "kineto";
  const char* other = pytorch ? "PyTorch" : "other trace";
  ImGui::TextWrapped("descent: %s", app.loaded.label.c_str());
  ImGui::TextWrapped("%s: %s (%zu events, %zu flows)", other, app.compare_label.c_str(), app.compare->spans.size(),
                     app.compare->flows.size());
  if (pytorch) {
    ImGui::PushStyleColor(ImGuiCol_Text, ImGui::GetStyleColorVec4(ImGuiCol_TextDisabled));
    app.compare_provenance = provenance(*app.compare);
    ImGui::TextWrapped("%s", app.compare_provenance.c_str());
    ImGui::PopStyleColor();
  }
  // The step: the current span, and the other trace's event that matches it.
  // Matched once per span on screen and pair of traces (a Kineto file can hold millions of events).
  static const trace::Trace *matched_left = nullptr, *matched_right = nullptr;
  static size_t matched_span = SIZE_MAX;
  if (matched_left != app.loaded.trace.get() || matched_right != app.compare.get() ||
      matched_span != app.current_span()) {
    app.compare_match = match_step(app);
    matched_left = app.loaded.trace.get();
    matched_right = app.compare.get();
    matched_span = app.current_span();
  }
  const App::CompareMatch& m = app.compare_match;
  int other_floor = 0;
  if (!m.name.empty()) {
    ImGui::Separator();
    ImGui::TextColored(ImVec4(1.0f, 0.85f, 0.3f, 1.0f), "Now: %s, its call %zu here", m.name.c_str(), m.k);
    if (m.other != SIZE_MAX) {
      const trace::Span& e = app.compare->spans[m.other];
      const int event_floor = building_floor(e.floor);
      other_floor = m.kernel ? static_cast<int>(trace::Floor::Kernels) : event_floor;  // the row lit
      ImGui::TextWrapped("%s: %s on floor %d (%s), %s%s%s", other, e.name.c_str(), event_floor,
                         floor_title(event_floor), duration_text(e.duration_ns()).c_str(), m.why.empty() ? "" : "; ",
                         m.why.c_str());
    } else {
      ImGui::TextWrapped("%s: nothing: %s.", other, m.why.c_str());
    }
  }
  if (!ImGui::BeginTable("##compare", 3, ImGuiTableFlags_Borders | ImGuiTableFlags_SizingStretchProp)) return;
  ImGui::TableSetupColumn("floor", ImGuiTableColumnFlags_WidthFixed, 120);
  // Whose times, cold or warm (Note [Cold and warm times]).
  size_t warm = 0;
  for (size_t r : app.story.roots) warm += is_warm(app.story, r);
  const size_t calls = app.story.roots.size();
  const std::string mine =
      warm == 0 ? "descent, cold"
                : "descent, " + std::to_string(calls - warm) + " cold + " + std::to_string(warm) + " warm calls";
  const std::string theirs = pytorch ? "PyTorch, one cold call" : other;
  ImGui::TableSetupColumn(mine.c_str());
  ImGui::TableSetupColumn(theirs.c_str());
  ImGui::TableHeadersRow();
  const int here = app.has_steps() ? token_floor(app.story, app.step()) : 0;
  for (int f = 1; f <= 9; ++f) {
    ImGui::TableNextRow();
    // The floor the token is on, and the floor of the other side's match, lit.
    if (f == here || f == other_floor) {
      ImGui::TableSetBgColor(ImGuiTableBgTarget_RowBg0, IM_COL32(255, 210, 80, f == here ? 40 : 24));
    }
    ImGui::TableNextColumn();
    ImGui::PushStyleColor(ImGuiCol_Text, floor_color_vec(static_cast<trace::Floor>(f)));
    ImGui::Text("%d %s", f, floor_title(f));
    ImGui::PopStyleColor();
    ImGui::TableNextColumn();
    app.compare_cells[f][0] = cell(left[f]);
    ImGui::TableNextColumn();
    app.compare_cells[f][1] = cell(right[f]);
  }
  ImGui::EndTable();
  if (pytorch) {
    ImGui::TextWrapped(
        "PyTorch's profiler records aten ops, CUDA runtime calls and GPU kernels; it has no span for its binding, "
        "its dispatcher's key-set computation or its allocator on the CPU, so those floors are empty on its side.");
  } else {
    ImGui::TextWrapped(
        "Two descent traces floor against floor: a program differentiated by autograd beside the same program "
        "with its backward written by hand (descent verify --autograd checks they agree) spends floor 4 on "
        "one side only.");
  }
}

}  // namespace descent::ui
