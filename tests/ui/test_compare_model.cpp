// The compare view's model (ui/models.h): every op of each floor with its
// count, and a call that raised: the floor it stopped on, the exception's
// line, and PyTorch's own place for the check (Note [PyTorch's place for a
// failed check]), which the kernel's explanation cites too.
#include <gtest/gtest.h>

#include <algorithm>

#include "tests/tracer/trace_test_util.h"
#include "ui/explain.h"
#include "ui/models.h"

namespace descent::ui {
namespace {

using trace::Floor;
using trace::test_util::make_span;

const char* kMmError =
    "Traceback (most recent call last):\n  File \"<descent trace>\", line 1, in <module>\n"
    "RuntimeError: mat1 and mat2 shapes cannot be multiplied (2x3 and 2x3)\n";

// `a.mm(b)` with shapes that do not multiply: the kernel span records no variant (it stopped at its check), and
// a cpu_free of the unwinding comes after it.
trace::Trace failed_mm(bool kernel_ran = false) {
  trace::Trace t;
  t.spans.push_back(make_span(1, 0, Floor::Python, "a = descent.ones(2, 3)", 0, 100));
  t.spans.push_back(make_span(2, 0, Floor::Python, "a.mm(a)", 200, 1000));
  t.spans.push_back(make_span(3, 2, Floor::Binding, "mm", 210, 900));
  t.spans.push_back(make_span(4, 3, Floor::Dispatch, "aten::mm", 220, 800));
  std::vector<trace::SpanArg> args;
  if (kernel_ran) args = {{"variant", std::string("optimized")}};
  t.spans.push_back(make_span(5, 4, Floor::Kernels, "aten::mm", 230, 700, 0, args));
  t.spans.push_back(make_span(6, 3, Floor::Allocator, "cpu_free", 850, 860));
  return t;
}

TEST(CompareModel, EveryOpOfAFloorWithItsCount) {
  trace::Trace t;
  t.spans.push_back(make_span(1, 0, Floor::Python, "x", 0, 10000));
  const char* ops[] = {"aten::add", "aten::mul", "aten::add", "aten::sub", "aten::div",
                       "aten::exp", "aten::log", "aten::sin", "aten::add"};
  uint64_t id = 2;
  for (const char* op : ops) {
    t.spans.push_back(make_span(id, 1, Floor::Dispatch, op, 100 * int64_t(id), 100 * int64_t(id) + 50));
    ++id;
  }
  const std::array<FloorOps, 10> f = floor_ops(t, false);
  EXPECT_EQ(f[3].spans, 9);
  ASSERT_EQ(f[3].ops.size(), 7u);  // every distinct op, not the first four
  EXPECT_EQ(f[3].ops[0], (std::pair<std::string, int>{"aten::add", 3}));
  EXPECT_EQ(f[3].ops[6].first, "aten::sin");
  EXPECT_EQ(f[5].spans, 0);
  // PyTorch's profile: each op that calls no other counts its kernel on floor 5.
  const std::array<FloorOps, 10> k = floor_ops(t, true);
  EXPECT_TRUE(k[5].within_dispatch);
  EXPECT_EQ(k[5].ops[0], (std::pair<std::string, int>{"aten::add's kernel", 3}));
}

TEST(CompareModel, AFailedCallMarksTheFloorThatRaised) {
  const trace::Trace t = failed_mm();
  const Story s = build_story(t);
  const RaisedAt r = raised_at(s, kMmError);
  EXPECT_EQ(r.floor, 5);  // the kernel's check, not the allocator's free after it
  EXPECT_EQ(r.op, "aten::mm");
  EXPECT_EQ(r.message, "RuntimeError: mat1 and mat2 shapes cannot be multiplied (2x3 and 2x3)");
  EXPECT_EQ(raised_at(s, "").span, SIZE_MAX);  // nothing raised
  // A kernel that chose its loop ran to its end: the statement's Python raised after it.
  const trace::Trace later = failed_mm(true);
  const Story s2 = build_story(later);
  EXPECT_EQ(raised_at(s2, "ValueError: no\n").floor, 1);
  // A statement with nothing under it (1 / 0) raised on floor 1.
  trace::Trace div;
  div.spans.push_back(make_span(1, 0, Floor::Python, "1 / 0", 0, 100));
  const Story s3 = build_story(div);
  const RaisedAt z = raised_at(s3, "ZeroDivisionError: division by zero");
  EXPECT_EQ(z.floor, 1);
  EXPECT_EQ(z.message, "ZeroDivisionError: division by zero");
}

TEST(CompareModel, PyTorchsPlaceForTheCheckIsTheOpsOwn) {
  const PyTorchCheck mm = pytorch_check_of("aten::mm", "RuntimeError: mat1 and mat2 shapes cannot be multiplied");
  EXPECT_EQ(mm.file, "aten/src/ATen/native/LinearAlgebra.cpp");
  EXPECT_EQ(mm.function, "TORCH_META_FUNC(mm)");
  EXPECT_EQ(pytorch_check_of("aten::mv", "").function, "TORCH_META_FUNC(addmv)");
  EXPECT_EQ(pytorch_check_of("aten::dot", "").file, "aten/src/ATen/native/Blas.cpp");
  const PyTorchCheck add =
      pytorch_check_of("aten::add",
                       "RuntimeError: The size of tensor a (3) must match the size of tensor b (2) at non-singleton "
                       "dimension 1");
  EXPECT_EQ(add.file, "aten/src/ATen/ExpandUtils.cpp");
  EXPECT_EQ(pytorch_check_of("aten::sum",
                             "IndexError: Dimension out of range (expected to be in range of [-1, 0], "
                             "but got 3)")
                .file,
            "c10/core/WrapDimMinimal.cpp");
  EXPECT_TRUE(pytorch_check_of("aten::add", "").file.empty());  // an elementwise op: TensorIterator's, elsewhere
}

TEST(CompareModel, TheStoppedKernelsExplanationCitesTheMetaFunctionNotTensorIterator) {
  const trace::Trace t = failed_mm();
  const Explanation e = explain(t, 4);
  ASSERT_FALSE(e.pytorch.empty());
  EXPECT_EQ(e.pytorch[0].file, "aten/src/ATen/native/LinearAlgebra.cpp");
  EXPECT_EQ(e.pytorch[0].function.rfind("TORCH_META_FUNC(mm)", 0), 0u) << e.pytorch[0].function;
  for (const PyTorchPlace& p : e.pytorch) EXPECT_EQ(p.file.find("TensorIterator"), std::string::npos) << p.file;
}

}  // namespace
}  // namespace descent::ui
