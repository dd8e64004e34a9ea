// Starting the runtime: every floor registers what it gives the floors
// beneath it, once, in a defined order. See Note [Registering the floors]
// (registration.cpp).
#pragma once

namespace descent {

// Registers the allocators (floors 6 and 7) and every floor's kernels
// (3, 4, 5), then checks the op table's declared kernels. Runs once, on the
// first call (std::call_once); later calls return at once, and a call from
// another thread meanwhile waits for it. Every program that runs ops calls
// it first: the extension's module init (floors/binding/module.cpp), the
// app, the test mains and the benchmarks.
void register_floors();

}  // namespace descent
