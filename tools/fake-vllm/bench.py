#!/usr/bin/env python3
"""A stand-in for `vllm bench serve --save-result`: sends requests to the
server, prints a summary and saves a result file copied from a real one (a
line of a `--save-result` JSONL fixture), as vLLM writes it, so what Sleuth
reads is what the real tool writes.

    bench.py --port 8000 --result-from results.json [--line 0] [--requests 4] [--out result.json]"""

import argparse
import json
import os
import time
import urllib.request


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--result-from", required=True)
    parser.add_argument("--line", type=int, default=0)
    parser.add_argument("--requests", type=int, default=4)
    parser.add_argument("--out", default="result.json")
    parser.add_argument("--pause-s", type=float, default=0.0, help="between requests")
    args = parser.parse_args()
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


if __name__ == "__main__":
    main()
