"""End-to-end tests of `opchain serve` with real clients: the official `openai` package for the
happy paths and raw HTTP (http.client / sockets) for everything a client can get wrong.

The server binary comes from $OPCHAIN_BIN (default build/apps/opchain/opchain). Every server runs on
a free loopback port (--port 0; the port is read from the start-up line on stderr).
"""
from __future__ import annotations

import concurrent.futures
import http.client
import json
import os
import re
import shutil
import signal
import socket
import subprocess
import tempfile
import threading
import time
from pathlib import Path

import openai
import pytest
import requests

REPO = Path(__file__).resolve().parents[2]
MODEL = REPO / "tests/data/models/trained-qwen3-moe"
NAME = "trained-qwen3-moe"
CONTEXT = 512


def opchain_bin() -> str:
    path = Path(os.environ.get("OPCHAIN_BIN", "build/apps/opchain/opchain"))
    if not path.is_absolute():
        path = REPO / path
    if not path.exists():
        pytest.fail(f"opchain binary not found at {path}; build it or set OPCHAIN_BIN")
    return str(path)


class Server:
    """One `opchain serve` process; stderr goes to a file (a pipe could fill up and block it)."""

    def __init__(self, *extra: str, model: Path = MODEL, name: str = NAME, env: dict | None = None):
        self.tmp = tempfile.TemporaryDirectory(prefix="opchain-serve-")
        self.log_path = Path(self.tmp.name) / "stderr.log"
        self._log = open(self.log_path, "wb")
        cmd = [opchain_bin(), "serve", "--model", str(model), "--host", "127.0.0.1", "--port", "0",
               "--served-model-name", name, "--threads", "2", *extra]
        self.proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=self._log,
                                     env={**os.environ, **(env or {})})
        self.port = self._wait_for_port()
        self.url = f"http://127.0.0.1:{self.port}"

    def _wait_for_port(self) -> int:
        deadline = time.time() + 30
        while time.time() < deadline:
            m = re.search(r"on http://127\.0\.0\.1:(\d+)", self.log())
            if m:
                return int(m.group(1))
            if self.proc.poll() is not None:
                raise RuntimeError(f"server exited with {self.proc.returncode}:\n{self.log()}")
            time.sleep(0.02)
        self.proc.kill()
        raise RuntimeError(f"server did not start:\n{self.log()}")

    def log(self) -> str:
        return self.log_path.read_text(errors="replace")

    def client(self, api_key: str = "unused") -> openai.OpenAI:
        return openai.OpenAI(base_url=self.url + "/v1", api_key=api_key, max_retries=0, timeout=60)

    def metrics(self) -> dict[str, float]:
        text = requests.get(self.url + "/metrics", timeout=10).text
        out: dict[str, float] = {}
        for line in text.splitlines():
            if line and not line.startswith("#"):
                key, value = line.rsplit(" ", 1)
                out[key] = float(value)
        return out

    def wait_metric(self, key: str, pred, timeout: float = 10.0) -> float:
        deadline = time.time() + timeout
        while True:
            value = self.metrics().get(key)
            if value is not None and pred(value):
                return value
            if time.time() > deadline:
                raise AssertionError(f"{key} = {value} after {timeout} s")
            time.sleep(0.01)

    def stop(self, sig: int = signal.SIGTERM, timeout: float = 20.0) -> int:
        if self.proc.poll() is None:
            self.proc.send_signal(sig)
            try:
                self.proc.wait(timeout)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
                raise AssertionError(f"server ignored signal {sig}:\n{self.log()}")
        self._log.close()
        return self.proc.returncode

    def close(self) -> None:
        try:
            self.stop()
        finally:
            self.tmp.cleanup()


@pytest.fixture(scope="module")
def server():
    s = Server()
    yield s
    s.close()


# A server whose engine runs one sequence at a time and holds at most 16: long requests stay in
# flight for seconds, which makes queueing, limits and disconnects observable.
@pytest.fixture(scope="module")
def slow_server():
    s = Server("--max-batch", "1", "--max-queue", "16", "--max-concurrent-requests", "2", "--max-body-mb", "1")
    yield s
    s.close()


def raw(port: int, method: str, path: str, body: bytes | str | dict | None = None,
        headers: dict | None = None) -> tuple[int, dict, bytes]:
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
    if isinstance(body, dict):
        body = json.dumps(body)
    if isinstance(body, str):
        body = body.encode()
    hdrs = {"Content-Type": "application/json", **(headers or {})}
    conn.request(method, path, body=body, headers=hdrs)
    resp = conn.getresponse()
    data = resp.read()
    conn.close()
    return resp.status, dict(resp.getheaders()), data


def raw_socket(port: int, payload: bytes, half_close: bool = False, timeout: float = 10.0) -> bytes:
    """Sends bytes as they are (malformed HTTP included) and returns the first response head, or
    whatever came back before the server closed. half_close: end our side after sending (the server
    then sees a dead peer and may answer nothing, which is fine for an incomplete request)."""
    buf = b""
    with socket.create_connection(("127.0.0.1", port), timeout=timeout) as s:
        s.sendall(payload)
        if half_close:
            s.shutdown(socket.SHUT_WR)
        try:
            while b"\r\n\r\n" not in buf:
                data = s.recv(65536)
                if not data:
                    break
                buf += data
        except (socket.timeout, ConnectionResetError):
            pass
    return buf


def assert_error(status: int, body: bytes, expected_status: int, param: str | None = "any", code: str | None = "any"):
    assert status == expected_status, body
    err = json.loads(body)["error"]
    assert set(err) == {"message", "type", "param", "code"}, err
    assert isinstance(err["message"], str) and err["message"]
    assert isinstance(err["type"], str) and err["type"]
    if param != "any":
        assert err["param"] == param, err
    if code != "any":
        assert err["code"] == code, err
    return err


def sse_events(lines) -> list:
    """Decoded `data:` payloads of a server-sent-event stream ([DONE] kept as the string)."""
    out = []
    for line in lines:
        if isinstance(line, bytes):
            line = line.decode()
        if line.startswith("data: "):
            data = line[len("data: "):]
            out.append(data if data == "[DONE]" else json.loads(data))
    return out


def chat_messages(text: str) -> list:
    return [{"role": "user", "content": text}]


# ---------------------------------------------------------------------------------------------
# Endpoints
# ---------------------------------------------------------------------------------------------

def test_health_and_models(server):
    r = requests.get(server.url + "/health", timeout=10)
    assert r.status_code == 200 and r.json() == {"status": "ok"}
    client = server.client()
    models = client.models.list()
    assert [m.id for m in models.data] == [NAME]
    assert client.models.retrieve(NAME).id == NAME
    with pytest.raises(openai.NotFoundError):
        client.models.retrieve("gpt-4")


def test_completion_matches_the_reference_greedy_output(server):
    # greedy.json in the model directory: the oracle's greedy continuation of "The cat".
    ref = json.loads((MODEL / "greedy.json").read_text())[0]
    out = server.client().completions.create(model=NAME, prompt=ref["prompt"], max_tokens=40, temperature=0)
    assert out.object == "text_completion"
    assert out.model == NAME
    assert out.choices[0].text == ref["text_until_eos"]
    assert out.choices[0].finish_reason == "stop"
    assert out.usage.prompt_tokens == len(ref["prompt_ids"])
    assert out.usage.completion_tokens == ref["eos_at"] + 1  # the eos token counts, as in vLLM
    assert out.usage.total_tokens == out.usage.prompt_tokens + out.usage.completion_tokens


def test_generation_config_defaults_apply(server):
    # The model's generation_config says do_sample=false: no temperature means greedy.
    client = server.client()
    a = client.completions.create(model=NAME, prompt="A river is", max_tokens=20)
    b = client.completions.create(model=NAME, prompt="A river is", max_tokens=20, temperature=0)
    assert a.choices[0].text == b.choices[0].text


def test_chat_completion(server):
    client = server.client()
    out = client.chat.completions.create(model=NAME, messages=chat_messages("The cat"), max_tokens=12,
                                         temperature=0, extra_body={"ignore_eos": True})
    assert out.object == "chat.completion"
    msg = out.choices[0].message
    assert msg.role == "assistant" and isinstance(msg.content, str) and msg.content
    assert out.choices[0].finish_reason == "length"
    # ChatML around "The cat": <|im_start|>user\nThe cat<|im_end|>\n<|im_start|>assistant\n
    assert out.usage.prompt_tokens > 5
    assert out.usage.completion_tokens == 12


def test_max_tokens_and_max_completion_tokens(server):
    client = server.client()
    a = client.chat.completions.create(model=NAME, messages=chat_messages("hi"), max_completion_tokens=5,
                                       extra_body={"ignore_eos": True})
    assert a.usage.completion_tokens == 5 and a.choices[0].finish_reason == "length"
    b = client.completions.create(model=NAME, prompt="The cat", max_tokens=3, extra_body={"ignore_eos": True})
    assert b.usage.completion_tokens == 3 and b.choices[0].finish_reason == "length"


def test_chat_streaming_matches_non_streaming(server):
    client = server.client()
    kwargs = dict(model=NAME, messages=chat_messages("A river is"), max_tokens=30, temperature=0)
    whole = client.chat.completions.create(**kwargs)
    chunks = list(client.chat.completions.create(**kwargs, stream=True, stream_options={"include_usage": True}))
    assert chunks[0].choices[0].delta.role == "assistant"
    assert all(c.object == "chat.completion.chunk" and c.id == chunks[0].id for c in chunks)
    text = "".join(c.choices[0].delta.content or "" for c in chunks if c.choices)
    assert text == whole.choices[0].message.content
    finishes = [c.choices[0].finish_reason for c in chunks if c.choices and c.choices[0].finish_reason]
    assert finishes == [whole.choices[0].finish_reason]
    assert chunks[-1].choices == [] and chunks[-1].usage is not None
    assert chunks[-1].usage.completion_tokens == whole.usage.completion_tokens
    assert chunks[-1].usage.prompt_tokens == whole.usage.prompt_tokens
    # Without include_usage no chunk carries usage.
    plain = list(client.chat.completions.create(**kwargs, stream=True))
    assert all(c.usage is None for c in plain)
    assert "".join(c.choices[0].delta.content or "" for c in plain if c.choices) == text


def test_completion_streaming_raw_sse(server):
    r = requests.post(server.url + "/v1/completions", stream=True, timeout=30,
                      json={"model": NAME, "prompt": "The cat", "max_tokens": 40, "temperature": 0, "stream": True})
    assert r.status_code == 200
    assert r.headers["Content-Type"].startswith("text/event-stream")
    events = sse_events(r.iter_lines())
    assert events[-1] == "[DONE]"
    text = "".join(e["choices"][0]["text"] for e in events[:-1])
    ref = json.loads((MODEL / "greedy.json").read_text())[0]
    assert text == ref["text_until_eos"]
    assert events[-2]["choices"][0]["finish_reason"] == "stop"


def test_prompt_shapes(server):
    client = server.client()
    ref = json.loads((MODEL / "greedy.json").read_text())[0]
    by_ids = client.completions.create(model=NAME, prompt=ref["prompt_ids"], max_tokens=40, temperature=0)
    assert by_ids.choices[0].text == ref["text_until_eos"]
    two = client.completions.create(model=NAME, prompt=["The cat", "A river is"], max_tokens=8, temperature=0)
    assert [c.index for c in two.choices] == [0, 1]
    assert two.choices[0].text == ref["text_until_eos"][: len(two.choices[0].text)]


def test_n_choices(server):
    client = server.client()
    out = client.chat.completions.create(model=NAME, messages=chat_messages("The cat"), n=3, temperature=1.0,
                                         seed=7, max_tokens=10, extra_body={"ignore_eos": True})
    assert [c.index for c in out.choices] == [0, 1, 2]
    assert out.usage.completion_tokens == 30
    stream = list(client.completions.create(model=NAME, prompt="The cat", n=2, max_tokens=6, stream=True,
                                            extra_body={"ignore_eos": True}))
    finished = sorted(c.choices[0].index for c in stream if c.choices and c.choices[0].finish_reason)
    assert finished == [0, 1]


def test_seed_makes_sampling_repeatable(server):
    client = server.client()
    kw = dict(model=NAME, prompt="The cat", max_tokens=20, temperature=1.0, top_p=0.9, extra_body={"ignore_eos": True})
    a = client.completions.create(seed=42, **kw).choices[0].text
    b = client.completions.create(seed=42, **kw).choices[0].text
    assert a == b


def test_stop_strings(server):
    client = server.client()
    base = client.completions.create(model=NAME, prompt="The cat", max_tokens=40, temperature=0,
                                     extra_body={"ignore_eos": True}).choices[0].text
    stop = "States"
    assert stop in base
    one = client.completions.create(model=NAME, prompt="The cat", max_tokens=40, temperature=0, stop=stop)
    assert one.choices[0].text == base[: base.index(stop)]
    assert one.choices[0].finish_reason == "stop"
    many = client.completions.create(model=NAME, prompt="The cat", max_tokens=40, temperature=0,
                                     stop=["zzzz", "writer"], extra_body={"ignore_eos": True})
    assert many.choices[0].text == base[: base.index("writer")]
    streamed = "".join(c.choices[0].text for c in client.completions.create(
        model=NAME, prompt="The cat", max_tokens=40, temperature=0, stop=[stop], stream=True) if c.choices)
    assert streamed == base[: base.index(stop)]


def test_sampling_parameters_are_accepted_and_used(server):
    client = server.client()
    kw = dict(model=NAME, prompt="A dog is", max_tokens=30, temperature=0, extra_body={"ignore_eos": True})
    plain = client.completions.create(**kw).choices[0].text
    penalised = client.completions.create(
        **{**kw, "extra_body": {"ignore_eos": True, "repetition_penalty": 1.8, "top_k": 5, "min_p": 0.05}},
        presence_penalty=1.5, frequency_penalty=1.5, top_p=0.8).choices[0].text
    assert isinstance(penalised, str)
    assert plain != penalised  # strong penalties change a greedy continuation of 30 tokens


def test_chat_template_kwargs_reach_the_template(tmp_path):
    # A copy of the model whose template reacts to enable_thinking, as Qwen3's does.
    model = tmp_path / "thinking-model"
    model.mkdir()
    for f in MODEL.iterdir():
        if f.suffix in (".json", ".safetensors"):
            (model / f.name).symlink_to(f)
    cfg = json.loads((MODEL / "tokenizer_config.json").read_text())
    cfg["chat_template"] = (
        "{% for m in messages %}{{'<|im_start|>' + m['role'] + '\n' + m['content'] + '<|im_end|>\n'}}{% endfor %}"
        "{% if add_generation_prompt %}{{'<|im_start|>assistant\n'}}"
        "{% if enable_thinking is defined and enable_thinking is false %}{{'<think>\n\n</think>\n\n'}}{% endif %}"
        "{% endif %}")
    (model / "tokenizer_config.json").unlink()
    (model / "tokenizer_config.json").write_text(json.dumps(cfg))
    s = Server(model=model, name="thinking")
    try:
        client = s.client()
        kw = dict(model="thinking", messages=chat_messages("The cat"), max_tokens=1)
        on = client.chat.completions.create(**kw)
        off = client.chat.completions.create(**kw, extra_body={"chat_template_kwargs": {"enable_thinking": False}})
        assert off.usage.prompt_tokens > on.usage.prompt_tokens
    finally:
        s.close()


def test_model_without_chat_template(tmp_path):
    model = tmp_path / "plain-model"
    model.mkdir()
    for f in MODEL.iterdir():
        if f.suffix in (".json", ".safetensors") and f.name != "tokenizer_config.json":
            (model / f.name).symlink_to(f)
    cfg = json.loads((MODEL / "tokenizer_config.json").read_text())
    del cfg["chat_template"]
    (model / "tokenizer_config.json").write_text(json.dumps(cfg))
    s = Server(model=model, name="plain")
    try:
        status, _, body = raw(s.port, "POST", "/v1/chat/completions", {"messages": chat_messages("x")})
        assert_error(status, body, 400, param="messages")
        ok = s.client().completions.create(model="plain", prompt="The cat", max_tokens=2)
        assert ok.usage.completion_tokens >= 1
    finally:
        s.close()


def test_metrics_and_request_log(server):
    server.client().completions.create(model=NAME, prompt="The cat", max_tokens=4, extra_body={"ignore_eos": True})
    text = requests.get(server.url + "/metrics", timeout=10).text
    for name in ("opchain_requests_total", "opchain_prompt_tokens_total", "opchain_generation_tokens_total",
                 "opchain_queue_depth", "opchain_running_sequences", "opchain_kv_blocks_used",
                 "opchain_kv_blocks_free", "opchain_engine_step_seconds_bucket", "opchain_engine_step_seconds_count",
                 "opchain_time_to_first_token_seconds_count", "opchain_requests_in_flight"):
        assert f"\n{name}" in text, name
    m = server.metrics()
    assert m['opchain_requests_total{endpoint="/v1/completions",status="200"}'] >= 1
    assert m["opchain_generation_tokens_total"] >= 4
    assert m["opchain_kv_blocks_free"] > 0
    assert re.search(r"POST /v1/completions 200 prompt_tokens=\d+ completion_tokens=4 [\d.]+ms", server.log())
    assert re.search(r"GET /metrics 200 ", server.log())


# ---------------------------------------------------------------------------------------------
# Bad requests: each gets a 4xx with an OpenAI error body, and the server keeps serving
# ---------------------------------------------------------------------------------------------

CHAT = "/v1/chat/completions"


@pytest.mark.parametrize("body,param", [
    ("{not json", None),
    ("[1, 2, 3]", None),
    ("", None),
    (b'{"messages": "\xff\xfe"}', None),
    ("[" * 100000, None),
    ({}, "messages"),
    ({"messages": []}, "messages"),
    ({"messages": "hello"}, "messages"),
    ({"messages": [{"role": "user"}]}, "messages[0].content"),
    ({"messages": [{"role": "user", "content": 5}]}, "messages[0].content"),
    ({"messages": [{"role": "robot", "content": "x"}]}, "messages[0].role"),
    ({"messages": [{"role": "user", "content": "x"}], "temperature": "hot"}, "temperature"),
    ({"messages": [{"role": "user", "content": "x"}], "temperature": 5}, "temperature"),
    ({"messages": [{"role": "user", "content": "x"}], "max_tokens": "10"}, "max_tokens"),
    ({"messages": [{"role": "user", "content": "x"}], "max_tokens": -1}, "max_tokens"),
    ({"messages": [{"role": "user", "content": "x"}], "max_tokens": 0}, "max_tokens"),
    ({"messages": [{"role": "user", "content": "x"}], "max_tokens": 10 ** 9}, "max_tokens"),
    ({"messages": [{"role": "user", "content": "x"}], "max_completion_tokens": -3}, "max_completion_tokens"),
    ({"messages": [{"role": "user", "content": "x"}], "top_p": 0}, "top_p"),
    ({"messages": [{"role": "user", "content": "x"}], "top_k": -5}, "top_k"),
    ({"messages": [{"role": "user", "content": "x"}], "stop": 5}, "stop"),
    ({"messages": [{"role": "user", "content": "x"}], "n": 0}, "n"),
    ({"messages": [{"role": "user", "content": "x"}], "n": 1000}, "n"),
    ({"messages": [{"role": "user", "content": "x"}], "seed": "x"}, "seed"),
    ({"messages": [{"role": "user", "content": "x"}], "stream": "yes"}, "stream"),
    ({"messages": [{"role": "user", "content": "x"}], "stream_options": {"include_usage": True}}, "stream_options"),
    ({"messages": [{"role": "user", "content": "x"}], "chat_template_kwargs": "x"}, "chat_template_kwargs"),
    ({"messages": [{"role": "user", "content": "x"}], "logprobs": True, "top_logprobs": 21}, "top_logprobs"),
    ({"messages": [{"role": "user", "content": "x"}], "top_logprobs": 2}, "top_logprobs"),
    ({"messages": [{"role": "user", "content": "x"}], "tool_choice": "sometimes"}, "tool_choice"),
    ({"messages": [{"role": "user", "content": "x"}], "response_format": {"type": "json_schema", "json_schema": {
        "name": "n", "schema": {"type": "integer", "multipleOf": 3}}}}, "response_format"),
    ({"messages": [{"role": "user", "content": "x"}], "response_format": {"type": "xml"}}, "response_format"),
])
def test_bad_chat_requests_are_400(server, body, param):
    status, _, data = raw(server.port, "POST", CHAT, body)
    assert_error(status, data, 400, param=param)


@pytest.mark.parametrize("body,param", [
    ({}, "prompt"),
    ({"prompt": ""}, "prompt"),
    ({"prompt": 12}, "prompt"),
    ({"prompt": [5000]}, "prompt"),            # outside the 4096-token vocabulary: the engine refuses it
    ({"prompt": [[1, 2], "x", 3]}, "prompt[2]"),
    ({"prompt": "x", "echo": True, "logprobs": 1}, "echo"),
    ({"prompt": "x", "logprobs": 21}, "logprobs"),
])
def test_bad_completion_requests_are_400(server, body, param):
    status, _, data = raw(server.port, "POST", "/v1/completions", body)
    assert_error(status, data, 400, param=param)


def test_unknown_model_is_404(server):
    status, _, data = raw(server.port, "POST", CHAT, {"model": "gpt-4o", "messages": chat_messages("x")})
    assert_error(status, data, 404, param="model", code="model_not_found")
    with pytest.raises(openai.NotFoundError):
        server.client().chat.completions.create(model="gpt-4o", messages=chat_messages("x"))


def test_prompt_past_the_context_is_400(server):
    long_text = "The cat is a small animal. " * 200  # well over 512 tokens
    status, _, data = raw(server.port, "POST", CHAT, {"messages": chat_messages(long_text)})
    assert_error(status, data, 400, code="context_length_exceeded")
    # Fits alone, but not with max_tokens on top.
    status, _, data = raw(server.port, "POST", "/v1/completions", {"prompt": [100] * 500, "max_tokens": 100})
    assert_error(status, data, 400, code="context_length_exceeded")
    with pytest.raises(openai.BadRequestError):
        server.client().completions.create(model=NAME, prompt=long_text, max_tokens=5)


def test_official_client_raises_bad_request(server):
    with pytest.raises(openai.BadRequestError) as e:
        server.client().chat.completions.create(model=NAME, messages=chat_messages("x"), temperature=9)
    assert e.value.status_code == 400


def test_body_over_the_limit_is_413(slow_server):
    big = json.dumps({"prompt": "x" * (2 << 20)}).encode()
    status, _, data = raw(slow_server.port, "POST", "/v1/completions", big)
    assert_error(status, data, 413)
    # Chunked bodies carry no Content-Length; the limit applies while reading.
    chunk = b"x" * 65536
    # The server answers 413 and closes, draining the unread rest without parsing it
    # (test_http_robustness.py checks that none of it runs as a request).
    payload = (b"POST /v1/completions HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
               b"Transfer-Encoding: chunked\r\n\r\n")
    payload += b"".join(b"%x\r\n%s\r\n" % (len(chunk), chunk) for _ in range(40)) + b"0\r\n\r\n"
    reply = raw_socket(slow_server.port, payload)
    assert reply.startswith(b"HTTP/1.1 413"), reply[:200]


def test_unknown_routes_and_malformed_http(server):
    status, _, data = raw(server.port, "GET", "/v1/nothing")
    assert_error(status, data, 404)
    status, _, data = raw(server.port, "GET", CHAT)
    assert_error(status, data, 404)
    reply = raw_socket(server.port, b"THIS IS NOT HTTP\r\n\r\n")
    assert reply.startswith(b"HTTP/1.1 400"), reply[:200]
    reply = raw_socket(server.port, b"POST /v1/completions HTTP/1.1\r\nContent-Length: 10\r\n\r\n{\"pro",
                       half_close=True)  # the body is cut short
    assert reply == b"" or reply.startswith(b"HTTP/1.1 400"), reply[:200]
    raw_socket(server.port, b"\x00\xff" * 1000, half_close=True)
    assert requests.get(server.url + "/health", timeout=10).status_code == 200


def test_api_key():
    s = Server(env={"OPCHAIN_API_KEY": "sekrit"})
    try:
        status, _, data = raw(s.port, "POST", CHAT, {"messages": chat_messages("x"), "max_tokens": 1})
        assert_error(status, data, 401, code="invalid_api_key")
        status, _, data = raw(s.port, "GET", "/v1/models", headers={"Authorization": "Bearer wrong"})
        assert_error(status, data, 401)
        status, _, data = raw(s.port, "POST", CHAT, {"messages": chat_messages("x"), "max_tokens": 1},
                              headers={"Authorization": "Bearer sekrit"})
        assert status == 200, data
        assert requests.get(s.url + "/health", timeout=10).status_code == 200  # probes need no key
        with pytest.raises(openai.AuthenticationError):
            s.client("wrong").models.list()
        assert s.client("sekrit").models.list().data[0].id == NAME
    finally:
        s.close()


# ---------------------------------------------------------------------------------------------
# Batching, limits, disconnects, shutdown
# ---------------------------------------------------------------------------------------------

def test_32_concurrent_streams_match_sequential_output(server):
    client = server.client()
    prompts = ["The cat", "A river is", "A dog is", "To run is to", "Music means", "A house is", "Blue means",
               "A teacher is"]
    jobs = [(prompts[i % len(prompts)], 24 + (i % 5) * 8) for i in range(32)]

    def run(job, stream):
        prompt, max_tokens = job
        kw = dict(model=NAME, messages=chat_messages(prompt), max_tokens=max_tokens, temperature=0)
        if not stream:
            out = client.chat.completions.create(**kw)
            return out.choices[0].message.content, out.choices[0].finish_reason
        text, finish = "", None
        for c in client.chat.completions.create(**kw, stream=True):
            if c.choices:
                text += c.choices[0].delta.content or ""
                finish = c.choices[0].finish_reason or finish
        return text, finish

    one_by_one = [run(j, stream=False) for j in jobs]
    with concurrent.futures.ThreadPoolExecutor(max_workers=32) as pool:
        together = list(pool.map(lambda j: run(j, stream=True), jobs))
    assert together == one_by_one
    server.wait_metric("opchain_kv_blocks_used", lambda v: v == 0)


def open_stream(port: int, body: dict) -> socket.socket:
    """A streaming request on a raw socket, so the test decides when the client goes away."""
    data = json.dumps(body).encode()
    s = socket.create_connection(("127.0.0.1", port), timeout=30)
    s.sendall(b"POST /v1/completions HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
              b"Content-Length: %d\r\n\r\n%s" % (len(data), data))
    return s


def read_until(s: socket.socket, marker: bytes, count: int = 1) -> bytes:
    buf = b""
    while buf.count(marker) < count:
        data = s.recv(65536)
        if not data:
            break
        buf += data
    return buf


LONG = {"model": NAME, "prompt": "The cat", "max_tokens": 480, "ignore_eos": True, "stream": True}


def test_disconnect_mid_stream_frees_kv_blocks(slow_server):
    before = slow_server.metrics()["opchain_generation_tokens_total"]
    s = open_stream(slow_server.port, {**LONG, "n": 16})  # 16 x 480 tokens, one sequence at a time
    head = read_until(s, b"data: ", 3)
    assert head.startswith(b"HTTP/1.1 200"), head[:200]
    slow_server.wait_metric("opchain_kv_blocks_used", lambda v: v > 0)
    s.close()
    slow_server.wait_metric("opchain_kv_blocks_used", lambda v: v == 0, timeout=5)
    slow_server.wait_metric("opchain_requests_in_flight", lambda v: v == 0, timeout=5)
    m = slow_server.metrics()
    assert m["opchain_running_sequences"] == 0 and m["opchain_queue_depth"] == 0
    # Aborted long before the 7680 tokens it asked for.
    assert m["opchain_generation_tokens_total"] - before < 16 * 480 / 2


def test_full_queue_is_429_and_in_flight_requests_are_bounded(slow_server):
    # The engine holds at most 16 unfinished sequences.
    s = open_stream(slow_server.port, {**LONG, "n": 16})
    read_until(s, b"data: ")
    status, _, data = raw(slow_server.port, "POST", "/v1/completions", {"prompt": "x", "max_tokens": 2})
    assert_error(status, data, 429, code="queue_full")
    with pytest.raises(openai.RateLimitError):
        slow_server.client().completions.create(model=NAME, prompt="x", max_tokens=2)
    s.close()
    slow_server.wait_metric("opchain_requests_in_flight", lambda v: v == 0, timeout=5)
    # The engine drops aborted sequences at its next step, after the request has left the flight.
    slow_server.wait_metric("opchain_queue_depth", lambda v: v == 0, timeout=5)
    slow_server.wait_metric("opchain_running_sequences", lambda v: v == 0, timeout=5)

    # At most two HTTP generation requests in flight. Each asks for 8 x 480 tokens, one sequence at a
    # time: seconds of work even on a fast machine, so both are still running when the third arrives.
    a = open_stream(slow_server.port, {**LONG, "n": 8})
    head_a = read_until(a, b"data: ")
    assert head_a.startswith(b"HTTP/1.1 200"), head_a[:300]
    b = open_stream(slow_server.port, {**LONG, "n": 8})
    # b waits behind a's sequences (one runs at a time) but is in flight all the same; a refused b
    # would answer at once, so a short read tells the two apart.
    b.settimeout(0.5)
    try:
        head_b = b.recv(65536)
    except socket.timeout:
        head_b = b""
    b.settimeout(30)
    assert not head_b or head_b.startswith(b"HTTP/1.1 200"), head_b[:300]
    slow_server.wait_metric("opchain_requests_in_flight", lambda v: v == 2, timeout=5)
    status, _, data = raw(slow_server.port, "POST", "/v1/completions", {"prompt": "x", "max_tokens": 2})
    assert_error(status, data, 429, code="too_many_requests")
    a.close()
    b.close()
    slow_server.wait_metric("opchain_kv_blocks_used", lambda v: v == 0, timeout=5)
    slow_server.wait_metric("opchain_requests_in_flight", lambda v: v == 0, timeout=5)
    ok = slow_server.client().completions.create(model=NAME, prompt="x", max_tokens=2)
    assert ok.usage.completion_tokens >= 1


def test_sigterm_lets_in_flight_requests_finish():
    # A grace period well beyond the request's few seconds, so a slow (sanitised, loaded) machine passes too.
    s = Server("--max-batch", "1", "--shutdown-timeout", "60")
    try:
        result = {}

        def request():
            r = requests.post(s.url + "/v1/completions", timeout=60,
                              json={"prompt": "The cat", "max_tokens": 400, "n": 6, "ignore_eos": True})
            result["status"], result["body"] = r.status_code, r.json()

        t = threading.Thread(target=request)
        t.start()
        s.wait_metric("opchain_kv_blocks_used", lambda v: v > 0)
        assert s.stop(signal.SIGTERM) == 0
        t.join(30)
        assert result["status"] == 200, result
        assert result["body"]["usage"]["completion_tokens"] == 6 * 400
        with pytest.raises(requests.ConnectionError):
            requests.get(s.url + "/health", timeout=5)
        assert "shutting down" in s.log()
    finally:
        s.close()


def test_sigint_cancels_what_outlives_the_grace_period():
    s = Server("--max-batch", "1", "--shutdown-timeout", "0.3")
    try:
        sock = open_stream(s.port, {**LONG, "n": 16})
        read_until(sock, b"data: ", 2)
        t0 = time.time()
        assert s.stop(signal.SIGINT) == 0
        assert time.time() - t0 < 10
        rest = b""
        while True:
            data = sock.recv(65536)
            if not data:
                break
            rest += data
        sock.close()
        events = sse_events(rest.decode(errors="replace").split("\n"))
        assert any(isinstance(e, dict) and "error" in e for e in events), rest[-500:]
        assert "cancelling" in s.log()
    finally:
        s.close()


def test_idle_server_exits_0_on_sigterm():
    s = Server()
    try:
        assert s.stop(signal.SIGTERM, timeout=10) == 0
    finally:
        s.close()


def test_port_in_use_is_an_error(server):
    # No SO_REUSEPORT: a second server must not silently share the port and half the traffic.
    p = subprocess.run([opchain_bin(), "serve", "--model", str(MODEL), "--port", str(server.port)],
                       capture_output=True, timeout=60)
    assert p.returncode == 1, p.stderr
    assert b"cannot bind" in p.stderr


def test_hybrid_model_serves_concurrently_and_reports_state_memory():
    """A Qwen3.5-MoE (Gated DeltaNet) model through the official client: concurrent requests each hold
    a state slot, their greedy outputs equal the one a request gets alone, and /metrics reports the state pool."""
    model = REPO / "tests/data/models/tiny-qwen3_5-moe"
    s = Server(model=model, name="hybrid")
    try:
        prompt = [int(t) for t in (model / "ids.txt").read_text().strip().split(",")]
        expected = [int(t) for t in (model / "greedy.txt").read_text().splitlines()[0][len("ids: "):].split(",")]
        client = s.client()

        def one(_):
            r = client.completions.create(model="hybrid", prompt=prompt, max_tokens=len(expected), temperature=0,
                                          extra_body={"ignore_eos": True})
            return r

        with concurrent.futures.ThreadPoolExecutor(4) as pool:
            outs = list(pool.map(one, range(4)))
        alone = one(0)
        for r in outs:
            assert r.usage.completion_tokens == len(expected)
            assert r.choices[0].text == alone.choices[0].text
        m = s.metrics()
        assert m["opchain_state_slots_total"] >= 1
        assert m["opchain_state_bytes"] > 0
        assert m["opchain_kv_cache_bytes"] >= m["opchain_state_bytes"]
        assert m["opchain_state_slots_used"] == 0  # every slot back once the requests are done
    finally:
        s.close()
