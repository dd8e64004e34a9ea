// Tests for floors/core/tensor.{h,cpp}: DimVector, numel_of, contiguous_strides,
// wrap_dim, Tensor::is_contiguous, as_strided, empty_tensor and
// set_requires_grad.
//
// [SECTION] DimVector
// [SECTION] numel, contiguous strides, wrap_dim
// [SECTION] is_contiguous and as_strided
// [SECTION] empty_tensor
// [SECTION] requires_grad and the key set
#include <gtest/gtest.h>

#include <cstdint>
#include <string>
#include <vector>

#include "floors/core/tensor.h"

namespace descent {
namespace {

// A tensor of `sizes` viewed with `strides` over a storage big enough for them.
Tensor strided(const DimVector& sizes, const DimVector& strides, int64_t offset = 0) {
  Tensor base = empty_tensor({256}, ScalarType::Float32, Device{});
  return base.as_strided(sizes, strides, offset);
}

// [SECTION] DimVector -------------------------------------------------------------

TEST(DimVector, BuildsFromListsAndCompares) {
  DimVector a{2, 3, 4};
  EXPECT_EQ(a.size(), 3);
  EXPECT_FALSE(a.empty());
  EXPECT_EQ(a[0], 2);
  EXPECT_EQ(a[2], 4);
  EXPECT_EQ(a.vec(), (std::vector<int64_t>{2, 3, 4}));
  EXPECT_EQ(a, DimVector(std::vector<int64_t>{2, 3, 4}));
  EXPECT_FALSE(a == (DimVector{2, 3}));
  EXPECT_FALSE(a == (DimVector{2, 3, 5}));
  EXPECT_EQ(a.str(), "[2, 3, 4]");
  EXPECT_EQ(DimVector{}.str(), "[]");
  EXPECT_TRUE(DimVector{}.empty());
  int64_t sum = 0;
  for (int64_t x : a) sum += x;
  EXPECT_EQ(sum, 9);
}

TEST(DimVector, HoldsEightDimsAndRejectsTheNinth) {
  DimVector v;
  for (int i = 0; i < kMaxDims; ++i) v.push_back(i);
  EXPECT_EQ(v.size(), 8);
  EXPECT_THROW(v.push_back(8), Error);
  EXPECT_EQ(v.size(), 8) << "a failed push_back must not change the vector";
  EXPECT_THROW((DimVector{1, 2, 3, 4, 5, 6, 7, 8, 9}), Error);
  EXPECT_THROW(DimVector(std::vector<int64_t>(9, 1)), Error);
  try {
    v.push_back(1);
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("8"), std::string::npos) << e.what();
  }
}

TEST(DimVector, ResizeFillsAndChecksBounds) {
  DimVector v{7};
  v.resize(3, 5);
  EXPECT_EQ(v, (DimVector{7, 5, 5}));
  v.resize(1);
  EXPECT_EQ(v, (DimVector{7}));
  v.resize(0);
  EXPECT_TRUE(v.empty());
  EXPECT_THROW(v.resize(9), Error);
  EXPECT_THROW(v.resize(-1), Error);
  v.resize(8);
  EXPECT_EQ(v.size(), 8);
}

// [SECTION] numel, contiguous strides, wrap_dim ---------------------------------

TEST(Shapes, NumelIsTheProduct) {
  EXPECT_EQ(numel_of(DimVector{}), 1);  // a 0-d tensor has one element
  EXPECT_EQ(numel_of(DimVector{5}), 5);
  EXPECT_EQ(numel_of(DimVector{2, 3, 4}), 24);
  EXPECT_EQ(numel_of(DimVector{2, 0, 4}), 0);
  EXPECT_EQ(numel_of(DimVector{1, 1, 1}), 1);
}

TEST(Shapes, ContiguousStridesAreRowMajor) {
  EXPECT_EQ(contiguous_strides(DimVector{}), DimVector{});
  EXPECT_EQ(contiguous_strides(DimVector{5}), (DimVector{1}));
  EXPECT_EQ(contiguous_strides(DimVector{2, 3, 4}), (DimVector{12, 4, 1}));
  // Size-1 dims get the stride the next dim out would have (PyTorch's rule).
  EXPECT_EQ(contiguous_strides(DimVector{2, 1, 3}), (DimVector{3, 3, 1}));
  EXPECT_EQ(contiguous_strides(DimVector{1, 1}), (DimVector{1, 1}));
  // Size-0 dims count as 1 so that every stride stays positive.
  EXPECT_EQ(contiguous_strides(DimVector{0, 3}), (DimVector{3, 1}));
  EXPECT_EQ(contiguous_strides(DimVector{3, 0}), (DimVector{1, 1}));
  EXPECT_EQ(contiguous_strides(DimVector{2, 0, 4}), (DimVector{4, 4, 1}));
}

TEST(Shapes, WrapDimWrapsNegativeDims) {
  EXPECT_EQ(wrap_dim(0, 3, "f"), 0);
  EXPECT_EQ(wrap_dim(2, 3, "f"), 2);
  EXPECT_EQ(wrap_dim(-1, 3, "f"), 2);
  EXPECT_EQ(wrap_dim(-3, 3, "f"), 0);
  // A 0-d tensor accepts 0 and -1, like PyTorch.
  EXPECT_EQ(wrap_dim(0, 0, "f"), 0);
  EXPECT_EQ(wrap_dim(-1, 0, "f"), 0);
}

TEST(Shapes, WrapDimErrorsAreTorchsText) {
  // c10's maybe_wrap_dim names the range, not the op (torch 2.11 and 2.15 print no "op():" prefix).
  for (int64_t bad : {int64_t{3}, int64_t{-4}, int64_t{100}}) {
    try {
      wrap_dim(bad, 3, "my_op");
      ADD_FAILURE() << "no error for dim " << bad;
    } catch (const IndexError& e) {
      EXPECT_EQ(std::string(e.what()),
                "Dimension out of range (expected to be in range of [-3, 2], but got " + std::to_string(bad) + ")");
    }
  }
  EXPECT_THROW(wrap_dim(1, 0, "f"), IndexError);
  EXPECT_THROW(wrap_dim(-2, 0, "f"), IndexError);
  // Tensor::size and stride go through it too.
  Tensor t = empty_tensor({2, 3}, ScalarType::Float32, Device{});
  EXPECT_EQ(t.size(-1), 3);
  EXPECT_EQ(t.stride(0), 3);
  try {
    t.size(2);
    ADD_FAILURE() << "size(2) of a 2-d tensor did not throw";
  } catch (const IndexError& e) {
    EXPECT_EQ(std::string(e.what()), "Dimension out of range (expected to be in range of [-2, 1], but got 2)");
  }
}

// [SECTION] is_contiguous and as_strided ---------------------------------------

TEST(Tensor, IsContiguousForVariousStrides) {
  EXPECT_TRUE(strided({2, 3}, {3, 1}).is_contiguous());
  EXPECT_FALSE(strided({3, 2}, {1, 3}).is_contiguous());        // a transpose
  EXPECT_FALSE(strided({2, 3}, {6, 2}).is_contiguous());        // a slice with step 2
  EXPECT_FALSE(strided({2, 3}, {0, 1}).is_contiguous());        // an expand
  EXPECT_FALSE(strided({2, 3}, {4, 1}).is_contiguous());        // a column slice: rows padded
  EXPECT_TRUE(strided({2, 1, 3}, {3, 99, 1}).is_contiguous());  // size-1 strides do not matter
  EXPECT_TRUE(strided({1}, {7}).is_contiguous());
  EXPECT_TRUE(strided({}, {}).is_contiguous());              // 0-d
  EXPECT_TRUE(strided({0, 3}, {1, 5}).is_contiguous());      // no elements: contiguous
  EXPECT_TRUE(strided({2, 3}, {3, 1}, 10).is_contiguous());  // an offset does not matter
  EXPECT_FALSE(strided({4}, {2}).is_contiguous());
  EXPECT_FALSE(strided({4}, {-1}, 3).is_contiguous());
}

TEST(Tensor, AsStridedSharesTheStorage) {
  Tensor base = empty_tensor({2, 3}, ScalarType::Float32, Device{});
  for (int i = 0; i < 6; ++i) base.data<float>()[i] = float(i);
  Tensor t = base.as_strided({3, 2}, {1, 3}, 0);
  EXPECT_TRUE(t.storage() == base.storage());
  EXPECT_FALSE(t.is_same(base));
  EXPECT_EQ(t.sizes(), (DimVector{3, 2}));
  EXPECT_EQ(t.strides(), (DimVector{1, 3}));
  EXPECT_EQ(t.numel(), 6);
  EXPECT_EQ(t.dtype(), ScalarType::Float32);
  // Writing through one is seen by the other.
  base.data<float>()[4] = 40.f;
  EXPECT_EQ(t.data<float>()[1 * 1 + 1 * 3], 40.f);  // t[1][1] = base[1][1]
  Tensor row = base.as_strided({3}, {1}, 3);
  EXPECT_EQ(row.offset(), 3);
  EXPECT_EQ(row.data_ptr(), static_cast<char*>(base.data_ptr()) + 3 * sizeof(float));
  EXPECT_EQ(row.data<float>()[0], 3.f);
  // The storage lives as long as any view does.
  int uses = base.storage()->use_count();
  {
    Tensor extra = base.as_strided({1}, {1}, 0);
    EXPECT_EQ(base.storage()->use_count(), uses + 1);
  }
  EXPECT_EQ(base.storage()->use_count(), uses);
}

// [SECTION] empty_tensor -------------------------------------------------------------

TEST(EmptyTensor, HasContiguousShapeDtypeAndDevice) {
  Tensor t = empty_tensor({2, 3, 4}, ScalarType::Float64, Device{});
  EXPECT_EQ(t.dim(), 3);
  EXPECT_EQ(t.numel(), 24);
  EXPECT_EQ(t.strides(), (DimVector{12, 4, 1}));
  EXPECT_EQ(t.offset(), 0);
  EXPECT_EQ(t.dtype(), ScalarType::Float64);
  EXPECT_EQ(t.device(), Device{});
  EXPECT_TRUE(t.is_contiguous());
  EXPECT_EQ(t.storage()->data.nbytes, 24u * 8u);
  EXPECT_FALSE(t.requires_grad());
  Tensor s = empty_tensor({}, ScalarType::Bool, Device{});
  EXPECT_EQ(s.numel(), 1);
  EXPECT_EQ(s.storage()->data.nbytes, 1u);
  Tensor z = empty_tensor({0, 3}, ScalarType::Int64, Device{});
  EXPECT_EQ(z.numel(), 0);
  EXPECT_EQ(z.storage()->data.nbytes, 0u);
}

TEST(EmptyTensor, RejectsNegativeSizes) {
  try {
    empty_tensor({2, -1}, ScalarType::Float32, Device{});
    ADD_FAILURE() << "no error";
  } catch (const Error& e) {
    std::string m = e.what();
    EXPECT_NE(m.find("negative dimension -1"), std::string::npos) << m;
    EXPECT_NE(m.find("[2, -1]"), std::string::npos) << m;
  }
  EXPECT_THROW(empty_tensor({-3}, ScalarType::Int64, Device{}), Error);
  EXPECT_THROW(empty_tensor({0, -1}, ScalarType::Int64, Device{}), Error);
}

TEST(EmptyTensor, RejectsTooManyElements) {
  const int64_t big = int64_t(1) << 30;
  try {
    empty_tensor({big, big}, ScalarType::Float32, Device{});  // 2^60 elements
    ADD_FAILURE() << "no error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("too many elements"), std::string::npos) << e.what();
  }
  // Overflowing int64 is caught too, not wrapped around.
  EXPECT_THROW(empty_tensor({big, big, big}, ScalarType::Bool, Device{}), Error);
  EXPECT_THROW(empty_tensor({int64_t(1) << 62, 4}, ScalarType::Bool, Device{}), Error);
}

TEST(EmptyTensor, DevicesGetTheirBytesFromTheirOwnAllocator) {
  Tensor t = empty_tensor({2}, ScalarType::Float32, Device{DeviceType::Sim, 0});
  EXPECT_EQ(t.device(), (Device{DeviceType::Sim, 0}));
  EXPECT_EQ(t.storage()->device, (Device{DeviceType::Sim, 0}));
  EXPECT_THROW(empty_tensor({2}, ScalarType::Float32, Device{DeviceType::Sim, 1}), Error);  // there is one sim device
}

// [SECTION] requires_grad and the key set ------------------------------------------

// As in c10, the keys do not depend on requires_grad (Note [Computing the key set]).
TEST(RequiresGrad, KeysAreTheSameWhetherOrNotATensorRequiresGrad) {
  for (ScalarType dt : {ScalarType::Float32, ScalarType::Float64}) {
    Tensor t = empty_tensor({2}, dt, Device{});
    const DispatchKeySet keys = t.impl()->keys;
    EXPECT_EQ(keys.str(), "CPU, ADInplaceOrView, AutogradCPU, AutocastCPU");
    t.set_requires_grad(true);
    EXPECT_TRUE(t.requires_grad());
    EXPECT_EQ(t.impl()->keys, keys);
    t.set_requires_grad(false);
    EXPECT_FALSE(t.requires_grad());
    EXPECT_EQ(t.impl()->keys, keys);
  }
}

TEST(RequiresGrad, NonFloatTensorsRaiseAndStayUnchanged) {
  for (ScalarType dt : {ScalarType::Bool, ScalarType::Int64}) {
    Tensor t = empty_tensor({2}, dt, Device{});
    try {
      t.set_requires_grad(true);
      ADD_FAILURE() << "no error for " << dtype_name(dt);
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find(dtype_name(dt)), std::string::npos) << e.what();
    }
    EXPECT_FALSE(t.requires_grad());
    EXPECT_FALSE(t.impl()->keys.has(DispatchKey::Autograd));
    t.set_requires_grad(false);  // turning it off is always allowed
  }
}

TEST(RequiresGrad, AViewHasItsOwnFlag) {
  Tensor t = empty_tensor({2, 3}, ScalarType::Float32, Device{});
  t.set_requires_grad(true);
  Tensor v = t.as_strided({3}, {1}, 0);
  EXPECT_FALSE(v.requires_grad());  // as_strided makes a fresh TensorImpl
  EXPECT_EQ(v.impl()->keys, t.impl()->keys);
}

}  // namespace
}  // namespace descent
