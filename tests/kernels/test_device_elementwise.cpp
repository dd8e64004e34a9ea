// Tests for the elementwise ops on devices (floors/kernels/device/device_loops.h,
// sim_kernels.cpp, cuda_elementwise.cu, and the boxed kernels' device paths in
// boxed.h and factories.cpp): every row of the op table of the
// kinds this covers (unary, binary, comparison, in place, copies, views,
// factories), each dtype, run from its sample call on the CPU and on the
// device, the device's results equal to the CPU's bit for bit on sim:0 (Note
// [One kernel body, two devices]); on cuda:0, where there is one, the same,
// except that exp, log, tanh, sigmoid, pow and randn may differ by a few
// units in the last place (CUDA's math library). rand and randn are held to
// the device generator's counters computed on the host, not to the CPU's
// numbers, which are PyTorch's (Note [PyTorch's CPU random stream]). Then
// the pieces one by one: Python numbers with device tensors, mixed devices,
// broadcasting and strides, in-place checks, copies between devices,
// factories, the trace.
//
// [SECTION] Helpers
// [SECTION] The op table on each device
// [SECTION] Scalars and devices
// [SECTION] Shapes: broadcasting, strides, empty, large
// [SECTION] In place
// [SECTION] Copies between devices
// [SECTION] Factories
// [SECTION] The trace
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <string>

#include "floors/kernels/kernels.h"
#include "floors/kernels/device/random.h"
#include "floors/kernels/verify/verifier.h"
#include "floors/streams/streams.h"
#include "kernel_test_util.h"
#include "tracer/trace.h"
#include "tracer/tracer.h"

namespace descent {
namespace {

using namespace testing_util;
using kernels::same_layout_on;

const Device kSim{DeviceType::Sim, 0};
const Device kCuda{DeviceType::CUDA, 0};
constexpr ScalarType kDtypes[] = {ScalarType::Bool, ScalarType::Int64, ScalarType::Float32, ScalarType::Float64};

bool have_cuda() { return streams::runtime(DeviceType::CUDA).device_count() > 0; }
#define SKIP_WITHOUT_CUDA() \
  if (!have_cuda()) GTEST_SKIP() << "no CUDA device: " << streams::runtime(DeviceType::CUDA).unavailable_reason()

// [SECTION] Helpers ------------------------------------------------------------------

// t on the host: through to() (Note [Copies between devices]).
Tensor host(const Tensor& t) {
  return t.device().type == DeviceType::CPU ? t : call(Op::_to_copy, t, IValue(), Device{});
}
Tensor on(const Tensor& t, Device d) { return call(Op::_to_copy, t, IValue(), d); }

// Units in the last place between two values of dtype dt (0 when equal, NaN
// with NaN, or both integral and equal; a huge number otherwise).
// `magnitude`: the ulps are of the larger of |want| and it (Note [Element functions that cancel], verifier.cpp).
double ulps(double got, double want, ScalarType dt, double magnitude = 0) {
  if (std::isnan(got) && std::isnan(want)) return 0;
  if (got == want) return 0;
  if (!is_floating(dt) || !std::isfinite(got) || !std::isfinite(want)) return 1e300;
  const double eps = dt == ScalarType::Float32 ? 0x1p-23 : 0x1p-52;
  const double at = std::max(std::fabs(want), magnitude);
  return std::fabs(got - want) / (eps * std::max(at, dt == ScalarType::Float32 ? 0x1p-126 : 0x1p-1022));
}

// Bit for bit (max_ulps 0: NaN equal to NaN, +0 different from -0), or within max_ulps (of the
// elements of `magnitude` where given).
::testing::AssertionResult same(const Tensor& got_any, const Tensor& want, double max_ulps,
                                const std::vector<double>& magnitude = {}) {
  Tensor got = host(got_any);
  if (got.sizes() != want.sizes() || got.dtype() != want.dtype())
    return ::testing::AssertionFailure() << "got " << got.shape_str() << " " << dtype_name(got.dtype()) << ", want "
                                         << want.shape_str() << " " << dtype_name(want.dtype());
  std::vector<double> g = values(got), w = values(want);
  for (size_t i = 0; i < g.size(); ++i) {
    const bool bits = std::memcmp(&g[i], &w[i], sizeof(double)) == 0 || (std::isnan(g[i]) && std::isnan(w[i]));
    const double m = magnitude.empty() ? 0.0 : magnitude[i];
    if (bits || (max_ulps > 0 && ulps(g[i], w[i], want.dtype(), m) <= max_ulps)) continue;
    return ::testing::AssertionFailure() << "element " << i << ": got " << g[i] << ", want " << w[i] << " ("
                                         << ulps(g[i], w[i], want.dtype()) << " ulps)";
  }
  return ::testing::AssertionSuccess();
}

// What a device's rand or randn writes, computed on the host: element i is
// counter offset + i of the device generator (Note [Counter-based random numbers]).
Tensor counters_on_host(const Tensor& like, bool normal, uint64_t seed, uint64_t offset) {
  Tensor t = empty_tensor(like.sizes(), like.dtype(), Device{});
  visit_dtype(like.dtype(), [&]<typename T>() {
    if constexpr (is_float_v<T>) {
      T* p = t.data<T>();
      for (int64_t i = 0; i < t.numel(); ++i) p[i] = kernels::random_element<T>(offset + uint64_t(i), seed, normal);
    }
  });
  return t;
}

std::string error_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const std::exception& e) {
    return e.what();
  }
  return "";
}

// [SECTION] The op table on each device ------------------------------------------------

bool covered(const OpEntry& op) {
  switch (op.kind) {
    case OpKind::Unary:
    case OpKind::Binary:
    case OpKind::Comparison:
    case OpKind::View:
    case OpKind::Factory:
      return true;
    case OpKind::Copy:
      return op.id != Op::index;
    case OpKind::InPlace:
      return op.id != Op::index_put_;
    default:
      return false;  // reductions, products and indexing: test_device_reduce_matmul.cpp
  }
}

// CUDA's math library (exp, log, tanh, sin, cos, pow) is not glibc's: a few ulps apart
// (its documented bounds: expf 2, powf 4, tanhf 2, sinf 2, pow 2, against glibc's < 1).
// The op table's row says which: Exactness::DeviceMath (ops.h).
double cuda_ulps(const OpEntry& op) { return op.exactness == Exactness::DeviceMath ? 8 : 0; }
// The terms' magnitude of an element function that cancels (Note [Element functions that cancel],
// verifier.cpp): |x| / 2 for gelu, |grad| (1 + |x|) for gelu_backward and silu_backward; none for the rest.
std::vector<double> cancelling_magnitude(const OpEntry& op, const Stack& args) {
  if (op.id != Op::gelu && op.id != Op::gelu_backward && op.id != Op::silu_backward) return {};
  std::vector<double> a = values(args[0].to_tensor());
  if (op.id == Op::gelu) {
    for (double& v : a) v = std::fabs(v) / 2;
    return a;
  }
  const std::vector<double> x = values(args[1].to_tensor());
  for (size_t i = 0; i < a.size(); ++i) a[i] = std::fabs(a[i]) * (1 + std::fabs(x[i]));
  return a;
}

// Runs each covered row's sample call on the CPU and on `d`, and compares.
void sweep(Device d) {
  int compared = 0;
  for (const OpEntry& op : all_ops()) {
    if (!covered(op)) continue;
    for (ScalarType dt : kDtypes) {
      SCOPED_TRACE(std::string(op.name) + " " + dtype_name(dt) + " on " + d.str());
      // Issue 42's rows held elsewhere (test_learner_ops.py, the verifier): draws of another stream (Note
      // [Draws apart on a device]), uninitialised like-factories, and floor_divide of integers, whose zero
      // divisor the CPU refuses and a device, as torch's CUDA, does not look for.
      const bool apart = op.id == Op::uniform_ || op.id == Op::normal_ || op.id == Op::rand_like ||
                         op.id == Op::randn_like || op.id == Op::empty_like || op.id == Op::new_empty ||
                         (op.id == Op::floor_divide && !is_floating(dt));
      if (apart) continue;
      Stack cpu = kernels::sample_call(op, dt, 17), dev;
      for (int i = 0; i < cpu.size(); ++i) {
        if (cpu[i].is_tensor_list()) {  // cat's tensors, each on the device
          OptionalTensorList l;
          for (const Tensor& t : cpu[i].to_tensor_list()) l.push_back(t.defined() ? same_layout_on(t, d) : t);
          dev.push(l);
          continue;
        }
        dev.push(cpu[i].is_tensor() ? IValue(same_layout_on(cpu[i].to_tensor(), d)) : cpu[i]);
      }
      if (op.kind == OpKind::Factory) {  // sample_call ends a factory's arguments with the dtype
        while (dev.size() < int(op.schema.args.size()) - 1) dev.push(IValue());
        dev.push(d);
      }
      const Stack cpu_args = cpu;  // call_boxed leaves the results in its stack
      kernels::manual_seed(99);
      const std::string cpu_err = error_of([&] { call_boxed(op.id, cpu); });
      kernels::manual_seed(99);
      const std::string dev_err = error_of([&] { call_boxed(op.id, dev); });
      ASSERT_EQ(dev_err, cpu_err) << "the device must refuse what the CPU refuses, with its words";
      if (!cpu_err.empty()) continue;
      ASSERT_EQ(dev.size(), cpu.size());
      for (int i = 0; i < cpu.size(); ++i) {
        const Tensor& r = dev[i].to_tensor();
        EXPECT_EQ(r.device(), d);
        if (op.id == Op::empty || op.id == Op::empty_strided) continue;  // uninitialised
        const bool random = op.id == Op::rand || op.id == Op::randn;     // a device's own stream, not the CPU's
        const Tensor want = random ? counters_on_host(r, op.id == Op::randn, 99, 0) : cpu[i].to_tensor();
        const bool cuda = d.type == DeviceType::CUDA;
        EXPECT_TRUE(
            same(r, want, cuda ? cuda_ulps(op) : 0, cuda ? cancelling_magnitude(op, cpu_args) : std::vector<double>{}));
        ++compared;
      }
    }
  }
  EXPECT_GT(compared, 150);
}

TEST(DeviceElementwise, EveryRowOnSimEqualsTheCpuBitForBit) { sweep(kSim); }

TEST(DeviceElementwise, EveryRowOnCudaEqualsTheCpu) {
  SKIP_WITHOUT_CUDA();
  sweep(kCuda);
}

TEST(DeviceElementwise, TheTableDeclaresTheDeviceKeys) {
  EXPECT_STREQ(op_entry(Op::add).dispatch, "CPU, Sim, CUDA");
  EXPECT_STREQ(op_entry(Op::ones).dispatch, "BackendSelect, CPU, Sim, CUDA");
  EXPECT_NO_THROW(check_declared_kernels());
  // A row that declares Sim and has no Sim kernel fails the start-up check.
  OpEntry add = op_entry(Op::add);
  add.own_kernels[runtime_slot(DispatchKey::Sim)] = nullptr;
  EXPECT_THROW(check_declared_kernels(add, add.dispatch), Error);
}

// [SECTION] Scalars and devices ----------------------------------------------------

void scalars_and_devices(Device d) {
  Tensor x = on(make({2, 3}, ScalarType::Float32, {1, 2, 3, 4, 5, 6}), d);
  Tensor y = call(Op::add, x, scalar_tensor(Scalar(int64_t{1})));  // x + 1: the 1 reaches the kernel as a value
  EXPECT_EQ(y.device(), d);
  EXPECT_EQ(values(host(y)), (std::vector<double>{2, 3, 4, 5, 6, 7}));
  Tensor z = call(Op::mul, scalar_tensor(Scalar(2.5)), x);  // a number on the left too
  EXPECT_EQ(values(host(z)), (std::vector<double>{2.5, 5, 7.5, 10, 12.5, 15}));
  Tensor w = call(Op::sub, x, scalar_tensor(Scalar(1.0)), Scalar(int64_t{2}));  // alpha
  EXPECT_EQ(values(host(w)), (std::vector<double>{-1, 0, 1, 2, 3, 4}));
  Tensor p = call(Op::pow_scalar, x, Scalar(int64_t{2}));
  EXPECT_EQ(values(host(p)), (std::vector<double>{1, 4, 9, 16, 25, 36}));
  Tensor c = call(Op::gt, x, scalar_tensor(Scalar(3.5)));
  EXPECT_EQ(c.dtype(), ScalarType::Bool);
  EXPECT_EQ(values(host(c)), (std::vector<double>{0, 0, 0, 1, 1, 1}));
  // Any CPU 0-d tensor joins a device tensor, as in PyTorch; a CPU tensor with dims does not.
  Tensor q = call(Op::add, x, make({}, ScalarType::Float64, {0.5}));
  EXPECT_EQ(q.device(), d);
  EXPECT_EQ(q.dtype(), ScalarType::Float32) << "a 0-d tensor does not promote a dimensioned one";
  const std::string want =
      "Expected all tensors to be on the same device, but found at least two devices, " + d.str() + " and cpu!";
  EXPECT_EQ(error_of([&] { call(Op::add, x, make({3}, ScalarType::Float32, {1, 2, 3})); }), want);
  EXPECT_THROW(call(Op::eq, make({2, 3}, ScalarType::Float32, {1, 2, 3, 4, 5, 6}), x), Error);
  // In place, self decides the device: a CPU scalar self cannot take a device operand.
  EXPECT_THROW(call(Op::add_, make({}, ScalarType::Float32, {1}), x), Error);
  call(Op::add_, x, scalar_tensor(Scalar(int64_t{10})));
  EXPECT_EQ(values(host(x)), (std::vector<double>{11, 12, 13, 14, 15, 16}));
}

TEST(DeviceElementwise, PythonNumbersJoinDeviceTensorsOtherMixesRaise) { scalars_and_devices(kSim); }
TEST(DeviceElementwise, PythonNumbersJoinDeviceTensorsOtherMixesRaiseOnCuda) {
  SKIP_WITHOUT_CUDA();
  scalars_and_devices(kCuda);
}

// [SECTION] Shapes: broadcasting, strides, empty, large -----------------------------------

void shapes(Device d) {
  std::mt19937_64 rng(5);
  struct Case {
    Tensor a, b;
  };
  Tensor base = random_tensor({6, 8}, ScalarType::Float32, rng);
  std::vector<Case> cases = {
      {random_tensor({3, 1}, ScalarType::Float32, rng), random_tensor({1, 4}, ScalarType::Float32, rng)},
      {random_tensor({2, 3, 4}, ScalarType::Float64, rng), random_tensor({4}, ScalarType::Float32, rng)},
      {call(Op::slice, base, 1, 1, 7, 2), call(Op::transpose, random_tensor({3, 6}, ScalarType::Float32, rng), 0, 1)},
      {random_tensor({0, 3}, ScalarType::Int64, rng), random_tensor({3}, ScalarType::Int64, rng)},
      {random_tensor({}, ScalarType::Float32, rng), random_tensor({}, ScalarType::Float32, rng)},
      {random_tensor({100003}, ScalarType::Float32, rng), random_tensor({100003}, ScalarType::Float32, rng)},
      {call(Op::slice, random_tensor({100004}, ScalarType::Float32, rng), 0, 1, IValue(), 1),  // misaligned by 4 bytes
       random_tensor({100003}, ScalarType::Float32, rng)},
      {random_tensor({5, 1, 7}, ScalarType::Int64, rng), random_tensor({1, 9, 1}, ScalarType::Int64, rng)},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.a.shape_str() + " with " + c.b.shape_str());
    Tensor a = same_layout_on(c.a, d), b = same_layout_on(c.b, d);
    for (Op op : {Op::add, Op::mul, Op::sub, Op::div}) EXPECT_TRUE(same(call(op, a, b), call(op, c.a, c.b), 0));
    EXPECT_TRUE(same(call(Op::lt, a, b), call(Op::lt, c.a, c.b), 0));
    EXPECT_TRUE(same(call(Op::neg, a), call(Op::neg, c.a), 0));
    EXPECT_TRUE(same(call(Op::contiguous, a), c.a, 0));
    EXPECT_TRUE(same(call(Op::to, a, ScalarType::Int64), call(Op::to, c.a, ScalarType::Int64), 0));
  }
}

TEST(DeviceElementwise, BroadcastStridedEmptyZeroDimAndLargeAsOnTheCpu) { shapes(kSim); }
TEST(DeviceElementwise, BroadcastStridedEmptyZeroDimAndLargeAsOnTheCpuOnCuda) {
  SKIP_WITHOUT_CUDA();
  shapes(kCuda);
}

TEST(DeviceElementwise, CastsConvertAsTheCpuDoesNanAndHugeIncluded) {
  Tensor x = make({6}, ScalarType::Float64, {NAN, 1e300, -1e300, -2.5, 0.0, 3.99});
  for (ScalarType to : kDtypes) EXPECT_TRUE(same(call(Op::to, on(x, kSim), to), call(Op::to, x, to), 0));
}

// [SECTION] In place ------------------------------------------------------------

TEST(DeviceElementwise, InPlaceOpsWriteThroughViewsAndKeepTheCpuChecks) {
  Tensor cpu = make({3, 4}, ScalarType::Float32, {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12});
  Tensor dev = on(cpu, kSim);
  Tensor col = call(Op::select, dev, 1, 2);  // a strided view of the device tensor
  call(Op::mul_, col, scalar_tensor(Scalar(int64_t{10})));
  call(Op::mul_, call(Op::select, cpu, 1, 2), scalar_tensor(Scalar(int64_t{10})));
  EXPECT_TRUE(same(dev, cpu, 0));
  EXPECT_EQ(dev.version(), 1u) << "ADInplaceOrView bumps a device tensor's version as a CPU one's";
  // Partial overlap is refused as on the CPU, with the CPU's words.
  auto partial = [](const Tensor& t) {
    Tensor flat = call(Op::view, t, DimVector{12});
    return error_of(
        [&] { call(Op::add_, call(Op::slice, flat, 0, 1, IValue(), 1), call(Op::slice, flat, 0, 0, 11, 1)); });
  };
  EXPECT_FALSE(partial(cpu).empty());
  EXPECT_EQ(partial(dev), partial(cpu));
  // A wider result is cast into self: int64 self += float is refused, float32 += float64 is not.
  Tensor i = on(make({2}, ScalarType::Int64, {1, 2}), kSim);
  EXPECT_EQ(error_of([&] { call(Op::add_, i, scalar_tensor(Scalar(0.5))); }), error_of([&] {
              call(Op::add_, make({2}, ScalarType::Int64, {1, 2}), scalar_tensor(Scalar(0.5)));
            }));
  Tensor f = on(make({2}, ScalarType::Float32, {1, 2}), kSim);
  call(Op::add_, f, on(make({2}, ScalarType::Float64, {0.25, 0.5}), kSim));
  EXPECT_EQ(values(host(f)), (std::vector<double>{1.25, 2.5}));
  call(Op::fill_, call(Op::transpose, dev, 0, 1), Scalar(7.0));
  EXPECT_EQ(values(host(dev)), std::vector<double>(12, 7.0));
  call(Op::zero_, dev);
  EXPECT_EQ(values(host(dev)), std::vector<double>(12, 0.0));
  EXPECT_THROW(call(Op::fill_, on(make({1}, ScalarType::Int64, {0}), kSim), Scalar(1e30)),
               Error);  // checked conversion
}

// [SECTION] Copies between devices ------------------------------------------------------

TEST(DeviceElementwise, ToAndCopyMoveBetweenTheHostAndTheDevice) {
  std::mt19937_64 rng(3);
  Tensor x = random_tensor({5, 7}, ScalarType::Float64, rng);
  Tensor xt = call(Op::transpose, x, 0, 1);  // strided on the host: made contiguous there first
  Tensor d = call(Op::to, xt, IValue(), kSim);
  EXPECT_EQ(d.device(), kSim);
  EXPECT_TRUE(d.is_contiguous());
  EXPECT_TRUE(same(d, call(Op::contiguous, xt), 0));
  // dtype and device at once: the cast runs on the device.
  Tensor d32 = call(Op::to, xt, ScalarType::Float32, kSim);
  EXPECT_TRUE(same(d32, call(Op::to, xt, ScalarType::Float32), 0));
  // Back from a strided device view: contiguous on the device, then the bytes.
  Tensor back = call(Op::to, call(Op::transpose, d, 0, 1), ScalarType::Int64, Device{});
  EXPECT_EQ(back.device(), Device{});
  EXPECT_TRUE(same(back, call(Op::to, x, ScalarType::Int64), 0));
  // copy_ between devices broadcasts and casts, into a strided self.
  Tensor self = on(make({2, 3}, ScalarType::Int64, {0, 0, 0, 0, 0, 0}), kSim);
  call(Op::copy_, call(Op::transpose, call(Op::view, self, DimVector{3, 2}), 0, 1),
       make({2, 1}, ScalarType::Float32, {4.5, -1}));
  Tensor want = make({2, 3}, ScalarType::Int64, {0, 0, 0, 0, 0, 0});
  call(Op::copy_, call(Op::transpose, call(Op::view, want, DimVector{3, 2}), 0, 1),
       make({2, 1}, ScalarType::Float32, {4.5, -1}));
  EXPECT_TRUE(same(self, want, 0));
  Tensor into_host = make({3}, ScalarType::Float32, {0, 0, 0});
  call(Op::copy_, into_host, on(make({3}, ScalarType::Int64, {1, 2, 3}), kSim));
  EXPECT_EQ(values(into_host), (std::vector<double>{1, 2, 3}));
  EXPECT_THROW(call(Op::copy_, into_host, on(make({4}, ScalarType::Int64, {1, 2, 3, 4}), kSim)), Error);
  // Empty tensors move too.
  EXPECT_EQ(host(on(make({0, 3}, ScalarType::Float32, {}), kSim)).sizes(), (DimVector{0, 3}));
}

TEST(DeviceElementwise, SimToCudaGoesThroughTheHost) {
  SKIP_WITHOUT_CUDA();
  Tensor x = make({4}, ScalarType::Float32, {1, 2, 3, 4});
  Tensor c = call(Op::to, on(x, kSim), ScalarType::Float64, kCuda);
  EXPECT_EQ(c.device(), kCuda);
  EXPECT_TRUE(same(c, call(Op::to, x, ScalarType::Float64), 0));
}

// [SECTION] Factories ----------------------------------------------------------------

TEST(DeviceElementwise, FactoriesFillOnTheDeviceAndRandomNumbersAreTheDevicesCounters) {
  EXPECT_TRUE(same(call(Op::full, DimVector{3, 5}, Scalar(2.5), IValue(), kSim),
                   call(Op::full, DimVector{3, 5}, Scalar(2.5), IValue(), IValue()), 0));
  EXPECT_TRUE(same(call(Op::arange, Scalar(int64_t{10}), ScalarType::Float64, kSim),
                   call(Op::arange, Scalar(int64_t{10}), ScalarType::Float64, IValue()), 0));
  EXPECT_TRUE(same(
      call(Op::arange_start_step, Scalar(int64_t{-5}), Scalar(int64_t{100}), Scalar(int64_t{7}), IValue(), kSim),
      call(Op::arange_start_step, Scalar(int64_t{-5}), Scalar(int64_t{100}), Scalar(int64_t{7}), IValue(), IValue()),
      0));
  EXPECT_THROW(call(Op::full, DimVector{2}, Scalar(1e300), ScalarType::Float32, kSim), Error);
  for (Op op : {Op::rand, Op::randn}) {
    const bool normal = op == Op::randn;
    kernels::manual_seed(1234);
    Tensor d = call(op, DimVector{1000}, IValue(), kSim);
    Tensor c = call(op, DimVector{1000}, IValue(), IValue());  // the CPU's draws do not move the counters
    Tensor d2 = call(op, DimVector{10}, ScalarType::Float64, kSim);
    EXPECT_TRUE(same(d, counters_on_host(d, normal, 1234, 0), 0)) << "element i is counter i (random.h)";
    EXPECT_TRUE(same(d2, counters_on_host(d2, normal, 1234, 1000), 0)) << "and the offset advances by numel";
    EXPECT_FALSE(same(c, counters_on_host(c, normal, 1234, 0), 0)) << "the CPU draws PyTorch's stream";
  }
}

TEST(DeviceElementwise, RandomNumbersOnCudaAreTheCounters) {
  SKIP_WITHOUT_CUDA();
  kernels::manual_seed(77);
  Tensor u = call(Op::rand, DimVector{4097}, IValue(), kCuda);
  Tensor n = call(Op::randn, DimVector{4097}, ScalarType::Float64, kCuda);
  EXPECT_TRUE(same(u, counters_on_host(u, false, 77, 0), 0));
  EXPECT_TRUE(same(n, counters_on_host(n, true, 77, 4097), 8)) << "CUDA's log and cos are not glibc's";
}

// [SECTION] The trace ----------------------------------------------------------------

TEST(DeviceElementwise, TheKernelSpanSaysSimAndTheLaunchRecordsTheGrid) {
  Tensor x = on(make({1000}, ScalarType::Float32, std::vector<double>(1000, 1.0)), kSim);
  call(Op::exp, x);
  EXPECT_STREQ(kernels::last_variant(), "sim");
  trace::start();
  Tensor y = call(Op::add, x, x);
  streams::synchronize(kSim);
  trace::Trace t = trace::stop();
  auto arg = [](const trace::Span& s, const char* key) {
    const trace::ArgValue* v = s.find_arg(key);
    return v ? *v : trace::ArgValue(std::string("(absent)"));
  };
  bool kernel_span = false, launch_span = false;
  for (const trace::Span& s : t.spans) {
    if (s.floor == trace::Floor::Kernels && s.name == "aten::add") {
      kernel_span = true;
      EXPECT_EQ(arg(s, "variant"), trace::ArgValue(std::string("sim")));
    }
    if (s.floor == trace::Floor::Launch) {
      launch_span = true;
      EXPECT_EQ(arg(s, "kernel"), trace::ArgValue(std::string("add_float32")));
      EXPECT_EQ(arg(s, "grid"), trace::ArgValue(int64_t{1})) << "1000 elements, 256 threads of runs of four: one block";
    }
  }
  EXPECT_TRUE(kernel_span);
  EXPECT_TRUE(launch_span);
}

}  // namespace
}  // namespace descent
