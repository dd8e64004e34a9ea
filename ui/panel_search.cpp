// Moving through a long story: the jumps to a step of a kind, and the
// search by span name (Ctrl+F), a small field under the toolbar.
//
// The model is navigate.h (Note [Jumping through a story]); the keys are in
// panel_toolbar.cpp's handle_keys. Enter or F3 goes to the next span named
// the text, Shift+Enter or Shift+F3 to the one before, Esc closes the field.
#include <GLFW/glfw3.h>
#include <imgui.h>
#include <imgui_internal.h>  // BringWindowToDisplayFront: the field stays over the panels clicked since
#include <imgui_stdlib.h>    // after imgui.h, which it needs

#include "ui/app.h"

namespace descent::ui {

namespace {

constexpr float kSearchFieldPx = 260.0f;

void go_to(App& app, size_t step) {
  app.play.playing = false;
  app.play.scrub(app.story, step);
  app.timeline_follow = true;
}

void say(App& app, std::string text) {
  app.jump_said = std::move(text);
  app.jump_said_at = app.step();
}

// The matches for the text typed, found again when the text or the trace changed.
void ensure_matches(App& app) {
  SearchView& v = app.search;
  if (v.searched == v.text && v.searched_of.lock() == app.loaded.trace) return;
  v.searched = v.text;
  v.searched_of = app.loaded.trace;
  v.matches = app.loaded.trace ? search_steps(app.story, v.text) : std::vector<size_t>{};
}

}  // namespace

void jump(App& app, JumpKind kind, bool forward) {
  if (!app.has_steps()) return;
  const size_t k = jump_step(app.story, app.step(), kind, forward);
  if (k == SIZE_MAX) {
    say(app, std::string("no ") + jump_kind_name(kind) + (forward ? " after" : " before") + " this step");
    return;
  }
  go_to(app, k);
  say(app, "");
}

void search_next(App& app, bool forward) {
  if (!app.has_steps() || app.search.text.empty()) return;
  ensure_matches(app);
  const size_t m = next_match(app.search.matches, app.step(), forward);
  if (m != SIZE_MAX) go_to(app, app.search.matches[m]);
  say(app, "");
}

void open_search(App& app) {
  app.search.open = true;
  app.search.focus = true;
}

void draw_search(App& app, ImVec2 pos) {
  SearchView& v = app.search;
  v.has_keys = false;
  if (!v.open) {
    v.focus = false;
    return;
  }
  ImGui::SetNextWindowPos(pos);
  const ImGuiWindowFlags flags = ImGuiWindowFlags_NoTitleBar | ImGuiWindowFlags_AlwaysAutoResize |
                                 ImGuiWindowFlags_NoSavedSettings | ImGuiWindowFlags_NoMove |
                                 ImGuiWindowFlags_NoFocusOnAppearing;
  if (ImGui::Begin("##search", nullptr, flags)) {
    app.panels_drawn.push_back("search");
    ImGui::BringWindowToDisplayFront(ImGui::GetCurrentWindow());
    ImGui::TextUnformatted("Find span");
    ImGui::SameLine();
    ImGui::SetNextItemWidth(kSearchFieldPx);
    if (v.focus) ImGui::SetKeyboardFocusHere();  // asked again each frame until the field has the keyboard
    if (ImGui::InputText("##find", &v.text, ImGuiInputTextFlags_EnterReturnsTrue)) {
      search_next(app, !ImGui::GetIO().KeyShift);
      v.focus = true;  // Enter lets go of the field: take it back, so Enter goes on finding
    }
    v.has_keys = ImGui::IsItemActive();
    if (v.has_keys) v.focus = false;
    ensure_matches(app);
    v.label = v.text.empty() ? "type a span's name (any part, any case)" : search_label(v.matches, app.step(), v.text);
    ImGui::SameLine();
    if (ImGui::SmallButton("<")) search_next(app, false);
    ImGui::SameLine();
    if (ImGui::SmallButton(">")) search_next(app, true);
    ImGui::SameLine();
    if (v.matches.empty() && !v.text.empty()) {
      ImGui::TextColored(ImVec4(1.0f, 0.6f, 0.45f, 1.0f), "%s", v.label.c_str());
    } else {
      ImGui::TextUnformatted(v.label.c_str());
    }
    ImGui::SameLine();
    ImGui::TextDisabled("Enter/F3 next, Shift back, Esc closes");
    ImGui::SameLine();
    if (ImGui::SmallButton("x")) v.open = false;
  }
  ImGui::End();
}

}  // namespace descent::ui
