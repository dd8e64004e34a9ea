// A lesson in the app: the requests to descent._app.lesson and what their
// replies fill in (Note [Lessons in the app], lesson.h). The Lesson tab that
// shows it is panel_lesson.cpp.
#include "ui/lesson.h"

#include <algorithm>
#include <cstdio>

#include "tracer/json.h"
#include "tracer/trace.h"
#include "ui/app.h"
#include "ui/python_bridge.h"

namespace descent::ui {

namespace {

// [SECTION] Requests ------------------------------------------------------------------

// `text` as a JSON string, quotes included (the trace's writer: bytes that are
// not UTF-8 become U+FFFD, which Python's json reads).
std::string quoted(const std::string& text) {
  std::string out;
  trace::append_json_string(out, text);
  return out;
}

void ask(App& app, std::string request) { app.lesson.queue.push_back(std::move(request)); }

// [SECTION] Reading a reply ------------------------------------------------------------

using json::Value;

std::string str(const Value* v) { return v && v->is_string() ? std::string(v->as_string()) : std::string(); }
std::string str(const Value& o, const char* key) { return str(o.find(key)); }
int64_t num(const Value& o, const char* key, int64_t none = 0) {
  const Value* v = o.find(key);
  return v && v->is_number() ? static_cast<int64_t>(v->as_double()) : none;
}
bool flag(const Value& o, const char* key) {
  const Value* v = o.find(key);
  return v && v->type() == json::Type::Bool && v->as_bool();
}
std::vector<std::string> strings(const Value* v) {
  std::vector<std::string> out;
  if (v && v->is_array()) {
    for (size_t i = 0; i < v->size(); ++i) out.push_back(str(&(*v)[i]));
  }
  return out;
}
int count_members(const Value* v) { return v && v->is_object() ? static_cast<int>(v->size()) : 0; }
int count_true(const Value* v) {
  int n = 0;
  if (v && v->is_object()) {
    for (size_t i = 0; i < v->size(); ++i) n += v->value(i).type() == json::Type::Bool && v->value(i).as_bool();
  }
  return n;
}

// progress.of(lesson): {"seen": [steps], "predictions": {"s.k": right}, "exercises": {"s": passed}}
void read_progress(const Value& p, std::vector<int>* seen, LessonEntry* entry) {
  const Value* s = p.find("seen");
  if (seen) seen->clear();
  if (s && s->is_array()) {
    for (size_t i = 0; i < s->size(); ++i) {
      if ((*s)[i].is_number() && seen) seen->push_back(static_cast<int>((*s)[i].as_double()));
    }
    if (entry) entry->seen = static_cast<int>(s->size());
  }
  if (entry) {
    entry->answered = count_members(p.find("predictions"));
    entry->right = count_true(p.find("predictions"));
    entry->passed = count_true(p.find("exercises"));
  }
}

void apply_catalog(LessonView& v, const Value& r) {
  v.catalog.clear();
  v.progress_file = str(r, "progress_file");
  const Value* list = r.find("lessons");
  for (size_t i = 0; list && list->is_array() && i < list->size(); ++i) {
    const Value& e = (*list)[i];
    LessonEntry entry;
    entry.name = str(e, "name");
    entry.title = str(e, "title");
    entry.teaches = str(e, "teaches");
    entry.error = str(e, "error");
    entry.number = static_cast<int>(num(e, "number", -1));
    entry.steps = static_cast<int>(num(e, "steps"));
    entry.predictions = static_cast<int>(num(e, "predictions"));
    entry.exercises = static_cast<int>(num(e, "exercises"));
    if (const Value* p = e.find("progress"); p && p->is_object()) read_progress(*p, nullptr, &entry);
    v.catalog.push_back(std::move(entry));
  }
  if (v.picked >= static_cast<int>(v.catalog.size())) v.picked = 0;
}

void apply_step(App& app, const Value& r) {
  LessonView& v = app.lesson;
  if (const Value* l = r.find("lesson"); l && l->is_object()) {
    v.name = str(*l, "name");
    v.title = str(*l, "title");
    v.teaches = str(*l, "teaches");
    v.assumes = str(*l, "assumes");
    v.intro = str(*l, "intro");
    v.step_titles = strings(l->find("steps"));
  }
  v.step = static_cast<int>(num(r, "step"));
  v.step_title = str(r, "title");
  v.prose = str(r, "prose");
  v.teacher = str(r, "teacher");
  v.compare = str(r, "compare");
  // PyTorch's own profile of the same code, beside descent's in the Compare tab (3).
  if (!v.compare.empty()) open_compare_file(app, v.compare);
  v.device = str(r, "device");
  v.code = str(r, "code");
  v.output = str(r, "output");
  v.error = str(r, "error");
  v.raised = str(r, "raised");
  v.expected_raise = flag(r, "expected_raise");
  v.looks.clear();
  if (const Value* looks = r.find("looks"); looks && looks->is_array()) {
    for (size_t i = 0; i < looks->size(); ++i) {
      const Value& x = (*looks)[i];
      v.looks.push_back({str(x, "selector"), str(x, "problem"), static_cast<uint64_t>(num(x, "span_id"))});
    }
  }
  v.predictions.clear();
  if (const Value* ps = r.find("predictions"); ps && ps->is_array()) {
    for (size_t i = 0; i < ps->size(); ++i) {
      const Value& x = (*ps)[i];
      LessonPrediction p;
      p.ask = str(x, "ask");
      p.kind = str(x, "kind");
      p.problem = str(x, "problem");
      p.choices = strings(x.find("choices"));
      v.predictions.push_back(std::move(p));
    }
  }
  v.exercise.reset();
  if (const Value* ex = r.find("exercise"); ex && ex->is_object()) {
    LessonExercise e;
    e.goal = str(*ex, "goal");
    e.start = str(*ex, "start");
    e.solution = str(*ex, "solution");
    e.device = str(*ex, "device");
    e.hints = strings(ex->find("hints"));
    if (const Value* l = ex->find("limit_s"); l && l->is_number()) e.limit_s = l->as_double();
    e.editor = e.start;
    v.exercise = std::move(e);
  }
  // The teacher's notes go to the terminal the app was started from, never
  // to the window a class sees.
  if (!v.teacher.empty()) {
    std::printf("\n== %s, step %d: %s (teacher's notes)\n%s\n", v.title.c_str(), v.step + 1, v.step_title.c_str(),
                v.teacher.c_str());
    std::fflush(stdout);
  }
}

void apply_answer(LessonView& v, const Value& r) {
  const int k = static_cast<int>(num(r, "k", -1));
  if (k < 0 || k >= static_cast<int>(v.predictions.size())) return;
  LessonPrediction& p = v.predictions[k];
  const bool revealed = flag(r, "revealed");
  if (revealed) {
    p.revealed = true;
  } else {
    p.answered = true;
    p.right = flag(r, "right");
    p.typed = str(r, "typed");
  }
  p.answer_text = str(r, "answer_text");
  p.explain = str(r, "explain");
  p.evidence = str(r, "evidence");
  p.evidence_span = static_cast<uint64_t>(num(r, "evidence_span_id"));
  if (p.problem.empty()) p.problem = str(r, "problem");
}

void apply_check(LessonView& v, const Value& r) {
  if (!v.exercise) return;
  LessonExercise& e = *v.exercise;
  e.checked = true;
  e.passed = flag(r, "passed");
  e.reason = str(r, "reason");
  e.output = str(r, "output");
  e.error = str(r, "error");
  if (const Value* s = r.find("seconds"); s && s->is_number()) e.seconds = s->as_double();
}

}  // namespace

int LessonView::next_question() const {
  for (size_t k = 0; k < predictions.size(); ++k) {
    if (!predictions[k].done()) return static_cast<int>(k);
  }
  return -1;
}

// [SECTION] Requests ------------------------------------------------------------------

void lesson_catalog(App& app) {
  app.lesson.catalog_asked = true;
  ask(app, R"({"do": "catalog"})");
}

void lesson_open(App& app, const std::string& name, int step) {
  app.lesson.first_open_step = step;
  app.lesson.closed = false;
  ask(app, "{\"do\": \"open\", \"name\": " + quoted(name) + ", \"step\": " + std::to_string(step) + "}");
}

// The step a request is about: Python refuses it when another step is open
// there by then (a Next clicked before the answer went).
std::string for_step(const LessonView& v) {
  return ", \"name\": " + quoted(v.name) + ", \"step\": " + std::to_string(v.step);
}

void lesson_answer(App& app, int k, const std::string& typed) {
  ask(app, "{\"do\": \"answer\", \"k\": " + std::to_string(k) + ", \"typed\": " + quoted(typed) + for_step(app.lesson) +
               "}");
}

void lesson_reveal(App& app, int k) {
  ask(app, "{\"do\": \"reveal\", \"k\": " + std::to_string(k) + for_step(app.lesson) + "}");
}

void lesson_check(App& app, const std::string& code) {
  if (LessonView& v = app.lesson; v.exercise) {  // the editor's history: each Check's code, kept
    std::vector<std::string>& a = v.exercise->attempts;
    if (a.empty() || a.back() != code) a.push_back(code);
    v.exercise->attempt_shown = -1;
  }
  ask(app, "{\"do\": \"check\", \"code\": " + quoted(code) + for_step(app.lesson) + "}");
}

void lesson_attempt(App& app, int delta) {
  if (!app.lesson.exercise) return;
  LessonExercise& e = *app.lesson.exercise;
  const int n = static_cast<int>(e.attempts.size());
  if (n == 0) return;
  // From the editor: the last Check is "here" when the editor still holds it.
  const int from = e.attempt_shown >= 0 ? e.attempt_shown : e.editor == e.attempts.back() ? n - 1 : n;
  const int to = std::clamp(from + delta, 0, n - 1);
  e.attempt_shown = to;
  e.editor = e.attempts[to];
}

void lesson_reset(App& app) {
  ask(app, R"({"do": "reset"})");
  if (app.lesson.open()) lesson_open(app, app.lesson.name, app.lesson.step);
}

void lesson_close(App& app) {
  app.lesson.step = -1;
  app.lesson.closed = true;
  lesson_catalog(app);  // the picker shows the progress made
}

bool lesson_pump(App& app) {
  LessonView& v = app.lesson;
  if (app.running.active || v.queue.empty()) return false;
  const std::string request = v.queue.front();
  if (!python_submit_lesson(request)) return false;
  v.queue.pop_front();
  v.submitted = std::chrono::steady_clock::now();
  const size_t at = request.find("\"do\": \"");
  v.in_flight = at == std::string::npos ? "?" : request.substr(at + 7, request.find('"', at + 7) - (at + 7));
  app.running = Running{};
  app.running.active = true;
  app.running.lesson = true;
  app.running.code = v.in_flight == "check" && v.exercise ? v.exercise->editor : v.code;
  return true;
}

void lesson_apply(App& app, Loaded l) {
  LessonView& v = app.lesson;
  const std::string did = v.in_flight;
  v.in_flight.clear();
  json::Document doc;
  try {
    doc = json::parse(l.lesson, "the lesson reply");
  } catch (const trace::TraceFormatError& e) {
    v.problem = l.error.empty() ? std::string("the lesson's reply could not be read: ") + e.what() : l.error;
    return;
  }
  const Value& r = doc.root();
  if (!r.is_object()) {
    v.problem = l.error.empty() ? "the lesson's reply is not an object" : l.error;
    return;
  }
  const std::string kind = str(r, "kind");
  if (kind.empty()) {  // descent._app.lesson itself failed (a stop while it ran, Python not started)
    v.problem = l.error.empty() ? "the lesson request failed" : l.error;
    return;
  }
  if (kind != "catalog") v.problem.clear();  // (the picker, listed after a failed open, keeps saying why)
  if (kind == "error") {
    v.problem = str(r, "error");
    if (did == "open" && !v.open()) lesson_catalog(app);
    return;
  }
  if (kind == "catalog") apply_catalog(v, r);
  if (kind == "step" && v.closed) return;  // closed while it opened
  if (kind == "step") apply_step(app, r);
  if (kind == "answer") apply_answer(v, r);
  if (kind == "check") apply_check(v, r);
  if (const Value* p = r.find("progress"); p && p->is_object() && v.open()) {
    read_progress(*p, &v.seen, nullptr);
    for (LessonEntry& e : v.catalog) {  // the picker's line for this lesson, kept current
      if (e.name == v.name) read_progress(*p, nullptr, &e);
    }
  }
  // On a projector the question is what the class looks at: presenter mode
  // opens a step on its first waiting question, not on the prose above it.
  if (kind == "step") v.scroll_to = app.presenter && v.asking() ? v.next_question() : LessonView::kScrollToTop;
  if (kind == "answer") v.scroll_to = static_cast<int>(num(r, "k", -1));
  if (kind == "check") v.scroll_to = LessonView::kScrollToExercise;
  // A step's code, or the student's, ran: show its trace; the step parks
  // the token where its first selector points.
  if ((kind == "step" || kind == "check") && !l.trace->spans.empty()) {
    l.label = kind == "step" ? v.code : (v.exercise ? v.exercise->editor : "");
    if (kind == "step") v.step_trace = l.trace;
    show_loaded(app, std::move(l));
    if (kind == "step") park_for_step(app);
  }
  if (kind == "step") {
    v.open_ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - v.submitted).count();
  }
  // The last answer is shown with its evidence: the token goes to the span
  // it was read from. While another question waits, the token stays where
  // the floors ahead are hidden (the evidence's span could answer it); the
  // answer's "show it in the building" parks it there all the same.
  if (kind == "answer" && !v.asking()) {
    const int k = static_cast<int>(num(r, "k", -1));
    if (k >= 0 && k < static_cast<int>(v.predictions.size()) && v.predictions[k].evidence_span) {
      park_on_span(app, v.predictions[k].evidence_span);
    } else {
      park_for_step(app);
    }
  }
  app.right_tab = RightTab::Lesson;
}

// Whichever tab is in front: a student who leaves the Lesson tab for the
// Graph or the Detail tab while a question waits must not find its answer
// there (issue 43), so the wait holds on every tab, and those tabs say that
// a question waits instead of what they would show.
bool question_waits(const App& app) {
  return app.lesson.asking() && app.lesson.step_trace && app.loaded.trace == app.lesson.step_trace && app.has_steps();
}

bool draw_question_waits_instead(App& app, const char* what) {
  if (!question_waits(app)) return false;
  ImGui::TextWrapped(
      "A question of the lesson waits for its answer: %s would give it away, so it shows once the "
      "question is answered (or revealed with R) in the Lesson tab.",
      what);
  if (ImGui::Button("Back to the question")) app.right_tab = RightTab::Lesson;
  return true;
}

void hold_at_question(App& app) {
  if (!question_waits(app) || app.lesson.parked_step == SIZE_MAX || app.step() <= app.lesson.parked_step) return;
  app.play.playing = false;
  app.play.scrub(app.story, app.lesson.parked_step);
  app.jump_said = "answer the question first";
  app.jump_said_at = app.step();
}

// Where a step opens: on the span its first selector names; while a
// question waits, one floor above it (its parent, going down), so the floor
// that decides is still ahead of the token and its decision still hidden.
void park_for_step(App& app) {
  app.lesson.parked_step = SIZE_MAX;
  if (!app.lesson.step_trace) return;
  const auto& spans = app.lesson.step_trace->spans;
  for (const LessonLook& look : app.lesson.looks) {
    if (!look.span) continue;
    uint64_t target = look.span;
    if (app.lesson.asking()) {
      for (const trace::Span& s : spans) {
        if (s.id == look.span && s.parent) target = s.parent;
      }
    }
    if (park_on_span(app, target)) {
      app.lesson.parked_step = app.step();
      return;
    }
  }
}

bool park_on_span(App& app, uint64_t span_id) {
  const LessonView& v = app.lesson;
  if (!v.step_trace || span_id == 0) return false;
  if (app.loaded.trace != v.step_trace) {  // ids restart in every recording: the step's own trace first
    Loaded l;
    l.trace = v.step_trace;
    l.label = v.code;
    show_loaded(app, std::move(l));
  }
  const auto& spans = app.trace().spans;
  for (size_t i = 0; i < spans.size(); ++i) {
    if (spans[i].id != span_id) continue;
    size_t at = i;  // folded in the beginner's story: the nearest span above that is told
    while (at != SIZE_MAX && at < app.story.down_step.size() && app.story.down_step[at] == SIZE_MAX) {
      at = app.story.parent_index[at];
    }
    if (at == SIZE_MAX || at >= app.story.down_step.size()) return false;
    app.play.playing = false;
    app.play.scrub(app.story, app.story.down_step[at]);
    app.timeline_follow = true;
    return true;
  }
  return false;
}

}  // namespace descent::ui
