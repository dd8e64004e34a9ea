// Floor 3: where each kernel of the table was registered, for the binding's
// torch._C._dispatch_dump and _dispatch_dump_table (floors/binding/
// dispatch_introspection.cpp). The dispatcher keeps, per op and runtime key,
// the registering library's "file:line" and the key it named (an alias key
// such as CompositeImplicitAutograd, or the runtime key itself), and the same
// for each key's fallback; a call never reads them.
#pragma once
#include <string>

#include "floors/dispatch/dispatcher.h"

namespace descent {

struct Registration {
  std::string where;                           // "floors/kernels/register_kernels.cpp:40"; "" for none
  DispatchKey named = DispatchKey::Undefined;  // the key the library was for: CPU, or Autograd (an alias)
};
// What `op` registered itself at runtime key `key` (a kernel or a fallthrough mark); none for an
// operator Library::def made, whose sites are not kept.
Registration op_registration(const OpEntry& op, DispatchKey key);
// What registered `key`'s fallback, the kernel every op without its own there runs.
Registration fallback_registration(DispatchKey key);
// The fallback itself (a kernel, a fallthrough, or neither).
Kernel fallback_kernel(DispatchKey key);

}  // namespace descent
