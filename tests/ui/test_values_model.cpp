// The values view's model (ui/values_model.h) without a window: the
// recorder's snapshots read from a trace's metadata, matched to the story's
// statements, each view's elements mapped to its storage's cells, and what an
// in-place write changed.
#include <gtest/gtest.h>

#include "tests/tracer/trace_test_util.h"
#include "ui/values_model.h"

namespace descent::ui {
namespace {

using trace::Floor;
using trace::test_util::make_span;

// What descent/_values.py records for
//   x = torch.arange(6.).reshape(2, 3); y = x.t(); x.add_(1)
// as three statements (the snapshot before them first).
const char* kSnapshots = R"js({"snapshots": [
 {"statement": "", "raised": false, "tensors": [], "storages": [], "left_out": 0},
 {"statement": "x = torch.arange(6.).reshape(2, 3)", "raised": false, "left_out": 0,
  "storages": [{"id": "cpu:0x40", "dtype": "float32", "itemsize": 4, "device": "cpu", "cells": 6,
                "values": ["0.0", "1.0", "2.0", "3.0", "4.0", "5.0"], "why": ""}],
  "tensors": [{"name": "x", "storage": "cpu:0x40", "sizes": [2, 3], "strides": [3, 1], "offset": 0, "version": 0,
               "requires_grad": false, "grad_fn": "", "base": "x._base"}]},
 {"statement": "y = x.t()", "raised": false, "left_out": 0,
  "storages": [{"id": "cpu:0x40", "dtype": "float32", "itemsize": 4, "device": "cpu", "cells": 6,
                "values": ["0.0", "1.0", "2.0", "3.0", "4.0", "5.0"], "why": ""}],
  "tensors": [{"name": "x", "storage": "cpu:0x40", "sizes": [2, 3], "strides": [3, 1], "offset": 0, "version": 0},
              {"name": "y", "storage": "cpu:0x40", "sizes": [3, 2], "strides": [1, 3], "offset": 0, "version": 0,
               "base": "x._base"}]},
 {"statement": "x[0].add_(1)", "raised": false, "left_out": 0,
  "storages": [{"id": "cpu:0x40", "dtype": "float32", "itemsize": 4, "device": "cpu", "cells": 6,
                "values": ["1.0", "2.0", "3.0", "3.0", "4.0", "5.0"], "why": ""}],
  "tensors": [{"name": "x", "storage": "cpu:0x40", "sizes": [2, 3], "strides": [3, 1], "offset": 0, "version": 1},
              {"name": "y", "storage": "cpu:0x40", "sizes": [3, 2], "strides": [1, 3], "offset": 0, "version": 1}]}
], "statements_left_out": 0})js";

// The three statements as root spans, with a floor-7 wait for the devices between the second and third
// (a root that is not a statement), each statement a span with one child.
trace::Trace three_statements(const char* snapshots = kSnapshots) {
  trace::Trace t;
  const char* names[] = {"x = torch.arange(6.).reshape(2, 3)", "y = x.t()", "x[0].add_(1)"};
  uint64_t id = 1;
  for (int k = 0; k < 3; ++k) {
    const int64_t at = 1000 * k;
    if (k == 2) t.spans.push_back(make_span(id++, 0, Floor::Streams, "synchronize", at - 200, at - 100));
    const uint64_t root = id++;
    t.spans.push_back(make_span(root, 0, Floor::Python, names[k], at, at + 500));
    t.spans.push_back(make_span(id++, root, Floor::Binding, "op", at + 100, at + 400));
  }
  if (snapshots) t.metadata["values.snapshots"] = snapshots;
  return t;
}

TEST(ValuesModel, SnapshotsAreReadAndMatchedToTheStatementsInOrder) {
  const trace::Trace t = three_statements();
  const Story s = build_story(t);
  const ValuesModel m = build_values(t, s);
  ASSERT_TRUE(m.error.empty()) << m.error;
  ASSERT_EQ(m.snapshots.size(), 4u);
  ASSERT_EQ(m.statement_span.size(), 3u);
  EXPECT_EQ(t.spans[m.statement_span[0]].name, "x = torch.arange(6.).reshape(2, 3)");
  EXPECT_EQ(t.spans[m.statement_span[2]].name, "x[0].add_(1)");  // past the synchronize root
  const ValueTensor* y = m.snapshots[2].tensor("y");
  ASSERT_NE(y, nullptr);
  EXPECT_EQ(y->strides, (std::vector<int64_t>{1, 3}));
  EXPECT_EQ(y->base, "x._base");
  EXPECT_EQ(m.snapshots[1].storages[0].values[5], "5.0");
}

TEST(ValuesModel, BeforeWhileTheStatementRunsAndAfterOnceItIsBack) {
  const trace::Trace t = three_statements();
  const Story s = build_story(t);
  const ValuesModel m = build_values(t, s);
  const size_t third = m.statement_span[2];
  const ValuesAt in = values_at(m, s, s.down_step[third] + 1);  // down into its child
  EXPECT_EQ(in.statement, 2u);
  EXPECT_FALSE(in.after_shown);
  EXPECT_EQ(in.shown(), &m.snapshots[2]);
  const ValuesAt back = values_at(m, s, s.up_step[third]);
  EXPECT_TRUE(back.after_shown);
  EXPECT_EQ(back.shown(), &m.snapshots[3]);
  // The wait between the statements shows what the second one left.
  const ValuesAt between = values_at(m, s, s.down_step[m.statement_span[2]] - 1);
  EXPECT_EQ(between.statement, 1u);
  EXPECT_TRUE(between.after_shown);
}

TEST(ValuesModel, AViewsElementsReadTheCellsItsStridesName) {
  ValueTensor t;
  t.sizes = {3, 2};
  t.strides = {1, 3};  // x.t() of a (2, 3)
  EXPECT_EQ(cells_of(t), (std::vector<int64_t>{0, 3, 1, 4, 2, 5}));
  t.sizes = {2};
  t.strides = {3};
  t.offset = 1;  // x[:, 1]
  EXPECT_EQ(cells_of(t), (std::vector<int64_t>{1, 4}));
  t.sizes = {4};
  t.strides = {0};
  t.offset = 0;  // ones(1).expand(4): one cell, four times
  EXPECT_EQ(cells_of(t), (std::vector<int64_t>{0, 0, 0, 0}));
  t.sizes = {};
  t.strides = {};
  t.offset = 2;  // a 0-dim tensor is one element
  EXPECT_EQ(cells_of(t), (std::vector<int64_t>{2}));
  t.sizes = {0, 3};
  t.strides = {3, 1};
  EXPECT_TRUE(cells_of(t).empty());
  t.sizes = {100, 100};
  t.strides = {100, 1};
  EXPECT_EQ(cells_of(t, 10).size(), 10u);
  EXPECT_EQ(dims_text({3}), "(3,)");
  EXPECT_EQ(dims_text({2, 3}), "(2, 3)");
}

TEST(ValuesModel, AnInPlaceWriteLightsTheCellsItChangedAndTheVersionsItBumped) {
  const trace::Trace t = three_statements();
  const ValuesModel m = build_values(t, build_story(t));
  const ValuesDiff d = diff_values(m.snapshots[2], m.snapshots[3]);
  ASSERT_EQ(d.storages.size(), 1u);
  EXPECT_FALSE(d.storages[0].fresh);
  EXPECT_EQ(d.storages[0].changed_count, 3);  // x[0]: cells 0, 1, 2
  EXPECT_EQ(d.storages[0].changed, (std::vector<bool>{true, true, true, false, false, false}));
  ASSERT_EQ(d.tensors.size(), 2u);
  EXPECT_TRUE(d.tensors[0].bumped);  // x and its view y share the counter
  EXPECT_TRUE(d.tensors[1].bumped);
  EXPECT_EQ(d.tensors[1].version_before, 0);
  // The view made by the second statement is new there, and writes nothing.
  const ValuesDiff d2 = diff_values(m.snapshots[1], m.snapshots[2]);
  EXPECT_EQ(d2.storages[0].changed_count, 0);
  EXPECT_FALSE(d2.tensors[0].fresh);
  EXPECT_TRUE(d2.tensors[1].fresh);
  // A storage that is new after a statement is new, not written.
  const ValuesDiff d1 = diff_values(m.snapshots[0], m.snapshots[1]);
  EXPECT_TRUE(d1.storages[0].fresh);
  EXPECT_EQ(d1.storages[0].changed_count, 0);
}

TEST(ValuesModel, ATraceWithoutValuesOrWithBrokenOnesSaysWhy) {
  const trace::Trace none = three_statements(nullptr);
  const ValuesModel a = build_values(none, build_story(none));
  EXPECT_TRUE(a.empty());
  EXPECT_NE(a.error.find("recorded no values"), std::string::npos) << a.error;
  const trace::Trace bad = three_statements(R"({"snapshots": [{"statement": )");
  const ValuesModel b = build_values(bad, build_story(bad));
  EXPECT_TRUE(b.empty());
  EXPECT_NE(b.error.find("could not be read"), std::string::npos) << b.error;
  const trace::Trace wrong = three_statements(R"({"snapshots": 3})");
  EXPECT_TRUE(build_values(wrong, build_story(wrong)).empty());
  // An empty story (nothing ran) shows the last snapshot.
  const Story empty;
  const ValuesModel m = build_values(three_statements(), empty);
  EXPECT_EQ(values_at(m, empty, 0).shown(), &m.snapshots.back());
}

}  // namespace
}  // namespace descent::ui
