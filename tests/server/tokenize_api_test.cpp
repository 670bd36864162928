// /tokenize and /detokenize as data: llama-server's shapes, pieces, and a clear 400 for bad input.
#include <gtest/gtest.h>

#include "io/tokenizer.h"
#include "server/openai_protocol.h"
#include "server/tokenize_api.h"

namespace opchain::server {
namespace {

const Tokenizer& qwen3() {
  static const Tokenizer t =
      Tokenizer::from_file(std::string(OPCHAIN_TEST_DATA_DIR) + "/tokenizer/qwen3/tokenizer.json");
  return t;
}

std::string param_of(auto&& fn) {
  try {
    fn();
  } catch (const ApiError& e) {
    EXPECT_EQ(e.status(), 400);
    return e.param();
  }
  ADD_FAILURE() << "no ApiError";
  return "?";
}

TEST(TokenizeApi, RoundTripAndPieces) {
  const TokenizeRequest r = parse_tokenize_request(R"({"content": "Hello world<|im_end|>"})", 1 << 20);
  const auto j = tokenize_response(r, qwen3(), std::nullopt);
  const std::vector<int32_t> ids = j["tokens"].get<std::vector<int32_t>>();
  EXPECT_EQ(ids, qwen3().encode("Hello world<|im_end|>", true));
  EXPECT_EQ(ids.back(), *qwen3().token_to_id("<|im_end|>"));
  const std::string body = nlohmann::json{{"tokens", ids}}.dump();
  EXPECT_EQ(detokenize_response(parse_detokenize_request(body, qwen3().vocab_size(), 1000), qwen3())["content"],
            "Hello world<|im_end|>");

  const auto plain = tokenize_response(
      parse_tokenize_request(R"({"content": "<|im_end|>", "parse_special": false})", 1 << 20), qwen3(), 7);
  EXPECT_GT(plain["tokens"].size(), 1u);  // spelled out as text
  const auto with_bos =
      tokenize_response(parse_tokenize_request(R"({"content": "a", "add_special": true})", 1 << 20), qwen3(), 7);
  EXPECT_EQ(with_bos["tokens"][0], 7);

  const auto pieces = tokenize_response(parse_tokenize_request(R"({"content": "Hi é", "with_pieces": true})", 1 << 20),
                                        qwen3(), std::nullopt);
  std::string joined;
  for (const auto& p : pieces["tokens"]) {
    ASSERT_TRUE(p.contains("id"));
    if (p["piece"].is_string())
      joined += p["piece"].get<std::string>();
    else
      for (int b : p["piece"]) joined += static_cast<char>(b);
  }
  EXPECT_EQ(joined, "Hi é");
}

TEST(TokenizeApi, BadRequestsNameTheField) {
  EXPECT_EQ(param_of([] { parse_tokenize_request("not json", 100); }), "");
  EXPECT_EQ(param_of([] { parse_tokenize_request("[1]", 100); }), "");
  EXPECT_EQ(param_of([] { parse_tokenize_request(R"({"content": 3})", 100); }), "content");
  EXPECT_EQ(param_of([] { parse_tokenize_request(R"({"content": "xxxxxxxxxx"})", 5); }), "content");
  EXPECT_EQ(param_of([] { parse_tokenize_request(R"({"content": "x", "with_pieces": "yes"})", 100); }), "with_pieces");
  EXPECT_EQ(param_of([] { parse_detokenize_request(R"({"tokens": [1, -1]})", 10, 100); }), "tokens");
  EXPECT_EQ(param_of([] { parse_detokenize_request(R"({"tokens": [10]})", 10, 100); }), "tokens");
  EXPECT_EQ(param_of([] { parse_detokenize_request(R"({"tokens": [1.5]})", 10, 100); }), "tokens");
  EXPECT_EQ(param_of([] { parse_detokenize_request(R"({"tokens": [18446744073709551615]})", 10, 100); }), "tokens");
  EXPECT_EQ(param_of([] { parse_detokenize_request(R"({"tokens": [1, 2, 3]})", 10, 2); }), "tokens");
  EXPECT_EQ(param_of([] { parse_detokenize_request(R"({})", 10, 2); }), "tokens");
}

}  // namespace
}  // namespace opchain::server
