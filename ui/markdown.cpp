// Markdown drawn as Markdown in the Lesson tab.
//
// Note [Markdown in the Lesson tab]
// ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
// A lesson is Markdown (lessons/README.md), and a student reads it on a
// projector: "1." items that read as a list, `aten::add` in the code's face,
// *a new word* set apart. ImGui 1.86 wraps one text of one font, so a line
// of mixed styles is laid out here a word at a time: a paragraph becomes
// runs of one style each (parse_inline), the runs become words (a break is
// allowed only at a space outside a code span: "`x.grad`," stays together
// with its comma, and a code span is one word however many spaces it holds,
// unless it is wider than a whole line), and each word goes on the line if
// it fits, else starts the next. A list item's lines after its first start
// under its text, not its marker (a hanging indent). What was drawn, line by
// line, is kept for the state dump, whose test checks that every word of the
// source is on one line, whole.
#include "ui/markdown.h"

#include <cctype>
#include <cfloat>

namespace descent::ui {

namespace {

bool word_char(char c) { return std::isalnum(static_cast<unsigned char>(c)) != 0; }

// Where the closing `mark` of an emphasis opened at `from` is: not after a
// space, not inside a word; npos when none closes it.
size_t closing(const std::string& t, size_t from, const std::string& mark) {
  for (size_t k = t.find(mark, from); k != std::string::npos; k = t.find(mark, k + 1)) {
    if (k == from || t[k - 1] == ' ') continue;
    const size_t after = k + mark.size();
    if (after < t.size() && word_char(t[after])) continue;
    return k;
  }
  return std::string::npos;
}

}  // namespace

std::vector<MdRun> parse_inline(const std::string& t) {
  std::vector<MdRun> runs;
  auto add = [&](const std::string& s, MdRun::Style st) {
    if (s.empty()) return;
    if (!runs.empty() && runs.back().style == st && st != MdRun::Code) {
      runs.back().text += s;
    } else {
      runs.push_back({s, st});
    }
  };
  size_t i = 0;
  while (i < t.size()) {
    const char c = t[i];
    if (c == '`') {
      const size_t end = t.find('`', i + 1);
      if (end != std::string::npos && end > i + 1) {
        add(t.substr(i + 1, end - i - 1), MdRun::Code);
        i = end + 1;
        continue;
      }
    }
    if (c == '*' || c == '_') {
      const bool opens = (i == 0 || !word_char(t[i - 1])) && i + 1 < t.size();
      const std::string two(2, c), one(1, c);
      if (opens && t.compare(i, 2, two) == 0 && i + 2 < t.size() && t[i + 2] != ' ') {
        const size_t end = closing(t, i + 2, two);
        if (end != std::string::npos) {
          for (const MdRun& r : parse_inline(t.substr(i + 2, end - i - 2)))
            add(r.text, r.style == MdRun::Code ? MdRun::Code : MdRun::Strong);
          i = end + 2;
          continue;
        }
      } else if (opens && t[i + 1] != ' ' && t[i + 1] != c) {
        const size_t end = closing(t, i + 1, one);
        if (end != std::string::npos) {
          for (const MdRun& r : parse_inline(t.substr(i + 1, end - i - 1)))
            add(r.text, r.style == MdRun::Code ? MdRun::Code : MdRun::Emphasis);
          i = end + 1;
          continue;
        }
      }
    }
    add(std::string(1, c), MdRun::Plain);
    ++i;
  }
  return runs;
}

std::vector<MdBlock> parse_blocks(const std::string& text) {
  std::vector<MdBlock> out;
  bool in_code = false, open = false;  // `open`: the last block takes continuation lines
  size_t start = 0;
  while (start <= text.size()) {
    size_t end = text.find('\n', start);
    if (end == std::string::npos) end = text.size();
    const std::string line = text.substr(start, end - start);
    start = end + 1;
    if (line.rfind("```", 0) == 0 || line.rfind("~~~", 0) == 0) {
      in_code = !in_code;
      open = false;
      continue;
    }
    if (in_code) {
      out.push_back({MdBlock::Code, line, "", 0});
      continue;
    }
    const size_t first = line.find_first_not_of(' ');
    if (first == std::string::npos) {
      if (out.empty() || out.back().kind != MdBlock::Blank) out.push_back({MdBlock::Blank, "", "", 0});
      open = false;
      continue;
    }
    const std::string rest = line.substr(first);
    size_t digits = 0;
    while (digits < rest.size() && std::isdigit(static_cast<unsigned char>(rest[digits]))) ++digits;
    const int depth = static_cast<int>(first / 2);
    if (rest.size() > 2 && (rest[0] == '-' || rest[0] == '*' || rest[0] == '+') && rest[1] == ' ') {
      out.push_back({MdBlock::Bullet, rest.substr(2), "", depth});
      open = true;
    } else if (digits > 0 && digits < 4 && rest.size() > digits + 1 && (rest[digits] == '.' || rest[digits] == ')') &&
               rest[digits + 1] == ' ') {
      out.push_back({MdBlock::Numbered, rest.substr(digits + 2), rest.substr(0, digits) + ".", depth});
      open = true;
    } else if (first == 0 && rest[0] == '#') {
      const size_t hashes = rest.find_first_not_of('#');
      out.push_back(
          {MdBlock::Heading, hashes == std::string::npos ? "" : rest.substr(rest.find_first_not_of("# ")), "", 0});
      open = false;
    } else if (open) {  // a paragraph's or an item's next line
      out.back().text += " " + rest;
    } else {
      out.push_back({MdBlock::Paragraph, rest, "", 0});
      open = true;
    }
  }
  while (!out.empty() && out.back().kind == MdBlock::Blank) out.pop_back();
  return out;
}

namespace {

// A piece of a word in one style; a word is where no line may break.
struct Piece {
  std::string text;
  MdRun::Style style;
};
using Word = std::vector<Piece>;

std::vector<Word> words_of(const std::vector<MdRun>& runs) {
  std::vector<Word> words(1);
  for (const MdRun& r : runs) {
    if (r.style == MdRun::Code) {
      words.back().push_back({r.text, r.style});
      continue;
    }
    std::string cur;
    for (char c : r.text) {
      if (c != ' ') {
        cur += c;
        continue;
      }
      if (!cur.empty()) words.back().push_back({cur, r.style});
      cur.clear();
      if (!words.back().empty()) words.emplace_back();
    }
    if (!cur.empty()) words.back().push_back({cur, r.style});
  }
  if (words.back().empty()) words.pop_back();
  return words;
}

ImFont* font_of(const MdFonts& f, MdRun::Style s) {
  ImFont* pick = s == MdRun::Code ? f.code : s == MdRun::Strong ? f.strong : s == MdRun::Emphasis ? f.emphasis : f.text;
  return pick ? pick : f.text ? f.text : ImGui::GetFont();
}

float width_of(const MdFonts& f, const Piece& p) {
  ImFont* font = font_of(f, p.style);
  return font->CalcTextSizeA(font->FontSize, FLT_MAX, 0.0f, p.text.c_str()).x;
}

// A code span wider than a whole line: its words, each still in code's face.
std::vector<Word> split_wide(const Word& w, const MdFonts& f, float line_w) {
  float total = 0;
  for (const Piece& p : w) total += width_of(f, p);
  if (total <= line_w) return {w};
  std::vector<Word> out(1);
  for (const Piece& p : w) {
    size_t s = 0;
    while (s <= p.text.size()) {
      size_t e = p.text.find(' ', s);
      if (e == std::string::npos) e = p.text.size();
      if (e > s) out.back().push_back({p.text.substr(s, e - s), p.style});
      if (e < p.text.size() && !out.back().empty()) out.emplace_back();
      s = e + 1;
    }
  }
  if (out.back().empty()) out.pop_back();
  return out;
}

// One paragraph's words from the cursor on, wrapped at `right` (screen x);
// a new line starts at the window's indent. Adds each line drawn to `lines`.
void draw_words(const std::string& text, const MdFonts& f, ImVec4 tint, bool use_tint, float right,
                std::vector<std::string>& lines, const std::string& first_prefix) {
  const float line_w = right - ImGui::GetCursorScreenPos().x;
  std::vector<Word> words;
  for (const Word& w : words_of(parse_inline(text)))
    for (Word& part : split_wide(w, f, line_w)) words.push_back(std::move(part));
  ImFont* base = font_of(f, MdRun::Plain);
  const float space = base->CalcTextSizeA(base->FontSize, FLT_MAX, 0.0f, " ").x;
  std::string line = first_prefix;
  bool line_empty = true;
  float x = 0;
  ImDrawList* dl = ImGui::GetWindowDrawList();
  for (const Word& w : words) {
    float width = 0;
    for (const Piece& p : w) width += width_of(f, p);
    if (!line_empty && x + space + width > right) {
      lines.push_back(line);
      line.clear();
      line_empty = true;
    } else if (!line_empty) {
      ImGui::SameLine(0, space);
      line += ' ';
    }
    for (size_t k = 0; k < w.size(); ++k) {
      const Piece& p = w[k];
      if (k > 0) ImGui::SameLine(0, 0);
      ImFont* font = font_of(f, p.style);
      ImGui::PushFont(font);
      if (p.style == MdRun::Code) {
        const ImVec2 at = ImGui::GetCursorScreenPos();
        const ImVec2 size = ImGui::CalcTextSize(p.text.c_str());
        dl->AddRectFilled(ImVec2(at.x - 1, at.y), ImVec2(at.x + size.x + 1, at.y + size.y), IM_COL32(255, 255, 255, 22),
                          2.0f);
        ImGui::TextColored(f.code_color, "%s", p.text.c_str());
      } else if (use_tint || p.style == MdRun::Emphasis) {
        ImGui::TextColored(use_tint ? tint : f.emphasis_color, "%s", p.text.c_str());
      } else {
        ImGui::TextUnformatted(p.text.c_str());
      }
      ImGui::PopFont();
      line += p.text;
      x = ImGui::GetItemRectMax().x;
    }
    line_empty = false;
  }
  if (!line_empty || !first_prefix.empty()) lines.push_back(line);
}

}  // namespace

std::vector<std::string> draw_markdown(const std::string& text, const MdFonts& f) {
  std::vector<std::string> lines;
  const float right = ImGui::GetWindowPos().x + ImGui::GetWindowContentRegionMax().x;
  ImFont* base = font_of(f, MdRun::Plain);
  const float em = base->FontSize;
  for (const MdBlock& b : parse_blocks(text)) {
    switch (b.kind) {
      case MdBlock::Blank:
        ImGui::Spacing();
        break;
      case MdBlock::Code:
        ImGui::PushFont(font_of(f, MdRun::Code));
        ImGui::TextColored(f.code_color, "  %s", b.text.c_str());
        ImGui::PopFont();
        lines.push_back("  " + b.text);
        break;
      case MdBlock::Heading:
        ImGui::PushFont(font_of(f, MdRun::Strong));
        draw_words(b.text, f, f.heading_color, true, right, lines, "");
        ImGui::PopFont();
        break;
      case MdBlock::Paragraph:
        draw_words(b.text, f, ImVec4(), false, right, lines, "");
        break;
      case MdBlock::Bullet:
      case MdBlock::Numbered: {
        // The marker in a column of its own; the item's lines after the first start under its text.
        const float indent = em * 1.2f * static_cast<float>(b.depth);
        const float marker_w = base->CalcTextSizeA(em, FLT_MAX, 0.0f, "00. ").x;
        if (indent > 0) ImGui::Indent(indent);
        const ImVec2 at = ImGui::GetCursorScreenPos();
        if (b.kind == MdBlock::Bullet) {
          ImGui::GetWindowDrawList()->AddCircleFilled(ImVec2(at.x + marker_w * 0.4f, at.y + em * 0.55f), em * 0.16f,
                                                      ImGui::GetColorU32(ImGuiCol_Text));
          ImGui::Dummy(ImVec2(marker_w, em));
        } else {
          ImGui::PushFont(base);
          ImGui::TextUnformatted(b.marker.c_str());
          ImGui::PopFont();
        }
        ImGui::SameLine(at.x - ImGui::GetWindowPos().x + marker_w + ImGui::GetScrollX(), 0);
        ImGui::Indent(marker_w);
        draw_words(b.text, f, ImVec4(), false, right, lines, b.kind == MdBlock::Bullet ? "- " : b.marker + " ");
        ImGui::Unindent(marker_w);
        if (indent > 0) ImGui::Unindent(indent);
        break;
      }
    }
  }
  return lines;
}

}  // namespace descent::ui
