// A lesson's Markdown drawn as Markdown (markdown.cpp): paragraphs, bulleted
// and numbered lists with a hanging indent, headings, fenced code, and inside
// a line `code spans`, *emphasis* and **strong** text; lines are broken only
// between words, never inside one or inside a code span (Note [Markdown in
// the Lesson tab]). Parsing needs no ImGui (the tests call it directly).
#pragma once

#include <imgui.h>

#include <string>
#include <vector>

namespace descent::ui {

// A run of a line's text in one style, its marks left out.
struct MdRun {
  enum Style { Plain, Emphasis, Strong, Code };
  std::string text;
  Style style = Plain;
};
// `code`, *emphasis* or _emphasis_, **strong** or __strong__; a mark never
// closed, or one inside a word (snake_case, 2*3), is text.
std::vector<MdRun> parse_inline(const std::string& text);

// A block of a lesson's prose.
struct MdBlock {
  enum Kind { Paragraph, Bullet, Numbered, Heading, Code, Blank };
  Kind kind = Paragraph;
  std::string text;    // the paragraph or item joined into one line; a code block's lines
  std::string marker;  // a numbered item's "3."
  int depth = 0;       // a list item's nesting (its indent, two spaces a level)
};
std::vector<MdBlock> parse_blocks(const std::string& text);

struct MdFonts {
  ImFont* text = nullptr;  // null: the current font
  ImFont* strong = nullptr;
  ImFont* emphasis = nullptr;
  ImFont* code = nullptr;
  ImVec4 code_color{0.75f, 0.85f, 1.0f, 1.0f}, emphasis_color{1.0f, 1.0f, 1.0f, 1.0f},
      heading_color{1.0f, 0.80f, 0.35f, 1.0f};
};
// Draws `text` at the cursor, wrapped at the window's content edge; returns
// each line as drawn (a list item's first line with its marker, "- " or
// "3. "; marks left out), for the state dump.
std::vector<std::string> draw_markdown(const std::string& text, const MdFonts& fonts);

}  // namespace descent::ui
