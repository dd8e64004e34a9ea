// A class's answers, counted for the presenter. See class_answers.h.
#include "ui/class_answers.h"

#include <algorithm>
#include <cctype>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <system_error>

namespace descent::ui {

namespace {

constexpr size_t kMaxAnswerBytes = 4096;  // terminal_class.py's cmd_tally reads as much
constexpr size_t kMaxTypedShown = 8;      // a typed question's most given answers

std::string trimmed(std::string s) {
  const auto space = [](unsigned char c) { return std::isspace(c) != 0; };
  while (!s.empty() && space(s.back())) s.pop_back();
  size_t b = 0;
  while (b < s.size() && space(s[b])) ++b;
  return s.substr(b);
}

}  // namespace

std::string class_file_name(const std::string& text) {
  std::string out;
  for (unsigned char c : text) out += std::isalnum(c) || c == '.' || c == '_' || c == '@' || c == '-' ? c : '_';
  size_t b = out.find_first_not_of("._");
  if (b == std::string::npos) return "";
  out = out.substr(b);
  out.erase(out.find_last_not_of("._") + 1);
  return out.substr(0, 80);
}

ClassTally tally_answers(const std::string& dir, const std::string& lesson, int step, int question, size_t choices) {
  namespace fs = std::filesystem;
  ClassTally t;
  t.per_choice.assign(choices, 0);
  char sub[64];
  std::snprintf(sub, sizeof sub, "step-%02d-q-%d", step + 1, question + 1);
  const fs::path folder = fs::path(dir) / class_file_name(lesson) / sub;
  std::error_code ec;
  if (!fs::is_directory(folder, ec)) return t;
  t.found = true;
  std::map<std::string, int> typed;
  for (fs::directory_iterator it(folder, ec), end; !ec && it != end; it.increment(ec)) {
    if (it->path().extension() != ".txt" || !it->is_regular_file(ec)) continue;
    std::ifstream in(it->path(), std::ios::binary);
    std::string text(kMaxAnswerBytes, '\0');
    in.read(text.data(), static_cast<std::streamsize>(text.size()));
    if (in.bad()) {
      ++t.unreadable;
      continue;
    }
    text = trimmed(text.substr(0, static_cast<size_t>(in.gcount())));
    if (text.empty()) {
      ++t.unreadable;
      continue;
    }
    if (choices == 0) {
      ++typed[text];
      ++t.answers;
      continue;
    }
    const bool digits = !text.empty() && text.size() < 4 &&
                        std::all_of(text.begin(), text.end(), [](unsigned char c) { return std::isdigit(c) != 0; });
    const size_t k = digits ? static_cast<size_t>(std::stoi(text)) : choices;
    ++t.answers;
    if (k < choices) {
      ++t.per_choice[k];
    } else {
      ++t.other;  // typed text the terminal could read as no choice
    }
  }
  for (const auto& kv : typed) t.typed.push_back(kv);
  std::stable_sort(t.typed.begin(), t.typed.end(), [](const auto& a, const auto& b) { return a.second > b.second; });
  if (t.typed.size() > kMaxTypedShown) t.typed.resize(kMaxTypedShown);
  return t;
}

}  // namespace descent::ui
