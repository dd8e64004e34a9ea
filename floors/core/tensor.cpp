// Tensor, Storage and DimVector: shapes, strides, views and the first byte.
#include "floors/core/tensor.h"

#include "floors/core/grad_mode.h"

#include <atomic>

namespace descent {

// [SECTION] DimVector --------------------------------------------------------

DimVector::DimVector(std::initializer_list<int64_t> v) {
  for (int64_t x : v) push_back(x);
}
DimVector::DimVector(const std::vector<int64_t>& v) {
  for (int64_t x : v) push_back(x);
}
void DimVector::too_many_dims(int n) {
  throw Error(descent::str("descent supports at most ", kMaxDims, " dimensions, got ", n));
}
std::string DimVector::str() const {
  std::string s = "[";
  for (int i = 0; i < n_; ++i) s += (i ? ", " : "") + std::to_string(v_[i]);
  return s + "]";
}

int64_t numel_of(const DimVector& sizes) {
  int64_t n = 1;
  bool overflow = false;
  for (int64_t s : sizes) {
    if (s == 0) return 0;
    overflow |= __builtin_mul_overflow(n, s, &n);
  }
  // A wrapped product could pass a size check by accident (2**62 + 1 rows of
  // 4 "are" 4 elements), so it is an error here, where every view is made.
  DESCENT_CHECK(!overflow, Error, "the shape ", sizes.str(), " has more elements than an int64 can count");
  return n;
}

DimVector contiguous_strides(const DimVector& sizes) {
  DimVector st;
  st.resize(sizes.size());
  int64_t acc = 1;
  for (int i = sizes.size() - 1; i >= 0; --i) {
    st[i] = acc;
    // Saturated: only a tensor with a 0 among its sizes can get here with a
    // product past int64 (numel_of refuses the others), and it reads no memory.
    if (__builtin_mul_overflow(acc, sizes[i] > 1 ? sizes[i] : 1, &acc)) acc = INT64_MAX;
  }
  return st;
}

bool expandable_to(const DimVector& sizes, const DimVector& to) {
  if (sizes.size() > to.size()) return false;
  for (int i = 1; i <= sizes.size(); ++i) {
    const int64_t a = sizes[sizes.size() - i], b = to[to.size() - i];
    if (a != b && a != 1) return false;
  }
  return true;
}

// The message names no op, as c10's maybe_wrap_dim does not (c10/core/WrapDimMinimal.cpp):
// `op` says who asked, for a reader of the call, not for the learner.
int wrap_dim(int64_t dim, int ndim, const char* /*op*/) {
  int64_t n = ndim > 0 ? ndim : 1;  // a 0-d tensor accepts dim 0 and -1, like PyTorch
  DESCENT_CHECK(dim >= -n && dim < n, IndexError, "Dimension out of range (expected to be in range of [", -n, ", ",
                n - 1, "], but got ", dim, ")");
  return int(dim < 0 ? dim + n : dim);
}

// [SECTION] TensorImpl -------------------------------------------------------

TensorImpl::TensorImpl(Ref<StorageImpl> s, ScalarType t, const DimVector& sz, const DimVector& st, int64_t off)
    : storage(std::move(s)),
      sizes(sz),
      strides(st),
      offset(off),
      numel(numel_of(sz)),
      dtype(t),
      device(storage->device),
      inference(autograd_state().inference_mode) {
  refresh_keys();
}

// Note [Computing the key set] (see also dispatcher.cpp)
// A tensor contributes the keys c10 gives it, whether or not it requires
// grad: its backend's Dense, ADInplaceOrView, Autograd and Autocast keys
// (tensor_keys, dispatch_key.h). A CPU tensor: CPU, ADInplaceOrView,
// AutogradCPU, AutocastCPU.
void TensorImpl::refresh_keys() {
  static constexpr BackendComponent kBackend[] = {BackendComponent::CPU, BackendComponent::Sim, BackendComponent::CUDA};
  keys = tensor_keys(kBackend[int(device.type)], inference);
}

AutogradState& autograd_state() {
  thread_local AutogradState state;
  return state;
}

// [SECTION] Tensor -----------------------------------------------------------

void Tensor::set_requires_grad(bool r) {
  DESCENT_CHECK(!r || is_floating(dtype()), Error, "only Tensors of floating point dtype can require gradients (got ",
                dtype_name(dtype()), ")");
  impl_->requires_grad = r;
}

bool Tensor::is_contiguous() const {
  // A tensor with no elements is contiguous, as in c10; returning first also
  // keeps the product below from overflowing on sizes like (0, 2**40, 2**40).
  if (numel() == 0) return true;
  int64_t expected = 1;
  for (int i = dim() - 1; i >= 0; --i) {
    int64_t sz = impl_->sizes[i];
    if (sz == 1) continue;
    if (impl_->strides[i] != expected) return false;
    expected *= sz;
  }
  return true;
}

Tensor Tensor::as_strided(const DimVector& sizes, const DimVector& strides, int64_t offset) const {
  auto impl = Ref<TensorImpl>::make(impl_->storage, impl_->dtype, sizes, strides, offset);
  impl->own_version =
      impl_->own_version;  // an alias counts writes with its source (Note [Version counter and view base])
  impl->inference =
      impl_
          ->inference;  // and is an inference tensor when its source is (Note [Inference tensors outside inference mode])
  impl->refresh_keys();
  return Tensor(std::move(impl));
}

Tensor scalar_tensor(const Scalar& s, bool wrapped) {
  Tensor r = empty_tensor({}, s.type(), Device{});
  switch (s.type()) {
    case ScalarType::Bool:
      *r.data<bool>() = s.to_bool();
      break;
    case ScalarType::Int64:
      *r.data<int64_t>() = s.to_int();
      break;
    default:
      *r.data<double>() = s.to_double();
      break;
  }
  r.impl()->wrapped_number = wrapped;
  return r;
}

namespace {
constexpr int kNumDeviceTypes = 3;  // DeviceType's values
std::atomic<AllocateFn> g_allocators[kNumDeviceTypes] = {};
}  // namespace

void set_allocator(DeviceType type, AllocateFn fn) { g_allocators[int(type)].store(fn, std::memory_order_release); }
AllocateFn allocator_of(DeviceType type) { return g_allocators[int(type)].load(std::memory_order_acquire); }

DataPtr allocate_bytes(size_t nbytes, Device device) {
  const AllocateFn allocate = allocator_of(device.type);
  DESCENT_CHECK(allocate != nullptr, Error, "no allocator is set for ", device.str(),
                ": the floors are not registered (descent::register_floors(), floors/registration.h)");
  return allocate(nbytes, device);
}

namespace {

// The number of elements of `sizes`, each size checked before any is
// multiplied; a 0 anywhere makes the tensor empty, so zeros(2**49, 0) is as
// good as zeros(0, 2**49).
int64_t checked_numel(const DimVector& sizes, ScalarType dtype) {
  bool empty = false;
  for (int64_t s : sizes) {
    DESCENT_CHECK(s >= 0, Error, "Trying to create tensor with negative dimension ", s, ": ", sizes.str());
    empty |= s == 0;
  }
  int64_t n = empty ? 0 : 1;
  for (int64_t s : sizes)
    DESCENT_CHECK(empty || (!__builtin_mul_overflow(n, s, &n) && n <= (int64_t(1) << 48)), Error,
                  "Trying to create a tensor of ", sizes.str(), " ", dtype_name(dtype), ": too many elements");
  return n;
}

}  // namespace

Tensor empty_tensor(const DimVector& sizes, ScalarType dtype, Device device) {
  checked_numel(sizes, dtype);  // before the strides are multiplied out
  return empty_strided_tensor(sizes, contiguous_strides(sizes), dtype, device);
}

Tensor empty_strided_tensor(const DimVector& sizes, const DimVector& strides, ScalarType dtype, Device device) {
  DESCENT_CHECK(sizes.size() == strides.size(), Error, "dimensionality of sizes (", sizes.size(),
                ") must match dimensionality of strides (", strides.size(), ")");
  const int64_t numel = checked_numel(sizes, dtype);
  for (int64_t st : strides)
    DESCENT_CHECK(st >= 0, Error, "Storage size calculation overflowed with sizes=", sizes.str(),
                  " and strides=", strides.str());
  // The elements the strides reach: 1 + the sum of (size - 1) * stride.
  int64_t n = numel == 0 ? 0 : 1;
  for (int d = 0; d < sizes.size() && n > 0; ++d) {
    int64_t reach = 0;
    DESCENT_CHECK(!__builtin_mul_overflow(sizes[d] - 1, strides[d], &reach) && !__builtin_add_overflow(n, reach, &n) &&
                      n <= (int64_t(1) << 48),
                  Error, "Trying to create a tensor of ", sizes.str(), " with strides ", strides.str(),
                  ": too many elements");
  }
  auto storage = Ref<StorageImpl>::make(allocate_bytes(size_t(n) * element_size(dtype), device), device);
  return Tensor(Ref<TensorImpl>::make(std::move(storage), dtype, sizes, strides, 0));
}

}  // namespace descent
