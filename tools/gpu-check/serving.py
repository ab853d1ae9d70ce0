"""On a lent GPU machine, through Sleuth's API (run by shared/tools/gpu-host/run.sh,
which sets SLEUTH_URL, SLEUTH_TOKEN, GPU_HOST and GPU_PYTHON): a serving sweep —
decode_server.py (6.4 GB of weights and a 20 GB cache on the GPU) beside
decode_bench.py, batch 1 / 8 / 16 × 2 repeats, grouped, one server per
configuration (`reuse: config`), result.json kept as an artifact. Meanwhile
nvidia-smi's memory.used is sampled every 100 ms, so each stop can be checked:
the GPU's memory is back to what it was before that server started, before the
next one starts. Writes $OUT/serving.json and the page; prints a summary for
docs/perf.md, with the lifecycle's cost: from one server's stop to the next
one's ready, beyond that server's own load time (which it logs).
"""
import json
import os
import re
import subprocess
import sys
import threading
import time
import urllib.request
from datetime import datetime

URL, TOKEN = os.environ["SLEUTH_URL"], os.environ["SLEUTH_TOKEN"]
HOST, PY = os.environ["GPU_HOST"], os.environ["GPU_PYTHON"]
OUT = os.environ.get("OUT", "/tmp")
HERE = os.path.dirname(os.path.abspath(__file__))
PORT = 18000


def call(method, path, body=None, raw=False):
    data = None if body is None else json.dumps(body).encode()
    req = urllib.request.Request(URL + path, data=data, method=method,
                                 headers={"Authorization": "Bearer " + TOKEN, "Content-Type": "application/json"})
    try:
        with urllib.request.urlopen(req, timeout=120) as r:
            text = r.read().decode()
    except urllib.error.HTTPError as e:
        sys.exit(f"{method} {path}: {e.code} {e.read().decode()[:500]}")
    return text if raw else json.loads(text)


def seconds(stamp):
    return datetime.fromisoformat(stamp.replace("Z", "+00:00")).timestamp()


def main():
    samples, stop = [], threading.Event()

    def sample():
        smi = subprocess.Popen(["nvidia-smi", "--query-gpu=memory.used", "--format=csv,noheader,nounits", "-lms", "100"],
                               stdout=subprocess.PIPE, text=True)
        for line in smi.stdout:
            if stop.is_set():
                break
            try:
                samples.append((time.time(), float(line.strip().split(",")[0])))
            except ValueError:
                pass
        smi.kill()

    threading.Thread(target=sample, daemon=True).start()
    time.sleep(1)
    inv = call("POST", "/api/v1/investigations", {"title": "Serving on an H200: a decode server per batch size"})
    step = call("POST", f"/api/v1/investigations/{inv['id']}/steps", {
        "kind": "command", "host": HOST, "telemetry": True,
        "server": {"command": f"{PY} {HERE}/decode_server.py --port {PORT} --batch {{batch}} --cache-gb 20",
                   "ready": {"http": f"http://127.0.0.1:{PORT}/health"}, "ready_timeout_s": 300,
                   "stop_grace_s": 10, "reuse": "config"},
        "command": f"{PY} {HERE}/decode_bench.py --port {PORT} --requests 8 --tokens 32",
        "matrix": {"{batch}": ["1", "8", "16"]},
        "artifacts": ["result.json"],
    })
    runs = call("POST", f"/api/v1/steps/{step['id']}/runs", {"repeat": 2, "order": "grouped"})
    done = []
    for run in runs:
        while True:
            r = call("GET", f"/api/v1/runs/{run['id']}?wait=60")
            if r["status"] not in ("queued", "running"):
                done.append(r)
                break
    time.sleep(2)
    stop.set()
    baseline = min(m for t, m in samples if t < seconds(done[0]["server"]["started_at"])) if samples else None
    report = {"baseline_mib": baseline, "runs": []}
    for i, r in enumerate(done):
        s = r.get("server") or {}
        log = call("GET", f"/api/v1/runs/{r['id']}/output?stream=server", raw=True)
        load = re.search(r"model loaded in ([\d.]+) s; ([\d.]+) GiB", log)
        entry = {"id": r["id"], "status": r["status"], "config": r.get("config"), "phase": s.get("phase"),
                 "started_by_run": s.get("started_by_run"), "ready_after_ms": s.get("ready_after_ms"),
                 "notes": s.get("notes"), "artifacts": [(a["name"], a["size"]) for a in r.get("artifacts", [])],
                 "output_throughput": [m["value"] for m in r.get("measurements", [])
                                       if m["metric"] == "output_throughput" and m["extractor"] == "vllm-save-result"],
                 "load_s": float(load.group(1)) if load else None, "held_gib": float(load.group(2)) if load else None,
                 "finished_at": r["finished_at"], "server_started_at": s.get("started_at"), "ready_at": s.get("ready_at")}
        report["runs"].append(entry)
    # Each stop: memory back to the baseline before the next server starts, and how long after the run ended.
    stops = []
    for i, r in enumerate(report["runs"]):
        if r["phase"] != "stopped":
            continue
        ended = seconds(r["finished_at"])
        nxt = next((n for n in report["runs"][i + 1:] if n["started_by_run"] is None), None)
        until = seconds(nxt["server_started_at"]) if nxt else ended + 5
        window = [(t, m) for t, m in samples if ended - 30 <= t <= until]
        peak = max((m for t, m in window), default=None)
        after = [m for t, m in window if t >= ended]
        lifecycle = None
        if nxt and nxt["ready_at"] and nxt["load_s"] is not None:
            lifecycle = seconds(nxt["ready_at"]) - ended - nxt["load_s"]
        stops.append({"run": r["id"], "peak_mib_while_served": peak,
                      "at_run_end_mib": after[0] if after else None,
                      "min_until_next_start_mib": min(after, default=None),
                      "next_ready_minus_end_minus_its_load_s": lifecycle, "notes": r["notes"]})
    report["stops"] = stops
    with open(os.path.join(OUT, "serving.json"), "w") as f:
        json.dump(report, f, indent=1)
    with open(os.path.join(OUT, "page.html"), "w") as f:
        f.write(call("GET", f"/i/{inv['id']}", raw=True))
    print(json.dumps(report, indent=1))


if __name__ == "__main__":
    main()
