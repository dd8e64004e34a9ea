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
//
// Note [NCCL's watchdog]
// ~~~~~~~~~~~~~~~~~~~~~~
// Work.wait() is a stream wait, so no host thread waits for a collective,
// and a rank that never joins would leave NCCL's stream waiting forever,
// and every stream that waits for it. As PyTorch's ProcessGroupNCCL, the
// group keeps a thread of its own, the watchdog: every 100 ms it asks each
// collective's event (step 3 above) whether the device has passed it, and
// forgets those that have. One that has run longer than the group's
// timeout (init_process_group(timeout=...), PyTorch's default of 10 minutes
// for nccl), counted from its call, ends the process: the watchdog prints
// PyTorch's line, "[Rank 0] Watchdog caught collective operation timeout:
// WorkNCCL(SeqNum=2, OpType=ALLREDUCE, NumelIn=4, NumelOut=4,
// Timeout(ms)=1000) ran for 1041 milliseconds before timing out." (PyTorch
// 2.11's, word for word, on the H200 host), then why the process goes, and
// aborts (SIGABRT) without ncclCommAbort: the process's end frees what NCCL
// held, as with PyTorch's default TORCH_NCCL_ASYNC_ERROR_HANDLING=3. On
// purpose descent ends at once where PyTorch 2.11 first dumps its debug
// information (TORCH_NCCL_DUMP_ON_TIMEOUT) and, in the run that printed the
// line above, had not ended 40 s later: a learner's script should not hang
// after saying why. Ending the group (destroy_process_group, the script's
// end) first waits for NCCL's stream with the watchdog still watching, so a
// script cannot hang at its end either. The test keeps the compute stream
// busy (descent.cuda._sleep, torch.cuda._sleep's twin) longer than a
// one-second timeout, so that an all_reduce, which waits for it (step 1),
// cannot start in time. At every look the watchdog also asks NCCL for an
// error of its own (ncclCommGetAsyncError: a peer that died, a network
// that failed), and one ends the process at once, not at the timeout, in
// PyTorch's words: "[Rank 0] Process group watchdog thread terminated with
// exception: NCCL error: remote process exited or there was a network
// error, NCCL version ...", NCCL's explanation and its last error (and,
// where a collective was running, PyTorch's line naming it first): the
// words of PyTorch's sources and of its logs from failed jobs, not compared
// beside torch here, where one GPU has no peer to lose. For the same reason
// the test hands the watchdog an error as NCCL would report it
// (simulate_nccl_async_error, process_group.h), as PyTorch's own
// ProcessGroupNCCLErrorsTest simulates one.
#pragma once

#include <chrono>

#include "floors/distributed/process_group.h"

namespace descent::distributed {

// The NCCL group of rank RANK of WORLD_SIZE (torchrun's variables; 0 of 1
// when unset) on cuda:LOCAL_RANK (0 when unset); a collective may run for
// `timeout` (Note [NCCL's watchdog]).
std::unique_ptr<ProcessGroup> make_nccl_group(std::chrono::milliseconds timeout);

// Note [NCCL's watchdog]: the watchdog's next look reads `code` (an
// ncclResult_t, checked by simulate_nccl_async_error in process_group.h) as
// NCCL's asynchronous error, in place of what ncclCommGetAsyncError says.
void set_simulated_nccl_error(int code);

}  // namespace descent::distributed
