// Cold and warm agree (issue 43): the floor, the detail panel, the timeline
// and the roofline take a span's word and time from one rule (timing_of and
// timing_text, Note [Cold and warm times] in ui/story.h). A second call in a
// line run once is warm with its own time, not "the median of 1 warm calls",
// and the first call is not given the second's time.
#include <gtest/gtest.h>

#include <string>

#include "tests/tracer/trace_test_util.h"
#include "ui/explain.h"
#include "ui/roofline.h"
#include "ui/story.h"

namespace descent::ui {
namespace {

using trace::Floor;
using trace::test_util::make_span;

// Root `name` at `at`, with `adds` calls of add under it (binding, then a
// kernel span of 48 bytes and 4 FLOPs), the k-th taking took[k] ns.
void add_line(trace::Trace& t, uint64_t& id, const char* name, int64_t at, std::vector<int64_t> took) {
  const uint64_t root = id++;
  int64_t end = at + 100;
  for (int64_t ns : took) end += ns + 100;
  t.spans.push_back(make_span(root, 0, Floor::Python, name, at, end));
  int64_t c = at + 100;
  for (int64_t ns : took) {
    const uint64_t b = id++;
    t.spans.push_back(make_span(b, root, Floor::Binding, "add", c, c + ns));
    t.spans.push_back(
        make_span(id++, b, Floor::Kernels, "aten::add", c + 10, c + ns - 10, 0,
                  {{"variant", std::string("optimized")}, {"bytes", int64_t{48}}, {"flops", int64_t{4}}}));
    c += ns + 100;
  }
  t.metadata["peak.cpu.bytes_per_s"] = "100000000000";
  t.metadata["peak.cpu.flops_per_s"] = "1000000000000";
  t.metadata["peak.cpu.how"] = "made up for the test";
}

std::vector<size_t> spans_named(const trace::Trace& t, const char* name) {
  std::vector<size_t> out;
  for (size_t i = 0; i < t.spans.size(); ++i)
    if (t.spans[i].name == name) out.push_back(i);
  return out;
}

std::string sentences(const trace::Trace& t, size_t i) {
  std::string text;
  for (const std::string& s : explain(t, i).sentences) text += s + "\n";
  return text;
}

// Every view's word for every span is the rule's: the timeline's label (temperature) and tooltip, the floor's
// line and the roofline's time.
void expect_views_agree(const trace::Trace& t, const Story& s) {
  for (size_t i = 0; i < t.spans.size(); ++i) {
    const Timing tm = timing_of(s, i);
    EXPECT_STREQ(temperature(s, i), time_word(tm)) << i;
    EXPECT_EQ(timing_text(tm).rfind(time_word(tm), 0), 0u) << timing_text(tm);
    if (t.spans[i].floor == Floor::Kernels) {
      const RooflinePoint p = roofline_of(s, i);
      ASSERT_TRUE(p.known);
      EXPECT_NEAR(p.seconds, tm.lead_inclusive_ns() * 1e-9, 1e-12) << i;
      EXPECT_EQ(p.warm, tm.leads_with_median()) << i;
    }
  }
}

TEST(ColdAndWarm, ASecondCallInALineRunOnceIsWarmWithItsOwnTime) {
  trace::Trace t;
  uint64_t id = 1;
  add_line(t, id, "z = x + 1 + 1", 0, {3000, 500});
  const Story s = build_story(t);
  const std::vector<size_t> adds = spans_named(t, "add"), kernels = spans_named(t, "aten::add");
  const Timing first = timing_of(s, adds[0]), second = timing_of(s, adds[1]);
  EXPECT_FALSE(first.warm);
  EXPECT_EQ(first.warm_samples, 0);
  EXPECT_EQ(first.lead_inclusive_ns(), 3000);  // its own time, not the second's
  EXPECT_EQ(timing_text(first), "cold 3.00 us inclusive, 20 ns self");
  EXPECT_TRUE(second.warm);
  EXPECT_EQ(second.warm_samples, 0);  // one later call: no median of one
  EXPECT_EQ(second.lead_inclusive_ns(), 500);
  EXPECT_EQ(timing_text(second).find("median"), std::string::npos) << timing_text(second);
  EXPECT_NE(timing_text(second).find("a repeat inside its line, its own time; cold first call 3.00 us"),
            std::string::npos)
      << timing_text(second);
  EXPECT_NE(sentences(t, kernels[0]).find("(a first call, cold, the kernel span's inclusive time)"), std::string::npos)
      << sentences(t, kernels[0]);
  EXPECT_NE(sentences(t, kernels[1]).find("(a repeat's own time, warm,"), std::string::npos)
      << sentences(t, kernels[1]);
  expect_views_agree(t, s);
}

TEST(ColdAndWarm, ALoopsLaterPassesLeadWithTheirMedianAndTheFirstWithItsOwnTime) {
  trace::Trace t;
  uint64_t id = 1;
  add_line(t, id, "for i in range(3): x + 1", 0, {3000, 500, 700});
  const Story s = build_story(t);
  const std::vector<size_t> adds = spans_named(t, "add");
  const Timing first = timing_of(s, adds[0]), third = timing_of(s, adds[2]);
  EXPECT_FALSE(first.warm);
  EXPECT_EQ(first.lead_inclusive_ns(), 3000);
  EXPECT_EQ(timing_text(first), "cold 3.00 us inclusive, 20 ns self  (the warm median of 2 passes: 600 ns)");
  EXPECT_TRUE(third.leads_with_median());
  EXPECT_EQ(third.lead_inclusive_ns(), 600);
  EXPECT_EQ(third.own_inclusive_ns, 700);
  EXPECT_NE(timing_text(third).find("(the warm median of 2 passes; cold first call 3.00 us)"), std::string::npos)
      << timing_text(third);
  expect_views_agree(t, s);
}

TEST(ColdAndWarm, ALineRunAgainLeadsWithItsWarmMedianOnItsWarmRuns) {
  trace::Trace t;
  uint64_t id = 1;
  add_line(t, id, "x + 1", 0, {3000});
  add_line(t, id, "x + 1", 10000, {500});
  add_line(t, id, "x + 1", 20000, {700});
  const Story s = build_story(t);
  const std::vector<size_t> adds = spans_named(t, "add");
  const Timing cold = timing_of(s, adds[0]), warm = timing_of(s, adds[1]);
  EXPECT_EQ(cold.warm_samples, 2);  // the state dump's warm_samples: the line has a warm median
  EXPECT_FALSE(cold.warm);
  EXPECT_EQ(cold.lead_inclusive_ns(), 3000);
  EXPECT_EQ(timing_text(cold), "cold 3.00 us inclusive, 20 ns self  (the warm median of 2 runs: 600 ns)");
  EXPECT_TRUE(warm.leads_with_median());
  EXPECT_EQ(warm.lead_inclusive_ns(), 600);
  EXPECT_NE(timing_text(warm).find("warm 600 ns inclusive"), std::string::npos) << timing_text(warm);
  // Run twice: the one warm run's time, not a median of one.
  trace::Trace two;
  id = 1;
  add_line(two, id, "x + 1", 0, {3000});
  add_line(two, id, "x + 1", 10000, {500});
  const Story s2 = build_story(two);
  const Timing second = timing_of(s2, spans_named(two, "add")[1]);
  EXPECT_NE(timing_text(second).find("(the warm run's time; cold first call 3.00 us)"), std::string::npos)
      << timing_text(second);
  expect_views_agree(t, s);
  expect_views_agree(two, s2);
}

}  // namespace
}  // namespace descent::ui
