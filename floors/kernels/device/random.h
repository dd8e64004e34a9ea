// The devices' random number generator: counter-based (Philox4x32-10), so
// that element i of a seeded call is the same number on every run, device
// and thread count. The CPU draws PyTorch's own stream instead (Note
// [PyTorch's CPU random stream], cpu_generator.h).
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
// sim:0 and cuda:N draw from it, so a seed gives them the same numbers
// (CUDA's randn may differ in the last bits: its log and cos are not
// glibc's). The CPU has a generator of its own, PyTorch's mt19937, whose
// numbers are torch's: a device's are not the CPU's, as in PyTorch, and
// PyTorch's CUDA Philox lays its counters out otherwise, so only the CPU
// stream is torch's (Note [PyTorch's CPU random stream], cpu_generator.h).
#pragma once

#include <array>
#include <cmath>
#include <cstdint>

#include "floors/kernels/elementwise.h"  // DESCENT_HD

namespace descent::kernels {

// Ten rounds of Philox4x32 (Salmon et al., SC'11) on a 128-bit counter with a
// 64-bit key, into out[4]. Inline and DESCENT_HD: the CPU's factories, the
// simulated device and CUDA threads all run this very code (Note [One kernel
// body, two devices], device_loops.h), so a seed gives the same bits on each.
DESCENT_HD inline void philox_rounds(uint64_t counter, uint64_t key, uint32_t* out) {
  constexpr uint32_t kMul0 = 0xD2511F53u, kMul1 = 0xCD9E8D57u;    // round multipliers
  constexpr uint32_t kWeyl0 = 0x9E3779B9u, kWeyl1 = 0xBB67AE85u;  // key increments (golden ratio, sqrt(3)-1)
  uint32_t x0 = uint32_t(counter), x1 = uint32_t(counter >> 32), x2 = 0, x3 = 0;
  uint32_t k0 = uint32_t(key), k1 = uint32_t(key >> 32);
  for (int round = 0; round < 10; ++round) {
    const uint64_t p0 = uint64_t(kMul0) * x0, p1 = uint64_t(kMul1) * x2;
    const uint32_t y0 = uint32_t(p1 >> 32) ^ x1 ^ k0, y1 = uint32_t(p1), y2 = uint32_t(p0 >> 32) ^ x3 ^ k1;
    x3 = uint32_t(p0);
    x0 = y0, x1 = y1, x2 = y2;
    k0 += kWeyl0;
    k1 += kWeyl1;
  }
  out[0] = x0, out[1] = x1, out[2] = x2, out[3] = x3;
}
inline std::array<uint32_t, 4> philox4x32(uint64_t counter, uint64_t key) {
  std::array<uint32_t, 4> x;
  philox_rounds(counter, key, x.data());
  return x;
}

struct GeneratorState {
  uint64_t seed;
  uint64_t offset;  // counters already used
};
// Seeds both generators: the CPU's mt19937 (cpu_generator.h) and the
// devices' counters, to (seed, 0), as torch.manual_seed seeds every device's.
void manual_seed(uint64_t seed);
// Reserves `n` device counters: returns the state to draw them from and advances it.
GeneratorState reserve_counters(uint64_t n);

// Uniform in [0, 1) and standard normal values for element counter c. The
// uniforms are integer arithmetic and one exact scaling, so every device
// gives the same bits; the normal goes through log, sqrt and cos, which on
// CUDA may differ from the CPU's libm in the last place or two (PyTorch's
// CUDA generator differs from its CPU one altogether).
DESCENT_HD inline double u53(uint32_t hi, uint32_t lo) { return double(((uint64_t(hi) << 32) | lo) >> 11) * 0x1p-53; }
DESCENT_HD inline float uniform_float(uint64_t c, uint64_t seed) {
  uint32_t w[4];
  philox_rounds(c, seed, w);
  return float(w[0] >> 8) * 0x1p-24f;
}
DESCENT_HD inline double uniform_double(uint64_t c, uint64_t seed) {
  uint32_t w[4];
  philox_rounds(c, seed, w);
  return u53(w[0], w[1]);
}
// Box-Muller on two 53-bit uniforms.
DESCENT_HD inline double normal_double(uint64_t c, uint64_t seed) {
  uint32_t w[4];
  philox_rounds(c, seed, w);
  const double u1 = 1.0 - u53(w[0], w[1]);  // in (0, 1]: log is finite
  const double u2 = u53(w[2], w[3]);
  return std::sqrt(-2.0 * std::log(u1)) * std::cos(6.283185307179586 * u2);
}

// Element counter c of rand or randn in the floating type T. A float16 or
// bfloat16 uniform keeps the top 11 (8) bits of the float32 one: a multiple
// of 2**-11 (2**-8), exact in the type, so it stays below 1 (rounding
// 0.99999994 to float16 would give 1.0, outside rand's [0, 1)).
template <class T>
DESCENT_HD T random_element(uint64_t c, uint64_t seed, bool normal) {
  if (normal) return T(normal_double(c, seed));
  if constexpr (std::is_same_v<T, double>) {
    return uniform_double(c, seed);
  } else if constexpr (std::is_same_v<T, float>) {
    return uniform_float(c, seed);
  } else {
    constexpr float scale = std::is_same_v<T, Half> ? 0x1p11f : 0x1p8f;
    return T(float(int32_t(uniform_float(c, seed) * scale)) / scale);
  }
}

}  // namespace descent::kernels
