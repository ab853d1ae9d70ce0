//! Sweeps and GPU telemetry against the loopback sshd: every configuration of a
//! matrix runs in the order asked for with its values put in, groups and
//! hypotheses follow configurations, a failure stops the rest only when asked,
//! a sweep cancels whole; telemetry from a fake `nvidia-smi` that replays the
//! H200 fixtures is stored, summarised and drawn, and nothing is left running
//! on the host; a host without nvidia-smi gives a note, never a failed run.

use crate::helpers::TestApp;
use crate::runs::{app_with_host, command_step, finished, start};
use crate::sshd::Sshd;
use axum::http::StatusCode;
use serde_json::{Value, json};
use std::time::{Duration, Instant};

async fn runs_of(app: &TestApp, step: i64) -> Vec<Value> {
    app.get(&format!("/api/v1/steps/{step}/runs")).await.json().as_array().unwrap().clone()
}

async fn all_finished(app: &TestApp, ids: &[i64]) -> Vec<Value> {
    let mut done = Vec::new();
    for id in ids {
        done.push(finished(app, *id).await);
    }
    done
}

async fn investigation_of(app: &TestApp, step: i64) -> String {
    app.get(&format!("/api/v1/steps/{step}")).await.json()["investigation_id"].as_str().unwrap().to_string()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_sweep_runs_every_configuration_with_its_values_in_the_order_asked() {
    let sshd = Sshd::start();
    let app = app_with_host(&sshd).await;
    // `decode N tok/s` where N depends on both settings, so groups differ.
    let command = "b={batch}; echo \"proto=${NCCL_PROTO-unset} batch=$b debug=$NCCL_DEBUG\"; \
                   case \"${NCCL_PROTO-unset}\" in LL) p=1;; *) p=0;; esac; echo \"decode $(( b * 10 + p )) tok/s\"";
    let step = command_step(
        &app,
        json!({ "command": command, "env": { "NCCL_DEBUG": "WARN" }, "telemetry": false,
                "matrix": { "NCCL_PROTO": [null, "LL"], "{batch}": [1, 8] } }),
    )
    .await;
    let investigation = investigation_of(&app, step).await;
    let shown = app.get(&format!("/api/v1/steps/{step}")).await.json();
    assert_eq!(shown["matrix"], json!({ "NCCL_PROTO": [null, "LL"], "{batch}": ["1", "8"] }), "{shown}");
    let extractor = json!({ "name": "decode", "pattern": r"decode ([\d.]+) tok/s", "unit": "tok/s" });
    assert_eq!(
        app.post_json(&format!("/api/v1/investigations/{investigation}/extractors"), extractor).await.status,
        StatusCode::CREATED
    );

    let queued = app.post_json(&format!("/api/v1/steps/{step}/runs"), json!({ "repeat": 2, "warmup": 1 })).await;
    assert_eq!(queued.status, StatusCode::CREATED, "{}", queued.text());
    let queued = queued.json().as_array().unwrap().clone();
    assert_eq!(queued.len(), 12, "4 configurations × (1 warm-up + 2 runs)");
    let sweep = queued[0]["sweep_id"].as_i64().expect("a sweep");
    let indexes: Vec<i64> = queued.iter().map(|r| r["sweep_index"].as_i64().unwrap()).collect();
    assert_eq!(indexes, (1..=12).collect::<Vec<_>>());
    // Interleaved: the warm-ups of all four first, then rounds of all four.
    let label = |r: &Value| format!("{}/{}", r["config"]["NCCL_PROTO"], r["config"]["{batch}"]);
    let order: Vec<String> = queued.iter().map(label).collect();
    assert_eq!(&order[..4], &order[4..8], "each round has every configuration once");
    assert_eq!(&order[4..8], &order[8..12]);
    assert!(queued[..4].iter().all(|r| r["warmup"] == true) && queued[4..].iter().all(|r| r["warmup"] == false));
    let first = queued[4]["command"].as_str().unwrap();
    assert!(first.starts_with("b='1'; echo") || first.starts_with("b='8'; echo"), "the value, quoted: {first}");

    let ids: Vec<i64> = queued.iter().map(|r| r["id"].as_i64().unwrap()).collect();
    let done = all_finished(&app, &ids).await;
    assert!(done.iter().all(|r| r["status"] == "succeeded"), "{done:?}");
    for run in &done {
        let out = app.get(&format!("/api/v1/runs/{}/output", run["id"])).await.text();
        let proto = run["config"]["NCCL_PROTO"].as_str().unwrap_or("unset");
        let batch = run["config"]["{batch}"].as_str().unwrap();
        assert!(out.starts_with(&format!("proto={proto} batch={batch} debug=WARN\n")), "{out}");
    }
    let progress = app.get(&format!("/api/v1/sweeps/{sweep}")).await.json();
    assert_eq!((progress["done"].as_u64(), progress["runs"].as_u64()), (Some(12), Some(12)), "{progress}");
    assert_eq!((progress["order"].as_str(), progress["failed"].as_u64()), (Some("interleaved"), Some(0)));
    assert_eq!(progress["seed"], Value::Null);

    // One group per configuration, warm-ups left out; the delta to a chosen baseline.
    let overview = format!("/api/v1/investigations/{investigation}/overview?metric=decode");
    let groups = app.get(&overview).await.json()["groups"].as_array().unwrap().clone();
    let labels: Vec<&str> = groups.iter().map(|g| g["label"].as_str().unwrap()).collect();
    for expected in
        ["NCCL_PROTO=(unset) batch=1", "NCCL_PROTO=LL batch=1", "NCCL_PROTO=(unset) batch=8", "NCCL_PROTO=LL batch=8"]
    {
        assert!(labels.contains(&expected), "{expected} in {labels:?}");
    }
    assert!(groups.iter().all(|g| g["summary"]["n"] == 2), "{groups:?}");
    let based = app.get(&format!("{overview}&baseline={}", "NCCL_PROTO%3D(unset)%20batch%3D8")).await.json();
    let delta = |label: &str| {
        based["groups"].as_array().unwrap().iter().find(|g| g["label"] == label).unwrap()["delta_pct"].as_f64().unwrap()
    };
    assert_eq!(delta("NCCL_PROTO=(unset) batch=8"), 0.0);
    assert!((delta("NCCL_PROTO=LL batch=8") - 1.25).abs() < 1e-9, "81 vs 80: {based}");
    let unknown = app.get(&format!("{overview}&baseline=nope")).await;
    assert_eq!(unknown.status, StatusCode::NOT_FOUND);
    assert!(unknown.text().contains("NCCL_PROTO=LL batch=1"), "names the groups: {}", unknown.text());

    // A hypothesis on configurations: LL against unset at batch 8.
    let pick = |proto: Value| json!({ "configs": [{ "step": step, "config": { "NCCL_PROTO": proto, "{batch}": 8 } }] });
    let hypothesis = app
        .post_json(
            &format!("/api/v1/investigations/{investigation}/hypotheses"),
            json!({ "statement": "LL speeds up batch 8", "metric": "decode", "direction": "increase",
                    "baseline": pick(Value::Null), "treatment": pick(json!("LL")) }),
        )
        .await;
    assert_eq!(hypothesis.status, StatusCode::CREATED, "{}", hypothesis.text());
    let comparison = &hypothesis.json()["comparison"];
    assert_eq!((comparison["baseline"]["n"].as_u64(), comparison["treatment"]["n"].as_u64()), (Some(2), Some(2)));
    assert_eq!(
        (comparison["baseline"]["mean"].as_f64(), comparison["treatment"]["mean"].as_f64()),
        (Some(80.0), Some(81.0))
    );

    // A derived metric: a formula over each run's numbers, on every run of the sweep.
    let derived = format!("/api/v1/investigations/{investigation}/derived");
    let def = json!({ "name": "hbm_gbps", "unit": "GB/s", "formula": "decode × weights_gb", "constants": { "weights_gb": 6.4 } });
    assert_eq!(app.post_json(&derived, def.clone()).await.status, StatusCode::CREATED);
    assert_eq!(app.post_json(&derived, def).await.status, StatusCode::CONFLICT);
    let bad = app.post_json(&derived, json!({ "name": "x", "formula": "decode ^ 2" })).await;
    assert_eq!(bad.status, StatusCode::UNPROCESSABLE_ENTITY);
    assert!(bad.text().contains("unexpected '^'"), "{}", bad.text());
    let hbm = app.get(&format!("/api/v1/investigations/{investigation}/overview?metric=hbm_gbps")).await.json();
    let means: Vec<f64> =
        hbm["groups"].as_array().unwrap().iter().map(|g| g["summary"]["mean"].as_f64().unwrap()).collect();
    for expected in [64.0, 70.4, 512.0, 518.4] {
        assert!(means.iter().any(|m| (m - expected).abs() < 1e-9), "{expected} in {means:?}");
    }
    let page = app.get(&format!("/i/{investigation}")).await.text();
    assert!(page.contains("hbm_gbps = decode × weights_gb (weights_gb = 6.4) GB/s"), "the formula is shown");
    assert_eq!(app.delete(&format!("{derived}/hbm_gbps")).await.status, StatusCode::NO_CONTENT);
    let gone = app.get(&format!("/api/v1/investigations/{investigation}/overview?metric=hbm_gbps")).await;
    assert_eq!(gone.status, StatusCode::NOT_FOUND, "its values went with it");

    // Shuffled with a seed: recorded, and the same seed gives the same order.
    let order_of = |runs: &[Value]| runs.iter().map(label).collect::<Vec<_>>();
    let a = app
        .post_json(&format!("/api/v1/steps/{step}/runs"), json!({ "repeat": 3, "order": "shuffled", "seed": 7 }))
        .await;
    let a = a.json().as_array().unwrap().clone();
    let b = app
        .post_json(&format!("/api/v1/steps/{step}/runs"), json!({ "repeat": 3, "order": "shuffled", "seed": 7 }))
        .await;
    let b = b.json().as_array().unwrap().clone();
    assert_eq!(order_of(&a), order_of(&b));
    let interleaved: Vec<String> = order_of(&queued[4..]).into_iter().cycle().take(12).collect();
    assert_ne!(order_of(&a), interleaved, "shuffled is not round-robin");
    let recorded = app.get(&format!("/api/v1/sweeps/{}", a[0]["sweep_id"])).await.json();
    assert_eq!((recorded["seed"].as_u64(), recorded["order"].as_str()), (Some(7), Some("shuffled")));
    // Cancel the rest of the second: queued ones end at once, nothing else runs.
    let cancelled = app.post_json(&format!("/api/v1/sweeps/{}/cancel", b[0]["sweep_id"]), json!({})).await;
    assert_eq!(cancelled.status, StatusCode::OK, "{}", cancelled.text());
    let ids: Vec<i64> = a.iter().chain(&b).map(|r| r["id"].as_i64().unwrap()).collect();
    let ended = all_finished(&app, &ids).await;
    assert!(ended[..12].iter().all(|r| r["status"] == "succeeded"));
    assert!(ended[12..].iter().filter(|r| r["status"] == "cancelled").count() >= 10, "{:?}", &ended[12..]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_failed_configuration_stops_the_rest_only_when_asked_and_bad_sweeps_are_refused() {
    let sshd = Sshd::start();
    let app = app_with_host(&sshd).await;
    let step =
        command_step(&app, json!({ "command": "exit {code}", "matrix": { "{code}": [0, 3, 4] }, "telemetry": false }))
            .await;
    let goes_on = start(&app, step, json!({ "order": "grouped" })).await;
    let statuses: Vec<Value> = all_finished(&app, &goes_on).await.iter().map(|r| r["status"].clone()).collect();
    assert_eq!(
        statuses,
        [json!("succeeded"), json!("failed"), json!("failed")],
        "a failure is reported, the sweep goes on"
    );
    let stops = start(&app, step, json!({ "order": "grouped", "keep_going": false })).await;
    let ended = all_finished(&app, &stops).await;
    assert_eq!((ended[0]["status"].as_str(), ended[1]["status"].as_str()), (Some("succeeded"), Some("failed")));
    assert_eq!(ended[2]["status"], "cancelled");
    assert!(ended[2]["error"].as_str().unwrap().contains(&format!("run {}", stops[1])), "{}", ended[2]);

    let plain = command_step(&app, json!({ "command": "true" })).await;
    let investigation = investigation_of(&app, plain).await;
    let steps = format!("/api/v1/investigations/{investigation}/steps");
    for (body, reason) in [
        (
            json!({ "kind": "command", "host": "gpu", "command": "echo", "matrix": { "{batch}": [1] } }),
            "has no {batch}",
        ),
        (json!({ "kind": "command", "host": "gpu", "command": "echo {b}", "matrix": { "{b}": [null] } }), "not unset"),
        (
            json!({ "kind": "command", "host": "gpu", "command": "echo", "env": { "A": "1" }, "matrix": { "A": ["2"] } }),
            "both",
        ),
        (json!({ "kind": "command", "host": "gpu", "command": "echo", "matrix": { "A B": ["2"] } }), "neither"),
        (json!({ "kind": "command", "host": "gpu", "command": "echo", "matrix": { "A": [] } }), "1 to 32 values"),
        (json!({ "kind": "command", "host": "gpu", "command": "echo", "matrix": { "A": ["x", "x"] } }), "twice"),
        (
            json!({ "kind": "command", "host": "gpu", "command": "echo", "matrix": { "A": [["nested"]] } }),
            "null (unset)",
        ),
        (
            json!({ "kind": "command", "host": "gpu", "command": "echo",
                    "matrix": { "A": (0..16).collect::<Vec<_>>(), "B": (0..17).collect::<Vec<_>>() } }),
            "272 configurations",
        ),
    ] {
        let refused = app.post_json(&steps, body.clone()).await;
        assert_eq!(refused.status, StatusCode::UNPROCESSABLE_ENTITY, "{body}: {}", refused.text());
        assert!(refused.text().contains(reason), "{reason} in {}", refused.text());
    }
    for (request, reason) in [
        (json!({ "order": "shuffled" }), "for sweeps"),
        (json!({ "seed": 3 }), "for sweeps"),
        (json!({ "order": "sideways" }), "unknown variant"),
    ] {
        let refused = app.post_json(&format!("/api/v1/steps/{plain}/runs"), request.clone()).await;
        assert_eq!(refused.status, StatusCode::UNPROCESSABLE_ENTITY, "{request}: {}", refused.text());
        assert!(refused.text().contains(reason), "{reason} in {}", refused.text());
    }
    let seeded = app.post_json(&format!("/api/v1/steps/{step}/runs"), json!({ "seed": 3 })).await;
    assert!(seeded.text().contains("order = shuffled"), "{}", seeded.text());
    let big = app
        .post_json(&format!("/api/v1/steps/{step}/runs"), json!({ "repeat": 100, "warmup": 20, "order": "grouped" }))
        .await;
    assert_eq!(big.status, StatusCode::CREATED, "360 runs is fine: {}", big.text());
    let sweep = big.json()[0]["sweep_id"].as_i64().unwrap();
    app.post_json(&format!("/api/v1/sweeps/{sweep}/cancel"), json!({})).await;
    assert_eq!(runs_of(&app, step).await.len(), 3 + 3 + 360, "runs of a sweep are ordinary runs of the step");
}

/// A fake `nvidia-smi` that replays the H200 fixtures (the query loop for
/// `--query-gpu`, the dmon table for `dmon`), a line every 50 ms, then waits,
/// and lists no process on its GPU;
/// each start is a line in `started` beside its directory.
fn fake_nvidia_smi(sshd: &Sshd) -> std::path::PathBuf {
    let fixtures = server::fixtures::dir().join("gpu-host-h200");
    let bin = sshd.dir.path().join("fakebin");
    std::fs::create_dir_all(&bin).unwrap();
    let script = format!(
        "#!/bin/sh\n\
         echo \"$*\" >> {started}\n\
         case \"$*\" in\n\
         *dmon*) file={dmon} ;;\n\
         *index,uuid*) echo '0, GPU-fixture'; exit 0 ;;\n\
         *compute-apps*) exit 0 ;;\n\
         *query-gpu*) file={query} ;;\n\
         *) echo 'fake nvidia-smi: unexpected arguments' >&2; exit 2 ;;\n\
         esac\n\
         while IFS= read -r line; do printf '%s\\n' \"$line\"; sleep 0.05; done < \"$file\"\n\
         exec sleep 600\n",
        dmon = fixtures.join("nvidia-smi-dmon.txt").display(),
        query = fixtures.join("nvidia-smi-query-loop.csv").display(),
        started = sshd.dir.path().join("started").display(),
    );
    let path = bin.join("nvidia-smi");
    std::fs::write(&path, script).unwrap();
    std::fs::set_permissions(&path, std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
    bin
}

/// Processes whose command line mentions `needle`, other than this pgrep.
pub fn running(needle: &str) -> Vec<String> {
    let out = std::process::Command::new("pgrep").args(["-af", needle]).output().expect("pgrep");
    String::from_utf8_lossy(&out.stdout).lines().filter(|l| !l.contains("pgrep")).map(str::to_string).collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn telemetry_is_sampled_stored_summarised_and_nothing_is_left_running() {
    let sshd = Sshd::start();
    // The host's sampler stays 1 s after its last run (120 s by default).
    let linger = Duration::from_secs(1);
    let options = server::serve::Options { telemetry_linger: Some(linger), ..Default::default() };
    let app = crate::runs::with_host(crate::helpers::spawn_app_with(options).await, &sshd).await;
    let bin = fake_nvidia_smi(&sshd);
    let path = format!("{}:/usr/local/bin:/usr/bin:/bin", bin.display());
    let step = command_step(&app, json!({ "command": "sleep 3; echo decode done", "env": { "PATH": path } })).await;
    // Another step's runs on the same host and PATH, while the first goes:
    // they share its sampler (a sweep over other variables does too).
    let short =
        command_step(&app, json!({ "command": "sleep 1", "env": { "PATH": path.clone(), "MAX_BATCH": "8" } })).await;
    let run = start(&app, step, json!({})).await[0];
    tokio::time::sleep(Duration::from_millis(700)).await;
    let others = start(&app, short, json!({ "repeat": 2 })).await;
    let run = finished(&app, run).await;
    assert_eq!(run["status"], "succeeded", "{run}");
    let starts = std::fs::read_to_string(sshd.dir.path().join("started")).unwrap_or_default();
    let samplers = starts.lines().filter(|l| l.contains("-lms") || l.contains("dmon")).count();
    assert_eq!(samplers, 2, "one sampler (query and dmon) for three runs: {starts}");
    for other in others.iter().copied() {
        let other = finished(&app, other).await;
        assert_eq!(other["status"], "succeeded", "{other}");
        let drawn = |r: &Value| r["telemetry_drawn"] == true;
        crate::runs::wait_for(&app, other["id"].as_i64().unwrap(), drawn, Duration::from_secs(10)).await;
        let telemetry = app.get(&format!("/api/v1/runs/{}/telemetry", other["id"])).await.json();
        // (The fixture's query has no `name` column; naming is checked on the lent H200.)
        let gpu = &telemetry["gpus"][0];
        let times: Vec<u64> = gpu["samples"].as_array().unwrap().iter().map(|s| s["t_ms"].as_u64().unwrap()).collect();
        assert!(!times.is_empty() && times.iter().all(|t| *t <= 1500), "timed from its own start: {times:?}");
    }
    // Compared, the runs' telemetry shares one time axis.
    let compared = app.get(&format!("/api/v1/compare?runs={},{}", others[0], others[1])).await.json();
    let svg = compared["telemetry_svg"].as_str().unwrap_or_else(|| panic!("a telemetry chart: {compared}"));
    assert!(svg.contains("SM util % (GPU mean)") && svg.contains(&format!("run {}", others[1])), "{svg}");
    assert_eq!(run["telemetry"], true);
    let id = run["id"].as_i64().unwrap();
    // The run's end does not wait on the sampler: its chart and summaries follow.
    let investigation = investigation_of(&app, step).await;
    let deadline = Instant::now() + Duration::from_secs(10);
    while !app.get(&format!("/i/{investigation}")).await.text().contains("SM / mem util %") {
        assert!(Instant::now() < deadline, "the telemetry chart never came");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }

    let telemetry = app.get(&format!("/api/v1/runs/{id}/telemetry")).await.json();
    let gpu = &telemetry["gpus"][0];
    assert_eq!(gpu["index"], 0, "{telemetry}");
    let samples = gpu["samples"].as_array().unwrap();
    assert!(samples.len() >= 20, "a line every 50 ms for 3 s: {}", samples.len());
    assert!(samples.iter().any(|s| s["gpu_util"] == 71.0 && s["mem_util"] == 59.0), "loaded samples replayed");
    assert!(samples.iter().any(|s| s["pcie_rx_mbs"].is_number()), "dmon's PCIe throughput attached");
    let times: Vec<u64> = samples.iter().map(|s| s["t_ms"].as_u64().unwrap()).collect();
    assert!(times.windows(2).all(|w| w[0] <= w[1]) && *times.last().unwrap() <= 4000, "{times:?}");
    assert_eq!(telemetry["notes"], json!([]), "{telemetry}");

    let measured = app.get(&format!("/api/v1/runs/{id}")).await.json()["measurements"].as_array().unwrap().clone();
    let value = |metric: &str| {
        measured.iter().find(|m| m["metric"] == metric && m["key"].is_null()).and_then(|m| m["value"].as_f64())
    };
    for metric in ["gpu_util_mean", "mem_util_mean", "power_w_mean", "mem_used_mib_max", "sm_clock_mhz_mean"] {
        assert!(value(metric).is_some(), "{metric} in {measured:?}");
    }
    assert!(measured.iter().any(|m| m["metric"] == "gpu_util_mean" && m["key"] == "gpu 0"), "per GPU too");
    assert!(measured.iter().all(|m| m["extractor"] == "telemetry"), "{measured:?}");

    // The roofline shows the measured memory utilisation beside its estimate.
    let all = app.get(&format!("/api/v1/investigations/{investigation}/measurements")).await.json();
    let mem =
        all.as_array().unwrap().iter().find(|m| m["metric"] == "mem_util_mean" && m["key"].is_null()).unwrap().clone();
    let roofline = app
        .post_json(
            &format!("/api/v1/investigations/{investigation}/steps"),
            json!({ "kind": "calculator", "calculator": "bandwidth", "gpu": "H200", "gpus": 1, "weights_gb": 6.4,
                    "tok_s": 343, "mem_util_from": { "measurement": mem["id"] } }),
        )
        .await;
    assert_eq!(roofline.status, StatusCode::CREATED, "{}", roofline.text());
    let results = &roofline.json()["results"];
    assert_eq!(results["measured_mem_util_pct"], mem["value"], "{results}");
    assert!((results["pct_of_peak"].as_f64().unwrap() - 45.73).abs() < 0.01, "343 × 6.4 GB of 4.8 TB/s: {results}");
    let not_percent = all.as_array().unwrap().iter().find(|m| m["metric"] == "power_w_mean").unwrap();
    let refused = app
        .post_json(
            &format!("/api/v1/investigations/{investigation}/steps"),
            json!({ "kind": "calculator", "calculator": "bandwidth", "gpu": "H200", "gpus": 1, "weights_gb": 6.4,
                    "tok_s": 343, "mem_util_from": { "measurement": not_percent["id"] } }),
        )
        .await;
    assert_eq!(refused.status, StatusCode::UNPROCESSABLE_ENTITY, "watts are not a percentage: {}", refused.text());

    // The page draws it beside the run.
    let page = app.get(&format!("/i/{investigation}")).await.text();
    assert!(page.contains("GPU telemetry") && page.contains("SM / mem util %"), "the chart is on the page");
    assert!(page.contains("memory busy"), "the roofline says what nvidia-smi measured");

    // Nothing of the sampler is left on the host once it has lingered.
    let deadline = Instant::now() + linger + Duration::from_secs(5);
    while !running(&bin.display().to_string()).is_empty() {
        assert!(Instant::now() < deadline, "left running: {:?}", running(&bin.display().to_string()));
        tokio::time::sleep(Duration::from_millis(100)).await;
    }

    // A cancelled run stops its sampler as well.
    let long = command_step(
        &app,
        json!({ "command": "sleep 60", "env": { "PATH": format!("{}:/usr/bin:/bin", bin.display()) } }),
    )
    .await;
    let run = start(&app, long, json!({})).await[0];
    tokio::time::sleep(Duration::from_secs(2)).await;
    assert!(!running(&bin.display().to_string()).is_empty(), "sampling while it runs");
    assert_eq!(app.post_json(&format!("/api/v1/runs/{run}/cancel"), json!({})).await.status, StatusCode::OK);
    finished(&app, run).await;
    let deadline = Instant::now() + linger + Duration::from_secs(5);
    while !running(&bin.display().to_string()).is_empty() {
        assert!(Instant::now() < deadline, "left running after cancel: {:?}", running(&bin.display().to_string()));
        tokio::time::sleep(Duration::from_millis(100)).await;
    }

    // No nvidia-smi on the host: a note, and the run succeeds.
    let bare = command_step(&app, json!({ "command": "echo no gpu here", "env": { "PATH": "/usr/bin:/bin" } })).await;
    let run = finished(&app, start(&app, bare, json!({})).await[0]).await;
    assert_eq!(run["status"], "succeeded");
    // Its notes are stored just after the end, with the chart.
    let drawn = |r: &Value| r["telemetry_drawn"] == true;
    crate::runs::wait_for(&app, run["id"].as_i64().unwrap(), drawn, Duration::from_secs(10)).await;
    let telemetry = app.get(&format!("/api/v1/runs/{}/telemetry", run["id"])).await.json();
    assert_eq!(telemetry["gpus"], json!([]));
    assert!(telemetry["notes"][0].as_str().unwrap().contains("No nvidia-smi on gpu"), "{telemetry}");
    // Off for a step: not sampled, and the telemetry says so.
    let off =
        command_step(&app, json!({ "command": "true", "telemetry": false, "env": { "PATH": path.clone() } })).await;
    let run = finished(&app, start(&app, off, json!({})).await[0]).await;
    assert_eq!(run["telemetry"], false);
    let telemetry = app.get(&format!("/api/v1/runs/{}/telemetry", run["id"])).await.json();
    assert!(telemetry["notes"][0].as_str().unwrap().contains("off"), "{telemetry}");
    assert_eq!(telemetry["gpus"], json!([]));
}

/// A run shorter than a sample: `?wait=` answers with it ended and its
/// telemetry told (a note, an empty chart) at once, not after the 5 s it
/// gives the telemetry at most, and with nothing summarised again.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_short_run_is_answered_with_its_telemetry_at_once() {
    let sshd = Sshd::start();
    let app = app_with_host(&sshd).await;
    let bin = fake_nvidia_smi(&sshd);
    let path = format!("{}:/usr/local/bin:/usr/bin:/bin", bin.display());
    let step = command_step(&app, json!({ "command": "true", "env": { "PATH": path } })).await;
    // The first starts the host's sampler; the rest find it running.
    for n in 0..4 {
        let asked = Instant::now();
        let run = start(&app, step, json!({})).await[0];
        let done = app.get(&format!("/api/v1/runs/{run}?wait=30")).await.json();
        let took = asked.elapsed();
        assert_eq!(
            (done["status"].as_str(), done["telemetry_drawn"].as_bool()),
            (Some("succeeded"), Some(true)),
            "{done}"
        );
        assert!(n == 0 || took < Duration::from_secs(2), "run {n} was answered after {took:?}");
        let telemetry = app.get(&format!("/api/v1/runs/{run}/telemetry")).await.json();
        let samples: usize =
            telemetry["gpus"].as_array().unwrap().iter().map(|g| g["samples"].as_array().unwrap().len()).sum();
        assert!(
            samples > 0 || telemetry["notes"][0].as_str().is_some_and(|n| n.contains("No GPU reading")),
            "{telemetry}"
        );
    }
}
