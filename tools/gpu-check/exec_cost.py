"""On a lent GPU machine (after shared/tools/gpu-host/run.sh set up sshd on
127.0.0.1:2222 from /tmp/sshroot with keys in /tmp/sshk, and Sleuth): the cost
of a run of `true` through Sleuth's API (POST, then GET ?wait=30), with GPU
telemetry on (the real nvidia-smi) and off, against `ssh` through an OpenSSH
ControlMaster to the same sshd. Medians of 20, interleaved; then again with a
login shell that does ~130 ms of CPU work first (a loop put at the top of
root's ~/.bashrc, as a conda init; restored after). What a short and a 2 s run's
telemetry name their GPUs. Then a run that
prints 256 MB (the output path: stored, free space checked every MB, the
host pinged every 5 s) against the same bytes through the ControlMaster into
/dev/null, medians of 3. Prints a line per figure for docs/perf.md and writes
$OUT/exec_cost.json.
"""
import json
import os
import statistics
import subprocess
import time
import urllib.request

URL, TOKEN, HOST = os.environ["SLEUTH_URL"], os.environ["SLEUTH_TOKEN"], os.environ["GPU_HOST"]
OUT = os.environ.get("OUT", "/tmp")
R, K = "/tmp/sshroot", "/tmp/sshk"
LD = f"{R}/usr/lib/x86_64-linux-gnu:{R}/lib/x86_64-linux-gnu"
N = 20
BIG = 256 * 1024 * 1024


def call(method, path, body=None):
    data = None if body is None else json.dumps(body).encode()
    req = urllib.request.Request(URL + path, data=data, method=method,
                                 headers={"Authorization": "Bearer " + TOKEN, "Content-Type": "application/json"})
    with urllib.request.urlopen(req, timeout=120) as r:
        return json.loads(r.read().decode())


def ssh(*args):
    known = f"{K}/known_hosts"
    if not os.path.exists(known):
        with open(f"{K}/host.pub") as f:
            open(known, "w").write(f"[127.0.0.1]:2222 {f.read()}")
    return [f"{R}/usr/bin/ssh", "-q", "-o", "BatchMode=yes", "-o", "StrictHostKeyChecking=yes",
            "-o", f"UserKnownHostsFile={known}", "-i", f"{K}/client", "-p", "2222", *args]


def run(step):
    started = time.perf_counter()
    queued = call("POST", f"/api/v1/steps/{step}/runs", {})
    done = call("GET", f"/api/v1/runs/{queued[0]['id']}?wait=30")
    took = time.perf_counter() - started
    assert done["status"] == "succeeded", done
    return took


def main():
    env = dict(os.environ, LD_LIBRARY_PATH=LD)
    cm = "/tmp/sshk/cm"
    master = subprocess.Popen(ssh("-o", "ControlMaster=yes", "-o", f"ControlPath={cm}", "-N", "root@127.0.0.1"), env=env)
    while not os.path.exists(cm):
        time.sleep(0.02)
    inv = call("POST", "/api/v1/investigations", {"title": "exec cost with telemetry"})
    on = call("POST", f"/api/v1/investigations/{inv['id']}/steps", {"kind": "command", "host": HOST, "command": "true"})
    off = call("POST", f"/api/v1/investigations/{inv['id']}/steps",
               {"kind": "command", "host": HOST, "command": "true", "telemetry": False})
    big = call("POST", f"/api/v1/investigations/{inv['id']}/steps",
               {"kind": "command", "host": HOST, "command": f"yes 0123456789abcdef | head -c {BIG}",
                "telemetry": False, "output_limit_bytes": 2 * BIG})
    run(off["id"])  # connects the pool

    def interleaved(label):
        t_on, t_off, t_cm = [], [], []
        for _ in range(N):
            t_on.append(run(on["id"]))
            t_off.append(run(off["id"]))
            s = time.perf_counter()
            subprocess.run(ssh("-o", f"ControlPath={cm}", "root@127.0.0.1", "true"), env=env, check=True)
            t_cm.append(time.perf_counter() - s)
        m = {k: statistics.median(v) * 1000 for k, v in (("on", t_on), ("off", t_off), ("controlmaster", t_cm))}
        print(f"exec `true` through the API, median of {N}, {label}:")
        print(f"  telemetry on   {m['on']:7.1f} ms  on / ControlMaster = {m['on'] / m['controlmaster']:.2f}x (goal <= 1.2)"
              f"  on / off = {m['on'] / m['off']:.2f}x (goal <= 1.1)")
        print(f"  telemetry off  {m['off']:7.1f} ms  off / ControlMaster = {m['off'] / m['controlmaster']:.2f}x")
        print(f"  ControlMaster  {m['controlmaster']:7.1f} ms")
        return m, {"on": t_on, "off": t_off, "controlmaster": t_cm}

    has_smi = subprocess.run(["sh", "-c", "command -v nvidia-smi"], capture_output=True).returncode == 0
    m, samples = interleaved(f"a bare login shell (nvidia-smi on the host: {has_smi})")
    bashrc = os.path.expanduser("~/.bashrc")
    before = open(bashrc).read() if os.path.exists(bashrc) else None
    with open(bashrc, "w") as f:
        f.write("i=0; while [ $i -lt 30000 ]; do i=$((i+1)); done\n" + (before or ""))
    try:
        slow, slow_samples = interleaved("a login shell doing ~130 ms of CPU work (~/.bashrc)")
    finally:
        if before is None:
            os.remove(bashrc)
        else:
            open(bashrc, "w").write(before)

    # What the runs' telemetry names its GPUs: a run of `true` (shorter than a
    # sample) and one of 2 s, on a sampler already running and on a fresh one.
    nap = call("POST", f"/api/v1/investigations/{inv['id']}/steps", {"kind": "command", "host": HOST, "command": "sleep 2"})
    names = {}
    for label, step in (("true", on["id"]), ("sleep 2", nap["id"])):
        queued = call("POST", f"/api/v1/steps/{step}/runs", {})
        done = call("GET", f"/api/v1/runs/{queued[0]['id']}?wait=30")
        t = call("GET", f"/api/v1/runs/{done['id']}/telemetry")
        names[label] = {"gpus": [(g["index"], g["name"], len(g["samples"])) for g in t["gpus"]], "notes": t["notes"]}
        print(f"telemetry of a run of `{label}`: (index, name, samples) {names[label]['gpus'][:8]} notes {t['notes']}")
    t_big, t_big_cm = [], []
    for _ in range(3):
        t_big.append(run(big["id"]))
        s = time.perf_counter()
        subprocess.run(ssh("-o", f"ControlPath={cm}", "root@127.0.0.1", f"yes 0123456789abcdef | head -c {BIG}"),
                       env=env, check=True, stdout=subprocess.DEVNULL)
        t_big_cm.append(time.perf_counter() - s)
    master.kill()
    mb = BIG / 1e6
    big_s, big_cm_s = statistics.median(t_big), statistics.median(t_big_cm)
    print(f"{mb:.0f} MB of output, median of 3: Sleuth {big_s:.2f} s ({mb / big_s:.0f} MB/s), "
          f"ControlMaster to /dev/null {big_cm_s:.2f} s ({mb / big_cm_s:.0f} MB/s): Sleuth / ssh time = {big_s / big_cm_s:.2f}x")
    with open(os.path.join(OUT, "exec_cost.json"), "w") as f:
        json.dump({"median_ms": m, "median_ms_slow_login": slow, "telemetry_names": names,
                   "samples_s": {**samples, "slow_login": slow_samples,
                                 "output_256mb": t_big, "output_256mb_controlmaster": t_big_cm}},
                  f, indent=1)


if __name__ == "__main__":
    main()
