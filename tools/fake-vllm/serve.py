#!/usr/bin/env python3
"""A stand-in for `vllm serve` in tests: it prints vLLM's real startup lines
(from a fixture, such as issue 15340's custom-allreduce warning), answers
`/health` with 503 until its load time has passed and 200 after, and serves
`/v1/completions`. Modes make it fail the ways real servers do.

    serve.py --port 8000 --log startup.txt [--load-s 2] [--mode normal|crash|hang|ignore-term|exit|no-metrics]
             [--max-batch N --token-ms MS --prefix-hit-pct P --spec-accept-pct A]
             [--cold-requests N --cold-factor F] [--regimes MS,MS --regime-file PATH]

As an engine: at most --max-batch requests run at once (others wait in its
queue), each taking --token-ms per token (the first included); `/metrics`
says so in vLLM's names (requests waiting and running, KV-cache use, tokens,
prefix-cache and speculative-decoding counters whose ratios are the given
percentages, TTFT as a histogram), counted since it started as vLLM's are.
A request with "stream": true gets its first token as soon as it is made.
--cold-requests: its first N requests take --cold-factor times as long (caches
and graphs not warm yet). --regimes: each start takes the next of these token
times (counted in --regime-file), as a server that lands in one stable regime
or another per restart.

crash: exits 1 after answering its first completion. hang: never becomes
ready. ignore-term: ignores SIGTERM (so only SIGKILL stops it). exit: exits 1
during startup. no-metrics: `/metrics` answers 404. The standard library only: it must run on any host."""

import argparse
import http.server
import json
import os
import signal
import sys
import threading
import time


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--log", required=True, help="startup lines to print (# lines skipped)")
    parser.add_argument("--load-s", type=float, default=1.0)
    parser.add_argument("--ready-file", help="write the time (epoch seconds) /health starts answering 200 here")
    parser.add_argument("--mode", default="normal",
                        choices=["normal", "crash", "hang", "ignore-term", "exit", "no-metrics"])
    parser.add_argument("--max-batch", type=int, default=0, help="0: no limit")
    parser.add_argument("--token-ms", type=float, default=0.0)
    parser.add_argument("--prefix-hit-pct", type=int, default=0)
    parser.add_argument("--spec-accept-pct", type=int, default=0)
    parser.add_argument("--cold-requests", type=int, default=0)
    parser.add_argument("--cold-factor", type=float, default=1.0)
    parser.add_argument("--regimes", default="", help="token times, one per start in turn")
    parser.add_argument("--regime-file", default="")
    args = parser.parse_args()
    if args.regimes:
        regimes = [float(r) for r in args.regimes.split(",")]
        try:
            with open(args.regime_file, encoding="utf-8") as f:
                starts = int(f.read().strip() or 0)
        except FileNotFoundError:
            starts = 0
        with open(args.regime_file, "w", encoding="utf-8") as f:
            f.write(f"{starts + 1}\n")
        args.token_ms = regimes[starts % len(regimes)]
    engine = Engine(args)
    if args.mode == "ignore-term":
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
    say(f"INFO api_server.py:1 vLLM API server (fake) pid={os.getpid()} NCCL_PROTO={os.environ.get('NCCL_PROTO', 'unset')}")
    started = time.monotonic()
    ready = threading.Event()

    class Handler(http.server.BaseHTTPRequestHandler):
        def do_GET(self):
            if self.path == "/health":
                self.answer(200 if ready.is_set() else 503, b"")
            elif self.path == "/metrics" and args.mode != "no-metrics":
                self.answer(200, engine.exposition().encode(), "text/plain; version=0.0.4")
            else:
                self.answer(404, b"not found")

        def do_POST(self):
            length = int(self.headers.get("Content-Length") or 0)
            request = json.loads(self.rfile.read(length) or b"{}")
            if self.path != "/v1/completions" or not ready.is_set():
                return self.answer(503 if self.path == "/v1/completions" else 404, b"")
            tokens = int(request.get("max_tokens", 16))
            if request.get("stream"):
                return self.stream(tokens)
            engine.generate(tokens)
            body = {"object": "text_completion", "model": "fake",
                    "choices": [{"index": 0, "text": " token" * tokens, "finish_reason": "length"}],
                    "usage": {"prompt_tokens": 8, "completion_tokens": tokens, "total_tokens": 8 + tokens}}
            self.answer(200, json.dumps(body).encode())
            if args.mode == "crash":
                say("ERROR engine.py:1 Engine core died unexpectedly (fake crash)")
                sys.stdout.flush()
                os._exit(1)

        def stream(self, tokens):
            self.close_connection = True
            self.send_response(200)
            self.send_header("Content-Type", "text/event-stream")
            self.send_header("Connection", "close")
            self.end_headers()
            chunk = lambda text: b"data: " + json.dumps({"choices": [{"index": 0, "text": text}]}).encode() + b"\n\n"
            engine.generate(tokens, first=lambda: (self.wfile.write(chunk(" token")), self.wfile.flush()))
            self.wfile.write(chunk(" token" * (tokens - 1)) + b"data: [DONE]\n\n")

        def answer(self, code, body, kind="application/json"):
            self.send_response(code)
            self.send_header("Content-Type", kind)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, fmt, *rest):
            if self.path in ("/health", "/metrics"):
                return  # polled often; vLLM's own access log is off for it too in practice
            say(f'INFO:     {self.client_address[0]} - "{self.requestline}" {rest[1] if len(rest) > 1 else ""}')

    server = http.server.ThreadingHTTPServer(("127.0.0.1", args.port), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    with open(args.log, encoding="utf-8") as startup:
        lines = [l.rstrip("\n") for l in startup if l.strip() and not l.startswith("#")]
    for line in lines:
        say(line)
        time.sleep(min(0.05, args.load_s / max(len(lines), 1)))
    if args.mode == "exit":
        say("ERROR fake: CUDA out of memory while loading weights (fake)")
        sys.exit(1)
    if args.mode != "hang":
        time.sleep(max(0.0, args.load_s - (time.monotonic() - started)))
        say(f"INFO model loaded in {time.monotonic() - started:.2f} s")
        say("INFO:     Application startup complete.")
        answering = time.time()
        ready.set()
        if args.ready_file:
            with open(args.ready_file, "w", encoding="utf-8") as f:
                f.write(f"{answering:.6f}\n")
    while True:
        time.sleep(3600)


# vLLM's own TTFT buckets (seconds).
TTFT_BOUNDS = [0.001, 0.005, 0.01, 0.02, 0.04, 0.06, 0.08, 0.1, 0.25, 0.5, 0.75, 1.0, 2.5, 5.0, 7.5, 10.0]


class Engine:
    """A batch of at most max_batch requests, a queue before it, and vLLM's counters."""

    def __init__(self, args):
        self.args = args
        self.lock = threading.Lock()
        self.slots = threading.Semaphore(args.max_batch) if args.max_batch > 0 else None
        self.waiting = self.running = 0
        self.tokens = self.prefix_queries = self.prefix_hits = self.drafted = self.accepted = 0
        self.ttft = [0] * (len(TTFT_BOUNDS) + 1)
        self.ttft_sum = 0.0
        self.served = 0

    def generate(self, tokens, first=None):
        arrived = time.monotonic()
        with self.lock:
            self.waiting += 1
        if self.slots:
            self.slots.acquire()
        with self.lock:
            self.waiting -= 1
            self.running += 1
            self.served += 1
            cold = self.served <= self.args.cold_requests
        token_s = self.args.token_ms / 1000.0 * (self.args.cold_factor if cold else 1.0)
        try:
            time.sleep(token_s)
            took = time.monotonic() - arrived
            with self.lock:
                self.ttft[next((i for i, b in enumerate(TTFT_BOUNDS) if took <= b), len(TTFT_BOUNDS))] += 1
                self.ttft_sum += took
            if first:
                first()
            time.sleep(token_s * (tokens - 1))
        finally:
            with self.lock:
                self.running -= 1
                self.tokens += tokens
                # 100 prompt tokens looked up, and 100 drafted, per request: the
                # counters' ratios are the percentages asked for.
                self.prefix_queries += 100
                self.prefix_hits += self.args.prefix_hit_pct
                self.drafted += 100
                self.accepted += self.args.spec_accept_pct
            if self.slots:
                self.slots.release()

    def exposition(self):
        m = 'model_name="fake"'
        with self.lock:
            batch = self.args.max_batch or 16
            lines = [
                "# HELP vllm:num_requests_waiting Number of requests waiting to be processed.",
                "# TYPE vllm:num_requests_waiting gauge",
                f"vllm:num_requests_waiting{{{m}}} {self.waiting}.0",
                "# TYPE vllm:num_requests_running gauge",
                f"vllm:num_requests_running{{{m}}} {self.running}.0",
                "# TYPE vllm:kv_cache_usage_perc gauge",
                f"vllm:kv_cache_usage_perc{{{m}}} {min(self.running / batch, 1.0)}",
                "# TYPE vllm:num_preemptions_total counter",
                f"vllm:num_preemptions_total{{{m}}} 0.0",
                "# TYPE vllm:prefix_cache_queries_total counter",
                f"vllm:prefix_cache_queries_total{{{m}}} {self.prefix_queries}.0",
                "# TYPE vllm:prefix_cache_hits_total counter",
                f"vllm:prefix_cache_hits_total{{{m}}} {self.prefix_hits}.0",
                "# TYPE vllm:spec_decode_num_draft_tokens_total counter",
                f"vllm:spec_decode_num_draft_tokens_total{{{m}}} {self.drafted}.0",
                "# TYPE vllm:spec_decode_num_accepted_tokens_total counter",
                f"vllm:spec_decode_num_accepted_tokens_total{{{m}}} {self.accepted}.0",
                "# TYPE vllm:generation_tokens_total counter",
                f"vllm:generation_tokens_total{{{m}}} {self.tokens}.0",
                "# HELP vllm:time_to_first_token_seconds Histogram of time to first token in seconds.",
                "# TYPE vllm:time_to_first_token_seconds histogram",
            ]
            cumulative = 0
            for bound, count in zip(TTFT_BOUNDS + ["+Inf"], self.ttft):
                cumulative += count
                lines.append(f'vllm:time_to_first_token_seconds_bucket{{le="{bound}",{m}}} {cumulative}.0')
            lines.append(f"vllm:time_to_first_token_seconds_sum{{{m}}} {self.ttft_sum}")
            lines.append(f"vllm:time_to_first_token_seconds_count{{{m}}} {cumulative}.0")
        return "\n".join(lines) + "\n"


def say(line):
    print(line, flush=True)


if __name__ == "__main__":
    main()
