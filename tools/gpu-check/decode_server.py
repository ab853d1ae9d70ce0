"""A small decode server on the GPU, standing in for `vllm serve` where vLLM
cannot be installed: it loads 16 bf16 layers (6.4 GB, as decode_loop.py) plus a
KV-cache-sized buffer (`--cache-gb`), logs like a server, answers `/health`
with 503 until loaded and 200 after, and serves `/v1/completions` by running
one decode step per token at its `--batch`. Its GPU memory is held until the
process ends, which is what Sleuth's stop must free.

    decode_server.py --port 8000 --batch 8 [--cache-gb 20]
"""
import argparse
import http.server
import json
import os
import threading
import time

import torch

LAYERS, DIM = 16, 14142


def say(line):
    print(f"INFO {time.strftime('%m-%d %H:%M:%S')} [decode_server.py] {line}", flush=True)


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--port", type=int, required=True)
    p.add_argument("--batch", type=int, default=1)
    p.add_argument("--cache-gb", type=float, default=20.0)
    args = p.parse_args()
    ready = threading.Event()
    lock = threading.Lock()
    model = {}

    class Handler(http.server.BaseHTTPRequestHandler):
        def do_GET(self):
            if self.path == "/health":
                self.answer(200 if ready.is_set() else 503, b"")
            else:
                self.answer(404, b"")

        def do_POST(self):
            length = int(self.headers.get("Content-Length") or 0)
            request = json.loads(self.rfile.read(length) or b"{}")
            if self.path != "/v1/completions" or not ready.is_set():
                return self.answer(503, b"")
            tokens = int(request.get("max_tokens", 32))
            with lock:  # one batch at a time, as one engine step loop
                started = time.perf_counter()
                x = model["x"]
                first = None
                for _ in range(tokens):
                    for w in model["weights"]:
                        x = torch.tanh(x @ w)
                    if first is None:
                        torch.cuda.synchronize()
                        first = time.perf_counter() - started
                torch.cuda.synchronize()
                took = time.perf_counter() - started
            body = {"usage": {"completion_tokens": tokens * args.batch}, "ttft_s": first, "latency_s": took}
            self.answer(200, json.dumps(body).encode())

        def answer(self, code, body):
            self.send_response(code)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, fmt, *rest):
            if self.path != "/health":
                say(f'{self.client_address[0]} "{self.requestline}" {rest[1] if len(rest) > 1 else ""}')

    server = http.server.ThreadingHTTPServer(("127.0.0.1", args.port), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    say(f"pid={os.getpid()} batch={args.batch} NCCL_PROTO={os.environ.get('NCCL_PROTO', 'unset')} "
        f"device={torch.cuda.get_device_name()}")
    loading = time.perf_counter()
    torch.manual_seed(0)
    model["weights"] = [torch.randn(DIM, DIM, dtype=torch.bfloat16, device="cuda") * 0.01 for _ in range(LAYERS)]
    model["cache"] = torch.empty(int(args.cache_gb * 1e9), dtype=torch.uint8, device="cuda")
    model["x"] = torch.randn(args.batch, DIM, dtype=torch.bfloat16, device="cuda")
    for w in model["weights"]:  # warm the kernels
        torch.tanh(model["x"] @ w)
    torch.cuda.synchronize()
    held = torch.cuda.memory_allocated() / 2**30
    say(f"model loaded in {time.perf_counter() - loading:.2f} s; {held:.1f} GiB on the GPU")
    ready.set()
    say("Application startup complete.")
    while True:
        time.sleep(3600)


if __name__ == "__main__":
    main()
