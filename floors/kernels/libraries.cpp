// Floor 5's registration: one library for each backend key, and one for the
// composites (Note [Registering kernels like TORCH_LIBRARY_IMPL], library.h).
#include "floors/kernels/kernels.h"

namespace descent {

// Every backend gets the same boxed kernels, whose loop alone depends on the
// device (Note [One kernel body, two devices]); the composites land at every
// Dense and Autograd key (alias_runtime_keys).
void register_kernels() {
  Library cpu(Library::IMPL, "aten", DispatchKey::CPU);
  register_backend_kernels(cpu);
  Library sim(Library::IMPL, "aten", DispatchKey::Sim);
  register_backend_kernels(sim);
#ifdef DESCENT_HAVE_CUDA
  Library cuda(Library::IMPL, "aten", DispatchKey::CUDA);
  register_backend_kernels(cuda);
#endif
  Library composites(Library::IMPL, "aten", DispatchKey::CompositeImplicitAutograd);
  register_composite_kernels(composites);
}

}  // namespace descent
