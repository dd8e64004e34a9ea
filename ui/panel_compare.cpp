// The compare view: PyTorch's real trace of a line (torch.profiler's Chrome
// JSON, placed on floors by the loader: Note [Placing PyTorch's events on
// floors]) beside descent's trace of the same line, floor against floor.
#include <algorithm>
#include <cstdlib>
#include <ctime>
#include <set>

#include "ui/app.h"
#include "ui/models.h"

namespace descent::ui {

namespace {

const ImVec4 kRaisedInk{1.0f, 0.45f, 0.4f, 1.0f};  // the floor that raised, and the error
constexpr ImU32 kRaisedRow = IM_COL32(230, 70, 60, 60);

constexpr size_t kOpsShown = 6;  // ops listed in a floor's cell before "+N more"

// Which cells show every op ("+N more" pressed): per side (0 descent, 1 the other), per floor.
std::array<std::array<bool, 10>, 2> g_all_ops{};

// A floor's cell: its count and time (returned, for the state dump), then its ops, each "name x3" where it
// ran more than once: the first kOpsShown, and a "+N more" button that lists them all (and "fewer" back).
std::string cell(App& app, const FloorOps& fs, int side, int f, bool raised) {
  if (fs.spans == 0) {
    ImGui::TextDisabled("-");
    return "-";
  }
  const std::string n = std::to_string(fs.spans);
  const std::string head =
      fs.within_dispatch
          ? n + (fs.spans == 1 ? " kernel" : " kernels") + ", no event of their own: inside floor 3's self time"
          : n + (fs.spans == 1 ? " span, " : " spans, ") + duration_text(fs.self_ns) + " self";
  text_fitted(app, "compare", head, 2);
  bool& all = g_all_ops[side][f];
  const size_t shown = all ? fs.ops.size() : std::min(kOpsShown, fs.ops.size());
  std::string names;
  for (size_t k = 0; k < shown; ++k) {
    const auto& [name, calls] = fs.ops[k];
    names += (k ? ", " : "") + name + (calls > 1 ? " x" + std::to_string(calls) : "");
  }
  ImGui::PushTextWrapPos(0);
  ImGui::TextUnformatted(names.c_str());
  ImGui::PopTextWrapPos();
  record_text(app, "compare", TextFit{names, names, 0, 0, false});
  if (fs.ops.size() > kOpsShown) {
    const std::string more = all ? "fewer" : "+" + std::to_string(fs.ops.size() - kOpsShown) + " more";
    const std::string id = more + "##ops" + std::to_string(side) + "_" + std::to_string(f);
    if (ImGui::SmallButton(id.c_str())) all = !all;
    record_text(app, "compare", TextFit{more, more, 0, 0, false});
  }
  if (raised) {
    ImGui::PushStyleColor(ImGuiCol_Text, kRaisedInk);
    text_fitted(app, "compare", "raised here", 1);
    ImGui::PopStyleColor();
  }
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

// A call that raised: the floor it stopped on, the exception, and PyTorch's place for the same check
// (Note [PyTorch's place for a failed check], models.cpp).
RaisedAt draw_raised(App& app) {
  const RaisedAt r = raised_at(app.story, app.loaded.error);
  if (r.span == SIZE_MAX) return r;
  ImGui::PushStyleColor(ImGuiCol_Text, kRaisedInk);
  text_fitted(
      app, "compare",
      "The call raised on floor " + std::to_string(r.floor) + " (" + floor_title(r.floor) + "), in " + r.op + ":", 2);
  ImGui::PopStyleColor();
  text_fitted(app, "compare", r.message, 4);
  const PyTorchCheck c = pytorch_check_of(r.op, r.message);
  if (!c.file.empty()) {
    const bool kernel = r.floor == static_cast<int>(trace::Floor::Kernels);
    text_fitted(app, "compare",
                "PyTorch makes the same check in " + c.file + ", " + c.function + ": " + c.what + "." +
                    (kernel ? " It runs in the op's CPU kernel before any output is made: in PyTorch's profile, "
                              "inside the aten op's self time."
                            : ""),
                5);
  } else if (r.floor == 1) {
    text_fitted(app, "compare", "It raised in the statement's own Python, above every floor of the runtime.", 2);
  }
  ImGui::Separator();
  return r;
}

}  // namespace

void draw_compare(App& app) {
  app.panels_drawn.push_back("compare");
  // Every floor's ops, and the floor that raised: what a waiting question may ask (Note [Lessons in the app]).
  if (draw_question_waits_instead(app, "the ops of every floor, and where the call raised")) return;
  const RaisedAt raised = draw_raised(app);
  if (!app.compare) {
    ImGui::TextWrapped(
        "Open PyTorch's own trace of the same line to put it beside descent's, floor against floor: "
        "File > Compare with PyTorch's trace, or descent app --compare FILE. torch.profiler writes one with "
        "prof.export_chrome_trace(\"t.json\"); tests/tracer/data/ holds two recorded on an H200.");
    return;
  }
  // Summaries are cached per pair of traces: a loaded Kineto file can be large.
  static const trace::Trace *cached_left = nullptr, *cached_right = nullptr;
  static std::array<FloorOps, 10> left, right;
  if (cached_left != app.loaded.trace.get() || cached_right != app.compare.get()) {
    const auto format = app.compare->metadata.find("source.format");
    left = floor_ops(*app.loaded.trace, false);
    right = floor_ops(*app.compare, format != app.compare->metadata.end() && format->second == "kineto");
    g_all_ops = {};
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
    // The floor that raised (descent's), and PyTorch's where it ran the same op there.
    const bool raised_here = f == raised.floor;
    const auto has_op = [&](const FloorOps& fs) {
      return std::any_of(fs.ops.begin(), fs.ops.end(),
                         [&](const auto& o) { return o.first == raised.op || o.first == raised.op + "'s kernel"; });
    };
    const bool raised_there = raised_here && has_op(right[f]);
    if (raised_here) ImGui::TableSetBgColor(ImGuiTableBgTarget_RowBg1, kRaisedRow);
    ImGui::TableNextColumn();
    ImGui::PushStyleColor(ImGuiCol_Text, floor_color_vec(static_cast<trace::Floor>(f)));
    ImGui::Text("%d %s", f, floor_title(f));
    ImGui::PopStyleColor();
    ImGui::TableNextColumn();
    app.compare_cells[f][0] = cell(app, left[f], 0, f, raised_here);
    ImGui::TableNextColumn();
    app.compare_cells[f][1] = cell(app, right[f], 1, f, raised_there);
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
