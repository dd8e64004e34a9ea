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

[[noreturn]] void devices_differ(const char* op, const Tensor& a, const Tensor& b) {
  throw Error(str(op, "(): Expected all tensors to be on the same device, but found at least two devices, ",
                  a.device().str(), " and ", b.device().str(), "!"));
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
