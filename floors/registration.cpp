// Starting the runtime: the one function that knows every floor.
//
// Note [Registering the floors]
// ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
// PyTorch's libraries register their kernels as they load: each
// TORCH_LIBRARY_IMPL block is a static object whose constructor calls the
// dispatcher, and the dispatcher knows nothing of who registers. descent's
// floors are static libraries linked into one program, where a static
// initializer runs only if its object file is pulled into the link and in
// an order nobody chooses, so the registration is one call instead:
// register_floors, above every floor it starts (the dispatcher is floor 3
// and knows no floor above it, as c10 knows no ATen kernel). In order:
//   1. core's allocators by device type (data_ptr.h): floor 6 sets the
//      CPU's, floor 7 the simulated device's and CUDA's, so that
//      allocate_bytes can be called from any floor;
//   2. floor 3's own kernels: the fallthrough fallbacks (Autograd,
//      ADInplaceOrView, Autocast, BackendSelect), BackendSelect's kernels
//      for the ops with a device argument, ADInplaceOrView's for the
//      in-place and view ops;
//   3. floor 4's Autograd kernels, after the derivative table is checked;
//   4. floor 5's kernels at CPU, Sim and CUDA, and the composites, then
//      the c10d:: operators' kernels at the same keys, which hand the work
//      to a process group (floors/distributed, Note [Collectives are c10d ops]);
//   5. every row of the op table against the keys it declares (Note
//      [Registering kernels like TORCH_LIBRARY_IMPL]): a missing kernel
//      stops the program here, naming the op, not at the op's first call.
// Each floor registers through a Library for its key (library.h); a kernel
// at one key never depends on another key's, so the order matters only in
// that the check comes last. std::call_once makes it run once whoever calls
// first; an exception (a failed check) leaves it to be tried again.
#include "floors/registration.h"

#include <mutex>

#include "floors/allocator/allocator.h"
#include "floors/autograd/variable_type.h"
#include "floors/dispatch/library.h"
#include "floors/distributed/process_group.h"
#include "floors/kernels/kernels.h"
#include "floors/streams/device_memory.h"

namespace descent {

void register_floors() {
  static std::once_flag once;
  std::call_once(once, [] {
    alloc::register_cpu_allocator();
    streams::register_device_allocators();
    register_dispatch_kernels();
    register_autograd_kernels();
    register_kernels();
    distributed::register_c10d_kernels();
    check_declared_kernels();
  });
}

}  // namespace descent
