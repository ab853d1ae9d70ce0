#!/usr/bin/env python3
"""A stand-in for `vllm bench serve --save-result`: sends requests to the
server, prints a summary and saves a result file copied from a real one (a
line of a `--save-result` JSONL fixture), as vLLM writes it, so what Sleuth
reads is what the real tool writes.

    bench.py --port 8000 --result-from results.json [--line 0] [--requests 4] [--out result.json]
             [--measure --concurrency C --max-tokens N [--request-rate R [--send-cost-s S]]]

--measure: requests streamed, C at a time, and what they measured written
over the copied line's summary (throughput, TTFT mean/median/p99, tokens) and
per-request `ttfts` and `start_times`, as `--save-detailed` writes them.
--request-rate: one sender sends a request every 1/R s (its `request_rate`
saved as R), each on its own thread; --send-cost-s makes each send take that
long first (a load generator out of CPU: it cannot keep its schedule).
--burn-s keeps the process on a whole core that long after its requests (a
generator pinned at 100 % of a core); --idle-s sleeps that long instead."""

import argparse
import concurrent.futures
import json
import os
import time
import urllib.request


def streamed(port, max_tokens):
    """One streamed request: (start, ttft s, latency s, tokens)."""
    request = urllib.request.Request(
        f"http://127.0.0.1:{port}/v1/completions",
        data=json.dumps({"model": "fake", "prompt": "hello", "max_tokens": max_tokens, "stream": True}).encode(),
        headers={"Content-Type": "application/json"},
    )
    start = time.perf_counter()
    ttft = None
    with urllib.request.urlopen(request, timeout=60) as answer:
        for line in answer:
            if ttft is None and line.startswith(b"data: "):
                ttft = time.perf_counter() - start
    return start, ttft, time.perf_counter() - start, max_tokens


def percentile(values, p):
    ordered = sorted(values)
    rank = (len(ordered) - 1) * p / 100.0
    low = int(rank)
    high = min(low + 1, len(ordered) - 1)
    return ordered[low] + (ordered[high] - ordered[low]) * (rank - low)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--result-from", required=True)
    parser.add_argument("--line", type=int, default=0)
    parser.add_argument("--requests", type=int, default=4)
    parser.add_argument("--out", default="result.json")
    parser.add_argument("--pause-s", type=float, default=0.0, help="between requests")
    parser.add_argument("--measure", action="store_true")
    parser.add_argument("--concurrency", type=int, default=1)
    parser.add_argument("--max-tokens", type=int, default=16)
    parser.add_argument("--request-rate", type=float, default=0.0, help="0: as fast as the concurrency allows")
    parser.add_argument("--send-cost-s", type=float, default=0.0)
    parser.add_argument("--burn-s", type=float, default=0.0, help="then spin on a core this long")
    parser.add_argument("--idle-s", type=float, default=0.0, help="then sleep this long")
    args = parser.parse_args()
    if args.measure:
        return measure(args)
    started = time.monotonic()
    for i in range(args.requests):
        request = urllib.request.Request(
            f"http://127.0.0.1:{args.port}/v1/completions",
            data=json.dumps({"model": "fake", "prompt": "hello", "max_tokens": 16}).encode(),
            headers={"Content-Type": "application/json"},
        )
        with urllib.request.urlopen(request, timeout=10) as answer:
            json.load(answer)
        print(f"request {i + 1}/{args.requests} done", flush=True)
        time.sleep(args.pause_s)
    with open(args.result_from, encoding="utf-8") as results:
        line = [l for l in results if l.strip()][args.line]
    result = json.loads(line)
    print("============ Serving Benchmark Result ============")
    print(f"Successful requests:                     {args.requests}")
    print(f"Benchmark duration (s):                  {time.monotonic() - started:.2f}")
    print(f"Output token throughput (tok/s):         {result['output_throughput']:.2f}")
    print("==================================================")
    out = os.path.join(os.environ.get("SLEUTH_RUN_DIR", "."), args.out)
    with open(out, "w", encoding="utf-8") as saved:
        saved.write(line.strip() + "\n")


def measure(args):
    started = time.perf_counter()
    if args.request_rate > 0:
        with concurrent.futures.ThreadPoolExecutor(args.requests) as pool:
            sent = []
            for i in range(args.requests):
                time.sleep(max(0.0, started + i / args.request_rate - time.perf_counter()))
                time.sleep(args.send_cost_s)
                sent.append(pool.submit(streamed, args.port, args.max_tokens))
            done = [f.result() for f in sent]
    else:
        with concurrent.futures.ThreadPoolExecutor(args.concurrency) as pool:
            done = list(pool.map(lambda _: streamed(args.port, args.max_tokens), range(args.requests)))
    duration = time.perf_counter() - started
    with open(args.result_from, encoding="utf-8") as results:
        result = json.loads([l for l in results if l.strip()][args.line])
    ttfts = [d[1] for d in done]
    tokens = sum(d[3] for d in done)
    ms = [t * 1000 for t in ttfts]
    result.update({
        "duration": duration, "completed": len(done), "total_output_tokens": tokens,
        "request_throughput": len(done) / duration, "output_throughput": tokens / duration,
        "mean_ttft_ms": sum(ms) / len(ms), "median_ttft_ms": percentile(ms, 50), "p99_ttft_ms": percentile(ms, 99),
        "ttfts": ttfts, "start_times": [d[0] for d in done],
    })
    if args.request_rate > 0:
        result["request_rate"] = args.request_rate
    for stale in ("itls", "generated_texts", "input_lens", "output_lens", "errors"):
        result.pop(stale, None)
    print("============ Serving Benchmark Result ============")
    print(f"Successful requests:                     {len(done)}")
    print(f"Benchmark duration (s):                  {duration:.2f}")
    print(f"Total generated tokens:                  {tokens}")
    print(f"Output token throughput (tok/s):         {tokens / duration:.2f}")
    print(f"P99 TTFT (ms):                           {percentile(ms, 99):.2f}")
    print("==================================================")
    out = os.path.join(os.environ.get("SLEUTH_RUN_DIR", "."), args.out)
    with open(out, "w", encoding="utf-8") as saved:
        saved.write(json.dumps(result) + "\n")
    spin_until = time.perf_counter() + args.burn_s
    while time.perf_counter() < spin_until:
        pass
    time.sleep(args.idle_s)


if __name__ == "__main__":
    main()
