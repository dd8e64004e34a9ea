// The console: an embedded Python prompt. Each statement typed runs traced,
// on the Python thread (Note [The Python thread]), and becomes the call on
// screen; what it prints and any exception it raises are shown here, and the
// app carries on. While it runs the prompt gives way to a status line and a
// Stop button, as a terminal shows no prompt until the statement is done.
#include <GLFW/glfw3.h>
#include <imgui.h>
#include <imgui_internal.h>  // ClearActiveID: Escape's letting go, which 1.86 has no public call for
#include <imgui_stdlib.h>    // after imgui.h, which it needs

#include <algorithm>

#include "ui/app.h"

namespace descent::ui {

namespace {

constexpr size_t kMaxConsoleLines = 2000;

int history_callback(ImGuiInputTextCallbackData* data) {
  App& app = *static_cast<App*>(data->UserData);
  if (data->EventFlag != ImGuiInputTextFlags_CallbackHistory || app.history.empty()) return 0;
  const int n = static_cast<int>(app.history.size());
  if (data->EventKey == ImGuiKey_UpArrow)
    app.history_pos = app.history_pos < 0 ? n - 1 : std::max(0, app.history_pos - 1);
  if (data->EventKey == ImGuiKey_DownArrow && app.history_pos >= 0) {
    app.history_pos = app.history_pos + 1 >= n ? -1 : app.history_pos + 1;
  }
  data->DeleteChars(0, data->BufTextLen);
  if (app.history_pos >= 0) data->InsertChars(0, app.history[app.history_pos].c_str());
  return 0;
}

}  // namespace

// Starts one statement typed at the prompt (poll_run shows its outcome).
void console_submit(App& app, const std::string& line) {
  app.console.push_back({ConsoleLine::Input, ">>> " + line});
  if (app.history.empty() || app.history.back() != line) app.history.push_back(line);
  app.history_pos = -1;
  start_run(app, line, 1, /*from_console=*/true);
  if (app.console.size() > kMaxConsoleLines)
    app.console.erase(app.console.begin(), app.console.end() - kMaxConsoleLines);
}

void draw_console(App& app, ImVec2 pos, ImVec2 size) {
  ImGui::SetNextWindowPos(pos);
  ImGui::SetNextWindowSize(size);
  if (!ImGui::Begin("Python console: each line runs traced##console", nullptr, kPanelFlags)) {
    ImGui::End();
    return;
  }
  app.panels_drawn.push_back("console");
  const float input_h = ImGui::GetFrameHeightWithSpacing();
  ImGui::BeginChild("##out", ImVec2(0, -input_h), false, ImGuiWindowFlags_HorizontalScrollbar);
  ImFont* mono = ImGui::GetIO().Fonts->Fonts.Size > 2 ? ImGui::GetIO().Fonts->Fonts[2] : nullptr;
  if (mono) ImGui::PushFont(mono);
  if (app.console.empty()) {
    ImGui::TextDisabled("Type a line of Python, e.g.  x = descent.randn(3, 4); (x @ x.T).sum()  and press Enter.");
  }
  for (const ConsoleLine& l : app.console) {
    const ImVec4 col = l.kind == ConsoleLine::Error   ? ImVec4(1.0f, 0.45f, 0.45f, 1.0f)
                       : l.kind == ConsoleLine::Input ? ImVec4(0.55f, 0.8f, 1.0f, 1.0f)
                                                      : ImVec4(0.85f, 0.85f, 0.85f, 1.0f);
    ImGui::PushStyleColor(ImGuiCol_Text, col);
    ImGui::TextUnformatted(l.text.c_str());
    ImGui::PopStyleColor();
  }
  if (mono) ImGui::PopFont();
  if (app.console_scroll) {
    ImGui::SetScrollHereY(1.0f);
    app.console_scroll = false;
  }
  ImGui::EndChild();
  if (app.running.active) {  // no prompt while the statement runs: its status, and Stop
    const float stop_w = ImGui::CalcTextSize("Stop (S, Ctrl+C)").x + 2 * ImGui::GetStyle().FramePadding.x;
    ImGui::AlignTextToFramePadding();
    ImGui::TextColored(ImVec4(1.0f, 0.8f, 0.35f, 1.0f), "%s", run_status(app).c_str());
    ImGui::SameLine(std::max(ImGui::GetCursorPosX(), ImGui::GetWindowContentRegionMax().x - stop_w));
    if (ImGui::Button("Stop (S, Ctrl+C)##console")) stop_run(app);
    app.console_has_keys = false;
    ImGui::End();
    return;
  }
  ImGui::SetNextItemWidth(-1);
  // A focus request is repeated each frame until the prompt has the keyboard
  // (ImGui acts on it a frame later, once the window is focused).
  if (app.focus_console) {
    ImGui::SetWindowFocus();
    ImGui::SetKeyboardFocusHere();
  }
  if (ImGui::InputText("##prompt", &app.input,
                       ImGuiInputTextFlags_EnterReturnsTrue | ImGuiInputTextFlags_CallbackHistory, history_callback,
                       &app)) {
    if (!app.input.empty()) console_submit(app, app.input);
    app.input.clear();
    app.focus_console = true;
    app.console_scroll = true;
  } else if (app.focus_console && ImGui::IsItemActive()) {
    app.focus_console = false;
  }
  if (app.leave_console_frames > 0) {  // Escape was pressed: see handle_keys
    if (ImGui::IsItemActive()) ImGui::ClearActiveID();
    --app.leave_console_frames;
  }
  app.console_has_keys = ImGui::IsItemActive();
  ImGui::End();
}

}  // namespace descent::ui
