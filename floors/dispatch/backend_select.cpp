// BackendSelect: factory functions pick their backend from their `device` argument.
//
// A factory (empty, ones, arange...) has no tensor argument, so the key set
// of its call holds no backend key. Its BackendSelect kernel reads the
// `device` argument (cpu when absent), adds that backend's key and passes the
// call down. See Note [Dispatch key priority].
#include "floors/dispatch/dispatcher.h"
#include "floors/dispatch/library.h"
#ifndef DESCENT_HAVE_CUDA
#include "floors/streams/streams.h"
#endif

namespace descent {

namespace {

DispatchKey backend_key(Device d) {
  switch (d.type) {
    case DeviceType::CPU: return DispatchKey::CPU;
    case DeviceType::Sim: return DispatchKey::Sim;
    case DeviceType::CUDA: return DispatchKey::CUDA;
  }
  return DispatchKey::CPU;
}

void backend_select(const OpEntry& op, DispatchKeySet keys, Stack& stack) {
  // By schema, a factory's last argument is `Device? device`.
  const IValue& dev = stack[stack.size() - 1];
  Device d = dev.is_none() ? Device{} : dev.to_device();
#ifndef DESCENT_HAVE_CUDA
  // A build without CUDA registers no CUDA kernels (dispatcher.cpp), so a
  // factory asked for cuda:N would end in "no kernel is registered": name the
  // device and why it is missing in one line instead, as a CUDA build's
  // allocator does for a device this machine lacks.
  if (d.type == DeviceType::CUDA) streams::check_device(d);
#endif
  redispatch_boxed(op, keys.below(DispatchKey::BackendSelect).add(backend_key(d)), stack);
}

}  // namespace

void register_backend_select_kernels(Library& m) {
  // Every factory's schema ends with `Device? device` (a dispatch test checks it).
#define DESCENT_REGISTER_FACTORY(id, schema, dispatch, kind, exact, domain, module, sample) \
  if (OpKind::kind == OpKind::Factory) m.impl(Op::id, backend_select);
  DESCENT_FORALL_OPS(DESCENT_REGISTER_FACTORY)
#undef DESCENT_REGISTER_FACTORY
}

}  // namespace descent
