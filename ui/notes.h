// descent's named Notes, read from the sources embedded in the app
// (tracer/sources.h), for the Notes viewer and the explanations that cite
// them. Plain data, no ImGui: tests/ui checks it without a window.
//
// [SECTION] Model
// [SECTION] Parsing
//
// Note [Notes in the app]
// ~~~~~~~~~~~~~~~~~~~~~~~
// A design decision of descent lives in a named note, as in c10: a comment
// that opens with `Note [Name]`, has a line of `~` under it, and runs to the
// end of its comment block; other files point at it as `Note [Name]`. The app
// finds them in the embedded sources, so the viewer works from any directory
// and shows the text the app was built with. A C++ note is a block of `//`
// lines (a `//` line alone separates its paragraphs); a note in a Python
// docstring has no comment marker and runs to the docstring's end or the next
// note. Each note keeps its file and the line of its name, and the places
// that refer to it. A name may wrap over two lines where it is referred to
// (`Note [Grad mode is a flag, not` / `a key]`), so references are matched
// with the whitespace between words folded to one space.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace descent::ui {

// [SECTION] Model -----------------------------------------------------------------

struct SourcePlace {
  std::string file;   // relative to the repository root
  uint32_t line = 0;  // 1-based
};

struct Note {
  std::string name;                   // "Computing the key set"
  std::string file;                   // "floors/dispatch/dispatcher.cpp"
  uint32_t line = 0;                  // the line of `Note [Name]`
  std::string text;                   // the body, comment markers taken off, lines joined by '\n'
  std::vector<std::string> cites;     // the Notes its text refers to, in order, each once
  std::vector<SourcePlace> cited_at;  // where other lines refer to it (its own header excluded)
};

struct NoteIndex {
  std::vector<Note> notes;  // sorted by name
  // The note named `name` (exact, or with its whitespace folded); nullptr when none.
  const Note* find(std::string_view name) const;
  // Index of `name` in `notes`; SIZE_MAX when none.
  size_t index_of(std::string_view name) const;
  // The notes whose name, file or text holds every word of `query`
  // (case-insensitive), those that match by name first; all when it is empty.
  std::vector<size_t> search(std::string_view query) const;
};

// The note's text for a display that wraps: the lines of a paragraph joined
// by spaces. A blank line ends a paragraph (and gives an empty entry, a gap);
// a list item ("- x", "1. x", "  2. x") or a line indented deeper than the
// paragraph's first starts a new entry, its indentation kept.
std::vector<std::string> paragraphs(const Note& n);

// [SECTION] Parsing -------------------------------------------------------------

struct SourceText {
  std::string_view path;
  std::string_view text;
};

// Every Note in `files` (Note [Notes in the app]).
NoteIndex parse_notes(const std::vector<SourceText>& files);

// The notes of the sources embedded in this build, parsed once; empty when
// the build embeds none.
const NoteIndex& embedded_notes();

}  // namespace descent::ui
