// The Lesson tab's Markdown (ui/markdown.cpp, Note [Markdown in the Lesson
// tab]): the inline marks and the blocks as parsed, and the lines as laid out
// in a headless ImGui context (no window, no GPU: the font atlas is built in
// memory). A line breaks only between words, never inside a word or a code
// span; a list item's marker leads its first line.
#include <gtest/gtest.h>
#include <imgui.h>

#include <sstream>
#include <string>
#include <vector>

#include "ui/markdown.h"

namespace descent::ui {
namespace {

std::vector<std::string> texts(const std::vector<MdRun>& runs, MdRun::Style style) {
  std::vector<std::string> out;
  for (const MdRun& r : runs)
    if (r.style == style) out.push_back(r.text);
  return out;
}

TEST(MarkdownInline, CodeEmphasisAndStrongLoseTheirMarks) {
  const auto runs = parse_inline("call `x.grad`, a *new word* and **the rule** here");
  EXPECT_EQ(texts(runs, MdRun::Code), std::vector<std::string>{"x.grad"});
  EXPECT_EQ(texts(runs, MdRun::Emphasis), std::vector<std::string>{"new word"});
  EXPECT_EQ(texts(runs, MdRun::Strong), std::vector<std::string>{"the rule"});
  std::string all;
  for (const MdRun& r : runs) all += r.text;
  EXPECT_EQ(all, "call x.grad, a new word and the rule here");
}

TEST(MarkdownInline, AMarkInsideAWordOrNeverClosedIsText) {
  for (const char* t : {"snake_case_name", "2*3*4 = 24", "an *unclosed mark", "a ** b", "`unclosed code"}) {
    const auto runs = parse_inline(t);
    ASSERT_EQ(runs.size(), 1u) << t;
    EXPECT_EQ(runs[0].style, MdRun::Plain) << t;
    EXPECT_EQ(runs[0].text, t);
  }
}

TEST(MarkdownInline, CodeInsideStrongStaysCode) {
  const auto runs = parse_inline("**see `aten::add`**");
  EXPECT_EQ(texts(runs, MdRun::Code), std::vector<std::string>{"aten::add"});
  EXPECT_EQ(texts(runs, MdRun::Strong), std::vector<std::string>{"see "});
}

TEST(MarkdownBlocks, ListsParagraphsHeadingsAndCode) {
  const auto b = parse_blocks(
      "# The floors\n"
      "A paragraph\nover two lines.\n"
      "\n"
      "1. first\n"
      "   goes on\n"
      "2) second\n"
      "- a bullet\n"
      "  - nested\n"
      "```python\n"
      "x = 1  # kept as is\n"
      "```\n"
      "\n\n");
  ASSERT_EQ(b.size(), 8u);
  EXPECT_EQ(b[0].kind, MdBlock::Heading);
  EXPECT_EQ(b[0].text, "The floors");
  EXPECT_EQ(b[1].kind, MdBlock::Paragraph);
  EXPECT_EQ(b[1].text, "A paragraph over two lines.");
  EXPECT_EQ(b[2].kind, MdBlock::Blank);
  EXPECT_EQ(b[3].kind, MdBlock::Numbered);
  EXPECT_EQ(b[3].marker, "1.");
  EXPECT_EQ(b[3].text, "first goes on");
  EXPECT_EQ(b[4].kind, MdBlock::Numbered);
  EXPECT_EQ(b[4].marker, "2.");
  EXPECT_EQ(b[5].kind, MdBlock::Bullet);
  EXPECT_EQ(b[5].depth, 0);
  EXPECT_EQ(b[6].kind, MdBlock::Bullet);
  EXPECT_EQ(b[6].depth, 1);
  EXPECT_EQ(b[6].text, "nested");
  EXPECT_EQ(b[7].kind, MdBlock::Code);
  EXPECT_EQ(b[7].text, "x = 1  # kept as is");  // trailing blank lines dropped
}

TEST(MarkdownBlocks, ANumberThatIsNoItemIsText) {
  const auto b = parse_blocks("2026. A year, not an item.\n3.5 is a number");
  ASSERT_EQ(b.size(), 1u);
  EXPECT_EQ(b[0].kind, MdBlock::Paragraph);
}

// draw_markdown's lines for `text` in a window `width` pixels wide.
std::vector<std::string> laid_out(const std::string& text, float width) {
  ImGui::CreateContext();
  ImGuiIO& io = ImGui::GetIO();
  io.IniFilename = nullptr;
  io.DisplaySize = ImVec2(2000, 2000);
  unsigned char* pixels = nullptr;
  int w = 0, h = 0;
  io.Fonts->GetTexDataAsRGBA32(&pixels, &w, &h);
  ImGui::NewFrame();
  ImGui::SetNextWindowPos(ImVec2(0, 0));
  ImGui::SetNextWindowSize(ImVec2(width, 1900));
  ImGui::Begin("lesson", nullptr, ImGuiWindowFlags_NoDecoration);
  std::vector<std::string> lines = draw_markdown(text, MdFonts{});
  ImGui::End();
  ImGui::Render();
  ImGui::DestroyContext();
  return lines;
}

std::vector<std::string> words(const std::string& s) {
  std::istringstream in(s);
  std::vector<std::string> out;
  for (std::string w; in >> w;) out.push_back(w);
  return out;
}

TEST(MarkdownLayout, LinesBreakBetweenWordsOnlyAndItemsKeepTheirMarkers) {
  const std::string item =
      "Each op goes down the floors: the binding parses `torch.add(x, 1)`, the dispatcher picks a kernel, and the "
      "kernel writes `out[i] = a[i] + b[i]` into fresh memory.";
  const std::string text = "3. " + item + "\n- *emphasis* stays one word: `x.grad`, then more text to wrap it";
  const std::vector<std::string> lines = laid_out(text, 260);
  ASSERT_GT(lines.size(), 4u) << "260 pixels must wrap the item";
  EXPECT_EQ(lines[0].rfind("3. ", 0), 0u) << lines[0];
  // Every word of the source (marks left out) is whole on one line, in order; code spans stay whole.
  std::vector<std::string> drawn;
  for (const std::string& l : lines)
    for (const std::string& w : words(l)) drawn.push_back(w);
  std::string all;
  for (const std::string& l : lines) all += l + "\n";
  for (const char* whole : {"torch.add(x, 1),", "out[i] = a[i] + b[i]"})  // marks left out, the comma kept with it
    EXPECT_NE(all.find(whole), std::string::npos) << "a code span broken across lines: " << whole << "\n" << all;
  const std::vector<std::string> source = words("3. " + item);
  size_t k = 0;
  for (std::string w : source) {
    if (w.find('`') != std::string::npos) continue;  // code spans checked above
    ASSERT_LT(k, drawn.size());
    while (k < drawn.size() && drawn[k] != w) ++k;
    EXPECT_LT(k, drawn.size()) << "word not drawn whole: " << w << "\n" << all;
  }
  bool bullet = false;
  for (const std::string& l : lines)
    if (l.rfind("- emphasis stays", 0) == 0) bullet = true;
  EXPECT_TRUE(bullet) << all;
}

TEST(MarkdownLayout, ACodeSpanWiderThanALineBreaksAtItsSpacesOnly) {
  const std::vector<std::string> lines = laid_out("`first_word second_word third_word fourth_word`", 150);
  ASSERT_GT(lines.size(), 1u);
  std::vector<std::string> drawn;
  for (const std::string& l : lines)
    for (const std::string& w : words(l)) drawn.push_back(w);
  EXPECT_EQ(drawn, (std::vector<std::string>{"first_word", "second_word", "third_word", "fourth_word"}));
}

}  // namespace
}  // namespace descent::ui
