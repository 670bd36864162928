#include "dist/mpi_library_loader.h"

#include <dlfcn.h>

#include <cstdlib>
#include <filesystem>
#include <mutex>
#include <optional>

#include "backends/communicator.h"

namespace opchain {

std::vector<std::string> mpi_library_candidates() {
  if (const char* path = std::getenv("OPCHAIN_MPI_LIBRARY"); path && *path) return {path};
  std::vector<std::string> out;
  // Both paths are baked in by CMake (src/CMakeLists.txt); a build without MPI has neither.
  for (const char* path : {
#ifdef OPCHAIN_MPI_BUILD_LIBRARY
           OPCHAIN_MPI_BUILD_LIBRARY,
#endif
#ifdef OPCHAIN_MPI_INSTALLED_LIBRARY
           OPCHAIN_MPI_INSTALLED_LIBRARY,
#endif
           static_cast<const char*>(nullptr)}) {
    std::error_code ec;
    if (path && std::filesystem::is_regular_file(path, ec)) out.emplace_back(path);
  }
  out.emplace_back("libopchain_mpi.so");
  return out;
}

MpiLibrary load_mpi_library(const std::vector<std::string>& candidates) {
  std::string tried;
  for (const auto& path : candidates) {
    void* handle = dlopen(path.c_str(), RTLD_NOW | RTLD_GLOBAL | RTLD_NODELETE);
    if (!handle) {
      const char* why = dlerror();
      tried += "\n  " + path + ": " + (why ? why : "dlopen failed");
      continue;
    }
    MpiLibrary library;
    library.path = path;
    library.open_world = reinterpret_cast<mpi_library::OpenWorldFn>(dlsym(handle, mpi_library::kOpenWorldSymbol));
    library.abort = reinterpret_cast<mpi_library::AbortFn>(dlsym(handle, mpi_library::kAbortSymbol));
    if (library.open_world && library.abort) return library;
    tried += "\n  " + path + ": loads but lacks " + mpi_library::kOpenWorldSymbol + " or " + mpi_library::kAbortSymbol;
  }
  throw CommError(
      "this process runs under mpirun but cannot load the MPI communicator library (set OPCHAIN_MPI_LIBRARY to "
      "libopchain_mpi.so, or build with Open MPI installed: libopenmpi-dev); tried:" +
      tried);
}

const MpiLibrary& loaded_mpi_library() {
  static std::mutex mutex;
  static std::optional<MpiLibrary> loaded;
  std::lock_guard lock(mutex);
  if (!loaded) loaded = load_mpi_library(mpi_library_candidates());
  return *loaded;
}

}  // namespace opchain
