// Where a kernel span sits on its device's roofline (ui/roofline.h, Note [A
// roofline for every kernel span]): the bound a point meets, from traces made
// by hand and from real ones on the CPU and sim:0, and what the explanation
// says of it.
#include <gtest/gtest.h>

#include <string>

#include <algorithm>

#include "floors/dispatch/dispatcher.h"
#include "floors/kernels/roofline.h"
#include "floors/streams/streams.h"
#include "ui/explain.h"
#include "ui/roofline.h"
#include "ui/story.h"
#include "tests/kernels/kernel_test_util.h"

namespace descent::ui {
namespace {

using trace::Floor;

// A trace of one kernel span of `bytes` and `flops` that took `ns` on a
// device whose peaks are 100 GB/s and 1 TFLOP/s (a ridge at 10 FLOP per byte).
trace::Trace one_kernel(int64_t bytes, int64_t flops, int64_t ns) {
  trace::Trace t;
  trace::Span s;
  s.id = 1;
  s.floor = Floor::Kernels;
  s.name = "aten::mm";
  s.start_ns = 1000;
  s.end_ns = 1000 + ns;
  s.args = {{"variant", std::string("optimized")}, {"bytes", bytes}, {"flops", flops}};
  t.spans.push_back(s);
  t.metadata["peak.cpu.bytes_per_s"] = "100000000000";
  t.metadata["peak.cpu.flops_per_s"] = "1000000000000";
  t.metadata["peak.cpu.how"] = "made up for the test";
  return t;
}

RooflinePoint point(const trace::Trace& t) { return roofline_of(build_story(t), 0); }

TEST(RooflinePoint, TheBoundIsReadFromTheIntensityAndTheShareOfTheRoof) {
  // 1 MB and 100 MFLOP (100 FLOP per byte, above the ridge) in 200 us: 0.5 TFLOP/s, half the peak.
  RooflinePoint p = point(one_kernel(1'000'000, 100'000'000, 200'000));
  ASSERT_TRUE(p.known);
  EXPECT_EQ(p.bound, RooflinePoint::Bound::Compute);
  EXPECT_NEAR(p.fraction(), 0.5, 1e-9);
  EXPECT_NEAR(p.ridge(), 10, 1e-9);
  // 1 MB and 1 MFLOP (1 FLOP per byte, below the ridge) in 20 us: 50 GB/s, half the bandwidth.
  p = point(one_kernel(1'000'000, 1'000'000, 20'000));
  EXPECT_EQ(p.bound, RooflinePoint::Bound::Memory);
  EXPECT_NEAR(p.fraction(), 0.5, 1e-9);
  // A copy (no arithmetic) measured against the bandwidth alone.
  p = point(one_kernel(1'000'000, 0, 20'000));
  EXPECT_EQ(p.bound, RooflinePoint::Bound::Memory);
  EXPECT_NEAR(p.fraction(), 0.5, 1e-9);
  // 48 B in 5 us: a millionth of the roof.
  p = point(one_kernel(48, 4, 5'000));
  EXPECT_EQ(p.bound, RooflinePoint::Bound::Overhead);
  EXPECT_LT(p.fraction(), 1e-3);
}

TEST(RooflinePoint, NoPointWithoutTheWorkOrTheDevicesPeaks) {
  trace::Trace t = one_kernel(1000, 10, 100);
  t.metadata.clear();  // a trace from before descent kept the peaks
  EXPECT_FALSE(point(t).known);
  t = one_kernel(1000, 10, 100);
  t.spans[0].args.resize(1);  // a kernel that recorded no work (a view)
  EXPECT_FALSE(point(t).known);
}

// A real 4-element add is overhead-bound on the CPU and on sim:0, where its
// time is the device span's, and the explanation says so.
TEST(RooflinePoint, ATinyAddIsOverheadBoundOnEveryDevice) {
  for (Device d : {Device{}, Device{DeviceType::Sim, 0}}) {
    const Tensor x = call(Op::_to_copy, testing_util::make({4}, ScalarType::Float32, {1, 2, 3, 4}), IValue(), d);
    trace::start();
    call(Op::add, x, x, Scalar(int64_t{1}));
    if (d.type != DeviceType::CPU) streams::synchronize(d);
    trace::Trace t = trace::stop();
    kernels::add_peaks(t);
    const Story s = build_story(t);
    size_t k = SIZE_MAX;
    for (size_t i = 0; i < t.spans.size(); ++i)
      if (t.spans[i].floor == Floor::Kernels && t.spans[i].name == "aten::add") k = i;
    ASSERT_NE(k, SIZE_MAX);
    const RooflinePoint p = roofline_of(s, k);
    ASSERT_TRUE(p.known) << d.str();
    EXPECT_EQ(p.device, d.str());
    EXPECT_EQ(p.on_device_clock, d.type != DeviceType::CPU);
    EXPECT_EQ(p.bound, RooflinePoint::Bound::Overhead) << d.str() << ": " << p.fraction();
    const Explanation e = explain(t, k);
    std::string text;
    for (const std::string& sentence : e.sentences) text += sentence + "\n";
    EXPECT_NE(text.find("overhead-bound"), std::string::npos) << text;
    EXPECT_NE(std::find(e.notes.begin(), e.notes.end(), "A roofline for every kernel span"), e.notes.end());
  }
}

}  // namespace
}  // namespace descent::ui
