// The verifier: runs an op's reference and optimized kernels on the same
// inputs and says whether they agree, bit for bit or within a stated bound.
// See Note [Summation bound] (verifier.cpp).
#pragma once

#include <string>
#include <vector>

#include "floors/dispatch/dispatcher.h"

namespace descent::kernels {

struct Verdict {
  std::string op;        // "sum"
  ScalarType dtype;      // the dtype of the tensor inputs
  std::string claim;     // "bit-for-bit", "bound", "unsupported", "single kernel"
  std::string variants;  // what ran: "reference vs optimized"
  bool passed = false;
  double max_abs_diff = 0;  // over all outputs
  double bound = 0;         // the largest bound allowed (0 for bit-for-bit)
  std::string detail;       // the error message for "unsupported", or what differed
};

// Whether the verifier holds the row to a reference: every row but c10d's
// collectives, whose kernels hand the work to a process group and have no
// sample call (Note [Collectives are c10d ops]; tests/python/test_distributed.py
// holds them to what one process computes).
bool is_verified(const OpEntry& op);

// Builds the op's sample call (Note [One op table]) with tensors of `dtype`,
// drawn from the counter-based generator with `seed`.
Stack sample_call(const OpEntry& op, ScalarType dtype, uint64_t seed);

// A copy of t on `d` that keeps its layout: the bytes of the storage span its
// view covers, viewed with t's sizes, strides and offset within them (a
// transposed sample stays transposed on the device); t itself when it is on
// `d` already. How the verifier and the device tests put a sample on a device.
Tensor same_layout_on(const Tensor& t, Device d);

// Runs the sample call with each variant and compares the results. With a
// `device` (sim:0, cuda:0), runs it there instead, on copies of the same
// inputs (same values, sizes and strides), against the CPU's reference
// loop, and compares as Note [Device claims] (verifier.cpp) says.
Verdict verify(const OpEntry& op, ScalarType dtype, uint64_t seed, Device device = Device{});
// verify() on the arguments given instead of the op's sample (odd shapes,
// strides), on the CPU (every optimized rung against the reference) or on a
// device (`args` copied there as they are laid out); not for an in-place op.
Verdict verify_call(const OpEntry& op, const Stack& args, ScalarType dtype, Device device);
// Every rung of the device's matmul ladder (Note [The matmul ladder],
// matmul_ladder.h) on every dtype it takes, against the CPU's reference, on
// odd shapes, tile edges, transposed operands and a batch (verify_rungs.cpp);
// each verdict's op is "mm[rung] shape", and it fails too when another rung ran.
std::vector<Verdict> verify_matmul_rungs(uint64_t seed, Device device);
// verify() over every op and dtype.
std::vector<Verdict> verify_all(uint64_t seed, Device device = Device{});
std::string format_verdicts(const std::vector<Verdict>& v);  // a table, one line per verdict

}  // namespace descent::kernels
