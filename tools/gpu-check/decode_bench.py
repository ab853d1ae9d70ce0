"""The client beside decode_server.py, standing in for `vllm bench serve
--save-result`: sends requests one after another, prints a summary and saves
result.json in $SLEUTH_RUN_DIR with vLLM's field names (ms, tok/s).

    decode_bench.py --port 8000 [--requests 8] [--tokens 32]
"""
import argparse
import json
import os
import statistics
import time
import urllib.request


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--port", type=int, required=True)
    p.add_argument("--requests", type=int, default=8)
    p.add_argument("--tokens", type=int, default=32)
    args = p.parse_args()
    ttfts, latencies, tokens = [], [], 0
    started = time.perf_counter()
    for _ in range(args.requests):
        body = json.dumps({"model": "decode", "prompt": "x", "max_tokens": args.tokens}).encode()
        request = urllib.request.Request(f"http://127.0.0.1:{args.port}/v1/completions", data=body,
                                         headers={"Content-Type": "application/json"})
        sent = time.perf_counter()
        with urllib.request.urlopen(request, timeout=120) as answer:
            result = json.load(answer)
        latencies.append(time.perf_counter() - sent)
        ttfts.append(result["ttft_s"])
        tokens += result["usage"]["completion_tokens"]
    duration = time.perf_counter() - started
    ms = lambda xs: [x * 1000 for x in xs]
    tpot = [(l - t) / max(args.tokens - 1, 1) for l, t in zip(latencies, ttfts)]
    saved = {
        "backend": "vllm", "date": time.strftime("%Y%m%d-%H%M%S"), "num_prompts": args.requests,
        "duration": duration, "completed": args.requests, "total_output_tokens": tokens,
        "request_throughput": args.requests / duration, "output_throughput": tokens / duration,
        "mean_ttft_ms": statistics.mean(ms(ttfts)), "median_ttft_ms": statistics.median(ms(ttfts)),
        "mean_tpot_ms": statistics.mean(ms(tpot)), "median_tpot_ms": statistics.median(ms(tpot)),
        "mean_e2el_ms": statistics.mean(ms(latencies)),
    }
    print("============ Serving Benchmark Result ============")
    print(f"Successful requests:                     {args.requests}")
    print(f"Benchmark duration (s):                  {duration:.2f}")
    print(f"Output token throughput (tok/s):         {saved['output_throughput']:.2f}")
    print("==================================================")
    with open(os.path.join(os.environ.get("SLEUTH_RUN_DIR", "."), "result.json"), "w") as f:
        json.dump(saved, f)


if __name__ == "__main__":
    main()
