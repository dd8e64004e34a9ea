// The matrix product's rungs, one table per device type (Note [Matmul rungs]).
#include "floors/kernels/cpu/matmul_rungs.h"

#include <algorithm>
#include <atomic>
#include <iterator>
#include <span>

#include "floors/core/error.h"

namespace descent::kernels {

// Note [Matmul rungs]
// ~~~~~~~~~~~~~~~~~~~
// Each device type's matrix product is a ladder of kernels, plainest first,
// all kept: the lower rungs are what a student reads to see what the upper
// ones change, and what the verifier holds them to. On the CPU:
//   reference  the plain loop over any strides (reference.cpp);
//   register   a tile of sums kept in vector registers, bit for bit the
//              reference (Note [Register-blocked matmul], optimized_matmul.cpp);
//   packed     BLIS's loop nest over panels of a and b packed to fit the
//              caches, fused multiply-adds: within Note [Device matmul bound]
//              of the reference (Note [Packed matmul], packed_matmul.cpp).
// "auto" lets the kernel choose (the packed rung where it is faster, Note
// [Packed matmul]). A rung that cannot run a call (packed for int64 or
// float16, or without FMA) hands it to the rung below; the kernel span's
// rung= argument and last_matmul_rung() name the one that ran. sim:0's and a
// GPU's ladders are Note [The matmul ladder] (matmul_ladder.h); descent._C's
// _matmul_rungs(device) and _set_matmul_rung(device, name) serve both, and
// list the rungs alike: plainest first, "auto" a choice but not a rung
// (binding/ladder_functions.cpp).
namespace {

constexpr const char* kCpuRungs[] = {"auto", "reference", "register", "packed"};
constexpr const char* kNoLadder[] = {"auto"};

struct Ladder {
  DeviceType device;
  std::span<const char* const> rungs;
};
constexpr Ladder kLadders[] = {
    {DeviceType::CPU, kCpuRungs},
};

std::span<const char* const> rungs_of(DeviceType d) {
  for (const Ladder& l : kLadders)
    if (l.device == d) return l.rungs;
  return kNoLadder;
}

// The chosen rung per device type, an index into its row (0: "auto").
std::atomic<int> g_chosen[3];

}  // namespace

std::vector<std::string> matmul_rungs(DeviceType device) {
  const auto r = rungs_of(device);
  return {r.begin() + 1, r.end()};  // the rungs, as the device ladder lists them: "auto" is a choice, not a rung
}

const char* matmul_rung(DeviceType device) {
  return rungs_of(device)[size_t(g_chosen[size_t(device)].load(std::memory_order_relaxed))];
}

void set_matmul_rung(DeviceType device, std::string_view name) {
  const auto r = rungs_of(device);
  const auto it = std::find(r.begin(), r.end(), name);
  std::string choices;
  for (const char* n : r) choices += str(choices.empty() ? "'" : ", '", n, "'");
  DESCENT_CHECK(it != r.end(), ValueError, "set_matmul_rung(): '", name, "' is not a matmul rung of ",
                device_type_name(device), "; choose one of ", choices);
  g_chosen[size_t(device)].store(int(it - r.begin()), std::memory_order_relaxed);
}

const char*& last_matmul_rung() {
  thread_local const char* r = "none";
  return r;
}

}  // namespace descent::kernels
