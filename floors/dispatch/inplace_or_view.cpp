// ADInplaceOrView: the key between the backends and autograd that keeps the
// bookkeeping autograd relies on (PyTorch's generated ADInplaceOrViewType.cpp).
//
// Note [ADInplaceOrView]
// ~~~~~~~~~~~~~~~~~~~~~~
// Two kinds of op need it, read off their schemas' alias annotations:
//   - an op that writes into an argument (`Tensor(a!) self`: add_, copy_,
//     fill_, ...) runs below this key, then bumps that tensor's version
//     counter, which autograd compares with the version it saved to catch a
//     saved tensor modified in place (Note [Version counter and view base]);
//   - a view op (`Tensor(a) self -> Tensor(a)`: view, select, transpose, ...)
//     runs below this key, then records the result's base, so that autograd
//     can rebase a view that is written in place.
// Every other op falls through the key (the fallback, dispatcher.cpp), and so
// do the composites, whose parts do their own bookkeeping. Every tensor
// carries the key and the thread includes it, so the bookkeeping happens
// whether or not anything requires grad; in inference mode a tensor made
// there carries no ADInplaceOrView key, so it has no version to bump, as in
// PyTorch. The trace shows the key running: `kernel=ADInplaceOrView`, then a
// redispatch to the backend.
#include "floors/dispatch/dispatcher.h"
#include "floors/dispatch/library.h"

namespace descent {

namespace {

void write_in_place(const OpEntry& op, DispatchKeySet keys, Stack& s) {
  const Tensor self = s[0].to_tensor();  // owned: the stack is the result's once the op below has run
  // Note [Inference tensors outside inference mode] (tensor.h). PyTorch
  // raises when it bumps the version, after the write; descent before it.
  DESCENT_CHECK(!self.impl()->inference || autograd_state().inference_mode, Error,
                "Inplace update to inference tensor outside InferenceMode is not allowed.You can make a clone to get "
                "a normal tensor before doing inplace update.See https://github.com/pytorch/rfcs/pull/17 for more "
                "details.");
  redispatch_boxed(op, keys.below(DispatchKey::ADInplaceOrView), s);
  bump_version(self);
}

void make_view(const OpEntry& op, DispatchKeySet keys, Stack& s) {
  const Tensor self = s[0].to_tensor();
  redispatch_boxed(op, keys.below(DispatchKey::ADInplaceOrView), s);
  const Tensor& view = s[0].to_tensor();
  if (view.impl() == self.impl()) return;  // an op that handed back its input made no new view
  view.impl()->base = self.is_view() ? self.impl()->base : self.ref();  // a view of a view shares the root base
  view.impl()->own_version = self.impl()->own_version;  // and its counter (Note [Version counter and view base])
  view.impl()->view_version = view.version();  // Note [A view's grad_fn after an in-place write] (copy_slices.cpp)
}

bool is_composite(const OpEntry& e) { return std::string_view(e.dispatch).find("Composite") != std::string_view::npos; }

}  // namespace

void register_inplace_or_view_kernels(Library& m) {
  for (const OpEntry& e : ops_for_registration()) {
    if (is_composite(e)) continue;
    if (e.schema.is_mutable())
      m.impl(e.id, write_in_place);
    else if (e.schema.is_view())
      m.impl(e.id, make_view);
  }
}

}  // namespace descent
