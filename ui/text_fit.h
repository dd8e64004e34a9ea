// Texts fitted to their space, broken and shortened only at a word
// (text_fit.cpp), and recorded for the state dump.
#pragma once

#include <imgui.h>

#include <string>

namespace descent::ui {

struct App;

// A text and the width it was given on screen, for the state dump: issue 23,
// readable on a projector (a tab's label, a floor's decision line). `shown`
// is what was drawn (shortened at a word, with "...", where the space is
// short); clipped: something drawn is wider than the space it was given.
struct TextFit {
  std::string text, shown;
  float width = 0, given = 0;  // pixels: the widest line drawn, and the space for it
  bool shortened = false;      // `shown` leaves words out (the full text is a hover away)
  bool clipped() const { return width > given + 0.5f; }
};

// A text in at most `max_lines` lines of `width` pixels, broken at spaces;
// past them the last line ends with " ..." after a whole word: never cut
// mid-word (text_fit.cpp). The panels show `shown` and the full text on
// hover when `shortened`.
TextFit fit_text(const std::string& text, float width, int max_lines);
int lines_of(const TextFit& fit);

// A text a panel drew, as fitted, for the state dump (App::texts_drawn).
struct DrawnText {
  const char* panel = "";  // "graph", "streams", "memory", "timeline", ...
  TextFit fit;
};

// text_fit.cpp: a text fitted to its space (fit_text), drawn, and recorded in
// app.texts_drawn under `panel`. draw_fitted draws into a box of the panel's
// own from `at`, `width` pixels wide; text_fitted is an ImGui text item in the
// space left on its line (a table's cell), whole on hover when shortened.
TextFit draw_fitted(App& app, const char* panel, ImDrawList* dl, ImVec2 at, float width, ImU32 col,
                    const std::string& text, int max_lines = 1);
void text_fitted(App& app, const char* panel, const std::string& text, int max_lines = 1);
void record_text(App& app, const char* panel, const TextFit& fit);

}  // namespace descent::ui
