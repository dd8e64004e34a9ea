// Texts fitted to the space they are given, never cut mid-word (issue 23:
// readable on a projector): fit_text breaks a text into lines at spaces
// and shortens it at a whole word with "..."; draw_fitted and text_fitted
// draw it (into a box of a panel's own, or as an ImGui item) and record it
// for the state dump, whose test asserts that no text any panel drew was
// clipped.
//
// [SECTION] Fitting a text to its lines
// [SECTION] Drawing a fitted text
#include <algorithm>

#include "ui/app.h"

namespace descent::ui {

namespace {

// [SECTION] Fitting a text to its lines -------------------------------------------------------

float text_w(const std::string& t) { return ImGui::CalcTextSize(t.c_str()).x; }

std::string trimmed(std::string t) {
  while (!t.empty() && t.back() == ' ') t.pop_back();
  return t;
}

// The pieces a line may break after: each space, and inside a word wider
// than the line, each of ",|=/(:_".
std::vector<std::string> break_pieces(const std::string& text, float width) {
  std::vector<std::string> pieces;
  std::string cur;
  for (char c : text) {
    cur += c;
    if (c == ' ') {
      pieces.push_back(cur);
      cur.clear();
    }
  }
  if (!cur.empty()) pieces.push_back(cur);
  std::vector<std::string> split;
  for (const std::string& p : pieces) {
    if (text_w(trimmed(p)) <= width) {
      split.push_back(p);
      continue;
    }
    std::string part;
    for (char c : p) {
      part += c;
      if (std::string(",|=/(:_").find(c) != std::string::npos) {
        split.push_back(part);
        part.clear();
      }
    }
    if (!part.empty()) split.push_back(part);
  }
  return split;
}

// The last line kept of a text with more lines than it has: as many whole
// words as fit before " ...".
void shorten_last_line(std::vector<std::string>& last, float width) {
  auto joined = [&] {
    std::string t;
    for (const std::string& p : last) t += p;
    return trimmed(t);
  };
  while (last.size() > 1 && text_w(joined() + " ...") > width) last.pop_back();
  if (text_w(joined() + " ...") > width) last.clear();                    // not even one word: the dots alone
  while (!last.empty() && trimmed(last.back()).empty()) last.pop_back();  // "a  b": the second space
  if (!last.empty()) last.back() = trimmed(last.back()) + " ";
  last.push_back("...");
}

}  // namespace

// A text in at most `max_lines` lines of at most `width` pixels: lines break
// after a space, or inside a word too wide for a line after one of ",|=/(:_";
// when the text needs more lines, the last one ends at a whole word with
// "..." (the building shows the full text on hover). Never cut mid-word: a
// single word wider than the line stays whole, and the TextFit says clipped.
TextFit fit_text(const std::string& text, float width, int max_lines) {
  TextFit fit;
  fit.text = text;
  fit.given = width;
  std::vector<std::vector<std::string>> lines;
  std::string line;
  for (const std::string& p : break_pieces(text, width)) {
    if (!lines.empty() && text_w(trimmed(line + p)) <= width) {
      lines.back().push_back(p);
      line += p;
    } else {
      lines.push_back({p});
      line = p;
    }
  }
  if (static_cast<int>(lines.size()) > max_lines) {
    lines.resize(static_cast<size_t>(std::max(max_lines, 1)));
    fit.shortened = true;
    shorten_last_line(lines.back(), width);
  }
  for (const std::vector<std::string>& l : lines) {
    std::string t;
    for (const std::string& p : l) t += p;
    t = trimmed(t);
    fit.width = std::max(fit.width, text_w(t));
    fit.shown += (fit.shown.empty() ? "" : "\n") + t;
  }
  return fit;
}

// The number of lines a fitted text takes.
int lines_of(const TextFit& fit) {
  if (fit.shown.empty()) return 0;
  return static_cast<int>(std::count(fit.shown.begin(), fit.shown.end(), '\n')) + 1;
}

// [SECTION] Drawing a fitted text -------------------------------------------------------------

void record_text(App& app, const char* panel, const TextFit& fit) {
  if (app.texts_drawn.size() < App::kTextsRecorded) app.texts_drawn.push_back({panel, fit});
}

TextFit draw_fitted(App& app, const char* panel, ImDrawList* dl, ImVec2 at, float width, ImU32 col,
                    const std::string& text, int max_lines) {
  TextFit fit = fit_text(text, std::max(0.0f, width), max_lines);
  const float line_h = ImGui::GetTextLineHeight();
  size_t start = 0;
  for (float y = at.y; start < fit.shown.size(); y += line_h) {
    const size_t end = std::min(fit.shown.find('\n', start), fit.shown.size());
    dl->AddText(ImVec2(at.x, y), col, fit.shown.c_str() + start, fit.shown.c_str() + end);
    start = end + 1;
  }
  record_text(app, panel, fit);
  return fit;
}

void text_fitted(App& app, const char* panel, const std::string& text, int max_lines) {
  const TextFit fit = fit_text(text, ImGui::GetContentRegionAvail().x, max_lines);
  ImGui::TextUnformatted(fit.shown.c_str());
  if (fit.shortened && ImGui::IsItemHovered()) ImGui::SetTooltip("%s", text.c_str());
  record_text(app, panel, fit);
}

}  // namespace descent::ui
