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
#include "ui/class_answers.h"
#include "ui/fonts.h"
#include "ui/markdown.h"
#include "ui/lesson.h"

namespace descent::ui {

namespace {

const ImVec4 kRight(0.45f, 0.85f, 0.45f, 1.0f);
const ImVec4 kWrong(0.95f, 0.45f, 0.40f, 1.0f);
const ImVec4 kQuiet(0.62f, 0.62f, 0.66f, 1.0f);
const ImVec4 kHeading(1.0f, 0.80f, 0.35f, 1.0f);
const ImVec4 kCode(0.75f, 0.85f, 1.0f, 1.0f);

constexpr float kQuestionShare = 0.6f;  // of the Lesson tab, at most, for the waiting question

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

// A lesson's prose, drawn as Markdown (Note [Markdown in the Lesson tab],
// markdown.cpp) in the faces of the type on screen; the lines drawn are kept
// for the state dump.
std::vector<std::string> g_prose_lines;  // this frame's, in order (draw_lesson moves them to the view)
bool g_presenter = false;                // the type on screen is the presenter's

void draw_prose(const std::string& text) {
  MdFonts f;
  f.text = styled_font(g_presenter, FontStyle::Regular);
  f.strong = styled_font(g_presenter, FontStyle::Bold);
  f.emphasis = styled_font(g_presenter, FontStyle::Oblique);
  f.code = styled_font(g_presenter, FontStyle::Mono);
  f.code_color = kCode;
  f.heading_color = kHeading;
  for (std::string& l : draw_markdown(text, f)) g_prose_lines.push_back(std::move(l));
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

// The class's picks for question k (--answers-from DIR: class_answers.h),
// read again at most once a second (null without --answers-from). The
// students' picks only: the answer stays hidden until it is revealed.
const ClassTally* class_tally(const App& app, int k) {
  const std::string& dir = app.options.answers_from;
  if (dir.empty()) return nullptr;
  const LessonView& v = app.lesson;
  struct Cached {
    std::string key;
    double at = -1;
    ClassTally tally;
  };
  static std::vector<Cached> cache;
  const std::string key = v.name + "/" + std::to_string(v.step) + "/" + std::to_string(k);
  auto it = std::find_if(cache.begin(), cache.end(), [&](const Cached& c) { return c.key == key; });
  if (it == cache.end()) it = cache.insert(cache.end(), Cached{key, -1, {}});
  const double now = ImGui::GetTime();
  if (it->at < 0 || now - it->at >= 1.0) {
    it->tally = tally_answers(dir, v.name, v.step, k, v.predictions[k].choices.size());
    it->at = now;
  }
  return &it->tally;
}

// "The class: 4 answers", and what no choice's bar shows.
void draw_tally_head(App& app, const ClassTally& t) {
  const std::string& name = app.lesson.name;
  const std::string head = "The class: " + std::to_string(t.answers) + (t.answers == 1 ? " answer" : " answers") +
                           (t.found ? "" : " yet (students run: descent lesson " + name + " --answers-to DIR)");
  ImGui::PushStyleColor(ImGuiCol_Text, kHeading);
  text_fitted(app, "tally", head, 2);
  ImGui::PopStyleColor();
  if (t.other > 0) text_fitted(app, "tally", std::to_string(t.other) + " named no choice", 1);
  for (const auto& [text, n] : t.typed) text_fitted(app, "tally", std::to_string(n) + "  " + text, 1);
  if (t.unreadable > 0) text_fitted(app, "tally", std::to_string(t.unreadable) + " empty or unreadable", 1);
}

// Choice c's bar and its count, on the cursor's line (beside its button), then `label`.
void draw_tally_bar(App& app, const ClassTally& t, size_t c, const std::string& label) {
  const float bar_w = ImGui::GetTextLineHeight() * 6, h = ImGui::GetTextLineHeight();
  const int n = t.per_choice[c];
  const ImVec2 at = ImGui::GetCursorScreenPos();
  const float share = t.answers > 0 ? static_cast<float>(n) / static_cast<float>(t.answers) : 0.0f;
  ImDrawList* dl = ImGui::GetWindowDrawList();
  dl->AddRect(at, ImVec2(at.x + bar_w, at.y + h), IM_COL32(160, 160, 170, 120));
  dl->AddRectFilled(at, ImVec2(at.x + bar_w * share, at.y + h), IM_COL32(255, 204, 90, 170));
  ImGui::Dummy(ImVec2(bar_w, h));
  ImGui::SameLine();
  text_fitted(app, "tally", std::to_string(n) + label, 1);
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
  draw_prose(p.ask);
  if (!p.problem.empty()) ImGui::TextColored(kWrong, "This question cannot be judged here: %s", p.problem.c_str());
  const bool waiting = !v.in_flight.empty() || !v.queue.empty();
  if (!p.done()) {
    const ClassTally* tally = class_tally(app, k);
    if (tally) draw_tally_head(app, *tally);
    if (!p.choices.empty()) {
      for (size_t c = 0; c < p.choices.size(); ++c) {
        const std::string label = std::to_string(c + 1) + "   " + plain(p.choices[c]);
        if (ImGui::Button(label.c_str()) && !waiting) lesson_answer(app, k, std::to_string(c + 1));
        if (tally) {  // the class's count beside the choice
          ImGui::SameLine();
          draw_tally_bar(app, *tally, c, "");
        }
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
  if (const ClassTally* tally = class_tally(app, k)) {  // beside the answer, what the class said
    draw_tally_head(app, *tally);
    for (size_t c = 0; c < p.choices.size(); ++c) draw_tally_bar(app, *tally, c, "  " + plain(p.choices[c]));
  }
  if (!p.explain.empty()) draw_prose(p.explain);
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
  draw_prose(e.goal);
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
  g_presenter = app.presenter;
  g_prose_lines.clear();
  // The question waiting for its answer is pinned under the step's prose and
  // code, which scroll above it: on a projector's 720 lines it is in view
  // without scrolling, however long the prose (its height is last frame's,
  // at most kQuestionShare of the tab; a taller one scrolls in its own space).
  const int waiting = v.next_question();
  const float avail = ImGui::GetContentRegionAvail().y;
  const float question_h = waiting < 0        ? 0.0f
                           : v.question_h > 0 ? std::min(v.question_h, avail * kQuestionShare)
                                              : avail * 0.35f;
  ImGui::BeginChild("##lesson_step", ImVec2(0, -question_h));
  if (v.scroll_to == LessonView::kScrollToTop) {
    ImGui::SetScrollY(0);
    v.scroll_to = -1;
  }
  if (v.step == 0) {  // the lesson's introduction opens its first step
    ImGui::TextColored(kQuiet, "What it teaches:");
    draw_prose(v.teaches);
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
  // The questions answered, in the step's flow; the next one under it.
  for (int k = 0; k < static_cast<int>(v.predictions.size()) && k != waiting; ++k) draw_prediction(app, k);
  if (v.exercise && waiting < 0) draw_exercise(app);
  ImGui::EndChild();
  v.prose_lines = std::move(g_prose_lines);
  auto set = [](float* r, ImVec2 a, ImVec2 b) { r[0] = a.x, r[1] = a.y, r[2] = b.x, r[3] = b.y; };
  set(v.question_rect, ImVec2(0, 0), ImVec2(0, 0));
  if (waiting < 0) return;
  ImGui::BeginChild("##lesson_question");
  const float y0 = ImGui::GetCursorPosY();
  const ImVec2 top = ImGui::GetCursorScreenPos();
  draw_prediction(app, waiting);
  v.question_h = ImGui::GetCursorPosY() - y0 + ImGui::GetStyle().ItemSpacing.y;
  // Where it was drawn, within the tab's window (the state dump: in view without scrolling).
  const ImVec2 at = ImGui::GetWindowPos(), size = ImGui::GetWindowSize();
  set(v.question_rect, top, ImVec2(top.x + size.x, top.y + v.question_h));
  set(v.question_clip, at, ImVec2(at.x + size.x, at.y + size.y));
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
