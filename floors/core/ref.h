// Ref<T>: an intrusive reference-counted pointer, the ownership model of
// Storage and TensorImpl (as c10::intrusive_ptr is PyTorch's).
#pragma once

#include <atomic>
#include <cstdint>
#include <utility>

namespace descent {

// Base class of reference-counted objects. A new object starts at count 0;
// the first Ref that takes it makes it 1.
class RefCounted {
 public:
  RefCounted() = default;
  RefCounted(const RefCounted&) = delete;
  RefCounted& operator=(const RefCounted&) = delete;
  virtual ~RefCounted() = default;
  int use_count() const { return refs_.load(std::memory_order_relaxed); }

 protected:
  // What the last Ref does with the object: deletes it. A class whose objects
  // own chains of others (autograd's nodes) may defer the delete instead, so
  // that freeing a chain of a million does not recurse a million deep
  // (Note [Freeing a graph without recursion], floors/autograd/node.cpp).
  virtual void delete_self() { delete this; }

 private:
  template <typename T>
  friend class Ref;
  mutable std::atomic<int> refs_{0};
};

template <typename T>
class Ref {
 public:
  Ref() = default;
  explicit Ref(T* p) : p_(p) { retain(); }
  Ref(const Ref& o) : p_(o.p_) { retain(); }
  Ref(Ref&& o) noexcept : p_(std::exchange(o.p_, nullptr)) {}
  ~Ref() { release(); }
  Ref& operator=(Ref o) noexcept {
    std::swap(p_, o.p_);
    return *this;
  }
  // A new object's first reference is a plain store: no other thread can see
  // the object yet, so the atomic increment (a locked instruction) is not needed.
  template <typename... Args>
  static Ref make(Args&&... args) {
    T* p = new T(std::forward<Args>(args)...);
    p->refs_.store(1, std::memory_order_relaxed);
    return adopt(p);
  }

  T* get() const { return p_; }
  T* operator->() const { return p_; }
  T& operator*() const { return *p_; }
  explicit operator bool() const { return p_ != nullptr; }
  bool operator==(const Ref& o) const { return p_ == o.p_; }
  // Gives up ownership without decrementing (for handing to Python objects).
  T* leak() { return std::exchange(p_, nullptr); }
  // Takes ownership of a pointer whose count already includes this reference.
  static Ref adopt(T* p) {
    Ref r;
    r.p_ = p;
    return r;
  }

 private:
  void retain() {
    if (p_) p_->refs_.fetch_add(1, std::memory_order_relaxed);
  }
  // The last reference deletes. When the count reads 1 this Ref is the only
  // one, so no other thread can be copying it concurrently (it would need a
  // reference of its own): delete without the locked decrement. The acquire
  // load pairs with the release of other owners' earlier decrements.
  void release() {
    if (!p_) return;
    if (p_->refs_.load(std::memory_order_acquire) == 1 || p_->refs_.fetch_sub(1, std::memory_order_acq_rel) == 1)
      static_cast<RefCounted*>(p_)->delete_self();  // virtual: a class may defer its delete
  }
  T* p_ = nullptr;
};

}  // namespace descent
