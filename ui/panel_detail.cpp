// The detail panel: the current span's arguments and times, what its floor
// is for (assets/floors/<n>.txt), and the excerpt of descent's source that
// opened it (embedded at build time, tracer/sources.h).
#include <algorithm>
#include <sstream>

#include "ui/app.h"
#if DESCENT_HAVE_SOURCES
#include "tracer/sources.h"
#endif

namespace descent::ui {

namespace {

constexpr int kExcerptBefore = 3, kExcerptAfter = 8;  // lines around the span's line

void source_excerpt(const trace::Span& sp) {
#if DESCENT_HAVE_SOURCES
  if (sp.file.empty()) {
    ImGui::TextDisabled("No source location recorded for this span (user code, or a file from elsewhere).");
    return;
  }
  ImGui::Text("%s:%u", sp.file.c_str(), sp.line);
  const std::string_view text = trace::embedded_source(sp.file);
  if (text.empty()) {
    ImGui::TextDisabled("(this file's source is not embedded in the app)");
    return;
  }
  std::istringstream in{std::string(text)};
  std::string line;
  const int want = static_cast<int>(sp.line);
  ImFont* mono = ImGui::GetIO().Fonts->Fonts.Size > 2 && !ImGui::GetIO().FontDefault ? ImGui::GetIO().Fonts->Fonts[2]
                                                                                       : nullptr;
  if (mono) ImGui::PushFont(mono);
  for (int n = 1; std::getline(in, line) && n <= want + kExcerptAfter; ++n) {
    if (n < want - kExcerptBefore) continue;
    if (n == want) ImGui::TextColored(ImVec4(1.0f, 0.85f, 0.3f, 1.0f), "%5d > %s", n, line.c_str());
    else ImGui::TextDisabled("%5d   %s", n, line.c_str());
  }
  if (mono) ImGui::PopFont();
#else
  (void)sp;
  ImGui::TextDisabled("This build records no source locations.");
#endif
}

}  // namespace

void draw_detail(App& app) {
  app.panels_drawn.push_back("detail");
  if (!app.has_steps()) {
    ImGui::TextWrapped("Nothing to show: the trace holds no call. Type a line into the console, or open a trace.");
    return;
  }
  const size_t i = app.current_span();
  const trace::Span& sp = app.trace().spans[i];
  const int f = building_floor(sp.floor);
  const Timing t = timing_of(app.story, i);
  ImGui::PushStyleColor(ImGuiCol_Text, floor_color_vec(f));
  ImGui::Text("Floor %d, %s", static_cast<int>(sp.floor), floor_title(static_cast<int>(sp.floor)));
  ImGui::PopStyleColor();
  ImGui::TextWrapped("%s", sp.name.c_str());
  ImGui::Text("%s inclusive, %s self, thread %u", duration_text(t.inclusive_ns).c_str(),
              duration_text(t.self_ns).c_str(), sp.thread);
  if (t.warm_samples > 0) {
    ImGui::Text("median of %d warm calls; the first (cold) call took %s", t.warm_samples,
                duration_text(t.cold_inclusive_ns).c_str());
  }
  if (app.trace().span_cost_ns > 0) {
    ImGui::PushStyleColor(ImGuiCol_Text, ImGui::GetStyleColorVec4(ImGuiCol_TextDisabled));
    ImGui::TextWrapped("includes the tracer's own cost, about %.0f ns per span", app.trace().span_cost_ns);
    ImGui::PopStyleColor();
  }
  if (!app.presenter && !sp.args.empty() &&
      ImGui::BeginTable("##args", 2, ImGuiTableFlags_BordersInnerH | ImGuiTableFlags_SizingStretchProp)) {
    for (const trace::SpanArg& a : sp.args) {
      ImGui::TableNextRow();
      ImGui::TableNextColumn();
      ImGui::TextUnformatted(a.key.c_str());
      ImGui::TableNextColumn();
      ImGui::TextWrapped("%s", arg_text(a.value).c_str());
    }
    ImGui::EndTable();
  } else if (app.presenter && !sp.args.empty()) {
    for (const trace::SpanArg& a : sp.args) ImGui::BulletText("%s = %s", a.key.c_str(), arg_text(a.value).c_str());
  }
  ImGui::Separator();
  ImGui::TextWrapped("%s", floor_explanation(static_cast<int>(sp.floor)).c_str());
  if (!app.presenter) {
    ImGui::Separator();
    source_excerpt(sp);
  }
}

}  // namespace descent::ui
