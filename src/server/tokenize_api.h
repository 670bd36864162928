#pragma once
// /tokenize and /detokenize in llama-server's request shapes, as data (no sockets):
//   POST /tokenize   {"content": "text", "add_special": false, "parse_special": true, "with_pieces": false}
//                 -> {"tokens": [ids]}, or with_pieces: {"tokens": [{"id": 1, "piece": "text"}]}
//   POST /detokenize {"tokens": [ids]} -> {"content": "text"}
// A piece that is not whole UTF-8 (part of a character) is given as its byte values, as llama-server does.
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

namespace opchain {
class Tokenizer;
}

namespace opchain::server {

struct TokenizeRequest {
  std::string content;
  bool add_special = false;   // prepend the model's BOS token, where it has one
  bool parse_special = true;  // special-token text in `content` becomes those tokens
  bool with_pieces = false;
};

// Throws ApiError (400) naming the field.
TokenizeRequest parse_tokenize_request(std::string_view body, size_t max_content_bytes);
nlohmann::json tokenize_response(const TokenizeRequest& request, const Tokenizer& tokenizer,
                                 std::optional<int32_t> bos_id);

// The ids to decode; ApiError 400 for a non-list, a non-integer or an id outside [0, vocab).
std::vector<int32_t> parse_detokenize_request(std::string_view body, size_t vocab_size, size_t max_tokens);
nlohmann::json detokenize_response(const std::vector<int32_t>& ids, const Tokenizer& tokenizer);

}  // namespace opchain::server
