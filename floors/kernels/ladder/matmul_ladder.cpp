// Floor 5 on a device: the matmul ladder's choice of rung, and the rungs
// sim:0 runs (Note [The matmul ladder], matmul_ladder.h).
//
// [SECTION] Names and settings
// [SECTION] The simulated device's rungs
// [SECTION] The choice
#include "floors/kernels/ladder/matmul_ladder.h"

#include <atomic>
#include <map>
#include <memory>
#include <type_traits>
#include <vector>

#include "floors/core/error.h"
#include "floors/launch/launch.h"
#include "floors/streams/streams.h"

namespace descent::kernels::device {

// [SECTION] Names and settings ----------------------------------------------------------------

const char* rung_name(MatmulRung r) {
  switch (r) {
    case MatmulRung::Auto:
      return "auto";
    case MatmulRung::Naive:
      return "naive";
    case MatmulRung::SharedTiles:
      return "shared_tiles";
    case MatmulRung::RegisterTiles:
      return "register_tiles";
    case MatmulRung::Wmma:
      return "wmma";
    case MatmulRung::Wgmma:
      return "wgmma";
  }
  return "?";
}

const char* matmul_kernel_name(std::string_view family, ScalarType dt) {
  static const auto* names = [] {
    auto* m = new std::map<std::pair<std::string, int>, std::string>;  // never freed: the names outlive every trace
    for (const char* f : {"naive", "shared_16x16", "tiled_64x64", "tiled_128x128"})
      for (int t = 0; t < kNumScalarTypes; ++t)
        (*m)[{f, t}] = std::string("matmul_") + f + "_" + dtype_name(ScalarType(t));
    return m;
  }();
  const auto it = names->find({std::string(family), int(dt)});
  return it == names->end() ? "matmul_unknown" : it->second.c_str();
}

namespace {
std::atomic<bool> g_allow_tf32{false};
}  // namespace
bool allow_tf32() { return g_allow_tf32.load(std::memory_order_relaxed); }
void set_allow_tf32(bool allow) { g_allow_tf32.store(allow, std::memory_order_relaxed); }

bool rung_takes(MatmulRung r, ScalarType dt) {
  if (dt == ScalarType::Bool) return false;
  const bool half = dt == ScalarType::Float16 || dt == ScalarType::BFloat16;
  if (r == MatmulRung::Wmma) return half || (dt == ScalarType::Float32 && allow_tf32());
  if (r == MatmulRung::Wgmma) return half;
  return true;
}

namespace {

constexpr int kMaxDevices = 64;
std::atomic<int> g_sim_rung{0};
std::atomic<int> g_cuda_rung[kMaxDevices] = {};

std::atomic<int>* rung_slot(Device d) {
  if (d.type == DeviceType::Sim) return &g_sim_rung;
  if (d.type == DeviceType::CUDA && d.index >= 0 && d.index < kMaxDevices) return &g_cuda_rung[d.index];
  return nullptr;
}

bool has_wgmma(Device d) {
#ifdef DESCENT_HAVE_CUDA
  return d.type == DeviceType::CUDA && wgmma_available(d.index);
#else
  (void)d;
  return false;
#endif
}

}  // namespace

std::vector<std::string> matmul_rungs(Device d) {
  DESCENT_CHECK(d.type != DeviceType::CPU, ValueError, "matmul rungs: the CPU's product is not a device's ladder");
  std::vector<std::string> out;
  const int top = d.type == DeviceType::Sim ? 3 : has_wgmma(d) ? 5 : 4;
  for (int r = 1; r <= top; ++r) out.push_back(rung_name(MatmulRung(r)));
  return out;
}

void set_matmul_rung(Device d, const std::string& name) {
  std::atomic<int>* slot = rung_slot(d);
  DESCENT_CHECK(slot != nullptr, ValueError, "matmul rungs: ", d.str(), " has no matmul ladder");
  if (name == "auto") return slot->store(0);
  const std::vector<std::string> known = matmul_rungs(d);
  for (size_t i = 0; i < known.size(); ++i)
    if (known[i] == name) return slot->store(int(i) + 1);
  std::string list = "'auto'";
  for (const std::string& k : known) list += ", '" + k + "'";
  throw ValueError(str("matmul rung must be one of ", list, " on ", d.str(), ", not '", name, "'"));
}

MatmulRung requested_matmul_rung(Device d) {
  std::atomic<int>* slot = rung_slot(d);
  return slot ? MatmulRung(slot->load(std::memory_order_relaxed)) : MatmulRung::Auto;
}

RungRun& last_matmul_run() {
  thread_local RungRun r;
  return r;
}

// [SECTION] The simulated device's rungs ----------------------------------------------------------

namespace {

// One block of the tiled product on sim:0 (Note [Device matmul]): the same
// steps as a CUDA block, its threads' loads, then their multiply-adds, one
// after the other at each barrier. Rungs 2 and 3.
template <class Tile, class T>
void sim_tiled(const streams::Stream& s, const char* kernel, const MatmulPlan& p, const T* a, const T* b, T* out) {
  using Acc = opmath_t<T>;
  launch::KernelLaunch k = launch::grid_launch(kernel, "aten::mm", ceil_div(p.n, Tile::BN), Tile::kThreads);
  k.grid.y = uint32_t(ceil_div(p.m, Tile::BM));
  k.grid.z = uint32_t(p.batch);
  k.shared_bytes = uint32_t(sizeof(T) * Tile::BK * (Tile::BM + Tile::BN));
  launch::launch_sim(s, k, [=](const launch::Dim3& blk) {
    struct Shared {
      T as[Tile::BK][Tile::BM];
      T bs[Tile::BK][Tile::BN];
    };
    auto shared = std::make_unique<Shared>();
    std::vector<Acc> acc(size_t(Tile::kThreads) * Tile::TM * Tile::TN, Acc(0));  // every thread's registers
    auto regs = [&](uint32_t t) {
      return reinterpret_cast<Acc(*)[Tile::TN]>(acc.data() + size_t(t) * Tile::TM * Tile::TN);
    };
    const int64_t row0 = int64_t(blk.y) * Tile::BM, col0 = int64_t(blk.x) * Tile::BN;
    const T* ab = a + int64_t(blk.z) * p.sa[0];
    const T* bb = b + int64_t(blk.z) * p.sb[0];
    for (int64_t k0 = 0; k0 < p.k; k0 += Tile::BK) {
      for (uint32_t t = 0; t < Tile::kThreads; ++t)
        load_tiles<Tile>(p, ab, bb, row0, col0, k0, shared->as, shared->bs, t);
      for (uint32_t t = 0; t < Tile::kThreads; ++t) multiply_tiles<Tile>(shared->as, shared->bs, regs(t), t);
    }
    T* ob = out + int64_t(blk.z) * p.m * p.n;
    for (uint32_t t = 0; t < Tile::kThreads; ++t) store_tile<Tile>(p, ob, row0, col0, regs(t), t);
  });
}

// Rung 1 on sim:0: the CUDA kernel's blocks of 32 x 8 outputs, one thread each.
template <class T>
void sim_naive(const streams::Stream& s, const char* kernel, const MatmulPlan& p, const T* a, const T* b, T* out) {
  constexpr int kX = 32, kY = 8;
  launch::KernelLaunch k = launch::grid_launch(kernel, "aten::mm", ceil_div(p.n, kX), kX * kY);
  k.grid.y = uint32_t(ceil_div(p.m, kY));
  k.grid.z = uint32_t(p.batch);
  launch::launch_sim(s, k, [=](const launch::Dim3& blk) {
    const T* ab = a + int64_t(blk.z) * p.sa[0];
    const T* bb = b + int64_t(blk.z) * p.sb[0];
    T* ob = out + int64_t(blk.z) * p.m * p.n;
    for (int t = 0; t < kX * kY; ++t) {
      const int64_t i = int64_t(blk.y) * kY + t / kX, j = int64_t(blk.x) * kX + t % kX;
      if (i < p.m && j < p.n) naive_output(p, ab, bb, ob, i, j);
    }
  });
}

const char* sim_matmul(MatmulRung r, const streams::Stream& s, ScalarType dt, const void* a, const void* b, void* out,
                       const MatmulPlan& p) {
  const char* kernel = matmul_kernel_name(r == MatmulRung::Naive         ? "naive"
                                          : r == MatmulRung::SharedTiles ? "shared_16x16"
                                          : dt == ScalarType::Float32    ? "tiled_128x128"
                                                                         : "tiled_64x64",
                                          dt);
  DESCENT_CHECK(dt != ScalarType::Bool, Error, "device::matmul: no product of bool");
  visit_dtype(dt, [&]<class T>() {
    if constexpr (!std::is_same_v<T, bool>) {
      const T* pa = static_cast<const T*>(a);
      const T* pb = static_cast<const T*>(b);
      T* po = static_cast<T*>(out);
      if (r == MatmulRung::Naive)
        sim_naive(s, kernel, p, pa, pb, po);
      else if (r == MatmulRung::SharedTiles)
        sim_tiled<SharedTile>(s, kernel, p, pa, pb, po);
      else if constexpr (std::is_same_v<T, float>)
        sim_tiled<Float32Tile>(s, kernel, p, pa, pb, po);  // same bits as 64 x 64
      else
        sim_tiled<GenericTile>(s, kernel, p, pa, pb, po);
    }
  });
  return kernel;
}

}  // namespace

// [SECTION] The choice ----------------------------------------------------------------------------

void ladder_matmul(const streams::Stream& s, Device d, ScalarType dt, const void* a, const void* b, void* out,
                   const MatmulPlan& p) {
  RungRun& run = last_matmul_run();
  run.fallback.clear();
  const bool half = dt == ScalarType::Float16 || dt == ScalarType::BFloat16;
  const bool cuda = d.type == DeviceType::CUDA;
  const bool tf32 = cuda && dt == ScalarType::Float32 && allow_tf32();  // Note [TF32 matmul]
  const MatmulRung best = cuda && half ? (has_wgmma(d) ? MatmulRung::Wgmma : MatmulRung::Wmma)
                          : tf32       ? MatmulRung::Wmma
                                       : MatmulRung::RegisterTiles;
  MatmulRung r = requested_matmul_rung(d);
  if (r == MatmulRung::Auto) {
    r = best;
  } else if (!rung_takes(r, dt) || (r == MatmulRung::Wmma && dt == ScalarType::Float32 && !cuda)) {
    run.fallback = str(rung_name(r),
                       r == MatmulRung::Wmma ? " takes float16, bfloat16 and float32 with TF32 allowed"
                                             : " takes float16 and bfloat16 only",
                       ": ran ", rung_name(best));
    r = best;
  }
  run.tf32 = r == MatmulRung::Wmma && dt == ScalarType::Float32;
  if (d.type == DeviceType::Sim) {
    run.rung = r;
    run.kernel = sim_matmul(r, s, dt, a, b, out, p);
    return;
  }
#ifdef DESCENT_HAVE_CUDA
  if (r == MatmulRung::Wgmma) {
    const std::string why = wgmma_refusal(d.index, dt, a, b, out, p);
    if (why.empty()) {
      run.rung = r;
      run.kernel = cuda_matmul_wgmma(s, dt, a, b, out, p);
      return;
    }
    run.fallback = why + ": ran wmma";
    r = MatmulRung::Wmma;
  }
  run.rung = r;
  // A block's rows are the grid's y, at most 65535 blocks.
  const int64_t rows = r == MatmulRung::Naive         ? 8
                       : r == MatmulRung::SharedTiles ? 16
                       : r == MatmulRung::Wmma        ? 128
                                                      : 64;
  DESCENT_CHECK(ceil_div(p.m, rows) < 65536, Error, "aten::mm on CUDA: at most ", 65535 * rows, " rows on rung ",
                rung_name(r), ", got ", p.m);
  switch (r) {
    case MatmulRung::Naive:
      run.kernel = cuda_matmul_naive(s, dt, a, b, out, p);
      return;
    case MatmulRung::SharedTiles:
      run.kernel = cuda_matmul_shared_tiles(s, dt, a, b, out, p);
      return;
    case MatmulRung::Wmma:
      run.kernel = cuda_matmul_wmma(s, dt, a, b, out, p);
      return;
    default:
      run.kernel = cuda_matmul_register_tiles(s, dt, a, b, out, p);
      return;
  }
#else
  throw NotImplementedError(str("aten::mm on ", d.str(), ": this build has no CUDA"));
#endif
}

}  // namespace descent::kernels::device
