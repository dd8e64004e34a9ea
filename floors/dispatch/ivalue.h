// IValue and Stack: the boxed calling convention of the dispatcher.
//
// Every op is called the same way: its arguments are pushed on a Stack of
// IValues in schema order, the kernel pops them and pushes its results. This
// is what lets one dispatcher, one binding and one tracer serve every op
// (PyTorch's "boxed" kernels work the same way).
#pragma once

#include <new>
#include <utility>
#include <vector>

#include "floors/core/device.h"
#include "floors/core/scalar.h"
#include "floors/core/tensor.h"

namespace descent {

// A list of tensors, one argument: aten's Tensor?[] (index's and
// index_put_'s indices), whose elements may be None (an undefined Tensor
// here), or its Tensor[] (cat's tensors), whose elements never are. Any
// length: cat may join a hundred tensors (an index list is held to a
// tensor's dims by the ops that take one).
class OptionalTensorList {
 public:
  int size() const { return int(v_.size()); }
  const Tensor& operator[](int i) const { return v_[size_t(i)]; }
  const Tensor* begin() const { return v_.data(); }
  const Tensor* end() const { return v_.data() + v_.size(); }
  void push_back(Tensor t) { v_.push_back(std::move(t)); }  // None as Tensor()

 private:
  std::vector<Tensor> v_;
};

// Note [Borrowed arguments]
// ~~~~~~~~~~~~~~~~~~~~~~~~~
// Pushing a Tensor on a stack would copy its Ref, and a Ref copy is an
// atomic increment (and a decrement when the stack is cleared), about a
// tenth of a 1-element add. A caller whose tensors outlive
// the call (call() for an lvalue, the binding for a Python argument) pushes
// IValue::borrow(t) instead: the stack holds a pointer to the caller's Tensor.
// Reading it through the const accessor costs nothing; copying the IValue, or
// asking for a mutable Tensor& (to move a result out), first turns it into an
// owned copy, so a borrowed value can never leave the call or be moved from.
class IValue {
 public:
  enum class Tag : uint8_t { None, Tensor, Double, Int, Bool, IntList, ScalarType, Device, TensorList };

  IValue() : tag_(Tag::None) {}
  IValue(Tensor t) : tag_(Tag::Tensor) { new (&u_.t) Tensor(std::move(t)); }
  IValue(double d) : tag_(Tag::Double) { u_.d = d; }
  IValue(int64_t i) : tag_(Tag::Int) { u_.i = i; }
  IValue(int i) : IValue(int64_t{i}) {}
  IValue(bool b) : tag_(Tag::Bool) { u_.b = b; }
  IValue(Scalar s);
  IValue(const DimVector& l) : tag_(Tag::IntList) { new (&u_.l) DimVector(l); }
  IValue(ScalarType st) : tag_(Tag::ScalarType) { u_.st = st; }
  IValue(Device dev) : tag_(Tag::Device) { u_.dev = dev; }
  IValue(const OptionalTensorList& l) : tag_(Tag::TensorList) { new (&u_.tl) OptionalTensorList(l); }
  // Note [Borrowed arguments]: `t` must outlive every use of this IValue.
  static IValue borrow(const Tensor& t) {
    IValue v;
    v.tag_ = Tag::Tensor;
    v.borrowed_ = true;
    v.u_.ref = &t;
    return v;
  }
  IValue(const IValue& o) : tag_(Tag::None) { copy_from(o); }
  IValue(IValue&& o) noexcept : tag_(Tag::None) { move_from(std::move(o)); }
  IValue& operator=(const IValue& o) {
    if (this != &o) {
      destroy();
      copy_from(o);
    }
    return *this;
  }
  IValue& operator=(IValue&& o) noexcept {
    if (this != &o) {
      destroy();
      move_from(std::move(o));
    }
    return *this;
  }
  ~IValue() { destroy(); }

  Tag tag() const { return tag_; }
  bool is_none() const { return tag_ == Tag::None; }
  bool is_tensor() const { return tag_ == Tag::Tensor; }
  bool is_tensor_list() const { return tag_ == Tag::TensorList; }
  bool is_borrowed() const { return borrowed_; }
  bool is_scalar() const { return tag_ == Tag::Double || tag_ == Tag::Int || tag_ == Tag::Bool; }

  // Accessors raise TypeError naming the tag found when the type is wrong.
  const Tensor& to_tensor() const;
  // The tensor to move out of a result; a borrowed one becomes an owned copy
  // first (Note [Borrowed arguments]).
  Tensor& owned_tensor();
  double to_double() const;
  int64_t to_int() const;
  bool to_bool() const;
  Scalar to_scalar() const;
  const DimVector& to_int_list() const;
  ScalarType to_scalar_type() const;
  Device to_device() const;
  const OptionalTensorList& to_tensor_list() const;
  const char* tag_name() const;  // "Tensor", "int", ...

 private:
  void destroy() {
    if (tag_ == Tag::Tensor && !borrowed_) u_.t.~Tensor();
    if (tag_ == Tag::TensorList) destroy_list();
    tag_ = Tag::None;
    borrowed_ = false;
  }
  void copy_from(const IValue& o);
  void destroy_list();  // out of line: lists are rare, and GCC then sees no union member it cannot prove built
  // Inline: every argument of every call is moved onto its stack.
  void move_from(IValue&& o) noexcept {
    if (o.tag_ == Tag::Tensor) {
      tag_ = Tag::Tensor;
      borrowed_ = o.borrowed_;
      if (borrowed_)
        u_.ref = o.u_.ref;
      else
        new (&u_.t) Tensor(std::move(o.u_.t));
      o.destroy();
    } else {
      copy_from(o);
    }
  }

  Tag tag_;
  bool borrowed_ = false;  // Tag::Tensor only: u_.ref, not u_.t
  union U {
    U() {}
    ~U() {}
    Tensor t;
    const Tensor* ref;
    double d;
    int64_t i;
    bool b;
    DimVector l;
    ScalarType st;
    Device dev;
    OptionalTensorList tl;
  } u_;
};

constexpr int kMaxStack = 8;  // arguments or results of one call

// A fixed-capacity stack of IValues: no heap allocation per call.
class Stack {
 public:
  int size() const { return n_; }
  IValue& operator[](int i) { return v_[i]; }
  const IValue& operator[](int i) const { return v_[i]; }
  void push(IValue v) {  // raises Error past kMaxStack
    if (n_ >= kMaxStack) too_many_values();
    v_[n_++] = std::move(v);
  }
  IValue pop() { return std::move(v_[--n_]); }
  void clear() {
    for (int i = 0; i < n_; ++i) v_[i] = IValue();
    n_ = 0;
  }
  // Replaces the whole stack by one result.
  void set_result(IValue v) {
    clear();
    push(std::move(v));
  }

 private:
  [[noreturn]] static void too_many_values();
  IValue v_[kMaxStack];
  int n_ = 0;
};

}  // namespace descent
