// Finding libopchain_mpi.so: a path the user names is the only candidate, and a library that cannot
// load is an error naming each path tried and why.
#include "dist/mpi_library_loader.h"

#include <gtest/gtest.h>

#include <cstdlib>

#include "backends/communicator.h"

namespace opchain {
namespace {

TEST(MpiLibraryLoader, TheUsersPathIsTheOnlyCandidate) {
  ::setenv("OPCHAIN_MPI_LIBRARY", "/opt/x/libopchain_mpi.so", 1);
  EXPECT_EQ(mpi_library_candidates(), std::vector<std::string>{"/opt/x/libopchain_mpi.so"});
  ::unsetenv("OPCHAIN_MPI_LIBRARY");
  const auto candidates = mpi_library_candidates();
  ASSERT_FALSE(candidates.empty());
  EXPECT_EQ(candidates.back(), "libopchain_mpi.so");
}

TEST(MpiLibraryLoader, NamesEveryPathTriedAndWhy) {
  // A plugin of the vendor tests loads but is not the MPI library.
  const std::string not_mpi = std::string(OPCHAIN_TEST_PLUGIN_DIR) + "/libtest_plugin_good.so";
  try {
    load_mpi_library({"/nonexistent/libopchain_mpi.so", not_mpi});
    FAIL() << "loaded";
  } catch (const CommError& e) {
    const std::string m = e.what();
    EXPECT_NE(m.find("/nonexistent/libopchain_mpi.so: "), std::string::npos) << m;
    EXPECT_NE(m.find(not_mpi + ": loads but lacks opchain_mpi_open_world"), std::string::npos) << m;
    EXPECT_NE(m.find("OPCHAIN_MPI_LIBRARY"), std::string::npos) << m;
  }
}

}  // namespace
}  // namespace opchain
