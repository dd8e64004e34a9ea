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
#include <string>

#include "ui/app.h"
#include "ui/fonts.h"

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

namespace {

// The last non-empty line of a traceback: "ZeroDivisionError: division by zero".
std::string exception_line(const std::string& text) {
  const size_t end = text.find_last_not_of("\n ");
  if (end == std::string::npos) return text;
  const size_t start = text.rfind('\n', end);
  return text.substr(start == std::string::npos ? 0 : start + 1,
                     end - (start == std::string::npos ? 0 : start + 1) + 1);
}

// The lines so far and, unless code runs, the prompt: in the console panel
// (`large` false), or the presenter's, where the lines wrap at the panel's
// edge and an exception is its last line, the one a class reads.
void draw_console_body(App& app, bool large) {
  const float input_h = ImGui::GetFrameHeightWithSpacing();
  ImGui::BeginChild("##out", ImVec2(0, -input_h), false, large ? 0 : ImGuiWindowFlags_HorizontalScrollbar);
  ImFont* mono = mono_font(large);
  if (mono) ImGui::PushFont(mono);
  if (large) ImGui::PushTextWrapPos(0.0f);
  if (app.console.empty()) {
    ImGui::TextDisabled(
        large ? "Type a line of Python, e.g.  x = descent.ones(2) + 1  and press Enter."
              : "Type a line of Python, e.g.  x = descent.randn(3, 4); (x @ x.T).sum()  and press Enter.");
  }
  for (const ConsoleLine& l : app.console) {
    const ImVec4 col = l.kind == ConsoleLine::Error   ? ImVec4(1.0f, 0.45f, 0.45f, 1.0f)
                       : l.kind == ConsoleLine::Input ? ImVec4(0.55f, 0.8f, 1.0f, 1.0f)
                                                      : ImVec4(0.85f, 0.85f, 0.85f, 1.0f);
    ImGui::PushStyleColor(ImGuiCol_Text, col);
    if (large && l.kind == ConsoleLine::Error) {
      ImGui::TextWrapped("%s", exception_line(l.text).c_str());
    } else if (large) {
      ImGui::TextWrapped("%s", l.text.c_str());
    } else {
      ImGui::TextUnformatted(l.text.c_str());
    }
    ImGui::PopStyleColor();
  }
  if (large) ImGui::PopTextWrapPos();
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
    return;
  }
  if (large && mono) ImGui::PushFont(mono);
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
  if (large && !ImGui::IsItemActive()) {  // typed before the prompt had the keyboard: the prompt's all the same
    ImGuiIO& io = ImGui::GetIO();
    for (const ImWchar c : io.InputQueueCharacters)
      if (c >= 0x20 && c < 0x7f) app.input += static_cast<char>(c);
    io.InputQueueCharacters.resize(0);
  }
  if (large && mono) ImGui::PopFont();
  if (app.leave_console_frames > 0) {  // Escape was pressed: see handle_keys
    if (ImGui::IsItemActive()) ImGui::ClearActiveID();
    --app.leave_console_frames;
  }
  app.console_has_keys = ImGui::IsItemActive();
}

}  // namespace

void draw_console(App& app, ImVec2 pos, ImVec2 size) {
  ImGui::SetNextWindowPos(pos);
  ImGui::SetNextWindowSize(size);
  if (ImGui::Begin("Python console: each line runs traced##console", nullptr, kPanelFlags)) {
    app.panels_drawn.push_back("console");
    draw_console_body(app, /*large=*/false);
  }
  ImGui::End();
}

// Note [The presenter's console]
// ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
// In presenter mode there is no console panel, and a letter typed is a
// shortcut (T the pace, E the next kernel, 1 to 7 the tabs). F2 opens a
// console across the bottom of the projector, in the presenter's type (a
// line of 60 characters at 1280x720), on the same prompt, history and lines
// as the console panel, so a statement typed here runs traced and becomes
// the call on screen. While it is shown every key is its: handle_keys
// takes none but F2 and Esc (which close it), Ctrl+C (Stop) and the zoom,
// and the prompt asks for the keyboard each frame it does not have it. The
// characters typed in the frame or two before ImGui gives it the keyboard
// are kept for it, not lost. An exception is shown as its last line (the
// exception and its message), in red; the app carries on.
void draw_presenter_console(App& app, ImVec2 pos, ImVec2 size) {
  ImGui::SetNextWindowPos(pos);
  ImGui::SetNextWindowSize(size);
  if (ImGui::Begin("Python: each line runs traced (F2 or Esc closes)##presenter_console", nullptr, kFixedWindowFlags)) {
    app.panels_drawn.push_back("presenter_console");
    if (!app.console_has_keys && !app.running.active) {
      app.focus_console = true;
      app.leave_console_frames = 0;
    }
    draw_console_body(app, /*large=*/true);
  }
  ImGui::End();
}

}  // namespace descent::ui
