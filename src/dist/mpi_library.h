#pragma once
// The C entry points of libopchain_mpi.so, declared once for both sides: the library defines them
// (dist/mpi_communicator.cpp) and the engine looks them up by name after dlopen
// (dist/mpi_library_loader.cpp), so a signature cannot drift between the two.
//
// Note [MPI library]
// MPI lives in a shared library of its own so that the opchain binary, libopchain.so and the Python
// module never link libmpi: a single process needs no MPI installed at run time, and only a process
// started by mpirun loads it (ParallelWorld::open). The library is built by the same compiler from
// the same headers as the engine, so it hands back a C++ Communicator through a C symbol and throws
// CommError across the boundary. It is never unloaded: MPI_Finalize runs from its atexit handler.
#include <cstddef>

namespace opchain {
class Communicator;
}

extern "C" {
// Initialises MPI once per process (MPI_THREAD_SERIALIZED), then returns a new communicator over
// MPI_COMM_WORLD named "world" with `timeout_seconds` per collective (0 = no deadline); the caller
// owns it. On failure returns null with a complete sentence in err (at most errlen bytes, 0-ended).
opchain::Communicator* opchain_mpi_open_world(double timeout_seconds, char* err, size_t errlen);
// MPI_Abort on MPI_COMM_WORLD: ends every rank of the job with `code`. Does not return.
void opchain_mpi_abort(int code);
}

namespace opchain::mpi_library {
using OpenWorldFn = decltype(&opchain_mpi_open_world);
using AbortFn = decltype(&opchain_mpi_abort);
inline constexpr const char* kOpenWorldSymbol = "opchain_mpi_open_world";
inline constexpr const char* kAbortSymbol = "opchain_mpi_abort";
}  // namespace opchain::mpi_library
