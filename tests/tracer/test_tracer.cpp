// Tests of the recording side (tracer.h) and the queries on a Trace.
//
// [SECTION] Helpers
// [SECTION] Recording
// [SECTION] Threads
// [SECTION] Queries: tree and structure
#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <set>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "tests/tracer/trace_test_util.h"
#include "tracer/trace.h"
#include "tracer/tracer.h"

namespace descent::trace {
namespace {

// [SECTION] Helpers -------------------------------------------------------------

using test_util::find;

void nest(int depth) {
  if (depth == 0) return;
  DESCENT_SPAN(Kernels, "level");
  nest(depth - 1);
}

// [SECTION] Recording ------------------------------------------------------------

TEST(Tracer, NestedSpansHaveParentsAndNest) {
  start();
  {
    DESCENT_SPAN(Python, "outer");
    {
      DESCENT_SPAN(Binding, "mid");
      { DESCENT_SPAN(Dispatch, "inner"); }
    }
    { DESCENT_SPAN(Binding, "sibling"); }
  }
  const Trace t = stop();
  ASSERT_EQ(t.spans.size(), 4u);
  const Span* outer = find(t, "outer");
  const Span* mid = find(t, "mid");
  const Span* inner = find(t, "inner");
  const Span* sibling = find(t, "sibling");
  ASSERT_TRUE(outer && mid && inner && sibling);
  EXPECT_EQ(outer->parent, 0u);
  EXPECT_EQ(mid->parent, outer->id);
  EXPECT_EQ(inner->parent, mid->id);
  EXPECT_EQ(sibling->parent, outer->id);
  EXPECT_EQ(outer->floor, Floor::Python);
  EXPECT_EQ(inner->floor, Floor::Dispatch);
  EXPECT_LE(outer->start_ns, mid->start_ns);
  EXPECT_LE(inner->end_ns, mid->end_ns);
  EXPECT_LE(mid->end_ns, sibling->start_ns);
  EXPECT_LE(sibling->end_ns, outer->end_ns);
  EXPECT_EQ(check_structure(t), "");
  std::set<uint64_t> ids;
  for (const Span& s : t.spans) {
    EXPECT_GT(s.id, 0u);
    ids.insert(s.id);
  }
  EXPECT_EQ(ids.size(), t.spans.size());
  for (size_t i = 1; i < t.spans.size(); ++i) EXPECT_LE(t.spans[i - 1].start_ns, t.spans[i].start_ns);
}

TEST(Tracer, TimesAreOnTheSteadyClock) {
  start();
  const int64_t before = now_ns();
  { DESCENT_SPAN(Kernels, "timed"); }
  const int64_t after = now_ns();
  const Trace t = stop();
  ASSERT_EQ(t.spans.size(), 1u);
  // The tick -> ns ratio is measured, so allow a little slack either side.
  EXPECT_GE(t.spans[0].start_ns, before - 50'000);
  EXPECT_LE(t.spans[0].end_ns, after + 50'000);
  EXPECT_GE(t.spans[0].duration_ns(), 0);
}

TEST(Tracer, ArgsRoundTripAndExtraArgsAreIgnored) {
  start();
  {
    ScopedSpan s(Floor::Kernels, "add");
    ASSERT_TRUE(s.active());
    s.arg("numel", int64_t{-42});
    s.arg("scale", 2.5);
    s.arg("contiguous", true);
    s.arg("device", intern(std::string("cpu:") + "0"));
    static const char* kFill[] = {"f4", "f5", "f6", "f7", "f8", "f9", "f10", "f11"};
    static_assert(std::size(kFill) >= kMaxArgs - 4);
    for (int k = 4; k < kMaxArgs; ++k) s.arg(kFill[k - 4], int64_t{k});
    s.arg("dropped", int64_t{7});  // beyond kMaxArgs
  }
  const Trace t = stop();
  ASSERT_EQ(t.spans.size(), 1u);
  const Span& s = t.spans[0];
  ASSERT_EQ(s.args.size(), static_cast<size_t>(kMaxArgs));
  EXPECT_EQ(std::get<int64_t>(*s.find_arg("numel")), -42);
  EXPECT_EQ(std::get<double>(*s.find_arg("scale")), 2.5);
  EXPECT_EQ(std::get<bool>(*s.find_arg("contiguous")), true);
  EXPECT_EQ(std::get<std::string>(*s.find_arg("device")), "cpu:0");
  EXPECT_EQ(s.find_arg("dropped"), nullptr);
}

TEST(Tracer, ArgsAddedAfterChildrenFindTheirSpanAcrossArgChunks) {
  // Arguments live apart from the spans (Note [Tracer hot path]): one added
  // to a parent after its children were recorded, and more arguments than an
  // argument chunk holds, must still land on the right spans, in order.
  const int kSpans = 12000;  // 3 arguments each: 36000, past two chunks of 16384
  start();
  {
    ScopedSpan parent(Floor::Dispatch, "parent");
    parent.arg("first", int64_t{1});
    for (int i = 0; i < kSpans; ++i) {
      ScopedSpan child(Floor::Kernels, "child");
      child.arg("i", int64_t{i});
      child.arg("half", double(i) / 2);
      child.arg("odd", i % 2 == 1);
    }
    parent.arg("after_children", "yes");
  }
  const Trace t = stop();
  ASSERT_EQ(t.spans.size(), size_t(kSpans) + 1);
  const Span* parent = find(t, "parent");
  ASSERT_TRUE(parent);
  ASSERT_EQ(parent->args.size(), 2u);
  EXPECT_EQ(parent->args[0].key, "first");
  EXPECT_EQ(std::get<std::string>(parent->args[1].value), "yes");
  int64_t expected = 0;
  for (const Span& s : t.spans) {
    if (s.name != "child") continue;
    ASSERT_EQ(s.args.size(), 3u);
    EXPECT_EQ(std::get<int64_t>(s.args[0].value), expected);
    EXPECT_EQ(std::get<double>(s.args[1].value), double(expected) / 2);
    EXPECT_EQ(std::get<bool>(s.args[2].value), expected % 2 == 1);
    ++expected;
  }
  EXPECT_EQ(expected, kSpans);
}

TEST(Tracer, TracingOffRecordsNothing) {
  (void)stop();  // make sure it is off
  EXPECT_FALSE(enabled());
  {
    ScopedSpan s(Floor::Kernels, "while_off");
    EXPECT_FALSE(s.active());
    s.arg("ignored", int64_t{1});
    record_complete_span(Floor::Device, "device_off", 1, 2);
  }
  EXPECT_EQ(begin_span(Floor::Kernels, "raw_off"), -1);
  start();
  const Trace t = stop();
  EXPECT_TRUE(t.spans.empty());
  // A second stop() returns an empty trace too.
  EXPECT_TRUE(stop().spans.empty());
}

TEST(Tracer, SpansLeftOpenAtStopAreClosed) {
  start();
  const SpanHandle outer = begin_span(Floor::Python, "left_open");
  ASSERT_GE(outer, 0);
  { DESCENT_SPAN(Kernels, "closed_child"); }
  const SpanHandle inner = begin_span(Floor::Kernels, "open_child");
  const Trace t = stop();
  const int64_t after_stop = now_ns();
  ASSERT_EQ(t.spans.size(), 3u);
  const Span* open = find(t, "left_open");
  const Span* open_child = find(t, "open_child");
  ASSERT_TRUE(open && open_child);
  EXPECT_GE(open->end_ns, open->start_ns);
  EXPECT_LE(open->end_ns, after_stop + 50'000);
  EXPECT_EQ(open_child->parent, open->id);
  EXPECT_EQ(check_structure(t), "");
  // Ending them after stop() is harmless, and the next recording starts clean.
  end_span(inner);
  end_span(outer);
  end_span(outer);
  start();
  { DESCENT_SPAN(Python, "fresh"); }
  const Trace t2 = stop();
  ASSERT_EQ(t2.spans.size(), 1u);
  EXPECT_EQ(t2.spans[0].parent, 0u);
}

TEST(Tracer, SnapshotHoldsTheSpansOfAWindowAndTheRecordingGoesOn) {
  EXPECT_THROW(snapshot(0), std::logic_error);  // no recording running
  start();
  const SpanHandle outer = begin_span(Floor::Python, "outer");
  { DESCENT_SPAN(Binding, "before"); }
  const int64_t since = now_ns();
  {
    DESCENT_SPAN(Binding, "inside");
    { DESCENT_SPAN(Dispatch, "inside_child"); }
  }
  const SpanHandle open = begin_span(Floor::Kernels, "still_open");
  const Trace window = snapshot(since);
  end_span(open);
  { DESCENT_SPAN(Binding, "after"); }
  end_span(outer);
  const Trace all = stop();
  ASSERT_EQ(window.spans.size(), 3u);
  const Span* inside = find(window, "inside");
  const Span* child = find(window, "inside_child");
  const Span* still_open = find(window, "still_open");
  ASSERT_TRUE(inside && child && still_open);
  EXPECT_EQ(inside->parent, 0u);  // its parent "outer" began before the window
  EXPECT_EQ(still_open->parent, 0u);
  EXPECT_EQ(child->parent, inside->id);
  EXPECT_GE(still_open->end_ns, still_open->start_ns);
  EXPECT_EQ(check_structure(window), "");
  EXPECT_GT(window.span_cost_ns, 0);
  // The recording went on: the full trace has everything, nested as recorded.
  ASSERT_EQ(all.spans.size(), 6u);
  EXPECT_EQ(find(all, "inside")->parent, find(all, "outer")->id);
  EXPECT_TRUE(find(all, "after") && find(all, "before"));
  EXPECT_EQ(check_structure(all), "");
}

TEST(Tracer, AWindowCountsOnlyTheSpansDroppedInsideIt) {
  const uint32_t saved = span_limit();
  set_span_limit(1);               // one chunk: 16384 spans
  EXPECT_EQ(dropped_spans(), 0u);  // no recording
  start();
  for (int i = 0; i < 16384 + 10; ++i) {
    DESCENT_SPAN(Kernels, "before");
  }
  EXPECT_EQ(dropped_spans(), 10u);
  const int64_t since = now_ns();
  const uint64_t dropped_before = dropped_spans();
  { DESCENT_SPAN(Kernels, "inside"); }  // dropped too: the buffer is full
  const Trace window = snapshot(since, dropped_before);
  EXPECT_EQ(window.spans.size(), 0u);
  ASSERT_EQ(window.metadata.count("tracer.dropped_spans"), 1u);
  EXPECT_EQ(window.metadata.at("tracer.dropped_spans"), "1");
  const Trace quiet = snapshot(now_ns(), dropped_spans());
  EXPECT_EQ(quiet.metadata.count("tracer.dropped_spans"), 0u);  // nothing dropped since
  const Trace tail = stop(since, dropped_before);               // stop() takes a window too
  EXPECT_EQ(tail.metadata.at("tracer.dropped_spans"), "1");
  set_span_limit(saved);
}

TEST(Tracer, CompleteSpansKeepTheirNanoseconds) {
  start();
  {
    DESCENT_SPAN(Launch, "launch");
    const int64_t now = now_ns();
    record_complete_span(Floor::Device, "kernel_on_device", now + 10, now + 1234);
  }
  const Trace t = stop();
  const Span* launch = find(t, "launch");
  const Span* dev = find(t, "kernel_on_device");
  ASSERT_TRUE(launch && dev);
  EXPECT_EQ(dev->parent, launch->id);
  EXPECT_EQ(dev->duration_ns(), 1224);
  EXPECT_EQ(dev->floor, Floor::Device);
}

TEST(Tracer, ManySpansAndDeepNestingCrossChunks) {
  constexpr int kSpans = 40000;  // more than two chunks
  constexpr int kDepth = 1000;   // deeper than the initial open stack
  start();
  for (int i = 0; i < kSpans; ++i) {
    DESCENT_SPAN(Kernels, "flat");
  }
  nest(kDepth);
  const Trace t = stop();
  ASSERT_EQ(t.spans.size(), static_cast<size_t>(kSpans + kDepth));
  EXPECT_EQ(check_structure(t), "");
  std::map<uint64_t, size_t> depth;  // ids grow in begin order: parents come first
  size_t deepest = 0;
  for (const Span& s : t.spans) {
    depth[s.id] = s.parent == 0 ? 0 : depth.at(s.parent) + 1;
    deepest = std::max(deepest, depth[s.id]);
  }
  EXPECT_EQ(deepest, static_cast<size_t>(kDepth - 1));
}

// Note [Dropped spans]: past the limit spans are counted, not recorded, and
// what was recorded still forms a tree (leaves past the limit just vanish;
// a root opened past it would leave its children at the top).
TEST(Tracer, SpansPastTheLimitAreDroppedAndCounted) {
  const uint32_t saved = span_limit();
  set_span_limit(1);  // clamped up to one chunk
  EXPECT_EQ(span_limit(), 16384u);
  start();
  {
    DESCENT_SPAN(Python, "root");
    for (int i = 0; i < 20000; ++i) {
      DESCENT_SPAN(Kernels, "leaf");
    }
  }
  Trace t = stop();
  set_span_limit(saved);
  EXPECT_EQ(t.spans.size(), 16384u);
  ASSERT_EQ(t.metadata.count("tracer.dropped_spans"), 1u);
  EXPECT_EQ(t.metadata.at("tracer.dropped_spans"), std::to_string(20001 - 16384));
  EXPECT_EQ(check_structure(t), "");

  start();  // a new recording starts with nothing dropped
  { DESCENT_SPAN(Kernels, "one"); }
  t = stop();
  EXPECT_EQ(t.spans.size(), 1u);
  EXPECT_EQ(t.metadata.count("tracer.dropped_spans"), 0u);
}

TEST(Tracer, SpanCostIsMeasured) {
  start();
  (void)stop();
  // Not a speed test: only that calibration produced a sane positive number.
  EXPECT_GT(span_cost_ns(), 0.0);
  EXPECT_LT(span_cost_ns(), 100'000.0);
}

TEST(Tracer, InternAndFloorNames) {
  const std::string a = "kernel";
  const char* p1 = intern(a);
  const char* p2 = intern(std::string("ker") + "nel");
  EXPECT_EQ(p1, p2);
  EXPECT_STREQ(p1, "kernel");
  EXPECT_NE(intern("other"), p1);
  EXPECT_STREQ(floor_name(Floor::None), "none");
  EXPECT_STREQ(floor_name(Floor::Python), "python");
  EXPECT_STREQ(floor_name(Floor::Dispatch), "dispatch");
  EXPECT_STREQ(floor_name(Floor::Device), "device");
}

// [SECTION] Threads ------------------------------------------------------------------

TEST(Tracer, ThreadsGetSeparateNumbersAndParents) {
  start();
  DESCENT_SPAN(Python, "main_root");
  std::vector<std::thread> workers;
  for (int w = 0; w < 2; ++w) {
    workers.emplace_back([w] {
      DESCENT_SPAN(Streams, w == 0 ? "worker0" : "worker1");
      { DESCENT_SPAN(Kernels, w == 0 ? "work0" : "work1"); }
    });
  }
  for (auto& th : workers) th.join();  // threads end before stop(): their spans survive
  { DESCENT_SPAN(Python, "main_child"); }
  const Trace t = stop();
  ASSERT_EQ(t.spans.size(), 6u);
  const Span* main_root = find(t, "main_root");
  ASSERT_TRUE(main_root);
  EXPECT_EQ(main_root->thread, 0u);  // the main thread registered first
  EXPECT_EQ(find(t, "main_child")->parent, main_root->id);
  std::set<uint32_t> worker_threads;
  for (int w = 0; w < 2; ++w) {
    const Span* root = find(t, w == 0 ? "worker0" : "worker1");
    const Span* work = find(t, w == 0 ? "work0" : "work1");
    ASSERT_TRUE(root && work);
    EXPECT_EQ(root->parent, 0u);  // not a child of the main thread's open span
    EXPECT_EQ(work->parent, root->id);
    EXPECT_EQ(work->thread, root->thread);
    worker_threads.insert(root->thread);
  }
  EXPECT_EQ(worker_threads, (std::set<uint32_t>{1, 2}));
  EXPECT_EQ(check_structure(t), "");
  for (size_t i = 1; i < t.spans.size(); ++i) EXPECT_LE(t.spans[i - 1].thread, t.spans[i].thread);
}

// recorded_spans() is read by another thread while one records (the app's
// status line): it grows as spans are recorded, counts every thread's, and
// says 0 when no recording runs.
TEST(Tracer, RecordedSpansCountWhileARecordingRuns) {
  EXPECT_EQ(recorded_spans(), 0u);
  start();
  EXPECT_EQ(recorded_spans(), 0u);  // buffers of an earlier recording are not counted
  std::atomic<int> phase{0};
  std::thread worker([&] {
    for (int i = 0; i < 100; ++i) {
      DESCENT_SPAN(Kernels, "first");
    }
    phase = 1;
    while (phase.load() != 2) std::this_thread::yield();
    for (int i = 0; i < 20000; ++i) {  // across a chunk
      DESCENT_SPAN(Kernels, "second");
    }
  });
  while (phase.load() != 1) std::this_thread::yield();
  EXPECT_EQ(recorded_spans(), 100u);
  { DESCENT_SPAN(Python, "here"); }
  EXPECT_EQ(recorded_spans(), 101u);
  phase = 2;
  worker.join();
  EXPECT_EQ(recorded_spans(), 20101u);
  const Trace t = stop();
  EXPECT_EQ(t.spans.size(), 20101u);
  EXPECT_EQ(recorded_spans(), 0u);
}
// [SECTION] Queries: tree and structure -------------------------------------------

Trace small_trace() {
  Trace t;
  t.spans.push_back({1, 0, Floor::Python, "descent.ones(2, 2) + 1", 0, 12'300, 0, {}});
  t.spans.push_back({2, 1, Floor::Binding, "add", 100, 1'200, 0, {}});
  t.spans.push_back({3, 2, Floor::Dispatch, "add", 200, 600, 0, {{"keyset", std::string("CPU")}, {"n", int64_t{4}}}});
  t.spans.push_back({4, 1, Floor::Allocator, "cpu_alloc", 2'000, 2'500, 0, {{"hit", true}, {"ratio", 0.125}}});
  return t;
}

TEST(TraceQueries, ChildrenAndFindArg) {
  const Trace t = small_trace();
  EXPECT_EQ(children_of(t, 0), (std::vector<size_t>{0}));
  EXPECT_EQ(children_of(t, 1), (std::vector<size_t>{1, 3}));
  EXPECT_EQ(children_of(t, 4), (std::vector<size_t>{}));
  EXPECT_EQ(std::get<std::string>(*t.spans[2].find_arg("keyset")), "CPU");
  EXPECT_EQ(t.spans[2].find_arg("missing"), nullptr);
}

TEST(TraceQueries, FormatTreeShowsNamesIndentArgsAndDurations) {
  const std::string tree = format_tree(small_trace());
  EXPECT_NE(tree.find("[1 python   ] descent.ones(2, 2) + 1"), std::string::npos) << tree;
  EXPECT_NE(tree.find("\n  [2 binding  ] add"), std::string::npos) << tree;
  EXPECT_NE(tree.find("\n    [3 dispatch ] add  keyset=CPU n=4"), std::string::npos) << tree;
  EXPECT_NE(tree.find("hit=true ratio=0.125"), std::string::npos) << tree;
  EXPECT_NE(tree.find("12.3 us"), std::string::npos) << tree;
  EXPECT_NE(tree.find("1.10 us"), std::string::npos) << tree;
  EXPECT_NE(tree.find("400 ns"), std::string::npos) << tree;
  EXPECT_EQ(std::count(tree.begin(), tree.end(), '\n'), 4);
}

TEST(TraceQueries, CheckStructureAcceptsASoundTrace) { EXPECT_EQ(check_structure(small_trace()), ""); }

TEST(TraceQueries, CheckStructureCatchesAChildOutsideItsParent) {
  Trace t = small_trace();
  t.spans[2].end_ns = 5'000;  // dispatch "add" now ends after binding "add"
  const std::string msg = check_structure(t);
  EXPECT_NE(msg.find("span 3"), std::string::npos) << msg;
  EXPECT_NE(msg.find("not inside"), std::string::npos) << msg;
}

TEST(TraceQueries, CheckStructureCatchesAMissingParentAndOtherFaults) {
  Trace t = small_trace();
  t.spans[3].parent = 99;
  std::string msg = check_structure(t);
  EXPECT_NE(msg.find("span 4 \"cpu_alloc\""), std::string::npos) << msg;
  EXPECT_NE(msg.find("parent 99 does not exist"), std::string::npos) << msg;

  t = small_trace();
  t.spans[3].id = 2;
  EXPECT_NE(check_structure(t).find("duplicate id"), std::string::npos);
  t = small_trace();
  t.spans[1].thread = 1;
  EXPECT_NE(check_structure(t).find("thread"), std::string::npos);
  t = small_trace();
  t.spans[3].end_ns = 1'000;
  EXPECT_NE(check_structure(t).find("ends before it starts"), std::string::npos);
  t = small_trace();
  t.spans[0].parent = 3;  // 1 -> 3 -> 2 -> 1
  EXPECT_NE(check_structure(t).find("cycle"), std::string::npos);
  EXPECT_NE(format_tree(t).find("not reachable"), std::string::npos);
}

}  // namespace
}  // namespace descent::trace
