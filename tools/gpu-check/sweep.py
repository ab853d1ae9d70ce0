"""On a lent GPU machine, through Sleuth's API (run by shared/tools/gpu-host/run.sh,
which sets SLEUTH_URL, SLEUTH_TOKEN, GPU_HOST and GPU_PYTHON): one real sweep of
the decode loop — batch 1 / 8 / 16, a warm-up and 3 repeats each, interleaved,
GPU telemetry on — then the sampling overhead: batch 1 with telemetry off and on,
alternating, 3 runs each. Writes what Sleuth measured to $OUT/sweep.json and the
investigation's page to $OUT/page.html; prints a summary for docs/perf.md.
"""
import json
import os
import sys
import time
import urllib.request

URL, TOKEN = os.environ["SLEUTH_URL"], os.environ["SLEUTH_TOKEN"]
HOST, PY = os.environ["GPU_HOST"], os.environ["GPU_PYTHON"]
OUT = os.environ.get("OUT", "/tmp")
LOOP = os.path.join(os.path.dirname(os.path.abspath(__file__)), "decode_loop.py")
SECONDS = 8


def call(method, path, body=None):
    data = None if body is None else json.dumps(body).encode()
    req = urllib.request.Request(URL + path, data=data, method=method,
                                 headers={"Authorization": "Bearer " + TOKEN, "Content-Type": "application/json"})
    try:
        with urllib.request.urlopen(req, timeout=120) as r:
            text = r.read().decode()
    except urllib.error.HTTPError as e:
        sys.exit(f"{method} {path}: {e.code} {e.read().decode()[:500]}")
    return json.loads(text) if text.startswith(("{", "[")) else text


def wait(runs):
    done = []
    for run in runs:
        while True:
            r = call("GET", f"/api/v1/runs/{run['id']}?wait=60")
            if r["status"] not in ("queued", "running"):
                done.append(r)
                break
    return done


def main():
    started = time.time()
    inv = call("POST", "/api/v1/investigations", {"title": "Decode loop on an H200: batch sweep with telemetry"})
    iid = inv["id"]
    call("POST", f"/api/v1/investigations/{iid}/extractors",
         {"name": "decode_mean", "pattern": r"decode mean ([\d.]+) tok/s", "unit": "tok/s"})
    call("POST", f"/api/v1/investigations/{iid}/derived",
         {"name": "hbm_gbps", "unit": "GB/s", "formula": "decode_mean / batch * weights_gb",
          "constants": {"weights_gb": 6.4}})
    command = f"{PY} {LOOP} --batch {{batch}} --seconds {SECONDS}"
    step = call("POST", f"/api/v1/investigations/{iid}/steps",
                {"kind": "command", "host": HOST, "command": command, "matrix": {"{batch}": [1, 8, 16]}})
    runs = call("POST", f"/api/v1/steps/{step['id']}/runs", {"repeat": 3, "warmup": 1, "order": "interleaved"})
    sweep_id = runs[0]["sweep_id"]
    print(f"sweep {sweep_id}: {len(runs)} runs queued", flush=True)
    done = wait(runs)
    sweep = call("GET", f"/api/v1/sweeps/{sweep_id}")
    overview = call("GET", f"/api/v1/investigations/{iid}/overview?metric=decode_mean&baseline=batch%3D1")
    util = call("GET", f"/api/v1/investigations/{iid}/overview?metric=gpu_util_mean&baseline=batch%3D1")
    mem = call("GET", f"/api/v1/investigations/{iid}/overview?metric=mem_util_mean&baseline=batch%3D1")
    power = call("GET", f"/api/v1/investigations/{iid}/overview?metric=power_w_mean&baseline=batch%3D1")
    telemetry = call("GET", f"/api/v1/runs/{done[-1]['id']}/telemetry")
    per_run = {}
    for r in done:
        t = call("GET", f"/api/v1/runs/{r['id']}/telemetry")
        per_run[r["id"]] = {"samples": sum(len(g["samples"]) for g in t["gpus"]), "notes": t["notes"]}

    # Sampling overhead: batch 1, telemetry off and on, alternating.
    off = call("POST", f"/api/v1/investigations/{iid}/steps",
               {"kind": "command", "host": HOST, "command": command.replace("{batch}", "1"), "telemetry": False})
    on = call("POST", f"/api/v1/investigations/{iid}/steps",
              {"kind": "command", "host": HOST, "command": command.replace("{batch}", "1") + " # sampled"})
    overhead = {"off": [], "on": []}
    for _ in range(3):
        for name, s in (("off", off), ("on", on)):
            r = wait(call("POST", f"/api/v1/steps/{s['id']}/runs", {}))[0]
            value = next((m["value"] for m in r.get("measurements", []) if m["metric"] == "decode_mean"), None)
            overhead[name].append(value)
    page = call("GET", f"/i/{iid}")
    result = {"investigation": iid, "sweep": sweep, "runs": done, "decode": overview, "gpu_util": util,
              "mem_util": mem, "power": power, "telemetry_of_last_run": telemetry, "telemetry_per_run": per_run, "overhead": overhead,
              "elapsed_s": time.time() - started}
    with open(os.path.join(OUT, "sweep.json"), "w") as f:
        json.dump(result, f, indent=1)
    with open(os.path.join(OUT, "page.html"), "w") as f:
        f.write(page if isinstance(page, str) else json.dumps(page))

    print(f"sweep: {sweep['progress'] if 'progress' in sweep else ''} done={sweep['done']}/{sweep['runs']} failed={sweep['failed']}")
    for metric, o in (("decode_mean tok/s", overview), ("gpu_util_mean %", util), ("mem_util_mean %", mem),
                      ("power_w_mean W", power)):
        for g in o["groups"]:
            s = g["summary"]
            print(f"  {metric:18} {g['label']:10} n={s['n']} mean={s['mean']:.1f} sd={s.get('stddev') or 0:.2f} "
                  f"delta={g.get('delta_pct') or 0:+.1f} %")
    by = {m["metric"]: m["value"] for m in done[-1].get("measurements", []) if "key" not in m}
    print("  last run:", {k: by[k] for k in sorted(by) if k in
                          ("decode_mean", "hbm_gbps", "gpu_util_mean", "mem_util_mean", "power_w_mean",
                           "mem_used_mib_max", "sm_clock_mhz_mean", "pcie_rx_mbs_mean", "pcie_tx_mbs_mean")})
    samples = sum(len(g["samples"]) for g in telemetry["gpus"])
    print(f"  telemetry of the last run: {len(telemetry['gpus'])} GPU(s), {samples} samples, notes {telemetry['notes']}")
    print("  samples per run:", {k: v["samples"] for k, v in per_run.items()},
          "notes:", [v["notes"] for v in per_run.values() if v["notes"]])
    print(f"  overhead, batch 1 decode_mean tok/s: telemetry off {overhead['off']} on {overhead['on']}")
    print(f"elapsed {time.time() - started:.0f} s")


if __name__ == "__main__":
    main()
