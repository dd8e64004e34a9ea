// The streams panel: each stream of the device as a queue at the playback's
// moment (Note [The queue at time t], streams_model.h).
//
// [SECTION] Layout and constants
// [SECTION] One lane
// [SECTION] The panel
//
// A lane reads left to right as the work moves: the host puts work in at the
// left, it waits in the queue (the next to run nearest the device), the
// device runs one at a time in the middle slot, and what is done drains away
// to the right, fading. Under each lane, the same work over the whole call
// on one line: a thin stroke while it was queued, a bar while it ran, and a
// white line at the playback's moment.
#include <algorithm>
#include <cstdio>
#include <string>

#include "ui/app.h"

namespace descent::ui {

namespace {

// [SECTION] Layout and constants ----------------------------------------------------------------

constexpr float kQueueFraction = 0.42f;    // of the lane's width: the queue, left of the device slot
constexpr float kSlotFraction = 0.27f;     // the device slot
constexpr float kBoxLines = 3.3f;          // a box's height, in text lines: the name, then what it does (in two)
constexpr float kHistoryPx = 16.0f;        // the lane's line over the whole call
constexpr double kFadeFraction = 0.25;     // of the lane's span: how long a done box takes to fade out
constexpr size_t kMaxDoneShown = 4;        // done boxes drawn; older ones are a count
constexpr size_t kMaxQueuedMeasured = 64;  // queued names measured for the boxes' width: more than a lane draws
constexpr ImU32 kInk = IM_COL32(15, 15, 20, 255);
constexpr ImU32 kPaper = IM_COL32(225, 228, 235, 255);
constexpr ImU32 kMuted = IM_COL32(150, 155, 165, 255);
constexpr ImU32 kSlotBg = IM_COL32(20, 21, 26, 255);

// [SECTION] One lane -------------------------------------------------------------------------------

struct TimeRange {  // the lane's time range, for the history line
  int64_t lo = 0, hi = 1;
};

TimeRange lane_range(const App& app, const StreamLane& lane) {
  TimeRange r;
  r.lo = app.has_steps() ? app.story.steps.front().at_ns : 0;
  r.hi = app.has_steps() ? app.story.steps.back().at_ns : 1;
  for (const DeviceWork& w : lane.work) {
    r.lo = std::min(r.lo, w.queued_ns);
    if (w.end_ns != kNever) r.hi = std::max(r.hi, w.end_ns);
  }
  r.hi = std::max(r.hi, r.lo + 1);
  return r;
}

// A box for one piece of work: its name (in two lines where it needs them,
// broken after a "_") and, under it, a second line; both whole on hover.
void work_box(App& app, ImDrawList* dl, ImVec2 p0, ImVec2 p1, ImU32 fill, ImU32 ink, const std::string& name,
              const std::string& sub) {
  dl->AddRectFilled(p0, p1, fill, 4.0f);
  const float line_h = ImGui::GetTextLineHeight(), width = p1.x - p0.x - 10;
  const TextFit n = draw_fitted(app, "streams", dl, ImVec2(p0.x + 5, p0.y + 3), width, ink, name, 2);
  draw_fitted(app, "streams", dl, ImVec2(p0.x + 5, p0.y + 3 + line_h * float(lines_of(n))), width, ink, sub,
              std::max(1, int((p1.y - p0.y - 3) / line_h) - lines_of(n)));
  if (ImGui::IsMouseHoveringRect(p0, p1) && ImGui::IsWindowHovered())
    ImGui::SetTooltip("%s\n%s", name.c_str(), sub.c_str());
}

// The widths a lane's boxes need, over the work it shows at once: the widest piece of a kernel's name, which
// a box must hold whole ("float32" of "add_float32": a name breaks after "_") or of its second line, and the
// widest whole name.
struct NameWidths {
  float piece = 0, whole = 0;
};
NameWidths name_widths(const StreamLane& lane, const LaneAt& at) {
  NameWidths widest;
  widest.piece = ImGui::CalcTextSize("running,").x;  // the widest word of a box's second line
  auto measure = [&](size_t k) {
    const std::string& name = lane.work[k].name;
    widest.whole = std::max(widest.whole, ImGui::CalcTextSize(name.c_str()).x);
    size_t start = 0;
    while (start < name.size()) {
      const size_t end = std::min(name.find('_', start), name.size() - 1) + 1;
      widest.piece = std::max(widest.piece, ImGui::CalcTextSize(name.c_str() + start, name.c_str() + end).x);
      start = end;
    }
  };
  for (size_t n = 0; n < at.queued.size() && n < kMaxQueuedMeasured; ++n) measure(at.queued[n]);
  for (size_t n = 0; n < at.done.size() && n < kMaxDoneShown; ++n) measure(at.done[at.done.size() - 1 - n]);
  if (at.running != SIZE_MAX) measure(at.running);
  return widest;
}

std::string depth_text(const DeviceWork& w) {
  return w.queue_depth >= 0 ? "depth " + std::to_string(w.queue_depth) : std::string("depth unknown");
}

void draw_lane(App& app, const StreamLane& lane, int64_t now) {
  const LaneAt at = lane_at(lane, now);
  ImGui::PushStyleColor(ImGuiCol_Text, floor_color_vec(trace::Floor::Device));
  ImGui::TextUnformatted(lane.label.c_str());
  ImGui::PopStyleColor();
  ImGui::SameLine();
  char info[160];
  std::snprintf(info, sizeof info, "  in the queue now: %zu (running %zu, waiting %zu); done %zu of %zu",
                at.queue_length(), at.running != SIZE_MAX ? size_t{1} : size_t{0}, at.queued.size(), at.done.size(),
                lane.work.size());
  ImGui::TextDisabled("%s", info);
  if (at.queue_depth >= 0) {
    ImGui::TextDisabled("queue_depth %lld at the last enqueue (floor 7 counted it, that work included)",
                        static_cast<long long>(at.queue_depth));
  }

  ImDrawList* dl = ImGui::GetWindowDrawList();
  const float line_h = ImGui::GetTextLineHeight();
  const ImVec2 o = ImGui::GetCursorScreenPos();
  const float w = std::max(240.0f, ImGui::GetContentRegionAvail().x);
  const NameWidths names = name_widths(lane, at);
  const float box_w = std::max(std::clamp(w * 0.16f, 70.0f, 170.0f), names.piece + 12);
  const float box_h = line_h * (kBoxLines + (names.whole + 10 > box_w ? 1.0f : 0.0f));  // a line more for a name in two
  const float q1 = o.x + w * kQueueFraction, s1 = q1 + std::max(w * kSlotFraction, box_w + 16);
  const float y0 = o.y + 4, y1 = y0 + box_h;

  // The queue: an open-ended pipe from the host; the next to run at its right end.
  dl->AddLine(ImVec2(o.x, y0 - 2), ImVec2(q1, y0 - 2), kMuted);
  dl->AddLine(ImVec2(o.x, y1 + 2), ImVec2(q1, y1 + 2), kMuted);
  // Under the queue and the slot, what they are, each in at most two lines (the history goes under the longer).
  const int under =
      std::max(lines_of(draw_fitted(app, "streams", dl, ImVec2(o.x + 2, y1 + 4), q1 - o.x - 4, kMuted,
                                    "host puts work in ->", 2)),
               lines_of(draw_fitted(app, "streams", dl, ImVec2(q1 + 8, y1 + 4), s1 - q1 - 8, kMuted, "the device", 2)));
  float x = q1 - 4;
  size_t shown = 0;
  for (size_t k : at.queued) {
    if (x - box_w < o.x + 2) break;
    work_box(app, dl, ImVec2(x - box_w, y0), ImVec2(x, y1), floor_color(trace::Floor::Device, 0.25f), kPaper,
             lane.work[k].name, "queued, " + depth_text(lane.work[k]));
    x -= box_w + 4;
    ++shown;
  }
  if (shown < at.queued.size()) {
    char more[32];
    std::snprintf(more, sizeof more, "+%zu", at.queued.size() - shown);
    draw_fitted(app, "streams", dl, ImVec2(o.x + 4, y0 + 4), x - o.x - 4, kPaper, more);
  }
  if (at.queued.empty()) draw_fitted(app, "streams", dl, ImVec2(o.x + 4, y0 + 4), q1 - o.x - 8, kMuted, "(empty)");

  // The device slot: the one running now.
  dl->AddRectFilled(ImVec2(q1 + 4, y0 - 2), ImVec2(s1 - 4, y1 + 2), kSlotBg, 4.0f);
  dl->AddRect(ImVec2(q1 + 4, y0 - 2), ImVec2(s1 - 4, y1 + 2), floor_color(trace::Floor::Device), 4.0f, 0, 2.0f);
  if (at.running != SIZE_MAX) {
    const DeviceWork& r = lane.work[at.running];
    const std::string sub = "running, " + duration_text(now - r.start_ns) + " in";
    work_box(app, dl, ImVec2(q1 + 8, y0 + 2), ImVec2(s1 - 8, y1 - 2), floor_color(trace::Floor::Device), kInk, r.name,
             sub);
  } else {
    draw_fitted(app, "streams", dl, ImVec2(q1 + 12, y0 + 4), s1 - q1 - 20, kMuted, "device idle", 3);
  }

  // Done: the most recent nearest the slot, fading as they drain away.
  const TimeRange range = lane_range(app, lane);
  const double fade_ns = std::max(1000.0, static_cast<double>(range.hi - range.lo) * kFadeFraction);
  x = s1 + 4;
  size_t drawn = 0;
  for (auto it = at.done.rbegin(); it != at.done.rend() && drawn < kMaxDoneShown; ++it) {
    const DeviceWork& d = lane.work[*it];
    const float alpha = 1.0f - static_cast<float>(std::min(0.85, static_cast<double>(now - d.end_ns) / fade_ns));
    if (x + box_w > o.x + w) break;
    work_box(app, dl, ImVec2(x, y0), ImVec2(x + box_w, y1), floor_color(trace::Floor::Device, 0.35f * alpha),
             ImGui::ColorConvertFloat4ToU32(ImVec4(0.88f, 0.89f, 0.92f, alpha)), d.name,
             "done " + duration_text(now - d.end_ns) + " ago");
    x += box_w + 4;
    ++drawn;
  }
  if (at.done.size() > drawn) {
    char more[32];
    std::snprintf(more, sizeof more, "+%zu done", at.done.size() - drawn);
    const float mx = std::min(x, o.x + w - 60);
    draw_fitted(app, "streams", dl, ImVec2(mx, y0 + 4), o.x + w - mx, kMuted, more);
  }

  // The history: the lane over the whole call, and now.
  const float hy = y1 + line_h * float(under) + 10, hy1 = hy + kHistoryPx;
  auto x_of = [&](int64_t t) {
    const double f = static_cast<double>(t - range.lo) / static_cast<double>(range.hi - range.lo);
    return o.x + static_cast<float>(std::clamp(f, 0.0, 1.0)) * w;
  };
  dl->AddRectFilled(ImVec2(o.x, hy), ImVec2(o.x + w, hy1), IM_COL32(255, 255, 255, 10));
  for (const DeviceWork& d : lane.work) {
    const float xq = x_of(d.queued_ns), xs = x_of(d.start_ns == kNever ? range.hi : d.start_ns);
    if (xs > xq)
      dl->AddLine(ImVec2(xq, (hy + hy1) * 0.5f), ImVec2(xs, (hy + hy1) * 0.5f), floor_color(trace::Floor::Streams),
                  2.0f);
    if (d.start_ns != kNever) {
      dl->AddRectFilled(ImVec2(xs, hy + 2), ImVec2(std::max(xs + 2, x_of(d.end_ns)), hy1 - 2),
                        floor_color(trace::Floor::Device));
    }
  }
  const float xn = x_of(now);
  dl->AddLine(ImVec2(xn, hy - 3), ImVec2(xn, hy1 + 3), IM_COL32(255, 255, 255, 255), 2.0f);
  const TextFit legend = draw_fitted(app, "streams", dl, ImVec2(o.x, hy1 + 2), w, kMuted,
                                     "the call:  thin = queued, bar = running, white = now", 2);
  ImGui::Dummy(ImVec2(w, hy1 + line_h * float(lines_of(legend)) + 6 - o.y));
  ImGui::Separator();
}

}  // namespace

// [SECTION] The panel -----------------------------------------------------------------------------

void draw_streams(App& app) {
  app.panels_drawn.push_back("streams");
  if (app.streams.empty()) {
    ImGui::TextWrapped(
        "No device work in this call: CPU tensors go no deeper than floor 6 (their kernel runs on the calling thread, "
        "on floor 5, in memory from the CPU allocator, floor 6). "
        "Try\n  y = descent.ones(4, device=\"sim:0\") + 1\nto watch a launch put a kernel on a stream and return, "
        "and the device run it later.");
    return;
  }
  const int64_t now = app.now_ns();
  const int64_t origin = app.has_steps() ? app.story.steps.front().at_ns : now;
  if (app.has_steps()) {
    const Step& st = app.story.steps[app.step()];
    ImGui::TextWrapped("At %s into the call, the host is %s %s on floor %d.", duration_text(now - origin).c_str(),
                       st.down ? "going into" : "coming out of", app.trace().spans[st.span].name.c_str(),
                       token_floor(app.story, app.step()));
  }
  ImGui::Separator();
  for (const StreamLane& lane : app.streams.lanes) draw_lane(app, lane, now);
  ImGui::TextWrapped(
      "A launch (floor 8) puts the kernel on its stream and returns at once: the host goes on while the kernel waits "
      "its turn. The device runs each stream's work in order, one at a time, on its own clock. Reading a result on "
      "the host (.item(), .cpu(), synchronize) waits on floor 7 until the queue has drained up to it.");
}

}  // namespace descent::ui
