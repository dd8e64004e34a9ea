// The optimized CPU matrix product: register tiles, as wide as the CPU's
// vectors, bit-for-bit the reference.
//
// [SECTION] The tile
// [SECTION] Rows, columns and the remainder
// [SECTION] One entry per instruction set
// [SECTION] The kernel
//
// Note [Register-blocked matmul]
// ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
// The reference computes out[i][j] as the sum over k = 0, 1, ... of
// a[i][k] * b[k][j]: each product rounded, then added to the running sum,
// starting from 0. This kernel keeps exactly that arithmetic (the same
// products, added in the same order, never fused into one multiply-add: the
// file is built with -ffp-contract=off) and changes only where the running
// sums live. A tile of MR output rows by NV vectors of columns stays in
// vector registers for the whole k loop; each step of k loads NV vectors of
// row k of b and MR numbers of a, and does MR x NV vector multiplies and adds.
// The plain i-k-j loop instead loads and stores the whole output row at every
// step of k, and that traffic, not the arithmetic, is what bounded it. b is
// read in blocks of kKBlock rows by one tile's width, first copied next to
// each other so that a block stays in the first-level cache while every row
// tile uses it; a tile's running sums go on from one block of k to the next
// through the output, so the blocks change nothing in the arithmetic.
//
// The vectors are as wide as the widest unit the CPU has: AVX-512 (64 bytes),
// AVX2 (32) or SSE2 (16, which every x86-64 has), chosen once at run time;
// the trace names the choice (isa=avx512). Columns to the right of the last
// whole tile take narrower tiles, then the i-k-j loop; int64 takes the i-k-j
// loop throughout (its products wrap, which vector code would not promise).
// Every output element is built by one thread, in k order, so the result is
// bit-for-bit the reference's on any machine and any number of threads.
#include <algorithm>
#include <atomic>
#include <string>
#include <string_view>
#include <type_traits>
#include <vector>

#include "floors/kernels/elementwise.h"
#include "floors/kernels/kernels.h"
#include "floors/kernels/cpu/parallel.h"

namespace descent::kernels {

namespace {

constexpr int64_t kMatmulGrain = 32 * kGrainSize;  // multiply-adds (Note [Intra-op parallelism])

// [SECTION] The tile ---------------------------------------------------------------

// A vector of kBytes / sizeof(T) numbers of type T (GCC's vector extension:
// +, * act lane by lane, as the scalar operators would).
template <typename T, int kBytes>
using Vec [[gnu::vector_size(kBytes)]] = T;

// Where the operands of one tile live: a's rows are lda apart, b's ldb, c's ldc.
template <typename T>
struct TileArgs {
  const T* a;
  int64_t lda;
  const T* b;
  int64_t ldb;
  T* c;
  int64_t ldc;
};

// c[0..MR) x [0..NV vectors) plus-or-equal a[0..MR) x [k0, k1) times
// b[k0, k1) (b already points at row k0). With `first`, the sums start from
// +0, as the reference's do; otherwise they go on from what c holds, so
// splitting k into blocks adds the same products in the same order.
template <typename T, typename V, int MR, int NV>
[[gnu::always_inline]] inline void tile(const TileArgs<T>& t, int64_t k0, int64_t k1, bool first) {
  constexpr int kLanes = sizeof(V) / sizeof(T);
  V acc[MR][NV];
#pragma GCC unroll 32
  for (int i = 0; i < MR; ++i)
#pragma GCC unroll 8
    for (int v = 0; v < NV; ++v) {
      if (first)
        acc[i][v] = V{};
      else
        std::memcpy(&acc[i][v], t.c + i * t.ldc + v * kLanes, sizeof(V));
    }
  for (int64_t k = k0; k < k1; ++k) {
    const T* bk_row = t.b + (k - k0) * t.ldb;
    V bk[NV];
#pragma GCC unroll 8
    for (int v = 0; v < NV; ++v) std::memcpy(&bk[v], bk_row + v * kLanes, sizeof(V));
#pragma GCC unroll 32
    for (int i = 0; i < MR; ++i) {
      const V aik = t.a[i * t.lda + k] - V{};  // a[i][k] in every lane (x - 0 is x exactly, even -0)
#pragma GCC unroll 8
      for (int v = 0; v < NV; ++v) acc[i][v] = acc[i][v] + aik * bk[v];
    }
  }
#pragma GCC unroll 32
  for (int i = 0; i < MR; ++i)
#pragma GCC unroll 8
    for (int v = 0; v < NV; ++v) std::memcpy(t.c + i * t.ldc + v * kLanes, &acc[i][v], sizeof(V));
}

// [SECTION] Rows, columns and the remainder ------------------------------------------

// Columns [j0, N) of `rows` output rows, in the reference's order per
// element. A few columns (fewer than a vector: the last ones, or all of a
// product as narrow as Linear(3, 1)'s) keep each running sum in a register
// over k; more take the i-k-j loop, which reads b along its rows. Summing
// in memory instead would make every step of k wait for the store of the
// step before (a matrix-vector product ran at a fifth of its speed).
template <typename T>
[[gnu::always_inline]] inline void columns_ikj(const T* a, const T* b, T* c, int64_t rows, int64_t K, int64_t N,
                                               int64_t j0) {
  if (N - j0 <= 16) {
    constexpr int64_t kRows = 8;  // eight independent sums in flight, not one chain
    int64_t i = 0;
    for (; i + kRows <= rows; i += kRows) {
      for (int64_t j = j0; j < N; ++j) {
        T sum[kRows] = {};
        for (int64_t k = 0; k < K; ++k) {
          const T bkj = b[k * N + j];
#pragma GCC unroll 8
          for (int64_t r = 0; r < kRows; ++r) sum[r] = plus(sum[r], times(a[(i + r) * K + k], bkj));
        }
        for (int64_t r = 0; r < kRows; ++r) c[(i + r) * N + j] = sum[r];
      }
    }
    for (; i < rows; ++i) {
      for (int64_t j = j0; j < N; ++j) {
        T sum = T(0);
        for (int64_t k = 0; k < K; ++k) sum = plus(sum, times(a[i * K + k], b[k * N + j]));
        c[i * N + j] = sum;
      }
    }
    return;
  }
  for (int64_t i = 0; i < rows; ++i) {
    T* row = c + i * N;
    for (int64_t j = j0; j < N; ++j) row[j] = T(0);
    for (int64_t k = 0; k < K; ++k) {
      const T aik = a[i * K + k];
      const T* brow = b + k * N;
      for (int64_t j = j0; j < N; ++j) row[j] = plus(row[j], times(aik, brow[j]));
    }
  }
}

// k is taken kKBlock rows of b at a time: a packed block of b (kKBlock x NR
// numbers, 32 KiB for AVX-512 floats) stays in the first-level cache while
// every row tile of the range reads it.
constexpr int64_t kKBlock = 256;

// `rows` consecutive output rows of one batch. Column panels NR wide: each
// kKBlock x NR block of b is first copied into `panel`, contiguous (b's rows
// are N apart, and when N * sizeof(T) is a multiple of 4 KiB they would all
// compete for the same few cache sets), then every MR-row tile runs over it.
// Fewer than MR rows read b where it is. Then one-vector tiles, then the
// i-k-j loop for the last columns.
template <typename T, int kBytes, int MR, int NV>
[[gnu::always_inline]] inline void batch_rows(const T* a, const T* b, T* c, int64_t rows, int64_t K, int64_t N,
                                              T* panel) {
  using V = Vec<T, kBytes>;
  constexpr int64_t kLanes = kBytes / sizeof(T), NR = NV * kLanes;
  const bool pack = rows >= MR;
  int64_t j = 0;
  for (; j + NR <= N; j += NR) {
    for (int64_t k0 = 0; k0 < K || k0 == 0; k0 += kKBlock) {
      const int64_t k1 = std::min(K, k0 + kKBlock);
      if (pack) {
        for (int64_t k = k0; k < k1; ++k) std::memcpy(panel + (k - k0) * NR, b + k * N + j, NR * sizeof(T));
      }
      const T* bp = pack ? panel : b + k0 * N + j;
      const int64_t ldb = pack ? NR : N;
      int64_t i = 0;
      for (; i + MR <= rows; i += MR) tile<T, V, MR, NV>({a + i * K, K, bp, ldb, c + i * N + j, N}, k0, k1, k0 == 0);
      for (; i < rows; ++i) tile<T, V, 1, NV>({a + i * K, K, bp, ldb, c + i * N + j, N}, k0, k1, k0 == 0);
    }
  }
  for (; j + kLanes <= N; j += kLanes) {
    for (int64_t i = 0; i < rows; ++i) tile<T, V, 1, 1>({a + i * K, K, b + j, N, c + i * N + j, N}, 0, K, true);
  }
  if (j < N) columns_ikj(a, b, c, rows, K, N, j);
}

// Output rows [lo, hi) of the B x M x N product, rows counted across batches.
template <typename T, int kBytes, int MR, int NV>
[[gnu::always_inline]] inline void row_range(const T* a, const T* b, T* c, int64_t M, int64_t K, int64_t N, int64_t lo,
                                             int64_t hi) {
  constexpr int64_t NR = NV * kBytes / sizeof(T);
  alignas(64) T panel[kKBlock * NR];
  for (int64_t r = lo; r < hi;) {
    const int64_t batch = r / M;
    const int64_t rows = std::min(hi, (batch + 1) * M) - r;  // not past the batch
    batch_rows<T, kBytes, MR, NV>(a + r * K, b + batch * K * N, c + r * N, rows, K, N, panel);
    r += rows;
  }
}

// [SECTION] One entry per instruction set ----------------------------------------------

// Tile shapes: MR x NV accumulators plus NV vectors of b and one of a must fit
// the register file (32 vector registers with AVX-512, 16 otherwise), and
// MR x NV >= 8 independent sums keep both vector adders busy.
template <typename T>
using RowRangeFn = void (*)(const T*, const T*, T*, int64_t, int64_t, int64_t, int64_t, int64_t);

template <typename T>
void range_sse2(const T* a, const T* b, T* c, int64_t M, int64_t K, int64_t N, int64_t lo, int64_t hi) {
  row_range<T, 16, 4, 2>(a, b, c, M, K, N, lo, hi);
}
#if defined(__x86_64__)
template <typename T>
[[gnu::target("avx2")]] void range_avx2(const T* a, const T* b, T* c, int64_t M, int64_t K, int64_t N, int64_t lo,
                                        int64_t hi) {
  row_range<T, 32, 4, 2>(a, b, c, M, K, N, lo, hi);
}
template <typename T>
[[gnu::target("avx512f")]] void range_avx512(const T* a, const T* b, T* c, int64_t M, int64_t K, int64_t N, int64_t lo,
                                             int64_t hi) {
  row_range<T, 64, 6, 2>(a, b, c, M, K, N, lo, hi);
}
#endif

enum class Isa { Sse2, Avx2, Avx512 };  // Sse2: 16-byte vectors (named "generic" off x86-64)

// The widest vector unit this CPU has, asked once.
Isa widest_isa() {
  static const Isa isa = [] {
#if defined(__x86_64__)
    __builtin_cpu_init();
    if (__builtin_cpu_supports("avx512f")) return Isa::Avx512;
    if (__builtin_cpu_supports("avx2")) return Isa::Avx2;
#endif
    return Isa::Sse2;
  }();
  return isa;
}

// The one in use: the widest, unless set_matmul_isa chose a narrower one.
std::atomic<int> g_isa{-1};
Isa current_isa() {
  const int v = g_isa.load(std::memory_order_relaxed);
  return v < 0 ? widest_isa() : static_cast<Isa>(v);
}

const char* isa_name(Isa isa) {
#if defined(__x86_64__)
  return isa == Isa::Avx512 ? "avx512" : isa == Isa::Avx2 ? "avx2" : "sse2";
#else
  (void)isa;
  return "generic";
#endif
}

template <typename T>
RowRangeFn<T> range_for(Isa isa) {
#if defined(__x86_64__)
  if (isa == Isa::Avx512) return range_avx512<T>;
  if (isa == Isa::Avx2) return range_avx2<T>;
#endif
  return range_sse2<T>;
}

}  // namespace

const char* matmul_isa() { return isa_name(current_isa()); }

std::vector<std::string> matmul_isas() {
  std::vector<std::string> names;
  for (int i = 0; i <= static_cast<int>(widest_isa()); ++i) names.push_back(isa_name(static_cast<Isa>(i)));
  return names;
}

void set_matmul_isa(std::string_view name) {
  const std::vector<std::string> names = matmul_isas();
  const auto it = std::find(names.begin(), names.end(), name);
  std::string choices;
  for (const std::string& n : names) choices += (choices.empty() ? "'" : ", '") + n + "'";
  DESCENT_CHECK(it != names.end(), ValueError, "set_matmul_isa(): '", name, "' is not a vector unit this CPU has; ",
                "choose one of ", choices);
  g_isa.store(static_cast<int>(it - names.begin()), std::memory_order_relaxed);
}

// [SECTION] The kernel -------------------------------------------------------------

namespace {

// A contiguous tensor's elements as float32 (optimized_copy's converting loop).
Tensor as_float32(const Tensor& t) {
  Tensor out = empty_tensor(t.sizes(), ScalarType::Float32, Device{});
  optimized_copy(t, out);
  return out;
}

}  // namespace

// The B * M output rows (all batches in one range) are what threads share.
bool optimized_matmul(const Tensor& a, const Tensor& b, const Tensor& out) {
  if (!a.is_contiguous() || !b.is_contiguous() || !out.is_contiguous()) return false;
  if (out.numel() == 0) return true;  // no loop over the rows of an empty product
  if (is_reduced_floating(out.dtype())) {
    // float16 and bfloat16: the float32 tiles over converted operands, each
    // total rounded once at the end, as the reference accumulates (Note
    // [Reduced-precision floats]). x86 has no 16-bit float arithmetic to tile.
    const Tensor out32 = empty_tensor(out.sizes(), ScalarType::Float32, Device{});
    optimized_matmul(as_float32(a), as_float32(b), out32);
    optimized_copy(out32, out);
    return true;
  }
  const Isa isa = current_isa();
  const int64_t B = out.sizes()[0], M = out.sizes()[1], N = out.sizes()[2], K = a.sizes()[2];
  const int64_t row_work = std::max<int64_t>(1, (K + 1) * N);  // multiply-adds and zeroing per output row
  const int64_t grain_rows = (kMatmulGrain + row_work - 1) / row_work;
  visit_dtype(out.dtype(), [&]<typename T>() {
    const T* a_data = a.data<T>();
    const T* b_data = b.data<T>();
    T* out_data = out.data<T>();
    parallel_for(0, B * M, grain_rows, [=](int64_t lo, int64_t hi) {
      if constexpr (std::is_floating_point_v<T>) {
        range_for<T>(isa)(a_data, b_data, out_data, M, K, N, lo, hi);
      } else {  // the integers (bool is refused before): the i-k-j loop, wrapping as the reference does
        for (int64_t r = lo; r < hi; ++r)
          columns_ikj(a_data + r * K, b_data + (r / M) * K * N, out_data + r * N, 1, K, N, 0);
      }
    });
  });
  return true;
}

}  // namespace descent::kernels
