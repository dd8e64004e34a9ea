// The NCCL process group (c10d's ProcessGroupNCCL): collectives over CUDA
// tensors, run by NCCL's kernels on a stream of its own. Built where CMake
// found NCCL beside the CUDA toolkit (the nvidia-nccl-cu13 package that
// PyTorch's install brings). See README.md.
//
// Note [NCCL's own stream]
// ~~~~~~~~~~~~~~~~~~~~~~~~
// As PyTorch's ProcessGroupNCCL, the group keeps one stream of its own per
// device, so that a collective can run beside the compute stream's kernels
// (the overlap DDP lives on). A collective on floor 7:
//   1. an event recorded on the calling thread's current stream, and NCCL's
//      stream made to wait for it: the collective starts only once the
//      kernels that wrote the tensor have run;
//   2. the NCCL call (ncclAllReduce...) enqueues NCCL's kernel on NCCL's
//      stream and returns: floor 8, a launch, with the kernel itself on the
//      device clock (CUPTI records it as it records descent's own kernels);
//   3. an event recorded on NCCL's stream after it, and the tensor's memory
//      marked as used there (record_stream): the caching allocator does not
//      hand it out again before NCCL is done with it (Note [Deferred frees]).
// Work.wait() then makes the current stream wait for that event: a stream
// wait, not a host wait; the host goes on at once, and a kernel launched
// after wait() runs after the collective. is_completed() asks the event.
// With more than one rank, rank 0 makes NCCL's unique id and MPI carries it
// to the others (ranks are started by `descent run`, under mpirun); with one
// rank no MPI is needed. NVLink multicast is left as the environment sets it
// (NCCL_NVLS_ENABLE and the others): descent sets no NCCL variable.
#pragma once

#include "floors/distributed/process_group.h"

namespace descent::distributed {

// The NCCL group of rank RANK of WORLD_SIZE (torchrun's variables; 0 of 1
// when unset) on cuda:LOCAL_RANK (0 when unset).
std::unique_ptr<ProcessGroup> make_nccl_group();

}  // namespace descent::distributed
