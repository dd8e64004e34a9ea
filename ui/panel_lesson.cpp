// The Lesson tab: the lesson picker, and a lesson's step beside the building:
// its prose, the code it ran, the questions asked before the reveal, and the
// exercise with Check and Hint (Note [Lessons in the app], lesson.h).
#include <GLFW/glfw3.h>
#include <imgui.h>
#include <imgui_stdlib.h>  // after imgui.h, which it needs

#include <algorithm>
#include <charconv>
#include <string>

#include "ui/app.h"
#include "ui/lesson.h"

namespace descent::ui {

namespace {

const ImVec4 kRight(0.45f, 0.85f, 0.45f, 1.0f);
const ImVec4 kWrong(0.95f, 0.45f, 0.40f, 1.0f);
const ImVec4 kQuiet(0.62f, 0.62f, 0.66f, 1.0f);
const ImVec4 kHeading(1.0f, 0.80f, 0.35f, 1.0f);
const ImVec4 kCode(0.75f, 0.85f, 1.0f, 1.0f);

// [SECTION] Prose ------------------------------------------------------------------

// Markdown's emphasis marks left out: `code` and **bold** read as plain text
// on a projector, where a monospaced run inside a sentence would not fit.
std::string plain(const std::string& line) {
  std::string out;
  for (size_t i = 0; i < line.size(); ++i) {
    if (line[i] == '`') continue;
    if (line.compare(i, 2, "**") == 0) {
      ++i;
      continue;
    }
    out += line[i];
  }
  return out;
}

// A lesson's prose: paragraphs wrapped to the panel, "- " items as bullets,
// fenced blocks as code, line for line.
void draw_prose(const std::string& text) {
  std::string paragraph;
  auto flush = [&] {
    if (!paragraph.empty()) ImGui::TextWrapped("%s", plain(paragraph).c_str());
    paragraph.clear();
  };
  bool in_code = false;
  size_t start = 0;
  while (start <= text.size()) {
    size_t end = text.find('\n', start);
    if (end == std::string::npos) end = text.size();
    const std::string line = text.substr(start, end - start);
    start = end + 1;
    if (line.rfind("```", 0) == 0 || line.rfind("~~~", 0) == 0) {
      flush();
      in_code = !in_code;
      continue;
    }
    if (in_code) {
      ImGui::TextColored(kCode, "  %s", line.c_str());
      continue;
    }
    const size_t first = line.find_first_not_of(' ');
    if (first == std::string::npos) {
      flush();
      ImGui::Spacing();
    } else if (line.compare(first, 2, "- ") == 0 || line.compare(first, 2, "* ") == 0) {
      flush();
      paragraph = line.substr(first + 2);
      ImGui::Bullet();
      ImGui::SameLine();
      flush();
    } else if (line.rfind("### ", 0) == 0) {
      flush();
      ImGui::TextColored(kHeading, "%s", plain(line.substr(4)).c_str());
    } else {
      if (!paragraph.empty()) paragraph += ' ';
      paragraph += line.substr(first);
    }
  }
  flush();
}

// [SECTION] The picker ---------------------------------------------------------------

std::string progress_line(const LessonEntry& e) {
  std::string s = std::to_string(e.seen) + " of " + std::to_string(e.steps) + " steps seen";
  if (e.predictions > 0) {
    s += ", " + std::to_string(e.right) + " of " + std::to_string(e.predictions) + " predictions right";
  }
  if (e.exercises > 0) {
    s += ", " + std::to_string(e.passed) + " of " + std::to_string(e.exercises) + " exercise" +
         (e.exercises == 1 ? "" : "s") + " done";
  }
  return s;
}

void draw_picker(App& app) {
  LessonView& v = app.lesson;
  ImGui::TextWrapped(
      "Lessons: guided walks down the floors. Each step runs its code traced, asks you to predict "
      "what the trace will show, then shows you where the answer is.");
  ImGui::TextColored(kQuiet, "Up/Down to choose, Enter to open; your progress is kept between runs.");
  ImGui::Separator();
  if (v.catalog.empty()) {
    ImGui::TextColored(kQuiet, "%s", v.catalog_asked ? "reading the lessons..." : "no lessons found");
    return;
  }
  for (size_t i = 0; i < v.catalog.size(); ++i) {
    const LessonEntry& e = v.catalog[i];
    ImGui::PushID(static_cast<int>(i));
    const std::string label =
        (e.number >= 0 ? std::to_string(e.number) + "  " : "") + (e.title.empty() ? e.name : e.title);
    const bool picked = v.picked == static_cast<int>(i);
    if (ImGui::Selectable(label.c_str(), picked, ImGuiSelectableFlags_AllowDoubleClick)) {
      v.picked = static_cast<int>(i);
      if (e.error.empty()) lesson_open(app, e.name, 0);
    }
    if (picked) ImGui::SetItemDefaultFocus();
    ImGui::Indent();
    if (!e.error.empty()) {
      ImGui::PushStyleColor(ImGuiCol_Text, kWrong);
      ImGui::TextWrapped("cannot be opened: %s", e.error.c_str());
      ImGui::PopStyleColor();
    } else {
      ImGui::TextColored(e.seen == e.steps && e.steps > 0 ? kRight : kQuiet, "%s", progress_line(e).c_str());
    }
    ImGui::Unindent();
    ImGui::PopID();
  }
  ImGui::Separator();
  if (ImGui::Button("Forget my progress... (Delete)") || v.ask_forget) ImGui::OpenPopup("forget");
  v.ask_forget = false;
  if (ImGui::BeginPopup("forget")) {
    ImGui::Text("Forget the progress of every lesson?");
    ImGui::TextColored(kQuiet, "%s", v.progress_file.c_str());
    if (ImGui::Button("Forget it (Enter)") || ImGui::IsKeyPressed(GLFW_KEY_ENTER, false)) {
      lesson_reset(app);
      ImGui::CloseCurrentPopup();
    }
    ImGui::SameLine();
    if (ImGui::Button("Keep it (Esc)") || ImGui::IsKeyPressed(GLFW_KEY_ESCAPE, false)) ImGui::CloseCurrentPopup();
    ImGui::EndPopup();
  }
}

// [SECTION] A step ---------------------------------------------------------------------

void draw_header(App& app) {
  LessonView& v = app.lesson;
  const int n = static_cast<int>(v.step_titles.size());
  if (ImGui::Button("Lessons")) lesson_close(app);
  ImGui::SameLine();
  const bool busy = !v.in_flight.empty() || !v.queue.empty();  // one request at a time, for the step on screen
  ImGui::BeginDisabled(v.step <= 0 || busy);
  if (ImGui::Button("< Back")) lesson_open(app, v.name, v.step - 1);
  ImGui::EndDisabled();
  ImGui::SameLine();
  ImGui::BeginDisabled(v.step + 1 >= n || busy);
  if (ImGui::Button("Next >")) lesson_open(app, v.name, v.step + 1);
  ImGui::EndDisabled();
  ImGui::SameLine();
  // One dot per step: filled once seen, ringed for the one on screen.
  ImDrawList* dl = ImGui::GetWindowDrawList();
  const float r = ImGui::GetFontSize() * 0.22f;
  ImVec2 p = ImGui::GetCursorScreenPos();
  p.y += ImGui::GetFrameHeight() * 0.5f;
  for (int k = 0; k < n; ++k) {
    const ImVec2 c(p.x + r + k * r * 3.2f, p.y);
    const bool seen = std::find(v.seen.begin(), v.seen.end(), k) != v.seen.end();
    if (seen) dl->AddCircleFilled(c, r, ImGui::GetColorU32(kQuiet));
    dl->AddCircle(c, r + (k == v.step ? 2.0f : 0.0f), ImGui::GetColorU32(k == v.step ? kHeading : kQuiet));
  }
  ImGui::Dummy(ImVec2(n * r * 3.2f + r, ImGui::GetFrameHeight()));
  ImGui::PushStyleColor(ImGuiCol_Text, kHeading);
  ImGui::TextWrapped("%s", v.title.c_str());
  ImGui::PopStyleColor();
  ImGui::TextWrapped("Step %d of %d: %s", v.step + 1, n, v.step_title.c_str());
  ImGui::Separator();
}

void draw_code(App& app) {
  const LessonView& v = app.lesson;
  if (v.code.empty()) return;
  ImGui::Spacing();
  ImGui::TextColored(kQuiet, "This step ran, traced, on %s (the building and the timeline show it):", v.device.c_str());
  ImGui::PushStyleColor(ImGuiCol_Text, kCode);
  draw_prose("```\n" + v.code + "\n```");
  ImGui::PopStyleColor();
  // What the code printed may be an answer (sizes, times): shown once no question waits.
  if (!v.output.empty() && v.asking()) {
    ImGui::TextColored(kQuiet, "(what it printed is shown once the questions are answered)");
  } else if (!v.output.empty()) {
    ImGui::TextWrapped("It printed: %s", v.output.c_str());
  }
  if (!v.error.empty()) {
    const std::string last = v.error.substr(v.error.find_last_of('\n', v.error.size() - 2) + 1);
    ImGui::PushStyleColor(ImGuiCol_Text, v.expected_raise ? kHeading : kWrong);
    ImGui::TextWrapped("%s %s", v.expected_raise ? "It raised, as this step means it to:" : "It raised:", last.c_str());
    ImGui::PopStyleColor();
  }
  for (const LessonLook& look : v.looks) {
    ImGui::PushID(&look);
    if (!look.problem.empty()) {
      ImGui::TextColored(kWrong, "look at %s: %s", look.selector.c_str(), look.problem.c_str());
    } else {
      if (ImGui::SmallButton("show")) park_on_span(app, look.span);
      ImGui::SameLine();
      ImGui::TextWrapped("look at: %s", look.selector.c_str());
    }
    ImGui::PopID();
  }
}

void draw_prediction(App& app, int k) {
  LessonView& v = app.lesson;
  LessonPrediction& p = v.predictions[k];
  ImGui::PushID(k);
  ImGui::Spacing();
  if (v.scroll_to == k) {  // just answered: the answer and its explanation in view
    ImGui::SetScrollHereY(0.1f);
    v.scroll_to = -1;
  }
  ImGui::TextColored(kHeading, "Predict (%d of %zu)", k + 1, v.predictions.size());
  ImGui::TextWrapped("%s", plain(p.ask).c_str());
  if (!p.problem.empty()) ImGui::TextColored(kWrong, "This question cannot be judged here: %s", p.problem.c_str());
  const bool waiting = !v.in_flight.empty() || !v.queue.empty();
  if (!p.done()) {
    if (!p.choices.empty()) {
      for (size_t c = 0; c < p.choices.size(); ++c) {
        const std::string label = std::to_string(c + 1) + "   " + plain(p.choices[c]);
        if (ImGui::Button(label.c_str()) && !waiting) lesson_answer(app, k, std::to_string(c + 1));
      }
      ImGui::PushStyleColor(ImGuiCol_Text, kQuiet);
      ImGui::TextWrapped("Press 1-%zu to answer; R reveals the answer without one (a class's question).",
                         p.choices.size());
      ImGui::PopStyleColor();
    } else {
      ImGui::SetNextItemWidth(ImGui::GetContentRegionAvail().x * 0.5f);
      const bool enter = ImGui::InputTextWithHint("##typed", p.kind == "number" ? "a number" : "your answer", &p.input,
                                                  ImGuiInputTextFlags_EnterReturnsTrue);
      ImGui::SameLine();
      if ((ImGui::Button("Answer") || enter) && !p.input.empty() && !waiting) lesson_answer(app, k, p.input);
      ImGui::PushStyleColor(ImGuiCol_Text, kQuiet);
      ImGui::TextWrapped("Type it and press Enter; R reveals the answer without one.");
      ImGui::PopStyleColor();
    }
    if (ImGui::SmallButton("reveal (R)") && !waiting) lesson_reveal(app, k);
    ImGui::PopID();
    return;
  }
  if (p.answered) {
    std::string yours = p.typed;
    size_t c = 0;  // a choice's number (a letter or the text itself are shown as typed)
    const auto [end, ec] = std::from_chars(yours.data(), yours.data() + yours.size(), c);
    if (ec == std::errc() && end == yours.data() + yours.size() && c >= 1 && c <= p.choices.size()) {
      yours = p.choices[c - 1];
    }
    ImGui::PushStyleColor(ImGuiCol_Text, p.right ? kRight : kWrong);
    ImGui::TextWrapped("%s You said: %s", p.right ? "Right." : "Not this time.", plain(yours).c_str());
    ImGui::PopStyleColor();
  } else {
    ImGui::TextColored(kQuiet, "Revealed without an answer.");
  }
  ImGui::TextWrapped("The answer, read off this run's trace: %s", plain(p.answer_text).c_str());
  if (!p.explain.empty()) ImGui::TextWrapped("%s", plain(p.explain).c_str());
  if (!p.evidence.empty()) {
    ImGui::TextColored(kQuiet, "The evidence:");
    ImGui::PushStyleColor(ImGuiCol_Text, kCode);
    ImGui::TextWrapped("%s", p.evidence.c_str());
    ImGui::PopStyleColor();
    if (p.evidence_span && ImGui::SmallButton("show it in the building")) park_on_span(app, p.evidence_span);
  }
  ImGui::PopID();
}

void draw_exercise(App& app) {
  LessonView& v = app.lesson;
  LessonExercise& e = *v.exercise;
  ImGui::Spacing();
  if (v.scroll_to == LessonView::kScrollToExercise) {
    ImGui::SetScrollHereY(0.1f);
    v.scroll_to = -1;
  }
  ImGui::TextColored(kHeading, "Your turn");
  ImGui::TextWrapped("%s", plain(e.goal).c_str());
  ImGui::PushStyleColor(ImGuiCol_Text, kQuiet);
  ImGui::TextWrapped(
      "E (or a click) to edit the code: it runs on %s, for at most %g s. Ctrl+Enter checks it, "
      "Ctrl+H gives a hint, Ctrl+Shift+S shows a solution, Esc leaves the editor (your code stays).",
      e.device.c_str(), e.limit_s);
  ImGui::PopStyleColor();
  if (v.focus_editor) {
    ImGui::SetKeyboardFocusHere();
    v.focus_editor = false;
  }
  const float lines = static_cast<float>(std::count(e.editor.begin(), e.editor.end(), '\n') + 2);
  // Ctrl+Enter in a multi-line field ends the edit (ImGui 1.86), returning
  // true with this flag. Escape also ends it, but ImGui then puts back the
  // text the edit began with: the student's work is kept instead.
  const std::string before = e.editor;
  const bool ctrl_enter = ImGui::InputTextMultiline(
      "##editor", &e.editor, ImVec2(-1, ImGui::GetTextLineHeight() * std::clamp(lines, 6.0f, 16.0f) + 8),
      ImGuiInputTextFlags_AllowTabInput | ImGuiInputTextFlags_EnterReturnsTrue);
  if (ImGui::IsKeyPressed(GLFW_KEY_ESCAPE, false) && ImGui::IsItemDeactivated()) e.editor = before;
  v.editor_active = ImGui::IsItemActive();
  if (ImGui::GetIO().KeyCtrl && ImGui::IsKeyPressed(GLFW_KEY_H, false) &&
      e.hints_shown < static_cast<int>(e.hints.size())) {
    ++e.hints_shown;
  }
  const bool busy = !v.in_flight.empty() || !v.queue.empty();
  if ((ImGui::Button("Check") || ctrl_enter) && !busy) lesson_check(app, e.editor);
  ImGui::SameLine();
  ImGui::BeginDisabled(e.hints_shown >= static_cast<int>(e.hints.size()));
  if (ImGui::Button("Hint")) ++e.hints_shown;
  ImGui::EndDisabled();
  ImGui::SameLine();
  if (ImGui::Button(e.solution_shown ? "Hide the solution" : "Show a solution") ||
      (ImGui::GetIO().KeyCtrl && ImGui::GetIO().KeyShift && ImGui::IsKeyPressed(GLFW_KEY_S, false))) {
    e.solution_shown = !e.solution_shown;
  }
  ImGui::SameLine();
  if (ImGui::Button("Start over")) e.editor = e.start;
  if (!e.attempts.empty()) {  // the editor's history: the code of each Check
    const int n = static_cast<int>(e.attempts.size());
    const int at = e.attempt_shown < 0 ? n : e.attempt_shown;
    ImGui::BeginDisabled(at <= 0);
    if (ImGui::SmallButton("< earlier")) lesson_attempt(app, -1);
    ImGui::EndDisabled();
    ImGui::SameLine();
    ImGui::BeginDisabled(at >= n - 1);
    if (ImGui::SmallButton("later >")) lesson_attempt(app, +1);
    ImGui::EndDisabled();
    ImGui::SameLine();
    ImGui::TextColored(kQuiet, "%s",
                       e.attempt_shown < 0
                           ? (std::to_string(n) + " checked so far (Alt+Up for the code of one)").c_str()
                           : ("check " + std::to_string(at + 1) + " of " + std::to_string(n)).c_str());
  }
  if (busy && v.in_flight == "check") ImGui::TextColored(kQuiet, "checking...");
  if (e.checked) {
    ImGui::PushStyleColor(ImGuiCol_Text, e.passed ? kRight : kWrong);
    ImGui::TextWrapped("%s %s", e.passed ? "Passed:" : "Not yet:", e.reason.c_str());
    ImGui::PopStyleColor();
    if (!e.output.empty()) ImGui::TextWrapped("It printed: %s", e.output.c_str());
  }
  for (int h = 0; h < e.hints_shown && h < static_cast<int>(e.hints.size()); ++h) {
    ImGui::TextWrapped("Hint %d: %s", h + 1, plain(e.hints[h]).c_str());
  }
  if (e.solution_shown) {
    ImGui::TextColored(kQuiet, "A solution (yours may differ and still pass):");
    ImGui::PushStyleColor(ImGuiCol_Text, kCode);
    draw_prose("```\n" + e.solution + "\n```");
    ImGui::PopStyleColor();
  }
}

}  // namespace

void draw_lesson(App& app) {
  LessonView& v = app.lesson;
  if (!v.catalog_asked) lesson_catalog(app);
  app.panels_drawn.push_back("lesson");
  if (!v.in_flight.empty() || !v.queue.empty()) {
    const bool opening = v.in_flight == "open";
    ImGui::TextColored(
        kQuiet, "%s",
        opening ? ("running step " + std::to_string(v.first_open_step + 1) + "...").c_str() : "working...");
  }
  if (!v.problem.empty()) {
    ImGui::PushStyleColor(ImGuiCol_Text, kWrong);
    ImGui::TextWrapped("%s", v.problem.c_str());
    ImGui::PopStyleColor();
  }
  if (!v.open()) {
    draw_picker(app);
    return;
  }
  draw_header(app);
  ImGui::BeginChild("##lesson_step");
  if (v.scroll_to == LessonView::kScrollToTop) {
    ImGui::SetScrollY(0);
    v.scroll_to = -1;
  }
  if (v.step == 0) {  // the lesson's introduction opens its first step
    ImGui::TextColored(kQuiet, "What it teaches:");
    ImGui::TextWrapped("%s", plain(v.teaches).c_str());
    if (!v.assumes.empty()) {
      ImGui::PushStyleColor(ImGuiCol_Text, kQuiet);
      ImGui::TextWrapped("It assumes: %s", plain(v.assumes).c_str());
      ImGui::PopStyleColor();
    }
    ImGui::Spacing();
    draw_prose(v.intro);
    ImGui::Spacing();
  }
  draw_prose(v.prose);
  draw_code(app);
  // The questions one at a time: those answered, then the next.
  for (int k = 0; k < static_cast<int>(v.predictions.size()); ++k) {
    draw_prediction(app, k);
    if (!v.predictions[k].done()) break;
  }
  if (v.exercise && v.next_question() < 0) draw_exercise(app);
  ImGui::EndChild();
}

bool lesson_keys(App& app) {
  LessonView& v = app.lesson;
  if (app.right_tab != RightTab::Lesson) return false;
  const ImGuiIO& io = ImGui::GetIO();
  if (!v.open()) {
    const int n = static_cast<int>(v.catalog.size());
    if (n == 0) return false;
    if (ImGui::IsKeyPressed(GLFW_KEY_DELETE, false)) {  // Forget my progress (asked first)
      v.ask_forget = true;
      return true;
    }
    if (ImGui::IsKeyPressed(GLFW_KEY_DOWN, true))
      v.picked = std::min(v.picked + 1, n - 1);
    else if (ImGui::IsKeyPressed(GLFW_KEY_UP, true))
      v.picked = std::max(v.picked - 1, 0);
    else if (ImGui::IsKeyPressed(GLFW_KEY_ENTER, false) || ImGui::IsKeyPressed(GLFW_KEY_KP_ENTER, false)) {
      if (v.catalog[v.picked].error.empty()) lesson_open(app, v.catalog[v.picked].name, 0);
    } else {
      return false;
    }
    return true;
  }
  const int n = static_cast<int>(v.step_titles.size());
  if (!v.in_flight.empty() || !v.queue.empty()) {  // one request at a time: the lesson's keys wait, and do nothing else
    for (int k = GLFW_KEY_1; k <= GLFW_KEY_9; ++k) {
      if (ImGui::IsKeyPressed(k, false)) return true;
    }
    return ImGui::IsKeyPressed(GLFW_KEY_RIGHT, false) || ImGui::IsKeyPressed(GLFW_KEY_LEFT, false) ||
           ImGui::IsKeyPressed(GLFW_KEY_R, false);
  }
  if (ImGui::IsKeyPressed(GLFW_KEY_RIGHT, false) && v.step + 1 < n) {
    lesson_open(app, v.name, v.step + 1);
    return true;
  }
  if (ImGui::IsKeyPressed(GLFW_KEY_LEFT, false) && v.step > 0) {
    lesson_open(app, v.name, v.step - 1);
    return true;
  }
  const int q = v.next_question();
  if (q < 0 && v.exercise && ImGui::IsKeyPressed(GLFW_KEY_E, false)) {
    v.focus_editor = true;
    return true;
  }
  if (q < 0 && v.exercise && io.KeyAlt &&
      (ImGui::IsKeyPressed(GLFW_KEY_UP, false) || ImGui::IsKeyPressed(GLFW_KEY_DOWN, false))) {
    lesson_attempt(app, ImGui::IsKeyPressed(GLFW_KEY_UP, false) ? -1 : +1);
    return true;
  }
  if (q >= 0 && !io.KeyCtrl) {
    const LessonPrediction& p = v.predictions[q];
    for (size_t c = 0; c < 9 && !p.choices.empty(); ++c) {  // a question's digits are its, even past its choices
      if (ImGui::IsKeyPressed(GLFW_KEY_1 + static_cast<int>(c), false)) {
        if (c < p.choices.size()) lesson_answer(app, q, std::to_string(c + 1));
        return true;
      }
    }
    if (ImGui::IsKeyPressed(GLFW_KEY_R, false)) {
      lesson_reveal(app, q);
      return true;
    }
  }
  return false;
}

}  // namespace descent::ui
