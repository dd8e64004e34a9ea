// Floor 5's registration: the boxed kernel of every row of the op table, for
// every backend (CPU, Sim, and CUDA in builds with it) alike.
#include "floors/kernels/boxed.h"

namespace descent::kernels {

// Defined in views.cpp and factories.cpp.
void register_view_kernels(Library& m);
void register_factory_kernels(Library& m);  // and uniform_, normal_
BoxedKernel mask_kernel(Op op);             // mask_kernels.cpp: where, masked_fill, tril, triu; null for the others
BoxedKernel nn_kernel(Op op);  // nn_kernels.cpp: softmax, nll_loss, layer_norm, ...; null for the other ops

namespace {

// The boxed kernel of each row of the op table, chosen by the row's kind:
// registered at CPU, Sim and CUDA alike, for the keys the row declares.
BoxedKernel backend_kernel(Op op, OpKind kind) {
  if (BoxedKernel k = nn_kernel(op)) return k;
  switch (kind) {
    case OpKind::Unary:
      return op == Op::clamp || op == Op::clamp_min || op == Op::clamp_max ? clamp_kernel : unary_kernel;
    case OpKind::Binary:
      return binary_kernel;
    case OpKind::Comparison:
      return compare_kernel;
    case OpKind::Matmul:
      return op == Op::addmm ? addmm_kernel : product_kernel;
    case OpKind::Reduction:
      switch (op) {
        case Op::max:
        case Op::max_dim:
          return max_kernel;
        case Op::mse_loss:
          return mse_loss_kernel;
        case Op::argmax:
        case Op::argmin:
          return arg_kernel;
        case Op::all:
        case Op::all_dim:
        case Op::any:
        case Op::any_dim:
          return all_any_kernel;
        default:
          return sum_kernel;
      }
    case OpKind::Copy:
      switch (op) {
        case Op::_to_copy:
          return to_copy_kernel;
        case Op::index:
          return index_kernel;
        case Op::cat:
          return cat_kernel;
        case Op::where:
        case Op::masked_fill:
        case Op::tril:
        case Op::triu:
        case Op::sort:
        case Op::topk:
          return mask_kernel(op);
        case Op::multinomial:
          return nullptr;  // factories.cpp
        default:
          return clone_kernel;
      }
    case OpKind::InPlace:
      switch (op) {
        case Op::copy_:
          return copy__kernel;
        case Op::fill_:
        case Op::zero_:
          return fill__kernel;
        case Op::fill_tensor_:
          return fill_tensor_kernel;
        case Op::index_put_:
          return index_put_kernel;
        case Op::clamp_:
          return clamp__kernel;
        case Op::uniform_:
        case Op::normal_:
        case Op::random_from_:
          return nullptr;  // factories.cpp, beside rand and randn
        default:
          return inplace_binary_kernel;
      }
    case OpKind::Read:
      return local_scalar_dense_kernel;  // item is a composite (composites.cpp)
    case OpKind::View:
    case OpKind::Factory:
      break;  // views.cpp, factories.cpp
    case OpKind::Collective:
      break;  // the distributed floor's (floors/distributed/c10d_kernels.cpp)
  }
  return nullptr;
}

// The same kernels unboxed (Note [Boxed and unboxed calls], unboxed.h), in
// the schemas' signatures: add.Tensor and sub.Tensor take alpha, mul and div do not.
using BinaryAlphaSig = Tensor(const Tensor&, const Tensor&, const Scalar&);
using BinarySig = Tensor(const Tensor&, const Tensor&);
template <Op kOp>
Tensor typed_binary_alpha(DispatchKeySet, const Tensor& a, const Tensor& b, const Scalar& alpha) {
  return binary_op(op_entry(kOp), a, b, alpha);
}
template <Op kOp>
Tensor typed_binary(DispatchKeySet, const Tensor& a, const Tensor& b) {
  return binary_op(op_entry(kOp), a, b, Scalar(int64_t{1}));
}

// The kernel to register: both conventions where the op has a typed form.
Kernel with_typed(Op op, BoxedKernel k) {
  switch (op) {
    case Op::add:
      return Kernel::both(k, &typed_binary_alpha<Op::add>, signature_id<BinaryAlphaSig>());
    case Op::sub:
      return Kernel::both(k, &typed_binary_alpha<Op::sub>, signature_id<BinaryAlphaSig>());
    case Op::mul:
      return Kernel::both(k, &typed_binary<Op::mul>, signature_id<BinarySig>());
    case Op::div:
      return Kernel::both(k, &typed_binary<Op::div>, signature_id<BinarySig>());
    default:
      return Kernel(k);
  }
}

}  // namespace

}  // namespace descent::kernels

namespace descent {

namespace {
bool declares(const char* dispatch, DispatchKey key) {
  for (DispatchKey k : declared_keys(dispatch))
    if (k == key) return true;
  return false;
}
}  // namespace

// Every row of the op table that declares m's key (Note [One op table]) gets
// the boxed kernel of its kind: one kernel for every backend, whose loop
// alone depends on the device (Note [One kernel body, two devices]).
void register_backend_kernels(Library& m) {
#define DESCENT_REGISTER_BACKEND(id, schema, dispatch, kind, exact, domain, module, sample) \
  if (declares(dispatch, m.key()))                                                          \
    if (auto k = kernels::backend_kernel(Op::id, OpKind::kind)) m.impl(Op::id, kernels::with_typed(Op::id, k));
  DESCENT_FORALL_OPS(DESCENT_REGISTER_BACKEND)
#undef DESCENT_REGISTER_BACKEND
  kernels::register_view_kernels(m);
  kernels::register_factory_kernels(m);
}

}  // namespace descent
