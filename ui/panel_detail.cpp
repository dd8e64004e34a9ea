// The detail panel: the current span, why it did what it did (ui/explain.h:
// sentences from its arguments, the Notes that cover it, PyTorch's file and
// function for the same job), its arguments and times, the source line that
// decided (or opened) it, and what its floor is for (assets/floors/<n>.txt).
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <sstream>

#include "ui/app.h"
#include "ui/lesson.h"
#include "ui/roofline.h"
#if DESCENT_HAVE_SOURCES
#include "tracer/sources.h"
#endif

namespace descent::ui {

namespace {

constexpr int kExcerptBefore = 3, kExcerptAfter = 8;  // lines around the line shown
const ImVec4 kTitle(1.0f, 0.85f, 0.3f, 1.0f);         // the explanation's title and the line shown

void source_excerpt(const trace::Trace& t, const SourcePlace& at) {
#if DESCENT_HAVE_SOURCES
  const std::string_view text = trace::embedded_source(at.file);
  if (text.empty()) {
    ImGui::TextDisabled("(this file's source is not embedded in the app)");
    return;
  }
  // Only the lines the trace was recorded with (Note [Source fingerprints]).
  switch (trace::source_match(t, at.file)) {
    case trace::SourceMatch::Same:
      break;
    case trace::SourceMatch::Changed:
      ImGui::PushStyleColor(ImGuiCol_Text, ImVec4(0.95f, 0.6f, 0.4f, 1.0f));
      ImGui::TextWrapped(
          "%s has changed since this trace was recorded: its line %u then is not shown, since this "
          "build's line %u may be another line now.",
          at.file.c_str(), at.line, at.line);
      ImGui::PopStyleColor();
      return;
    case trace::SourceMatch::Unknown:
    case trace::SourceMatch::NotOurs:
      ImGui::PushStyleColor(ImGuiCol_Text, ImVec4(0.95f, 0.6f, 0.4f, 1.0f));
      ImGui::TextWrapped(
          "This trace holds no fingerprint of %s (it was recorded before descent kept them): "
          "below is this build's line %u, which may not be the line that ran.",
          at.file.c_str(), at.line);
      ImGui::PopStyleColor();
      break;
  }
  std::istringstream in{std::string(text)};
  std::string line;
  const int want = static_cast<int>(at.line);
  ImFont* mono =
      ImGui::GetIO().Fonts->Fonts.Size > 2 && !ImGui::GetIO().FontDefault ? ImGui::GetIO().Fonts->Fonts[2] : nullptr;
  if (mono) ImGui::PushFont(mono);
  for (int n = 1; std::getline(in, line) && n <= want + kExcerptAfter; ++n) {
    if (n < want - kExcerptBefore) continue;
    if (n == want)
      ImGui::TextColored(kTitle, "%5d > %s", n, line.c_str());
    else
      ImGui::TextDisabled("%5d   %s", n, line.c_str());
  }
  if (mono) ImGui::PopFont();
#else
  (void)t;
  (void)at;
  ImGui::TextDisabled("This build embeds no sources.");
#endif
}

// The source to show: the line that decided, where the span recorded one
// (Note [Where a span decided]), else the line that opened it.
void source_view(const trace::Trace& t, const trace::Span& sp, const Explanation& e) {
  if (e.decided.file.empty()) {
    ImGui::TextDisabled("No source location recorded for this span (user code, or a file from elsewhere).");
    return;
  }
  if (e.decided_recorded) {
    ImGui::Text("Decided at %s:%u", e.decided.file.c_str(), e.decided.line);
    if (!sp.file.empty()) ImGui::TextDisabled("(the span opened at %s:%u)", sp.file.c_str(), sp.line);
  } else {
    ImGui::Text("%s:%u", e.decided.file.c_str(), e.decided.line);
  }
  source_excerpt(t, e.decided);
}

// The explanation: its title, the Notes that cover it (buttons that open
// them in the Notes tab; on a projector they stay in view above the
// sentences), its sentences, and the PyTorch places.
void explanation_view(App& app, const Explanation& e) {
  ImGui::PushStyleColor(ImGuiCol_Text, kTitle);
  ImGui::TextWrapped("%s", e.title.c_str());
  ImGui::PopStyleColor();
  if (!e.notes.empty()) {
    ImGui::TextDisabled("N:");
    const float right = ImGui::GetContentRegionMax().x;
    for (size_t k = 0; k < e.notes.size(); ++k) {
      const std::string label = "Note [" + e.notes[k] + "]";
      const float w = ImGui::CalcTextSize(label.c_str()).x + 2 * ImGui::GetStyle().FramePadding.x;
      ImGui::SameLine();
      if (ImGui::GetCursorPosX() + w > right) ImGui::NewLine();
      if (ImGui::SmallButton(label.c_str())) open_note(app, e.notes[k]);
    }
  }
  for (const std::string& s : e.sentences) {
    ImGui::Bullet();
    ImGui::TextWrapped("%s", s.c_str());
  }
  if (!e.pytorch.empty()) {
    ImGui::PushStyleColor(ImGuiCol_Text, ImGui::GetStyleColorVec4(ImGuiCol_TextDisabled));
    ImGui::TextWrapped("In PyTorch:");
    for (const PyTorchPlace& p : e.pytorch) {
      ImGui::Bullet();
      ImGui::TextWrapped("%s: %s", p.file.c_str(), p.function.c_str());
    }
    ImGui::PopStyleColor();
  }
}

// The kernel's place on its device's roofline (ui/roofline.h, Note [A
// roofline for every kernel span]): log-log, FLOP per byte across, FLOP/s up;
// the roof rises with the bandwidth up to the ridge, then stays at the
// arithmetic peak; the dot is this kernel. A kernel that did no arithmetic
// gets a bar of the bandwidth it reached instead.
ImU32 bound_color(const RooflinePoint& p) {
  return p.bound == RooflinePoint::Bound::Overhead ? IM_COL32(240, 150, 90, 255)
         : p.bound == RooflinePoint::Bound::Memory ? IM_COL32(110, 180, 250, 255)
                                                   : IM_COL32(130, 220, 120, 255);
}

// One line under the times: which bound, and how near the roof.
void roofline_summary(const RooflinePoint& p) {
  const std::string pct = share_text(p);
  const std::string roof =
      p.bound == RooflinePoint::Bound::Compute  ? p.peak_flops_name + "' " + si_text(p.peak_flops_per_s, "FLOP/s")
      : p.bound == RooflinePoint::Bound::Memory ? "the memory's " + si_text(p.peak_bytes_per_s, "B/s")
                                                : "its roof on " + p.device;
  ImGui::PushStyleColor(ImGuiCol_Text, ImGui::ColorConvertU32ToFloat4(bound_color(p)));
  ImGui::TextWrapped("Roofline: %s-bound, %s of %s", p.bound_word(), pct.c_str(), roof.c_str());
  ImGui::PopStyleColor();
}

void roofline_view(const RooflinePoint& p) {
  const ImU32 dot = bound_color(p);
  const std::string bound = std::string(p.bound_word()) + "-bound";
  if (p.flops <= 0) {
    const std::string label =
        si_text(p.bytes_per_s(), "B/s") + " of " + si_text(p.peak_bytes_per_s, "B/s") + ": " + bound;
    ImGui::PushStyleColor(ImGuiCol_PlotHistogram, dot);
    ImGui::ProgressBar(static_cast<float>(std::min(1.0, p.fraction())), ImVec2(-1, 0), label.c_str());
    ImGui::PopStyleColor();
    return;
  }
  const float fs = ImGui::GetFontSize();
  const ImVec2 size(ImGui::GetContentRegionAvail().x, 9.0f * fs);
  const ImVec2 o = ImGui::GetCursorScreenPos();
  ImGui::Dummy(size);
  ImDrawList* dl = ImGui::GetWindowDrawList();
  const double ridge = p.ridge(), peak = p.peak_flops_per_s;
  const double x0 = std::log10(std::min(ridge / 1000, p.intensity() / 4));
  const double x1 = std::log10(std::max(ridge * 30, p.intensity() * 4));
  const double y1 = std::log10(peak * 3);
  const double y0 = std::min(std::log10(peak) - 3.5, std::log10(std::max(p.flops_per_s(), 1.0)) - 0.5);
  const float left = o.x + 0.5f * fs, right = o.x + size.x - 0.5f * fs;
  const float top = o.y + 2.5f * fs, bottom = o.y + size.y - 1.3f * fs;  // the title and the peak's label above
  const auto at = [&](double x, double y) {
    return ImVec2(left + float((std::log10(x) - x0) / (x1 - x0)) * (right - left),
                  bottom - float((std::log10(y) - y0) / (y1 - y0)) * (bottom - top));
  };
  dl->AddRectFilled(ImVec2(left, top), ImVec2(right, bottom), IM_COL32(30, 33, 40, 255));
  const ImU32 roof = IM_COL32(220, 220, 220, 255), faint = IM_COL32(160, 160, 160, 255);
  const ImVec2 ridge_at = at(ridge, peak);
  dl->AddLine(at(std::pow(10.0, x0), std::pow(10.0, x0) * p.peak_bytes_per_s), ridge_at, roof, 2.0f);
  dl->AddLine(ridge_at, at(std::pow(10.0, x1), peak), roof, 2.0f);
  dl->AddLine(ImVec2(ridge_at.x, ridge_at.y), ImVec2(ridge_at.x, bottom), faint, 1.0f);
  const ImVec2 d = at(p.intensity(), std::max(p.flops_per_s(), std::pow(10.0, y0)));
  dl->AddCircleFilled(d, 0.4f * fs, dot);
  const std::string peak_label = si_text(peak, "FLOP/s") + " (" + p.peak_flops_name + ")";
  // The labels keep apart at any font size: the peak's between the title and the flat roof, memory's under
  // the slope's left end, the kernel's on the side of its dot that has room (above it in the lower half).
  dl->AddText(ImVec2(std::min(ridge_at.x + 0.3f * fs, right - ImGui::CalcTextSize(peak_label.c_str()).x),
                     ridge_at.y - 1.2f * fs),
              roof, peak_label.c_str());
  const std::string bw_label = si_text(p.peak_bytes_per_s, "B/s") + " memory";
  const ImVec2 slope_start = at(std::pow(10.0, x0), std::pow(10.0, x0) * p.peak_bytes_per_s);
  dl->AddText(ImVec2(left + 0.3f * fs, std::clamp(slope_start.y + 0.3f * fs, top, bottom - fs)), faint,
              bw_label.c_str());
  const std::string me = "this kernel: " + std::string(bound);
  const float w = ImGui::CalcTextSize(me.c_str()).x;
  const float me_y = d.y > (top + bottom) / 2 ? d.y - 1.5f * fs : d.y + 0.5f * fs;
  dl->AddText(ImVec2(std::clamp(d.x - w / 2, left, right - w), std::clamp(me_y, top, bottom - fs)), dot, me.c_str());
  dl->AddText(ImVec2(right - ImGui::CalcTextSize("FLOP per byte").x, bottom + 0.1f * fs), faint, "FLOP per byte");
  dl->AddText(ImVec2(left, o.y), faint, ("roofline of " + p.device + ", log-log; FLOP/s up").c_str());
}

}  // namespace

const Explanation& current_explanation(App& app) {
  const size_t i = app.current_span();
  const bool same = app.explained_span == i && !app.explained_of.owner_before(app.loaded.trace) &&
                    !app.loaded.trace.owner_before(app.explained_of) && !app.explained_of.expired();
  if (!same) {
    app.explanation = i == SIZE_MAX ? Explanation{} : explain(app.story, i);
    app.explained_span = i;
    app.explained_of = app.loaded.trace;
  }
  return app.explanation;
}

void draw_detail(App& app) {
  app.panels_drawn.push_back("detail");
  if (draw_question_waits_instead(app, "the span's every argument")) return;
  if (!app.has_steps()) {
    ImGui::TextWrapped("Nothing to show: the trace holds no call. Type a line into the console, or open a trace.");
    return;
  }
  const size_t i = app.current_span();
  const trace::Span& sp = app.trace().spans[i];
  const Step& st = app.story.steps[app.step()];
  const Timing t = timing_of(app.story, i);
  const Explanation& e = current_explanation(app);
  ImGui::PushStyleColor(ImGuiCol_Text, floor_color_vec(sp.floor));
  ImGui::Text("Floor %d, %s  (%s)", static_cast<int>(sp.floor), floor_title(static_cast<int>(sp.floor)),
              st.down ? "going down into it" : "coming back up out of it");
  ImGui::PopStyleColor();
  ImGui::TextWrapped("%s", sp.name.c_str());
  // The one rule and its words (timing_of, timing_text: Note [Cold and warm times], story.h).
  ImGui::TextWrapped("%s, thread %u", timing_text(t).c_str(), sp.thread);
  if (ImGui::IsItemHovered()) {
    ImGui::SetTooltip(
        "inclusive: this span with everything under it\nself: this span alone, its children's time "
        "taken out");
  }
  // What the words mean, where the times first appear.
  ImGui::PushStyleColor(ImGuiCol_Text, ImGui::GetStyleColorVec4(ImGuiCol_TextDisabled));
  if (t.leads_with_median()) {
    ImGui::TextWrapped(
        "warm: %s; this call's own time %s inclusive. Inclusive: the span with everything under it; "
        "self: the span alone.",
        time_source(t).c_str(), duration_text(t.own_inclusive_ns).c_str());
  } else if (t.warm) {
    ImGui::TextWrapped(
        "warm: a repeat inside its line, with caches and set-up done; one repeat is no median, so its own time. "
        "Inclusive: the span with everything under it; self: the span alone.");
  } else if (!app.presenter) {
    ImGui::TextWrapped(
        "cold: a first call, slowed by empty caches and one-time set-up; R runs the line %d times "
        "to show the warm median. Inclusive: the span with everything under it; self: the span "
        "alone.",
        kWarmRuns);
  }
  ImGui::PopStyleColor();
  if (app.trace().span_cost_ns > 0 && !app.presenter) {
    ImGui::PushStyleColor(ImGuiCol_Text, ImGui::GetStyleColorVec4(ImGuiCol_TextDisabled));
    ImGui::TextWrapped("includes the tracer's own cost, about %.0f ns per span", app.trace().span_cost_ns);
    ImGui::PopStyleColor();
  }
  const RooflinePoint roof = sp.floor == trace::Floor::Kernels ? roofline_of(app.story, i) : RooflinePoint{};
  if (roof.known) {
    roofline_summary(roof);
    roofline_view(roof);
  }
  ImGui::Separator();
  if (!e.kind.empty())
    explanation_view(app, e);
  else
    ImGui::TextWrapped("%s", floor_explanation(static_cast<int>(sp.floor)).c_str());
  if (!app.presenter && !sp.args.empty() &&
      ImGui::BeginTable("##args", 2, ImGuiTableFlags_BordersInnerH | ImGuiTableFlags_SizingStretchProp)) {
    ImGui::Separator();
    for (const trace::SpanArg& a : sp.args) {
      if (a.key == trace::kDecidedAt) continue;  // the source view shows it
      ImGui::TableNextRow();
      ImGui::TableNextColumn();
      ImGui::TextUnformatted(a.key.c_str());
      ImGui::TableNextColumn();
      ImGui::TextWrapped("%s", arg_text(a.value).c_str());
    }
    ImGui::EndTable();
  }
  if (!app.presenter) {
    ImGui::Separator();
    source_view(app.trace(), sp, e);
    if (!e.kind.empty()) {
      ImGui::Separator();
      if (ImGui::CollapsingHeader("What this floor is for")) {
        ImGui::TextWrapped("%s", floor_explanation(static_cast<int>(sp.floor)).c_str());
      }
    }
  }
}

}  // namespace descent::ui
