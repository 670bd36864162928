#include "tools/default_tokenizer.h"

#include <filesystem>
#include <system_error>
#include <vector>

#include "core/error.h"
#include "io/model_directory.h"

namespace opchain::tools {

namespace fs = std::filesystem;

std::string find_default_tokenizer_dir() {
  std::vector<fs::path> roots;
  std::error_code ec;
  roots.push_back(fs::current_path(ec));
  const fs::path exe = fs::read_symlink("/proc/self/exe", ec);
  if (!ec)
    for (fs::path p = exe.parent_path(); !p.empty(); p = p.parent_path()) {
      roots.push_back(p);
      if (p == p.root_path()) break;
    }
  for (const auto& root : roots) {
    const fs::path candidate = root / kDefaultTokenizerSubdir;
    if (fs::is_regular_file(candidate / model_file::kTokenizer, ec)) return candidate.string();
  }
  throw InvalidArgumentError(std::string("cannot find the Qwen3 tokenizer (") + kDefaultTokenizerSubdir +
                             ") from the current directory or the opchain executable; pass --tokenizer-dir DIR");
}

}  // namespace opchain::tools
