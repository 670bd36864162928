"""The Python module `opchain` (python/opchain_python.cpp): what it generates is what
`opchain generate` generates, streaming and batching change nothing, the GIL is released while the
engine runs, and errors arrive as opchain.Error with the engine's message.

Run from the repository root with the module on the path:
    PYTHONPATH=build/python python3 -m pytest -q tests/python
"""
import json
import os
import pathlib
import subprocess
import threading
import time

import pytest

import opchain

ROOT = pathlib.Path(__file__).resolve().parents[2]
MODEL = str(ROOT / "models" / "trained-qwen3-moe")
OPCHAIN_BIN = os.environ.get("OPCHAIN_BIN", str(ROOT / "build" / "apps" / "opchain" / "opchain"))


@pytest.fixture(scope="module")
def llm():
    return opchain.LLM(MODEL, threads=2, kv_cache_mb=64)


def greedy(n, **kw):
    return opchain.SamplingParams(temperature=0, max_tokens=n, **kw)


def test_greedy_generate_matches_the_cli(llm):
    out = llm.generate(["The cat"], greedy(16))
    assert len(out) == 1
    cli = subprocess.run([OPCHAIN_BIN, "generate", "--model", MODEL, "--prompt", "The cat", "--temperature", "0",
                          "--max-new-tokens", "16", "--json"], capture_output=True, text=True, check=True)
    expected = json.loads(cli.stdout)
    assert out[0].token_ids == expected["ids"]
    assert out[0].text == expected["text"]
    assert out[0].finish_reason == expected["finish_reason"]
    assert out[0].prompt_tokens == expected["prompt_tokens"]
    assert llm.generate("The cat", greedy(16))[0].token_ids == expected["ids"]  # one prompt as a string


def test_stream_pieces_concatenate_to_the_text(llm):
    pieces = list(llm.stream("Once upon a time", greedy(24)))
    assert pieces and pieces[-1].finished
    assert sum(p.finished for p in pieces) == 1
    text = "".join(p.text for p in pieces)
    assert text == llm.generate("Once upon a time", greedy(24))[0].text
    assert "".join(str(p) for p in llm.stream(llm.tokenize("Once upon a time"), greedy(24))) == text


def test_many_prompts_batch_to_what_each_gives_alone(llm):
    prompts = ["The cat", "A dog", "Once upon a time", "The sun"]
    alone = [llm.generate(p, greedy(12))[0].token_ids for p in prompts]
    batched = llm.generate(prompts, greedy(12))
    assert [o.token_ids for o in batched] == alone
    ids = [llm.submit(p, greedy(12)) for p in prompts]
    assert llm.step()
    assert llm.metrics().running == len(prompts)
    assert [llm.wait(i).token_ids for i in reversed(ids)] == alone[::-1]
    m = llm.metrics()
    assert m.running == 0 and m.steps > 0 and m.generated_tokens > 0 and m.kv_blocks_total > 0


def test_tokenize_round_trips(llm):
    ids = llm.tokenize("The cat sat on the mat.")
    assert ids and all(isinstance(i, int) for i in ids)
    assert llm.detokenize(ids) == "The cat sat on the mat."


def test_chat_template(llm):
    prompt = llm.apply_chat_template([{"role": "user", "content": "hi"}])
    assert "hi" in prompt
    assert llm.info.has_chat_template
    assert llm.generate(prompt, greedy(4))[0].token_ids


def test_cancel_keeps_what_was_generated(llm):
    rid = llm.submit("The cat", greedy(200, ignore_eos=True))
    for _ in range(3):
        llm.step()
    llm.cancel(rid)
    out = llm.wait(rid)
    assert out.finish_reason == "cancelled"
    assert 0 < len(out.token_ids) < 200


def test_an_abandoned_stream_is_cancelled(llm):
    stream = llm.stream("The cat", greedy(200, ignore_eos=True))
    next(stream)
    del stream
    llm.run()
    assert llm.metrics().running == 0


def test_errors_carry_the_engines_message(llm):
    with pytest.raises(opchain.Error, match="config.json"):
        opchain.LLM("/nonexistent/model")
    with pytest.raises(opchain.Error, match="fp4"):
        opchain.LLM(MODEL, precision="fp4")
    with pytest.raises(opchain.Error, match="empty"):
        llm.generate("", greedy(4))
    with pytest.raises(opchain.Error):
        llm.generate("The cat", opchain.SamplingParams(top_p=2.0))
    assert issubclass(opchain.Error, Exception)


def test_the_gil_is_released_while_the_engine_runs(llm):
    done = threading.Event()

    def work():
        llm.generate("The cat", greedy(300, ignore_eos=True))
        done.set()

    t = threading.Thread(target=work)
    t.start()
    ticks = 0
    while not done.is_set():
        ticks += 1
        time.sleep(0.001)
    t.join()
    assert ticks >= 5  # this thread ran while the other generated
