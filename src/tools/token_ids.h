#pragma once
// Token ids as a user types them (`--ids 1,2,3`, `--prompt-ids`) or keeps them in a file.
#include <cstdint>
#include <string>
#include <vector>

namespace opchain::tools {

// The ids in `ids`, or in the file `ids_file` when that is set: non-negative int32 values split on
// commas, whitespace and brackets, so a JSON array reads too. None, or a bad one, throws
// InvalidArgumentError.
std::vector<int32_t> parse_token_ids(const std::string& ids, const std::string& ids_file = "");

}  // namespace opchain::tools
