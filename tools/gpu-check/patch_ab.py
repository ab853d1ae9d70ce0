"""On a lent GPU machine, through Sleuth's API (run by shared/tools/gpu-host/run.sh,
which sets SLEUTH_URL, SLEUTH_TOKEN, GPU_HOST and GPU_PYTHON): the seed story's
last move (#52) with a real torch engine. The engine imports `gate.py`, whose
gate takes the slow path (fp32 matmuls) and logs the seed's line; a patch step
lifts the gate (bf16); a sweep `@patch = none, P` with a warm-up and 3 repeats
per arm, interleaved, measures both; a hypothesis judges them. Checks the file's
sha256 before and after, the log line in every baseline run and no patched one,
and writes what Sleuth said to $OUT/patch_ab.json.
"""
import hashlib
import json
import os
import textwrap

from sweep import call, wait  # the same client the other checks use (same folder)

HOST, PY = os.environ["GPU_HOST"], os.environ["GPU_PYTHON"]
OUT = os.environ.get("OUT", "/tmp")
DIR = "/tmp/sleuth-patch-ab/engine"

GATE = textwrap.dedent('''\
    # Stands in for vLLM's custom allreduce gate: the slow path unless lifted.
    FULL_PRECISION = True


    def dtype(torch):
        if FULL_PRECISION:
            print("Custom allreduce is disabled because it's not supported on more than two PCIe-only GPUs", flush=True)
            return torch.float32
        return torch.bfloat16
''')

ENGINE = textwrap.dedent('''\
    import sys, time
    sys.path.insert(0, sys.argv[1])
    import torch, gate
    dt = gate.dtype(torch)
    w = [torch.randn(8192, 8192, dtype=dt, device="cuda") * 0.01 for _ in range(8)]
    x = torch.randn(64, 8192, dtype=dt, device="cuda")
    def step(h):
        for m in w:
            h = torch.tanh(h @ m)
        return h
    for _ in range(3):
        step(x)
    torch.cuda.synchronize()
    start, steps = time.perf_counter(), 0
    while time.perf_counter() - start < 4:
        step(x); steps += 1
        torch.cuda.synchronize()
    tps = steps * x.shape[0] / (time.perf_counter() - start)
    print("============ Serving Benchmark Result ============")
    print("Output token throughput (tok/s):          %.2f" % tps)
    print("==================================================")
''')


def sha(path):
    with open(path, "rb") as f:
        return hashlib.sha256(f.read()).hexdigest()


def main():
    os.makedirs(DIR, exist_ok=True)
    gate = os.path.join(DIR, "gate.py")
    with open(gate, "w") as f:
        f.write(GATE)
    with open(os.path.join(DIR, "engine.py"), "w") as f:
        f.write(ENGINE)
    before = sha(gate)
    inv = call("POST", "/api/v1/investigations", {"title": "The PCIe gate, lifted: an A/B with a patch on a real GPU"})
    iid = inv["id"]
    steps = f"/api/v1/investigations/{iid}/steps"
    lifted = GATE.replace("FULL_PRECISION = True", "FULL_PRECISION = False")
    diff = "".join(__import__("difflib").unified_diff(GATE.splitlines(True), lifted.splitlines(True), gate, gate))
    patch = call("POST", steps, {"kind": "patch", "host": HOST, "diff": diff,
                                 "expect": [{"text": "Custom allreduce is disabled", "present": False}]})
    check = call("POST", f"/api/v1/steps/{patch['id']}/check")
    command = f"{PY} {DIR}/engine.py {DIR}"
    step = call("POST", steps, {"kind": "command", "host": HOST, "command": command,
                                "matrix": {"@patch": [None, patch["id"]]}})
    runs = call("POST", f"/api/v1/steps/{step['id']}/runs", {"repeat": 3, "warmup": 1, "order": "interleaved"})
    done = wait(runs)
    lines = {}
    for r in done:
        out = call("GET", f"/api/v1/runs/{r['id']}/output")
        lines[r["id"]] = "Custom allreduce is disabled" in out
    h = call("POST", f"/api/v1/investigations/{iid}/hypotheses", {
        "statement": "Lifting the gate speeds decode up", "metric": "output_throughput", "direction": "increase",
        "baseline": {"configs": [{"step": step["id"], "config": {"@patch": None}}]},
        "treatment": {"configs": [{"step": step["id"], "config": {"@patch": str(patch["id"])}}]}})
    after = sha(gate)
    result = {
        "check": check, "before": before, "after": after, "same_file_after": before == after,
        "runs": [{"id": r["id"], "status": r["status"], "config": r.get("config"), "warmup": r["warmup"],
                  "tok_s": [m["value"] for m in r.get("measurements", []) if m["metric"] == "output_throughput"],
                  "gate_line": lines[r["id"]], "patch": r.get("patch")} for r in done],
        "verdict": {k: h.get(k) for k in ("baseline_values", "treatment_values", "comparison", "verdict_word",
                                          "left_out", "patches")},
    }
    with open(os.path.join(OUT, "patch_ab.json"), "w") as f:
        json.dump(result, f, indent=1)
    for r in result["runs"]:
        arm = "patched " if (r["config"] or {}).get("@patch") else "baseline"
        state = (r["patch"] or {}).get("state", "-")
        print(f"run {r['id']} {arm} warmup={r['warmup']} {r['status']} tok/s={r['tok_s']} gate line={r['gate_line']} patch={state}")
    c = h.get("comparison") or {}
    print(f"verdict: {h.get('verdict_word')} delta {c.get('delta_pct')} %; file back: {before == after}")


if __name__ == "__main__":
    main()
