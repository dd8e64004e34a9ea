// Jumps and search over a story. See Note [Jumping through a story] in navigate.h.
#include "ui/navigate.h"

#include <algorithm>
#include <cctype>

namespace descent::ui {

const char* jump_kind_name(JumpKind k) {
  switch (k) {
    case JumpKind::Statement:
      return "statement";
    case JumpKind::Floor:
      return "floor change";
    case JumpKind::Node:
      return "autograd node";
    case JumpKind::Launch:
      return "launch";
    case JumpKind::Kernel:
      return "kernel";
    case JumpKind::Down:
      return "step down";
    case JumpKind::Up:
      return "step up";
  }
  return "?";
}

bool is_jump_target(const Story& s, size_t k, JumpKind kind) {
  if (k >= s.steps.size()) return false;
  const Step& st = s.steps[k];
  if (kind == JumpKind::Floor) return k > 0 && token_floor(s, k) != token_floor(s, k - 1);
  if (kind == JumpKind::Up) return !st.down;
  if (!st.down) return false;
  const trace::Span& sp = s.trace->spans[st.span];
  switch (kind) {
    case JumpKind::Statement:
      return sp.floor == trace::Floor::Python;
    case JumpKind::Node:
      return sp.floor == trace::Floor::Autograd && std::string_view(sp.name).starts_with(kEngineNodePrefix);
    case JumpKind::Launch:
      return sp.floor == trace::Floor::Launch;
    case JumpKind::Kernel:
      return sp.floor == trace::Floor::Kernels;
    case JumpKind::Down:
      return true;
    case JumpKind::Floor:
    case JumpKind::Up:
      break;
  }
  return false;
}

size_t jump_step(const Story& s, size_t from, JumpKind kind, bool forward) {
  if (forward) {
    for (size_t k = from + 1; k < s.steps.size(); ++k)
      if (is_jump_target(s, k, kind)) return k;
  } else {
    for (size_t k = std::min(from, s.steps.size()); k-- > 0;)
      if (is_jump_target(s, k, kind)) return k;
  }
  return SIZE_MAX;
}

namespace {
bool contains_ignoring_case(std::string_view hay, std::string_view needle) {
  auto eq = [](char a, char b) {
    return std::tolower(static_cast<unsigned char>(a)) == std::tolower(static_cast<unsigned char>(b));
  };
  return std::search(hay.begin(), hay.end(), needle.begin(), needle.end(), eq) != hay.end();
}
}  // namespace

std::vector<size_t> search_steps(const Story& s, std::string_view text) {
  std::vector<size_t> out;
  if (text.empty() || !s.trace) return out;
  for (size_t i = 0; i < s.down_step.size(); ++i) {
    if (s.down_step[i] != SIZE_MAX && contains_ignoring_case(s.trace->spans[i].name, text))
      out.push_back(s.down_step[i]);
  }
  std::sort(out.begin(), out.end());
  return out;
}

size_t next_match(const std::vector<size_t>& matches, size_t from, bool forward) {
  if (matches.empty()) return SIZE_MAX;
  if (forward) {
    const auto it = std::upper_bound(matches.begin(), matches.end(), from);
    return it == matches.end() ? 0 : size_t(it - matches.begin());
  }
  const auto it = std::lower_bound(matches.begin(), matches.end(), from);
  return it == matches.begin() ? matches.size() - 1 : size_t(it - matches.begin()) - 1;
}

std::string search_label(const std::vector<size_t>& matches, size_t step, std::string_view text) {
  std::string quoted(1, '"');  // (built up: GCC 12 warns falsely on "\"" + std::string)
  quoted.append(text).push_back('"');
  if (matches.empty()) return "no span named " + quoted;
  const auto it = std::lower_bound(matches.begin(), matches.end(), step);
  if (it != matches.end() && *it == step)
    return std::to_string(it - matches.begin() + 1) + " of " + std::to_string(matches.size());
  return std::to_string(matches.size()) + (matches.size() == 1 ? " span named " : " spans named ") + quoted;
}

}  // namespace descent::ui
