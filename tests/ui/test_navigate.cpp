// Jumps through a story and search by span name (ui/navigate.h, Note
// [Jumping through a story]), without a window.
#include <gtest/gtest.h>

#include "tests/tracer/trace_test_util.h"
#include "ui/navigate.h"

namespace descent::ui {
namespace {

using trace::Floor;
using trace::test_util::make_span;

// A device add, then its backward: two statements.
//   step  0 v x + w            (1)      10 v loss.backward()   (1)
//         1 v add              (2)      11 v _run_backward     (2)
//         2 v aten::add        (3)      12 v evaluate_function: AddBackward0 (4)
//         3 v add kernel       (5)      13 ^ evaluate_function
//         4 v cudaLaunchKernel (8)      14 v evaluate_function: AccumulateGrad (4)
//         5 ^ cudaLaunchKernel          15 ^ evaluate_function
//         6 ^ add kernel                16 ^ _run_backward
//         7 ^ aten::add                 17 ^ loss.backward()
//         8 ^ add
//         9 ^ x + w
trace::Trace device_add_and_backward() {
  trace::Trace t;
  t.spans.push_back(make_span(1, 0, Floor::Python, "x + w", 0, 1000));
  t.spans.push_back(make_span(2, 1, Floor::Binding, "add", 10, 990));
  t.spans.push_back(make_span(3, 2, Floor::Dispatch, "aten::add", 20, 980));
  t.spans.push_back(make_span(4, 3, Floor::Kernels, "add kernel", 30, 970));
  t.spans.push_back(make_span(5, 4, Floor::Launch, "cudaLaunchKernel", 40, 960));
  t.spans.push_back(make_span(6, 0, Floor::Python, "loss.backward()", 2000, 3000));
  t.spans.push_back(make_span(7, 6, Floor::Binding, "_run_backward", 2010, 2990));
  t.spans.push_back(make_span(8, 7, Floor::Autograd, "autograd::engine::evaluate_function: AddBackward0", 2020, 2500));
  t.spans.push_back(
      make_span(9, 7, Floor::Autograd, "autograd::engine::evaluate_function: AccumulateGrad", 2510, 2980));
  return t;
}

TEST(Navigate, EachKindJumpsToItsNextAndPreviousStep) {
  const trace::Trace t = device_add_and_backward();
  const Story s = build_story(t);
  ASSERT_EQ(s.steps.size(), 18u);
  EXPECT_EQ(jump_step(s, 0, JumpKind::Statement, true), 10u);
  EXPECT_EQ(jump_step(s, 10, JumpKind::Statement, false), 0u);
  EXPECT_EQ(jump_step(s, 5, JumpKind::Statement, false), 0u);
  EXPECT_EQ(jump_step(s, 10, JumpKind::Statement, true), SIZE_MAX);
  EXPECT_EQ(jump_step(s, 0, JumpKind::Kernel, true), 3u);
  EXPECT_EQ(jump_step(s, 3, JumpKind::Kernel, true), SIZE_MAX);
  EXPECT_EQ(jump_step(s, 0, JumpKind::Launch, true), 4u);
  EXPECT_EQ(jump_step(s, 17, JumpKind::Launch, false), 4u);
  EXPECT_EQ(jump_step(s, 0, JumpKind::Node, true), 12u);
  EXPECT_EQ(jump_step(s, 12, JumpKind::Node, true), 14u);
  EXPECT_EQ(jump_step(s, 14, JumpKind::Node, false), 12u);
  EXPECT_EQ(jump_step(s, 11, JumpKind::Node, false), SIZE_MAX);
}

TEST(Navigate, AFloorChangeIsAStepOnAnotherFloorThanTheStepBefore) {
  const trace::Trace t = device_add_and_backward();
  const Story s = build_story(t);
  // Floors by step: 1 2 3 5 8 5 3 2 1 1 | 1 2 4 2 4 2 1 1 (coming up, the parent's floor).
  EXPECT_EQ(jump_step(s, 0, JumpKind::Floor, true), 1u);
  EXPECT_EQ(jump_step(s, 8, JumpKind::Floor, true), 11u);  // 8, 9 and 10 are all on floor 1
  EXPECT_EQ(jump_step(s, 11, JumpKind::Floor, false), 8u);
  for (size_t k = 0; k < s.steps.size(); ++k) {
    const bool changed = k > 0 && token_floor(s, k) != token_floor(s, k - 1);
    EXPECT_EQ(is_jump_target(s, k, JumpKind::Floor), changed) << k;
  }
}

// The Down and Up keys move the token the way they name: Down to the next
// step down into a span, Up to the next step up out of one.
TEST(Navigate, DownAndUpGoToTheNextStepThatGoesThatWay) {
  const trace::Trace t = device_add_and_backward();
  const Story s = build_story(t);
  EXPECT_EQ(jump_step(s, 0, JumpKind::Down, true), 1u);
  EXPECT_EQ(jump_step(s, 4, JumpKind::Down, true), 10u);  // up out of the launch, and on to the next statement
  EXPECT_EQ(jump_step(s, 0, JumpKind::Up, true), 5u);     // up out of the launch: the first step up
  EXPECT_EQ(jump_step(s, 5, JumpKind::Up, true), 6u);
  EXPECT_EQ(jump_step(s, 12, JumpKind::Up, true), 13u);
  EXPECT_EQ(jump_step(s, 17, JumpKind::Up, true), SIZE_MAX);
  for (size_t k = 0; k < s.steps.size(); ++k) {
    EXPECT_EQ(is_jump_target(s, k, JumpKind::Down), s.steps[k].down) << k;
    EXPECT_EQ(is_jump_target(s, k, JumpKind::Up), !s.steps[k].down) << k;
    if (k == 0) continue;
    if (s.steps[k].down) {
      EXPECT_GE(token_floor(s, k), token_floor(s, k - 1)) << k;  // never up on a step down
    }
  }
}

TEST(Navigate, SearchFindsSpansByAnyPartOfTheirNameIgnoringCase) {
  const trace::Trace t = device_add_and_backward();
  const Story s = build_story(t);
  EXPECT_EQ(search_steps(s, "ADD"), (std::vector<size_t>{1, 2, 3, 12}));
  EXPECT_EQ(search_steps(s, "backward"), (std::vector<size_t>{10, 11, 12}));
  EXPECT_TRUE(search_steps(s, "").empty());
  EXPECT_TRUE(search_steps(s, "softmax").empty());
  const std::vector<size_t> m = search_steps(s, "add");
  EXPECT_EQ(next_match(m, 0, true), 0u);
  EXPECT_EQ(next_match(m, 3, true), 3u);
  EXPECT_EQ(next_match(m, 12, true), 0u);  // wraps around
  EXPECT_EQ(next_match(m, 2, false), 0u);
  EXPECT_EQ(next_match(m, 1, false), 3u);  // wraps around
  EXPECT_EQ(search_label(m, 3, "add"), "3 of 4");
  EXPECT_EQ(search_label(m, 0, "add"), "4 spans named \"add\"");
  EXPECT_EQ(search_label({}, 0, "softmax"), "no span named \"softmax\"");
}

}  // namespace
}  // namespace descent::ui
