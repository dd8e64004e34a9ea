// A lesson in the app (issue 21): what the Lesson tab shows, and the
// requests that fill it.
//
// Note [Lessons in the app]
// ~~~~~~~~~~~~~~~~~~~~~~~~~
// The lessons are read, run and judged by the Python package
// (descent.lessons), so the terminal and the app can never disagree about
// what a step ran or which answer is right. The app asks through the same
// Python thread that runs the console's code (Note [The Python thread]): a
// request is JSON (descent._app.lesson: catalog, open, answer, reveal, check,
// reset), queued here and submitted when no code is running; the reply comes
// back with the trace of what the request ran (a step's code, a student's
// exercise), which the app shows as it shows any run. The reply never holds a
// prediction's answer before the student has answered (or the teacher has
// revealed it), so nothing on screen gives it away. Opening a step parks the
// token on the span its first `look` selector names, and a revealed answer
// can park it on its evidence: the student is shown where in the trace the
// answer was read. Progress is kept by descent.lessons.progress, in the
// user's data folder (XDG), shared with `descent lesson`.
#pragma once

#include <chrono>
#include <cstdint>
#include <deque>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace descent::trace {
struct Trace;
}

namespace descent::ui {

struct App;
struct Loaded;

// One lesson of the catalog, with the student's progress in it.
struct LessonEntry {
  std::string name, title, teaches, error;  // error: the file does not parse ("" when it does)
  int number = -1;
  int steps = 0, predictions = 0, exercises = 0;
  int seen = 0, right = 0, answered = 0, passed = 0;  // progress
};

struct LessonPrediction {
  std::string ask, kind, problem;  // kind: choice, number or text; problem: the answer cannot be computed
  std::vector<std::string> choices;
  std::string input;  // a typed answer, being typed
  // Once answered (or revealed):
  bool answered = false, revealed = false;
  bool right = false;
  std::string typed, answer_text, explain, evidence;
  uint64_t evidence_span = 0;  // the span the answer was read from (0: none)
  bool done() const { return answered || revealed; }
};

struct LessonExercise {
  std::string goal, start, solution, device;
  std::vector<std::string> hints;
  double limit_s = 0;
  std::string editor;                 // the student's code
  std::vector<std::string> attempts;  // the code of each Check, oldest first (the editor's history)
  int attempt_shown = -1;             // the attempt put back in the editor (-1: none)
  int hints_shown = 0;
  bool solution_shown = false;
  bool checked = false, passed = false;
  std::string reason, output, error;
  double seconds = 0;
};

struct LessonLook {
  std::string selector, problem;
  uint64_t span = 0;  // the span it names in the step's trace (0: it names none)
};

struct LessonView {
  // The catalog (the picker), loaded once and after a reset.
  std::vector<LessonEntry> catalog;
  bool catalog_asked = false;
  std::string progress_file;
  int picked = 0;           // the picker's selected row
  bool ask_forget = false;  // Delete was pressed: ask whether to forget the progress
  bool closed = false;      // back to the picker: a step still opening is not shown

  // The open lesson and step (step < 0: none open; the picker shows).
  std::string name, title, teaches, assumes, intro;
  std::vector<std::string> step_titles;
  int step = -1;
  std::string step_title, prose, teacher, device, code, output, error, raised;
  std::string compare;  // a PyTorch profile of the step's code (```compare): opened in the Compare tab
  bool expected_raise = false;
  std::vector<LessonLook> looks;
  std::vector<LessonPrediction> predictions;
  std::optional<LessonExercise> exercise;
  std::vector<int> seen;  // steps of this lesson the student has opened

  std::shared_ptr<const trace::Trace> step_trace;   // the step's run: its span ids are the looks' and answers'
  std::string problem;                              // the last request's error (a lesson that does not parse, ...)
  std::deque<std::string> queue;                    // requests waiting for the Python thread
  std::string in_flight;                            // the "do" of the request being served ("" when none)
  int first_open_step = -1;                         // the step a request to open is for (shown while it runs)
  std::chrono::steady_clock::time_point submitted;  // when the request in flight went to Python
  double open_ms = -1;            // the last step's opening: request to story shown (run, trace, layout)
  bool focus_editor = false;      // give the exercise editor the keyboard next frame
  bool editor_active = false;     // the editor had the keyboard in the last frame (the state dump)
  int scroll_to = -1;             // bring this question into view next frame (kScrollTo* for the others)
  size_t parked_step = SIZE_MAX;  // where park_for_step left the token (question_waits keeps it there or before)
  static constexpr int kScrollToTop = -2, kScrollToExercise = -3;
  // The waiting question, pinned under the step (panel_lesson.cpp): its
  // height last frame, and where it was drawn and seen (x0, y0, x1, y1).
  float question_h = 0;
  std::vector<std::string> prose_lines;  // the step's prose as drawn, line by line (markdown.h), for the state dump
  float question_rect[4] = {0, 0, 0, 0}, question_clip[4] = {0, 0, 0, 0};

  bool open() const { return step >= 0; }
  // A question is waiting for its answer: what the trace would give away
  // stays hidden until then (the building's floors ahead of the token).
  bool asking() const { return open() && next_question() >= 0; }
  // The first prediction not answered yet (-1: none).
  int next_question() const;
};

// Whether a lesson's question waits on the call on screen: a prediction is
// unanswered and the story is the step's own trace, whichever tab is in
// front. Then the token may not go past the step it was parked on, and
// nothing ahead of it (floors, timeline labels, tooltips) gives the answer
// away.
bool question_waits(const App& app);
// While question_waits: draws, in place of a panel that would give the
// answer away (the Graph and Detail tabs; `what` names what it holds), a
// line saying a question waits, and returns true.
bool draw_question_waits_instead(App& app, const char* what);
// Keeps the token at or before the parked step while question_waits (after
// the keys and playback moved it); says why when it had to.
void hold_at_question(App& app);

// Requests (queued; sent when no code runs).
void lesson_catalog(App& app);
void lesson_open(App& app, const std::string& name, int step);
void lesson_answer(App& app, int k, const std::string& typed);
void lesson_reveal(App& app, int k);
void lesson_check(App& app, const std::string& code);
// Puts an earlier (-1) or later (+1) Check's code back in the editor.
void lesson_attempt(App& app, int delta);
void lesson_reset(App& app);
void lesson_close(App& app);  // back to the picker (nothing is asked of Python)

// Each frame, before poll_run: submits the next request when the Python
// thread is free. True when one was submitted.
bool lesson_pump(App& app);
// A lesson request's reply (Loaded::lesson), taken by poll_run: fills the
// view, and shows the trace when the request ran code.
void lesson_apply(App& app, Loaded l);

// Parks the token on a span of the open step's trace (its step going down),
// showing that trace again first when another replaced it (a Check, the
// console); a span the beginner's story folds parks on the nearest one above.
bool park_on_span(App& app, uint64_t span_id);
// Parks it where the open step points (Note [Lessons in the app]).
void park_for_step(App& app);

// The Lesson tab (panel_lesson.cpp).
void draw_lesson(App& app);
// The lesson's keys (panel_lesson.cpp): Right/Left for the next and previous
// step, 1-9 to answer a question, R to reveal, E to edit the exercise (whose
// editor takes Ctrl+Enter to check and Ctrl+H for a hint), Alt+Up / Alt+Down
// for the code of an earlier / later Check. True when a key was taken.
bool lesson_keys(App& app);

}  // namespace descent::ui
