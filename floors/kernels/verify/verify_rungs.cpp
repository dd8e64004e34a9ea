// The verifier over the matmul ladder: every rung a device runs, on every
// dtype it takes, against the CPU's reference loop (Note [The matmul
// ladder], matmul_ladder.h; the bounds are Note [Device claims]'s).
//
// The op table's sample of mm is one small product; a rung is held to the
// reference on the calls that reach its edges too: sizes that are no
// multiple of any tile, tiles cut at every edge (and K not a multiple of
// the k step), a transposed a, a transposed b, and a batch. A rung that
// cannot take a call (wgmma reads only rows contiguous along k and n)
// hands it down, as in any product, and the verdict says so; where the
// rung's own rules say it takes the call, another rung running is a failure.
#include <algorithm>
#include <cstdio>
#include <utility>
#include <type_traits>

#include "floors/core/error.h"
#include "floors/kernels/kernels.h"
#include "floors/kernels/ladder/matmul_ladder.h"
#include "floors/kernels/device/random.h"
#include "floors/kernels/verify/verifier.h"

namespace descent::kernels {

namespace {

// A CPU matrix of uniform values: [-4, 4) for floats, [-10, 10) for the
// signed integers, [0, 20) for uint8 (the verifier's samples' ranges).
Tensor uniform(const DimVector& sizes, ScalarType dt, uint64_t seed, uint64_t salt) {
  Tensor t = empty_tensor(sizes, dt, Device{});
  visit_dtype(dt, [&]<typename T>() {
    T* p = t.data<T>();
    for (int64_t i = 0; i < t.numel(); ++i) {
      const double u = uniform_double(uint64_t(i) + (salt << 32), seed);
      if constexpr (std::is_same_v<T, bool>)
        p[i] = u < 0.5;
      else if constexpr (std::is_unsigned_v<T>)
        p[i] = T(u * 20);
      else if constexpr (std::is_integral_v<T>)
        p[i] = T(T(u * 20) - 10);
      else
        p[i] = T(8 * u - 4);
    }
  });
  return t;
}

// The transpose of a fresh [cols, rows] matrix: a [rows, cols] view with strides (1, rows).
Tensor transposed(int64_t rows, int64_t cols, ScalarType dt, uint64_t seed, uint64_t salt) {
  return uniform({cols, rows}, dt, seed, salt).as_strided({rows, cols}, {1, rows}, 0);
}

struct Case {
  const char* name;
  Op op;
  Stack args;
  bool wgmma_takes;  // whether rung 5's rules take it (else it hands it to rung 4)
};

std::vector<Case> cases(ScalarType dt, uint64_t seed) {
  auto stack = [](Tensor a, Tensor b) {
    Stack s;
    s.push(IValue(std::move(a)));
    s.push(IValue(std::move(b)));
    return s;
  };
  std::vector<Case> c;
  c.push_back({"37x53x29", Op::mm, stack(uniform({37, 53}, dt, seed, 1), uniform({53, 29}, dt, seed, 2)), false});
  c.push_back({"136x72x264", Op::mm, stack(uniform({136, 72}, dt, seed, 3), uniform({72, 264}, dt, seed, 4)), true});
  c.push_back({"a.t 40x53x48", Op::mm, stack(transposed(40, 53, dt, seed, 5), uniform({53, 48}, dt, seed, 6)), false});
  c.push_back({"b.t 40x56x48", Op::mm, stack(uniform({40, 56}, dt, seed, 7), transposed(56, 48, dt, seed, 8)), false});
  c.push_back(
      {"3x40x24x72", Op::bmm, stack(uniform({3, 40, 24}, dt, seed, 9), uniform({3, 24, 72}, dt, seed, 10)), true});
  return c;
}

// Sets a device's rung for a scope, and puts back what was asked before.
struct RungGuard {
  Device d;
  device::MatmulRung before;
  RungGuard(Device dev, const std::string& name) : d(dev), before(device::requested_matmul_rung(dev)) {
    device::set_matmul_rung(d, name);
  }
  ~RungGuard() { device::set_matmul_rung(d, device::rung_name(before)); }
};

// Allows TF32 for a scope (or not), and puts back what was set before.
struct Tf32Guard {
  bool before = device::allow_tf32();
  explicit Tf32Guard(bool allow) { device::set_allow_tf32(allow); }
  ~Tf32Guard() { device::set_allow_tf32(before); }
};

}  // namespace

std::vector<Verdict> verify_matmul_rungs(uint64_t seed, Device d) {
  std::vector<Verdict> out;
  if (d.type == DeviceType::CPU) return out;
  const std::vector<std::string> rungs = device::matmul_rungs(d);
  // Every rung as it is, then CUDA's wmma once more with TF32 allowed, on float32 alone (Note [TF32 matmul]).
  std::vector<std::pair<std::string, bool>> passes;
  for (const std::string& name : rungs) passes.push_back({name, false});
  if (d.type == DeviceType::CUDA && std::find(rungs.begin(), rungs.end(), "wmma") != rungs.end())
    passes.push_back({"wmma", true});
  for (const auto& [name, tf32] : passes) {
    RungGuard guard(d, name);
    Tf32Guard allow(tf32);
    const auto rung = device::requested_matmul_rung(d);
    for (int t = 0; t < kNumScalarTypes; ++t) {
      const ScalarType dt = ScalarType(t);
      if (!device::rung_takes(rung, dt) || (tf32 && dt != ScalarType::Float32)) continue;
      for (const Case& c : cases(dt, seed)) {
        device::last_matmul_run() = device::RungRun{};
        Verdict v = verify_call(op_entry(c.op), c.args, dt, d);
        const device::RungRun& ran = device::last_matmul_run();
        if (v.claim == "unsupported") {  // the CPU's reference refused it: no rung ran
          out.push_back(std::move(v));
          continue;
        }
        v.op = str(op_entry(c.op).python_name, "[", name, tf32 ? " tf32" : "", "] ", c.name);
        v.variants = str("reference vs ", d.type == DeviceType::CUDA ? "cuda " : "sim ", device::rung_name(ran.rung));
        const bool may_hand_down = rung == device::MatmulRung::Wgmma && !c.wgmma_takes;
        if (v.passed && ran.rung != rung && !may_hand_down) {
          v.passed = false;
          v.detail =
              str("asked for ", name, ", ran ", device::rung_name(ran.rung), " (", ran.kernel, "): ", ran.fallback);
        } else if (v.passed) {
          v.detail = ran.fallback.empty() ? str("kernel ", ran.kernel) : str("handed down: ", ran.fallback);
        }
        out.push_back(std::move(v));
      }
    }
  }
  return out;
}

}  // namespace descent::kernels
