// The default process group of this process (c10d's): what
// init_process_group makes and every collective uses. Work in progress
// (issue 20); see README.md.
#pragma once

#include <memory>
#include <string>

#include "floors/distributed/process_group_mpi.h"

namespace descent::distributed {

// Whether this build has an MPI library (found at configure time).
bool have_mpi();

// Makes the default group with `backend` ("mpi"); ValueError (PyTorch's
// words) when one exists already or the backend is unknown, RuntimeError for
// a backend this build lacks, NotImplementedError for "nccl" (not yet).
void init_process_group(const std::string& backend);
// The default group; ValueError (PyTorch's words) before init_process_group.
ProcessGroupMPI& default_group();
bool is_initialized();
// Drains and ends the default group (MPI_Finalize: a process has one MPI).
void destroy_process_group();

}  // namespace descent::distributed
