"""On a lent GPU machine: a PyTorch profiler trace of a decode loop whose
every layer calls torch.distributed.all_reduce twice (after attention and
after the MLP, as tensor-parallel decoders do), world size 1 on one GPU.

Writes $OUT/decode_trace.json.gz (Kineto's chrome trace, what
`torch.profiler.profile(...).export_chrome_trace` writes, gzip'ed) and
$OUT/decode_trace.txt (what the loop did: layers, steps, calls per step,
and the top of `key_averages().table()` of the same profile) and
$OUT/decode_trace_table.txt (the whole table, every row, as a user saves it). Sleuth's reader must find
LAYERS * 2 collective calls per step in the trace (`sleuth report FILE`).

LAYERS (default 24) and FUSED=1 change the loop: fused, each layer makes one
all_reduce of its attention and MLP outputs together (a `torch.cat` copy,
then one call), so a profile diff shows half the collective calls and a copy
kernel more. NAME (default decode_trace) names the files.
"""
import gzip
import os
import shutil
import time

import torch
import torch.distributed as dist

LAYERS = int(os.environ.get("LAYERS", "24"))
FUSED = os.environ.get("FUSED") == "1"
NAME = os.environ.get("NAME", "decode_trace")
HIDDEN = 4096
BATCH = 8
OUT = os.environ.get("OUT", "/tmp")

os.environ.setdefault("MASTER_ADDR", "127.0.0.1")
os.environ.setdefault("MASTER_PORT", "29511")
dist.init_process_group("nccl", rank=0, world_size=1)
device = torch.device("cuda", 0)
torch.cuda.set_device(device)

weights = [
    (torch.randn(HIDDEN, HIDDEN, device=device, dtype=torch.bfloat16) * 0.01,
     torch.randn(HIDDEN, HIDDEN, device=device, dtype=torch.bfloat16) * 0.01)
    for _ in range(LAYERS)
]


def decode_step(x):
    if FUSED:
        return fused_step(x)
    for attn, mlp in weights:
        h = torch.nn.functional.scaled_dot_product_attention(x[:, None, None, :], x[:, None, None, :], x[:, None, None, :])
        x = x + (h[:, 0, 0, :] @ attn)
        dist.all_reduce(x)
        x = x + torch.nn.functional.silu(x @ mlp)
        dist.all_reduce(x)
    return x.argmax(dim=-1)


def fused_step(x):
    # Both partial sums reduced in one call: what a fused all-reduce saves.
    for attn, mlp in weights:
        h = torch.nn.functional.scaled_dot_product_attention(x[:, None, None, :], x[:, None, None, :], x[:, None, None, :])
        a = h[:, 0, 0, :] @ attn
        m = torch.nn.functional.silu((x + a) @ mlp)
        both = torch.cat([a, m])
        dist.all_reduce(both)
        a, m = both.split(x.shape[0])
        x = x + a + m
    return x.argmax(dim=-1)


x = torch.randn(BATCH, HIDDEN, device=device, dtype=torch.bfloat16)
for _ in range(3):
    decode_step(x)
torch.cuda.synchronize()

raw = os.path.join(OUT, NAME + ".json")
schedule = torch.profiler.schedule(wait=1, warmup=2, active=5, repeat=1)
activities = [torch.profiler.ProfilerActivity.CPU, torch.profiler.ProfilerActivity.CUDA]
started = time.time()
with torch.profiler.profile(activities=activities, schedule=schedule,
                            on_trace_ready=lambda p: p.export_chrome_trace(raw)) as prof:
    for _ in range(8):
        token = decode_step(x)
        torch.cuda.synchronize()
        prof.step()
elapsed = time.time() - started

with open(raw, "rb") as src, gzip.open(raw + ".gz", "wb") as dst:
    shutil.copyfileobj(src, dst)
size = os.path.getsize(raw)
os.remove(raw)
table = prof.key_averages().table(sort_by="cuda_time_total", row_limit=15)
with open(os.path.join(OUT, NAME + ".txt"), "w") as f:
    f.write(f"torch {torch.__version__}, {torch.cuda.get_device_name(0)}, NCCL {torch.cuda.nccl.version()}\n")
    per_layer = 1 if FUSED else 2
    f.write(f"layers {LAYERS}, all_reduce per layer {per_layer}{' (fused)' if FUSED else ''}, expected calls per step {LAYERS * per_layer}\n")
    f.write(f"profiled steps 5 (schedule wait 1, warmup 2, active 5), loop {elapsed:.2f} s, trace {size} bytes\n\n")
    f.write(table)
with open(os.path.join(OUT, NAME + "_table.txt"), "w") as f:
    f.write(prof.key_averages().table(sort_by="self_cuda_time_total", row_limit=-1))
print(open(os.path.join(OUT, NAME + ".txt")).read())
dist.destroy_process_group()
