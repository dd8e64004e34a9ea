// The compare view: PyTorch's real trace of a line (torch.profiler's Chrome
// JSON, placed on floors by the loader: Note [Placing PyTorch's events on
// floors]) beside descent's trace of the same line, floor against floor.
#include <algorithm>
#include <set>

#include "ui/app.h"

namespace descent::ui {

namespace {

struct FloorSummary {
  int spans = 0;
  int64_t self_ns = 0;
  std::vector<std::string> names;  // distinct, in order of appearance, a few
};

constexpr size_t kNamesShown = 4;

std::array<FloorSummary, 10> summarize(const trace::Trace& t) {
  std::array<FloorSummary, 10> out;
  const Story s = build_story(t);  // for self times
  for (size_t i = 0; i < t.spans.size(); ++i) {
    const int f = static_cast<int>(t.spans[i].floor);
    if (f < 1 || f > 9) continue;
    FloorSummary& fs = out[f];
    ++fs.spans;
    fs.self_ns += s.self_ns[i];
    if (fs.names.size() < kNamesShown &&
        std::find(fs.names.begin(), fs.names.end(), t.spans[i].name) == fs.names.end()) {
      fs.names.push_back(t.spans[i].name);
    }
  }
  return out;
}

void cell(const FloorSummary& fs) {
  if (fs.spans == 0) {
    ImGui::TextDisabled("-");
    return;
  }
  ImGui::Text("%d spans, %s self", fs.spans, duration_text(fs.self_ns).c_str());
  std::string names;
  for (const std::string& n : fs.names) names += (names.empty() ? "" : ", ") + n;
  ImGui::TextWrapped("%s", names.c_str());
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
    left = summarize(*app.loaded.trace);
    right = summarize(*app.compare);
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
  if (!ImGui::BeginTable("##compare", 3, ImGuiTableFlags_Borders | ImGuiTableFlags_SizingStretchProp)) return;
  ImGui::TableSetupColumn("floor", ImGuiTableColumnFlags_WidthFixed, 120);
  ImGui::TableSetupColumn("descent");
  ImGui::TableSetupColumn(other);
  ImGui::TableHeadersRow();
  for (int f = 1; f <= 9; ++f) {
    ImGui::TableNextRow();
    ImGui::TableNextColumn();
    ImGui::PushStyleColor(ImGuiCol_Text, floor_color_vec(f));
    ImGui::Text("%d %s", f, floor_title(f));
    ImGui::PopStyleColor();
    ImGui::TableNextColumn();
    cell(left[f]);
    ImGui::TableNextColumn();
    cell(right[f]);
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
