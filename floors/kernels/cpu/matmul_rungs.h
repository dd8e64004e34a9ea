// The matrix product's ladder: the kernels a student can climb from the plain
// loop to the fast one, each selectable at run time per device type and named
// in the trace (rung=packed). See Note [Matmul rungs] (matmul_rungs.cpp).
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "floors/core/device.h"

namespace descent::kernels {

// The rungs of `device`'s matrix product, plainest to fastest ("reference",
// "register", "packed" on the CPU; none for a device type whose ladder is
// matmul_ladder.h's); "auto" is not listed, but set_matmul_rung takes it.
std::vector<std::string> matmul_rungs(DeviceType device);
// The rung chosen for `device`: "auto" unless set_matmul_rung chose one.
const char* matmul_rung(DeviceType device);
// Chooses a rung for every later product on `device` (all threads); ValueError
// naming the choices for a name not in matmul_rungs(device).
void set_matmul_rung(DeviceType device, std::string_view name);
// The rung the last product on this thread ran ("reference", "register",
// "packed"; "none" before any), as its kernel span names it.
const char*& last_matmul_rung();

// RAII: a scope with `device`'s rung chosen, the previous choice put back after.
struct MatmulRungGuard {
  MatmulRungGuard(DeviceType d, std::string_view name) : device(d), saved(matmul_rung(d)) { set_matmul_rung(d, name); }
  ~MatmulRungGuard() { set_matmul_rung(device, saved); }
  DeviceType device;
  std::string saved;
};

}  // namespace descent::kernels
