// BackendSelect: the ops that take a `device` argument pick their backend from it.
//
// A factory (empty, ones, arange...) has no tensor argument, so the key set
// of its call holds no backend key. Its BackendSelect kernel reads the
// `device` argument (cpu when absent, as c10's computeDispatchKey takes it),
// adds that backend's key and passes the call down. An op with a tensor and
// a device (_to_copy: x.to("sim")) gets the same kernel, as aten generates
// one for every op with TensorOptions (RegisterBackendSelect.cpp): the
// device's key joins the tensor's, and the higher of the two backends runs
// (Note [Dispatch key priority]); its kernel copies either way.
#include <string_view>

#include "floors/dispatch/dispatcher.h"
#include "floors/dispatch/library.h"
#ifndef DESCENT_HAVE_CUDA
#include "floors/streams/streams.h"
#endif

namespace descent {

namespace {

DispatchKey backend_key(Device d) {
  switch (d.type) {
    case DeviceType::CPU:
      return DispatchKey::CPU;
    case DeviceType::Sim:
      return DispatchKey::Sim;
    case DeviceType::CUDA:
      return DispatchKey::CUDA;
  }
  return DispatchKey::CPU;
}

void backend_select(const OpEntry& op, DispatchKeySet keys, Stack& stack) {
  // By schema, the last argument is `Device? device` (a dispatch test checks it).
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
  // Every row that declares BackendSelect (ops.h), whose schema ends with `Device? device`.
#define DESCENT_REGISTER_BACKEND_SELECT(id, schema, dispatch, kind, exact, domain, module, sample) \
  if (std::string_view(dispatch).starts_with("BackendSelect")) m.impl(Op::id, backend_select);
  DESCENT_FORALL_OPS(DESCENT_REGISTER_BACKEND_SELECT)
#undef DESCENT_REGISTER_BACKEND_SELECT
}

}  // namespace descent
