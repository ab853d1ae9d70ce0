#!/usr/bin/env python3
"""A stand-in for `vllm serve` in tests: it prints vLLM's real startup lines
(from a fixture, such as issue 15340's custom-allreduce warning), answers
`/health` with 503 until its load time has passed and 200 after, and serves
`/v1/completions`. Modes make it fail the ways real servers do.

    serve.py --port 8000 --log startup.txt [--load-s 2] [--mode normal|crash|hang|ignore-term|exit]

crash: exits 1 after answering its first completion. hang: never becomes
ready. ignore-term: ignores SIGTERM (so only SIGKILL stops it). exit: exits 1
during startup. The standard library only: it must run on any host."""

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
    parser.add_argument("--mode", default="normal", choices=["normal", "crash", "hang", "ignore-term", "exit"])
    args = parser.parse_args()
    if args.mode == "ignore-term":
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
    say(f"INFO api_server.py:1 vLLM API server (fake) pid={os.getpid()} NCCL_PROTO={os.environ.get('NCCL_PROTO', 'unset')}")
    started = time.monotonic()
    ready = threading.Event()

    class Handler(http.server.BaseHTTPRequestHandler):
        def do_GET(self):
            if self.path == "/health":
                self.answer(200 if ready.is_set() else 503, b"")
            else:
                self.answer(404, b"not found")

        def do_POST(self):
            length = int(self.headers.get("Content-Length") or 0)
            request = json.loads(self.rfile.read(length) or b"{}")
            if self.path != "/v1/completions" or not ready.is_set():
                return self.answer(503 if self.path == "/v1/completions" else 404, b"")
            tokens = int(request.get("max_tokens", 16))
            body = {"object": "text_completion", "model": "fake",
                    "choices": [{"index": 0, "text": " token" * tokens, "finish_reason": "length"}],
                    "usage": {"prompt_tokens": 8, "completion_tokens": tokens, "total_tokens": 8 + tokens}}
            self.answer(200, json.dumps(body).encode())
            if args.mode == "crash":
                say("ERROR engine.py:1 Engine core died unexpectedly (fake crash)")
                sys.stdout.flush()
                os._exit(1)

        def answer(self, code, body):
            self.send_response(code)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, fmt, *rest):
            if self.path == "/health":
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


def say(line):
    print(line, flush=True)


if __name__ == "__main__":
    main()
