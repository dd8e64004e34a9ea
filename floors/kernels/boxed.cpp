// Floor 5: the thread's kernel variant, and which devices a boxed kernel's
// operands may be on (boxed.h).
#include "floors/kernels/boxed.h"

namespace descent::kernels {

Variant& requested_variant() {
  thread_local Variant v = Variant::Auto;
  return v;
}
const char*& last_variant() {
  thread_local const char* v = "none";
  return v;
}

bool cpu_scalar(const Tensor& t) { return t.device().type == DeviceType::CPU && t.dim() == 0; }

// Note [Two device messages] (boxed.h): the first device that is not the CPU first.
[[noreturn]] void devices_differ(const char* op, const Tensor& a, const Tensor& b) {
  (void)op;
  const bool a_first = a.device().type != DeviceType::CPU || b.device().type == DeviceType::CPU;
  const Tensor& first = a_first ? a : b;
  const Tensor& second = a_first ? b : a;
  throw Error(str("Expected all tensors to be on the same device, but found at least two devices, ",
                  first.device().str(), " and ", second.device().str(), "!"));
}

void check_wrapper_devices(const OpEntry& op, DispatchKeySet ks,
                           std::initializer_list<std::pair<const char*, const Tensor*>> args) {
  const Tensor* common = nullptr;
  for (const auto& [name, t] : args) {
    if (!t->defined()) continue;
    if (!common) {
      common = t;
      continue;
    }
    if (t->device() == common->device()) continue;
    const BackendComponent b =
        ks.highest_backend() == BackendComponent::Invalid ? BackendComponent::CPU : ks.highest_backend();
    throw Error(str("Expected all tensors to be on the same device, but got ", name, " is on ", t->device().str(),
                    ", different from other tensors on ", common->device().str(),
                    " (when checking argument in method wrapper_",
                    dispatch_key_name(per_backend_key(Functionality::Dense, b)), "_", op.python_name, ")"));
  }
}

void check_same_device(const char* op, const Tensor& a, const Tensor& b) {
  if (!(a.device() == b.device())) devices_differ(op, a, b);
}

Device common_device(const char* op, const Tensor& a, const Tensor& b) {
  if (a.device() == b.device() || cpu_scalar(b)) return a.device();
  if (cpu_scalar(a)) return b.device();
  devices_differ(op, a, b);
}

void check_inplace_device(const char* op, const Tensor& self, const Tensor& other) {
  if (!(self.device() == other.device() || cpu_scalar(other))) devices_differ(op, self, other);
}

}  // namespace descent::kernels
