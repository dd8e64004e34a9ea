// PyTorch's twin of bench_descent.cpp: at::add on 1-element CPU tensors and
// at::empty({0}), timed the same way. Built by bench.py against the torch
// installation it finds (the H200 host has one).
#include <ATen/ATen.h>

#include "tests/bench/timing.h"

int main() {
  at::Tensor a = at::randn({1});
  at::Tensor b = at::randn({1});
  const long n = 200000;
  bench::report("torch_cpp_add_1elem", bench::median_ns_per_call([&] { at::Tensor c = at::add(a, b); }, n));
  bench::report("torch_cpp_empty_0", bench::median_ns_per_call([&] { at::Tensor c = at::empty({0}); }, n));
  return 0;
}
