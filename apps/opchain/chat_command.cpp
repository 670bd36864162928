// `opchain chat`: an interactive multi-turn chat through the model's chat template. Replies stream;
// Ctrl-C stops the current reply only; /reset starts over; /exit (or end of input) quits.
#include <atomic>
#include <csignal>
#include <iostream>
#include <nlohmann/json.hpp>

#include "apps/opchain/commands.h"
#include "apps/opchain/model_session.h"
#include "core/error.h"

namespace opchain::cli {

namespace {

std::atomic<bool> g_interrupted{false};

void on_sigint(int) { g_interrupted.store(true); }

}  // namespace

Runner add_chat_command(CLI::App& app) {
  auto* cmd = app.add_subcommand("chat", "Interactive chat with the model (streams replies; Ctrl-C stops a reply)");
  struct Opts {
    EngineFlags engine;
    int64_t max_new_tokens = 1024;
    std::optional<float> temperature;
    std::optional<uint64_t> seed;
    std::string system;
    bool no_thinking = false;
  };
  auto o = std::make_shared<Opts>();
  o->engine.add_to(cmd);
  cmd->add_option("--max-new-tokens", o->max_new_tokens, "most tokens per reply");
  cmd->add_option("--temperature", o->temperature, "0 = greedy");
  cmd->add_option("--seed", o->seed, "random seed");
  cmd->add_option("--system", o->system, "system prompt");
  cmd->add_flag("--no-thinking", o->no_thinking, "enable_thinking=false");
  return [o] {
    auto session = open_session(o->engine, true);
    if (!session->chat_template) throw FormatError(o->engine.model + " has no chat template; chat needs one");
    struct sigaction sa {};
    sa.sa_handler = on_sigint;
    sigemptyset(&sa.sa_mask);
    sa.sa_flags = 0;  // no SA_RESTART: a Ctrl-C at the prompt interrupts the read instead of killing us
    sigaction(SIGINT, &sa, nullptr);

    nlohmann::ordered_json messages = nlohmann::ordered_json::array();
    auto reset = [&] {
      messages = nlohmann::ordered_json::array();
      if (!o->system.empty()) messages.push_back({{"role", "system"}, {"content", o->system}});
    };
    reset();
    nlohmann::ordered_json extra = nlohmann::ordered_json::object();
    if (o->no_thinking) extra["enable_thinking"] = false;
    std::cerr << "type a message; /reset clears the conversation, /exit quits, Ctrl-C stops a reply\n";
    LLMEngine& engine = *session->engine;
    for (;;) {
      std::cout << "> " << std::flush;
      std::string line;
      g_interrupted.store(false);
      if (!std::getline(std::cin, line)) {
        if (g_interrupted.load() && !std::cin.eof()) {  // Ctrl-C at the prompt: new prompt
          std::cin.clear();
          std::cout << "\n";
          continue;
        }
        std::cout << "\n";
        return 0;
      }
      if (line == "/exit" || line == "/quit") return 0;
      if (line == "/reset") {
        reset();
        std::cout << "(conversation cleared)\n";
        continue;
      }
      if (line.empty()) continue;
      messages.push_back({{"role", "user"}, {"content", line}});
      GenerationRequest req;
      req.sampling = session->defaults.sampling;
      if (o->temperature) req.sampling.temperature = *o->temperature;
      if (o->seed) req.sampling.seed = *o->seed;
      req.prompt_ids =
          session->tokenizer->encode(session->chat_template->render(messages, nlohmann::ordered_json(), true, extra));
      const int64_t room = engine.max_context() - static_cast<int64_t>(req.prompt_ids.size());
      if (room <= 0) {
        messages.erase(messages.end() - 1);
        std::cout << "(the conversation is longer than the context; /reset to start over)\n";
        continue;
      }
      req.max_new_tokens = std::min(o->max_new_tokens, room);
      std::string reply;
      bool done = false;
      uint64_t id = 0;
      try {
        id = engine.add_request(std::move(req), [&](const StreamEvent& ev) {
          reply += ev.text_delta;
          std::cout << ev.text_delta << std::flush;
          if (ev.finished) done = true;
        });
      } catch (const InvalidArgumentError& e) {
        messages.erase(messages.end() - 1);
        std::cout << "(" << e.what() << ")\n";
        continue;
      }
      bool aborted = false;
      while (!done) {
        if (g_interrupted.exchange(false) && !aborted) {
          engine.abort(id);
          aborted = true;
        }
        engine.step();
      }
      std::cout << (aborted ? " [stopped]\n" : "\n");
      messages.push_back({{"role", "assistant"}, {"content", reply}});
    }
  };
}

}  // namespace opchain::cli
