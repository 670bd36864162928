"""A raw HTTP/1.1 client for the server tests that choose every byte on the wire (standard library
only), and an `opchain serve` process to point it at."""
from __future__ import annotations

import json
import os
import re
import signal
import socket
import subprocess
import tempfile
import threading
import time
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
MODEL = REPO / "tests/data/models/trained-qwen3-moe"
NAME = "trained-qwen3-moe"
KEY = "robust-key"


def opchain_bin() -> str:
    path = Path(os.environ.get("OPCHAIN_BIN", "build/apps/opchain/opchain"))
    if not path.is_absolute():
        path = REPO / path
    if not path.exists():
        pytest.fail(f"opchain binary not found at {path}; build it or set OPCHAIN_BIN")
    return str(path)


class Server:
    """One `opchain serve` with an API key on a free loopback port; stderr goes to a file."""

    def __init__(self, *extra: str):
        self.tmp = tempfile.TemporaryDirectory(prefix="opchain-robust-")
        self.log_path = Path(self.tmp.name) / "stderr.log"
        self._log = open(self.log_path, "wb")
        cmd = [opchain_bin(), "serve", "--model", str(MODEL), "--host", "127.0.0.1", "--port", "0",
               "--served-model-name", NAME, "--threads", "2", "--api-key", KEY, *extra]
        self.proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=self._log)
        deadline = time.time() + 30
        while True:
            m = re.search(r"on http://127\.0\.0\.1:(\d+)", self.log())
            if m:
                self.port = int(m.group(1))
                break
            if self.proc.poll() is not None or time.time() > deadline:
                self.proc.kill()
                raise RuntimeError(f"server did not start:\n{self.log()}")
            time.sleep(0.02)

    def log(self) -> str:
        return self.log_path.read_bytes().decode("latin-1")

    def rss_kib(self) -> int:
        for line in Path(f"/proc/{self.proc.pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
        raise AssertionError("no VmRSS")

    def get(self, path: str, key: str | None = KEY) -> "Response":
        with Conn(self.port) as c:
            c.send(request("GET", path, key=key))
            return c.read_response()

    def metrics(self) -> dict[str, float]:
        out = {}
        for line in self.get("/metrics").body.decode().splitlines():
            if line and not line.startswith("#"):
                k, v = line.rsplit(" ", 1)
                out[k] = float(v)
        return out

    def wait_metrics_zero(self, timeout: float = 10.0) -> None:
        keys = ("opchain_requests_in_flight", "opchain_kv_blocks_used", "opchain_running_sequences",
                "opchain_queue_depth")
        deadline = time.time() + timeout
        while True:
            m = self.metrics()
            if all(m[k] == 0 for k in keys):
                return
            if time.time() > deadline:
                raise AssertionError({k: m[k] for k in keys})
            time.sleep(0.05)

    def stop(self, sig: int = signal.SIGTERM, timeout: float = 20.0) -> int:
        if self.proc.poll() is None:
            self.proc.send_signal(sig)
            try:
                self.proc.wait(timeout)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
                raise AssertionError(f"server ignored signal {sig}:\n{self.log()[-2000:]}")
        self._log.close()
        return self.proc.returncode

    def close(self) -> None:
        """Stops with SIGTERM and checks the exit status: 0, also under ASan's leak check at exit."""
        try:
            rc = self.stop()
            assert rc == 0, f"exit status {rc}:\n{self.log()[-3000:]}"
        finally:
            self.tmp.cleanup()


class Response:
    def __init__(self, status: int, headers: dict[str, str], body: bytes):
        self.status, self.headers, self.body = status, headers, body

    def json(self):
        return json.loads(self.body)

    def __repr__(self):
        return f"Response({self.status}, {self.headers}, {self.body[:200]!r})"


class Conn:
    """A client socket with a read buffer, reading HTTP/1.1 responses off the wire."""

    def __init__(self, port: int, timeout: float = 10.0):
        self.sock = socket.create_connection(("127.0.0.1", port), timeout=timeout)
        self.buf = b""

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.sock.close()

    def send(self, data: bytes) -> None:
        self.sock.sendall(data)

    def _fill(self) -> None:
        data = self.sock.recv(65536)
        if not data:
            raise EOFError(f"connection closed; unread: {self.buf[:200]!r}")
        self.buf += data

    def read_until(self, marker: bytes, count: int = 1) -> bytes:
        while self.buf.count(marker) < count:
            self._fill()
        end = 0
        for _ in range(count):
            end = self.buf.index(marker, end) + len(marker)
        out, self.buf = self.buf[:end], self.buf[end:]
        return out

    def read_exact(self, n: int) -> bytes:
        while len(self.buf) < n:
            self._fill()
        out, self.buf = self.buf[:n], self.buf[n:]
        return out

    def read_response(self) -> Response:
        head = self.read_until(b"\r\n\r\n").decode("latin-1")
        lines = head.split("\r\n")
        status = int(lines[0].split(" ")[1])
        headers = {}
        for line in lines[1:]:
            if line:
                k, v = line.split(":", 1)
                headers[k.strip().lower()] = v.strip()
        if status == 100:
            return self.read_response()
        if "content-length" in headers:
            body = self.read_exact(int(headers["content-length"]))
        elif headers.get("transfer-encoding") == "chunked":
            body = b""
            while True:
                size = int(self.read_until(b"\r\n")[:-2].split(b";")[0], 16)
                body += self.read_exact(size)
                assert self.read_exact(2) == b"\r\n"
                if size == 0:
                    break
        else:
            body = b""
        return Response(status, headers, body)

    def closed_by_server(self, timeout: float = 5.0) -> bool:
        """True when the server closes (EOF or reset) within timeout without sending more."""
        self.sock.settimeout(timeout)
        try:
            while True:
                data = self.sock.recv(65536)
                if not data:
                    return True
                self.buf += data
                assert False, f"unexpected bytes after the response: {self.buf[:300]!r}"
        except (ConnectionResetError, BrokenPipeError):
            return True
        except socket.timeout:
            return False


def request(method: str, path: str, body: bytes | dict | None = None, key: str | None = KEY,
            headers: dict | None = None, close: bool = False) -> bytes:
    if isinstance(body, dict):
        body = json.dumps(body).encode()
    lines = [f"{method} {path} HTTP/1.1", "Host: 127.0.0.1"]
    if key:
        lines.append(f"Authorization: Bearer {key}")
    if body is not None:
        lines += ["Content-Type: application/json", f"Content-Length: {len(body)}"]
    if close:
        lines.append("Connection: close")
    lines += [f"{k}: {v}" for k, v in (headers or {}).items()]
    return ("\r\n".join(lines) + "\r\n\r\n").encode("latin-1") + (body or b"")


def exchange(port: int, payload: bytes, timeout: float = 10.0) -> tuple[Response, bool]:
    """Sends raw bytes; returns the first response and whether the server then closed the connection."""
    with Conn(port, timeout) as c:
        c.send(payload)
        r = c.read_response()
        return r, r.headers.get("connection") == "close" and c.closed_by_server(timeout=5.0)


def stream_text(body: bytes) -> tuple[str, str | None]:
    """The concatenated text and the finish reason of a /v1/completions SSE body."""
    text, finish = "", None
    for line in body.decode().split("\n"):
        if line.startswith("data: ") and line != "data: [DONE]":
            ev = json.loads(line[len("data: "):])
            assert "error" not in ev, ev
            for ch in ev["choices"]:
                text += ch["text"]
                finish = ch.get("finish_reason") or finish
    assert body.rstrip().endswith(b"data: [DONE]"), body[-200:]
    return text, finish


def send_while_reading(port: int, chunks, timeout: float = 20.0) -> tuple[bytes, int]:
    """Sends the chunks while a second thread reads; returns what came back and the bytes sent
    before the server stopped taking them (a server that answers early closes on the rest)."""
    sock = socket.create_connection(("127.0.0.1", port), timeout=timeout)
    got = bytearray()

    def reader():
        try:
            while True:
                data = sock.recv(65536)
                if not data:
                    return
                got.extend(data)
        except OSError:
            return

    t = threading.Thread(target=reader)
    t.start()
    sent = 0
    try:
        for chunk in chunks:
            sock.sendall(chunk)
            sent += len(chunk)
    except OSError:
        pass
    try:
        sock.shutdown(socket.SHUT_WR)
    except OSError:
        pass
    t.join(timeout)
    sock.close()
    assert not t.is_alive(), "the server neither answered nor closed"
    return bytes(got), sent


def wait_connections(server: Server, expected: int, timeout: float = 10.0) -> None:
    deadline = time.time() + timeout
    while (n := server.metrics()["opchain_http_connections"]) != expected:
        assert time.time() < deadline, f"{n} connections open, expected {expected}"
        time.sleep(0.05)


def completion(prompt: str, max_tokens: int, stream: bool, **extra) -> bytes:
    return request("POST", "/v1/completions", {"model": NAME, "prompt": prompt, "max_tokens": max_tokens,
                                               "temperature": 0, "stream": stream, **extra})
