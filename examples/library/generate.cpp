// Greedy generation through opchain's library API (include/opchain/opchain.h; docs/library.md):
// streams the text as it is generated, then prints the generated token ids.
//   generate MODEL_DIR PROMPT [MAX_TOKENS]
#include <opchain/opchain.h>

#include <cstdio>
#include <iostream>
#include <string>

int main(int argc, char** argv) {
  if (argc < 3) {
    std::fprintf(stderr, "usage: %s MODEL_DIR PROMPT [MAX_TOKENS]\n", argv[0]);
    return 2;
  }
  try {
    opchain::api::LLM llm(argv[1]);  // vendor "cpu", precision "auto", all cores
    opchain::api::SamplingParams params;
    params.temperature = 0;  // greedy
    params.max_tokens = argc > 3 ? std::stoll(argv[3]) : 32;
    const opchain::api::Output out =
        llm.generate(argv[2], params, [](const opchain::api::Piece& piece) { std::cout << piece.text << std::flush; });
    std::cout << "\n";
    std::cout << "token_ids:";
    for (int32_t id : out.token_ids) std::cout << ' ' << id;
    std::cout << "\nfinish_reason: " << opchain::api::to_string(out.finish_reason) << "\n";
    return 0;
  } catch (const opchain::api::Error& e) {
    std::fprintf(stderr, "error: %s\n", e.what());
    return 1;
  }
}
