// The packed CPU matrix product: BLIS's loop nest over panels of a and b
// packed to fit the caches, and a microkernel of fused multiply-adds for the
// widest vector unit the CPU has. The top rung of the CPU's ladder (Note
// [Matmul rungs], matmul_rungs.cpp).
//
// [SECTION] Cache sizes and blocks
// [SECTION] Packing
// [SECTION] Microkernels, one per vector unit
// [SECTION] The loop nest
// [SECTION] The rungs: what the kernel calls
//
// Note [Packed matmul]
// ~~~~~~~~~~~~~~~~~~~~
// C (M x N) += A (M x K) B (K x N) as BLIS does it (Van Zee and van de Geijn,
// "BLIS: A Framework for Rapidly Instantiating BLAS Functionality", 2015):
// five loops around a microkernel, each sized so that what it reuses stays in
// one level of the cache.
//
//   for jc in steps of nc (columns of C and B)        B's block: kc x nc, in L3
//     for pc in steps of kc (the k dimension)
//       pack B[pc:+kc, jc:+nc] into panels nr columns wide
//       for ic in steps of mc (rows of C and A)       A's block: mc x kc, in L2
//         pack A[ic:+mc, pc:+kc] into panels mr rows tall
//         for jr in steps of nr                       a panel of B: kc x nr, in L1 (or L2)
//           for ir in steps of mr
//             microkernel: C[ir:+mr, jr:+nr] += panel of A x panel of B
//
// A packed panel holds its kc steps one after the other: step k of an A
// panel is the mr numbers a[ir..ir+mr)[k] side by side, step k of a B panel
// the nr numbers b[k][jr..jr+nr). The microkernel then reads both with unit
// stride, whatever the operands' strides were: a transposed operand (x.T,
// bmm of permuted views) costs nothing more than a contiguous one, as packing
// reads each through its strides once. Panels past the edge of A or B are
// filled with zeros to a whole mr or nr; the microkernel then always runs
// whole, writing an edge tile into a buffer of its own, whose valid corner is
// copied out.
//
// The microkernel keeps an mr x nr tile of C in vector registers for all kc
// steps: each step loads nr/lanes vectors of B, broadcasts mr numbers of A,
// and does mr x nr/lanes fused multiply-adds (12 x 2 = 24 with AVX-512: 24
// accumulators, 2 vectors of B and 1 of A fill 27 of the 32 registers; 6 x 2
// = 12 with AVX2's 16). That many independent sums hide the 4-cycle latency
// of the two FMA units. The blocks, from the sizes of the caches (sysconf,
// which glibc answers from CPUID; else 32 KiB, 1 MiB and 8 MiB): kc so that
// one B panel fills a 32nd of L2 (512 steps, 64 KiB, with a 2 MiB L2), mc so
// that A's block fills a quarter of L2, nc so that B's block fills at most
// half of L3 (capped at 4096 columns). BLIS would size kc to L1 instead
// (192 steps for a 48 KiB L1); measured on the development VM, the longer
// kc was 10-15% faster at 2048^3, as C, read and written again for every kc
// step, then goes through the caches a third as often (a B panel streams
// from L2 at 15 bytes a cycle, well within what L2 gives).
//
// Threads split the ic and jr loops: every (block of rows, group of column
// panels) pair is a task of parallel_for, which packs its own A block. With
// fewer row blocks than threads the rows are cut finer (down to mr), then the
// columns, into as many groups as make the tasks share evenly among the
// threads. Packing B is split over its panels first. B is packed one kc
// step at a time, just before the tasks use it, so that it is still in L2 (a
// version that packed all of K at once, for fewer meetings of the threads,
// was 5-10% slower on one thread: B came back from L3).
//
// Rounding. Each element is still one chain of K steps in ascending k (the
// kc blocks go on from what C holds), but a step is one fused multiply-add,
// rounded once, where the reference rounds the product and then the sum. So
// the bits can differ from the reference's: both are within gamma_K
// sum_k |a_ik||b_kj| of the exact product (Higham 3.1), so they differ by at
// most twice that: the verifier holds this rung to Note [Device matmul
// bound], as it holds a GPU's fused products, not to bit equality. The bits
// do not depend on the thread count (each element is still one thread's
// chain). float16, bfloat16 and the integers are not packed: the register
// rung takes them.
#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstring>
#include <memory>
#include <new>
#include <thread>
#include <vector>

#include <unistd.h>

#if defined(__x86_64__)
#include <immintrin.h>
#endif

#include "floors/dispatch/dispatcher.h"
#include "floors/kernels/kernels.h"
#include "floors/kernels/matmul_rungs.h"
#include "floors/kernels/parallel.h"
#include "floors/kernels/roofline.h"

namespace descent::kernels {

namespace {

// [SECTION] Cache sizes and blocks ---------------------------------------------------

struct Caches {
  int64_t l1, l2, l3;  // bytes of data cache per core (L3: the whole shared one)
};

Caches caches() {
  static const Caches c = [] {
    auto ask = [](int name, int64_t fallback) {
      const long v = sysconf(name);
      return v > 0 ? int64_t(v) : fallback;
    };
#if defined(_SC_LEVEL1_DCACHE_SIZE)
    return Caches{ask(_SC_LEVEL1_DCACHE_SIZE, 32 << 10), ask(_SC_LEVEL2_CACHE_SIZE, 1 << 20),
                  ask(_SC_LEVEL3_CACHE_SIZE, 8 << 20)};
#else
    return Caches{32 << 10, 1 << 20, 8 << 20};
#endif
  }();
  return c;
}

struct Blocks {
  int64_t mc, kc, nc;  // rows of A's block, its depth, columns of B's block
};

// Note [Packed matmul]: a B panel (kc x nr) in a 32nd of L2, A's block (mc x kc) in a quarter of L2, B's block (kc x nc) in half of L3.
Blocks blocks(int64_t elem, int64_t mr, int64_t nr) {
  const Caches c = caches();
  const int64_t kc = std::clamp<int64_t>(c.l2 / 32 / (nr * elem) / 8 * 8, 64, 512);
  const int64_t mc = std::clamp<int64_t>(c.l2 / 4 / (kc * elem) / mr * mr, mr, 64 * mr);
  const int64_t nc = std::clamp<int64_t>(c.l3 / 2 / (kc * elem) / nr * nr, nr, 4096);
  return {mc, kc, nc};
}

constexpr int64_t kMatmulGrain = 32 * kGrainSize;  // multiply-adds, as optimized_matmul's

// An operand read through its strides: element (i, k) is p[i * rs + k * cs].
template <typename T>
struct Strided {
  const T* p;
  int64_t rs, cs;
};

// A buffer of this thread's, kept between calls (a fresh one of megabytes
// would be new pages to fault in on every product), 64-byte aligned.
template <typename T, int kWhich>
T* scratch(int64_t n) {
  struct Free {
    void operator()(T* p) const { ::operator delete(p, std::align_val_t(64)); }
  };
  thread_local std::unique_ptr<T, Free> buf;
  thread_local int64_t size = 0;
  if (n > size) {
    buf.reset(static_cast<T*>(::operator new(size_t(n) * sizeof(T), std::align_val_t(64))));
    size = n;
  }
  return buf.get();
}

// [SECTION] Packing ----------------------------------------------------------------

// Rows [0, rows) x steps [0, kc) of `a` into panels of mr rows: panel p, step
// k, row i at dst[(p * kc + k) * mr + i]; rows past `rows` are zeros.
template <typename T>
void pack_a(Strided<T> a, int64_t rows, int64_t kc, int64_t mr, T* dst) {
  for (int64_t r0 = 0; r0 < rows; r0 += mr, dst += kc * mr) {
    const int64_t h = std::min(mr, rows - r0);
    if (h < mr) std::fill(dst, dst + kc * mr, T(0));
    for (int64_t i = 0; i < h; ++i) {
      const T* src = a.p + (r0 + i) * a.rs;
      if (a.cs == 1) {
        for (int64_t k = 0; k < kc; ++k) dst[k * mr + i] = src[k];
      } else {
        for (int64_t k = 0; k < kc; ++k) dst[k * mr + i] = src[k * a.cs];
      }
    }
  }
}

// Steps [0, kc) x columns [j0, j1) of `b` (j0 a multiple of nr) into panels
// of nr columns: panel q, step k, column j at dst[(q * kc + k) * nr + j];
// columns past `cols` are zeros.
template <typename T>
void pack_b(Strided<T> b, int64_t cols, int64_t kc, int64_t nr, int64_t j0, int64_t j1, T* dst) {
  dst += j0 * kc;
  for (int64_t c0 = j0; c0 < j1; c0 += nr, dst += kc * nr) {
    const int64_t w = std::min(nr, cols - c0);
    if (w < nr) std::fill(dst, dst + kc * nr, T(0));
    if (b.cs == 1) {
      for (int64_t k = 0; k < kc; ++k) std::memcpy(dst + k * nr, b.p + k * b.rs + c0, size_t(w) * sizeof(T));
    } else {
      for (int64_t j = 0; j < w; ++j)
        for (int64_t k = 0; k < kc; ++k) dst[k * nr + j] = b.p[k * b.rs + (c0 + j) * b.cs];
    }
  }
}

// [SECTION] Microkernels, one per vector unit ------------------------------------------

// c[0, mr) x [0, nr) (rows ldc apart) = (load ? c : 0) + the kc steps of an
// A panel times a B panel, each step one fused multiply-add per element.
template <typename T>
using MicroFn = void (*)(int64_t kc, const T* ap, const T* bp, T* c, int64_t ldc, bool load);

template <typename T>
struct Micro {
  MicroFn<T> fn = nullptr;  // null: this CPU has no FMA unit for it
  int64_t mr = 1, nr = 1;
};

#if defined(__x86_64__)
// The same microkernel in each unit's words. GCC inlines a function built for
// one instruction set only into a function built for the same, so each unit
// has its own helpers (V<T>), and the loop (packed_micro.inc) is compiled
// once inside each unit's namespace with that unit's instruction set on.
namespace avx512 {
#define DESCENT_TARGET gnu::target("avx512f"), gnu::always_inline
template <typename T>
struct V;
template <>
struct V<float> {
  using R = __m512;
  static constexpr int kLanes = 16;
  [[DESCENT_TARGET]] static inline R load(const float* p) { return _mm512_loadu_ps(p); }
  [[DESCENT_TARGET]] static inline void store(float* p, R v) { _mm512_storeu_ps(p, v); }
  [[DESCENT_TARGET]] static inline R zero() { return _mm512_setzero_ps(); }
  [[DESCENT_TARGET]] static inline R splat(float x) { return _mm512_set1_ps(x); }
  [[DESCENT_TARGET]] static inline R fma(R a, R b, R c) { return _mm512_fmadd_ps(a, b, c); }
};
template <>
struct V<double> {
  using R = __m512d;
  static constexpr int kLanes = 8;
  [[DESCENT_TARGET]] static inline R load(const double* p) { return _mm512_loadu_pd(p); }
  [[DESCENT_TARGET]] static inline void store(double* p, R v) { _mm512_storeu_pd(p, v); }
  [[DESCENT_TARGET]] static inline R zero() { return _mm512_setzero_pd(); }
  [[DESCENT_TARGET]] static inline R splat(double x) { return _mm512_set1_pd(x); }
  [[DESCENT_TARGET]] static inline R fma(R a, R b, R c) { return _mm512_fmadd_pd(a, b, c); }
};
#undef DESCENT_TARGET

#pragma GCC push_options
#pragma GCC target("avx512f")
#include "floors/kernels/packed_micro.inc"
#pragma GCC pop_options
}  // namespace avx512

namespace avx2 {
#define DESCENT_TARGET gnu::target("avx2,fma"), gnu::always_inline
template <typename T>
struct V;
template <>
struct V<float> {
  using R = __m256;
  static constexpr int kLanes = 8;
  [[DESCENT_TARGET]] static inline R load(const float* p) { return _mm256_loadu_ps(p); }
  [[DESCENT_TARGET]] static inline void store(float* p, R v) { _mm256_storeu_ps(p, v); }
  [[DESCENT_TARGET]] static inline R zero() { return _mm256_setzero_ps(); }
  [[DESCENT_TARGET]] static inline R splat(float x) { return _mm256_set1_ps(x); }
  [[DESCENT_TARGET]] static inline R fma(R a, R b, R c) { return _mm256_fmadd_ps(a, b, c); }
};
template <>
struct V<double> {
  using R = __m256d;
  static constexpr int kLanes = 4;
  [[DESCENT_TARGET]] static inline R load(const double* p) { return _mm256_loadu_pd(p); }
  [[DESCENT_TARGET]] static inline void store(double* p, R v) { _mm256_storeu_pd(p, v); }
  [[DESCENT_TARGET]] static inline R zero() { return _mm256_setzero_pd(); }
  [[DESCENT_TARGET]] static inline R splat(double x) { return _mm256_set1_pd(x); }
  [[DESCENT_TARGET]] static inline R fma(R a, R b, R c) { return _mm256_fmadd_pd(a, b, c); }
};
#undef DESCENT_TARGET

#pragma GCC push_options
#pragma GCC target("avx2,fma")
#include "floors/kernels/packed_micro.inc"
#pragma GCC pop_options
}  // namespace avx2
#endif

// The microkernel for the vector unit the matmul uses (matmul_isa(): the
// widest, or the one set_matmul_isa chose); none without FMA.
template <typename T>
Micro<T> micro_for_isa() {
#if defined(__x86_64__)
  const std::string_view isa = matmul_isa();
  if (isa == "avx512") return {avx512::micro<T, 12, 2>, 12, 2 * avx512::V<T>::kLanes};
  __builtin_cpu_init();
  if (isa == "avx2" && __builtin_cpu_supports("fma")) return {avx2::micro<T, 6, 2>, 6, 2 * avx2::V<T>::kLanes};
#endif
  return {};
}

// [SECTION] The loop nest ----------------------------------------------------------

// One microkernel call at C's tile (r, c) of h x w valid elements; a tile cut
// by the edge runs whole on a buffer and copies its valid corner out.
template <typename T>
inline void tile(const Micro<T>& m, int64_t kc, const T* ap, const T* bp, T* c, int64_t ldc, int64_t h, int64_t w,
                 bool load) {
  if (h == m.mr && w == m.nr) return m.fn(kc, ap, bp, c, ldc, load);
  alignas(64) T buf[16 * 64];  // mr x nr fits: at most 12 x 32 floats
  if (load) {                  // the corner past the edge is zeros, never uninitialised bytes
    std::fill(buf, buf + m.mr * m.nr, T(0));
    for (int64_t i = 0; i < h; ++i) std::memcpy(buf + i * m.nr, c + i * ldc, size_t(w) * sizeof(T));
  }
  m.fn(kc, ap, bp, buf, m.nr, load);
  for (int64_t i = 0; i < h; ++i) std::memcpy(c + i * ldc, buf + i * m.nr, size_t(w) * sizeof(T));
}

// Asks for `h` rows of `bytes` bytes, `ld` elements apart, to be brought
// into the cache for writing: a tile of C read from memory on the
// microkernel's first load would stall it for each of its rows' misses.
template <typename T>
inline void prefetch_tile(const T* c, int64_t ld, int64_t h, int64_t bytes) {
  for (int64_t i = 0; i < h; ++i)
    for (int64_t b = 0; b < bytes; b += 64) __builtin_prefetch(reinterpret_cast<const char*>(c + i * ld) + b, 1, 3);
}

// C (M x N, contiguous rows) = A (M x K) B (K x N), Note [Packed matmul].
template <typename T>
void packed_product(const Micro<T>& m, Strided<T> a, Strided<T> b, T* c, int64_t M, int64_t K, int64_t N) {
  if (K == 0) {
    std::fill(c, c + M * N, T(0));
    return;
  }
  const Blocks bl = blocks(sizeof(T), m.mr, m.nr);
  // A thread for every kMatmulGrain multiply-adds at most: waking one costs more than a small product.
  const int64_t threads =
      in_parallel_region() ? 1 : std::clamp<int64_t>(M * N * K / kMatmulGrain, 1, get_num_threads());
  T* const bpack = scratch<T, 0>(bl.kc * ((std::min(bl.nc, N) + m.nr - 1) / m.nr * m.nr));
  for (int64_t jc = 0; jc < N; jc += bl.nc) {
    const int64_t nb = std::min(bl.nc, N - jc), panels = (nb + m.nr - 1) / m.nr;
    // The split of this block of C among threads: row blocks, cut finer than
    // mc (down to mr) when there are fewer than threads, then column groups.
    int64_t row_blocks = (M + bl.mc - 1) / bl.mc;
    if (row_blocks < threads) row_blocks = std::min((M + m.mr - 1) / m.mr, threads);
    const int64_t mc = ((M + row_blocks - 1) / row_blocks + m.mr - 1) / m.mr * m.mr;  // whole panels
    row_blocks = (M + mc - 1) / mc;
    // Column groups: the fewest that give every thread the same number of
    // tasks, within 10% (3 row blocks on 2 threads would leave one idle a third of the time).
    int64_t groups = 1;
    while (groups < panels) {
      const int64_t tasks = row_blocks * groups;
      if (tasks >= threads && 10 * ((tasks + threads - 1) / threads * threads - tasks) <= tasks) break;
      ++groups;
    }
    const int64_t per_group = (panels + groups - 1) / groups;
    for (int64_t pc = 0; pc < K; pc += bl.kc) {
      const int64_t kb = std::min(bl.kc, K - pc);
      const Strided<T> bblock{b.p + pc * b.rs + jc * b.cs, b.rs, b.cs};
      parallel_for(0, panels, std::max<int64_t>(1, kGrainSize / (kb * m.nr)),
                   [&](int64_t q0, int64_t q1) { pack_b(bblock, nb, kb, m.nr, q0 * m.nr, q1 * m.nr, bpack); });
      parallel_for(0, row_blocks * groups, 1, [&](int64_t t0, int64_t t1) {
        T* const apack = scratch<T, 1>(mc * kb);
        for (int64_t t = t0; t < t1; ++t) {
          const int64_t ic = (t / groups) * mc, rows = std::min(mc, M - ic);
          const int64_t q_lo = (t % groups) * per_group, q_hi = std::min(panels, q_lo + per_group);
          if (q_lo >= q_hi) continue;
          pack_a(Strided<T>{a.p + ic * a.rs + pc * a.cs, a.rs, a.cs}, rows, kb, m.mr, apack);
          for (int64_t q = q_lo; q < q_hi; ++q) {
            const int64_t j = q * m.nr, w = std::min(m.nr, nb - j);
            for (int64_t i = 0; i < rows; i += m.mr) {
              // The next tile of C on its way from memory while this one runs.
              const bool down = i + m.mr < rows;
              if (down || q + 1 < q_hi)
                prefetch_tile(c + (ic + (down ? i + m.mr : 0)) * N + jc + j + (down ? 0 : m.nr), N,
                              std::min(m.mr, rows - (down ? i + m.mr : 0)), m.nr * int64_t(sizeof(T)));
              tile(m, kb, apack + i * kb, bpack + q * m.nr * kb, c + (ic + i) * N + jc + j, N, std::min(m.mr, rows - i),
                   w, pc > 0);
            }
          }
        }
      });
    }
  }
}

}  // namespace

// [SECTION] The rungs: what the kernel calls ---------------------------------------------

bool packed_matmul(const Tensor& a, const Tensor& b, const Tensor& out) {
  if (!out.is_contiguous() || (out.dtype() != ScalarType::Float32 && out.dtype() != ScalarType::Float64)) return false;
  if (a.dtype() != out.dtype() || b.dtype() != out.dtype()) return false;
  bool ran = false;
  visit_dtype(out.dtype(), [&]<typename T>() {
    if constexpr (std::is_same_v<T, float> || std::is_same_v<T, double>) {
      const Micro<T> m = micro_for_isa<T>();
      if (!m.fn) return;
      ran = true;
      const int64_t B = out.sizes()[0], M = out.sizes()[1], N = out.sizes()[2], K = a.sizes()[2];
      if (out.numel() == 0) return;
      auto batches = [&](int64_t lo, int64_t hi) {
        for (int64_t i = lo; i < hi; ++i) {
          const Strided<T> sa{a.data<T>() + i * a.strides()[0], a.strides()[1], a.strides()[2]};
          const Strided<T> sb{b.data<T>() + i * b.strides()[0], b.strides()[1], b.strides()[2]};
          packed_product(m, sa, sb, out.data<T>() + i * M * N, M, K, N);
        }
      };
      // Many batches, or batches too small to share: a thread per batch (each
      // product then runs on its thread alone); else one after another, the
      // threads sharing each.
      const int64_t work = std::max<int64_t>(1, M * N * K);
      if (B > 1 && (B >= get_num_threads() || work < kMatmulGrain * get_num_threads()))
        parallel_for(0, B, std::max<int64_t>(1, kMatmulGrain / work), batches);
      else
        batches(0, B);
    }
  });
  return ran;
}

// Note [Matmul rungs]: the chosen rung, or for "auto" the packed one from
// M N K = 80 x 80 x 80 on: below, the register tiles, which copy less, win
// (on the development VM, AVX-512, one thread: 1.15-1.5x faster up to 64^3,
// even at 80^3, 0.84x at 128^3, 0.75x at 192^3; docs/BENCHMARKS.md).
constexpr double kPackedMatmulFrom = 80.0 * 80.0 * 80.0;  // multiply-adds
bool cpu_matmul(const Tensor& a, const Tensor& b, const Tensor& out) {
  const std::string_view chosen = matmul_rung(DeviceType::CPU);
  if (chosen == "reference") {
    last_matmul_rung() = "reference";
    return false;
  }
  const double work = double(out.numel()) * double(a.sizes()[2]);
  if ((chosen == "packed" || (chosen == "auto" && work >= kPackedMatmulFrom)) && packed_matmul(a, b, out)) {
    last_matmul_rung() = "packed";
    return true;
  }
  const Tensor ca = a.is_contiguous() ? a : call(Op::contiguous, a);
  const Tensor cb = b.is_contiguous() ? b : call(Op::contiguous, b);
  const bool ran = optimized_matmul(ca, cb, out);
  last_matmul_rung() = ran ? "register" : "reference";
  return ran;
}

// The CPU's arithmetic peak for the roofline (Note [A roofline for every
// kernel span], roofline.cpp): the float microkernel over one panel of A and
// one of B that stay in the L1 cache, called back to back for 20 ms on each
// of `threads` threads at once; the sum of their rates.
double microkernel_flops_per_s(int threads) {
  const Micro<float> m = micro_for_isa<float>();
  if (!m.fn) return 0;
  constexpr int64_t kc = 128;
  std::atomic<int> ready{0};
  std::vector<double> rates(size_t(std::max(1, threads)), 0.0);
  const auto run = [&](size_t t) {
    std::vector<float> ap(size_t(m.mr * kc), 0.5f), bp(size_t(kc * m.nr), 0.25f), c(size_t(m.mr * m.nr), 0.0f);
    ready.fetch_add(1);
    while (ready.load() < int(rates.size())) std::this_thread::yield();
    using clock = std::chrono::steady_clock;
    const auto start = clock::now();
    int64_t calls = 0;
    double seconds = 0;
    do {
      for (int k = 0; k < 64; ++k) m.fn(kc, ap.data(), bp.data(), c.data(), m.nr, true);
      calls += 64;
      seconds = std::chrono::duration<double>(clock::now() - start).count();
    } while (seconds < 0.02);
    rates[t] = 2.0 * double(m.mr * m.nr * kc) * double(calls) / seconds;
  };
  std::vector<std::thread> others;
  others.reserve(rates.size());
  for (size_t t = 1; t < rates.size(); ++t) others.emplace_back(run, t);
  run(0);
  for (std::thread& t : others) t.join();
  double sum = 0;
  for (double r : rates) sum += r;
  return sum;
}

}  // namespace descent::kernels
