#pragma once
// `opchain chat`: an interactive multi-turn chat through the model's chat template. Replies stream;
// Ctrl-C stops the current reply only; /reset starts over; /exit (or end of input) quits.
#include <cstdint>
#include <istream>
#include <optional>
#include <ostream>
#include <string>

#include "tools/model_session.h"

namespace opchain::tools {

struct ChatOptions {
  EngineOptions engine;
  int64_t max_new_tokens = 1024;  // most tokens per reply
  std::optional<float> temperature;
  std::optional<uint64_t> seed;
  std::string system;        // system prompt
  bool no_thinking = false;  // enable_thinking=false
};

// Reads the user's lines from `in` and streams the replies to `out`, the greeting to `log`. Takes
// SIGINT for the process while it runs, so that Ctrl-C stops a reply rather than the program.
void run_chat(const ChatOptions& o, std::istream& in, std::ostream& out, std::ostream& log);

}  // namespace opchain::tools
