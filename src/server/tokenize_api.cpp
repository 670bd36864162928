#include "server/tokenize_api.h"

#include "io/tokenizer.h"
#include "server/openai_protocol.h"

namespace opchain::server {

namespace {

using ojson = nlohmann::ordered_json;

[[noreturn]] void bad(const std::string& param, const std::string& message) {
  throw ApiError(400, message, "invalid_request_error", param);
}

ojson parse_object(std::string_view body) {
  ojson j = ojson::parse(body.begin(), body.end(), nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded()) bad("", "the request body is not valid JSON");
  if (!j.is_object()) bad("", "the request body must be a JSON object");
  return j;
}

bool flag(const ojson& j, const char* key, bool fallback) {
  const auto it = j.find(key);
  if (it == j.end() || it->is_null()) return fallback;
  if (!it->is_boolean()) bad(key, std::string("'") + key + "' must be a boolean");
  return it->get<bool>();
}

// UTF-8 that is whole: a piece that ends or starts inside a character is not.
bool whole_utf8(const std::string& s) {
  for (size_t i = 0; i < s.size();) {
    const unsigned char c = static_cast<unsigned char>(s[i]);
    const size_t n = c < 0x80 ? 1 : (c >> 5) == 0x6 ? 2 : (c >> 4) == 0xe ? 3 : (c >> 3) == 0x1e ? 4 : 0;
    if (n == 0 || i + n > s.size()) return false;
    for (size_t k = 1; k < n; ++k)
      if ((static_cast<unsigned char>(s[i + k]) >> 6) != 0x2) return false;
    i += n;
  }
  return true;
}

}  // namespace

TokenizeRequest parse_tokenize_request(std::string_view body, size_t max_content_bytes) {
  const ojson j = parse_object(body);
  TokenizeRequest r;
  const auto content = j.find("content");
  if (content == j.end() || !content->is_string()) bad("content", "'content' must be a string");
  r.content = content->get<std::string>();
  if (r.content.size() > max_content_bytes)
    bad("content", "'content' is " + std::to_string(r.content.size()) + " bytes, more than the limit of " +
                       std::to_string(max_content_bytes));
  r.add_special = flag(j, "add_special", false);
  r.parse_special = flag(j, "parse_special", true);
  r.with_pieces = flag(j, "with_pieces", false);
  return r;
}

nlohmann::json tokenize_response(const TokenizeRequest& request, const Tokenizer& tokenizer,
                                 std::optional<int32_t> bos_id) {
  std::vector<int32_t> ids;
  if (request.add_special && bos_id) ids.push_back(*bos_id);
  const std::vector<int32_t> body = tokenizer.encode(request.content, request.parse_special);
  ids.insert(ids.end(), body.begin(), body.end());
  nlohmann::json tokens = nlohmann::json::array();
  for (int32_t id : ids) {
    if (!request.with_pieces) {
      tokens.push_back(id);
      continue;
    }
    const std::string piece = tokenizer.token_bytes(id);
    nlohmann::json p{{"id", id}};
    if (whole_utf8(piece)) {
      p["piece"] = piece;
    } else {
      nlohmann::json bytes = nlohmann::json::array();
      for (unsigned char c : piece) bytes.push_back(static_cast<int>(c));
      p["piece"] = std::move(bytes);
    }
    tokens.push_back(std::move(p));
  }
  return {{"tokens", std::move(tokens)}};
}

std::vector<int32_t> parse_detokenize_request(std::string_view body, size_t vocab_size, size_t max_tokens) {
  const ojson j = parse_object(body);
  const auto tokens = j.find("tokens");
  if (tokens == j.end() || !tokens->is_array()) bad("tokens", "'tokens' must be a list of token ids");
  if (tokens->size() > max_tokens)
    bad("tokens", "'tokens' holds " + std::to_string(tokens->size()) + " ids, more than the limit of " +
                      std::to_string(max_tokens));
  std::vector<int32_t> ids;
  ids.reserve(tokens->size());
  for (const ojson& v : *tokens) {
    if (!v.is_number_integer()) bad("tokens", "'tokens' must hold integers only");
    const bool in_range = v.is_number_unsigned()
                              ? v.get<uint64_t>() < vocab_size
                              : v.get<int64_t>() >= 0 && static_cast<uint64_t>(v.get<int64_t>()) < vocab_size;
    if (!in_range)
      bad("tokens", "token id " + v.dump() + " is outside the vocabulary [0, " + std::to_string(vocab_size) + ")");
    ids.push_back(static_cast<int32_t>(v.get<int64_t>()));
  }
  return ids;
}

nlohmann::json detokenize_response(const std::vector<int32_t>& ids, const Tokenizer& tokenizer) {
  return {{"content", tokenizer.decode(ids, false)}};
}

}  // namespace opchain::server
