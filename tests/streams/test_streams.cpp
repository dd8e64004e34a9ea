// Floors 7 and 8 on the simulated device (and on CUDA where a GPU is present):
// queues run in order and asynchronously, events and synchronization wait for
// the right work, copies move bytes, launches run every block and are traced
// on both clocks.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <cstring>
#include <thread>
#include <vector>

#include "floors/core/tensor.h"
#include "floors/launch/launch.h"
#include "floors/streams/device_memory.h"
#include "floors/streams/streams.h"
#include "tracer/trace.h"

namespace descent {
namespace {

using streams::Stream;
const Device kSim{DeviceType::Sim, 0};

TEST(SimStreams, TasksRunInOrderOnAnotherThreadAndSynchronizeWaits) {
  const Stream s = streams::current_stream(kSim);
  std::vector<int> order;
  std::atomic<bool> release{false};
  const auto host = std::this_thread::get_id();
  std::thread::id worker;
  streams::sim_enqueue(s, [&] {
    while (!release) std::this_thread::yield();
    worker = std::this_thread::get_id();
    order.push_back(1);
  });
  streams::sim_enqueue(s, [&] { order.push_back(2); });
  // The host got control back while the first task still waits: asynchronous.
  EXPECT_FALSE(streams::runtime(DeviceType::Sim).query(s));
  EXPECT_EQ(streams::runtime(DeviceType::Sim).queue_depth(s), 2);
  release = true;
  streams::synchronize(s);
  EXPECT_EQ(order, (std::vector<int>{1, 2}));
  EXPECT_NE(worker, host);
  EXPECT_TRUE(streams::runtime(DeviceType::Sim).query(s));
}

TEST(SimStreams, EventsOrderTwoStreams) {
  auto& rt = streams::runtime(DeviceType::Sim);
  const Stream a{kSim, rt.create_stream(0)}, b{kSim, rt.create_stream(0)};
  std::atomic<bool> release{false};
  std::atomic<int> step{0};
  streams::sim_enqueue(a, [&] {
    while (!release) std::this_thread::yield();
    step = 1;
  });
  auto ev = rt.create_event(0, true);
  ev->record(a);
  ev->block(b);  // b's later work waits for a's marker
  int seen = -1;
  streams::sim_enqueue(b, [&] { seen = step.load(); });
  EXPECT_FALSE(ev->query());
  release = true;
  streams::synchronize(b);
  EXPECT_EQ(seen, 1);
  EXPECT_TRUE(ev->query());
  auto end = rt.create_event(0, true);
  end->record(a);
  end->synchronize();
  EXPECT_GE(ev->elapsed_ms(*end), 0.0);
}

TEST(SimStreams, AFaultInATaskIsRaisedAtTheNextSynchronization) {
  const Stream s = streams::current_stream(kSim);
  streams::sim_enqueue(s, [] { throw Error("device fault in a test kernel"); });
  EXPECT_THROW(streams::synchronize(s), Error);
  streams::synchronize(s);  // reported once, like a consumed error
}

TEST(SimMemory, CopiesRoundTripThroughTheCachingAllocator) {
  std::vector<float> host(1000), back(1000, -1.f);
  for (size_t i = 0; i < host.size(); ++i) host[i] = float(i) * 0.5f;
  DataPtr d = streams::device_allocate(host.size() * sizeof(float), kSim);
  streams::copy_bytes(d.ptr, kSim, host.data(), Device{}, host.size() * sizeof(float));
  host.assign(host.size(), 0.f);  // the pageable source was staged: changing it now changes nothing
  streams::copy_bytes(back.data(), Device{}, d.ptr, kSim, back.size() * sizeof(float));
  for (size_t i = 0; i < back.size(); ++i) ASSERT_EQ(back[i], float(i) * 0.5f);
  EXPECT_GE(streams::device_allocator(kSim).stats().allocated_bytes, int64_t(host.size() * sizeof(float)));
  d.release();
}

TEST(SimMemory, EmptyTensorOnSimUsesItsAllocator) {
  const int64_t before = streams::device_allocator(kSim).stats().num_allocs;
  Tensor t = empty_tensor({4, 4}, ScalarType::Float32, kSim);
  EXPECT_EQ(t.device(), kSim);
  EXPECT_EQ(streams::device_allocator(kSim).stats().num_allocs, before + 1);
}

TEST(Devices, UnavailableDevicesSaySoInOneLine) {
  try {
    streams::check_device(Device{DeviceType::Sim, 1});
    FAIL() << "sim:1 should not exist";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("sim:1 is not available"), std::string::npos) << e.what();
  }
  if (streams::runtime(DeviceType::CUDA).device_count() == 0) {
    try {
      (void)empty_tensor({2}, ScalarType::Float32, Device{DeviceType::CUDA, 0});
      FAIL() << "no CUDA device here";
    } catch (const Error& e) {
      const std::string m = e.what();
      EXPECT_EQ(m.find('\n'), std::string::npos) << m;
      EXPECT_FALSE(m.empty());
    }
  }
}

TEST(SimLaunch, EveryBlockRunsOnTheWorkerAndTheTraceShowsBothClocks) {
  const Stream s = streams::current_stream(kSim);
  std::vector<int> hits(10, 0);
  trace::start();
  launch::KernelLaunch k = launch::linear_launch("test_fill", "test", 10 * 4, 4);
  ASSERT_EQ(k.grid.x, 10u);
  launch::launch_sim(s, k, [&](const launch::Dim3& b) { hits[b.x] += 1; });
  streams::synchronize(s);
  trace::Trace t = trace::stop();
  EXPECT_EQ(hits, std::vector<int>(10, 1));
  const trace::Span* launch_span = nullptr;
  const trace::Span* device_span = nullptr;
  for (const auto& sp : t.spans) {
    if (sp.floor == trace::Floor::Launch && sp.name == "simLaunchKernel") launch_span = &sp;
    if (sp.floor == trace::Floor::Device && sp.name == "test_fill") device_span = &sp;
  }
  ASSERT_NE(launch_span, nullptr);
  ASSERT_NE(device_span, nullptr);
  EXPECT_NE(launch_span->thread, device_span->thread);
  EXPECT_GE(device_span->start_ns, launch_span->start_ns);
  bool joined = false;
  for (const auto& f : t.flows) joined |= f.from == launch_span->id && f.to == device_span->id && f.name == "ac2g";
  EXPECT_TRUE(joined);
  EXPECT_EQ(*launch_span->find_arg("correlation"), *device_span->find_arg("correlation"));
}

}  // namespace
}  // namespace descent

namespace descent {
namespace {

// The same floors on cuda:0 where a GPU is present (skipped elsewhere).
class CudaStreams : public ::testing::Test {
 protected:
  void SetUp() override {
    if (streams::runtime(DeviceType::CUDA).device_count() == 0)
      GTEST_SKIP() << streams::runtime(DeviceType::CUDA).unavailable_reason();
  }
  const Device cuda{DeviceType::CUDA, 0};
};

TEST_F(CudaStreams, CopiesRoundTripOnTheDefaultAndANewStream) {
  auto& rt = streams::runtime(DeviceType::CUDA);
  std::vector<double> host(4096), back(4096, -1);
  for (size_t i = 0; i < host.size(); ++i) host[i] = double(i) / 3;
  DataPtr d = streams::device_allocate(host.size() * sizeof(double), cuda);
  streams::copy_bytes(d.ptr, cuda, host.data(), Device{}, host.size() * sizeof(double));
  streams::copy_bytes(back.data(), Device{}, d.ptr, cuda, back.size() * sizeof(double));
  EXPECT_EQ(back, host);
  const Stream s{cuda, rt.create_stream(0)};
  streams::set_current_stream(s);
  back.assign(back.size(), -1);
  streams::copy_bytes(back.data(), Device{}, d.ptr, cuda, back.size() * sizeof(double));
  streams::set_current_stream(streams::default_stream(cuda));
  EXPECT_EQ(back, host);
  EXPECT_TRUE(rt.query(s));
  d.release();
}

TEST_F(CudaStreams, EventsTimeAndOrderWork) {
  auto& rt = streams::runtime(DeviceType::CUDA);
  auto a = rt.create_event(0, true), b = rt.create_event(0, true);
  const Stream s = streams::current_stream(cuda);
  a->record(s);
  std::vector<char> host(64 << 20, 1);
  DataPtr d = streams::device_allocate(host.size(), cuda);
  streams::copy_bytes(d.ptr, cuda, host.data(), Device{}, host.size());
  b->record(s);
  b->synchronize();
  EXPECT_TRUE(b->query());
  EXPECT_GT(a->elapsed_ms(*b), 0.0);
  d.release();
}

TEST_F(CudaStreams, ABlockUsedOnAnotherStreamWaitsForItsEventBeforeReuse) {
  auto& rt = streams::runtime(DeviceType::CUDA);
  alloc::CachingAllocator& a = streams::device_allocator(cuda);
  const Stream other{cuda, rt.create_stream(0)};
  DataPtr d = streams::device_allocate(1 << 20, cuda);
  void* first = d.ptr;
  a.record_stream(d, other.id);
  d.release();  // pending until an event on `other` passes
  streams::synchronize(other);
  DataPtr again = streams::device_allocate(1 << 20, cuda);
  EXPECT_EQ(again.ptr, first);  // the event has passed: the block is back in the pool and reused
  again.release();
  a.check_invariants();
}

TEST_F(CudaStreams, OutOfMemoryNamesTheDeviceAndWhatWasAsked) {
  try {
    (void)streams::device_allocate(size_t(1) << 50, cuda);  // 1 PiB
    FAIL() << "1 PiB should not fit";
  } catch (const alloc::OutOfMemoryError& e) {
    const std::string m = e.what();
    EXPECT_NE(m.find("CUDA out of memory. Tried to allocate"), std::string::npos) << m;
    EXPECT_NE(m.find("GPU 0 has a total capacity of"), std::string::npos) << m;
  }
}

}  // namespace
}  // namespace descent

namespace descent {
namespace {

TEST(SimLaunch, AFaultingKernelIsNamedAtTheNextSynchronization) {
  const Stream s = streams::current_stream(kSim);
  const launch::KernelLaunch k = launch::linear_launch("faulty_kernel", "aten::test_op", 8, 4);
  launch::launch_sim(s, k, [](const launch::Dim3& b) {
    if (b.x == 1) throw Error("out of bounds");
  });
  try {
    streams::synchronize(s);
    FAIL() << "the fault should be raised";
  } catch (const Error& e) {
    const std::string m = e.what();
    EXPECT_NE(m.find("aten::test_op: kernel faulty_kernel faulted on sim:0 in block (1, 0, 0)"), std::string::npos)
        << m;
  }
}

TEST(Devices, RecentLaunchesAreNamedNewestFirst) {
  const Device d{DeviceType::CUDA, 5};
  streams::note_launch(d, "aten::add", "add_float32");
  streams::note_launch(d, "aten::sum", "sum_float32");
  EXPECT_EQ(streams::recent_launches(d).rfind("aten::sum (sum_float32), aten::add (add_float32)", 0), 0u)
      << streams::recent_launches(d);
}

}  // namespace
}  // namespace descent
