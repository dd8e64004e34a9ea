// Property test of Note [Views and strides] (floors/core/tensor.h) and the view
// kernels (floors/kernels/views.cpp): random chains of transpose, permute,
// slice (with steps), select, expand, unsqueeze, view and reshape, applied
// through the dispatcher with call(Op::...), are checked against an
// independent index-mapping model written here.
//
// The base tensor holds base[i] = i (float64), so an element's value is the
// base index it came from. For each view the model keeps its sizes and a
// function from a view index to a base index; every element reached through
// the view's offset and strides must equal what the model says, and so must
// every element of call(Op::contiguous, view).
#include <gtest/gtest.h>

#include <algorithm>
#include <functional>
#include <numeric>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include "floors/dispatch/dispatcher.h"

namespace descent {
namespace {

using Index = std::vector<int64_t>;

struct Model {
  Index sizes;
  std::function<int64_t(const Index&)> to_base;  // view index -> base flat index
};

int64_t product(const Index& s) { return std::accumulate(s.begin(), s.end(), int64_t{1}, std::multiplies<>()); }

// Row-major position `linear` as a multi-index of `sizes`.
Index unravel(int64_t linear, const Index& sizes) {
  Index idx(sizes.size());
  for (int d = int(sizes.size()) - 1; d >= 0; --d) {
    idx[d] = linear % sizes[d];
    linear /= sizes[d];
  }
  return idx;
}
int64_t ravel(const Index& idx, const Index& sizes) {
  int64_t lin = 0;
  for (size_t d = 0; d < sizes.size(); ++d) lin = lin * sizes[d] + idx[d];
  return lin;
}

// Checks every element of `t` (read through its strides) and of its contiguous
// copy against the model. Returns false after the first mismatch.
bool check(const Tensor& t, const Model& m, const std::string& where) {
  EXPECT_EQ(t.sizes().vec(), m.sizes) << where;
  if (t.sizes().vec() != m.sizes) return false;
  int64_t n = product(m.sizes);
  EXPECT_EQ(t.numel(), n) << where;
  const double* data = static_cast<const double*>(t.storage()->data.ptr);
  int64_t storage_elems = int64_t(t.storage()->data.nbytes / sizeof(double));
  Tensor c = call(Op::contiguous, t);
  EXPECT_TRUE(c.is_contiguous()) << where;
  for (int64_t lin = 0; lin < n; ++lin) {
    Index idx = unravel(lin, m.sizes);
    int64_t off = t.offset();
    for (int d = 0; d < t.dim(); ++d) off += idx[d] * t.strides()[d];
    if (off < 0 || off >= storage_elems) {
      ADD_FAILURE() << where << ": element " << lin << " at offset " << off << " is outside the storage";
      return false;
    }
    double want = double(m.to_base(idx));
    if (data[off] != want || c.data<double>()[lin] != want) {
      ADD_FAILURE() << where << ": element " << lin << " reads " << data[off] << " (contiguous copy "
                    << c.data<double>()[lin] << "), model says " << want;
      return false;
    }
  }
  return true;
}

class ViewChain {
 public:
  explicit ViewChain(uint64_t seed) : rng_(seed) {}

  int64_t rand(int64_t lo, int64_t hi) { return std::uniform_int_distribution<int64_t>(lo, hi)(rng_); }
  bool coin(int percent = 50) { return rand(0, 99) < percent; }
  // A dim of a rank-`n` tensor, sometimes written negatively.
  int64_t dim_arg(int64_t d, int64_t n) { return coin() ? d : d - n; }

  // Applies one random view op to (t, m); returns a description of it.
  std::string step(Tensor& t, Model& m, bool* shares_storage) {
    const int64_t n = int64_t(m.sizes.size());
    *shares_storage = true;
    for (;;) {
      switch (rand(0, 7)) {
        case 0: {  // transpose
          if (n < 1) break;
          int64_t a = rand(0, n - 1), b = rand(0, n - 1);
          t = call(Op::transpose, t, dim_arg(a, n), dim_arg(b, n));
          std::swap(m.sizes[a], m.sizes[b]);
          m.to_base = [f = m.to_base, a, b](Index i) {
            std::swap(i[a], i[b]);
            return f(i);
          };
          return "transpose(" + std::to_string(a) + ", " + std::to_string(b) + ")";
        }
        case 1: {  // permute
          if (n < 1) break;
          Index perm(n);
          std::iota(perm.begin(), perm.end(), 0);
          std::shuffle(perm.begin(), perm.end(), rng_);
          DimVector dims;
          for (int64_t p : perm) dims.push_back(dim_arg(p, n));
          t = call(Op::permute, t, dims);
          Index sizes(n);
          for (int64_t i = 0; i < n; ++i) sizes[i] = m.sizes[perm[i]];
          m.sizes = sizes;
          m.to_base = [f = m.to_base, perm](const Index& i) {
            Index j(i.size());
            for (size_t k = 0; k < i.size(); ++k) j[perm[k]] = i[k];
            return f(j);
          };
          return "permute" + dims.str();
        }
        case 2: {  // slice with a step; start and end may be None, negative or past the end
          if (n < 1) break;
          int64_t d = rand(0, n - 1), size = m.sizes[d], step = rand(1, 3);
          std::optional<int64_t> start, end;
          if (coin(70)) start = rand(-size - 2, size + 2);
          if (coin(70)) end = rand(-size - 2, size + 2);
          auto clamp = [size](int64_t i) { return std::clamp(i < 0 ? i + size : i, int64_t{0}, size); };
          int64_t s0 = start ? clamp(*start) : 0, e0 = end ? clamp(*end) : size;
          int64_t len = e0 > s0 ? (e0 - s0 + step - 1) / step : 0;
          t = call(Op::slice, t, dim_arg(d, n), start ? IValue(*start) : IValue(), end ? IValue(*end) : IValue(), step);
          m.sizes[d] = len;
          m.to_base = [f = m.to_base, d, s0, step](Index i) {
            i[d] = s0 + i[d] * step;
            return f(i);
          };
          return "slice(" + std::to_string(d) + ", " + (start ? std::to_string(*start) : "None") + ", " +
                 (end ? std::to_string(*end) : "None") + ", " + std::to_string(step) + ")";
        }
        case 3: {  // select
          if (n < 1) break;
          int64_t d = rand(0, n - 1), size = m.sizes[d];
          if (size == 0) break;
          int64_t index = rand(-size, size - 1);
          t = call(Op::select, t, dim_arg(d, n), index);
          int64_t pos = index < 0 ? index + size : index;
          m.sizes.erase(m.sizes.begin() + d);
          m.to_base = [f = m.to_base, d, pos](Index i) {
            i.insert(i.begin() + d, pos);
            return f(i);
          };
          return "select(" + std::to_string(d) + ", " + std::to_string(index) + ")";
        }
        case 4: {  // expand: size-1 dims grow, maybe a new leading dim; -1 keeps a size
          if (n >= 6) break;
          int64_t lead = coin(30) ? 1 : 0;
          DimVector req;
          Index sizes;
          if (lead) req.push_back(rand(0, 3)), sizes.push_back(req[0]);
          for (int64_t d = 0; d < n; ++d) {
            int64_t want = m.sizes[d] == 1 ? rand(1, 3) : m.sizes[d];
            req.push_back(coin(25) && want == m.sizes[d] ? -1 : want);
            sizes.push_back(want);
          }
          t = call(Op::expand, t, req);
          Index old = m.sizes;
          m.sizes = sizes;
          m.to_base = [f = m.to_base, lead, old](const Index& i) {
            Index j(i.begin() + lead, i.end());
            for (size_t k = 0; k < j.size(); ++k)
              if (old[k] == 1) j[k] = 0;
            return f(j);
          };
          return "expand" + req.str();
        }
        case 5: {  // unsqueeze
          if (n >= 6) break;
          int64_t d = rand(0, n);
          t = call(Op::unsqueeze, t, coin() ? d : d - n - 1);
          m.sizes.insert(m.sizes.begin() + d, 1);
          m.to_base = [f = m.to_base, d](Index i) {
            i.erase(i.begin() + d);
            return f(i);
          };
          return "unsqueeze(" + std::to_string(d) + ")";
        }
        case 6:
        case 7: {  // reshape (copies only when it must) or view (fails when it cannot)
          int64_t numel = product(m.sizes);
          Index sizes = random_shape(numel);
          DimVector req(sizes);
          if (numel > 0 && !sizes.empty() && coin(30)) req[int(rand(0, int64_t(sizes.size()) - 1))] = -1;
          bool is_view = coin();
          Tensor prev = t;
          if (is_view) {
            try {
              t = call(Op::view, t, req);
            } catch (const Error&) {
              // No view can express it; reshape must then copy.
              t = call(Op::reshape, prev, req);
              EXPECT_FALSE(t.storage() == prev.storage())
                  << "reshape" << req.str() << " shares storage after view failed";
            }
          } else {
            t = call(Op::reshape, t, req);
          }
          *shares_storage = t.storage() == prev.storage();
          m.to_base = [f = m.to_base, old = m.sizes, sizes](const Index& i) {
            return f(unravel(ravel(i, sizes), old));
          };
          m.sizes = sizes;
          return std::string(is_view ? "view" : "reshape") + req.str();
        }
      }
    }
  }

  // A random shape with `numel` elements and rank 0 to 4.
  Index random_shape(int64_t numel) {
    int rank = int(rand(numel == 0 ? 1 : 0, 4));
    if (rank == 0) return numel == 1 ? Index{} : Index{numel};
    Index s(rank, 1);
    if (numel == 0) {
      for (auto& x : s) x = rand(0, 3);
      s[rand(0, rank - 1)] = 0;
      return s;
    }
    int64_t left = numel;
    for (int d = 0; d < rank - 1; ++d) {
      std::vector<int64_t> divisors;
      for (int64_t k = 1; k <= left; ++k)
        if (left % k == 0) divisors.push_back(k);
      s[d] = divisors[size_t(rand(0, int64_t(divisors.size()) - 1))];
      left /= s[d];
    }
    s[rank - 1] = left;
    return s;
  }

  Index random_base_shape() {
    Index s(size_t(rand(0, 4)));
    for (auto& x : s) x = coin(8) ? 0 : rand(1, 5);
    return s;
  }

 private:
  std::mt19937_64 rng_;
};

TEST(ViewModel, RandomChainsOfViewsMatchTheIndexModel) {
  constexpr int kTrials = 3000;
  int checked_elements = 0;
  for (int trial = 0; trial < kTrials; ++trial) {
    ViewChain chain(uint64_t(trial) * 7919 + 1);
    Index shape = chain.random_base_shape();
    int64_t numel = product(shape);
    Tensor base = empty_tensor(DimVector(shape), ScalarType::Float64, Device{});
    for (int64_t i = 0; i < numel; ++i) base.data<double>()[i] = double(i);
    Tensor t = base;
    Model m{shape, [shape](const Index& i) { return ravel(i, shape); }};
    std::string log = "base" + DimVector(shape).str();
    ASSERT_TRUE(check(t, m, log));
    int steps = int(chain.rand(1, 6));
    for (int s = 0; s < steps; ++s) {
      bool shares = true;
      Tensor before = t;
      log += " -> " + chain.step(t, m, &shares);
      SCOPED_TRACE("trial " + std::to_string(trial) + ": " + log);
      if (shares) {
        EXPECT_TRUE(t.storage() == before.storage()) << "a view copied";
      }
      if (!check(t, m, log)) break;
      checked_elements += int(t.numel());
    }
  }
  EXPECT_GT(checked_elements, 10000) << "the random chains should reach many elements";
}

// A few fixed chains, spelled out, that the random test is also likely to hit.
TEST(ViewModel, KnownChains) {
  Tensor base = empty_tensor({4, 6}, ScalarType::Float64, Device{});
  for (int i = 0; i < 24; ++i) base.data<double>()[i] = i;
  // x.T[1::2] -> rows 1, 3 of the transpose = columns 1, 3 of x.
  Tensor t = call(Op::slice, call(Op::transpose, base, 0, 1), 0, 1, IValue(), 2);
  EXPECT_EQ(t.sizes(), (DimVector{3, 4}));
  EXPECT_EQ(t.strides(), (DimVector{2, 6}));
  EXPECT_EQ(t.offset(), 1);
  EXPECT_TRUE(t.storage() == base.storage());
  // select then expand: row 2 broadcast to 3 rows, stride 0.
  Tensor e = call(Op::expand, call(Op::unsqueeze, call(Op::select, base, 0, 2), 0), DimVector{3, 6});
  EXPECT_EQ(e.strides(), (DimVector{0, 1}));
  EXPECT_EQ(e.offset(), 12);
  EXPECT_FALSE(e.is_contiguous());
  // view of a transpose cannot flatten it; reshape copies.
  Tensor tr = call(Op::transpose, base, 0, 1);
  EXPECT_THROW(call(Op::view, tr, DimVector{24}), Error);
  Tensor flat = call(Op::reshape, tr, DimVector{-1});
  EXPECT_FALSE(flat.storage() == base.storage());
  EXPECT_EQ(flat.data<double>()[1], 6.0);  // tr[0][1] = x[1][0]
  // view splitting a contiguous dim keeps the storage.
  Tensor v = call(Op::view, base, DimVector{2, 2, 6});
  EXPECT_TRUE(v.storage() == base.storage());
  EXPECT_EQ(v.strides(), (DimVector{12, 6, 1}));
}

}  // namespace
}  // namespace descent
