// The Notes tab: every named Note of descent's sources, searchable, each with
// its file:line, where it is cited and its text (ui/notes.h reads them from
// the embedded sources). An explanation's Note buttons and the N key open a
// Note here (open_note).
#include <imgui.h>
#include <imgui_stdlib.h>  // after imgui.h, which it needs

#include "ui/app.h"

namespace descent::ui {

namespace {

constexpr float kListShare = 0.32f;  // of the tab's height, for the list of names
constexpr int kMaxCitedShown = 12;   // places that cite a note, listed

// A row of small buttons, wrapped to the panel's width; returns the index clicked, or -1.
int button_row(const std::vector<std::string>& labels, const char* id) {
  int clicked = -1;
  const float right = ImGui::GetContentRegionMax().x;
  for (size_t k = 0; k < labels.size(); ++k) {
    ImGui::PushID(id);
    ImGui::PushID(static_cast<int>(k));
    const float w = ImGui::CalcTextSize(labels[k].c_str()).x + 2 * ImGui::GetStyle().FramePadding.x;
    if (k > 0) {
      ImGui::SameLine();
      if (ImGui::GetCursorPosX() + w > right) ImGui::NewLine();
    }
    if (ImGui::SmallButton(labels[k].c_str())) clicked = static_cast<int>(k);
    ImGui::PopID();
    ImGui::PopID();
  }
  return clicked;
}

}  // namespace

void open_note(App& app, const std::string& name) {
  const size_t k = embedded_notes().index_of(name);
  if (k == SIZE_MAX) return;
  app.notes.selected = k;
  app.notes.scroll_to = true;
  app.right_tab = RightTab::Notes;
}

void draw_notes(App& app) {
  app.panels_drawn.push_back("notes");
  const NoteIndex& index = embedded_notes();
  if (index.notes.empty()) {
    ImGui::TextWrapped("This build embeds no sources, so it has no Notes to show.");
    return;
  }
  ImGui::SetNextItemWidth(-1);
  if (ImGui::InputTextWithHint("##notes_search", "search the Notes: a name, a word of the text, a file",
                               &app.notes.filter)) {
    app.notes.scroll_to = true;
  }
  const std::vector<size_t> shown = index.search(app.notes.filter);
  ImGui::TextDisabled("%zu of %zu Notes (design decisions named in descent's source, as c10's are)", shown.size(),
                      index.notes.size());
  const float list_h =
      std::max(ImGui::GetTextLineHeightWithSpacing() * 4, ImGui::GetContentRegionAvail().y * kListShare);
  if (ImGui::BeginChild("##note_list", ImVec2(0, list_h), true)) {
    for (size_t k : shown) {
      const bool selected = app.notes.selected == k;
      if (ImGui::Selectable(index.notes[k].name.c_str(), selected)) app.notes.selected = k;
      if (selected && app.notes.scroll_to) ImGui::SetScrollHereY(0.3f);
    }
  }
  ImGui::EndChild();
  app.notes.scroll_to = false;
  if (app.notes.selected >= index.notes.size()) {
    ImGui::TextWrapped("Choose a Note above, or press N on a step to open the Note its explanation cites.");
    return;
  }
  const Note& n = index.notes[app.notes.selected];
  if (ImGui::BeginChild("##note_text", ImVec2(0, 0), false)) {
    ImGui::PushStyleColor(ImGuiCol_Text, ImVec4(1.0f, 0.85f, 0.3f, 1.0f));
    ImGui::TextWrapped("Note [%s]", n.name.c_str());
    ImGui::PopStyleColor();
    ImGui::TextDisabled("%s:%u", n.file.c_str(), n.line);
    ImGui::Separator();
    for (const std::string& p : paragraphs(n)) {
      if (p.empty())
        ImGui::Spacing();
      else
        ImGui::TextWrapped("%s", p.c_str());
    }
    if (!n.cites.empty()) {
      ImGui::Separator();
      ImGui::TextUnformatted("It cites:");
      const int k = button_row(n.cites, "cites");
      if (k >= 0) open_note(app, n.cites[k]);
    }
    if (!n.cited_at.empty()) {
      ImGui::Separator();
      ImGui::Text("Cited in %zu places:", n.cited_at.size());
      for (size_t k = 0; k < n.cited_at.size() && k < kMaxCitedShown; ++k) {
        ImGui::TextDisabled("  %s:%u", n.cited_at[k].file.c_str(), n.cited_at[k].line);
      }
      if (n.cited_at.size() > kMaxCitedShown) ImGui::TextDisabled("  and %zu more", n.cited_at.size() - kMaxCitedShown);
    }
  }
  ImGui::EndChild();
}

}  // namespace descent::ui
