#include "tools/chat.h"

#include <algorithm>
#include <atomic>
#include <csignal>
#include <nlohmann/json.hpp>

#include "core/error.h"

namespace opchain::tools {

namespace {

std::atomic<bool> g_interrupted{false};

void on_sigint(int) { g_interrupted.store(true); }

}  // namespace

void run_chat(const ChatOptions& o, std::istream& in, std::ostream& out, std::ostream& log) {
  auto session = open_session(o.engine, true);
  if (!session->chat_template) throw FormatError(o.engine.model + " has no chat template; chat needs one");
  struct sigaction sa {};
  sa.sa_handler = on_sigint;
  sigemptyset(&sa.sa_mask);
  sa.sa_flags = 0;  // no SA_RESTART: a Ctrl-C at the prompt interrupts the read instead of killing us
  sigaction(SIGINT, &sa, nullptr);

  nlohmann::ordered_json messages = nlohmann::ordered_json::array();
  auto reset = [&] {
    messages = nlohmann::ordered_json::array();
    if (!o.system.empty()) messages.push_back({{"role", "system"}, {"content", o.system}});
  };
  reset();
  nlohmann::ordered_json extra = nlohmann::ordered_json::object();
  if (o.no_thinking) extra["enable_thinking"] = false;
  log << "type a message; /reset clears the conversation, /exit quits, Ctrl-C stops a reply\n";
  LLMEngine& engine = *session->engine;
  for (;;) {
    out << "> " << std::flush;
    std::string line;
    g_interrupted.store(false);
    if (!std::getline(in, line)) {
      if (g_interrupted.load() && !in.eof()) {  // Ctrl-C at the prompt: new prompt
        in.clear();
        out << "\n";
        continue;
      }
      out << "\n";
      return;
    }
    if (line == "/exit" || line == "/quit") return;
    if (line == "/reset") {
      reset();
      out << "(conversation cleared)\n";
      continue;
    }
    if (line.empty()) continue;
    messages.push_back({{"role", "user"}, {"content", line}});
    GenerationRequest req;
    req.sampling = session->defaults.sampling;
    if (o.temperature) req.sampling.temperature = *o.temperature;
    if (o.seed) req.sampling.seed = *o.seed;
    req.prompt_ids =
        session->tokenizer->encode(session->chat_template->render(messages, nlohmann::ordered_json(), true, extra));
    const int64_t room = engine.max_context() - static_cast<int64_t>(req.prompt_ids.size());
    if (room <= 0) {
      messages.erase(messages.end() - 1);
      out << "(the conversation is longer than the context; /reset to start over)\n";
      continue;
    }
    req.max_new_tokens = std::min(o.max_new_tokens, room);
    std::string reply;
    bool done = false;
    uint64_t id = 0;
    try {
      id = engine.add_request(std::move(req), [&](const StreamEvent& ev) {
        reply += ev.text_delta;
        out << ev.text_delta << std::flush;
        if (ev.finished) done = true;
      });
    } catch (const InvalidArgumentError& e) {
      messages.erase(messages.end() - 1);
      out << "(" << e.what() << ")\n";
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
    out << (aborted ? " [stopped]\n" : "\n");
    messages.push_back({{"role", "assistant"}, {"content", reply}});
  }
}

}  // namespace opchain::tools
