// The device benchmark of the reductions and the matrix product: what one
// call takes on the device itself, between two timing events on the stream
// (Note [Streams and the two clocks]), the median of kReps repetitions of a
// few calls each after a warm-up. tests/bench/bench_device.py runs it beside
// PyTorch (torch.sum, and torch.matmul, which is cuBLAS) in the same run.
//
//     build/tests/bench/bench_device [--device cuda:0] [--sum-log2 28] [--matmul 4096]
//
// One JSON object per line: {"name": ..., "ms": ..., "rate": ..., "unit": ...}.
// On a machine without the device it says so and exits 0.
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "floors/dispatch/dispatcher.h"
#include "floors/registration.h"
#include "floors/streams/streams.h"
#include "tests/bench/timing.h"

using namespace descent;

namespace {

// A tensor of uniform numbers in [-1, 1) on `d`, made on the host and copied over.
Tensor random_on(const DimVector& sizes, Device d, uint64_t seed) {
  Tensor h = empty_tensor(sizes, ScalarType::Float32, Device{});
  std::mt19937 rng{static_cast<uint32_t>(seed)};
  std::uniform_real_distribution<float> u(-1, 1);
  float* p = h.data<float>();
  for (int64_t i = 0; i < h.numel(); ++i) p[i] = u(rng);
  Tensor t = empty_tensor(sizes, ScalarType::Float32, d);
  streams::copy_bytes(t.data_ptr(), d, h.data_ptr(), Device{}, size_t(h.numel()) * sizeof(float));
  return t;
}

// Device milliseconds per call of fn: events around `calls` calls, median of kReps after two warm-up rounds.
template <class Fn>
double device_ms(Device d, int calls, Fn&& fn) {
  streams::DeviceRuntime& rt = streams::runtime(d.type);
  const streams::Stream s = streams::current_stream(d);
  auto start = rt.create_event(d.index, true), end = rt.create_event(d.index, true);
  std::vector<double> per_call;
  for (int r = 0; r < bench::kReps + 2; ++r) {
    start->record(s);
    for (int i = 0; i < calls; ++i) fn();
    end->record(s);
    end->synchronize();
    if (r >= 2) per_call.push_back(start->elapsed_ms(*end) / calls);
  }
  return bench::median(per_call);
}

void report(const char* name, double ms, double rate, const char* unit) {
  std::printf("{\"name\": \"%s\", \"ms\": %.5f, \"rate\": %.3f, \"unit\": \"%s\"}\n", name, ms, rate, unit);
  std::fflush(stdout);
}

}  // namespace

int main(int argc, char** argv) {
  descent::register_floors();  // Note [Registering the floors]
  Device d{DeviceType::CUDA, 0};
  int sum_log2 = 28, n = 4096;
  for (int i = 1; i + 1 < argc; i += 2) {
    if (!std::strcmp(argv[i], "--device"))
      d = Device::parse(argv[i + 1]);
    else if (!std::strcmp(argv[i], "--sum-log2"))
      sum_log2 = std::atoi(argv[i + 1]);
    else if (!std::strcmp(argv[i], "--matmul"))
      n = std::atoi(argv[i + 1]);
  }
  if (streams::runtime(d.type).device_count() <= d.index) {
    std::fprintf(stderr, "bench_device: %s is not available: %s\n", d.str().c_str(),
                 streams::runtime(d.type).unavailable_reason().c_str());
    return 0;
  }
  {
    const Tensor x = random_on({int64_t(1) << sum_log2}, d, 1);
    const double ms = device_ms(d, 10, [&] { call(Op::sum, x); });
    report("sum_float32", ms, double(x.numel()) * 4 / (ms * 1e-3) / 1e12, "TB/s");
    const Tensor m = random_on({int64_t(1) << (sum_log2 / 2), int64_t(1) << (sum_log2 - sum_log2 / 2)}, d, 2);
    const double rows = device_ms(d, 10, [&] { call(Op::sum_dim, m, DimVector{1}); });
    report("sum_dim1_float32", rows, double(m.numel()) * 4 / (rows * 1e-3) / 1e12, "TB/s");
    // Elementwise: a + b reads two and writes one; copy_ reads one and writes one (bytes moved per second).
    const Tensor y = random_on({int64_t(1) << sum_log2}, d, 5);
    const double add = device_ms(d, 10, [&] { call(Op::add, x, y); });
    report("add_float32", add, double(x.numel()) * 12 / (add * 1e-3) / 1e12, "TB/s");
    Tensor z = empty_tensor(x.sizes(), ScalarType::Float32, d);
    const double copy = device_ms(d, 10, [&] { call(Op::copy_, z, x); });
    report("copy_float32", copy, double(x.numel()) * 8 / (copy * 1e-3) / 1e12, "TB/s");
  }
  {
    const Tensor a = random_on({n, n}, d, 3), b = random_on({n, n}, d, 4);
    const double ms = device_ms(d, 3, [&] { call(Op::mm, a, b); });
    report("matmul_float32", ms, 2.0 * n * n * n / (ms * 1e-3) / 1e12, "TFLOP/s");
    // On tensor cores (Note [Tensor-core matmul]); PyTorch's side is cuBLAS's bfloat16 and float16.
    for (ScalarType dt : {ScalarType::BFloat16, ScalarType::Float16}) {
      const Tensor a16 = call(Op::to, a, dt), b16 = call(Op::to, b, dt);
      const double ms16 = device_ms(d, 10, [&] { call(Op::mm, a16, b16); });
      report(dt == ScalarType::BFloat16 ? "matmul_bfloat16" : "matmul_float16", ms16,
             2.0 * n * n * n / (ms16 * 1e-3) / 1e12, "TFLOP/s");
    }
  }
  return 0;
}
