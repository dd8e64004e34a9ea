// CUPTI on a real GPU (Note [Device activity from CUPTI] in tracer/cupti.cpp):
// a kernel and a copy, launched inside traced spans with CUPTI's external
// correlation pushed, come back as device spans on the host clock, inside the
// host's window around them, joined to their launch. Built only with the CUDA
// toolkit; skipped where no device is usable or CUPTI is refused.
#include <gtest/gtest.h>

#include <cuda_runtime_api.h>

#include <string>
#include <vector>

#include "tests/tracer/cupti_test_kernel.h"
#include "tests/tracer/trace_test_util.h"
#include "tracer/cupti.h"
#include "tracer/trace.h"
#include "tracer/tracer.h"

namespace descent::trace {
namespace {

using test_util::find;

constexpr int kElements = 1 << 20;

// Skips the test unless a CUDA device is usable.
#define SKIP_WITHOUT_DEVICE()                                      \
  do {                                                             \
    int devices = 0;                                               \
    const cudaError_t e = cudaGetDeviceCount(&devices);            \
    if (e != cudaSuccess || devices == 0) {                        \
      cudaGetLastError();                                          \
      GTEST_SKIP() << "no CUDA device: " << cudaGetErrorString(e); \
    }                                                              \
  } while (0)

// Starts a recording; skips (after stopping it) when CUPTI is not collecting.
#define START_OR_SKIP()                                               \
  do {                                                                \
    start();                                                          \
    if (!cupti::active()) {                                           \
      const Trace t = stop();                                         \
      EXPECT_TRUE(t.metadata.contains("device.timing"));              \
      GTEST_SKIP() << "CUPTI is not collecting: " << cupti::status(); \
    }                                                                 \
  } while (0)

std::vector<const Span*> device_spans(const Trace& t, const std::string& name_prefix) {
  std::vector<const Span*> out;
  for (const Span& s : t.spans) {
    if (s.floor == Floor::Device && s.name.rfind(name_prefix, 0) == 0) out.push_back(&s);
  }
  return out;
}

int64_t int_arg(const Span& s, const char* key) {
  const ArgValue* v = s.find_arg(key);
  return v && std::holds_alternative<int64_t>(*v) ? std::get<int64_t>(*v) : -1;
}

bool joined(const Trace& t, const Span& from, const Span& to) {
  for (const Flow& f : t.flows) {
    if (f.from == from.id && f.to == to.id && f.name == "ac2g") return true;
  }
  return false;
}

// The checks both tests make on one device span and its launch.
void expect_inside(const Trace& t, const Span& work, const Span& launch, const Span& sync, uint64_t correlation) {
  const std::string times = "launch [" + std::to_string(launch.start_ns) + ", " + std::to_string(launch.end_ns) +
                            "], device [" + std::to_string(work.start_ns) + ", " + std::to_string(work.end_ns) +
                            "], synchronize ends " + std::to_string(sync.end_ns) + "\n" + format_tree(t);
  EXPECT_GT(work.duration_ns(), 0) << times;
  EXPECT_GE(work.start_ns, launch.start_ns) << times;
  EXPECT_LE(work.end_ns, sync.end_ns) << times;
  EXPECT_EQ(int_arg(work, "correlation"), static_cast<int64_t>(correlation));
  EXPECT_EQ(int_arg(launch, "correlation"), static_cast<int64_t>(correlation));
  EXPECT_TRUE(joined(t, launch, work)) << times;
  EXPECT_EQ(t.metadata.at("device.timing").rfind("cupti", 0), 0u) << t.metadata.at("device.timing");
  EXPECT_NE(t.metadata.at("device.clock").find("cuda:"), std::string::npos);
  EXPECT_NE(t.metadata.at("device.clock").find("CUPTI"), std::string::npos);
  EXPECT_EQ(check_structure(t), "");
}

TEST(Cupti, AKernelsDeviceSpanLiesBetweenItsLaunchAndTheSynchronize) {
  SKIP_WITHOUT_DEVICE();
  float* p = nullptr;
  ASSERT_EQ(cudaMalloc(reinterpret_cast<void**>(&p), kElements * sizeof(float)), cudaSuccess);
  ASSERT_EQ(descent_test_fill(p, kElements, 0.0f, nullptr), 0);  // loads the module before the recording
  ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);

  START_OR_SKIP();
  uint64_t correlation = 0;
  {
    ScopedSpan launch(Floor::Launch, "cudaLaunchKernel");
    correlation = cupti::push_correlation();
    launch.arg("kernel", "descent_test_fill_kernel");
    launch.arg("correlation", static_cast<int64_t>(correlation));
    EXPECT_EQ(descent_test_fill(p, kElements, 1.0f, nullptr), 0);
    cupti::pop_correlation();
  }
  {
    ScopedSpan sync(Floor::Streams, "synchronize");
    EXPECT_EQ(cudaDeviceSynchronize(), cudaSuccess);
  }
  const Trace t = stop();
  cudaFree(p);

  EXPECT_GT(correlation, 0u);
  const std::vector<const Span*> kernels = device_spans(t, "descent_test_fill_kernel");
  ASSERT_EQ(kernels.size(), 1u) << format_tree(t);
  const Span& k = *kernels[0];
  EXPECT_EQ(k.args.at(0).key, "device");
  EXPECT_EQ(std::get<std::string>(k.find_arg("grid") ? *k.find_arg("grid") : ArgValue{std::string()}),
            "[" + std::to_string(kElements / 256) + ", 1, 1]");
  EXPECT_EQ(std::get<std::string>(k.find_arg("block") ? *k.find_arg("block") : ArgValue{std::string()}), "[256, 1, 1]");
  EXPECT_EQ(t.metadata.at("thread." + std::to_string(k.thread) + ".device").rfind("cuda:", 0), 0u);
  expect_inside(t, k, *find(t, "cudaLaunchKernel"), *find(t, "synchronize"), correlation);
}

TEST(Cupti, ACopyHasKinetosNameAndItsBytes) {
  SKIP_WITHOUT_DEVICE();
  std::vector<float> host(kElements, 2.0f);
  float* p = nullptr;
  ASSERT_EQ(cudaMalloc(reinterpret_cast<void**>(&p), kElements * sizeof(float)), cudaSuccess);

  START_OR_SKIP();
  uint64_t correlation = 0;
  {
    ScopedSpan copy(Floor::Streams, "memcpy_h2d");
    correlation = cupti::push_correlation();
    copy.arg("correlation", static_cast<int64_t>(correlation));
    EXPECT_EQ(cudaMemcpyAsync(p, host.data(), kElements * sizeof(float), cudaMemcpyHostToDevice, nullptr), cudaSuccess);
    cupti::pop_correlation();
  }
  {
    ScopedSpan sync(Floor::Streams, "synchronize");
    EXPECT_EQ(cudaDeviceSynchronize(), cudaSuccess);
  }
  const Trace t = stop();
  cudaFree(p);

  // A pageable copy may reach the device in pieces: one record each.
  const std::vector<const Span*> copies = device_spans(t, "Memcpy HtoD (Pageable -> ");
  ASSERT_GE(copies.size(), 1u) << format_tree(t);
  int64_t bytes = 0;
  for (const Span* c : copies) {
    bytes += int_arg(*c, "bytes");
    expect_inside(t, *c, *find(t, "memcpy_h2d"), *find(t, "synchronize"), correlation);
  }
  EXPECT_EQ(bytes, static_cast<int64_t>(kElements * sizeof(float)));
}

TEST(Cupti, CollectsAgainInALaterRecording) {
  SKIP_WITHOUT_DEVICE();
  float* p = nullptr;
  ASSERT_EQ(cudaMalloc(reinterpret_cast<void**>(&p), kElements * sizeof(float)), cudaSuccess);
  for (int recording = 0; recording < 2; ++recording) {
    START_OR_SKIP();
    {
      ScopedSpan launch(Floor::Launch, "cudaLaunchKernel");
      const uint64_t id = cupti::push_correlation();
      launch.arg("correlation", static_cast<int64_t>(id));
      EXPECT_EQ(descent_test_fill(p, kElements, 3.0f, nullptr), 0);
      cupti::pop_correlation();
    }
    EXPECT_EQ(cudaDeviceSynchronize(), cudaSuccess);
    const Trace t = stop();
    EXPECT_EQ(device_spans(t, "descent_test_fill_kernel").size(), 1u) << "recording " << recording;
    EXPECT_EQ(t.flows.size(), 1u);
  }
  // Outside a recording nothing is collected, and a launch is not slowed by CUPTI.
  EXPECT_FALSE(cupti::active());
  cudaFree(p);
}

}  // namespace
}  // namespace descent::trace
