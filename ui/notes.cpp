// descent's named Notes from the embedded sources. See Note [Notes in the app] in notes.h.
#include "ui/notes.h"

#include <algorithm>
#include <cctype>

#include "tracer/sources.h"

namespace descent::ui {

namespace {

constexpr size_t kMaxNameChars = 120;  // a reference longer than this is not a Note's name

std::string_view trim_left(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  return s;
}
std::string_view trim(std::string_view s) {
  s = trim_left(s);
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.back()))) s.remove_suffix(1);
  return s;
}

// Whitespace runs as one space, none at either end.
std::string fold_spaces(std::string_view s) {
  std::string out;
  bool space = false;
  for (char c : s) {
    if (std::isspace(static_cast<unsigned char>(c))) {
      space = !out.empty();
      continue;
    }
    if (space) out += ' ';
    space = false;
    out += c;
  }
  return out;
}

std::string lower(std::string_view s) {
  std::string out(s);
  for (char& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

std::vector<std::string_view> split_lines(std::string_view text) {
  std::vector<std::string_view> lines;
  size_t at = 0;
  while (at < text.size()) {
    const size_t nl = text.find('\n', at);
    const size_t end = nl == std::string_view::npos ? text.size() : nl;
    lines.push_back(text.substr(at, end - at));
    at = end + 1;
  }
  return lines;
}

// The comment marker a line starts with ("//", "#", or "" for none) and the rest.
std::string_view marker_of(std::string_view line, std::string_view& rest) {
  line = trim_left(line);
  for (std::string_view m : {std::string_view("//"), std::string_view("#")}) {
    if (line.starts_with(m)) {
      rest = trim(line.substr(m.size()));
      return m;
    }
  }
  rest = trim(line);
  return "";
}

// Whether lines[i] opens a note: `Note [Name]` alone on its line, and under it
// a line of `~` with the same marker. Sets `name` and `marker`.
bool is_header(const std::vector<std::string_view>& lines, size_t i, std::string& name, std::string_view& marker) {
  if (i + 1 >= lines.size()) return false;
  std::string_view rest;
  marker = marker_of(lines[i], rest);
  if (!rest.starts_with("Note [") || !rest.ends_with("]")) return false;
  std::string_view under;
  if (marker_of(lines[i + 1], under) != marker || under.size() < 3) return false;
  if (under.find_first_not_of('~') != std::string_view::npos) return false;
  name = fold_spaces(rest.substr(6, rest.size() - 7));
  return !name.empty();
}

// The body of the note whose header is lines[i] (its underline is lines[i + 1]).
std::string body_of(const std::vector<std::string_view>& lines, size_t i, std::string_view marker) {
  std::vector<std::string> out;
  std::string ignored_name;
  std::string_view ignored_marker;
  for (size_t j = i + 2; j < lines.size(); ++j) {
    if (is_header(lines, j, ignored_name, ignored_marker)) break;
    std::string_view line = lines[j];
    if (!marker.empty()) {
      const std::string_view t = trim_left(line);
      if (!t.starts_with(marker)) break;  // the comment block ended
      line = t.substr(marker.size());
      if (line.starts_with(' ')) line.remove_prefix(1);
    } else if (const size_t q = line.find("\"\"\""); q != std::string_view::npos) {
      line = line.substr(0, q);  // the docstring ends here
      if (!trim(line).empty()) out.emplace_back(line);
      break;
    }
    while (!line.empty() && std::isspace(static_cast<unsigned char>(line.back()))) line.remove_suffix(1);
    out.emplace_back(line);
  }
  while (!out.empty() && out.back().empty()) out.pop_back();
  std::string text;
  for (const std::string& l : out) text += (text.empty() ? "" : "\n") + l;
  return text;
}

struct Reference {
  std::string name;   // folded
  uint32_t line = 0;  // where `Note [` is
};

// Every `Note [Name]` in `text`, the name's continuation lines (a comment
// marker after a line break) folded into one line.
std::vector<Reference> references(std::string_view text) {
  std::vector<Reference> out;
  uint32_t line = 1;
  size_t counted = 0;
  for (size_t at = text.find("Note ["); at != std::string_view::npos; at = text.find("Note [", at + 1)) {
    line += static_cast<uint32_t>(std::count(text.begin() + counted, text.begin() + at, '\n'));
    counted = at;
    const size_t close = text.find(']', at);
    if (close == std::string_view::npos || close - at > kMaxNameChars) continue;
    std::string raw;
    for (std::string_view part : split_lines(text.substr(at + 6, close - at - 6))) {
      std::string_view rest;
      marker_of(part, rest);  // a continuation line's `//` or `#` is not part of the name
      raw += ' ';
      raw += rest;
    }
    if (raw.find('[') != std::string::npos) continue;
    out.push_back({fold_spaces(raw), line});
  }
  return out;
}

}  // namespace

NoteIndex parse_notes(const std::vector<SourceText>& files) {
  NoteIndex index;
  for (const SourceText& f : files) {
    const std::vector<std::string_view> lines = split_lines(f.text);
    for (size_t i = 0; i < lines.size(); ++i) {
      std::string name;
      std::string_view marker;
      if (!is_header(lines, i, name, marker)) continue;
      Note n;
      n.name = std::move(name);
      n.file = std::string(f.path);
      n.line = static_cast<uint32_t>(i + 1);
      n.text = body_of(lines, i, marker);
      index.notes.push_back(std::move(n));
    }
  }
  std::stable_sort(index.notes.begin(), index.notes.end(),
                   [](const Note& a, const Note& b) { return a.name < b.name; });
  // Where each note is referred to, and what each note's text cites.
  for (const SourceText& f : files) {
    for (const Reference& r : references(f.text)) {
      const size_t k = index.index_of(r.name);
      if (k == SIZE_MAX) continue;
      Note& n = index.notes[k];
      if (n.file == f.path && n.line == r.line) continue;  // its own header
      n.cited_at.push_back({std::string(f.path), r.line});
    }
  }
  for (Note& n : index.notes) {
    for (const Reference& r : references(n.text)) {
      if (r.name != n.name && index.find(r.name) &&
          std::find(n.cites.begin(), n.cites.end(), r.name) == n.cites.end()) {
        n.cites.push_back(r.name);
      }
    }
  }
  return index;
}

size_t NoteIndex::index_of(std::string_view name) const {
  const std::string folded = fold_spaces(name);
  const auto it = std::lower_bound(notes.begin(), notes.end(), folded,
                                   [](const Note& n, const std::string& key) { return n.name < key; });
  return it != notes.end() && it->name == folded ? static_cast<size_t>(it - notes.begin()) : SIZE_MAX;
}

const Note* NoteIndex::find(std::string_view name) const {
  const size_t k = index_of(name);
  return k == SIZE_MAX ? nullptr : &notes[k];
}

std::vector<size_t> NoteIndex::search(std::string_view query) const {
  std::vector<std::string> words;
  const std::string q = lower(query);
  for (size_t at = 0; at < q.size();) {
    const size_t end = std::min(q.find(' ', at), q.size());
    if (end > at) words.push_back(q.substr(at, end - at));
    at = end + 1;
  }
  std::vector<size_t> by_name, by_text;
  for (size_t k = 0; k < notes.size(); ++k) {
    const std::string name = lower(notes[k].name);
    const std::string all = name + "\n" + lower(notes[k].file) + "\n" + lower(notes[k].text);
    auto holds = [&](const std::string& s) {
      return std::all_of(words.begin(), words.end(),
                         [&](const std::string& w) { return s.find(w) != std::string::npos; });
    };
    if (holds(name))
      by_name.push_back(k);
    else if (holds(all))
      by_text.push_back(k);
  }
  by_name.insert(by_name.end(), by_text.begin(), by_text.end());
  return by_name;
}

namespace {

size_t indent_of(std::string_view l) {
  const size_t i = l.find_first_not_of(' ');
  return i == std::string_view::npos ? 0 : i;
}

// The column where a list item's text starts ("  1. text" -> 5), npos when the line is no list item.
size_t list_text_column(std::string_view l) {
  const size_t ind = indent_of(l);
  std::string_view t = l.substr(ind);
  if (t.starts_with("- ") || t.starts_with("* ")) return ind + 2;
  size_t d = 0;
  while (d < t.size() && std::isdigit(static_cast<unsigned char>(t[d]))) ++d;
  if (d > 0 && d + 1 < t.size() && (t[d] == '.' || t[d] == ')') && t[d + 1] == ' ') return ind + d + 2;
  return std::string_view::npos;
}

}  // namespace

std::vector<std::string> paragraphs(const Note& n) {
  std::vector<std::string> out;
  enum class Open { None, Plain, Item, Code } open = Open::None;
  size_t column = 0;  // where the open entry's text starts
  size_t base = 0;    // the indentation of the prose around: a line deeper than it (not a list item) is code
  for (std::string_view line : split_lines(n.text)) {
    if (trim(line).empty()) {
      if (!out.empty() && !out.back().empty()) out.emplace_back();
      open = Open::None;
      continue;
    }
    const size_t ind = indent_of(line);
    const size_t item = list_text_column(line);
    if (item == std::string_view::npos &&
        ((open == Open::Plain && ind == column) || (open == Open::Item && ind + 1 >= column))) {
      out.back() += ' ';
      out.back() += trim(line);
      continue;
    }
    out.emplace_back(line);  // a new entry, its indentation kept
    if (item != std::string_view::npos) {
      open = Open::Item, column = item, base = ind;
    } else if (ind > base) {
      open = Open::Code;  // a line of its own
    } else {
      open = Open::Plain, column = ind, base = ind;
    }
  }
  while (!out.empty() && out.back().empty()) out.pop_back();
  return out;
}

const NoteIndex& embedded_notes() {
  static const NoteIndex index = [] {
    std::vector<SourceText> files;
    for (std::string_view path : trace::embedded_source_paths()) files.push_back({path, trace::embedded_source(path)});
    return parse_notes(files);
  }();
  return index;
}

}  // namespace descent::ui
