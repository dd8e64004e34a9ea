// Moving through a long story: jumps to the next step of a kind, and search
// by span name (issue 23, "Moving through long stories").
//
// Plain data, no ImGui: the toolbar's keys (panel_toolbar.cpp) and the
// search field (panel_search.cpp) call these, and tests/ui checks them
// without a window. See Note [Jumping through a story].
//
// Note [Jumping through a story]
// ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
// A small backward pass is about 200 steps (Note [A call as steps]); a
// thousand iterations of a training loop are 22,000. Stepping one at a time
// does not get anywhere, and scrubbing lands anywhere. A jump moves to the
// next (or the previous) step of a kind a lesson talks about: each kind is a
// set of steps, and a jump goes to the nearest one after (before) the current
// step, so a jump forward and one back return where they started whenever
// the start was itself of that kind. The kinds:
//   statement    a step down into a floor-1 span (a line of Python, or the
//                descent package's Python under it)
//   floor        a step whose token floor differs from the step before's
//                (token_floor: going up, the token is on the parent's floor)
//   node         a step down into a node the backward engine runs (the
//                floor-4 span "autograd::engine::evaluate_function: ...")
//   launch       a step down into a floor-8 span
//   kernel       a step down into a floor-5 span
//   step down    any step down into a span (the Down key: the token goes down)
//   step up      any step up out of a span (the Up key: the token goes up);
//                Right and Left (J and K) are the next and previous step,
//                whichever way it goes
// Search is the same over the spans whose name contains a text (case
// ignored): its steps are their steps down, and the search wraps around at
// either end, as a browser's find does.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

#include "ui/story.h"

namespace descent::ui {

enum class JumpKind { Statement, Floor, Node, Launch, Kernel, Down, Up };
constexpr int kJumpKinds = 7;

const char* jump_kind_name(JumpKind k);  // "statement", "floor change", ..., "step down", "step up"

// Whether step k is of the kind (Note [Jumping through a story]).
bool is_jump_target(const Story& s, size_t k, JumpKind kind);

// The nearest step of the kind after `from` (forward) or before it; SIZE_MAX
// when there is none.
size_t jump_step(const Story& s, size_t from, JumpKind kind, bool forward);

// The name prefix of the spans the backward engine records for a node it runs.
constexpr std::string_view kEngineNodePrefix = "autograd::engine::evaluate_function: ";

// Search by span name: the steps down into every span of the story whose
// name contains `text`, case ignored, in step order (none for an empty text).
std::vector<size_t> search_steps(const Story& s, std::string_view text);

// The match a search moves to from `from`: the next after it (forward) or
// the one before it, wrapping around at the ends. An index into `matches`;
// SIZE_MAX when there are none.
size_t next_match(const std::vector<size_t>& matches, size_t from, bool forward);

// "3 of 17" when the step is the third match, "17 spans named ..." when it is
// none of them, "no span named ..." when nothing matches.
std::string search_label(const std::vector<size_t>& matches, size_t step, std::string_view text);

}  // namespace descent::ui
