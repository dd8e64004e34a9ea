// Type promotion and broadcasting: what dtype and shape a result has.
#include "floors/kernels/kernels.h"

namespace descent::kernels {

// Note [Type promotion]
// ~~~~~~~~~~~~~~~~~~~~~
// PyTorch's rule, which descent follows. Each operand has a category (bool <
// integer < floating) and a priority: a tensor with dimensions beats a 0-d
// tensor, which beats a Python number (a "wrapped number", e.g. the 1 in
// x + 1). The result's category is the highest among the operands; its dtype
// is the largest dtype of that category among the operands of highest
// priority that have it. When only Python numbers reach the category, the
// default dtype of the category is used (int64, or float32).
// So: float32 tensor + 1.5 -> float32;  int64 tensor + 1.5 -> float32;
//     float32 tensor + float64 0-d tensor -> float32;  bool + int64 -> int64;
//     float16 tensor + 1.5 -> float16;  int32 tensor + 1 -> int32;
//     uint8 tensor + int64 0-d tensor -> uint8;  int8 tensor + 2.5 -> float32.
// Within a category the larger dtype wins (promote_types): float16 <
// float32 < float64 and bfloat16 < float32, but neither of float16 and
// bfloat16 holds the other (one has the digits, the other the range), so
// the two together give float32, as torch.promote_types does. The integers
// are int8 < int16 < int32 < int64 and uint8 < int16: uint8 and int8 hold
// neither the other (one has 255, the other -1), so together they are
// int16, the smallest that holds both, as in PyTorch's promoteTypes table.
namespace {

int category(ScalarType t) { return t == ScalarType::Bool ? 0 : is_integral(t, false) ? 1 : 2; }
int priority(const Tensor& t) { return t.impl()->wrapped_number ? 0 : t.dim() == 0 ? 1 : 2; }

// Two dtypes of one category.
ScalarType promote_types(ScalarType a, ScalarType b) {
  if (a == b) return a;
  if (is_reduced_floating(a) && is_reduced_floating(b)) return ScalarType::Float32;
  if (is_floating(a)) {
    auto rank = [](ScalarType t) { return is_reduced_floating(t) ? 1 : t == ScalarType::Float32 ? 2 : 3; };
    return rank(a) > rank(b) ? a : b;
  }
  const bool a8 = a == ScalarType::UInt8 || a == ScalarType::Int8, b8 = b == ScalarType::UInt8 || b == ScalarType::Int8;
  if (a8 && b8) return ScalarType::Int16;            // uint8 and int8 (a != b)
  return element_size(a) > element_size(b) ? a : b;  // uint8 with a wider signed int: the wider
}

}  // namespace

ScalarType promote_types_of(ScalarType a, ScalarType b) {
  if (a == b) return a;
  const int ca = category(a), cb = category(b);
  if (ca != cb) return ca > cb ? a : b;
  return promote_types(a, b);
}

ScalarType result_type(const Tensor& a, const Tensor& b) {
  const Tensor* ops[2] = {&a, &b};
  return result_type(ops, 2);
}

ScalarType result_type(const Tensor* const* ops, int n) {
  DESCENT_CHECK(n > 0, Error, "result_type: no operands");
  int cat = 0;
  for (int i = 0; i < n; ++i) cat = std::max(cat, category(ops[i]->dtype()));
  for (int prio = 2; prio >= 0; --prio) {
    bool found = false;
    ScalarType best = ScalarType::Bool;
    for (int i = 0; i < n; ++i) {
      const Tensor* t = ops[i];
      if (priority(*t) == prio && category(t->dtype()) == cat) {
        best = found ? promote_types(best, t->dtype()) : t->dtype();
        found = true;
      }
    }
    if (found) {
      // A wrapped Python float is float64 in C++ but means "some float": use the default.
      if (prio == 0 && cat == 2) return kDefaultFloat;
      return best;
    }
  }
  return ops[0]->dtype();
}

bool can_cast(ScalarType from, ScalarType to) {
  if (is_floating(from) && !is_floating(to)) return false;
  return to != ScalarType::Bool || from == ScalarType::Bool;
}

Tensor cast(const Tensor& t, ScalarType dtype) {
  if (t.dtype() == dtype) return t;
  return call(Op::to, t, dtype);
}

DimVector broadcast_shapes(const DimVector& a, const DimVector& b, const char* op) {
  (void)op;
  int n = std::max(a.size(), b.size());
  DimVector out;
  out.resize(n);
  for (int i = 0; i < n; ++i) {
    int ia = a.size() - n + i, ib = b.size() - n + i;
    int64_t sa = ia >= 0 ? a[ia] : 1, sb = ib >= 0 ? b[ib] : 1;
    // aten's infer_size_impl, word for word: no op prefix, no shapes.
    DESCENT_CHECK(sa == sb || sa == 1 || sb == 1, Error, "The size of tensor a (", sa,
                  ") must match the size of tensor b (", sb, ") at non-singleton dimension ", i);
    out[i] = sa == 1 ? sb : sa;
  }
  return out;
}

Tensor expand_to(const Tensor& t, const DimVector& sizes) {
  if (t.sizes() == sizes) return t;
  DimVector st;
  st.resize(sizes.size());
  int shift = sizes.size() - t.dim();
  for (int i = 0; i < sizes.size(); ++i) {
    int j = i - shift;
    st[i] = (j < 0 || t.sizes()[j] == 1) ? 0 : t.strides()[j];
  }
  return t.as_strided(sizes, st, t.offset());
}

}  // namespace descent::kernels
