// The roofline of the kernels' spans (Note [A roofline for every kernel span],
// floors/kernels/roofline.cpp): the bytes and FLOP each kernel records, and
// the peaks a trace carries for its devices.
#include <gtest/gtest.h>

#include <string>

#include "floors/kernels/kernels.h"
#include "floors/kernels/roofline.h"
#include "floors/streams/streams.h"
#include "kernel_test_util.h"
#include "tracer/trace.h"
#include "tracer/tracer.h"

namespace descent {
namespace {

using namespace testing_util;

const Device kSim{DeviceType::Sim, 0};
const Device kCuda{DeviceType::CUDA, 0};

// The bytes= and flops= of the first floor-5 span named `name`.
struct Work {
  int64_t bytes = -1, flops = -1;
};
Work work_of(const trace::Trace& t, const std::string& name) {
  for (const trace::Span& s : t.spans) {
    if (s.floor != trace::Floor::Kernels || s.name != name) continue;
    Work w;
    if (const auto* v = s.find_arg("bytes")) w.bytes = std::get<int64_t>(*v);
    if (const auto* v = s.find_arg("flops")) w.flops = std::get<int64_t>(*v);
    return w;
  }
  ADD_FAILURE() << "no kernel span " << name;
  return {};
}

TEST(Roofline, KernelsRecordTheBytesTheyMoveAndTheFlopsTheyDo) {
  for (Device d : {Device{}, kSim}) {
    const Tensor x = call(Op::_to_copy, make({4}, ScalarType::Float32, {1, 2, 3, 4}), IValue(), d);
    const Tensor a = call(Op::_to_copy, make({2, 3}, ScalarType::Float32, {1, 2, 3, 4, 5, 6}), IValue(), d);
    const Tensor b = call(Op::_to_copy, make({3, 5}, ScalarType::Float32, std::vector<double>(15, 1.0)), IValue(), d);
    const Tensor i = call(Op::_to_copy, make({4}, ScalarType::Int64, {1, 2, 3, 4}), IValue(), d);
    trace::start();
    call(Op::add, x, x, Scalar(int64_t{1}));  // 3 x 16 B, 4 additions
    call(Op::add, x, x, Scalar(2.0));         // and 4 multiplies by alpha
    call(Op::mul, i, i);                      // integers: no floating-point work
    call(Op::mm, a, b);                       // (6 + 15 + 10) x 4 B, 2 x 2 x 5 x 3 FLOP
    call(Op::sum, a, IValue());               // 24 B read, 4 written, 6 additions
    const trace::Trace t = trace::stop();
    int adds = 0;
    for (const trace::Span& s : t.spans) {
      if (s.floor != trace::Floor::Kernels || s.name != "aten::add") continue;
      EXPECT_EQ(std::get<int64_t>(*s.find_arg("bytes")), 48) << d.str();
      EXPECT_EQ(std::get<int64_t>(*s.find_arg("flops")), adds++ == 0 ? 4 : 8) << d.str();
    }
    EXPECT_EQ(adds, 2);
    EXPECT_EQ(work_of(t, "aten::mul").bytes, 96) << d.str();
    EXPECT_EQ(work_of(t, "aten::mul").flops, 0) << d.str();
    EXPECT_EQ(work_of(t, "aten::mm").bytes, (6 + 15 + 10) * 4) << d.str();
    EXPECT_EQ(work_of(t, "aten::mm").flops, 2 * 2 * 5 * 3) << d.str();
    EXPECT_EQ(work_of(t, "aten::sum").bytes, 28) << d.str();
    EXPECT_EQ(work_of(t, "aten::sum").flops, 6) << d.str();
  }
}

TEST(Roofline, ATraceCarriesThePeaksOfItsDevices) {
  const Tensor x = make({4}, ScalarType::Float32, {1, 2, 3, 4});
  const Tensor s = call(Op::_to_copy, x, IValue(), kSim);
  trace::start();
  call(Op::add, x, x, Scalar(int64_t{1}));
  call(Op::add, s, s, Scalar(int64_t{1}));
  streams::synchronize(kSim);
  trace::Trace t = trace::stop();
  kernels::add_peaks(t);
  for (const char* device : {"cpu", "sim:0"}) {
    const auto& m = t.metadata;
    ASSERT_TRUE(m.count(trace::roofline_metadata_key(device, "bytes_per_s"))) << device;
    EXPECT_GT(std::stod(m.at(trace::roofline_metadata_key(device, "bytes_per_s"))), 1e8) << device;
    EXPECT_NE(m.at(trace::roofline_metadata_key(device, "how")).find("measured"), std::string::npos);
  }
  EXPECT_NE(t.metadata.at(trace::roofline_metadata_key("sim:0", "how")).find("one host thread"), std::string::npos);
  EXPECT_FALSE(t.metadata.count(trace::roofline_metadata_key("cuda:0", "how")));
}

// On a GPU the peaks are read from the device: the H200's are about 67
// TFLOP/s in its FP32 units, about 1000 in its tensor cores, and 4.8 TB/s.
TEST(Roofline, ACudaDevicesPeaksAreReadFromIt) {
  if (streams::runtime(DeviceType::CUDA).device_count() == 0)
    GTEST_SKIP() << "no CUDA device: " << streams::runtime(DeviceType::CUDA).unavailable_reason();
  const kernels::Peak p = kernels::device_peak(kCuda);
  EXPECT_GT(p.bytes_per_s, 1e11);
  EXPECT_GT(p.flops_per_s, 1e12);
  EXPECT_NE(p.how.find("read from the device"), std::string::npos) << p.how;
  std::printf("cuda:0 peaks: %s\n", p.how.c_str());
}

}  // namespace
}  // namespace descent
