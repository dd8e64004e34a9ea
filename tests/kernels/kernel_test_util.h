// Helpers shared by the kernel tests: building tensors from plain values,
// reading any tensor back through its own strides (independently of the
// kernels' strided_offset), random inputs, and an element comparison that is
// exact or within a few float32/float64 ulps.
#pragma once

#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include "floors/dispatch/dispatcher.h"

namespace descent::testing_util {

// A contiguous tensor of `dtype` holding `vals` (row-major), converted from double.
inline Tensor make(const DimVector& sizes, ScalarType dtype, const std::vector<double>& vals) {
  Tensor t = empty_tensor(sizes, dtype, Device{});
  EXPECT_EQ(size_t(t.numel()), vals.size()) << "make(): wrong number of values for " << sizes.str();
  visit_dtype(dtype, [&]<typename T>() {
    for (int64_t i = 0; i < t.numel(); ++i) t.data<T>()[i] = static_cast<T>(vals[size_t(i)]);
  });
  return t;
}

// Every element of `t` in row-major order, read through t's sizes, strides and offset.
inline std::vector<double> values(const Tensor& t) {
  std::vector<double> out;
  out.reserve(size_t(t.numel()));
  const char* base = static_cast<const char*>(t.storage()->data.ptr);
  std::vector<int64_t> idx(size_t(t.dim()), 0);
  for (int64_t n = 0; n < t.numel(); ++n) {
    int64_t off = t.offset();
    for (int d = 0; d < t.dim(); ++d) off += idx[size_t(d)] * t.strides()[d];
    visit_dtype(t.dtype(), [&]<typename T>() { out.push_back(double(reinterpret_cast<const T*>(base)[off])); });
    for (int d = t.dim() - 1; d >= 0; --d) {  // odometer increment
      if (++idx[size_t(d)] < t.sizes()[d]) break;
      idx[size_t(d)] = 0;
    }
  }
  return out;
}

// Random values representable exactly in `dtype`: integers in [lo, hi) for
// the integer dtypes, booleans for bool, uniform reals in [lo, hi) rounded to the dtype otherwise.
inline std::vector<double> random_values(int64_t n, ScalarType dtype, std::mt19937_64& rng, double lo, double hi) {
  std::uniform_real_distribution<double> u(lo, hi);
  std::vector<double> v(static_cast<size_t>(n));
  for (double& x : v) {
    double r = u(rng);
    if (dtype == ScalarType::Bool)
      x = r < (lo + hi) / 2 ? 0 : 1;
    else if (is_integral(dtype, false))
      x = std::floor(r);
    else if (dtype == ScalarType::Float32)
      x = double(float(r));
    else
      x = r;
  }
  return v;
}

inline Tensor random_tensor(const DimVector& sizes, ScalarType dtype, std::mt19937_64& rng, double lo = -4,
                            double hi = 4) {
  return make(sizes, dtype, random_values(numel_of(sizes), dtype, rng, lo, hi));
}

// A non-contiguous tensor of `sizes` (2-d): the transpose of a contiguous [sizes[1], sizes[0]].
inline Tensor transposed(const DimVector& sizes, ScalarType dtype, std::mt19937_64& rng, double lo = -4,
                         double hi = 4) {
  Tensor base = random_tensor({sizes[1], sizes[0]}, dtype, rng, lo, hi);
  return call(Op::transpose, base, 0, 1);
}

// `want` rounded to `dtype`, as the kernel's result would be stored.
inline double round_to(double want, ScalarType dtype) {
  if (dtype == ScalarType::Float32) return double(float(want));
  if (dtype == ScalarType::Bool) return want != 0 ? 1 : 0;
  return want;
}

// Compares one element: bit-for-bit (NaN equal to NaN) when ulps == 0, else within
// `ulps` units of the dtype's precision relative to |want| (absolute near 0).
inline ::testing::AssertionResult close(double got, double want, ScalarType dtype, double ulps) {
  if (std::isnan(got) && std::isnan(want)) return ::testing::AssertionSuccess();
  double w = round_to(want, dtype);
  if (ulps == 0 || !std::isfinite(w)) {
    if (got == w) return ::testing::AssertionSuccess();
  } else {
    double eps = dtype == ScalarType::Float32 ? 0x1p-23 : 0x1p-52;
    if (std::fabs(got - w) <= ulps * eps * std::max(1.0, std::fabs(w))) return ::testing::AssertionSuccess();
  }
  return ::testing::AssertionFailure() << "got " << got << ", want " << w << " (" << dtype_name(dtype) << ")";
}

}  // namespace descent::testing_util
