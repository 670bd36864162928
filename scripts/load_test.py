#!/usr/bin/env python3
"""Bounded load test for an OpenAI-compatible server (`opchain serve`, vLLM, ...).

For each concurrency level it sends a fixed number of streaming chat (or completions) requests from
that many client threads and reports requests/s, output tokens/s, time to first token (TTFT) and
inter-token latency (ITL: the gap between consecutive streamed tokens, taken per SSE chunk and
divided evenly when a chunk carries several tokens) at p50/p90/p99. A total time limit bounds the
whole run: once it passes, no new request starts and requests still streaming are cut off (and
reported as such). Standard library only.

    scripts/load_test.py --url http://127.0.0.1:8000 --concurrency 1,8,32 --requests 64 --max-tokens 64
"""
from __future__ import annotations

import argparse
import http.client
import json
import os
import queue
import statistics
import sys
import threading
import time
import urllib.parse
from dataclasses import dataclass, field

PROMPTS = [
    "The cat", "A river is", "A dog is", "To run is to", "Music means", "A house is", "Blue means", "A teacher is",
    "To write is to", "A mountain is", "Quickly means", "A city is", "To sing is to", "A tree is", "Bright means",
    "A ship is",
]


@dataclass
class Result:
    ok: bool
    error: str = ""
    ttft: float | None = None
    itls: list[float] = field(default_factory=list)
    completion_tokens: int = 0
    latency: float = 0.0
    cut: bool = False


def percentile(values: list[float], p: float) -> float:
    if not values:
        return float("nan")
    s = sorted(values)
    k = (len(s) - 1) * p / 100.0
    lo, hi = int(k), min(int(k) + 1, len(s) - 1)
    return s[lo] + (s[hi] - s[lo]) * (k - lo)


class Target:
    def __init__(self, url: str, api_key: str | None):
        u = urllib.parse.urlparse(url)
        if u.scheme != "http" or not u.hostname:
            raise SystemExit(f"--url must be http://host:port, got {url}")
        self.host, self.port = u.hostname, u.port or 80
        self.prefix = u.path.rstrip("/")
        if self.prefix.endswith("/v1"):
            self.prefix = self.prefix[: -len("/v1")]
        self.headers = {"Content-Type": "application/json"}
        if api_key:
            self.headers["Authorization"] = f"Bearer {api_key}"

    def get_json(self, path: str) -> dict:
        conn = http.client.HTTPConnection(self.host, self.port, timeout=30)
        conn.request("GET", self.prefix + path, headers=self.headers)
        resp = conn.getresponse()
        body = resp.read()
        conn.close()
        if resp.status != 200:
            raise SystemExit(f"GET {path}: HTTP {resp.status}: {body[:300]!r}")
        return json.loads(body)


def one_request(target: Target, body: dict, path: str, deadline: float) -> Result:
    start = time.perf_counter()
    remaining = deadline - time.time()
    if remaining <= 0:
        return Result(ok=False, error="time limit", cut=True)
    conn = http.client.HTTPConnection(target.host, target.port, timeout=max(remaining, 0.1))
    try:
        conn.request("POST", target.prefix + path, body=json.dumps(body), headers=target.headers)
        resp = conn.getresponse()
        if resp.status != 200:
            return Result(ok=False, error=f"HTTP {resp.status}: {resp.read()[:200]!r}")
        r = Result(ok=True)
        last = None
        streamed_tokens = 0
        while True:
            line = resp.readline()
            if not line:
                break
            line = line.strip()
            if not line.startswith(b"data: "):
                continue
            data = line[len(b"data: "):]
            if data == b"[DONE]":
                break
            event = json.loads(data)
            if "error" in event:
                return Result(ok=False, error=str(event["error"].get("message")))
            if event.get("usage"):
                r.completion_tokens = event["usage"]["completion_tokens"]
            for choice in event.get("choices", []):
                text = choice.get("text") if "text" in choice else (choice.get("delta") or {}).get("content")
                if not text:
                    continue
                now = time.perf_counter()
                if r.ttft is None:
                    r.ttft = now - start
                elif last is not None:
                    # One chunk may carry several tokens when the client fell behind; we cannot see
                    # token boundaries in text, so the gap counts once (a conservative ITL).
                    r.itls.append(now - last)
                last = now
                streamed_tokens += 1
        r.latency = time.perf_counter() - start
        if not r.completion_tokens:
            r.completion_tokens = streamed_tokens
        return r
    except (TimeoutError, OSError) as e:
        cut = time.time() >= deadline
        return Result(ok=False, error="cut by the time limit" if cut else f"{type(e).__name__}: {e}", cut=cut)
    finally:
        conn.close()


def run_level(target: Target, args, model: str, concurrency: int, deadline: float) -> dict:
    jobs: queue.Queue[int] = queue.Queue()
    for i in range(args.requests):
        jobs.put(i)
    results: list[Result] = []
    lock = threading.Lock()

    def body_for(i: int) -> tuple[str, dict]:
        prompt = PROMPTS[i % len(PROMPTS)]
        common = {"model": model, "max_tokens": args.max_tokens, "temperature": args.temperature, "stream": True,
                  "stream_options": {"include_usage": True}}
        if args.ignore_eos:
            common["ignore_eos"] = True
        if args.endpoint == "chat":
            return "/v1/chat/completions", {**common, "messages": [{"role": "user", "content": prompt}]}
        return "/v1/completions", {**common, "prompt": prompt}

    def worker():
        while time.time() < deadline:
            try:
                i = jobs.get_nowait()
            except queue.Empty:
                return
            path, body = body_for(i)
            r = one_request(target, body, path, deadline)
            with lock:
                results.append(r)

    t0 = time.perf_counter()
    threads = [threading.Thread(target=worker, daemon=True) for _ in range(concurrency)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    wall = time.perf_counter() - t0

    ok = [r for r in results if r.ok]
    ttfts = [r.ttft for r in ok if r.ttft is not None]
    itls = [x for r in ok for x in r.itls]
    tokens = sum(r.completion_tokens for r in ok)
    return {
        "concurrency": concurrency,
        "requests": len(results),
        "ok": len(ok),
        "errors": len([r for r in results if not r.ok and not r.cut]),
        "cut": len([r for r in results if r.cut]) + jobs.qsize(),
        "first_error": next((r.error for r in results if not r.ok and not r.cut), ""),
        "wall_s": wall,
        "requests_per_s": len(ok) / wall if wall > 0 else float("nan"),
        "output_tokens_per_s": tokens / wall if wall > 0 else float("nan"),
        "mean_completion_tokens": statistics.mean(r.completion_tokens for r in ok) if ok else 0,
        "ttft_ms": {p: percentile(ttfts, p) * 1000 for p in (50, 90, 99)},
        "itl_ms": {p: percentile(itls, p) * 1000 for p in (50, 90, 99)},
        "latency_ms_p50": percentile([r.latency for r in ok], 50) * 1000,
    }


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--url", default="http://127.0.0.1:8000", help="server base URL (with or without /v1)")
    ap.add_argument("--model", help="model name (default: the first one /v1/models lists)")
    ap.add_argument("--api-key", default=os.environ.get("OPENAI_API_KEY"))
    ap.add_argument("--concurrency", default="1,8,32", help="comma-separated concurrent streams per level")
    ap.add_argument("--requests", type=int, default=64, help="requests per level")
    ap.add_argument("--max-tokens", type=int, default=64)
    ap.add_argument("--temperature", type=float, default=0.0)
    ap.add_argument("--ignore-eos", action="store_true", help="always generate max_tokens (vLLM/opchain extension)")
    ap.add_argument("--endpoint", choices=["chat", "completions"], default="chat")
    ap.add_argument("--time-limit", type=float, default=300.0, help="seconds for the whole run, all levels")
    ap.add_argument("--json", action="store_true", help="print one JSON object per level instead of a table")
    args = ap.parse_args()

    target = Target(args.url, args.api_key)
    model = args.model or target.get_json("/v1/models")["data"][0]["id"]
    levels = [int(x) for x in args.concurrency.split(",") if x.strip()]
    deadline = time.time() + args.time_limit

    # One request first so that lazy start-up work does not land in the first level's numbers.
    one_request(target, {"model": model, "prompt": PROMPTS[0], "max_tokens": 4, "stream": True},
                "/v1/completions", deadline)

    if not args.json:
        print(f"{args.url} model={model} endpoint={args.endpoint} requests/level={args.requests} "
              f"max_tokens={args.max_tokens} temperature={args.temperature}")
        print(f"{'conc':>4} {'ok':>5} {'err':>4} {'cut':>4} {'req/s':>7} {'tok/s':>8} "
              f"{'TTFT ms p50/p90/p99':>22} {'ITL ms p50/p90/p99':>22}")
    for c in levels:
        if time.time() >= deadline:
            print(f"time limit reached before concurrency {c}", file=sys.stderr)
            break
        s = run_level(target, args, model, c, deadline)
        if args.json:
            print(json.dumps(s))
            continue
        ttft = "/".join(f"{s['ttft_ms'][p]:.1f}" for p in (50, 90, 99))
        itl = "/".join(f"{s['itl_ms'][p]:.2f}" for p in (50, 90, 99))
        print(f"{c:>4} {s['ok']:>5} {s['errors']:>4} {s['cut']:>4} {s['requests_per_s']:>7.2f} "
              f"{s['output_tokens_per_s']:>8.1f} {ttft:>22} {itl:>22}")
        if s["first_error"]:
            print(f"     first error: {s['first_error']}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
