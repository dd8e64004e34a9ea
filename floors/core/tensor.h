// Tensor and Storage: what every floor passes around.
//
// [SECTION] DimVector: sizes, strides and int[] arguments
// [SECTION] Storage: the bytes
// [SECTION] TensorImpl: a view of the bytes
// [SECTION] Tensor: the handle
//
// See Note [Views and strides].
//
// Note [Views and strides]
// ~~~~~~~~~~~~~~~~~~~~~~~~
// A tensor does not own its elements: it is a view of a Storage, read through
// an offset and one stride per dimension. Element (i0, i1, ...) lives at
//     storage.data + (offset + i0*stride0 + i1*stride1 + ...) * element_size.
// A contiguous tensor of sizes (2, 3) has strides (3, 1). transpose swaps two
// strides, slicing with a step multiplies one and moves the offset, expand
// sets the stride of a broadcast dimension to 0: none of them copies an
// element, and all of them share the storage with their base. `contiguous()`
// copies only when the strides are not the contiguous ones.
#pragma once

#include <atomic>
#include <cstdint>
#include <initializer_list>
#include <string>
#include <vector>

#include "floors/core/data_ptr.h"
#include "floors/core/device.h"
#include "floors/core/dispatch_key.h"
#include "floors/core/dtype.h"
#include "floors/core/error.h"
#include "floors/core/ref.h"
#include "floors/core/scalar.h"

namespace descent {

// [SECTION] DimVector --------------------------------------------------------

constexpr int kMaxDims = 8;  // dimensions a tensor may have (ggml allows 4, PyTorch 64)

// A fixed-capacity list of int64: sizes, strides, and int[] arguments. No heap.
class DimVector {
 public:
  DimVector() = default;
  DimVector(std::initializer_list<int64_t> v);
  explicit DimVector(const std::vector<int64_t>& v);

  int size() const { return n_; }
  bool empty() const { return n_ == 0; }
  int64_t operator[](int i) const { return v_[i]; }
  int64_t& operator[](int i) { return v_[i]; }
  const int64_t* begin() const { return v_; }
  const int64_t* end() const { return v_ + n_; }
  int64_t* data() { return v_; }
  // push_back and resize raise RuntimeError past kMaxDims. These three sit on
  // every call's path, so they are inline.
  void push_back(int64_t x) {
    if (n_ >= kMaxDims) too_many_dims(n_ + 1);
    v_[n_++] = x;
  }
  void resize(int n, int64_t fill = 0) {
    if (n < 0 || n > kMaxDims) too_many_dims(n);
    // A fixed trip count becomes a few vector stores; a loop from n_ to n
    // becomes `rep stos`, whose start-up cost was a tenth of an add.
    for (int i = 0; i < kMaxDims; ++i) v_[i] = i < n_ ? v_[i] : fill;
    n_ = n;
  }
  bool operator==(const DimVector& o) const {
    if (n_ != o.n_) return false;
    for (int i = 0; i < n_; ++i)
      if (v_[i] != o.v_[i]) return false;
    return true;
  }
  std::vector<int64_t> vec() const { return std::vector<int64_t>(begin(), end()); }
  std::string str() const;  // "[2, 3]"

 private:
  [[noreturn]] static void too_many_dims(int n);
  int64_t v_[kMaxDims] = {};
  int n_ = 0;
};

int64_t numel_of(const DimVector& sizes);  // product; 1 for an empty list; RuntimeError past int64
DimVector contiguous_strides(const DimVector& sizes);
// Whether `sizes` broadcasts to `to` (c10's is_expandable_to): an index_put_'s
// values to the indexed shape, a gradient's input to the gradient's shape.
bool expandable_to(const DimVector& sizes, const DimVector& to);
// Wraps a possibly negative dim into [0, ndim); raises IndexError in c10's words (`op` names the caller).
int wrap_dim(int64_t dim, int ndim, const char* op);

// [SECTION] Storage ----------------------------------------------------------

// Note [Version counter and view base]
// ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
// Every in-place op bumps a version counter, so that autograd can tell that a
// tensor it saved for backward was written to afterwards (t._version in
// Python). PyTorch keeps it in VariableVersion, one counter shared by a view
// and its base; every view in descent is a TensorImpl over its base's
// Storage, so the counter lives there and is shared the same way (x[0] = 1
// bumps x._version and x[0]._version alike). A view op also records its base
// (TensorImpl::base, t._base): the tensor that owns the memory, never a view
// itself (a view of a view has the first one's base), null for non-views.
// One tensor breaks the sharing, as in PyTorch: `x.data` is an alias with a
// counter of its own (VariableVersion's fresh counter in variable_data()),
// so `x.data.add_(1)` leaves x._version where it was and a saved x is not
// caught by the check: the reason torch's docs prefer x.detach(), which
// shares x's counter. That alias keeps its counter in
// TensorImpl::own_version, and its views and detach() share it.
struct StorageImpl : RefCounted {
  StorageImpl(DataPtr d, Device dev) : data(d), device(dev) {}
  ~StorageImpl() override { data.release(); }
  DataPtr data;
  Device device;
  std::atomic<uint32_t> version{0};  // bumped by every in-place write (Note [Version counter and view base])
  bool pinned = false;  // page-locked host memory (Tensor.pin_memory(), streams::pinned_allocate): copies may be async
};

// A version counter apart from the storage's: x.data's (Note [Version counter and view base]).
struct VersionCounter : RefCounted {
  std::atomic<uint32_t> value{0};
};

// Note [Inference tensors outside inference mode]
// ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
// A tensor made in inference mode (TensorImpl::inference) has no Autograd
// and no ADInplaceOrView key, and PyTorch gives it no version counter. Out
// of the mode, PyTorch refuses what would need one: an in-place write to it
// (the ADInplaceOrView kernel of the op, reached through the other
// operand's keys), reading t._version, saving it for backward, and
// t.requires_grad_(). descent refuses the same, in PyTorch's words. An
// alias (a view, detach()) is what its source is: a view of a normal
// tensor made inside the mode is a normal tensor, as in PyTorch.

// [SECTION] TensorImpl -------------------------------------------------------

// What the autograd floor keeps on a tensor (grad, grad_fn, hooks):
// floors/autograd/variable.h derives from this. Core only holds it, as
// c10::TensorImpl holds an AutogradMetaInterface, so that core does not
// depend on the floor above it. Null until autograd has something to keep.
struct AutogradMetaInterface : RefCounted {};

struct TensorImpl : RefCounted {
  TensorImpl(Ref<StorageImpl> s, ScalarType t, const DimVector& sz, const DimVector& st, int64_t off);

  Ref<StorageImpl> storage;
  DimVector sizes;
  DimVector strides;   // in elements, not bytes
  int64_t offset = 0;  // in elements
  int64_t numel = 0;
  ScalarType dtype;
  Device device;
  // True for a leaf that requires grad and for every result autograd
  // recorded (it has a grad_fn): what an Autograd kernel reads first.
  bool requires_grad = false;
  Ref<AutogradMetaInterface> autograd;  // grad, grad_fn, hooks (floors/autograd/variable.h); null: none yet
  bool wrapped_number = false;          // a Python number turned into a 0-d tensor (Note [Type promotion])
  Ref<TensorImpl>
      base;  // a view op's result: the tensor it views; null otherwise (Note [Version counter and view base])
  Ref<VersionCounter> own_version;  // null: the storage's counter; x.data's own (Note [Version counter and view base])
  uint32_t view_version =
      0;  // a view's version when its grad_fn was made (Note [A view's grad_fn after an in-place write])
  bool inference = false;  // made in inference mode: no Autograd or ADInplaceOrView key
  void* pyobj =
      nullptr;  // the Python object wrapping this tensor, borrowed (Note [One Python object per tensor], tensor_object.cpp)
  DispatchKeySet keys;  // the key set this tensor contributes (Note [Computing the key set])

  void refresh_keys();  // after a device change
};

// [SECTION] Tensor -----------------------------------------------------------

class Tensor {
 public:
  Tensor() = default;
  explicit Tensor(Ref<TensorImpl> impl) : impl_(std::move(impl)) {}

  bool defined() const { return bool(impl_); }
  TensorImpl* impl() const { return impl_.get(); }
  const Ref<TensorImpl>& ref() const { return impl_; }

  int dim() const { return impl_->sizes.size(); }
  const DimVector& sizes() const { return impl_->sizes; }
  const DimVector& strides() const { return impl_->strides; }
  int64_t size(int64_t d) const { return impl_->sizes[wrap_dim(d, dim(), "size")]; }
  int64_t stride(int64_t d) const { return impl_->strides[wrap_dim(d, dim(), "stride")]; }
  int64_t numel() const { return impl_->numel; }
  int64_t offset() const { return impl_->offset; }
  ScalarType dtype() const { return impl_->dtype; }
  Device device() const { return impl_->device; }
  bool requires_grad() const { return impl_->requires_grad; }
  void set_requires_grad(bool r);  // raises for non-float dtypes, like PyTorch
  bool is_contiguous() const;
  bool is_same(const Tensor& o) const { return impl_ == o.impl_; }
  const Ref<StorageImpl>& storage() const { return impl_->storage; }

  // Address of the first element (storage data + offset).
  void* data_ptr() const {
    return static_cast<char*>(impl_->storage->data.ptr) + impl_->offset * int64_t(element_size(impl_->dtype));
  }
  template <typename T>
  T* data() const {
    return static_cast<T*>(data_ptr());
  }

  // A new view of the same storage with other sizes, strides and offset.
  Tensor as_strided(const DimVector& sizes, const DimVector& strides, int64_t offset) const;
  std::string shape_str() const { return sizes().str(); }
  // Note [Version counter and view base]
  std::atomic<uint32_t>& version_counter() const {
    return impl_->own_version ? impl_->own_version->value : impl_->storage->version;
  }
  uint32_t version() const { return version_counter().load(std::memory_order_relaxed); }
  bool is_view() const { return bool(impl_->base); }

 private:
  Ref<TensorImpl> impl_;
};

// Marks an in-place write to `t` (Note [Version counter and view base]).
// Called by the ADInplaceOrView kernel of every in-place op, as PyTorch's
// torch::autograd::increment_version is (Note [ADInplaceOrView]).
inline void bump_version(const Tensor& t) { t.version_counter().fetch_add(1, std::memory_order_relaxed); }

// Allocates a contiguous tensor of `sizes` on `device` (through floor 6).
// The elements are not initialised. Used by kernels and factories.
Tensor empty_tensor(const DimVector& sizes, ScalarType dtype, Device device);
// The same laid out by `strides`, over new memory just large enough for the
// elements they reach (aten::empty_strided; none may be negative): an
// elementwise op's output that follows its inputs' layout (Note [Output
// strides follow the inputs], floors/kernels/layout.cpp), _to_copy's result.
Tensor empty_strided_tensor(const DimVector& sizes, const DimVector& strides, ScalarType dtype, Device device);

// A 0-d tensor holding `s` in its own dtype (float64, int64 or bool); a
// wrapped number (Note [Type promotion]) unless `wrapped` is false.
Tensor scalar_tensor(const Scalar& s, bool wrapped = true);

// Memory for `device`, from the allocator its floor set for its type
// (data_ptr.h): the CPU allocator for cpu, the device's caching allocator
// otherwise (on the thread's current stream of that device). RuntimeError
// naming the device when it is not available here.
DataPtr allocate_bytes(size_t nbytes, Device device);

}  // namespace descent
