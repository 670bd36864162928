"""The HTTP layer of `opchain serve` against a hostile or broken client (issue 16): limits, strict
RFC 9112 parsing, no request smuggling, slowloris, pipelining, log injection, and long runs that
would show leaks (keep-alive, concurrent streams, disconnects, resident memory, SIGTERM drain).

Standard library only: raw sockets to 127.0.0.1, so every byte on the wire is the test's choice.
Every socket has a timeout and every wait a deadline, so a regression fails instead of hanging.
The client and the server process are in raw_http.py; the binary comes from $OPCHAIN_BIN.
"""
from __future__ import annotations

import json
import re
import signal
import socket
import struct
import threading
import time
from pathlib import Path

import pytest
from raw_http import (KEY, NAME, Conn, Server, completion, exchange, request, send_while_reading, stream_text,
                      wait_connections)


# A short head timeout and a 1 MiB body limit keep the timing tests short; the rest is default.
@pytest.fixture(scope="module")
def server():
    s = Server("--header-timeout", "3", "--body-timeout", "2", "--max-body-mb", "1")
    yield s
    s.close()


# ---------------------------------------------------------------------------------------------
# Limits on the request head: memory before authentication
# ---------------------------------------------------------------------------------------------

def test_a_56_mb_head_is_431_and_memory_stays_flat(server):
    before = server.rss_kib()
    line = b"X-Filler: abcdefghijklmnopqrstuvwxyz\r\n"
    block = line * ((1 << 20) // len(line))  # ~1 MiB of header lines per send

    def head():
        yield b"POST /v1/completions HTTP/1.1\r\nHost: x\r\n"  # no API key: nothing is authenticated yet
        for _ in range(56):
            yield block

    t0 = time.time()
    got, sent = send_while_reading(server.port, head())
    assert got.startswith(b"HTTP/1.1 431"), got[:200]
    assert time.time() - t0 < 15
    after = server.rss_kib()
    assert after - before < 16 * 1024, f"RSS grew by {(after - before) / 1024:.1f} MiB ({sent >> 20} MiB sent)"
    assert server.get("/health").status == 200


def test_header_count_limit_is_431(server):
    ok = request("GET", "/health", headers={f"X-H{i}": "v" for i in range(90)})
    r, _ = exchange(server.port, ok)
    assert r.status == 200
    too_many = request("GET", "/health", headers={f"X-H{i}": "v" for i in range(101)})
    r, closed = exchange(server.port, too_many)
    assert r.status == 431 and closed, r
    assert "header lines" in r.json()["error"]["message"]


def test_header_bytes_limit_is_431(server):
    r, closed = exchange(server.port, request("GET", "/health", headers={"X-Big": "a" * (70 * 1024)}))
    assert r.status == 431 and closed, r


def test_request_line_limit_is_414(server):
    r, closed = exchange(server.port, request("GET", "/health?" + "q" * 9000))
    assert r.status == 414 and closed, r
    # Longer than the whole head limit: still the request line's fault.
    r, closed = exchange(server.port, request("GET", "/" + "p" * (80 * 1024)))
    assert r.status == 414 and closed, r


# ---------------------------------------------------------------------------------------------
# Bodies: size, smuggling, authentication first, slow bodies
# ---------------------------------------------------------------------------------------------

def test_declared_body_over_the_limit_is_413_before_it_is_sent(server):
    head = (b"POST /v1/completions HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer " + KEY.encode() +
            b"\r\nContent-Length: %d\r\n\r\n" % (2 << 20))
    with Conn(server.port) as c:
        c.send(head)  # and no body: the answer must not wait for it
        r = c.read_response()
        assert r.status == 413 and r.json()["error"]["code"] == "request_too_large", r
        assert r.headers["connection"] == "close"
        assert c.closed_by_server()


def test_chunked_body_over_the_limit_is_413_and_the_rest_is_never_parsed(server):
    smuggled = b"".join(request("GET", f"/smuggled-{i}") for i in range(20))
    chunk = b"x" * 65536
    body = b"".join(b"%x\r\n%s\r\n" % (len(chunk), chunk) for _ in range(20))  # 1.25 MiB > 1 MiB
    payload = (b"POST /v1/completions HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer " + KEY.encode() +
               b"\r\nTransfer-Encoding: chunked\r\n\r\n" + body + b"0\r\n\r\n" + smuggled)
    got, _ = send_while_reading(server.port, [payload])
    assert got.startswith(b"HTTP/1.1 413"), got[:200]
    assert got.count(b"HTTP/1.1 ") == 1, got  # one response, then the connection closed
    time.sleep(0.2)
    assert "smuggled" not in server.log()
    # A chunk header that alone declares more than the limit is refused at once.
    payload = (b"POST /v1/completions HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer " + KEY.encode() +
               b"\r\nTransfer-Encoding: chunked\r\n\r\n%x\r\n" % (4 << 20))
    r, closed = exchange(server.port, payload)
    assert r.status == 413 and closed, r


def test_api_key_is_checked_before_the_body_is_read(server):
    head = b"POST /v1/completions HTTP/1.1\r\nHost: x\r\nContent-Length: 500000\r\n\r\n"
    with Conn(server.port) as c:
        t0 = time.time()
        c.send(head)
        r = c.read_response()
        assert r.status == 401 and r.json()["error"]["code"] == "invalid_api_key", r
        assert time.time() - t0 < 1.0
        assert c.closed_by_server()


def test_slow_body_is_408(server):
    with Conn(server.port) as c:
        c.send(request("POST", "/v1/completions", b'{"prompt": "x", "max_tokens": 1}')[:-10])
        t0 = time.time()
        r = c.read_response()
        assert r.status == 408, r
        assert 1.5 < time.time() - t0 < 5  # --body-timeout 2
        assert c.closed_by_server()


def test_expect_100_continue(server):
    body = json.dumps({"prompt": "The cat", "max_tokens": 2}).encode()
    head = request("POST", "/v1/completions", body, headers={"Expect": "100-continue"})[:-len(body)]
    with Conn(server.port) as c:
        c.send(head)
        assert c.read_until(b"\r\n\r\n").startswith(b"HTTP/1.1 100 Continue")
        c.send(body)
        r = c.read_response()
        assert r.status == 200, r


# ---------------------------------------------------------------------------------------------
# Strict RFC 9112 parsing: 400 (or 501) and close
# ---------------------------------------------------------------------------------------------

GOOD_BODY = b'{"prompt": "x", "max_tokens": 1}'


@pytest.mark.parametrize("name,payload,status", [
    ("conflicting Content-Length",
     b"POST /v1/completions HTTP/1.1\r\nHost: x\r\nContent-Length: 32\r\nContent-Length: 33\r\n\r\n" + GOOD_BODY, 400),
    ("conflicting Content-Length in one list",
     b"POST /v1/completions HTTP/1.1\r\nHost: x\r\nContent-Length: 32, 33\r\n\r\n" + GOOD_BODY, 400),
    ("Content-Length and chunked",
     b"POST /v1/completions HTTP/1.1\r\nHost: x\r\nContent-Length: 32\r\nTransfer-Encoding: chunked\r\n\r\n"
     b"20\r\n" + GOOD_BODY + b"\r\n0\r\n\r\n", 400),
    ("negative Content-Length", b"POST /v1/completions HTTP/1.1\r\nHost: x\r\nContent-Length: -1\r\n\r\n", 400),
    ("header line without a colon", b"GET /health HTTP/1.1\r\nHost: x\r\nX-No-Colon\r\n\r\n", 400),
    ("space before the colon", b"GET /health HTTP/1.1\r\nHost : x\r\n\r\n", 400),
    ("space in a header name", b"GET /health HTTP/1.1\r\nHost: x\r\nX Bad: y\r\n\r\n", 400),
    ("control byte in a header value", b"GET /health HTTP/1.1\r\nHost: x\r\nX-A: a\x01b\r\n\r\n", 400),
    ("no Host", b"GET /health HTTP/1.1\r\n\r\n", 400),
    ("two Hosts", b"GET /health HTTP/1.1\r\nHost: a\r\nHost: b\r\n\r\n", 400),
    ("bad chunk size", b"POST /v1/completions HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n", 400),
    ("chunk longer than declared",
     b"POST /v1/completions HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n2\r\nabc\r\n0\r\n\r\n", 400),
    ("unknown transfer coding", b"POST /v1/completions HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: gzip\r\n\r\n", 501),
    ("control byte in the target", b"GET /he\x1balth HTTP/1.1\r\nHost: x\r\n\r\n", 400),
    ("HTTP/2 request line", b"GET /health HTTP/2.0\r\nHost: x\r\n\r\n", 505),
    ("not HTTP at all", b"THIS IS NOT HTTP\r\n\r\n", 400),
])
def test_malformed_framing_is_refused_and_closes(server, name, payload, status):
    # Authorised, so that only framing can be the reason for the refusal.
    payload = payload.replace(b"Host: x\r\n", b"Host: x\r\nAuthorization: Bearer " + KEY.encode() + b"\r\n", 1)
    r, closed = exchange(server.port, payload + request("GET", "/smuggled-after-bad-framing"))
    assert r.status == status, (name, r)
    assert r.headers["connection"] == "close" and closed, name
    assert "smuggled-after-bad-framing" not in server.log()


def test_repeated_equal_content_length_is_accepted(server):
    payload = (b"GET /health HTTP/1.1\r\nHost: x\r\nContent-Length: 0\r\nContent-Length: 0\r\n\r\n")
    r, _ = exchange(server.port, payload)
    assert r.status == 200, r


# ---------------------------------------------------------------------------------------------
# Connections: slowloris, pipelining, keep-alive, limits
# ---------------------------------------------------------------------------------------------

def test_slowloris_does_not_starve_health(server):
    """80 clients trickle header lines (one a second); /health answers throughout, and each of
    them gets 408 once its head has taken longer than --header-timeout (3 s)."""
    socks = [socket.create_connection(("127.0.0.1", server.port), timeout=10) for _ in range(80)]
    try:
        for s in socks:
            s.sendall(b"GET /health HTTP/1.1\r\nHost: x\r\n")
        t0 = time.time()
        worst = 0.0
        while time.time() - t0 < 2.5:
            for s in socks:
                try:
                    s.sendall(b"X-Slow: 1\r\n")
                except OSError:
                    pass
            h0 = time.time()
            assert server.get("/health").status == 200
            worst = max(worst, time.time() - h0)
            time.sleep(0.5)
        assert worst < 1.0, f"/health took {worst:.2f} s under slowloris"  # (it took 20 s on cpp-httplib)
        for s in socks:
            s.settimeout(5)
            data = b""
            try:
                while True:
                    d = s.recv(4096)
                    if not d:
                        break
                    data += d
            except ConnectionResetError:
                pass
            assert data.startswith(b"HTTP/1.1 408"), data[:100]
        assert time.time() - t0 < 8
        for s in socks:
            s.close()
        wait_connections(server, 1)
    finally:
        for s in socks:
            s.close()


def test_pipelined_requests_are_answered_in_order(server):
    body = json.dumps({"model": NAME, "prompt": "The cat", "max_tokens": 3, "temperature": 0}).encode()
    payload = (request("GET", "/health") + request("GET", "/v1/models") + request("POST", "/v1/completions", body) +
               request("GET", "/v1/models/nope") + request("POST", "/v1/completions", b"{bad json") +
               request("GET", "/metrics"))
    with Conn(server.port) as c:
        c.send(payload)
        statuses = [c.read_response() for _ in range(6)]
    assert [r.status for r in statuses] == [200, 200, 200, 404, 400, 200], statuses
    assert statuses[1].json()["data"][0]["id"] == NAME
    assert statuses[2].json()["usage"]["completion_tokens"] == 3
    assert statuses[5].body.startswith(b"# HELP")


def test_2000_keep_alive_requests_on_one_connection(server):
    t0 = time.time()
    with Conn(server.port) as c:
        for i in range(2000):
            path = ("/health", "/v1/models", "/v1/models/" + NAME, "/nothing")[i % 4]
            c.send(request("GET", path))
            r = c.read_response()
            assert r.status == (404 if path == "/nothing" else 200), (i, r)
            assert r.headers["connection"] == "keep-alive", (i, r)
    assert time.time() - t0 < 30


def test_idle_keep_alive_connection_is_closed():
    s = Server("--keep-alive-timeout", "1")
    try:
        with Conn(s.port) as c:
            c.send(request("GET", "/health"))
            assert c.read_response().status == 200
            t0 = time.time()
            assert c.closed_by_server(timeout=5)
            assert 0.8 < time.time() - t0 < 3
    finally:
        s.close()


def test_connection_limits():
    s = Server("--max-connections", "6", "--max-connections-per-client", "4")
    try:
        held = [Conn(s.port) for _ in range(4)]
        # A fifth from the same address is refused by the per-client limit.
        r, closed = exchange(s.port, request("GET", "/health"))
        assert r.status == 429 and closed, r
        assert r.json()["error"]["code"] == "too_many_connections"
        for c in held:
            c.sock.close()
    finally:
        s.close()
    # Every test client is 127.0.0.1, so the global limit is checked with the per-client one above it.
    s = Server("--max-connections", "6")
    try:
        held = [Conn(s.port) for _ in range(6)]
        time.sleep(0.2)
        r, closed = exchange(s.port, request("GET", "/health"))
        assert r.status == 503 and closed, r
        held.pop().sock.close()
        deadline = time.time() + 5
        while True:  # the freed place is usable again
            r, _ = exchange(s.port, request("GET", "/health"))
            if r.status == 200 or time.time() > deadline:
                break
            time.sleep(0.05)
        assert r.status == 200, r
        for c in held:
            c.sock.close()
    finally:
        s.close()


# ---------------------------------------------------------------------------------------------
# The request log
# ---------------------------------------------------------------------------------------------

def test_request_log_cannot_be_forged_or_drive_the_terminal(server):
    forged = "POST /v1/completions 200 prompt_tokens=1 completion_tokens=1 0.1ms"
    targets = ["/x%0a" + forged.replace(" ", "%20"), "/x%0d%0a" + forged.replace(" ", "%20"), "/x%1b[2J%1b[31m",
               "/v1/models/%0aFORGED%1b[31m", "/x\x80\xff"]
    for t in targets:
        r, _ = exchange(server.port, f"GET {t} HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer {KEY}\r\n\r\n"
                        .encode("latin-1"))
        assert r.status in (400, 404), r
    # Raw control bytes in the method or target never parse; in header values they are a 400 too.
    exchange(server.port, b"G\x1bT / HTTP/1.1\r\nHost: x\r\n\r\n")
    time.sleep(0.2)
    log = server.log()
    assert "\x1b" not in log and "\r" not in log
    assert not any(line.startswith("POST /v1/completions 200 prompt_tokens=1 completion_tokens=1 0.1ms")
                   for line in log.splitlines())
    assert "\\x80\\xff" in log  # bytes >= 0x80 are shown escaped
    assert "/x%0aPOST%20" in log  # percent escapes are logged as sent, not decoded


# ---------------------------------------------------------------------------------------------
# Streams: concurrency, disconnects
# ---------------------------------------------------------------------------------------------

def test_64_concurrent_streams_equal_the_same_requests_alone(server):
    prompts = ["The cat", "A river is", "A dog is", "To run is to", "Music means", "A house is", "Blue means",
               "A teacher is"]
    jobs = [(prompts[i % 8], 8 + (i // 8) % 2 * 8) for i in range(64)]  # 16 distinct requests, 4 times each

    def run(job):
        with Conn(server.port, timeout=60) as c:
            c.send(completion(*job, stream=True))
            r = c.read_response()
            assert r.status == 200 and r.headers["content-type"] == "text/event-stream", r
            return stream_text(r.body)

    alone = {job: run(job) for job in sorted(set(jobs))}
    results = [None] * len(jobs)
    errors = []

    def worker(i):
        try:
            results[i] = run(jobs[i])
        except Exception as e:  # noqa: BLE001 - reported below
            errors.append((i, repr(e)))

    threads = [threading.Thread(target=worker, args=(i,)) for i in range(64)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(120)
    assert not errors, errors[:3]
    assert all(not t.is_alive() for t in threads)
    for job, got in zip(jobs, results):
        assert got == alone[job], (job, got, alone[job])
    server.wait_metrics_zero()


def test_32_mid_stream_disconnects_leave_metrics_at_zero(server):
    before = server.metrics()["opchain_generation_tokens_total"]
    conns = []
    for i in range(32):
        c = Conn(server.port, timeout=30)
        c.send(completion("The cat", 400, stream=True, ignore_eos=True))
        conns.append(c)
    for c in conns:
        c.read_until(b"data: ", 2)
    assert server.metrics()["opchain_requests_in_flight"] > 0
    for i, c in enumerate(conns):
        if i % 2:  # half of them reset the connection instead of closing it
            c.sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
        c.sock.close()
    server.wait_metrics_zero(timeout=10)
    wait_connections(server, 1)  # only the /metrics request's own
    # Cancelled long before the 32 x 400 tokens they asked for.
    assert server.metrics()["opchain_generation_tokens_total"] - before < 32 * 400 / 2
    assert len(re.findall(r"POST /v1/completions 499 ", server.log())) >= 1


def test_a_disconnect_cancels_a_non_streaming_request(server):
    """No stream to write to, so the server learns of the disconnect from the socket itself."""
    before = server.metrics()["opchain_generation_tokens_total"]
    with Conn(server.port, timeout=30) as c:
        c.send(completion("The cat", 480, stream=False, ignore_eos=True, n=16))
        deadline = time.time() + 10
        while server.metrics()["opchain_kv_blocks_used"] == 0:  # generating
            assert time.time() < deadline
            time.sleep(0.01)
    server.wait_metrics_zero(timeout=5)
    assert server.metrics()["opchain_generation_tokens_total"] - before < 16 * 480 / 2


# ---------------------------------------------------------------------------------------------
# Long runs: resident memory, drain on SIGTERM
# ---------------------------------------------------------------------------------------------

def mixed_round(port: int, n: int) -> None:
    """n requests over 4 keep-alive connections: probes, models, errors of each kind, generations."""
    bad = [request("POST", "/v1/completions", b"{not json"), request("GET", "/nothing"),
           request("GET", "/v1/models", key="wrong"),
           request("GET", "/health", headers={f"X-H{i}": "v" for i in range(101)}),
           b"GET /health HTTP/1.1\r\nHost: x\r\nContent-Length: 1\r\nContent-Length: 2\r\n\r\n"]

    def worker(w: int):
        c = Conn(port, timeout=30)
        try:
            for i in range(w, n, 4):
                kind = i % 20
                if kind < 12:
                    c.send(request("GET", ("/health", "/metrics", "/v1/models")[kind % 3]))
                    assert c.read_response().status == 200
                elif kind < 14:
                    c.send(completion("The cat", 2, stream=kind == 13))
                    assert c.read_response().status == 200
                else:
                    # Errors that close the connection get a fresh one afterwards.
                    payload = bad[kind % len(bad)]
                    c.send(payload)
                    r = c.read_response()
                    assert r.status in (400, 401, 404, 431), r
                    if r.headers.get("connection") == "close":
                        c.sock.close()
                        c = Conn(port, timeout=30)
        finally:
            c.sock.close()

    threads = [threading.Thread(target=worker, args=(w,)) for w in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(120)
        assert not t.is_alive()


def test_resident_memory_is_flat_over_3_rounds_of_2000_mixed_requests(server):
    if "libasan" in Path(f"/proc/{server.proc.pid}/maps").read_text():
        # ASan keeps freed memory in quarantine, so resident memory grows by design; there the
        # leak check at exit (Server.close requires exit status 0) stands in for this one.
        pytest.skip("resident memory is not meaningful under AddressSanitizer")
    mixed_round(server.port, 2000)  # warm-up: allocator arenas, thread stacks, caches
    rss = []
    for _ in range(3):
        mixed_round(server.port, 2000)
        rss.append(server.rss_kib())
    server.wait_metrics_zero()
    growth = rss[-1] - rss[0]
    assert growth < 4 * 1024, f"RSS per round (KiB): {rss}"


def test_sigterm_drains_and_exits_0():
    s = Server("--max-batch", "1")
    try:
        streaming = Conn(s.port, timeout=30)
        streaming.send(completion("The cat", 60, stream=True, ignore_eos=True))
        streaming.read_until(b"data: ")
        idle = Conn(s.port)
        idle.send(request("GET", "/health"))
        assert idle.read_response().status == 200
        s.proc.send_signal(signal.SIGTERM)
        # The idle keep-alive connection is closed at once; the stream runs to its end.
        assert idle.closed_by_server(timeout=3)
        body = b""
        streaming.sock.settimeout(30)
        while True:
            try:
                d = streaming.sock.recv(65536)
            except ConnectionResetError:
                break
            if not d:
                break
            body += d
        full = streaming.buf + body
        assert b"data: [DONE]" in full and full.endswith(b"0\r\n\r\n"), full[-300:]
        assert s.proc.wait(20) == 0
        with pytest.raises(OSError):
            socket.create_connection(("127.0.0.1", s.port), timeout=2)
    finally:
        s.close()


def test_a_client_that_stops_reading_is_cut_off_after_the_write_timeout():
    """A client pipelines thousands of /metrics requests and reads nothing. Once the kernel's
    buffers are full the server's write stalls, and after --write-timeout it closes the connection
    (logged 499), while other clients are served throughout: no socket thread waits on a slow
    reader. (A stream does not show this on loopback: the kernel takes a whole 1.4 MB stream.)"""
    s = Server("--write-timeout", "1")
    try:
        sock = socket.socket()
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)  # before connect: a small window
        sock.settimeout(10)
        sock.connect(("127.0.0.1", s.port))
        payload = request("GET", "/metrics") * 5000  # ~25 MB of answers

        def send():
            try:
                sock.sendall(payload)
            except OSError:
                pass  # the server closed on us: expected

        sender = threading.Thread(target=send)
        sender.start()
        t0 = time.time()
        while "GET /metrics 499 " not in s.log():
            assert time.time() - t0 < 20, "the stalled connection was never closed"
            h0 = time.time()
            assert s.get("/health").status == 200
            assert time.time() - h0 < 1.0, "a stalled reader held up /health"
            time.sleep(0.2)
        sender.join(15)
        assert not sender.is_alive()
        sock.close()
    finally:
        s.close()
