"""A memory-bound decode loop: 16 bf16 layers of 400 MB (6.4 GB of weights),
each token a matrix-vector product per layer, so the GPU reads every weight
once per step. Prints a line every half second,

    batch=B decode X tok/s, weight reads Y GB/s

and at the end `decode mean X tok/s over N steps` (what Sleuth's extractor
reads). Usage: decode_loop.py --batch 8 --seconds 8
"""
import argparse
import time

import torch

LAYERS, DIM = 16, 14142  # 16 × 14142² × 2 bytes ≈ 6.4 GB


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--batch", type=int, default=1)
    p.add_argument("--seconds", type=float, default=8.0)
    args = p.parse_args()
    torch.manual_seed(0)
    weights = [torch.randn(DIM, DIM, dtype=torch.bfloat16, device="cuda") * 0.01 for _ in range(LAYERS)]
    weight_bytes = sum(w.numel() * w.element_size() for w in weights)
    x = torch.randn(args.batch, DIM, dtype=torch.bfloat16, device="cuda")

    def step(h):
        for w in weights:
            h = torch.tanh(h @ w)
        return h

    for _ in range(3):  # warm the kernels
        step(x)
    torch.cuda.synchronize()
    start = last = time.perf_counter()
    steps = window = 0
    while time.perf_counter() - start < args.seconds:
        x = step(x)
        steps += 1
        window += 1
        now = time.perf_counter()
        if now - last >= 0.5:
            torch.cuda.synchronize()
            now = time.perf_counter()
            rate = window / (now - last)
            print(f"{time.strftime('%H:%M:%S')} batch={args.batch} decode {rate * args.batch:.1f} tok/s, "
                  f"weight reads {rate * weight_bytes / 1e9:.0f} GB/s", flush=True)
            last, window = now, 0
    torch.cuda.synchronize()
    elapsed = time.perf_counter() - start
    print(f"decode mean {steps * args.batch / elapsed:.1f} tok/s over {steps} steps "
          f"({weight_bytes / 1e9:.2f} GB of weights, batch {args.batch})", flush=True)


if __name__ == "__main__":
    main()
