#include "tools/token_ids.h"

#include <climits>
#include <fstream>
#include <sstream>

#include "core/error.h"

namespace opchain::tools {

std::vector<int32_t> parse_token_ids(const std::string& ids, const std::string& ids_file) {
  std::string text = ids;
  if (!ids_file.empty()) {
    std::ifstream in(ids_file);
    if (!in) throw InvalidArgumentError("cannot read ids file " + ids_file);
    std::stringstream ss;
    ss << in.rdbuf();
    text = ss.str();
  }
  std::vector<int32_t> out;
  std::string tok;
  auto flush = [&] {
    if (tok.empty()) return;
    size_t used = 0;
    long long v = 0;
    try {
      v = std::stoll(tok, &used);
    } catch (...) {
      used = 0;
    }
    if (used != tok.size() || v < 0 || v > INT32_MAX) throw InvalidArgumentError("bad token id '" + tok + "'");
    out.push_back(static_cast<int32_t>(v));
    tok.clear();
  };
  for (char ch : text) {
    if (ch == ',' || ch == ' ' || ch == '\n' || ch == '\t' || ch == '\r' || ch == '[' || ch == ']')
      flush();
    else
      tok += ch;
  }
  flush();
  if (out.empty()) throw InvalidArgumentError("no token ids given");
  return out;
}

}  // namespace opchain::tools
