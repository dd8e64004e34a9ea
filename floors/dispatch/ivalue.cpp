// IValue accessors and the Stack.
#include "floors/dispatch/ivalue.h"

namespace descent {

IValue::IValue(Scalar s) : tag_(Tag::None) {
  if (s.is_floating())
    *this = IValue(s.to_double());
  else if (s.is_integral())
    *this = IValue(s.to_int());
  else
    *this = IValue(s.to_bool());
}

void IValue::copy_from(const IValue& o) {
  tag_ = o.tag_;
  switch (tag_) {
    case Tag::Tensor:
      new (&u_.t) Tensor(o.to_tensor());
      break;  // a copy owns (Note [Borrowed arguments])
    case Tag::IntList:
      new (&u_.l) DimVector(o.u_.l);
      break;
    case Tag::TensorList:
      new (&u_.tl) OptionalTensorList(o.u_.tl);
      break;
    case Tag::Double:
      u_.d = o.u_.d;
      break;
    case Tag::Int:
      u_.i = o.u_.i;
      break;
    case Tag::Bool:
      u_.b = o.u_.b;
      break;
    case Tag::ScalarType:
      u_.st = o.u_.st;
      break;
    case Tag::Device:
      u_.dev = o.u_.dev;
      break;
    case Tag::None:
      break;
  }
}

void IValue::destroy_list() { u_.tl.~OptionalTensorList(); }

const char* IValue::tag_name() const {
  switch (tag_) {
    case Tag::None:
      return "None";
    case Tag::Tensor:
      return "Tensor";
    case Tag::Double:
      return "float";
    case Tag::Int:
      return "int";
    case Tag::Bool:
      return "bool";
    case Tag::IntList:
      return "int[]";
    case Tag::ScalarType:
      return "dtype";
    case Tag::Device:
      return "Device";
    case Tag::TensorList:
      return "Tensor[]";
  }
  return "?";
}

#define DESCENT_EXPECT_TAG(ok, want) \
  DESCENT_CHECK(ok, TypeError, "expected a value of type ", want, " but got ", tag_name())

const Tensor& IValue::to_tensor() const {
  DESCENT_EXPECT_TAG(tag_ == Tag::Tensor, "Tensor");
  return borrowed_ ? *u_.ref : u_.t;
}
Tensor& IValue::owned_tensor() {
  DESCENT_EXPECT_TAG(tag_ == Tag::Tensor, "Tensor");
  if (borrowed_) {  // Note [Borrowed arguments]: mutable access owns
    const Tensor* p = u_.ref;
    new (&u_.t) Tensor(*p);
    borrowed_ = false;
  }
  return u_.t;
}
double IValue::to_double() const {
  DESCENT_EXPECT_TAG(is_scalar(), "float");
  return to_scalar().to_double();
}
int64_t IValue::to_int() const {
  DESCENT_EXPECT_TAG(tag_ == Tag::Int || tag_ == Tag::Bool, "int");
  return tag_ == Tag::Int ? u_.i : int64_t(u_.b);
}
bool IValue::to_bool() const {
  DESCENT_EXPECT_TAG(tag_ == Tag::Bool, "bool");
  return u_.b;
}
Scalar IValue::to_scalar() const {
  if (tag_ == Tag::Double) return Scalar(u_.d);
  if (tag_ == Tag::Int) return Scalar(u_.i);
  DESCENT_EXPECT_TAG(tag_ == Tag::Bool, "Scalar");
  return Scalar(u_.b);
}
const DimVector& IValue::to_int_list() const {
  DESCENT_EXPECT_TAG(tag_ == Tag::IntList, "int[]");
  return u_.l;
}
ScalarType IValue::to_scalar_type() const {
  DESCENT_EXPECT_TAG(tag_ == Tag::ScalarType, "dtype");
  return u_.st;
}
Device IValue::to_device() const {
  DESCENT_EXPECT_TAG(tag_ == Tag::Device, "Device");
  return u_.dev;
}

const OptionalTensorList& IValue::to_tensor_list() const {
  DESCENT_EXPECT_TAG(tag_ == Tag::TensorList, "Tensor[]");
  return u_.tl;
}

void Stack::too_many_values() { throw Error(str("a call may have at most ", kMaxStack, " arguments")); }

}  // namespace descent
