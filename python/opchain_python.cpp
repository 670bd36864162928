// The Python module `opchain` (docs/library.md, "Python"): include/opchain/opchain.h bound with
// pybind11, shaped like vLLM's offline API:
//
//   import opchain
//   llm = opchain.LLM("models/trained-qwen3-moe", threads=2)
//   out = llm.generate(["The cat"], opchain.SamplingParams(temperature=0, max_tokens=40))
//   for piece in llm.stream("The cat", opchain.SamplingParams(max_tokens=40)): print(piece.text, end="")
//
// The GIL is released while the engine runs (opening a model, tokenizing, stepping), so other
// Python threads keep going; callbacks never reach Python (stream() queues pieces in C++ and hands
// them out between steps). Every opchain::api::Error becomes opchain.Error with the engine's message.
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <deque>
#include <memory>
#include <mutex>
#include <optional>
#include <variant>

#include "opchain/opchain.h"

namespace py = pybind11;
using namespace opchain::api;

namespace {

using Prompt = std::variant<std::string, std::vector<int32_t>>;

uint64_t submit(LLM& llm, const Prompt& prompt, const SamplingParams& params, PieceCallback on_piece = {}) {
  if (const auto* text = std::get_if<std::string>(&prompt)) return llm.submit(*text, params, std::move(on_piece));
  return llm.submit_ids(std::get<std::vector<int32_t>>(prompt), params, std::move(on_piece));
}

// llm.stream(): pieces are queued by the engine's callback (no GIL needed) and handed out between steps.
class Stream {
 public:
  Stream(LLM& llm, const Prompt& prompt, const SamplingParams& params) : llm_(llm), queue_(std::make_shared<Queue>()) {
    id_ = submit(llm_, prompt, params, [q = queue_](const Piece& p) {
      std::lock_guard lock(q->mu);
      q->pieces.push_back(p);
    });
  }
  ~Stream() {
    if (!collected_) llm_.cancel(id_);  // abandoned: stop generating (the engine frees it at its next step)
  }
  Stream(const Stream&) = delete;
  Stream& operator=(const Stream&) = delete;

  Piece next() {
    for (;;) {
      std::optional<Piece> piece;
      {
        std::lock_guard lock(queue_->mu);
        if (!queue_->pieces.empty()) {
          piece = std::move(queue_->pieces.front());
          queue_->pieces.pop_front();
        }
      }
      if (piece) {
        if (piece->finished) {
          py::gil_scoped_release release;
          llm_.wait(id_);  // done: collect its output so nothing is left behind
          collected_ = true;
        }
        return std::move(*piece);
      }
      if (collected_) throw py::stop_iteration();
      bool stepped = false;
      {
        py::gil_scoped_release release;
        stepped = llm_.step();
      }
      if (!stepped) {
        // Idle: the last pieces, if another thread's step made them, are queued by now.
        std::lock_guard lock(queue_->mu);
        if (queue_->pieces.empty()) collected_ = true;
      }
    }
  }

 private:
  struct Queue {
    std::mutex mu;
    std::deque<Piece> pieces;
  };
  LLM& llm_;
  std::shared_ptr<Queue> queue_;
  uint64_t id_ = 0;
  bool collected_ = false;
};

SamplingParams params_or_default(const std::optional<SamplingParams>& p) { return p.value_or(SamplingParams{}); }

}  // namespace

PYBIND11_MODULE(opchain, m) {
  m.doc() = "opchain: LLM inference on the CPU (the C++ API of include/opchain/opchain.h)";
  py::register_exception<Error>(m, "Error");

  py::class_<SamplingParams>(m, "SamplingParams",
                             "What to generate; None takes the model's generation_config.json value")
      .def(py::init([](std::optional<float> temperature, std::optional<float> top_p, std::optional<int> top_k,
                       std::optional<float> min_p, std::optional<float> repetition_penalty,
                       std::optional<float> presence_penalty, std::optional<float> frequency_penalty,
                       std::optional<uint64_t> seed, int64_t max_tokens, std::vector<std::string> stop, bool ignore_eos,
                       bool skip_special_tokens) {
             SamplingParams p;
             p.temperature = temperature;
             p.top_p = top_p;
             p.top_k = top_k;
             p.min_p = min_p;
             p.repetition_penalty = repetition_penalty;
             p.presence_penalty = presence_penalty;
             p.frequency_penalty = frequency_penalty;
             p.seed = seed;
             p.max_tokens = max_tokens;
             p.stop = std::move(stop);
             p.ignore_eos = ignore_eos;
             p.skip_special_tokens = skip_special_tokens;
             return p;
           }),
           py::kw_only(), py::arg("temperature") = py::none(), py::arg("top_p") = py::none(),
           py::arg("top_k") = py::none(), py::arg("min_p") = py::none(), py::arg("repetition_penalty") = py::none(),
           py::arg("presence_penalty") = py::none(), py::arg("frequency_penalty") = py::none(),
           py::arg("seed") = py::none(), py::arg("max_tokens") = 0, py::arg("stop") = std::vector<std::string>{},
           py::arg("ignore_eos") = false, py::arg("skip_special_tokens") = true)
      .def_readwrite("temperature", &SamplingParams::temperature)
      .def_readwrite("top_p", &SamplingParams::top_p)
      .def_readwrite("top_k", &SamplingParams::top_k)
      .def_readwrite("min_p", &SamplingParams::min_p)
      .def_readwrite("repetition_penalty", &SamplingParams::repetition_penalty)
      .def_readwrite("presence_penalty", &SamplingParams::presence_penalty)
      .def_readwrite("frequency_penalty", &SamplingParams::frequency_penalty)
      .def_readwrite("seed", &SamplingParams::seed)
      .def_readwrite("max_tokens", &SamplingParams::max_tokens)
      .def_readwrite("stop", &SamplingParams::stop)
      .def_readwrite("ignore_eos", &SamplingParams::ignore_eos)
      .def_readwrite("skip_special_tokens", &SamplingParams::skip_special_tokens);

  py::class_<Output>(m, "RequestOutput", "A finished request")
      .def_readonly("request_id", &Output::request_id)
      .def_readonly("text", &Output::text)
      .def_readonly("token_ids", &Output::token_ids)
      .def_readonly("prompt_tokens", &Output::prompt_tokens)
      .def_property_readonly("finish_reason", [](const Output& o) { return to_string(o.finish_reason); })
      .def("__repr__", [](const Output& o) {
        return "RequestOutput(request_id=" + std::to_string(o.request_id) +
               ", text=" + py::repr(py::str(o.text)).cast<std::string>() + ", finish_reason='" +
               to_string(o.finish_reason) + "')";
      });

  py::class_<Piece>(m, "Piece", "One streaming update; a request's pieces concatenate to its text")
      .def_readonly("request_id", &Piece::request_id)
      .def_readonly("token", &Piece::token)
      .def_readonly("text", &Piece::text)
      .def_readonly("finished", &Piece::finished)
      .def_property_readonly("finish_reason", [](const Piece& p) { return to_string(p.finish_reason); })
      .def("__str__", [](const Piece& p) { return p.text; });

  py::class_<Metrics>(m, "Metrics", "A snapshot of the engine, refreshed after every step")
      .def_readonly("running", &Metrics::running)
      .def_readonly("waiting", &Metrics::waiting)
      .def_readonly("steps", &Metrics::steps)
      .def_readonly("prompt_tokens", &Metrics::prompt_tokens)
      .def_readonly("generated_tokens", &Metrics::generated_tokens)
      .def_readonly("preemptions", &Metrics::preemptions)
      .def_readonly("kv_blocks_used", &Metrics::kv_blocks_used)
      .def_readonly("kv_blocks_total", &Metrics::kv_blocks_total)
      .def_readonly("kv_cache_bytes", &Metrics::kv_cache_bytes)
      .def_readonly("last_step_ms", &Metrics::last_step_ms);

  py::class_<ModelInfo>(m, "ModelInfo")
      .def_readonly("architecture", &ModelInfo::architecture)
      .def_readonly("vocab_size", &ModelInfo::vocab_size)
      .def_readonly("num_layers", &ModelInfo::num_layers)
      .def_readonly("parameters", &ModelInfo::parameters)
      .def_readonly("max_context", &ModelInfo::max_context)
      .def_readonly("matmul_precision", &ModelInfo::matmul_precision)
      .def_readonly("has_tokenizer", &ModelInfo::has_tokenizer)
      .def_readonly("has_chat_template", &ModelInfo::has_chat_template);

  py::class_<Stream>(m, "Stream", "Iterator over the pieces of one request (LLM.stream)")
      .def("__iter__", [](Stream& s) -> Stream& { return s; })
      .def("__next__", &Stream::next);

  py::class_<LLM>(m, "LLM", "A model directory opened with an engine on it")
      .def(py::init([](const std::string& model, const std::string& vendor, const std::string& precision, int threads,
                       int64_t kv_cache_mb, int64_t max_batch, bool graph) {
             ModelOptions o;
             o.vendor = vendor;
             o.precision = precision;
             o.threads = threads;
             o.kv_cache_mb = kv_cache_mb;
             o.max_batch = max_batch;
             o.graph = graph;
             return std::make_unique<LLM>(model, o);
           }),
           py::arg("model"), py::kw_only(), py::arg("vendor") = "cpu", py::arg("precision") = "auto",
           py::arg("threads") = 0, py::arg("kv_cache_mb") = 512, py::arg("max_batch") = 64, py::arg("graph") = true,
           py::call_guard<py::gil_scoped_release>())
      .def_property_readonly("info", &LLM::info)
      .def("tokenize", &LLM::tokenize, py::arg("text"), py::call_guard<py::gil_scoped_release>())
      .def("detokenize", &LLM::detokenize, py::arg("token_ids"), py::arg("skip_special_tokens") = false,
           py::call_guard<py::gil_scoped_release>())
      .def(
          "apply_chat_template",
          [](const LLM& llm, const std::vector<std::map<std::string, std::string>>& messages,
             bool add_generation_prompt, std::optional<bool> enable_thinking) {
            std::vector<Message> list;
            for (const auto& msg : messages) {
              const auto role = msg.find("role");
              const auto content = msg.find("content");
              if (role == msg.end() || content == msg.end())
                throw Error("apply_chat_template: every message needs \"role\" and \"content\"");
              list.push_back({role->second, content->second});
            }
            py::gil_scoped_release release;
            return llm.apply_chat_template(list, add_generation_prompt, enable_thinking);
          },
          py::arg("messages"), py::arg("add_generation_prompt") = true, py::arg("enable_thinking") = py::none())
      .def(
          "generate",
          [](LLM& llm, const std::variant<std::string, std::vector<std::string>>& prompts,
             const std::optional<SamplingParams>& params) {
            const SamplingParams p = params_or_default(params);
            py::gil_scoped_release release;
            if (const auto* one = std::get_if<std::string>(&prompts)) return std::vector<Output>{llm.generate(*one, p)};
            return llm.generate_batch(std::get<std::vector<std::string>>(prompts), p);
          },
          py::arg("prompts"), py::arg("sampling_params") = py::none(),
          "Runs a prompt or a list of prompts (batched together); a list of RequestOutput, in input order")
      .def(
          "stream",
          [](LLM& llm, const Prompt& prompt, const std::optional<SamplingParams>& params) {
            const SamplingParams p = params_or_default(params);
            py::gil_scoped_release release;
            return std::make_unique<Stream>(llm, prompt, p);
          },
          py::arg("prompt"), py::arg("sampling_params") = py::none(), py::keep_alive<0, 1>(),
          "Iterates over the pieces of one prompt (text or token ids) as they are generated")
      .def(
          "submit",
          [](LLM& llm, const Prompt& prompt, const std::optional<SamplingParams>& params) {
            const SamplingParams p = params_or_default(params);
            py::gil_scoped_release release;
            return submit(llm, prompt, p);
          },
          py::arg("prompt"), py::arg("sampling_params") = py::none(),
          "Queues a prompt (text or token ids) and returns its request id; step(), wait() or run() drive it")
      .def("step", &LLM::step, py::call_guard<py::gil_scoped_release>())
      .def("run", &LLM::run, py::call_guard<py::gil_scoped_release>())
      .def("wait", &LLM::wait, py::arg("request_id"), py::call_guard<py::gil_scoped_release>())
      .def("cancel", &LLM::cancel, py::arg("request_id"))
      .def("metrics", &LLM::metrics);
}
