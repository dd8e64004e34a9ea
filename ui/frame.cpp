// One frame of the app: the panels placed in the window (the building, the
// right panel's tabs, the timeline, the console, the toolbar above them),
// the borders between them that the mouse drags, and the banner over all.
//
// [SECTION] Borders
// [SECTION] The right panel's tabs, the banner
// [SECTION] One frame
//
// The window, the fonts and the frame loop around this are main.cpp's; the
// sizes of the panels are remembered (Note [The remembered layout], layout.h).
#include <GLFW/glfw3.h>

#include <algorithm>
#include <cmath>

#include "ui/app.h"

namespace descent::ui {

namespace {

constexpr float kPresenterConsoleShare = 0.36f;  // of the window under the toolbar, for the presenter's console

// [SECTION] Borders --------------------------------------------------------------------

// A border between two panels that the mouse can drag: `*share` is the
// first panel's fraction of `extent` pixels. Returns true when a drag ended
// (the layout is to be remembered).
bool splitter(const char* id, ImVec2 pos, ImVec2 size, bool vertical, float* share, float extent) {
  ImGui::SetNextWindowPos(pos);
  ImGui::SetNextWindowSize(size);
  ImGui::PushStyleVar(ImGuiStyleVar_WindowPadding, ImVec2(0, 0));
  ImGui::PushStyleVar(ImGuiStyleVar_WindowMinSize, ImVec2(1, 1));
  bool ended = false;
  if (ImGui::Begin(id, nullptr,
                   ImGuiWindowFlags_NoDecoration | ImGuiWindowFlags_NoBackground | ImGuiWindowFlags_NoSavedSettings |
                       ImGuiWindowFlags_NoMove)) {
    ImGui::InvisibleButton("##drag", size);
    if (ImGui::IsItemHovered() || ImGui::IsItemActive()) {
      ImGui::SetMouseCursor(vertical ? ImGuiMouseCursor_ResizeEW : ImGuiMouseCursor_ResizeNS);
    }
    // The border follows the pointer from where the drag began (not frame by
    // frame: a frame that missed a motion would lose it for good).
    ImGuiStorage* kept = ImGui::GetStateStorage();
    const ImGuiID at_start = ImGui::GetID("##share_at_start");
    if (ImGui::IsItemActivated()) kept->SetFloat(at_start, *share);
    if (ImGui::IsItemActive()) {
      const ImVec2 drag = ImGui::GetMouseDragDelta(ImGuiMouseButton_Left, 0.0f);
      *share =
          std::clamp(kept->GetFloat(at_start, *share) + (vertical ? drag.x : drag.y) / extent, kMinSplit, kMaxSplit);
    }
    ended = ImGui::IsItemDeactivated();
  }
  ImGui::End();
  ImGui::PopStyleVar(2);
  return ended;
}

// [SECTION] The right panel's tabs, the banner ---------------------------------------------------------

// The right panel's tabs, each label whole on a projector (issue 23): ImGui's
// tab bar shrinks tabs that do not fit and cuts their labels ("Compare with
// Py..."), so the tabs are buttons in the tab colours: the full labels on one
// row when they fit, else the short ones, wrapped onto a second row when even
// those do not fit (presenter mode at 1280x720).
struct RightTabDef {
  const char* label;
  const char* short_label;
  RightTab which;
  void (*draw)(App&);
};
constexpr RightTabDef kRightTabs[] = {
    {"Detail", "Detail", RightTab::Detail, draw_detail},
    {"Memory", "Memory", RightTab::Memory, draw_memory},
    {"Compare with PyTorch", "Compare", RightTab::Compare, draw_compare},
    {"Autograd graph", "Graph", RightTab::Graph, draw_graph},
    {"Streams", "Streams", RightTab::Streams, draw_streams},
    {"Notes", "Notes", RightTab::Notes, draw_notes},
    {"Lesson", "Lesson", RightTab::Lesson, draw_lesson},
};

void draw_right_tabs(App& app, ImVec2 pos, ImVec2 size) {
  ImGui::SetNextWindowPos(pos);
  ImGui::SetNextWindowSize(size);
  app.tab_labels.clear();
  // The title names what the panel holds (### keeps the window's identity).
  const char* title = app.right_tab == RightTab::Lesson ? "Lesson###right" : "Floor detail###right";
  if (ImGui::Begin(title, nullptr, kPanelFlags)) {
    const ImGuiStyle& st = ImGui::GetStyle();
    const float left = ImGui::GetCursorPosX(), right = left + ImGui::GetContentRegionAvail().x;
    float row = -st.ItemSpacing.x;
    for (const RightTabDef& t : kRightTabs)
      row += ImGui::CalcTextSize(t.label).x + 2 * st.FramePadding.x + st.ItemSpacing.x;
    const bool use_short = row > right - left;
    for (const RightTabDef& t : kRightTabs) {
      const char* label = use_short ? t.short_label : t.label;
      const float text_w = ImGui::CalcTextSize(label).x;
      if (&t != kRightTabs) {
        ImGui::SameLine();
        if (ImGui::GetCursorPosX() + text_w + 2 * st.FramePadding.x > right) ImGui::NewLine();
      }
      const bool on = app.right_tab == t.which;
      ImGui::PushStyleColor(ImGuiCol_Button, ImGui::GetStyleColorVec4(on ? ImGuiCol_TabActive : ImGuiCol_Tab));
      ImGui::PushStyleColor(ImGuiCol_ButtonHovered, ImGui::GetStyleColorVec4(ImGuiCol_TabHovered));
      ImGui::PushStyleColor(ImGuiCol_ButtonActive, ImGui::GetStyleColorVec4(ImGuiCol_TabActive));
      if (ImGui::Button(label)) app.right_tab = t.which;
      ImGui::PopStyleColor(3);
      // The label's space: the button's inside, up to the panel's right edge.
      const float x0 = ImGui::GetItemRectMin().x + st.FramePadding.x;
      const float x1 =
          std::min(ImGui::GetItemRectMax().x - st.FramePadding.x, ImGui::GetWindowPos().x + right - st.FramePadding.x);
      TextFit fit;
      fit.text = fit.shown = label;
      fit.width = text_w;
      fit.given = x1 - x0;
      app.tab_labels.push_back(std::move(fit));
    }
    ImGui::Separator();
    // Every plain text of a tab wraps at the panel's edge (or its table column's) at a space: none is cut short
    // on a projector. Texts in a space of their own are fitted instead (text_fit.cpp).
    ImGui::PushTextWrapPos(0.0f);
    for (const RightTabDef& t : kRightTabs) {
      if (t.which == app.right_tab) t.draw(app);
    }
    ImGui::PopTextWrapPos();
  }
  ImGui::End();
}

void draw_banner(App& app, ImVec2 display) {
  if (app.banner.empty()) return;
  const float w = std::min(display.x * 0.7f, 900.0f);
  ImGui::SetNextWindowPos(ImVec2((display.x - w) * 0.5f, display.y * 0.3f));
  ImGui::SetNextWindowSize(ImVec2(w, 0));
  ImGui::PushStyleColor(ImGuiCol_WindowBg, ImVec4(0.35f, 0.08f, 0.08f, 0.97f));
  if (ImGui::Begin("Message##banner", nullptr, kFixedWindowFlags | ImGuiWindowFlags_AlwaysAutoResize)) {
    ImGui::TextWrapped("%s", app.banner.c_str());
    if (ImGui::Button("OK (Enter)") || ImGui::IsKeyPressed(GLFW_KEY_ENTER, false)) app.banner.clear();
  }
  ImGui::End();
  ImGui::PopStyleColor();
  app.panels_drawn.push_back("banner");
}

}  // namespace

// [SECTION] One frame ------------------------------------------------------------------

// The toolbar on top; under it the building and the right panel's tabs, in
// presenter mode alone, else with the timeline under the building and the
// console under the tabs, where the layout shows them; the banner over all.
void draw_frame(App& app, ImFont* font) {
  ImGuiIO& io = ImGui::GetIO();
  app.panels_drawn.clear();
  app.timeline_header = TextFit{};  // the timeline fills it, when drawn
  app.texts_drawn.clear();          // every panel adds the texts it fits
  ImGui::PushFont(font);
  handle_keys(app);
  const ImVec2 d = io.DisplaySize;
  const float bar = (app.presenter ? 96.0f : 64.0f) * app.ui_scale;
  draw_toolbar(app, ImVec2(0, 0), ImVec2(d.x, bar));
  const float body = d.y - bar;
  if (app.presenter) {
    // A lesson's text shares the projector evenly with the building; the
    // presenter's console (F2), when shown, runs across the bottom
    // (Note [The presenter's console], panel_console.cpp).
    const float left = d.x * (app.right_tab == RightTab::Lesson ? 0.52f : 0.60f);
    const float console_h = app.presenter_console ? std::round(body * kPresenterConsoleShare) : 0.0f;
    draw_building(app, ImVec2(0, bar), ImVec2(left, body - console_h));
    draw_right_tabs(app, ImVec2(left, bar), ImVec2(d.x - left, body - console_h));
    if (app.presenter_console) {
      draw_presenter_console(app, ImVec2(0, bar + body - console_h), ImVec2(d.x, console_h));
    } else {
      app.focus_console = false;
      app.leave_console_frames = 0;
      app.console_has_keys = false;
    }
  } else {
    // The borders can be dragged, and the timeline and the console hidden
    // (Note [The remembered layout]). A lesson's text needs the height: with
    // the Lesson tab, the right column is all of it (its exercise editor is
    // the prompt while it is open).
    AppLayout& l = app.layout;
    const float left = std::round(d.x * l.split_x);
    const bool console = l.console && app.right_tab != RightTab::Lesson;
    const float top = l.timeline || console ? std::round(body * l.split_y) : body;  // where the lower panels begin
    const float building_h = l.timeline ? top : body, right_h = console ? top : body;
    draw_building(app, ImVec2(0, bar), ImVec2(left, building_h));
    draw_right_tabs(app, ImVec2(left, bar), ImVec2(d.x - left, right_h));
    if (l.timeline) draw_timeline(app, ImVec2(0, bar + top), ImVec2(left, body - top));
    if (console) {
      draw_console(app, ImVec2(left, bar + top), ImVec2(d.x - left, body - top));
    } else {  // an Escape or F2 meant for the prompt has nothing to act on
      app.focus_console = false;
      app.leave_console_frames = 0;
    }
    const float grip = 6.0f * app.ui_scale;
    bool ended = splitter("##split_x", ImVec2(left - grip / 2, bar), ImVec2(grip, body), true, &l.split_x, d.x);
    if (l.timeline || console) {  // the border under the panels that have one below them
      const float x0 = l.timeline ? 0 : left, x1 = console ? d.x : left;
      ended |= splitter("##split_y", ImVec2(x0, bar + top - grip / 2), ImVec2(x1 - x0, grip), false, &l.split_y, body);
    }
    if (ended) app.layout_changed = true;
  }
  draw_banner(app, d);
  ImGui::PopFont();
}

}  // namespace descent::ui
