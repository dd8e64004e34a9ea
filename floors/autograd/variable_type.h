// Floor 4's kernels at the dispatcher (variable_type.cpp): what the floor
// registers. See Note [What an Autograd kernel does] (variable_type.cpp).
#pragma once

namespace descent {

// Registers the Autograd kernel of every op with a derivative, and the
// kernel that records nothing for the comparisons and reads, at the
// Autograd alias key, after checking the derivative table against the op
// table (Note [One derivative per op]). Run once by register_floors
// (floors/registration.h, Note [Registering the floors]).
void register_autograd_kernels();

}  // namespace descent
