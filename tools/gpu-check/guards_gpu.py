"""On a lent GPU machine, through `.gpu/run.sh` (sshd and Sleuth beside the
GPU): what the guards see of real runs, and what they cost a run.

    bash .gpu/run.sh python3 tools/gpu-check/guards_gpu.py LABEL [--contend]

A memory-bound decode (`decode_loop.py --batch 8 --seconds 8`, its
`decode mean X tok/s` read by an extractor) runs 1 warm-up and 4 measured
times with GPU telemetry on; prints their tok/s and wall times (median) and
writes them to $OUT/guards_gpu_LABEL.json. Run it once with a Sleuth without
guards and once with one that has them, alternately, on the same machine:
the ratio of their medians is what guards cost a run.

--contend: then captures the host's facts (P2P, ACS) and runs once more while
another process (not a Sleuth run's) holds 2 GiB of the GPU, and prints what
the runs' guards said: `gpu_contended` must warn on that run and name the
process, and be `ok` on the runs before it.
"""
import json
import os
import statistics
import subprocess
import sys
import time

from sweep import call  # the same client the other checks use (same folder)

HOST, PY = os.environ["GPU_HOST"], os.environ["GPU_PYTHON"]
OUT = os.environ.get("OUT", "/tmp")
HERE = os.path.dirname(os.path.abspath(__file__))


def finished(run_id):
    while True:
        run = call("GET", f"/api/v1/runs/{run_id}?wait=60")
        if run["status"] not in ("queued", "running") and (not run.get("telemetry") or run.get("telemetry_drawn")):
            return call("GET", f"/api/v1/runs/{run_id}")
        time.sleep(0.5)


def tok_s(run):
    return next((m["value"] for m in run.get("measurements", []) if m["metric"] == "decode_tok_s"), None)


def guard(run, name):
    return next((g for g in run.get("guards", []) if g["name"] == name), None)


def main():
    label = sys.argv[1]
    contend = "--contend" in sys.argv
    inv = call("POST", "/api/v1/investigations", {"title": f"guards on a real GPU ({label})"})
    call("POST", f"/api/v1/investigations/{inv['id']}/extractors",
         {"name": "decode_tok_s", "pattern": r"decode mean ([0-9.]+) tok/s", "unit": "tok/s"})
    step = call("POST", f"/api/v1/investigations/{inv['id']}/steps",
                {"kind": "command", "host": HOST, "command": f"{PY} {HERE}/decode_loop.py --batch 8 --seconds 8"})
    queued = call("POST", f"/api/v1/steps/{step['id']}/runs", {"repeat": 4, "warmup": 1})
    runs = [finished(q["id"]) for q in queued]
    measured = [r for r in runs if not r["warmup"]]
    for r in runs:
        assert r["status"] == "succeeded", r
    values = [tok_s(r) for r in measured]
    walls = [r["duration_ms"] / 1000 for r in measured]
    result = {"label": label, "tok_s": values, "wall_s": walls,
              "tok_s_median": statistics.median(values), "wall_s_median": statistics.median(walls)}
    print(f"{label}: decode {result['tok_s_median']:.1f} tok/s (median of {len(values)}: {values}), "
          f"run {result['wall_s_median']:.2f} s (median: {walls})")
    if contend:
        facts = call("POST", f"/api/v1/hosts/{HOST}/facts", {})
        result["facts"] = {k: facts.get(k) for k in ("gpus", "p2p", "acs_redirecting", "interconnect", "notes")}
        print(f"host facts: p2p {facts.get('p2p')} acs_redirecting {facts.get('acs_redirecting')}")
        result["guards_clean"] = [guard(r, "gpu_contended") for r in measured]
        for g in result["guards_clean"]:
            print(f"  clean run: gpu_contended {g['level']}: {g['text']}")
        env = {k: v for k, v in os.environ.items() if not k.startswith("SLEUTH")}
        other = subprocess.Popen([PY, "-c", "import torch, time; x = torch.ones(2**31, dtype=torch.uint8, device='cuda'); "
                                  "torch.cuda.synchronize(); time.sleep(120)"], env=env)
        time.sleep(8)  # its CUDA context and memory are up
        listed = subprocess.run(["nvidia-smi", "--query-compute-apps=gpu_uuid,pid,used_memory,process_name",
                                 "--format=csv,noheader,nounits"], capture_output=True, text=True)
        print(f"  nvidia-smi lists: {listed.stdout.strip()!r} {listed.stderr.strip()!r}")
        try:
            queued = call("POST", f"/api/v1/steps/{step['id']}/runs", {})
            shared = finished(queued[0]["id"])
        finally:
            other.kill()
        g = guard(shared, "gpu_contended")
        result["guard_shared"] = g
        result["shared_tok_s"] = tok_s(shared)
        result["measurements_shared"] = [m for m in shared["measurements"] if m["extractor"] == "telemetry"
                                         and m["metric"].startswith(("gpu_", "sm_clock_held"))]
        print(f"  shared run: {tok_s(shared)} tok/s; gpu_contended {g['level']}: {g['text']}")
        print(f"  its evidence: {g['evidence']}")
        print(f"  topology: {guard(shared, 'topology')}")
    with open(os.path.join(OUT, f"guards_gpu_{label}.json"), "w") as f:
        json.dump(result, f, indent=1)


if __name__ == "__main__":
    main()
