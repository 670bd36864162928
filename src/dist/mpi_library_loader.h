#pragma once
// Finds and loads libopchain_mpi.so (Note [MPI library] in dist/mpi_library.h).
#include <string>
#include <vector>

#include "dist/mpi_library.h"

namespace opchain {

struct MpiLibrary {
  std::string path;  // the candidate that loaded
  mpi_library::OpenWorldFn open_world = nullptr;
  mpi_library::AbortFn abort = nullptr;
};

// Where to look, in order: OPCHAIN_MPI_LIBRARY alone when set (a path the user gave must not be
// silently replaced by another); else the build tree's library and the installed one, each only if
// the file exists; last the bare name, for the dynamic loader's search path.
std::vector<std::string> mpi_library_candidates();

// dlopens the first candidate that loads, with RTLD_NOW | RTLD_GLOBAL (Open MPI loads its components
// with dlopen and they need libmpi's symbols global) and never closes it. Throws CommError naming
// every candidate tried and why each failed.
MpiLibrary load_mpi_library(const std::vector<std::string>& candidates);

// load_mpi_library(mpi_library_candidates()) once per process; a failure is retried on the next call.
const MpiLibrary& loaded_mpi_library();

}  // namespace opchain
