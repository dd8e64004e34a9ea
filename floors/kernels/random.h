// The random number generator: counter-based (Philox4x32-10), so that element
// i of a seeded call is the same number on every run, device and thread count.
//
// Note [Counter-based random numbers]
// ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
// A stateful generator (like a Mersenne twister) produces numbers in a
// sequence, so the value of element i depends on who drew before it: a GPU
// running a million threads could not reproduce a CPU's loop. A counter-based
// generator is a keyed hash instead: value = philox(key = seed, counter =
// offset + i). Any thread can compute any element on its own. The generator's
// only state is (seed, offset); each call advances offset by its numel, so
// consecutive calls draw fresh numbers and manual_seed(s) replays them.
#pragma once

#include <array>
#include <cstdint>

namespace descent::kernels {

// Ten rounds of Philox4x32 (Salmon et al., SC'11) on a 128-bit counter with a 64-bit key.
std::array<uint32_t, 4> philox4x32(uint64_t counter, uint64_t key);

struct GeneratorState {
  uint64_t seed;
  uint64_t offset;  // counters already used
};
void manual_seed(uint64_t seed);  // seed, and offset back to 0
// Reserves `n` counters: returns the state to draw them from and advances it.
GeneratorState reserve_counters(uint64_t n);

// Uniform in [0, 1) and standard normal values for element counter c.
float uniform_float(uint64_t c, uint64_t seed);
double uniform_double(uint64_t c, uint64_t seed);
double normal_double(uint64_t c, uint64_t seed);  // Box-Muller on two 53-bit uniforms

}  // namespace descent::kernels
