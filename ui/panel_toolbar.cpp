// The toolbar (play, pause, step, speed, scrub, files) and the keyboard.
//
// One key per action, the same in presenter mode (see kKeyHelp). Keys act
// only when no text field has the keyboard, so typing in the console never
// moves the token. Right and Left (J and K) go to the next step and the one
// before, whichever way the token then moves (down into a span or up out of
// one): the buttons say "Next" and "Back", the step's label says which way
// the token went. Down and Up go to the next step that moves the token the
// way they name. The jumps (L, [ ], B, G, E) go to the next step of a kind,
// with Shift the one before (Note [Jumping through a story], navigate.h).
#include <GLFW/glfw3.h>
#include <imgui.h>
#include <imgui_stdlib.h>  // after imgui.h, which it needs

#include <algorithm>
#include <cstdio>

#include "ui/app.h"

namespace descent::ui {

namespace {

// The keys, as the help window lists them: a table, so the columns line up
// in a proportional font, short enough for a projector's 1280x720.
constexpr const char* kKeyHelp[][2] = {
    {"Right / J", "next step, down into a span or up out of one"},
    {"Left / K", "back a step"},
    {"Down / Up", "the next step down / the next step up"},
    {". / Shift+.", "next / previous statement (a floor-1 span)"},
    {"] / [", "next / previous floor change"},
    {"B / Shift+B", "next / previous autograd node backward runs (floor 4)"},
    {"G / Shift+G", "next / previous launch (floor 8)"},
    {"E / Shift+E", "next / previous kernel (floor 5)"},
    {"Ctrl+F", "find a span by name: Enter or F3 next, Shift+F3 back"},
    {"Space", "play / pause"},
    {"Home / End", "the start / the last step"},
    {"PgDn / PgUp", "10 steps on / back"},
    {"+ / -", "faster / slower"},
    {"Ctrl + / - / 0", "larger / smaller / usual type (remembered)"},
    {"T", "teaching pace / real time (scaled)"},
    {"P", "presenter mode (large type)"},
    {"V", "fold helper spans and redispatches (a beginner's story)"},
    {"R", "run the code 5 times: warm medians beside the cold call"},
    {"M", "to the run with the median warm time"},
    {"1 ... 7", "right panel: detail, memory, compare, graph, streams, Notes, Lesson"},
    {"L", "the Lesson tab: the lessons, with your progress"},
    {"  in a lesson", "Right / Left: next / previous step; 1-9 answer; R reveal"},
    {"", "E edit the exercise; Ctrl+Enter check; Ctrl+H hint; Ctrl+Shift+S solution"},
    {"  the lessons", "Up / Down, Enter open; Delete forget my progress (asked first)"},
    {"", "Alt+Up / Alt+Down: the code of an earlier / later check"},
    {"N", "the Note the step's explanation cites (Notes tab)"},
    {"F2", "type into the Python console (Esc leaves it); presenting, opens one in large type"},
    {"S / Ctrl+C", "stop the code running (KeyboardInterrupt in it)"},
    {"F1 / H", "this help"},
};

bool pressed(int glfw_key) { return ImGui::IsKeyPressed(glfw_key, true); }
constexpr int kLeaveConsoleFrames = 3;  // long enough for a focus request ImGui still holds

enum class FileAction { None, Open, Compare, Save, SaveChrome };

void file_popup(App& app, FileAction& action) {
  static const char* kTitles[] = {"", "Open a trace", "Open PyTorch's trace to compare", "Save the trace",
                                  "Save as Chrome JSON"};
  if (action != FileAction::None) {
    ImGui::OpenPopup("File##popup");
    app.file_title = kTitles[int(action)];
    app.file_action = int(action);
    action = FileAction::None;
  }
  if (!ImGui::BeginPopupModal("File##popup", nullptr, ImGuiWindowFlags_AlwaysAutoResize)) return;
  ImGui::TextUnformatted(app.file_title.c_str());
  ImGui::TextDisabled("descent's own .descent files, or Chrome JSON (Perfetto, torch.profiler)");
  ImGui::SetNextItemWidth(560);
  if (ImGui::IsWindowAppearing()) ImGui::SetKeyboardFocusHere();
  const bool enter = ImGui::InputText("##path", &app.open_path, ImGuiInputTextFlags_EnterReturnsTrue);
  if (ImGui::Button("OK") || enter) {
    try {
      switch (FileAction(app.file_action)) {
        case FileAction::Open:
          open_trace_file(app, app.open_path);
          break;
        case FileAction::Compare:
          open_compare_file(app, app.open_path);
          break;
        case FileAction::Save:
          trace::save(app.trace(), app.open_path);
          break;
        case FileAction::SaveChrome:
          trace::save_chrome_json(app.trace(), app.open_path);
          break;
        case FileAction::None:
          break;
      }
    } catch (const std::exception& e) {
      app.banner = e.what();
    }
    ImGui::CloseCurrentPopup();
  }
  ImGui::SameLine();
  if (ImGui::Button("Cancel") || ImGui::IsKeyPressed(GLFW_KEY_ESCAPE, false)) ImGui::CloseCurrentPopup();
  ImGui::EndPopup();
}

}  // namespace

void handle_keys(App& app) {
  const ImGuiIO& io = ImGui::GetIO();
  // Escape leaves the console, even while a focus request for it is pending
  // (after a statement runs, the prompt asks for the keyboard back, and ImGui
  // acts on such a request a frame late): for a few frames the prompt is
  // made to let go whenever it has the keyboard (panel_console.cpp).
  if (ImGui::IsKeyPressed(GLFW_KEY_ESCAPE, false)) {
    app.search.open = false;
    app.focus_console = false;
    app.leave_console_frames = kLeaveConsoleFrames;
  }
  // Ctrl + / Ctrl - / Ctrl 0: the zoom, wherever the keyboard is (Note [The
  // remembered layout]); applied before the next frame.
  if (io.KeyCtrl) {
    float& z = app.layout.zoom;
    const float was = z;
    if (ImGui::IsKeyPressed(GLFW_KEY_EQUAL, false) || ImGui::IsKeyPressed(GLFW_KEY_KP_ADD, false)) z *= kZoomStep;
    if (ImGui::IsKeyPressed(GLFW_KEY_MINUS, false) || ImGui::IsKeyPressed(GLFW_KEY_KP_SUBTRACT, false)) z /= kZoomStep;
    if (ImGui::IsKeyPressed(GLFW_KEY_0, false) || ImGui::IsKeyPressed(GLFW_KEY_KP_0, false)) z = 1.0f;
    z = std::clamp(z, kMinZoom, kMaxZoom);
    if (z != was) app.layout_changed = true;
  }
  // Ctrl+C stops the running code wherever the keyboard is (the prompt is
  // hidden while code runs, so it copies nothing then).
  if (app.running.active && io.KeyCtrl && ImGui::IsKeyPressed(GLFW_KEY_C, false)) stop_run(app);
  // The presenter's console takes every other key while it is shown; F2 and
  // Esc close it (Note [The presenter's console], panel_console.cpp).
  if (app.presenter && app.presenter_console) {
    if (ImGui::IsKeyPressed(GLFW_KEY_F2, false) || ImGui::IsKeyPressed(GLFW_KEY_ESCAPE, false)) {
      app.presenter_console = false;
    }
    return;
  }
  // io.WantTextInput alone lags a frame behind a text field letting go (it
  // is computed from the frame before): an item must also be active now.
  const bool typing = io.WantTextInput && ImGui::IsAnyItemActive();
  const bool popup = ImGui::IsPopupOpen(nullptr, ImGuiPopupFlags_AnyPopupId);
  const size_t before = app.step();
  // Search: wherever the keyboard is (F3 from the search field itself).
  if (!popup && io.KeyCtrl && ImGui::IsKeyPressed(GLFW_KEY_F, false)) open_search(app);
  if (!popup && pressed(GLFW_KEY_F3)) search_next(app, !io.KeyShift);
  if (typing || popup) return;
  if (lesson_keys(app)) return;  // the Lesson tab's own keys first (panel_lesson.cpp)
  const Story& s = app.story;
  if (pressed(GLFW_KEY_RIGHT) || pressed(GLFW_KEY_J)) app.play.step_forward(s);
  if (pressed(GLFW_KEY_LEFT) || pressed(GLFW_KEY_K)) app.play.step_back(s);
  // Down and Up move the token the way they name (Note [Jumping through a story]).
  if (pressed(GLFW_KEY_DOWN)) jump(app, JumpKind::Down, true);
  if (pressed(GLFW_KEY_UP)) jump(app, JumpKind::Up, true);
  if (ImGui::IsKeyPressed(GLFW_KEY_SPACE, false)) app.play.toggle(s);
  if (pressed(GLFW_KEY_HOME)) app.play.to_start();
  if (pressed(GLFW_KEY_END)) app.play.to_end(s);
  if (pressed(GLFW_KEY_PAGE_DOWN)) app.play.scrub(s, app.step() + 10);
  if (pressed(GLFW_KEY_PAGE_UP)) app.play.scrub(s, app.step() >= 10 ? app.step() - 10 : 0);
  if (!io.KeyCtrl && (pressed(GLFW_KEY_EQUAL) || pressed(GLFW_KEY_KP_ADD))) app.play.faster();
  if (!io.KeyCtrl && (pressed(GLFW_KEY_MINUS) || pressed(GLFW_KEY_KP_SUBTRACT))) app.play.slower();
  if (ImGui::IsKeyPressed(GLFW_KEY_T, false)) {
    app.play.pace = app.play.pace == Pace::Teaching ? Pace::RealTime : Pace::Teaching;
  }
  if (ImGui::IsKeyPressed(GLFW_KEY_P, false)) app.presenter = !app.presenter;
  if (ImGui::IsKeyPressed(GLFW_KEY_V, false)) set_fold_helpers(app, !app.fold_helpers);
  // R: the code on screen run again, kWarmRuns times, for warm medians beside
  // the cold time; M: the run with the median warm time (Note [Cold and warm
  // times]). (W is the timeline's zoom while the mouse is over it.)
  if (ImGui::IsKeyPressed(GLFW_KEY_R, false) && !app.running.active) {
    if (app.loaded.code.empty()) {
      app.console.push_back({ConsoleLine::Info,
                             "(R runs the code on screen again; this call came from a file or "
                             "a lesson, so there is no code to run: type it in the console)"});
    } else {
      start_run(app, app.loaded.code, kWarmRuns, /*from_console=*/false);
    }
  }
  if (ImGui::IsKeyPressed(GLFW_KEY_M, false) && app.has_steps()) {
    app.play.playing = false;
    app.play.scrub(s, median_run_step(s, app.step()));
  }
  // S stops running code; with none running, S over the timeline zooms it out (panel_timeline.cpp).
  if (ImGui::IsKeyPressed(GLFW_KEY_S, false) && !io.KeyCtrl && app.running.active) stop_run(app);
  if (ImGui::IsKeyPressed(GLFW_KEY_F2, false)) {
    if (app.presenter) app.presenter_console = true;  // (in a window, the console panel's prompt)
    app.focus_console = true;
    app.leave_console_frames = 0;
  }
  if (ImGui::IsKeyPressed(GLFW_KEY_F1, false) || (!io.KeyCtrl && ImGui::IsKeyPressed(GLFW_KEY_H, false))) {
    app.show_help = !app.show_help;  // (Ctrl+H is a lesson's hint)
  }
  const RightTab tabs[] = {RightTab::Detail,  RightTab::Memory, RightTab::Compare, RightTab::Graph,
                           RightTab::Streams, RightTab::Notes,  RightTab::Lesson};
  if (ImGui::IsKeyPressed(GLFW_KEY_L, false)) app.right_tab = RightTab::Lesson;
  for (int k = 0; k < 7; ++k) {
    if (ImGui::IsKeyPressed(GLFW_KEY_1 + k, false)) {
      app.right_tab = tabs[k];
    }
  }
  // Jumps (Note [Jumping through a story]): forward, with Shift back.
  if (!io.KeyCtrl) {
    if (pressed(GLFW_KEY_PERIOD)) jump(app, JumpKind::Statement, !io.KeyShift);  // (L is the Lesson tab)
    if (pressed(GLFW_KEY_RIGHT_BRACKET)) jump(app, JumpKind::Floor, true);
    if (pressed(GLFW_KEY_LEFT_BRACKET)) jump(app, JumpKind::Floor, false);
    if (pressed(GLFW_KEY_B)) jump(app, JumpKind::Node, !io.KeyShift);
    if (pressed(GLFW_KEY_G)) jump(app, JumpKind::Launch, !io.KeyShift);
    if (pressed(GLFW_KEY_E)) jump(app, JumpKind::Kernel, !io.KeyShift);
  }
  if (ImGui::IsKeyPressed(GLFW_KEY_N, false) && app.has_steps()) {
    const Explanation& e = current_explanation(app);
    if (!e.notes.empty()) open_note(app, e.notes.front());
  }
  hold_at_question(app);  // a lesson's question waits: not past the step it asks at
  if (app.step() != before) app.timeline_follow = true;
}

std::string step_label(const App& app) {
  if (!app.has_steps()) return "";
  const Story& s = app.story;
  const Step& st = s.steps[app.step()];
  char head[64];
  std::snprintf(head, sizeof head, "%zu / %zu  floor %d, ", app.step() + 1, s.steps.size(), token_floor(s, app.step()));
  return head + std::string(st.down ? "down into " : "up from ") + app.trace().spans[st.span].name;
}

namespace {

// File, Lessons and View, then the run's status and Stop, and what is on screen.
void draw_menu_bar(App& app, FileAction& action) {
  if (!ImGui::BeginMenuBar()) return;
  if (ImGui::BeginMenu("File")) {
    if (ImGui::MenuItem("Open trace...")) action = FileAction::Open;
    if (ImGui::MenuItem("Compare with PyTorch's trace...")) action = FileAction::Compare;
    if (ImGui::MenuItem("Save trace (.descent)...")) action = FileAction::Save;
    if (ImGui::MenuItem("Save as Chrome JSON...")) action = FileAction::SaveChrome;
    ImGui::EndMenu();
  }
  if (ImGui::BeginMenu("Lessons")) {
    if (ImGui::MenuItem("All lessons", "L")) {
      app.right_tab = RightTab::Lesson;
      if (app.lesson.open()) lesson_close(app);
    }
    for (const LessonEntry& e : app.lesson.catalog) {
      const std::string label = std::to_string(e.number) + "  " + (e.title.empty() ? e.name : e.title);
      if (ImGui::MenuItem(label.c_str(), nullptr, false, e.error.empty())) lesson_open(app, e.name, 0);
    }
    ImGui::EndMenu();
  }
  if (ImGui::BeginMenu("View")) {
    ImGui::MenuItem("Presenter mode", "P", &app.presenter);
    bool fold = app.fold_helpers;
    if (ImGui::MenuItem("Fold helper spans (beginner)", "V", &fold)) set_fold_helpers(app, fold);
    if (ImGui::MenuItem("Timeline", nullptr, &app.layout.timeline)) app.layout_changed = true;
    if (ImGui::MenuItem("Python console", nullptr, &app.layout.console)) app.layout_changed = true;
    if (ImGui::MenuItem("Larger type", "Ctrl +")) {
      app.layout.zoom = std::min(app.layout.zoom * kZoomStep, kMaxZoom);
      app.layout_changed = true;
    }
    if (ImGui::MenuItem("Smaller type", "Ctrl -")) {
      app.layout.zoom = std::max(app.layout.zoom / kZoomStep, kMinZoom);
      app.layout_changed = true;
    }
    if (ImGui::MenuItem("Type as the monitor has it", "Ctrl 0")) {
      app.layout.zoom = 1.0f;
      app.layout_changed = true;
    }
    ImGui::MenuItem("Keys", "F1", &app.show_help);
    ImGui::EndMenu();
  }
  if (app.running.active) {  // the code on the Python thread: shown in presenter mode too, where no console is
    ImGui::TextColored(ImVec4(1.0f, 0.8f, 0.35f, 1.0f), "  %s", run_status(app).c_str());
    if (ImGui::SmallButton("Stop (S)")) stop_run(app);
  }
  ImGui::TextDisabled("  %s", app.loaded.label.size() > 90 ? (app.loaded.label.substr(0, 87) + "...").c_str()
                                                           : app.loaded.label.c_str());
  ImGui::EndMenuBar();
}

// Start, Back, Play, Next, End, the speed, the pace and the scrub bar.
void draw_playback_buttons(App& app) {
  const Story& s = app.story;
  if (ImGui::Button("|<")) app.play.to_start();
  ImGui::SameLine();
  if (ImGui::Button("Back")) app.play.step_back(s);
  if (ImGui::IsItemHovered()) ImGui::SetTooltip("back a step (Left, K)");
  ImGui::SameLine();
  if (ImGui::Button(app.play.playing ? "Pause" : "Play ")) app.play.toggle(s);
  ImGui::SameLine();
  if (ImGui::Button("Next")) app.play.step_forward(s);
  if (ImGui::IsItemHovered()) ImGui::SetTooltip("the next step, down into a span or up out of one (Right, J)");
  ImGui::SameLine();
  if (ImGui::Button(">|")) app.play.to_end(s);
  ImGui::SameLine();
  if (ImGui::Button("-")) app.play.slower();
  ImGui::SameLine();
  ImGui::Text("%gx", app.play.speed);
  ImGui::SameLine();
  if (ImGui::Button("+")) app.play.faster();
  ImGui::SameLine();
  char pace[48];
  std::snprintf(pace, sizeof pace, app.play.pace == Pace::Teaching ? "teaching pace" : "real time, 1 us = %.1f s",
                kRealTimeSecondsPerUs);
  if (ImGui::Button(pace)) {
    app.play.pace = app.play.pace == Pace::Teaching ? Pace::RealTime : Pace::Teaching;
  }
  ImGui::SameLine();
  const int last = s.steps.empty() ? 0 : static_cast<int>(s.steps.size() - 1);
  int step = static_cast<int>(app.step());
  ImGui::SetNextItemWidth(ImGui::GetContentRegionAvail().x * 0.45f);
  if (ImGui::SliderInt("##scrub", &step, 0, last, "step %d") && last > 0) {
    app.play.scrub(s, static_cast<size_t>(step));
    app.timeline_follow = true;
  }
}

// Which run is on screen, the step's label and what the last jump said,
// clipped short of the Keys button at the right end.
void draw_step_label(App& app, float keys_w) {
  const ImVec2 at = ImGui::GetCursorScreenPos();
  const float text_end = ImGui::GetWindowPos().x + ImGui::GetWindowWidth() - keys_w - 16;
  ImGui::PushClipRect(at, ImVec2(text_end, at.y + ImGui::GetFrameHeight()), true);
  if (app.has_steps()) {
    const RunOf run = run_of_step(app.story, app.step());
    if (run.n > 1) {  // the line ran several times: which run is on screen (Note [Cold and warm times])
      ImGui::TextColored(ImVec4(1.0f, 0.8f, 0.35f, 1.0f), "run %zu of %zu%s", run.k, run.n,
                         run.k == 1 ? " (cold)" : "");
      ImGui::SameLine();
    }
    // Whole words only (a projector's 1280x720 has room for less): what the
    // jump said first, then the label in what is left; the full label on hover.
    const std::string said = !app.jump_said.empty() && app.jump_said_at == app.step() ? app.jump_said : "";
    const float room = text_end - ImGui::GetCursorScreenPos().x;
    const TextFit said_fit = fit_text(said, room * 0.5f, 1);
    const float said_w = said.empty() ? 0 : said_fit.width + ImGui::CalcTextSize("  ").x + 8;
    const std::string label = step_label(app);
    const TextFit label_fit = fit_text(label, room - said_w, 1);
    ImGui::TextUnformatted(label_fit.shown.c_str());
    if (label_fit.shortened && ImGui::IsItemHovered()) ImGui::SetTooltip("%s", label.c_str());
    if (!said.empty()) {
      ImGui::SameLine();
      ImGui::TextColored(ImVec4(1.0f, 0.6f, 0.45f, 1.0f), "  %s", said_fit.shown.c_str());
    }
  } else {
    ImGui::TextDisabled("no steps: the trace is empty");
  }
  ImGui::PopClipRect();
}

// The list of keys (F1, or the Keys button), under the toolbar's right end.
void draw_keys_help(App& app, ImVec2 pos, ImVec2 size) {
  ImGui::SetNextWindowPos(ImVec2(pos.x + size.x - 20, pos.y + size.y + 10), ImGuiCond_Always, ImVec2(1, 0));
  const ImVec2 screen = ImGui::GetIO().DisplaySize;  // never past the window's edge: it scrolls instead
  ImGui::SetNextWindowSizeConstraints(ImVec2(0, 0), ImVec2(screen.x - 40, screen.y - pos.y - size.y - 20));
  if (ImGui::Begin("Keys##help", &app.show_help,
                   ImGuiWindowFlags_AlwaysAutoResize | ImGuiWindowFlags_NoSavedSettings | ImGuiWindowFlags_NoMove)) {
    if (ImGui::BeginTable("##keys", 2, ImGuiTableFlags_SizingFixedFit)) {
      for (const auto& [keys, what] : kKeyHelp) {
        ImGui::TableNextRow();
        ImGui::TableNextColumn();
        ImGui::TextUnformatted(keys);
        ImGui::TableNextColumn();
        ImGui::TextUnformatted(what);
      }
      ImGui::EndTable();
    }
  }
  ImGui::End();
  app.panels_drawn.push_back("keys");
}

}  // namespace

void draw_toolbar(App& app, ImVec2 pos, ImVec2 size) {
  ImGui::SetNextWindowPos(pos);
  ImGui::SetNextWindowSize(size);
  const ImGuiWindowFlags flags =
      kFixedWindowFlags | ImGuiWindowFlags_NoTitleBar | ImGuiWindowFlags_MenuBar | ImGuiWindowFlags_NoScrollbar;
  static FileAction action = FileAction::None;
  if (ImGui::Begin("##toolbar", nullptr, flags)) {
    app.panels_drawn.push_back("toolbar");
    draw_menu_bar(app, action);
    draw_playback_buttons(app);
    ImGui::SameLine();
    const float keys_w = ImGui::CalcTextSize("Keys").x + 2 * ImGui::GetStyle().FramePadding.x;
    draw_step_label(app, keys_w);
    ImGui::SameLine(ImGui::GetWindowWidth() - keys_w - 10);
    if (ImGui::Button("Keys")) app.show_help = !app.show_help;
    file_popup(app, action);
  }
  ImGui::End();
  draw_search(app, ImVec2(pos.x + 10, pos.y + size.y + 6));
  if (app.show_help) draw_keys_help(app, pos, size);
}

}  // namespace descent::ui
