// The memory panel: the values view on top (panel_values.cpp: the tensors'
// storages as cells, each view a window onto them); the CPU allocator's
// statistics before and after the call;
// each device's caching allocator at the playback's moment, its segments as
// bars split into their blocks, replayed from the allocator's history (Note
// [Replaying the allocator's history], memory_model.h), with the block the
// current floor-6 span allocated or freed outlined; and each allocation the
// call made, in order, as a bar of its size.
//
// [SECTION] Texts and tables
// [SECTION] A device's segments
// [SECTION] The call's floor-6 spans
// [SECTION] The panel
#include <algorithm>
#include <cinttypes>

#include "ui/app.h"
#include "ui/memory_model.h"
#include "ui/panel_values.h"

namespace descent::ui {

namespace {

// [SECTION] Texts and tables ------------------------------------------------------------

std::string bytes_text(int64_t b) {
  char buf[32];
  const int64_t m = b < 0 ? -b : b;
  if (m < 1024)
    std::snprintf(buf, sizeof buf, "%lld B", static_cast<long long>(b));
  else if (m < 1024 * 1024)
    std::snprintf(buf, sizeof buf, "%.1f KiB", b / 1024.0);
  else
    std::snprintf(buf, sizeof buf, "%.1f MiB", b / (1024.0 * 1024.0));
  return buf;
}

std::string address_text(uint64_t a) {
  char buf[24];
  std::snprintf(buf, sizeof buf, "0x%" PRIx64, a);
  return buf;
}

// A row of a statistics table, each cell fitted to its column in two lines (shortened at a word, whole on
// hover).
void stats_row(App& app, const char* name, int64_t before, int64_t after, bool bytes) {
  auto text = [&](int64_t v) { return bytes ? bytes_text(v) : std::to_string(v); };
  const int64_t d = after - before;
  ImGui::TableNextRow();
  for (const std::string& cell : {std::string(name), text(before), text(after), (d > 0 ? "+" : "") + text(d)}) {
    ImGui::TableNextColumn();
    text_fitted(app, "memory", cell, 2);
  }
}

bool begin_stats_table(const char* id) {
  if (!ImGui::BeginTable(id, 4, ImGuiTableFlags_Borders | ImGuiTableFlags_SizingStretchProp)) return false;
  ImGui::TableSetupColumn("statistic", ImGuiTableColumnFlags_WidthStretch, 1.6f);  // its names are the longest
  ImGui::TableSetupColumn("before");
  ImGui::TableSetupColumn("after");
  ImGui::TableSetupColumn("change");
  ImGui::TableHeadersRow();
  return true;
}

// A block's colour: allocated in the allocator floor's red, waiting for
// another stream in amber, cached and free in grey.
ImU32 block_color(BlockState s) {
  switch (s) {
    case BlockState::Allocated:
      return floor_color(trace::Floor::Allocator);
    case BlockState::PendingFree:
      return IM_COL32(235, 170, 40, 255);
    case BlockState::Free:
      return IM_COL32(90, 90, 96, 255);
  }
  return IM_COL32(90, 90, 96, 255);
}
constexpr ImU32 kHighlight = IM_COL32(255, 255, 255, 255);  // the outline of the block the span touched

// One entry of the legend, on the next line where the rest of this one is too short for it.
void legend_item(BlockState s, const char* words) {
  const float h = ImGui::GetTextLineHeight();
  if (ImGui::GetContentRegionAvail().x < h + ImGui::GetStyle().ItemSpacing.x + ImGui::CalcTextSize(words).x)
    ImGui::NewLine();
  ImDrawList* dl = ImGui::GetWindowDrawList();
  const ImVec2 p = ImGui::GetCursorScreenPos();
  dl->AddRectFilled(ImVec2(p.x, p.y + 2), ImVec2(p.x + h - 4, p.y + h - 2), block_color(s));
  ImGui::Dummy(ImVec2(h - 2, h));
  ImGui::SameLine();
  ImGui::TextUnformatted(words);
  ImGui::SameLine(0, 16);
}

// [SECTION] A device's segments ---------------------------------------------------------

// One pool's segments, each a bar scaled by its size against the pool's
// largest, split into its blocks. Returns the blocks drawn.
int draw_pool(App& app, const std::vector<MemSegment>& segments, bool small, uint64_t highlight) {
  uint64_t largest = 0, reserved = 0;
  int count = 0;
  for (const MemSegment& s : segments) {
    if (s.small != small) continue;
    largest = std::max(largest, s.size);
    reserved += s.size;
    ++count;
  }
  text_fitted(app, "memory",
              std::string(small ? "small" : "large") + " pool: " + std::to_string(count) + " segment" +
                  (count == 1 ? "" : "s") + ", " + bytes_text(int64_t(reserved)) + " reserved");
  if (count == 0) return 0;
  constexpr float kMinBlockPx = 6;     // the narrowest block drawn, in pixels
  constexpr float kMinSegmentPx = 40;  // the shortest segment bar, in pixels
  constexpr int kShownSegments = 32;   // segments drawn per pool; more are counted above
  const float full = ImGui::GetContentRegionAvail().x * 0.62f;
  const float h = ImGui::GetTextLineHeight() + 2;
  int drawn = 0, shown = 0;
  for (const MemSegment& s : segments) {
    if (s.small != small || shown++ >= kShownSegments) continue;
    const float w = std::max(kMinSegmentPx, full * static_cast<float>(double(s.size) / double(largest)));
    ImDrawList* dl = ImGui::GetWindowDrawList();
    const ImVec2 p = ImGui::GetCursorScreenPos();
    const auto xs = block_extents(s, w, kMinBlockPx);
    const MemBlock* hovered = nullptr;
    ImVec2 mark0, mark1;
    bool marked = false;
    for (size_t k = 0; k < s.blocks.size(); ++k) {
      const MemBlock& b = s.blocks[k];
      const ImVec2 a(p.x + xs[k].first, p.y), z(p.x + xs[k].second, p.y + h);
      dl->AddRectFilled(a, ImVec2(std::max(a.x + 1, z.x - 1), z.y), block_color(b.state));
      if (ImGui::IsMouseHoveringRect(a, z)) hovered = &b;
      if (highlight != 0 && b.address == highlight) {
        mark0 = a;
        mark1 = z;
        marked = true;
        app.memory_highlight_drawn = block_state_name(b.state);
      }
      ++drawn;
    }
    if (marked) dl->AddRect(ImVec2(mark0.x - 1, mark0.y - 1), ImVec2(mark1.x + 1, mark1.y + 1), kHighlight, 0, 0, 2);
    ImGui::Dummy(ImVec2(w, h));
    ImGui::SameLine();
    text_fitted(app, "memory",
                address_text(s.address) + "  " + bytes_text(int64_t(s.size)) + ", " + std::to_string(s.blocks.size()) +
                    (s.blocks.size() == 1 ? " block" : " blocks"));
    if (hovered) {
      ImGui::BeginTooltip();
      ImGui::Text("block %s, %s (%s asked)\n%s", address_text(hovered->address).c_str(),
                  bytes_text(int64_t(hovered->size)).c_str(), bytes_text(int64_t(hovered->requested)).c_str(),
                  block_state_name(hovered->state));
      ImGui::EndTooltip();
    }
  }
  if (shown > kShownSegments) ImGui::TextDisabled("(%d more segments)", shown - kShownSegments);
  return drawn;
}

void draw_device(App& app, const DeviceMemory& d) {
  ImGui::Separator();
  ImGui::TextWrapped("%s: the caching allocator (floor 6), before and after", d.device.c_str());
  const MemCounters &b = d.stats_before, &a = d.stats_after;
  if (b.valid && a.valid && begin_stats_table(("##dev" + d.device).c_str())) {
    stats_row(app, "allocated", b.allocated_bytes, a.allocated_bytes, true);
    stats_row(app, "reserved", b.reserved_bytes, a.reserved_bytes, true);
    stats_row(app, "blocks handed out", b.allocations, a.allocations, false);
    stats_row(app, "cache hits", b.cache_hits(), a.cache_hits(), false);
    ImGui::EndTable();
  }
  const size_t step = app.has_steps() ? app.step() : 0;
  const DeviceMemoryView v = device_memory_at(d, app.story, step, app.now_ns());
  ImGui::TextWrapped("At this step: %zu of the call's %zu allocator events replayed over the segments before it.",
                     v.at.replayed, d.history.size());
  if (v.entry != SIZE_MAX) {
    const MemEntry& e = d.history[v.entry];
    const bool done = v.entry < v.at.replayed;
    ImGui::TextWrapped(
        "This floor-6 span %s the block at %s (%s asked), outlined.",
        e.action == MemEntry::Action::Alloc ? (done ? "allocated" : "allocates") : (done ? "freed" : "frees"),
        address_text(e.addr).c_str(), bytes_text(int64_t(e.size)).c_str());
  }
  legend_item(BlockState::Allocated, "allocated");
  legend_item(BlockState::PendingFree, "pending free");
  legend_item(BlockState::Free, "free (cached)");
  ImGui::NewLine();
  app.memory_blocks_drawn += draw_pool(app, v.at.segments, true, v.highlight);
  app.memory_blocks_drawn += draw_pool(app, v.at.segments, false, v.highlight);
  if (!v.at.problem.empty()) ImGui::TextDisabled("(replay: %s)", v.at.problem.c_str());
  // The history around this moment: replayed entries, then those ahead (dimmed); the span's marked.
  constexpr size_t kAround = 4;  // entries shown on each side of the moment
  const size_t from = v.at.replayed > kAround ? v.at.replayed - kAround : 0;
  const size_t to = std::min(d.history.size(), v.at.replayed + kAround);
  const int64_t origin = app.has_steps() ? app.story.steps.front().at_ns : 0;
  for (size_t k = from; k < to; ++k) {
    const MemEntry& e = d.history[k];
    char line[160];
    std::snprintf(line, sizeof line, "%s %-15s %s  %s  at %s", k == v.entry ? ">" : " ", entry_action_name(e.action),
                  address_text(e.addr).c_str(), bytes_text(int64_t(e.size)).c_str(),
                  duration_text(e.time_ns - origin).c_str());
    if (k >= v.at.replayed) ImGui::PushStyleColor(ImGuiCol_Text, ImGui::GetStyleColorVec4(ImGuiCol_TextDisabled));
    text_fitted(app, "memory", line);
    if (k >= v.at.replayed) ImGui::PopStyleColor();
  }
}

// [SECTION] The call's floor-6 spans -------------------------------------------------------

void draw_allocations(App& app) {
  const Story& s = app.story;
  if (!app.has_steps()) return;
  const size_t r = root_of_step(s, app.step());
  const auto& downs = s.floor_steps[r][6];
  ImGui::Text("Allocator spans of this call: %zu", downs.size());
  constexpr size_t kShown = 64;  // allocations listed; a loop's thousands are counted above
  int64_t biggest = 1;
  for (size_t n = 0; n < downs.size() && n < kShown; ++n) {
    const auto* v = app.trace().spans[s.steps[downs[n]].span].find_arg("bytes");
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
    dl->AddRectFilled(p, ImVec2(p.x + len, p.y + ImGui::GetTextLineHeight() - 2),
                      floor_color(trace::Floor::Allocator, past ? 1.0f : 0.25f));
    ImGui::Dummy(ImVec2(w, ImGui::GetTextLineHeight() - 2));
    ImGui::SameLine();
    std::string extra;
    for (const trace::SpanArg& arg : sp.args) {
      if (arg.key != "bytes") extra += "  " + arg.key + "=" + arg_text(arg.value);
    }
    text_fitted(app, "memory", sp.name + " " + bytes_text(bytes) + extra + (past ? "" : "  (ahead)"));
  }
}

}  // namespace

// [SECTION] The panel ----------------------------------------------------------------------

void draw_memory(App& app) {
  app.panels_drawn.push_back("memory");
  app.memory_blocks_drawn = 0;
  app.memory_highlight_drawn.clear();
  draw_values(app);  // the tensors' cells first: what a student looks at (panel_values.cpp)
  ImGui::Separator();
  const MemoryStats& b = app.loaded.before;
  const MemoryStats& a = app.loaded.after;
  ImGui::TextWrapped("CPU allocator (floor 6), before and after the code ran:");
  if (b.valid && a.valid && begin_stats_table("##mem")) {
    stats_row(app, "allocated", b.allocated_bytes, a.allocated_bytes, true);
    stats_row(app, "peak allocated", b.peak_allocated_bytes, a.peak_allocated_bytes, true);
    stats_row(app, "allocations", b.num_allocs, a.num_allocs, false);
    stats_row(app, "frees", b.num_frees, a.num_frees, false);
    ImGui::EndTable();
  } else if (!b.valid) {
    ImGui::TextDisabled("(no statistics: this trace was opened from a file, not run here)");
  }
  if (app.loaded.devices.empty() && b.valid) {
    ImGui::Separator();
    ImGui::TextWrapped(
        "No device memory watched: this code names no device (sim or cuda), so its run left the devices' "
        "caching allocators alone. Try  x = descent.ones(1000, device=\"sim:0\")  to see sim:0's segments.");
  } else if (app.loaded.devices.empty()) {
    ImGui::Separator();
    ImGui::TextWrapped(
        "No snapshots of the devices' caching allocators: this trace was opened from a file, and a trace file "
        "keeps spans, not the allocator's segments and history. Run the code here (the console, or --code) to "
        "see sim:0's or cuda's segments and blocks replayed step by step.");
  }
  for (const DeviceMemory& d : app.loaded.devices) draw_device(app, d);
  ImGui::Separator();
  draw_allocations(app);
  ImGui::Separator();
  ImGui::TextWrapped(
      "A device's memory comes from its caching allocator: segments taken from the device (2 MiB for the small "
      "pool, 20 MiB or more for the large), split into blocks, a freed block kept cached for the next request of "
      "its stream and pool (a cache hit) rather than given back. Its history of events (alloc, free, "
      "segment_alloc, ...) is replayed over the segments before the call up to this step. CPU tensors take "
      "their memory from the CPU allocator above.");
}

}  // namespace descent::ui
