"""What agent frameworks rely on, end to end through the official `openai` client and raw HTTP:
log-probabilities (against `opchain logits`), echo, reasoning split from thinking templates, tool-call
turns sent back with null content, /tokenize and /detokenize, CORS, and cancelling a non-streaming
request whose client hung up. (Tool-call markup and think-block parsing are unit-tested in
tests/server/tool_calls_test.cpp and reasoning_test.cpp: a tiny model does not write them on its own.)
"""
from __future__ import annotations

import json
import math
import shutil
import socket
import subprocess
import tempfile
import time
from pathlib import Path

import jsonschema
import numpy as np
import pytest
import requests

from test_server import CHAT, MODEL, NAME, Server, chat_messages, opchain_bin, raw


@pytest.fixture(scope="module")
def server():
    s = Server("--allowed-origins", "http://app.example")
    yield s
    s.close()


def log_softmax(row: np.ndarray) -> np.ndarray:
    row = row.astype(np.float64)
    m = row.max()
    return row - (m + math.log(np.exp(row - m).sum()))


def model_logits(ids: list[int]) -> np.ndarray:
    with tempfile.TemporaryDirectory() as d:
        out = Path(d) / "logits.npy"
        subprocess.run([opchain_bin(), "logits", "--model", str(MODEL), "--ids", ",".join(map(str, ids)), "--out", str(out)],
                       check=True, capture_output=True, timeout=120)
        return np.load(out)


def test_completion_logprobs_equal_log_softmax_of_the_logits(server):
    prompt = [51, 262, 1220]  # "The cat"
    c = server.client().completions.create(model=NAME, prompt=prompt, max_tokens=1, temperature=0, logprobs=5)
    lp = c.choices[0].logprobs
    want = log_softmax(model_logits(prompt)[-1])
    top = np.argsort(-want, kind="stable")[:5]
    assert len(lp.tokens) == 1 and len(lp.token_logprobs) == 1
    assert lp.token_logprobs[0] == pytest.approx(want[top[0]], abs=1e-3)  # greedy took the most likely
    got = sorted(lp.top_logprobs[0].values(), reverse=True)
    assert got == pytest.approx([want[i] for i in top], abs=1e-3)
    assert lp.text_offset == [0]


def test_chat_logprobs_streamed_and_whole_agree(server):
    kw = dict(model=NAME, messages=chat_messages("The cat"), max_tokens=12, temperature=0, logprobs=True, top_logprobs=3)
    whole = server.client().chat.completions.create(**kw)
    content = whole.choices[0].logprobs.content
    assert len(content) == whole.usage.completion_tokens - (1 if whole.choices[0].finish_reason == "stop" else 0)
    for e in content:
        assert len(e.top_logprobs) == 3
        assert e.top_logprobs[0].logprob >= e.top_logprobs[1].logprob >= e.top_logprobs[2].logprob
        assert e.logprob == pytest.approx(e.top_logprobs[0].logprob)  # greedy
        assert bytes(e.bytes).decode("utf-8", "replace") == e.token or "\ufffd" in e.token
    streamed = []
    for chunk in server.client().chat.completions.create(stream=True, **kw):
        if chunk.choices and chunk.choices[0].logprobs and chunk.choices[0].logprobs.content:
            streamed += chunk.choices[0].logprobs.content
    assert [(e.token, e.logprob) for e in streamed] == [(e.token, e.logprob) for e in content]
    assert "".join(e.token for e in content) == whole.choices[0].message.content


def test_echo_puts_the_prompt_first(server):
    c = server.client().completions.create(model=NAME, prompt="The cat", max_tokens=5, temperature=0, echo=True)
    plain = server.client().completions.create(model=NAME, prompt="The cat", max_tokens=5, temperature=0)
    assert c.choices[0].text == "The cat" + plain.choices[0].text


def test_tool_call_round_trip_with_null_content(server):
    tools = [{"type": "function", "function": {"name": "get_weather", "description": "Weather of a city",
                                               "parameters": {"type": "object", "properties": {"city": {"type": "string"}},
                                                              "required": ["city"]}}}]
    messages = [
        {"role": "user", "content": "Weather in Paris?"},
        {"role": "assistant", "content": None,
         "tool_calls": [{"id": "call_1", "type": "function", "function": {"name": "get_weather", "arguments": '{"city": "Paris"}'}}]},
        {"role": "tool", "tool_call_id": "call_1", "content": "sunny, 21 C"},
    ]
    r = server.client().chat.completions.create(model=NAME, messages=messages, tools=tools, tool_choice="auto", max_tokens=8,
                                                temperature=0)
    assert r.choices[0].finish_reason in ("stop", "length")
    assert r.choices[0].message.role == "assistant"
    status, _, data = raw(server.port, "POST", CHAT, {"messages": messages, "tools": tools,
                                                      "tool_choice": {"type": "function", "function": {"name": "nope"}}})
    assert status == 400 and json.loads(data)["error"]["param"] == "tool_choice"


def thinking_model(tmp: Path, opens: bool) -> Path:
    """The demo model with a chat template whose generation prompt opens a think block (as Qwen3.5's
    does), or closes an empty one (enable_thinking false)."""
    d = tmp / ("think-open" if opens else "think-closed")
    shutil.copytree(MODEL, d)
    cfg = json.loads((d / "tokenizer_config.json").read_text())
    cfg["chat_template"] = ("{% for m in messages %}{{ '<|im_start|>' + m['role'] + '\\n' + m['content'] + '<|im_end|>\\n' }}{% endfor %}"
                            "{% if add_generation_prompt %}{{ '<|im_start|>assistant\\n' }}"
                            "{% if enable_thinking is defined and enable_thinking is false %}{{ '<think>\\n\\n</think>\\n\\n' }}"
                            "{% else %}{{ '<think>\\n' }}{% endif %}{% endif %}")
    (d / "tokenizer_config.json").write_text(json.dumps(cfg))
    return d


def test_reasoning_content_from_a_thinking_template(tmp_path):
    s = Server(model=thinking_model(tmp_path, True))
    try:
        c = s.client()
        kw = dict(model=NAME, messages=chat_messages("The cat"), max_tokens=10, temperature=0)
        r = c.chat.completions.create(**kw)
        msg = r.choices[0].message.model_dump()
        # The model never closes the block the prompt opened: all of it is reasoning.
        assert msg["reasoning_content"] and msg["content"] == ""
        streamed = "".join((ch.choices[0].delta.model_dump().get("reasoning_content") or "")
                           for ch in c.chat.completions.create(stream=True, **kw) if ch.choices)
        assert streamed == msg["reasoning_content"]
        off = c.chat.completions.create(extra_body={"chat_template_kwargs": {"enable_thinking": False}}, **kw)
        off_msg = off.choices[0].message.model_dump()
        assert off_msg["content"] and not off_msg.get("reasoning_content")
    finally:
        s.close()


def test_tokenize_and_detokenize(server):
    r = requests.post(server.url + "/tokenize", json={"content": "The cat"}, timeout=10)
    assert r.status_code == 200 and r.json() == {"tokens": [51, 262, 1220]}
    r = requests.post(server.url + "/tokenize", json={"content": "The cat", "with_pieces": True}, timeout=10)
    assert [t["piece"] for t in r.json()["tokens"]] == ["The", " c", "at"] or "".join(t["piece"] for t in r.json()["tokens"]) == "The cat"
    r = requests.post(server.url + "/detokenize", json={"tokens": [51, 262, 1220]}, timeout=10)
    assert r.json() == {"content": "The cat"}
    bad = requests.post(server.url + "/detokenize", json={"tokens": [10 ** 6]}, timeout=10)
    assert bad.status_code == 400 and bad.json()["error"]["param"] == "tokens"
    bad = requests.post(server.url + "/tokenize", json={"text": "x"}, timeout=10)
    assert bad.status_code == 400 and bad.json()["error"]["param"] == "content"


def test_cors_preflight_and_headers(server):
    ok = requests.options(server.url + "/v1/chat/completions", timeout=10,
                          headers={"Origin": "http://app.example", "Access-Control-Request-Method": "POST",
                                   "Access-Control-Request-Headers": "authorization, content-type"})
    assert ok.status_code == 204
    assert ok.headers["Access-Control-Allow-Origin"] == "http://app.example"
    assert "authorization" in ok.headers["Access-Control-Allow-Headers"].lower()
    denied = requests.options(server.url + "/v1/chat/completions", timeout=10,
                              headers={"Origin": "http://evil.example", "Access-Control-Request-Method": "POST"})
    assert denied.status_code == 403 and "Access-Control-Allow-Origin" not in denied.headers
    got = requests.get(server.url + "/v1/models", headers={"Origin": "http://app.example"}, timeout=10)
    assert got.headers["Access-Control-Allow-Origin"] == "http://app.example"
    assert "Access-Control-Allow-Origin" not in requests.get(server.url + "/v1/models", headers={"Origin": "http://evil.example"},
                                                             timeout=10).headers


def test_no_cors_by_default():
    s = Server()
    try:
        r = requests.options(s.url + "/v1/models", headers={"Origin": "http://app.example", "Access-Control-Request-Method": "GET"},
                             timeout=10)
        assert r.status_code == 403 and "Access-Control-Allow-Origin" not in r.headers
    finally:
        s.close()


def test_non_streaming_request_is_cancelled_when_its_client_hangs_up():
    s = Server("--max-batch", "1")
    try:
        before = s.metrics().get("opchain_requests_cancelled_total", 0.0)
        body = json.dumps({"prompt": "The cat", "max_tokens": 500, "ignore_eos": True, "temperature": 0}).encode()
        sock = socket.create_connection(("127.0.0.1", s.port), timeout=10)
        sock.sendall(b"POST /v1/completions HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: "
                     + str(len(body)).encode() + b"\r\n\r\n" + body)
        s.wait_metric("opchain_running_sequences", lambda v: v == 1)
        sock.close()  # the client gives up (its SDK timed out)
        s.wait_metric("opchain_requests_cancelled_total", lambda v: v == before + 1, timeout=10)
        s.wait_metric("opchain_running_sequences", lambda v: v == 0)
        s.wait_metric("opchain_kv_blocks_used", lambda v: v == 0)
        # fewer than the 500 tokens it asked for were generated
        assert s.metrics()["opchain_generation_tokens_total"] < 500
    finally:
        s.close()


PERSON = {"type": "object", "properties": {"name": {"type": "string", "maxLength": 12},
                                            "age": {"type": "integer", "minimum": 0, "maximum": 120},
                                            "tags": {"type": "array", "items": {"enum": ["a", "b", "c"]}, "maxItems": 3}},
          "required": ["name", "age"], "additionalProperties": False}


def test_response_format_json_schema(server):
    """Sampled (temperature 1) replies of a random-ish model: every one that finishes validates, and
    whitespace is bounded, so most finish well inside the budget."""
    c = server.client()
    finished = 0
    for seed in range(1, 7):
        kw = dict(model=NAME, messages=chat_messages("Tell me about a person."), max_tokens=300, temperature=1.0, seed=seed,
                  response_format={"type": "json_schema", "json_schema": {"name": "person", "schema": PERSON, "strict": True}})
        r = c.chat.completions.create(**kw)
        if r.choices[0].finish_reason != "stop":
            continue
        finished += 1
        jsonschema.validate(json.loads(r.choices[0].message.content), PERSON)
        if seed == 1:
            streamed = "".join(ch.choices[0].delta.content or "" for ch in c.chat.completions.create(stream=True, **kw) if ch.choices)
            assert streamed == r.choices[0].message.content  # same seed, same constrained draw
    assert finished >= 4


def test_response_format_json_object(server):
    r = server.client().chat.completions.create(model=NAME, messages=chat_messages("Reply in JSON."), max_tokens=300, temperature=1.0,
                                                seed=5, response_format={"type": "json_object"})
    if r.choices[0].finish_reason == "stop":
        assert isinstance(json.loads(r.choices[0].message.content), dict)


TOOLS = [{"type": "function", "function": {"name": "get_weather", "parameters": {
            "type": "object", "properties": {"city": {"type": "string", "maxLength": 10}}, "required": ["city"],
            "additionalProperties": False}}},
         {"type": "function", "function": {"name": "get_time", "parameters": {
            "type": "object", "properties": {"zone": {"enum": ["UTC", "CET"]}}, "required": ["zone"], "additionalProperties": False}}}]


def test_named_tool_choice_forces_that_call_and_the_round_trip_completes(server):
    c = server.client()
    messages = chat_messages("Weather in Paris?")
    r = c.chat.completions.create(model=NAME, messages=messages, tools=TOOLS, max_tokens=200, temperature=0,
                                  tool_choice={"type": "function", "function": {"name": "get_weather"}})
    choice = r.choices[0]
    assert choice.finish_reason == "tool_calls"
    assert choice.message.content is None
    (call,) = choice.message.tool_calls
    assert call.type == "function" and call.function.name == "get_weather" and call.id.startswith("call_")
    jsonschema.validate(json.loads(call.function.arguments), TOOLS[0]["function"]["parameters"])
    # The client sends the call back with its result; the model answers.
    messages += [choice.message.model_dump(exclude_none=True),
                 {"role": "tool", "tool_call_id": call.id, "content": "sunny, 21 C"}]
    assert messages[1]["role"] == "assistant" and "content" not in messages[1]
    answer = c.chat.completions.create(model=NAME, messages=messages, tools=TOOLS, max_tokens=10, temperature=0)
    assert answer.choices[0].message.content is not None

    chunks = list(c.chat.completions.create(model=NAME, messages=chat_messages("Weather in Paris?"), tools=TOOLS, max_tokens=200,
                                            temperature=0, stream=True,
                                            tool_choice={"type": "function", "function": {"name": "get_weather"}}))
    deltas = [d for ch in chunks if ch.choices for d in (ch.choices[0].delta.tool_calls or [])]
    assert [d.function.name for d in deltas] == ["get_weather"] and deltas[0].index == 0
    assert deltas[0].function.arguments == call.function.arguments
    assert chunks[-1].choices[0].finish_reason == "tool_calls"


def complete_items(text: str) -> list:
    """The whole elements of a JSON list that may be cut short: '[a, b, <cut>' -> [a, b]."""
    assert text.startswith("[")
    dec, items, i = json.JSONDecoder(), [], 1
    while True:
        while i < len(text) and text[i] in " \t\n\r,":
            i += 1
        try:
            item, i = dec.raw_decode(text, i)
        except json.JSONDecodeError:
            return items
        items.append(item)


def test_required_tool_choice_makes_calls(server):
    """A list of calls, each one of the tools with valid parameters. The demo model rarely closes the
    list (it writes one call after another until max_tokens), so a reply cut short is checked call by
    call; one that finishes must be parsed into tool_calls."""
    by_name = {t["function"]["name"]: t["function"]["parameters"] for t in TOOLS}
    for seed in range(1, 4):
        r = server.client().chat.completions.create(model=NAME, messages=chat_messages("What now?"), tools=TOOLS, max_tokens=120,
                                                    temperature=1.0, seed=seed, tool_choice="required")
        choice = r.choices[0]
        if choice.finish_reason == "length":
            items = complete_items(choice.message.content)
            calls = [(it["name"], it["parameters"]) for it in items]
        else:
            assert choice.finish_reason == "tool_calls", choice.message.content
            calls = [(c.function.name, json.loads(c.function.arguments)) for c in choice.message.tool_calls]
        assert calls
        for name, params in calls:
            jsonschema.validate(params, by_name[name])
