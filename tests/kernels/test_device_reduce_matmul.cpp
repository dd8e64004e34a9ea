// Reductions, matrix products and advanced indexing on the devices (sim:0,
// and cuda:0 where there is one) against the CPU's reference loops: exact
// where Note [Device claims] says so, within its bounds otherwise, with
// non-contiguous inputs, empty ones, keepdim, and sizes that take many blocks.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "floors/kernels/device/device_reduce.h"
#include "floors/kernels/kernels.h"
#include "floors/kernels/verify/verifier.h"
#include "floors/streams/streams.h"
#include "kernel_test_util.h"

namespace descent {
namespace {

using testing_util::random_tensor;
using testing_util::values;

// The devices to test: sim:0 always, cuda:0 when this machine has one.
std::vector<Device> devices() {
  std::vector<Device> d = {Device{DeviceType::Sim, 0}};
  if (streams::runtime(DeviceType::CUDA).device_count() > 0) d.push_back(Device{DeviceType::CUDA, 0});
  return d;
}

// A copy of t on d (or back on the CPU) in its layout (verifier.h).
Tensor copy_to(const Tensor& t, Device d) { return kernels::same_layout_on(t, d); }
Tensor to_cpu(const Tensor& t) { return copy_to(t, Device{}); }

// The CPU reference of a call.
template <typename... Args>
Tensor reference(Op op, Args&&... args) {
  kernels::VariantGuard g(kernels::Variant::Reference);
  return call(op, std::forward<Args>(args)...);
}

// Every element bit for bit (NaN equal to NaN).
void expect_same(const Tensor& want, const Tensor& got, const std::string& what) {
  ASSERT_EQ(want.sizes(), got.sizes()) << what;
  ASSERT_EQ(want.dtype(), got.dtype()) << what;
  const std::vector<double> w = values(want), g = values(to_cpu(got));
  for (size_t i = 0; i < w.size(); ++i) {
    if (std::isnan(w[i]) && std::isnan(g[i])) continue;
    ASSERT_EQ(std::signbit(w[i]), std::signbit(g[i])) << what << ": element " << i;
    ASSERT_EQ(w[i], g[i]) << what << ": element " << i;
  }
}

// Within `bound[i]` of the reference.
void expect_within(const Tensor& want, const Tensor& got, const std::vector<double>& bound, const std::string& what) {
  ASSERT_EQ(want.sizes(), got.sizes()) << what;
  const std::vector<double> w = values(want), g = values(to_cpu(got));
  ASSERT_EQ(w.size(), bound.size());
  for (size_t i = 0; i < w.size(); ++i) {
    if (std::isnan(w[i]) && std::isnan(g[i])) continue;
    ASSERT_LE(std::fabs(w[i] - g[i]), bound[i]) << what << ": element " << i << " want " << w[i] << " got " << g[i];
  }
}

double eps_of(ScalarType t) { return t == ScalarType::Float32 ? 0x1p-24 : 0x1p-53; }
double gamma(int64_t d, ScalarType t) { return double(d) * eps_of(t) / (1 - double(d) * eps_of(t)); }

// Note [Device claims] for sum.dim_IntList (dims) or sum (no dims), mean dividing by n.
std::vector<double> sum_bound(const Tensor& x, const IValue& dims, bool mean) {
  Tensor abs_sum =
      call(Op::contiguous, call(Op::sum_dim, call(Op::abs, call(Op::to, x, ScalarType::Float64)), dims, true));
  const int64_t outputs = abs_sum.numel(), n = outputs ? x.numel() / outputs : 0;
  double g =
      gamma(kernels::cascade_depth(n), x.dtype()) + gamma(kernels::device::device_sum_depth(n, outputs), x.dtype());
  if (mean && n) g /= double(n);
  std::vector<double> b = values(abs_sum);
  for (double& v : b) v *= g;
  return b;
}

const ScalarType kAll[] = {ScalarType::Bool, ScalarType::Int64, ScalarType::Float32, ScalarType::Float64};

// [SECTION] The verifier on each device --------------------------------------------------------

TEST(DeviceReduceMatmul, VerifierHoldsForEveryOpAndDtype) {
  const Op ops[] = {Op::sum,      Op::sum_dim, Op::mean,  Op::mean_dim,   Op::max, Op::max_dim,
                    Op::mse_loss, Op::matmul,  Op::mm,    Op::addmm,      Op::bmm, Op::dot,
                    Op::mv,       Op::linear,  Op::index, Op::index_put_, Op::cat};
  for (Device d : devices())
    for (Op op : ops)
      for (ScalarType dt : kAll)
        for (uint64_t seed : {1, 7}) {
          kernels::Verdict v = kernels::verify(op_entry(op), dt, seed, d);
          EXPECT_TRUE(v.passed) << d.str() << " " << v.op << " " << dtype_name(dt) << ": " << v.claim << " "
                                << v.detail;
          if (v.claim != "unsupported") {
            EXPECT_NE(v.variants.find(d.type == DeviceType::CUDA ? "cuda" : "sim"), std::string::npos) << v.variants;
          }
        }
}

TEST(DeviceReduceMatmul, VerifierStatesItsClaims) {
  const Device sim{DeviceType::Sim, 0};
  auto claim = [&](Op op, ScalarType dt) { return kernels::verify(op_entry(op), dt, 1, sim).claim; };
  EXPECT_EQ(claim(Op::sum, ScalarType::Float32), "bound");
  EXPECT_EQ(claim(Op::mean_dim, ScalarType::Float64), "bound");
  EXPECT_EQ(claim(Op::mm, ScalarType::Float32), "bound");
  EXPECT_EQ(claim(Op::sum, ScalarType::Int64), "bit-for-bit");
  EXPECT_EQ(claim(Op::mm, ScalarType::Int64), "bit-for-bit");
  EXPECT_EQ(claim(Op::max_dim, ScalarType::Float32), "bit-for-bit");
  EXPECT_EQ(claim(Op::index_put_, ScalarType::Float32), "bit-for-bit");
  EXPECT_EQ(claim(Op::mean, ScalarType::Int64), "unsupported");  // mean of integers is an error, as on the CPU
  EXPECT_EQ(claim(Op::addmm, ScalarType::Float32), "bound");
  EXPECT_EQ(claim(Op::mse_loss, ScalarType::Float32), "bound");
  EXPECT_EQ(claim(Op::cat, ScalarType::Float32), "bit-for-bit");
}

// [SECTION] Sums and means ------------------------------------------------------------------------

TEST(DeviceReduceMatmul, SumsOfEveryDtypeAndLayout) {
  std::mt19937_64 rng(11);
  for (Device d : devices())
    for (ScalarType dt : kAll) {
      const bool fl = is_floating(dt);
      struct Case {
        Tensor x;
        const char* what;
      };
      std::vector<Case> cases = {
          {random_tensor({4, 33}, dt, rng), "contiguous"},
          {testing_util::transposed({33, 4}, dt, rng), "transposed"},
          {call(Op::permute, random_tensor({3, 5, 7}, dt, rng), DimVector{2, 0, 1}), "permuted"},
          {call(Op::slice, random_tensor({6, 40}, dt, rng), 1, 1, 39, 2), "sliced with a step"},
          {random_tensor({1, 1025, 1}, dt, rng), "size-1 dims"},
      };
      for (const Case& c : cases) {
        const Tensor xd = copy_to(c.x, d);
        const std::string what = d.str() + " " + dtype_name(dt) + " " + c.what;
        for (int64_t dim = -1; dim < c.x.dim(); ++dim)
          for (bool keepdim : {false, true}) {
            const IValue dims = dim < 0 ? IValue() : IValue(DimVector{dim});
            const Tensor want = reference(Op::sum_dim, c.x, dims, keepdim);
            const Tensor got = call(Op::sum_dim, xd, dims, keepdim);
            EXPECT_EQ(got.device(), d);
            const std::string w = what + " sum dim " + std::to_string(dim) + (keepdim ? " keepdim" : "");
            if (fl)
              expect_within(want, got, sum_bound(c.x, dims, false), w);
            else
              expect_same(want, got, w);
            if (fl) {
              const Tensor mw = reference(Op::mean_dim, c.x, dims, keepdim), mg = call(Op::mean_dim, xd, dims, keepdim);
              expect_within(mw, mg, sum_bound(c.x, dims, true), w + " mean");
            }
          }
        const Tensor all = call(Op::sum, xd);
        if (fl)
          expect_within(reference(Op::sum, c.x), all, sum_bound(c.x, IValue(), false), what + " sum");
        else
          expect_same(reference(Op::sum, c.x), all, what + " sum");
      }
    }
}

TEST(DeviceReduceMatmul, IntegerSumsWrapAsTheCpus) {
  for (Device d : devices()) {
    Tensor x = testing_util::make({3}, ScalarType::Int64, {0, 0, 0});
    x.data<int64_t>()[0] = std::numeric_limits<int64_t>::max();
    x.data<int64_t>()[1] = 5;
    x.data<int64_t>()[2] = std::numeric_limits<int64_t>::max();
    expect_same(reference(Op::sum, x), call(Op::sum, copy_to(x, d)), d.str() + " wrapping sum");
  }
}

// Many blocks a result, a second pass over the partials, 16-byte loads and
// their tail, and a start that is not 16-byte aligned (no vector loads).
TEST(DeviceReduceMatmul, LargeSumsUseManyBlocks) {
  std::mt19937_64 rng(3);
  for (Device d : devices())
    for (ScalarType dt : {ScalarType::Float32, ScalarType::Float64, ScalarType::Int64}) {
      const int64_t n = (int64_t(1) << 21) + 3;
      const Tensor x = random_tensor({n}, dt, rng, -2, 2);
      EXPECT_GT(kernels::device::reduce_shape(1, n).blocks, 100);
      EXPECT_EQ(kernels::device::reduce_shape(1, int64_t(1) << 28).blocks, kernels::device::kReduceMaxBlocks);
      const Tensor xd = copy_to(x, d);
      for (const Tensor& v : {x, call(Op::slice, x, 0, 1, n, 1)}) {
        const Tensor vd = copy_to(v, d);
        const std::string what = d.str() + " " + dtype_name(dt) + (v.offset() ? " misaligned" : " aligned");
        if (is_floating(dt))
          expect_within(reference(Op::sum, v), call(Op::sum, vd), sum_bound(v, IValue(), false), what);
        else
          expect_same(reference(Op::sum, v), call(Op::sum, vd), what);
      }
      // Rows of a matrix: many results, each over several blocks.
      const Tensor m = random_tensor({3, 200003}, dt, rng, -2, 2);
      const IValue dim1(DimVector{1});
      if (is_floating(dt))
        expect_within(reference(Op::sum_dim, m, dim1, false), call(Op::sum_dim, copy_to(m, d), dim1, false),
                      sum_bound(m, dim1, false), d.str() + " rows");
      else
        expect_same(reference(Op::sum_dim, m, dim1, false), call(Op::sum_dim, copy_to(m, d), dim1, false),
                    d.str() + " rows");
    }
}

TEST(DeviceReduceMatmul, EmptySums) {
  for (Device d : devices()) {
    const Tensor x = empty_tensor({0, 5}, ScalarType::Float32, Device{});
    const Tensor xd = copy_to(x, d);
    expect_same(reference(Op::sum_dim, x, IValue(DimVector{0}), false),
                call(Op::sum_dim, xd, IValue(DimVector{0}), false), "sum over an empty dim");
    expect_same(reference(Op::mean, x), call(Op::mean, xd), "mean of nothing is nan");
    expect_same(reference(Op::sum_dim, x, IValue(DimVector{1}), true),
                call(Op::sum_dim, xd, IValue(DimVector{1}), true), "no results");
    EXPECT_THROW(call(Op::max, xd), Error);
  }
}

// [SECTION] max and max.dim ------------------------------------------------------------------------

TEST(DeviceReduceMatmul, MaxIsExactWithTiesNanAndSignedZeros) {
  std::mt19937_64 rng(5);
  for (Device d : devices())
    for (ScalarType dt : kAll) {
      // Few distinct values, so most maxima are ties: the first position must win.
      Tensor x = random_tensor({37, 300}, dt, rng, 0, 3);
      if (is_floating(dt)) {
        visit_dtype(dt, [&]<typename T>() {
          if constexpr (std::is_floating_point_v<T>) {
            T* p = x.data<T>();
            p[5] = -0.0, p[6] = 0.0, p[300 * 3 + 7] = NAN, p[300 * 3 + 9] = NAN;
            for (int i = 0; i < 300; ++i) p[300 * 10 + i] = i % 2 ? T(0.0) : T(-0.0);
          }
        });
      }
      for (const Tensor& v : {x, call(Op::transpose, x, 0, 1)}) {
        const Tensor vd = copy_to(v, d);
        const std::string what = d.str() + " " + dtype_name(dt) + (v.is_contiguous() ? "" : " transposed");
        expect_same(reference(Op::max, v), call(Op::max, vd), what + " max");
        for (int64_t dim : {0, 1, -1})
          for (bool keepdim : {false, true}) {
            Stack want, got;
            want.push(v), want.push(dim), want.push(keepdim);
            got.push(vd), got.push(dim), got.push(keepdim);
            {
              kernels::VariantGuard g(kernels::Variant::Reference);
              call_boxed(Op::max_dim, want);
            }
            call_boxed(Op::max_dim, got);
            const std::string w = what + " max.dim " + std::to_string(dim);
            expect_same(want[0].to_tensor(), got[0].to_tensor(), w + " values");
            expect_same(want[1].to_tensor(), got[1].to_tensor(), w + " indices");
          }
      }
      const Tensor big = random_tensor({(1 << 20) + 5}, dt, rng, -100, 100);
      expect_same(reference(Op::max, big), call(Op::max, copy_to(big, d)), d.str() + " large max");
    }
}

// [SECTION] Matrix products ---------------------------------------------------------------------------

// Note [Device matmul bound]: 2 gamma_K (|A| |B|) per element.
std::vector<double> product_bound(Op op, const Tensor& a, const Tensor& b) {
  Tensor p = call(Op::contiguous, call(op, call(Op::abs, call(Op::to, a, ScalarType::Float64)),
                                       call(Op::abs, call(Op::to, b, ScalarType::Float64))));
  std::vector<double> v = values(p);
  const double g = 2 * gamma(a.sizes()[a.dim() - 1], a.dtype()) * (1 + 1e-12);
  for (double& x : v) x *= g;
  return v;
}

void check_product(Device d, Op op, const Tensor& a, const Tensor& b, const std::string& what) {
  const Tensor want = reference(op, a, b), got = call(op, copy_to(a, d), copy_to(b, d));
  EXPECT_EQ(got.device(), d);
  if (is_floating(a.dtype()))
    expect_within(want, got, product_bound(op, a, b), d.str() + " " + what);
  else
    expect_same(want, got, d.str() + " " + what);
}

TEST(DeviceReduceMatmul, ProductsOfEveryShapeAndLayout) {
  std::mt19937_64 rng(9);
  for (Device d : devices())
    for (ScalarType dt : {ScalarType::Int64, ScalarType::Float32, ScalarType::Float64}) {
      const std::string t = dtype_name(dt);
      // Edges of every tile size (64, 128), k not a multiple of the step, and the float32 fast path (multiples of 4).
      for (auto [m, k, n] :
           {std::tuple{17, 23, 19}, {130, 67, 129}, {128, 64, 256}, {1, 1, 1}, {5, 0, 7}, {0, 3, 4}, {200, 132, 136}})
        check_product(d, Op::mm, random_tensor({m, k}, dt, rng, -3, 3), random_tensor({k, n}, dt, rng, -3, 3),
                      t + " mm " + std::to_string(m) + "x" + std::to_string(k) + "x" + std::to_string(n));
      check_product(d, Op::mm, testing_util::transposed({70, 33}, dt, rng), testing_util::transposed({33, 90}, dt, rng),
                    t + " mm of transposed operands");
      check_product(d, Op::bmm, random_tensor({3, 65, 40}, dt, rng), random_tensor({3, 40, 132}, dt, rng), t + " bmm");
      check_product(d, Op::bmm, call(Op::transpose, random_tensor({3, 40, 65}, dt, rng), 1, 2),
                    random_tensor({3, 40, 12}, dt, rng), t + " bmm transposed");
      check_product(d, Op::dot, random_tensor({1000}, dt, rng), random_tensor({1000}, dt, rng), t + " dot");
      check_product(d, Op::mv, random_tensor({77, 300}, dt, rng), random_tensor({300}, dt, rng), t + " mv");
      check_product(d, Op::matmul, random_tensor({2, 3, 20, 30}, dt, rng), random_tensor({30, 8}, dt, rng),
                    t + " matmul");
    }
}

TEST(DeviceReduceMatmul, BoolProductsAreRefused) {
  for (Device d : devices()) {
    const Tensor a = copy_to(testing_util::make({2, 2}, ScalarType::Bool, {1, 0, 1, 1}), d);
    EXPECT_THROW(call(Op::mm, a, a), Error);
  }
}

// One algorithm, two devices: sim:0 and cuda:0 give the same bits.
TEST(DeviceReduceMatmul, SimAndCudaAgreeBitForBit) {
  if (devices().size() < 2)
    GTEST_SKIP() << "no CUDA device: " << streams::runtime(DeviceType::CUDA).unavailable_reason();
  std::mt19937_64 rng(21);
  const Device sim{DeviceType::Sim, 0}, cuda{DeviceType::CUDA, 0};
  const Tensor x = random_tensor({(1 << 20) + 7}, ScalarType::Float32, rng);
  expect_same(to_cpu(call(Op::sum, copy_to(x, sim))), call(Op::sum, copy_to(x, cuda)), "sum");
  const Tensor m = random_tensor({300, 1001}, ScalarType::Float32, rng);
  expect_same(to_cpu(call(Op::sum_dim, copy_to(m, sim), IValue(DimVector{0}), false)),
              call(Op::sum_dim, copy_to(m, cuda), IValue(DimVector{0}), false), "sum over columns");
  for (auto [a, b] :
       {std::pair{random_tensor({260, 132}, ScalarType::Float32, rng),
                  random_tensor({132, 200}, ScalarType::Float32, rng)},
        {random_tensor({61, 33}, ScalarType::Float32, rng), random_tensor({33, 17}, ScalarType::Float32, rng)},
        {random_tensor({61, 33}, ScalarType::Float64, rng), random_tensor({33, 17}, ScalarType::Float64, rng)}})
    expect_same(to_cpu(call(Op::mm, copy_to(a, sim), copy_to(b, sim))),
                call(Op::mm, copy_to(a, cuda), copy_to(b, cuda)), "mm");
}

// [SECTION] Advanced indexing ----------------------------------------------------------------------------

Tensor ints(const DimVector& sizes, std::vector<double> v) {
  return testing_util::make(sizes, ScalarType::Int64, std::move(v));
}
OptionalTensorList list(std::initializer_list<Tensor> ts) {
  OptionalTensorList l;
  for (const Tensor& t : ts) l.push_back(t);
  return l;
}

TEST(DeviceReduceMatmul, IndexGathersExactly) {
  std::mt19937_64 rng(13);
  for (Device d : devices())
    for (ScalarType dt : kAll) {
      const Tensor x = random_tensor({5, 6, 7}, dt, rng);
      const Tensor xd = copy_to(x, d);
      const std::vector<OptionalTensorList> cases = {
          list({ints({4}, {4, 0, -1, 2})}),
          list({Tensor(), ints({2, 3}, {5, -1, 2, 0, 0, -6})}),
          list({ints({3}, {0, 1, 4}), Tensor(), ints({3}, {6, -7, 3})}),  // not adjacent: B goes first
          list({testing_util::make({5}, ScalarType::Bool, {1, 0, 1, 1, 0})}),
          list({ints({0}, {})}),
      };
      for (size_t c = 0; c < cases.size(); ++c) {
        OptionalTensorList on_dev;
        for (const Tensor& t : cases[c]) on_dev.push_back(t.defined() ? copy_to(t, d) : t);
        const Tensor want = reference(Op::index, x, cases[c]);
        expect_same(want, call(Op::index, xd, on_dev),
                    d.str() + " " + dtype_name(dt) + " index case " + std::to_string(c));
        // Index tensors on the CPU are taken for a device tensor, as in PyTorch.
        expect_same(want, call(Op::index, xd, cases[c]), d.str() + " CPU indices, case " + std::to_string(c));
      }
      // Non-contiguous self.
      const Tensor xt = call(Op::transpose, x, 0, 2);
      expect_same(reference(Op::index, xt, list({ints({3}, {6, 0, 2})})),
                  call(Op::index, copy_to(xt, d), list({ints({3}, {6, 0, 2})})), d.str() + " transposed self");
      EXPECT_THROW(call(Op::index, xd, list({copy_to(ints({1}, {5}), d)})), IndexError);
    }
}

TEST(DeviceReduceMatmul, IndexPutWritesAndAccumulatesAsTheCpu) {
  std::mt19937_64 rng(17);
  for (Device d : devices())
    for (ScalarType dt : kAll)
      for (bool accumulate : {false, true}) {
        // Position (4, 1) named three times: accumulate adds in order; assign keeps the last.
        const OptionalTensorList idx = list({ints({5}, {4, 0, 4, -1, 4}), ints({5}, {1, 2, 1, 1, -5})});
        const Tensor base = random_tensor({5, 6}, dt, rng);
        const Tensor vals = random_tensor({5}, dt, rng);
        Tensor want = call(Op::clone, base);
        {
          kernels::VariantGuard g(kernels::Variant::Reference);
          call(Op::index_put_, want, idx, vals, accumulate);
        }
        Tensor self = copy_to(base, d);
        OptionalTensorList on_dev;
        for (const Tensor& t : idx) on_dev.push_back(copy_to(t, d));
        const Tensor r = call(Op::index_put_, self, on_dev, copy_to(vals, d), accumulate);
        const std::string what = d.str() + " " + dtype_name(dt) + (accumulate ? " accumulate" : " assign");
        expect_same(want, self, what);
        EXPECT_TRUE(r.is_same(self)) << what;
        // A broadcast value into a strided self through a mask.
        const Tensor mask = testing_util::make({5}, ScalarType::Bool, {1, 0, 0, 1, 1});
        const Tensor row = random_tensor({5}, dt, rng);
        Tensor want2 = call(Op::transpose, call(Op::clone, base), 0, 1);  // [6, 5]
        Tensor self2 = call(Op::transpose, copy_to(base, d), 0, 1);
        const OptionalTensorList m = list({Tensor(), mask});
        {
          kernels::VariantGuard g(kernels::Variant::Reference);
          call(Op::index_put_, want2, m, call(Op::slice, row, 0, 0, 3, 1), accumulate);
        }
        call(Op::index_put_, self2, list({Tensor(), copy_to(mask, d)}), copy_to(call(Op::slice, row, 0, 0, 3, 1), d),
             accumulate);
        expect_same(want2, self2, what + " through a mask");
      }
}

TEST(DeviceReduceMatmul, IndexPutChecksEveryPositionBeforeWriting) {
  for (Device d : devices()) {
    const Tensor base = testing_util::make({4}, ScalarType::Float32, {1, 2, 3, 4});
    Tensor self = copy_to(base, d);
    EXPECT_THROW(call(Op::index_put_, self, list({copy_to(ints({2}, {0, 4}), d)}),
                      copy_to(testing_util::make({2}, ScalarType::Float32, {9, 9}), d), false),
                 IndexError);
    expect_same(base, self, d.str() + " nothing written");
  }
}

}  // namespace
}  // namespace descent
