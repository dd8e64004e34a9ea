// The simulated device's fused kernel: descent.compile's fusion IR,
// interpreted in one launch on sim:0's current stream.
//
// Note [An interpreted fused kernel on sim:0]
// ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
// On the CPU a fused group becomes generated C++ built by the system
// compiler (Note [Fusing a pointwise chain], descent/_compile/fusion.py). On
// sim:0 there is no device compiler to call: the simulated device runs what
// the host compiled in advance. So the group's IR itself is the kernel: it
// is parsed once (parse_fused) into a program of loads, constants and ops,
// one register each, and each launch interprets it. One launch per group:
//   - pointwise: 256 elements a block (launch::linear_launch), the block
//     running the program one instruction at a time over its strip of 256
//     (so the switch on the op is paid once per instruction and strip, and
//     each op's loop is the op's own functor from elementwise.h inlined:
//     the very expression the device loops of eager use, compiled with
//     -ffp-contract=off as they are);
//   - a chain ending in sum, mean or max: one block per output, which
//     reduces the chain's elements in the order eager's device reduction
//     adds them (Note [A reduction over blocks], device_reduce.h): the same
//     plan for the same shape, each of its blocks' threads visiting the same
//     loads into the same lanes, the same lane, warp and block trees, and
//     where eager's plan has several blocks per output, their partials
//     reduced as eager's second launch reduces them, in this one launch.
//     The chain's elements are computed a strip of loads at a time, where
//     the reduction reads them, and written out too where a node outside
//     the group uses them.
// The program keeps eager's order of operations element by element and the
// reduction's order of additions, so the result is eager's on sim:0 bit for
// bit (the verifier checks it: descent verify --compiled). One assumption is
// written down: eager's intermediate (the chain's last tensor, freshly
// allocated) starts 16-byte aligned, so its sum takes 16-byte loads; the
// caching allocator's blocks always do. The trace shows one kernel span
// with the group's kernel name where eager shows one per op. What a real
// GPU does instead is generate code and compile it at run time.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "floors/core/device.h"

namespace descent::kernels::device {

struct FusedProgram;

// The program of a fused group's IR (the text descent/_compile/cpp_kernel.py
// writes: `%in0 = input float32 [4, 5] stride [5, 1]`, `%t0 = add %in0 const
// 1.0`, `%t1 = sum %t0 dims [1] keepdim 0`, `out0 = %t1`) over the elements of
// `shape`, in `dtype` ("float32" or "float64"); `name` is the kernel's name
// in the trace. ValueError naming the line it cannot read.
std::shared_ptr<const FusedProgram> parse_fused(const std::string& ir, const std::vector<int64_t>& shape,
                                                const std::string& dtype, const std::string& name);
// The program printed back as IR, from what was parsed: what the verifier reads.
std::string fused_ir(const FusedProgram& p);
// How many pointers a launch takes: the inputs', then the outputs'.
int fused_arity(const FusedProgram& p);
// One launch of the program on sim device `d`'s current stream over device
// memory `ptrs` (fused_arity of them); returns at once, as every launch does.
void launch_fused(const std::shared_ptr<const FusedProgram>& p, Device d, const std::vector<void*>& ptrs);

}  // namespace descent::kernels::device
