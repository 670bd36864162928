#pragma once
// Runs the opchain binary as a user would and captures what it prints.
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

#include "test_paths.h"

namespace opchain::test {

struct CliResult {
  int exit_code = -1;
  std::string out, err;
};

inline std::string slurp(const std::filesystem::path& p) {
  std::ifstream in(p);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// `args` is appended to the binary path as shell words; callers pass only paths without spaces.
inline CliResult run_opchain(const std::string& args) {
  const auto base = std::filesystem::temp_directory_path() / ("opchain-cli-" + std::to_string(::getpid()));
  const std::string out = base.string() + ".out", err = base.string() + ".err";
  const std::string cmd = opchain_binary() + " " + args + " >" + out + " 2>" + err;
  const int status = std::system(cmd.c_str());
  CliResult r;
  r.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  r.out = slurp(out);
  r.err = slurp(err);
  std::filesystem::remove(out);
  std::filesystem::remove(err);
  return r;
}

}  // namespace opchain::test
