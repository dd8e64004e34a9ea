// The packed CPU matrix product: BLIS's loop nest over panels of a and b
// packed to fit the caches, and a microkernel of fused multiply-adds for the
// widest vector unit the CPU has. The top rung of the CPU's ladder (Note
// [Matmul rungs], matmul_rungs.cpp).
//
// [SECTION] Cache sizes and blocks
// [SECTION] Packing
// [SECTION] The loop nest
// [SECTION] The rungs: what the kernel calls
//
// Notes, each beside what it explains:
//   Note [Panels read in place]  where a panel is not packed at all (Packing)
//   Note [Packed matmul]         the loop nest, its blocks, its threads and its rounding (The loop nest)
#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
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
#include "floors/kernels/cpu/matmul_rungs.h"
#include "floors/kernels/cpu/packed_micro.h"
#include "floors/kernels/cpu/parallel.h"
#include "floors/kernels/roofline.h"
#include "tracer/tracer.h"

namespace descent::kernels {

namespace {

using packed::Micro;  // the microkernels, one per vector unit (packed_micro.h)
using packed::micro_for_isa;
using packed::MicroFn;

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

// Note [Panels read in place]
// ~~~~~~~~~~~~~~~~~~~~~~~~~~~
// Packing is a copy, paid for by faster reads later: worth it where a panel
// would otherwise be read with long strides, or from far apart in memory, over
// many kc steps. Where the operand is already laid out almost as the panel
// would be, the microkernel reads it in place (BLIS's "sup" kernels do the
// same for small and skinny products), with the same steps in the same order,
// so the bits are the same either way:
//
// - A, where its rows are contiguous (its unit stride is k), K is one kc
//   block, and its rows are no further apart than kc: an A panel is then mr
//   runs of at most kc numbers, no more spread out than A's block packed
//   (row i at a + i lda instead of a step's mr numbers side by side). Each
//   step's mr broadcasts then read from mr rows, each row's cache line
//   serving 16 steps (8 of doubles). A panel cut by the edge of A is still
//   packed (with its zeros). On the H200 host, one thread, 512^2, traced: "pack A" went from
//   84-156 us a product to 2-9 (the 8 rows of the edge panel), and the tile
//   tasks took about as long (1.68-1.77 ms against 1.66-1.74 in one call,
//   neither asking ahead, kPrefetchSteps); with both, the product took
//   1.63-1.67 ms against 1.77-1.86 for the code before them (another call).
// - B, where every task packs its own panels (one step alone on several
//   threads, Note [Packed matmul]: each B panel packed once for every row
//   group) and B's steps are contiguous (its unit stride is n), no further
//   apart than nc: a panel is then kc runs of nr numbers. On the H200 host,
//   16 threads, 512^2: the median turn 0.83x torch's with B in place against
//   0.99x packed (paired turns, 40 rounds; A in place in both). On one thread
//   B is packed once and read by every pass of A's rows, and there the tile
//   tasks read in place took 2.22-2.31 ms against 1.66-1.77 packed: a B panel
//   in place is 512 steps 2 KiB apart, a new page every two steps, most
//   likely too scattered for the caches' prefetchers (not shown by a counter).
//
// A tile task's span says which operand it read in place, where it read at
// least one panel so (a_read_in_place, b_read_in_place); a "pack A" item is
// made only for the panels still packed. In tile(), a panel's ld of 0 means
// packed: a stride of 0 (an expanded operand) is therefore always packed.

// A whole panel of A (all mr rows exist) whose rows are contiguous (a.cs ==
// 1), in blocks transposed in SSE registers: 4 rows x 4 steps of floats (2 x
// 2 of doubles) loaded a row at a time and stored a step at a time; the rows
// and steps past the last whole block a number at a time. Copied a number at
// a time (each step's mr numbers from mr rows), a panel of 12 rows took 0.57
// ns a float on the development VM (AMD EPYC); in blocks, 0.19 (1.5 and 0.6
// ns a double). On the H200 host, in paired turns of one process, the
// blocks were about 1% faster at 2048^2; at 512^2, faster in 18 of 30 rounds
// on 16 threads (a busy call) and no faster on one thread (docs/BENCHMARKS.md,
// session 9). Since then a contiguous A is read in place wherever K is one kc
// block (Note [Panels read in place]): these blocks now pack it where K is
// longer (2048^2), or its rows are further apart than kc. AVX2's panels of 6 rows (4 in blocks, 2 a number at
// a time) pack no faster than before (0.46 ns a float either way); they take
// this path too, so that the float blocks run in the tests of a machine
// without AVX-512. False where A's rows are not contiguous, or the build is
// not for x86-64.
template <typename T>
bool pack_a_blocks(Strided<T> a, int64_t kc, int64_t mr, T* dst) {
#if defined(__x86_64__)
  static_assert(std::is_same_v<T, float> || std::is_same_v<T, double>);
  if (a.cs != 1) return false;
  constexpr int64_t kB = std::is_same_v<T, float> ? 4 : 2;  // a block is kB rows x kB steps
  const int64_t rows = mr / kB * kB, steps = kc / kB * kB;  // those in whole blocks
  for (int64_t k = 0; k < steps; k += kB)
    for (int64_t i = 0; i < rows; i += kB) {
      const T* s = a.p + i * a.rs + k;
      T* d = dst + k * mr + i;
      if constexpr (std::is_same_v<T, float>) {
        __m128 r0 = _mm_loadu_ps(s), r1 = _mm_loadu_ps(s + a.rs), r2 = _mm_loadu_ps(s + 2 * a.rs),
               r3 = _mm_loadu_ps(s + 3 * a.rs);
        _MM_TRANSPOSE4_PS(r0, r1, r2, r3);  // r_j: step k + j of rows i..i+3
        _mm_storeu_ps(d, r0);
        _mm_storeu_ps(d + mr, r1);
        _mm_storeu_ps(d + 2 * mr, r2);
        _mm_storeu_ps(d + 3 * mr, r3);
      } else {
        const __m128d r0 = _mm_loadu_pd(s), r1 = _mm_loadu_pd(s + a.rs);
        _mm_storeu_pd(d, _mm_unpacklo_pd(r0, r1));  // step k of rows i, i+1
        _mm_storeu_pd(d + mr, _mm_unpackhi_pd(r0, r1));
      }
    }
  for (int64_t k = 0; k < kc; ++k)  // the rest: rows past the blocks in their steps, every row past them
    for (int64_t i = k < steps ? rows : 0; i < mr; ++i) dst[k * mr + i] = a.p[i * a.rs + k];
  return true;
#else
  (void)a, (void)kc, (void)mr, (void)dst;
  return false;
#endif
}

// One panel of A: rows [0, h) x steps [0, kc) of `a`, step k of row i at
// dst[k * mr + i]; rows h..mr are zeros. A whole panel of contiguous rows in
// blocks (pack_a_blocks); else step by step (contiguous writes), each step's
// mr numbers read from h rows, or from one column when A's rows are its unit
// stride (a transposed operand).
template <typename T>
void pack_a_panel(Strided<T> a, int64_t h, int64_t kc, int64_t mr, T* dst) {
  if (h < mr) std::fill(dst, dst + kc * mr, T(0));
  if (a.rs == 1 && h == mr) {
    for (int64_t k = 0; k < kc; ++k) std::copy_n(a.p + k * a.cs, mr, dst + k * mr);
    return;
  }
  if (h == mr && pack_a_blocks(a, kc, mr, dst)) return;
  const T* rows[16];  // mr <= 16 (Micro)
  for (int64_t i = 0; i < h; ++i) rows[i] = a.p + i * a.rs;
  for (int64_t k = 0; k < kc; ++k, dst += mr)
    for (int64_t i = 0; i < h; ++i) dst[i] = rows[i][k * a.cs];
}

// Steps [k0, k1) of B's panels [0, panels), a block of B of kc steps by w
// columns: step k of column j of panel q at dst[(q * kc + k) * nr + j];
// columns past w are zeros. Read a step at a time along B's rows when its
// columns are its unit stride (nr / (64 bytes) fixed-size copies a panel:
// inlined moves, not calls to memcpy), else a column at a time. A thread
// packs a range of steps across every panel, not a panel: a panel's steps
// are rows of B, one 4 KiB page apart in a 2048-column B, and on the H200
// host a thread packing 64 KiB panels that way moved about 0.5 GB/s (most
// likely an address-translation miss a row).
template <typename T>
void pack_b_steps(Strided<T> b, int64_t w, int64_t panels, int64_t k0, int64_t k1, int64_t kc, int64_t nr, T* dst) {
  constexpr int64_t kLine = 64 / sizeof(T);
  const int64_t whole = w / nr;  // panels without an edge
  if (whole < panels)
    for (int64_t k = k0; k < k1; ++k) std::fill_n(dst + (whole * kc + k) * nr, nr, T(0));
  if (b.cs == 1 && nr % kLine == 0) {
    for (int64_t k = k0; k < k1; ++k) {
      const T* src = b.p + k * b.rs;
      for (int64_t q = 0; q < whole; ++q)
        for (int64_t j = 0; j < nr; j += kLine) std::memcpy(dst + (q * kc + k) * nr + j, src + q * nr + j, 64);
      if (whole < panels)
        std::memcpy(dst + (whole * kc + k) * nr, src + whole * nr, size_t(w - whole * nr) * sizeof(T));
    }
  } else {
    for (int64_t j = 0; j < w; ++j)
      for (int64_t k = k0; k < k1; ++k) dst[((j / nr) * kc + k) * nr + j % nr] = b.p[k * b.rs + j * b.cs];
  }
}

// [SECTION] The loop nest ----------------------------------------------------------

// Note [Packed matmul]
// ~~~~~~~~~~~~~~~~~~~~
// C (M x N) = A (M x K) B (K x N) as BLIS does it (Van Zee and van de Geijn,
// "BLIS: A Framework for Rapidly Instantiating BLAS Functionality", 2015):
// five loops around a microkernel, each sized so that what it reuses stays in
// one level of the cache.
//
//   for jc in steps of nc (columns of C and B)        B's block: kc x nc, in L3
//     for pc in steps of kc (the k dimension)
//       pack B[pc:+kc, jc:+nc] into panels nr columns wide
//       pack A[:, pc:+kc] into panels mr rows tall       (in passes: a tall A; one thread)
//       for each task (a group of A's panels x a group of B's panels)
//         for ic in steps of mc (the task's rows)       A's block: mc x kc, in L2
//           for jr in steps of nr                      a panel of B: kc x nr, in L1 (or L2)
//             for ir in steps of mr
//               microkernel: C[ir:+mr, jr:+nr] += panel of A x panel of B
//
// A packed panel holds its kc steps one after the other: step k of an A panel
// is the mr numbers a[ir..ir+mr)[k] side by side, step k of a B panel the nr
// numbers b[k][jr..jr+nr). The microkernel then reads both with unit stride,
// whatever the operands' strides were: a transposed operand (x.T, bmm of
// permuted views) costs nothing more than a contiguous one, as packing reads
// each through its strides once (an operand already laid out almost as a panel
// is read in place instead: Note [Panels read in place]). Panels past the edge
// of A or B are filled with zeros to a whole mr or nr; the microkernel then
// always runs whole, writing an edge tile into a buffer of its own, whose valid
// corner is copied out.
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
// Threads. The loop nest's steps (a kc block of K for a block of B's columns
// and a pass of A's rows) become one list of items: each step's packing (B in
// blocks of steps across all its panels, then A's panels, every panel once and
// shared by all its tasks), then its tasks, C cut into a grid of row groups by
// column groups (task_grid). One parallel_for runs the whole list: every thread
// claims the next item and runs it once its inputs are ready (a short spin,
// then a sleep on the count of what it waits for). A step's tasks wait for its
// packing and for the step before's tasks (the same tiles of C, the kc blocks
// in order); a step's packing waits for the tasks of the step two before, the
// last to read the buffer it writes (of two, taken in turn: A's by step, B's by
// (jc, pc), whose passes of A's rows share one packed B). So the threads done
// with a step's tasks pack the next step's panels while the others finish, and
// the pool is met once a product, not twice a kc step (its workers wake tens of
// microseconds apart on the H200 host). Traced, each item is a span of the
// thread that ran it ("pack B", "pack A", "tile task", with its step and its
// number), with how long it waited for its inputs where it had to: the
// timeline shows which thread packed what, and which one the others waited for.
//
// One step alone. A product whose loop nest is a single step (K within one kc
// block, N within nc, M within a pass: 512 x 512 on the H200 host) has no later
// step whose packing could overlap its tasks, and there the shared packing took
// a quarter to a half of the product on 16 threads: a thread packing wrote a
// cache line about every 30 ns, most likely because the other cores' caches
// held those lines from the product before and each had to be taken back first.
// So on several threads such a product has no packing items: each task first
// packs the panels it reads into its own thread's buffers, which no other core
// touches, and the tile task's span says so (packed_its_own_panels). A panel is
// then packed once for each task that reads it (at 512^2, A's 4 times and B's
// 11), and still the product was faster (the measures below are of that code;
// where the operands are contiguous, the tasks read their whole panels in place
// since, and pack only the edge ones: Note [Panels read in place]). Measured on
// the H200 host in one process, 30 rounds in which the two ways and torch.mm
// took turns (42 products a turn, the median turn): 512^2 went from 0.395 to
// 0.328 ms (faster in 27 of 30 rounds; torch 0.280), 256^2 from 0.111 to 0.078
// (29 of 30; torch 0.042); docs/BENCHMARKS.md. A product of several steps keeps
// the shared items: at 2048^2 every task packing its own was slower (13.5
// against 12.8 ms, 15.8 against 14.5, in two calls).
//
// The grid weighs two things. A square task reads the fewest panels for its
// products and uses each B panel over the most rows. Several tasks a thread let
// the threads that run fast, or woke first, take more of them: on the H200 host
// the same task took 2.0 to 3.6 ms on different cores of one product, so a
// split of one task a thread waited for the slowest. At 512 x 512 on 16 threads
// the grid is 11 x 4 (tasks of 48 rows by 128 columns, 44 of them), at
// 2048 x 2048 8 x 8 (264 by 256). A's panels are packed for all of M at once up
// to 8 MiB (a pass); one thread packs an mc block at a time, just before its
// products, so that it is still in L2 (4-6% faster at 1024^2 and 2048^2 on the
// development VM than the whole of M at once). B is packed one kc step at a
// time, just before the tasks use it, so that it is still in the caches (a
// version that packed all of K at once was 5-10% slower on one thread: B came
// back from L3). Measured on the H200 host beside torch.mm in the same runs
// (docs/BENCHMARKS.md), 16 threads: at 2048^2 16.9 ms with the split before
// (one 132-row task a thread, each packing its own A block, two loops of the
// pool a kc step), 12.2-17.7 with this one (torch: 11.1-13.5); at 512^2 0.47
// before, 0.29-0.54 now (torch: 0.22-0.33), and 2.3 ms in the ladder's own run
// while numpy's BLAS threads spun on the same cores (since fixed in the bench).
//
// Rounding. Each element is still one chain of K steps in ascending k (the kc
// blocks go on from what C holds), but a step is one fused multiply-add,
// rounded once, where the reference rounds the product and then the sum. So the
// bits can differ from the reference's: both are within gamma_K sum_k
// |a_ik||b_kj| of the exact product (Higham 3.1), so they differ by at most
// twice that: the verifier holds this rung to Note [Device matmul bound], as it
// holds a GPU's fused products, not to bit equality. The bits do not depend on
// the thread count: an element's kc blocks may run on different threads, but
// always in order (each step's tasks wait for the step before's), and the kc
// blocks and the tiles' rows and columns are the same for any count (one
// thread's passes of A's rows are shorter, which no element's sum depends on).
// float16, bfloat16 and the integers are not packed: the register rung takes
// them.

// A panel of A or B as the microkernel reads it: packed (ld 0), or in place
// with its rows (A) or steps (B) ld elements apart.
template <typename T>
struct Panel {
  const T* p;
  int64_t ld;
};

// One microkernel call at C's tile (r, c) of h x w valid elements; a tile cut
// by the edge runs whole on a buffer and copies its valid corner out.
template <typename T>
inline void tile(const Micro<T>& m, int64_t kc, Panel<T> a, Panel<T> b, T* c, int64_t ldc, int64_t h, int64_t w,
                 bool load) {
  const MicroFn<T> fn = m.fn[a.ld != 0][b.ld != 0];
  if (h == m.mr && w == m.nr) return fn(kc, a.p, a.ld, b.p, b.ld, c, ldc, load);
  alignas(64) T buf[16 * 64];  // mr x nr fits: at most 12 x 32 floats
  if (load) {                  // the corner past the edge is zeros, never uninitialised bytes
    std::fill(buf, buf + m.mr * m.nr, T(0));
    for (int64_t i = 0; i < h; ++i) std::memcpy(buf + i * m.nr, c + i * ldc, size_t(w) * sizeof(T));
  }
  fn(kc, a.p, a.ld, b.p, b.ld, buf, m.nr, load);
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

// The grid of tasks a product's C is cut into: rg groups of A's panels
// (rows) by cg groups of B's panels (columns), Note [Packed matmul]. A task
// of tm x tn elements of C costs tm tn steps of products plus 16 (tm + tn)
// for the A and B panels it reads from other cores' caches. The threads
// claim tasks as they come free, so a product takes at least the rounds of
// tasks the threads need, and on a host whose cores run at different speeds
// (or wake late) about the total over the threads plus one task, the tail
// of the slowest thread: kTail task. The grid of least cost, among those of
// at most four tasks a thread; the squarest of those as good.
constexpr double kTail = 1.0;
struct Grid {
  int64_t rg = 1, cg = 1;
};
Grid task_grid(int64_t row_panels, int64_t col_panels, int64_t mr, int64_t nr, int64_t threads) {
  Grid best;
  double best_cost = 0;
  int64_t best_edge = 0;
  const int64_t most = threads == 1 ? 1 : 4 * threads;
  for (int64_t rg = 1; rg <= std::min(row_panels, most); ++rg)
    for (int64_t cg = 1; cg <= std::min(col_panels, most / rg); ++cg) {
      const int64_t tm = (row_panels + rg - 1) / rg * mr, tn = (col_panels + cg - 1) / cg * nr;
      const double task = double(tm) * double(tn) + 16.0 * double(tm + tn), tasks = double(rg * cg);
      const double rounds = std::ceil(tasks / double(threads));
      const double cost = std::max(rounds * task, tasks * task / double(threads) + kTail * task);
      if (best_edge == 0 || cost < best_cost * 0.999 || (cost <= best_cost * 1.001 && tm + tn < best_edge)) {
        best = {rg, cg};
        best_cost = cost;
        best_edge = tm + tn;
      }
    }
  return best;
}

// One step of the loop nest: a kc block of K (pc) for a block of B's
// columns (jc) and a pass of A's rows (ic), its packing and its products.
struct Step {
  int64_t jc, nb, col_panels;  // B's columns [jc, jc + nb), in col_panels panels
  int64_t pc, kb;              // K's steps [pc, pc + kb)
  int64_t ic, rows, row_panels;
  bool packs_b;     // the first pass of its (jc, pc): later passes use the same packed B
  int64_t b_step;   // B's steps a packing item packs
  int64_t b_items;  // packing items of B (0 unless packs_b), then a_items of A (its row_panels
  int64_t a_items;  // from a_from on; 0 where the tasks pack their own panels)
  int64_t a_from;   // its first panel of A that is packed: those before are read in place
  Grid grid;        // its products' tasks
  int64_t first;    // its first item in the product's list: packing, then tasks
  int64_t packing() const { return b_items + a_items; }
  int64_t tasks() const { return grid.rg * grid.cg; }
};

// A count of one step's items done, alone on its cache line (the threads
// spinning on one count do not lose their copy each time another moves).
struct alignas(64) Count {
  std::atomic<int64_t> n{0};
  void add() {
    n.fetch_add(1, std::memory_order_release);
    n.notify_all();
  }
};

// Waits until `done` reaches `want` (other threads' items; see packed_product):
// a spin, then a sleep until the count moves (a thread that holds one of the
// items may have lost its core, with more threads than cores).
inline void wait_for(const Count& done, int64_t want, trace::ScopedSpan& item, const char* key) {
  if (done.n.load(std::memory_order_acquire) >= want) return;
  const int64_t since = item.active() ? trace::now_ns() : 0;
  for (int spins = 0;; ++spins) {
    const int64_t now = done.n.load(std::memory_order_acquire);
    if (now >= want) {
      if (item.active()) item.arg(key, trace::now_ns() - since);
      return;
    }
    if (spins < 2048)
      cpu_relax();
    else
      done.n.wait(now, std::memory_order_acquire);
  }
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
  // Rows of A packed at once: all of M, up to a pass's buffer of kPassBytes;
  // one thread, A's block of mc rows (Note [Packed matmul]).
  constexpr int64_t kPassBytes = 8 << 20;
  const int64_t pass_rows = threads == 1
                                ? std::min(M, bl.mc)
                                : std::min(M, std::max(bl.mc, kPassBytes / (bl.kc * int64_t(sizeof(T))) / m.mr * m.mr));
  const int64_t mcp = bl.mc / m.mr;  // A's panels in one block of a task, the block that stays in L2
  // A product of one step on several threads: every task packs its own panels (Note [Packed matmul]).
  const bool own_panels = threads > 1 && M <= pass_rows && K <= bl.kc && N <= bl.nc;
  // Whole panels read in place, not packed (Note [Panels read in place]): A's
  // where its rows are contiguous, K is one kc block, and its rows are no
  // further apart than a kc block; B's where every task packs its own panels
  // and its steps are contiguous, no further apart than nc.
  const bool a_in_place = a.cs == 1 && a.rs > 0 && K <= bl.kc && a.rs <= bl.kc;
  const bool b_in_place = own_panels && b.cs == 1 && b.rs > 0 && b.rs <= bl.nc;

  // The steps, in the loop nest's order, and every item of the product in one list.
  std::vector<Step> steps;
  int64_t items = 0;
  for (int64_t jc = 0; jc < N; jc += bl.nc)
    for (int64_t pc = 0; pc < K; pc += bl.kc)
      for (int64_t ic = 0; ic < M; ic += pass_rows) {
        Step st;
        st.jc = jc, st.nb = std::min(bl.nc, N - jc), st.col_panels = (st.nb + m.nr - 1) / m.nr;
        st.pc = pc, st.kb = std::min(bl.kc, K - pc);
        st.ic = ic, st.rows = std::min(pass_rows, M - ic), st.row_panels = (st.rows + m.mr - 1) / m.mr;
        st.packs_b = ic == 0;
        // A packing item of B is about kGrainSize numbers: some steps across all its panels.
        st.b_step = std::clamp<int64_t>(kGrainSize / (st.col_panels * m.nr), 1, st.kb);
        st.b_items = st.packs_b && !own_panels ? (st.kb + st.b_step - 1) / st.b_step : 0;
        st.a_from = a_in_place ? st.rows / m.mr : 0;  // its whole panels
        st.a_items = own_panels ? 0 : st.row_panels - st.a_from;
        st.grid = task_grid(st.row_panels, st.col_panels, m.mr, m.nr, threads);
        st.first = items;
        items += st.packing() + st.tasks();
        steps.push_back(st);
      }
  // Two of each packed buffer: step s + 1 packs into one while step s's
  // products read the other (one thread runs them one after the other: one).
  // Tasks that pack their own panels use none of them.
  const int64_t nbuf = threads > 1 ? 2 : 1;
  const int64_t b_size = own_panels ? 0 : bl.kc * ((std::min(bl.nc, N) + m.nr - 1) / m.nr * m.nr);
  const int64_t a_size = own_panels ? 0 : bl.kc * ((pass_rows + m.mr - 1) / m.mr * m.mr);
  T* const bbuf = scratch<T, 0>(nbuf * b_size);
  T* const abuf = scratch<T, 1>(nbuf * a_size);
  std::vector<int64_t> b_of(steps.size());  // which B buffer each step's products read
  for (size_t s = 0, nbufs = 0; s < steps.size(); ++s)
    b_of[s] = steps[s].packs_b ? int64_t(nbufs++ % nbuf) : b_of[s - 1];

  // How many of each step's packing items and tasks are done.
  std::vector<Count> packed(steps.size()), computed(steps.size());

  // Panel p of A's rows in step st (rows ic + p mr on), at dst.
  auto pack_a = [&](const Step& st, int64_t p, T* dst) {
    const int64_t r = st.ic + p * m.mr;
    pack_a_panel(Strided<T>{a.p + r * a.rs + st.pc * a.cs, a.rs, a.cs}, std::min(m.mr, M - r), st.kb, m.mr, dst);
  };
  auto pack = [&](size_t s, int64_t i) {
    const Step& st = steps[s];
    T* const bpack = bbuf + b_of[s] * b_size;
    T* const apack = abuf + int64_t(s) % nbuf * a_size;
    if (i < st.b_items) {
      pack_b_steps(Strided<T>{b.p + st.pc * b.rs + st.jc * b.cs, b.rs, b.cs}, st.nb, st.col_panels, i * st.b_step,
                   std::min(st.kb, (i + 1) * st.b_step), st.kb, m.nr, bpack);
    } else {
      const int64_t p = st.a_from + i - st.b_items;
      pack_a(st, p, apack + p * st.kb * m.mr);
    }
  };
  // Task t of step s: row group t / cg by column group t % cg; its span says what it read in place.
  auto compute = [&](size_t s, int64_t t, trace::ScopedSpan& span) {
    const Step& st = steps[s];
    const int64_t r = t / st.grid.cg, h = t % st.grid.cg;
    const int64_t p0 = r * st.row_panels / st.grid.rg, p1 = (r + 1) * st.row_panels / st.grid.rg;
    const int64_t q0 = h * st.col_panels / st.grid.cg, q1 = (h + 1) * st.col_panels / st.grid.cg;
    // The panels read in place; the step's shared packed panels, or this
    // task's own: its B panels now, its A panels a block at a time.
    const int64_t b_from = b_in_place ? std::clamp(st.nb / m.nr, q0, q1) : q0;  // its first packed B panel
    const T* const bpack = bbuf + b_of[s] * b_size;
    const T* const apack = abuf + int64_t(s) % nbuf * a_size;
    T* const own_b = own_panels ? scratch<T, 2>((q1 - b_from) * st.kb * m.nr) : nullptr;
    T* const own_a = own_panels ? scratch<T, 3>(mcp * st.kb * m.mr) : nullptr;
    if (own_panels && b_from < q1)
      pack_b_steps(Strided<T>{b.p + st.pc * b.rs + (st.jc + b_from * m.nr) * b.cs, b.rs, b.cs},
                   std::min(st.nb - b_from * m.nr, (q1 - b_from) * m.nr), q1 - b_from, 0, st.kb, st.kb, m.nr, own_b);
    auto b_panel = [&](int64_t q) -> Panel<T> {
      if (q < b_from) return {b.p + st.pc * b.rs + (st.jc + q * m.nr) * b.cs, b.rs};
      return {own_panels ? own_b + (q - b_from) * st.kb * m.nr : bpack + q * st.kb * m.nr, 0};
    };
    if (p0 < st.a_from) span.arg("a_read_in_place", int64_t(1));
    if (q0 < b_from) span.arg("b_read_in_place", int64_t(1));
    T* const cb = c + st.ic * N + st.jc;         // this step's block of C
    for (int64_t pb = p0; pb < p1; pb += mcp) {  // a block of A's panels, then every B panel of the task
      const int64_t pe = std::min(p1, pb + mcp);
      if (own_panels)
        for (int64_t p = std::max(pb, st.a_from); p < pe; ++p) pack_a(st, p, own_a + (p - pb) * st.kb * m.mr);
      auto a_panel = [&](int64_t p) -> Panel<T> {
        if (p < st.a_from) return {a.p + (st.ic + p * m.mr) * a.rs + st.pc * a.cs, a.rs};
        return {own_panels ? own_a + (p - pb) * st.kb * m.mr : apack + p * st.kb * m.mr, 0};
      };
      for (int64_t q = q0; q < q1; ++q) {
        const int64_t j = q * m.nr, w = std::min(m.nr, st.nb - j);
        for (int64_t p = pb; p < pe; ++p) {
          const int64_t i = p * m.mr;
          // The next tile of C on its way from memory while this one runs.
          const bool down = p + 1 < pe;
          if (down || q + 1 < q1) {
            const int64_t ni = down ? i + m.mr : pb * m.mr, nj = down ? j : j + m.nr;
            prefetch_tile(cb + ni * N + nj, N, std::min(m.mr, st.rows - ni),
                          std::min(m.nr, st.nb - nj) * int64_t(sizeof(T)));
          }
          tile(m, st.kb, a_panel(p), b_panel(q), cb + i * N + j, N, std::min(m.mr, st.rows - i), w, st.pc > 0);
        }
      }
    }
  };

  // Every thread claims items in the list's order and runs each once its
  // inputs are ready (Note [Packed matmul]): a step's tasks wait for its
  // packing and for the previous step's tasks (the same tiles of C, the kc
  // blocks in order); a step's packing waits for the tasks of the step two
  // before, the last to read the buffers it writes. Items are claimed in
  // order and never wait on a later one, so every wait is for an item some
  // running thread holds: none waits forever.
  std::atomic<int64_t> next{0};
  auto run = [&](int64_t, int64_t) {
    size_t s = 0;
    for (int64_t item; (item = next.fetch_add(1, std::memory_order_relaxed)) < items;) {
      while (item >= steps[s].first + steps[s].packing() + steps[s].tasks()) ++s;
      const Step& st = steps[s];
      const int64_t i = item - st.first;
      const bool packs_b = i < st.b_items, packs = i < st.packing();
      trace::ScopedSpan span(trace::Floor::Kernels, packs_b ? "pack B" : packs ? "pack A" : "tile task");
      span.arg("step", int64_t(s));
      if (packs) {
        if (s >= 2) wait_for(computed[s - 2], steps[s - 2].tasks(), span, "waited_for_readers_ns");
        span.arg(packs_b ? "steps" : "panel", packs_b ? i : st.a_from + i - st.b_items);
        pack(s, i);
        packed[s].add();
      } else {
        wait_for(packed[s], st.packing(), span, "waited_for_packing_ns");
        if (s >= 1) wait_for(computed[s - 1], steps[s - 1].tasks(), span, "waited_for_step_before_ns");
        span.arg("task", i - st.packing());
        if (own_panels) span.arg("packed_its_own_panels", int64_t(1));
        compute(s, i - st.packing(), span);
        computed[s].add();
      }
    }
  };
  // One loop of the pool for the whole product, a chunk for each thread (no
  // more than the most items of a step: the others would only wait); a
  // chunk whose thread came late finds the list done and returns at once.
  int64_t widest = 1;
  for (const Step& st : steps) widest = std::max(widest, st.packing() + st.tasks());
  parallel_for(0, std::min(threads, widest), 1, run);
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
      if (!m.ok()) return;
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
  if (!m.ok()) return 0;
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
      for (int k = 0; k < 64; ++k) m.fn[0][0](kc, ap.data(), 0, bp.data(), 0, c.data(), m.nr, true);
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
