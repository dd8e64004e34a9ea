// The memory panel: the allocators' statistics before and after the call,
// and each allocation the call made, in order, as a bar of its size.
#include <algorithm>

#include "ui/app.h"

namespace descent::ui {

namespace {

std::string bytes_text(int64_t b) {
  char buf[32];
  if (b < 1024) std::snprintf(buf, sizeof buf, "%lld B", static_cast<long long>(b));
  else if (b < 1024 * 1024) std::snprintf(buf, sizeof buf, "%.1f KiB", b / 1024.0);
  else std::snprintf(buf, sizeof buf, "%.1f MiB", b / (1024.0 * 1024.0));
  return buf;
}

void stats_row(const char* name, int64_t before, int64_t after, bool bytes) {
  ImGui::TableNextRow();
  ImGui::TableNextColumn();
  ImGui::TextUnformatted(name);
  ImGui::TableNextColumn();
  ImGui::TextUnformatted(bytes ? bytes_text(before).c_str() : std::to_string(before).c_str());
  ImGui::TableNextColumn();
  ImGui::TextUnformatted(bytes ? bytes_text(after).c_str() : std::to_string(after).c_str());
  ImGui::TableNextColumn();
  const int64_t d = after - before;
  ImGui::Text("%s%s", d > 0 ? "+" : "", bytes ? bytes_text(d).c_str() : std::to_string(d).c_str());
}

}  // namespace

void draw_memory(App& app) {
  app.panels_drawn.push_back("memory");
  const MemoryStats& b = app.loaded.before;
  const MemoryStats& a = app.loaded.after;
  ImGui::TextWrapped("CPU allocator (floor 6), before and after the code ran:");
  if (b.valid && a.valid && ImGui::BeginTable("##mem", 4, ImGuiTableFlags_Borders | ImGuiTableFlags_SizingStretchSame)) {
    ImGui::TableSetupColumn("statistic");
    ImGui::TableSetupColumn("before");
    ImGui::TableSetupColumn("after");
    ImGui::TableSetupColumn("change");
    ImGui::TableHeadersRow();
    stats_row("allocated", b.allocated_bytes, a.allocated_bytes, true);
    stats_row("peak allocated", b.peak_allocated_bytes, a.peak_allocated_bytes, true);
    stats_row("allocations", b.num_allocs, a.num_allocs, false);
    stats_row("frees", b.num_frees, a.num_frees, false);
    ImGui::EndTable();
  } else if (!b.valid) {
    ImGui::TextDisabled("(no statistics: this trace was opened from a file, not run here)");
  }
  // The call's allocations, from its allocator spans.
  ImGui::Separator();
  const Story& s = app.story;
  if (!app.has_steps()) return;
  const size_t r = root_of_step(s, app.step());
  const auto& downs = s.floor_steps[r][6];
  ImGui::Text("Allocations by this call: %zu", downs.size());
  constexpr size_t kShown = 64;  // allocations listed; a loop's thousands are counted above
  int64_t biggest = 1;
  for (size_t k : std::vector<size_t>(downs.begin(), downs.begin() + std::min(downs.size(), kShown))) {
    const auto* v = app.trace().spans[s.steps[k].span].find_arg("bytes");
    if (v && std::holds_alternative<int64_t>(*v)) biggest = std::max(biggest, std::get<int64_t>(*v));
  }
  const float w = ImGui::GetContentRegionAvail().x * 0.55f;
  for (size_t n = 0; n < downs.size() && n < kShown; ++n) {
    const size_t k = downs[n];
    const trace::Span& sp = app.trace().spans[s.steps[k].span];
    const auto* v = sp.find_arg("bytes");
    const int64_t bytes = v && std::holds_alternative<int64_t>(*v) ? std::get<int64_t>(*v) : 0;
    const bool past = k <= app.step();  // allocated already at this step
    ImDrawList* dl = ImGui::GetWindowDrawList();
    const ImVec2 p = ImGui::GetCursorScreenPos();
    const float len = std::max(2.0f, w * static_cast<float>(bytes) / static_cast<float>(biggest));
    dl->AddRectFilled(p, ImVec2(p.x + len, p.y + ImGui::GetTextLineHeight() - 2), floor_color(6, past ? 1.0f : 0.25f));
    ImGui::Dummy(ImVec2(w, ImGui::GetTextLineHeight() - 2));
    ImGui::SameLine();
    std::string extra;
    for (const trace::SpanArg& arg : sp.args) {
      if (arg.key != "bytes") extra += "  " + arg.key + "=" + arg_text(arg.value);
    }
    ImGui::Text("%s %s%s%s", sp.name.c_str(), bytes_text(bytes).c_str(), extra.c_str(), past ? "" : "  (ahead)");
  }
  ImGui::Separator();
  ImGui::TextWrapped(
      "The caching allocator (segments split into blocks, a free pool searched best-fit) serves device memory: "
      "its segments and blocks appear here when a call runs on a device (sim:0 or cuda). CPU tensors take "
      "their memory from the CPU allocator above.");
}

}  // namespace descent::ui
