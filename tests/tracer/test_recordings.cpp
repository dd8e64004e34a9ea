// Tests of what a recording holds beyond its spans: span handles across
// recordings, flows between threads (parallel_for's chunks), the clock, and
// the warm medians of repeated runs.
//
// [SECTION] Helpers
// [SECTION] Span handles across recordings
// [SECTION] Flows
// [SECTION] The clock
// [SECTION] Warm medians
#include <gtest/gtest.h>

#include <atomic>
#include <set>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "floors/kernels/cpu/parallel.h"
#include "tests/tracer/trace_test_util.h"
#include "tracer/trace.h"
#include "tracer/tracer.h"

namespace descent::trace {
namespace {

// [SECTION] Helpers -------------------------------------------------------------

using test_util::find;

// A floor-1 span (the repeated statements below are lines of Python).
Span make_span(uint64_t id, uint64_t parent, const char* name, int64_t start, int64_t end, uint32_t thread = 0) {
  return test_util::make_span(id, parent, Floor::Python, name, start, end, thread);
}

// [SECTION] Span handles across recordings ------------------------------------------

TEST(SpanHandles, ASpanLeftOpenAcrossStopAndStartCannotCloseANewOne) {
  start();
  const SpanHandle stale = begin_span(Floor::Python, "old");
  ASSERT_GE(stale, 0);
  (void)stop();
  start();
  const SpanHandle fresh = begin_span(Floor::Python, "new");  // the same index in the emptied buffer
  ASSERT_GE(fresh, 0);
  EXPECT_NE(fresh, stale);
  end_span(stale);                      // must match nothing
  add_arg(stale, "stale", int64_t{1});  // nor add an argument to the new span
  { DESCENT_SPAN(Kernels, "child"); }   // opened after: still the new span's child
  const int64_t before_end = now_ns();
  end_span(fresh);
  const Trace t = stop();
  ASSERT_EQ(t.spans.size(), 2u);
  const Span* s = find(t, "new");
  const Span* child = find(t, "child");
  ASSERT_TRUE(s && child);
  EXPECT_TRUE(s->args.empty());
  EXPECT_EQ(child->parent, s->id);
  EXPECT_GE(s->end_ns, before_end);  // closed by its own end_span, not by the stale one
  EXPECT_EQ(check_structure(t), "");
}

// [SECTION] Flows ----------------------------------------------------------------

TEST(Flows, AddFlowJoinsSpansOfTwoThreads) {
  start();
  SpanRef from;
  {
    ScopedSpan caller(Floor::Kernels, "caller");
    from = span_ref(caller.handle());
    std::thread([&] {
      ScopedSpan worker(Floor::Kernels, "worker");
      add_flow(from, span_ref(worker.handle()), "test");
    }).join();
  }
  add_flow(from, SpanRef{}, "invalid");  // ignored
  const Trace t = stop();
  const Span* caller = find(t, "caller");
  const Span* worker = find(t, "worker");
  ASSERT_TRUE(caller && worker);
  EXPECT_NE(caller->thread, worker->thread);
  ASSERT_EQ(t.flows.size(), 1u);
  EXPECT_EQ(t.flows[0], (Flow{caller->id, worker->id, "test"}));
  // A flow of an old recording is not carried into the next one.
  start();
  add_flow(from, from, "stale");
  { DESCENT_SPAN(Python, "next"); }
  EXPECT_TRUE(stop().flows.empty());
}

TEST(Flows, ParallelForChunksOnWorkersAreJoinedToTheirLoop) {
  const int saved = kernels::get_num_threads();
  kernels::set_num_threads(2);
  constexpr int64_t kLength = 64 * kernels::kGrainSize;  // long enough for every chunk to be one grain
  std::atomic<int64_t> sum{0};
  std::set<std::thread::id> threads;
  std::mutex mutex;
  Trace t;
  // A worker may be slow to wake and leave every chunk to the caller: try a few times.
  for (int attempt = 0; attempt < 20 && t.flows.empty(); ++attempt) {
    start();
    kernels::parallel_for(0, kLength, kernels::kGrainSize, [&](int64_t b, int64_t e) {
      sum += e - b;
      std::this_thread::sleep_for(std::chrono::microseconds(200));  // leaves chunks for the worker
      std::lock_guard lock(mutex);
      threads.insert(std::this_thread::get_id());
    });
    t = stop();
  }
  kernels::set_num_threads(saved);
  const Span* loop = find(t, "parallel_for");
  ASSERT_TRUE(loop);
  ASSERT_FALSE(t.flows.empty());
  size_t chunks = 0;
  int64_t covered = 0;
  for (const Span& s : t.spans) {
    if (s.name != "parallel_for chunk") continue;
    ++chunks;
    const auto* b = std::get_if<int64_t>(s.find_arg("begin"));
    const auto* e = std::get_if<int64_t>(s.find_arg("end"));
    ASSERT_TRUE(b && e);
    covered += *e - *b;
  }
  EXPECT_EQ(covered, kLength);  // the last attempt's chunks cover the loop exactly once
  EXPECT_EQ(chunks, 8u);        // 2 threads x 4 chunks each
  const SpanIndex index(t);
  for (const Flow& f : t.flows) {
    EXPECT_EQ(f.from, loop->id);
    EXPECT_EQ(f.name, "parallel_for");
    const size_t to = index.find(f.to);
    ASSERT_NE(to, SIZE_MAX);
    EXPECT_EQ(t.spans[to].name, "parallel_for chunk");
    EXPECT_NE(t.spans[to].thread, loop->thread);  // only workers' chunks get an arrow
    EXPECT_EQ(t.spans[to].parent, 0u);
  }
  EXPECT_EQ(check_structure(t), "");
  // The export draws them: one "s" and one "f" per flow, ids resolved.
  const std::string json = to_chrome_json(t);
  const Trace back = from_chrome_json(json);
  EXPECT_EQ(back.flows.size(), t.flows.size());
}

// [SECTION] The clock --------------------------------------------------------------

TEST(Clock, TheTraceSaysWhichClockTimedIt) {
  start();
  { DESCENT_SPAN(Python, "timed"); }
  const Trace t = stop();
  const std::string& clock = t.metadata.at("tracer.clock");
  EXPECT_TRUE(clock == "tsc (invariant)" || clock == "steady_clock") << clock;
#if !defined(__x86_64__)
  EXPECT_EQ(clock, "steady_clock");
#endif
  EXPECT_GE(t.spans.at(0).duration_ns(), 0);
}

// [SECTION] Warm medians -------------------------------------------------------------

// Three runs of one statement "s" with a child "c": durations 1000/100 cold,
// then 300/30 and 500/50.
Trace three_runs(double span_cost_ns) {
  Trace t;
  t.span_cost_ns = span_cost_ns;
  t.spans = {make_span(1, 0, "s", 0, 1000),
             make_span(2, 1, "c", 10, 110),
             make_span(3, 0, "s", 2000, 2300),
             make_span(4, 3, "c", 2010, 2040),
             make_span(5, 0, "s", 3000, 3500),
             make_span(6, 5, "c", 3010, 3060),
             make_span(7, 0, "worker chunk", 3100, 3200, 1)};
  return t;
}

TEST(WarmMedians, TheLastRunIsTimedByTheWarmRunsWithTheTracersCostTakenOut) {
  const Trace t = three_runs(10);
  const std::vector<int64_t> corrected = corrected_durations(t);
  EXPECT_EQ(corrected[0], 1000 - 2 * 10);  // itself and its child
  EXPECT_EQ(corrected[1], 100 - 10);
  const std::vector<WarmTime> w = warm_medians(t, 3);
  ASSERT_EQ(w.size(), t.spans.size());
  EXPECT_EQ(w[0].warm_ns, -1);  // not the last run's
  EXPECT_EQ(w[4].warm_samples, 2);
  EXPECT_EQ(w[4].warm_ns, (280 + 480) / 2);
  EXPECT_EQ(w[4].cold_ns, 980);
  EXPECT_EQ(w[5].warm_ns, (20 + 40) / 2);
  EXPECT_EQ(w[5].cold_ns, 90);
  const std::string text = format_tree_repeated(t, 3);
  EXPECT_NE(text.find("the last of 3 runs"), std::string::npos) << text;
  EXPECT_NE(text.find("380 ns"), std::string::npos) << text;
  EXPECT_NE(text.find("980 ns"), std::string::npos) << text;
  EXPECT_NE(text.find("1 spans on other threads"), std::string::npos) << text;
}

TEST(WarmMedians, ASpanCostsItselfOnlyThePartBetweenItsClockReads) {
  Trace t = three_runs(10);
  t.metadata["tracer.span_self_cost_ns"] = "4";
  t.metadata["tracer.arg_cost_ns"] = "3";
  t.spans[1].args = {{"k", int64_t{1}}};
  std::vector<int64_t> corrected = corrected_durations(t);
  EXPECT_EQ(corrected[1], 100 - 4 - 3);        // its own part of a span, and its argument
  EXPECT_EQ(corrected[0], 1000 - 4 - 10 - 3);  // its own part, the whole of its child's span, the child's argument
  // A statement's own span (a floor-1 root) costs itself what descent.tracing measured.
  t.metadata["tracer.statement_self_cost_ns"] = "50";
  corrected = corrected_durations(t);
  EXPECT_EQ(corrected[0], 1000 - 50 - 10 - 3);
  EXPECT_EQ(corrected[1], 100 - 4 - 3);
}

TEST(WarmMedians, ATraceSavedBeforeTheSelfCostsKeepsItsCorrection) {
  Trace t = three_runs(10);
  t.metadata["tracer.statement_cost_ns"] = "20";  // the excess of a statement over a whole span
  const std::vector<int64_t> corrected = corrected_durations(t);
  EXPECT_EQ(corrected[0], 1000 - (10 + 20) - 10);
  EXPECT_EQ(corrected[1], 100 - 10);
}

TEST(WarmMedians, StartMeasuresWhatASpanCostsItself) {
  start();
  { ScopedSpan s(Floor::Python, "one"); }
  const Trace t = stop();
  const double self = std::stod(t.metadata.at("tracer.span_self_cost_ns"));
  EXPECT_GT(self, 0);
  EXPECT_GT(t.span_cost_ns, 0);
  EXPECT_GT(std::stod(t.metadata.at("tracer.arg_cost_ns")), 0);
}

TEST(WarmMedians, ACostLargerThanTheSpanFloorsAtZero) {
  const std::vector<int64_t> corrected = corrected_durations(three_runs(1000));
  for (int64_t ns : corrected) EXPECT_EQ(ns, 0);
}

TEST(WarmMedians, RunsThatDoNotSplitTheRootsAreRefused) {
  const Trace t = three_runs(0);
  EXPECT_THROW(warm_medians(t, 2), std::invalid_argument);
  EXPECT_THROW(warm_medians(t, 0), std::invalid_argument);
  EXPECT_EQ(warm_medians(t, 1)[4].cold_ns, 500);  // one run: its own time, cold
}

TEST(WarmMedians, ARunThatWentAnotherWayHasNoMatch) {
  Trace t = three_runs(0);
  t.spans[3].name = "other";  // run 2's child differs
  const std::vector<WarmTime> w = warm_medians(t, 3);
  EXPECT_EQ(w[5].warm_samples, 1);
  EXPECT_EQ(w[5].warm_ns, 50);
}

}  // namespace
}  // namespace descent::trace
