// The app's model without a window: a trace told as steps, the floors at a
// step, warm medians, and playback.
#include <gtest/gtest.h>

#include "tests/tracer/trace_test_util.h"
#include "ui/playback.h"
#include "ui/story.h"

namespace descent::ui {
namespace {

using trace::Floor;

using trace::test_util::make_span;

// `x + 1` as descent traces it, twice (a cold call, then a warm one), and a
// worker thread's span that is not part of the story.
trace::Trace two_calls() {
  trace::Trace t;
  for (int call = 0; call < 2; ++call) {
    const uint64_t b = 10 * call;
    const int64_t at = 10000 * call, slow = call == 0 ? 3 : 1;  // the first call is slower
    t.spans.push_back(make_span(b + 1, 0, Floor::Python, "x + 1", at, at + 1000 * slow));
    t.spans.push_back(make_span(b + 2, b + 1, Floor::Binding, "add", at + 100, at + 900 * slow));
    t.spans.push_back(make_span(b + 3, b + 2, Floor::Dispatch, "add", at + 200, at + 800 * slow, 0,
                                {{"keyset", std::string("CPU|BackendSelect|ADInplaceOrView|AutogradCPU")},
                                 {"kernel", std::string("CPU")},
                                 {"fallthrough", std::string("BackendSelect|ADInplaceOrView|AutogradCPU")}}));
    t.spans.push_back(make_span(b + 4, b + 3, Floor::Kernels, "add", at + 300, at + 700 * slow, 0,
                                {{"variant", std::string("optimized")}}));
    t.spans.push_back(make_span(b + 5, b + 4, Floor::Allocator, "cpu_alloc", at + 400, at + 500));
  }
  t.spans.push_back(make_span(100, 0, Floor::Kernels, "worker", 350, 450, 1));
  return t;
}

TEST(Story, OneStepDownAndOneUpPerSpanOfTheToldThread) {
  const trace::Trace t = two_calls();
  const Story s = build_story(t);
  ASSERT_EQ(s.steps.size(), 20u);  // 10 spans on thread 0, not the worker's
  ASSERT_EQ(s.roots.size(), 2u);
  const int expected_floors[] = {1, 2, 3, 5, 6, 5, 3, 2, 1, 1};
  for (size_t k = 0; k < 10; ++k) EXPECT_EQ(token_floor(s, k), expected_floors[k]) << "step " << k;
  EXPECT_TRUE(s.steps[0].down);
  EXPECT_FALSE(s.steps[9].down);
  EXPECT_EQ(s.steps[4].at_ns, 400);  // the allocator span's start
  EXPECT_EQ(s.steps[5].at_ns, 500);  // and its end
  EXPECT_EQ(s.self_ns[0], 3000 - 2600);
  EXPECT_EQ(s.depth[4], 4);
}

TEST(Story, FloorsAtAStep) {
  const trace::Trace t = two_calls();
  const Story s = build_story(t);
  auto v = floors_at(s, 2);  // down into dispatch
  EXPECT_EQ(v[1].state, FloorState::Active);
  EXPECT_EQ(v[3].state, FloorState::Active);
  EXPECT_EQ(v[5].state, FloorState::Ahead);
  EXPECT_EQ(v[4].state, FloorState::Skipped);
  // Why, from the spans' arguments: AutogradCPU fell through; the kernel ran a CPU loop.
  EXPECT_NE(v[4].skip_reason.find("its Autograd key fell through"), std::string::npos) << v[4].skip_reason;
  EXPECT_EQ(v[7].state, FloorState::Skipped);
  EXPECT_NE(v[7].skip_reason.find("CPU tensors go no deeper than floor 6"),
            std::string::npos);  // the building says why
  EXPECT_NE(v[7].skip_reason.find("optimized loop"), std::string::npos) << v[7].skip_reason;
  v = floors_at(s, 5);  // up out of the allocator
  EXPECT_EQ(v[6].state, FloorState::Visited);
  EXPECT_EQ(v[6].span, 4u);  // the span left, as the detail panel shows it
  EXPECT_EQ(v[5].state, FloorState::Active);
  v = floors_at(s, 6);  // up out of the kernel, back on the dispatcher's floor
  EXPECT_EQ(v[5].span, 3u);
  EXPECT_EQ(v[3].state, FloorState::Active);
  EXPECT_EQ(root_of_step(s, 12), 1u);
}

TEST(Story, WarmMedianLeavesTheFirstCallOut) {
  const trace::Trace t = two_calls();
  const Story s = build_story(t);
  const Timing root = timing_of(s, 0);
  EXPECT_EQ(root.warm_samples, 1);
  EXPECT_EQ(root.inclusive_ns, 1000);       // the second call's
  EXPECT_EQ(root.cold_inclusive_ns, 3000);  // the first call's
  const Timing alloc = timing_of(s, 4);
  EXPECT_EQ(alloc.inclusive_ns, 100);
}

// `for i in range(3): x + 1` as one statement: one root, its body three
// times. The first pass is cold, the others warm (Note [Cold and warm times]).
TEST(Story, RepeatsInsideOneCallAreWarmAfterTheFirst) {
  trace::Trace t;
  t.spans.push_back(make_span(1, 0, Floor::Python, "for i in range(3): x + 1", 0, 10000));
  const int64_t took[] = {3000, 500, 700};
  for (uint64_t k = 0; k < 3; ++k) {
    const int64_t at = 100 + 3100 * static_cast<int64_t>(k);
    t.spans.push_back(make_span(10 * k + 2, 1, Floor::Binding, "add", at, at + took[k]));
    t.spans.push_back(make_span(10 * k + 3, 10 * k + 2, Floor::Dispatch, "add", at + 10, at + took[k] - 10));
  }
  const Story s = build_story(t);
  ASSERT_EQ(s.roots.size(), 1u);
  for (size_t span : {size_t{1}, size_t{3}, size_t{5}}) {  // every binding "add", first or not
    const Timing add = timing_of(s, span);
    EXPECT_EQ(add.warm_samples, 2) << span;
    EXPECT_EQ(add.inclusive_ns, 600) << span;  // the median of 500 and 700
    EXPECT_EQ(add.cold_inclusive_ns, 3000) << span;
  }
  EXPECT_EQ(timing_of(s, 6).warm_samples, 2);  // the third pass's dispatch
  EXPECT_EQ(timing_of(s, 0).warm_samples, 0);  // the statement itself ran once: cold
}

// Three calls of one line whose first call took another path: the warm
// median of the two that match, and no cold time made up for the first
// (is_warm says which spans are warm).
TEST(Story, AFirstCallWithoutTheSpanHasNoColdTime) {
  trace::Trace t;
  t.spans.push_back(make_span(1, 0, Floor::Python, "f(x)", 0, 1000));
  t.spans.push_back(make_span(2, 1, Floor::Binding, "other", 100, 900));
  t.spans.push_back(make_span(3, 0, Floor::Python, "f(x)", 2000, 3000));
  t.spans.push_back(make_span(4, 3, Floor::Binding, "add", 2100, 2500));
  t.spans.push_back(make_span(5, 0, Floor::Python, "f(x)", 4000, 5000));
  t.spans.push_back(make_span(6, 5, Floor::Binding, "add", 4100, 4700));
  const Story s = build_story(t);
  ASSERT_EQ(s.roots.size(), 3u);
  const Timing add = timing_of(s, 3);
  EXPECT_EQ(add.warm_samples, 2);
  EXPECT_EQ(add.inclusive_ns, 500);  // the median of 400 and 600
  EXPECT_FALSE(add.cold_known);
  EXPECT_TRUE(timing_of(s, 0).cold_known);  // the roots match: the first is the cold one
  EXPECT_FALSE(is_warm(s, 0));
  EXPECT_TRUE(is_warm(s, 2));
  EXPECT_TRUE(is_warm(s, 3));
}

TEST(Story, EmptyAndOtherThreadOnlyTraces) {
  trace::Trace empty;
  EXPECT_TRUE(build_story(empty).steps.empty());
  auto v = floors_at(build_story(empty), 0);
  EXPECT_EQ(v[1].state, FloorState::Skipped);
}

// Note [Which thread runs a node] (engine.cpp): a backward node run on its
// device's thread is a root there; the engine's "backward" flow from the
// caller's waiting span makes it that span's child in the story.
TEST(Story, BackwardNodesOnADeviceThreadAreToldUnderTheCallersSpan) {
  trace::Trace t;
  t.spans.push_back(make_span(1, 0, Floor::Python, "loss.backward()", 0, 1000));
  t.spans.push_back(make_span(2, 1, Floor::Binding, "_run_backward", 10, 990));
  trace::Span node = make_span(3, 0, Floor::Autograd, "autograd::engine::evaluate_function: SumBackward0", 100, 400);
  node.thread = 1;
  trace::Span kernel = make_span(4, 3, Floor::Dispatch, "aten::expand", 150, 300);
  kernel.thread = 1;
  t.spans.push_back(node);
  t.spans.push_back(kernel);
  t.flows.push_back({2, 3, "backward"});
  const Story s = build_story(t);
  ASSERT_EQ(s.steps.size(), 8u) << "every span, down and up, the device thread's included";
  EXPECT_EQ(s.parent_index[2], 1u);
  EXPECT_EQ(s.self_ns[1], 980 - 300) << "the node's time is not the waiting span's own";
  t.flows.clear();
  EXPECT_EQ(build_story(t).steps.size(), 4u) << "without the flow, the other thread is not told";
}

TEST(Story, DeepNestingDoesNotRecurse) {
  trace::Trace t;
  const int depth = 200000;
  for (int i = 0; i < depth; ++i) {
    t.spans.push_back(make_span(i + 1, i, Floor::Kernels, "k", i, 2 * depth - i));
  }
  const Story s = build_story(t);
  EXPECT_EQ(s.steps.size(), 2u * depth);
  EXPECT_EQ(s.depth[depth - 1], depth - 1);
}

TEST(Playback, StepsAndPlays) {
  const trace::Trace t = two_calls();
  const Story s = build_story(t);
  Playback p;
  p.step_forward(s);
  p.step_forward(s);
  p.step_forward(s);
  p.step_back(s);
  EXPECT_EQ(p.step(), 2u);
  p.to_end(s);
  EXPECT_EQ(p.step(), 19u);
  p.step_forward(s);
  EXPECT_EQ(p.step(), 19u);  // stays at the end
  p.toggle(s);               // playing at the end restarts
  EXPECT_TRUE(p.playing);
  EXPECT_EQ(p.step(), 0u);
  p.advance(s, kTeachingStepSeconds * 2.5);
  EXPECT_EQ(p.step(), 2u);
  EXPECT_NEAR(p.fraction(), 0.5, 1e-9);
  p.step_back(s);  // mid-move: back to where the move started
  EXPECT_EQ(p.step(), 2u);
  EXPECT_FALSE(p.playing);
  p.playing = true;
  p.advance(s, 1e9);  // to the end, then stops
  EXPECT_EQ(p.step(), 19u);
  EXPECT_FALSE(p.playing);
}

TEST(Playback, RealTimeFollowsTheTraceClock) {
  const trace::Trace t = two_calls();
  const Story s = build_story(t);
  Playback p;
  p.pace = Pace::RealTime;
  // Steps 0 -> 1 are 100 ns apart: shorter than the minimum, so the minimum.
  EXPECT_DOUBLE_EQ(p.step_seconds(s, 0), kMinStepSeconds);
  // Step 9 (up from the first root at 3000) to 10 (down into the second at 10000): 7 us.
  EXPECT_DOUBLE_EQ(p.step_seconds(s, 9),
                   kMaxStepSeconds < 7 * kRealTimeSecondsPerUs ? kMaxStepSeconds : 7 * kRealTimeSecondsPerUs);
  p.faster();
  EXPECT_DOUBLE_EQ(p.step_seconds(s, 0), kMinStepSeconds / 2);
}

}  // namespace
}  // namespace descent::ui
