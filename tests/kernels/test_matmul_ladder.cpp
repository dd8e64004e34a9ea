// The matmul ladder (Note [The matmul ladder], floors/kernels/ladder/matmul_ladder.h)
// on sim:0, and on cuda:0 where there is one: every rung against the CPU's
// reference through the verifier (odd shapes, tile edges, transposed and
// batched operands), rungs 1 to 3 equal bit for bit, the rung asked for is
// the one that runs and the one the kernel span names, and 'auto' restores
// the best rung per dtype.
#include <gtest/gtest.h>

#include <random>
#include <string>
#include <vector>

#include "floors/kernels/kernels.h"
#include "floors/kernels/ladder/matmul_ladder.h"
#include "floors/kernels/verify/verifier.h"
#include "floors/streams/streams.h"
#include "kernel_test_util.h"
#include "tracer/trace.h"
#include "tracer/tracer.h"

namespace descent {
namespace {

namespace device = kernels::device;
using testing_util::random_tensor;
using testing_util::values;

const Device kSim{DeviceType::Sim, 0}, kCuda{DeviceType::CUDA, 0};

bool have_cuda() { return streams::runtime(DeviceType::CUDA).device_count() > 0; }

std::vector<Device> devices() {
  std::vector<Device> d = {kSim};
  if (have_cuda()) d.push_back(kCuda);
  return d;
}

// Asks for a rung for the scope of a test, then 'auto' again.
struct Rung {
  Device d;
  Rung(Device dev, const std::string& name) : d(dev) { device::set_matmul_rung(d, name); }
  ~Rung() { device::set_matmul_rung(d, "auto"); }
};

Tensor on(const Tensor& t, Device d) { return kernels::same_layout_on(t, d); }

TEST(MatmulLadder, EachDeviceListsItsRungs) {
  EXPECT_EQ(device::matmul_rungs(kSim), (std::vector<std::string>{"naive", "shared_tiles", "register_tiles"}));
  EXPECT_THROW(device::set_matmul_rung(kSim, "wmma"), ValueError) << "sim:0 has no tensor cores";
  EXPECT_THROW(device::set_matmul_rung(kSim, "fastest"), ValueError);
  EXPECT_THROW(device::matmul_rungs(Device{}), ValueError) << "the CPU's product is not a device's ladder";
  EXPECT_EQ(device::requested_matmul_rung(kSim), device::MatmulRung::Auto);
  if (!have_cuda()) GTEST_SKIP() << "no CUDA device: " << streams::runtime(DeviceType::CUDA).unavailable_reason();
  const std::vector<std::string> cuda = device::matmul_rungs(kCuda);
  ASSERT_GE(cuda.size(), 4u);
  EXPECT_EQ(cuda[3], "wmma");
  EXPECT_EQ(cuda.size() == 5, device::wgmma_available(0)) << "wgmma where the device can run it";
}

TEST(MatmulLadder, TheVerifierHoldsEveryRungOnEveryDtype) {
  for (Device d : devices()) {
    const std::vector<kernels::Verdict> vs = kernels::verify_matmul_rungs(1, d);
    std::vector<std::string> seen;
    for (const kernels::Verdict& v : vs) {
      EXPECT_TRUE(v.passed) << d.str() << " " << v.op << " " << dtype_name(v.dtype) << ": " << v.variants << ": "
                            << v.detail;
      seen.push_back(v.op);
    }
    for (const std::string& rung : device::matmul_rungs(d)) {
      bool found = false;
      for (const std::string& op : seen) found |= op.find("[" + rung + "]") != std::string::npos;
      EXPECT_TRUE(found) << d.str() << ": no verdict for rung " << rung;
    }
    EXPECT_EQ(device::requested_matmul_rung(d), device::MatmulRung::Auto) << "the verifier puts the rung back";
  }
}

// Rungs 1 to 3 add the same products in the same order: the same bits, on
// either device (and on CUDA the same as sim:0's).
TEST(MatmulLadder, RungsOneToThreeGiveTheSameBits) {
  std::mt19937_64 rng(5);
  for (ScalarType dt : {ScalarType::Float32, ScalarType::Float64, ScalarType::BFloat16, ScalarType::Int32}) {
    const Tensor a = random_tensor({33, 70}, dt, rng), b = random_tensor({70, 45}, dt, rng);
    std::vector<double> first;
    for (Device d : devices())
      for (const char* rung : {"naive", "shared_tiles", "register_tiles"}) {
        Rung r(d, rung);
        const std::vector<double> got = values(on(call(Op::mm, on(a, d), on(b, d)), Device{}));
        EXPECT_EQ(device::rung_name(device::last_matmul_run().rung), std::string(rung));
        if (first.empty())
          first = got;
        else
          EXPECT_EQ(got, first) << d.str() << " " << rung << " " << dtype_name(dt);
      }
  }
}

// The rung the last product ran, as its floor-5 span names it, and the
// kernel its launch span names.
struct Traced {
  std::string rung, kernel, fallback, launched;
};
Traced traced_mm(const Tensor& a, const Tensor& b, Device d) {
  trace::start();
  Tensor out = call(Op::mm, a, b);
  streams::synchronize(d);
  const trace::Trace t = trace::stop();
  auto text = [](const trace::Span& s, const char* key) {
    const trace::ArgValue* v = s.find_arg(key);
    return v && std::holds_alternative<std::string>(*v) ? std::get<std::string>(*v) : std::string();
  };
  Traced r;
  for (const trace::Span& s : t.spans) {
    if (s.floor == trace::Floor::Kernels && s.name == "aten::mm") {
      r.rung = text(s, "rung");
      r.kernel = text(s, "kernel");
      r.fallback = text(s, "rung_fallback");
    }
    if (s.floor == trace::Floor::Launch) r.launched = text(s, "kernel");
  }
  return r;
}

TEST(MatmulLadder, TheTraceNamesTheRungThatRan) {
  std::mt19937_64 rng(9);
  for (Device d : devices()) {
    for (const std::string& rung : device::matmul_rungs(d)) {
      const ScalarType dt = rung == "wmma" || rung == "wgmma" ? ScalarType::BFloat16 : ScalarType::Float32;
      Rung r(d, rung);
      const Traced t = traced_mm(on(random_tensor({128, 64}, dt, rng), d), on(random_tensor({64, 256}, dt, rng), d), d);
      EXPECT_EQ(t.rung, rung) << d.str();
      EXPECT_EQ(t.rung, device::rung_name(device::last_matmul_run().rung));
      EXPECT_EQ(t.kernel, t.launched) << "the kernel span names the kernel the launch put on the stream";
      EXPECT_EQ(t.fallback, "");
    }
    // 'auto': register tiles for float32 everywhere.
    const Traced t = traced_mm(on(random_tensor({8, 8}, ScalarType::Float32, rng), d),
                               on(random_tensor({8, 8}, ScalarType::Float32, rng), d), d);
    EXPECT_EQ(t.rung, "register_tiles") << d.str();
  }
}

TEST(MatmulLadder, ARungThatCannotTakeACallHandsItDownAndSaysWhy) {
  if (!have_cuda()) GTEST_SKIP() << "no CUDA device: " << streams::runtime(DeviceType::CUDA).unavailable_reason();
  std::mt19937_64 rng(11);
  {
    Rung r(kCuda, "wmma");  // float64 has no tensor cores: its auto rung runs
    const Traced t = traced_mm(on(random_tensor({9, 9}, ScalarType::Float64, rng), kCuda),
                               on(random_tensor({9, 9}, ScalarType::Float64, rng), kCuda), kCuda);
    EXPECT_EQ(t.rung, "register_tiles");
    EXPECT_NE(t.fallback.find("wmma takes float16, bfloat16 and float32 with TF32 allowed"), std::string::npos)
        << t.fallback;
  }
  if (!device::wgmma_available(0)) GTEST_SKIP() << "no sm_90a device: wgmma does not run here";
  {
    Rung r(kCuda, "wgmma");  // N = 29: not the 16-byte rows TMA and the epilogue need
    const Traced t = traced_mm(on(random_tensor({37, 53}, ScalarType::Float16, rng), kCuda),
                               on(random_tensor({53, 29}, ScalarType::Float16, rng), kCuda), kCuda);
    EXPECT_EQ(t.rung, "wmma");
    EXPECT_NE(t.fallback.find("ran wmma"), std::string::npos) << t.fallback;
  }
  const Traced t = traced_mm(on(random_tensor({256, 128}, ScalarType::BFloat16, rng), kCuda),
                             on(random_tensor({128, 512}, ScalarType::BFloat16, rng), kCuda), kCuda);
  EXPECT_EQ(t.rung, "wgmma") << "auto: wgmma for bfloat16 on compute capability 9.0";
  EXPECT_EQ(t.kernel, "matmul_wgmma_128x256_bfloat16");
}

}  // namespace
}  // namespace descent
