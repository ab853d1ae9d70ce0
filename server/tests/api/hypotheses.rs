//! Hypotheses whose experiments compare real runs (loopback sshd) on an extracted metric.

use axum::http::StatusCode;
use serde_json::json;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_experiment_compares_the_runs_of_two_steps() {
    let sshd = crate::sshd::Sshd::start();
    let app = crate::runs::app_with_host(&sshd).await;
    // A stand-in benchmark: prints the next of its configuration's values as
    // `vllm bench throughput` would. The first value of each list is a warm-up's.
    let dir = sshd.dir.path();
    std::fs::write(
        dir.join("bench.sh"),
        "n=$(cat \"$1.n\" 2>/dev/null || echo 0); n=$((n+1)); echo $n > \"$1.n\"\n\
         v=$(sed -n \"${n}p\" \"$1.values\")\n\
         echo \"Throughput: 1.00 requests/s, 120.00 total tokens/s, $v output tokens/s\"\n",
    )
    .unwrap();
    std::fs::write(dir.join("default.values"), "999\n57.4\n57.6\n57.5\n57.3\n57.7\n").unwrap();
    std::fs::write(dir.join("ll.values"), "999\n57.9\n57.2\n58.1\n57.6\n").unwrap();
    let bench = |config: &str| format!("cd {} && sh bench.sh {config}", dir.display());
    let baseline = crate::runs::command_step(&app, json!({ "command": bench("default") })).await;
    let investigation =
        app.get(&format!("/api/v1/steps/{baseline}")).await.json()["investigation_id"].as_str().unwrap().to_string();
    let treatment = app
        .post_json(
            &format!("/api/v1/investigations/{investigation}/steps"),
            json!({ "kind": "command", "host": "gpu", "command": bench("ll"), "env": { "NCCL_PROTO": "LL" } }),
        )
        .await
        .json()["id"]
        .as_i64()
        .unwrap();
    for (step, repeat) in [(baseline, 5), (treatment, 4)] {
        let runs = crate::runs::start(&app, step, json!({ "repeat": repeat, "warmup": 1 })).await;
        for run in runs {
            crate::runs::finished(&app, run).await;
        }
    }

    let hypotheses = format!("/api/v1/investigations/{investigation}/hypotheses");
    let created = app
        .post_json(
            &hypotheses,
            json!({
                "statement": "NCCL_PROTO=LL speeds up decode",
                "rationale": "LL has lower latency for **small** messages.",
                "metric": "output_throughput",
                "direction": "increase",
                "expected_pct": 15,
                "baseline": { "steps": [baseline] },
                "treatment": { "steps": [treatment] }
            }),
        )
        .await;
    assert_eq!(created.status, StatusCode::CREATED, "{}", created.text());
    let h = created.json();
    // Within noise, where an increase was expected: the status follows the verdict.
    assert_eq!((&h["status"], &h["status_set"]), (&json!("inconclusive"), &json!(false)), "{h}");
    assert_eq!(h["verdict_word"], "within noise", "{h}");
    assert!(h["rationale_html"].as_str().unwrap().contains("<strong>small</strong>"));
    let c = &h["comparison"];
    assert_eq!(
        (c["baseline"]["n"].as_u64(), c["treatment"]["n"].as_u64()),
        (Some(5), Some(4)),
        "warm-ups left out: {h}"
    );
    assert_eq!(c["outcome"], "within_noise", "{h}");
    // The interval is scipy's (see metrics::stats), in percent of the baseline mean 57.5.
    let (lo, hi) = (c["ci_pct"][0].as_f64().unwrap(), c["ci_pct"][1].as_f64().unwrap());
    assert!((lo - -0.39112088227713915 / 57.5 * 100.0).abs() < 1e-9, "{lo}");
    assert!((hi - 0.7911208822771306 / 57.5 * 100.0).abs() < 1e-9, "{hi}");
    assert!(c["verdict"].as_str().unwrap().ends_with("within noise"), "{c}");
    assert_eq!(h["as_expected"], serde_json::Value::Null, "noise says nothing either way");
    assert_eq!(h["unit"], "tok/s");
    assert!(h["chart_svg"].as_str().unwrap().starts_with("<svg"), "the experiment is drawn");

    // Provenance: the day's first run captured the host's facts; every run points at them.
    let mut facts_ids = std::collections::BTreeSet::new();
    for step in [baseline, treatment] {
        for run in app.get(&format!("/api/v1/steps/{step}/runs")).await.json().as_array().unwrap() {
            facts_ids.insert(run["facts_id"].as_i64().unwrap_or_else(|| panic!("no facts: {run}")));
        }
    }
    assert_eq!(facts_ids.len(), 1, "captured once for the day, not per batch: {facts_ids:?}");
    let facts_id = facts_ids.first().unwrap();
    let facts = app.get(&format!("/api/v1/facts/{facts_id}")).await;
    assert_eq!(facts.status, StatusCode::OK, "{}", facts.text());
    assert!(facts.json()["notes"].to_string().contains("nvidia-smi"), "no GPU here: {}", facts.text());
    let p = &h["provenance"];
    assert_eq!(
        p["summary"].as_str().unwrap().split_once(" and ").map(|(head, _)| head),
        Some("Same host (gpu)"),
        "{p}"
    );
    // The stand-in benchmark reads its values from a file named by the config.
    assert!(p["summary"].as_str().unwrap().ends_with("differs: NCCL_PROTO (unset) → LL; the command."), "{p}");
    assert_eq!(p["warnings"], json!([]), "{p}");

    // The investigation's chart: one column per configuration, the hypothesis's baseline dashed.
    let overview = app.get(&format!("/api/v1/investigations/{investigation}/overview")).await.json();
    assert_eq!(overview["metric"], "output_throughput", "{overview}");
    let groups: Vec<(String, u64)> = overview["groups"]
        .as_array()
        .unwrap()
        .iter()
        .map(|g| (g["label"].as_str().unwrap().to_string(), g["summary"]["n"].as_u64().unwrap()))
        .collect();
    assert_eq!(groups, [("(default env)".to_string(), 5), ("NCCL_PROTO=LL".to_string(), 4)], "warm-ups left out");
    assert_eq!(overview["baseline_label"], "baseline of “NCCL_PROTO=LL speeds up decode”");
    assert!(overview["metrics"].as_array().unwrap().contains(&json!("total_throughput")), "{overview}");
    let svg = app.get(&format!("/api/v1/investigations/{investigation}/chart.svg?metric=total_throughput")).await;
    assert_eq!(svg.headers["content-type"], "image/svg+xml");
    assert!(svg.text().starts_with("<svg") && svg.text().contains("NCCL_PROTO=LL"), "{}", svg.text());
    let unknown = app.get(&format!("/api/v1/investigations/{investigation}/chart.svg?metric=nope")).await;
    assert_eq!(unknown.status, StatusCode::NOT_FOUND);
    assert!(unknown.text().contains("these were: output_throughput"), "{}", unknown.text());
    // The investigation's "other metrics" open a page of the chart, not a bare SVG;
    // each run's dot on the chart opens the run (a warm-up has none).
    let page = app.get(&format!("/i/{investigation}")).await.text();
    let of_baseline = app.get(&format!("/api/v1/steps/{baseline}/runs")).await.json();
    let (warmup, measured) = (of_baseline[0]["id"].as_i64().unwrap(), of_baseline[1]["id"].as_i64().unwrap());
    assert!(page.contains(&format!("<a href=\"/runs/{measured}\" class=\"run-dot\">")), "{page}");
    assert!(!page.contains(&format!("<a href=\"/runs/{warmup}\" class=\"run-dot\">")));
    assert_eq!(page.matches("class=\"run-dot\"").count(), 18, "a link per measured run, on both charts");
    let link = format!("href=\"/i/{investigation}/chart?metric=total_throughput\"");
    assert!(page.contains(&link), "{page}");
    let chart = app.get(&format!("/i/{investigation}/chart?metric=total_throughput")).await;
    assert_eq!(chart.status, StatusCode::OK);
    let html = chart.text();
    assert!(html.contains("<svg") && html.contains("NCCL_PROTO=LL") && html.contains("class=\"groups-table\""));
    assert!(html.contains(&format!("href=\"/i/{investigation}/chart?metric=output_throughput\"")), "the others");
    let missing = app.get(&format!("/i/{investigation}/chart?metric=nope")).await;
    assert_eq!(missing.status, StatusCode::NOT_FOUND);
    assert!(missing.text().contains("these were: output_throughput"), "{}", missing.text());
    // Another step's runs on the chart: the hypothesis does not judge them, so
    // its baseline is not theirs; the first configuration is the line.
    let other = app
        .post_json(
            &format!("/api/v1/investigations/{investigation}/steps"),
            json!({ "kind": "command", "host": "gpu", "env": { "RATE": "8" },
                    "command": "echo 'Throughput: 8.00 requests/s, 900.00 total tokens/s, 300.0 output tokens/s'" }),
        )
        .await
        .json()["id"]
        .as_i64()
        .unwrap();
    for run in crate::runs::start(&app, other, json!({ "repeat": 2 })).await {
        crate::runs::finished(&app, run).await;
    }
    let overview = app.get(&format!("/api/v1/investigations/{investigation}/overview")).await.json();
    assert_eq!(overview["baseline_label"], "(default env)", "{overview}");

    // A person decides; the page's summary shows it.
    let id = h["id"].as_i64().unwrap();
    let decided = app.patch_json(&format!("/api/v1/hypotheses/{id}"), json!({ "status": "refuted" })).await;
    assert_eq!(decided.status, StatusCode::OK, "{}", decided.text());
    assert_eq!(decided.json()["status"], "refuted");
    let page = app.get(&format!("/i/{investigation}")).await.text();
    let row = page
        .split(&format!("<tr id=\"hypothesis-{id}\""))
        .nth(1)
        .expect("a summary row")
        .split("</tr>")
        .next()
        .unwrap();
    assert!(row.contains("data-status=\"refuted\""), "{row}");
    assert!(row.contains("NCCL_PROTO=LL speeds up decode") && row.contains("within noise"), "{row}");
    assert!(row.contains("57.50 tok/s (n=5)"), "baseline mean in the row: {row}");
    let figure =
        page.split(&format!("id=\"chart-{id}\"")).nth(1).expect("a chart figure").split("</figure>").next().unwrap();
    assert!(figure.contains("<svg") && figure.contains("<circle"), "the chart, server-rendered: {figure}");
    assert!(row.contains("NCCL_PROTO (unset) → LL"), "provenance in the row: {row}");
    let overview = page
        .split("id=\"overview-chart\"")
        .nth(1)
        .expect("the investigation's chart")
        .split("</figure>")
        .next()
        .unwrap();
    assert!(overview.contains("<svg") && overview.contains("(default env)"), "{overview}");
    assert_eq!(app.get(&format!("/api/v1/investigations/{investigation}")).await.json()["hypotheses"][0]["id"], id);

    // The page keeps each hypothesis's view (a thousand runs take ms to
    // compare again); a run, a measurement or an edit under it shows at once.
    let on_page = || async {
        app.get(&format!("/api/v1/investigations/{investigation}")).await.json()["hypotheses"][0]["comparison"].clone()
    };
    assert_eq!(on_page().await["treatment"]["n"], 4);
    std::fs::write(dir.join("ll.values"), "999\n57.9\n57.2\n58.1\n57.6\n75.0\n").unwrap();
    let another = crate::runs::start(&app, treatment, json!({})).await[0];
    crate::runs::finished(&app, another).await;
    let after_run = on_page().await;
    assert_eq!(after_run["treatment"]["n"], 5, "a new run: {after_run}");
    assert!((after_run["treatment"]["mean"].as_f64().unwrap() - 61.16).abs() < 1e-9, "{after_run}");
    let edited =
        app.patch_json(&format!("/api/v1/hypotheses/{id}"), json!({ "treatment": { "runs": [another] } })).await;
    assert_eq!(edited.status, StatusCode::OK, "{}", edited.text());
    let after_edit = on_page().await;
    assert_eq!(
        (after_edit["treatment"]["n"].as_u64(), after_edit["treatment"]["mean"].as_f64()),
        (Some(1), Some(75.0))
    );
    let restored = json!({ "treatment": { "steps": [treatment] } });
    assert_eq!(app.patch_json(&format!("/api/v1/hypotheses/{id}"), restored).await.status, StatusCode::OK);
    assert_eq!(on_page().await["treatment"]["n"], 5);

    // A single run per side: noise unknown, and what to do about it.
    let single = app
        .post_json(
            &hypotheses,
            json!({ "statement": "one run each", "metric": "output_throughput",
                    "baseline": { "runs": [h["baseline_values"][0][0]] }, "treatment": { "runs": [h["treatment_values"][0][0]] } }),
        )
        .await
        .json();
    assert_eq!(single["comparison"]["outcome"], "noise_unknown", "{single}");
    assert!(single["comparison"]["verdict"].as_str().unwrap().contains("repeat 5"), "{single}");

    // Bad input gets a reason.
    for (bad, needle) in [
        (json!({ "metric": "x" }), "statement"),
        (json!({ "statement": "s", "status": "maybe" }), "status"),
        (json!({ "statement": "s", "direction": "up" }), "increase or decrease"),
        (json!({ "statement": "s", "expected_pct": -3 }), "percentage"),
        (json!({ "statement": "s", "metric": "a b" }), "metric"),
    ] {
        let response = app.post_json(&hypotheses, bad.clone()).await;
        assert_eq!(response.status, StatusCode::UNPROCESSABLE_ENTITY, "{bad}: {}", response.text());
        assert!(response.text().contains(needle), "{bad}: {}", response.text());
    }
    assert_eq!(app.delete(&format!("/api/v1/hypotheses/{id}")).await.status, StatusCode::NO_CONTENT);
    assert_eq!(app.get(&format!("/api/v1/hypotheses/{id}")).await.status, StatusCode::NOT_FOUND);
}

/// Facts captured between the groups (here: another python asked about packages)
/// make the experiment warn; evidence names steps of the same investigation only.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn groups_under_different_host_facts_are_flagged_and_evidence_is_checked() {
    let sshd = crate::sshd::Sshd::start();
    let app = crate::runs::app_with_host(&sshd).await;
    let speed = |v: &str| format!("echo 'Throughput: 1.00 requests/s, 9.00 total tokens/s, {v} output tokens/s'");
    let baseline = crate::runs::command_step(&app, json!({ "command": speed("57.5") })).await;
    let investigation =
        app.get(&format!("/api/v1/steps/{baseline}")).await.json()["investigation_id"].as_str().unwrap().to_string();
    for run in crate::runs::start(&app, baseline, json!({})).await {
        crate::runs::finished(&app, run).await;
    }
    let recapture = app.post_json("/api/v1/hosts/gpu/facts", json!({ "python": "/nonexistent/python" })).await;
    assert_eq!(recapture.status, StatusCode::OK, "{}", recapture.text());
    let treatment = app
        .post_json(
            &format!("/api/v1/investigations/{investigation}/steps"),
            json!({ "kind": "command", "host": "gpu", "command": speed("33.0"), "env": { "NCCL_PROTO": "LL" } }),
        )
        .await
        .json()["id"]
        .as_i64()
        .unwrap();
    for run in crate::runs::start(&app, treatment, json!({})).await {
        crate::runs::finished(&app, run).await;
    }
    let note = app.note(&investigation, "Custom allreduce is disabled on more than two PCIe-only GPUs").await;
    let note_id = note["id"].as_i64().unwrap();
    let hypotheses = format!("/api/v1/investigations/{investigation}/hypotheses");
    let h = app
        .post_json(
            &hypotheses,
            json!({ "statement": "LL is slower", "metric": "output_throughput",
                    "baseline": { "steps": [baseline] }, "treatment": { "steps": [treatment] },
                    "evidence": [note_id, note_id, baseline] }),
        )
        .await;
    assert_eq!(h.status, StatusCode::CREATED, "{}", h.text());
    let h = h.json();
    assert_eq!(h["evidence"], json!([note_id, baseline]), "each step once");
    let warnings = h["provenance"]["warnings"].to_string();
    assert!(warnings.contains("different host facts") && warnings.contains("python"), "{h}");
    assert!(h["provenance"]["summary"].as_str().unwrap().contains("different host facts"), "{h}");

    let elsewhere = app.investigation("elsewhere").await;
    let stranger = app.note(&elsewhere, "not this one").await["id"].as_i64().unwrap();
    let id = h["id"].as_i64().unwrap();
    let refused = app.patch_json(&format!("/api/v1/hypotheses/{id}"), json!({ "evidence": [stranger] })).await;
    assert_eq!(refused.status, StatusCode::UNPROCESSABLE_ENTITY, "{}", refused.text());
    assert!(refused.text().contains("not a step of this investigation"), "{}", refused.text());
    let page = app.get(&format!("/i/{investigation}")).await.text();
    let row = page.split(&format!("<tr id=\"hypothesis-{id}\"")).nth(1).unwrap().split("</tr>").next().unwrap();
    assert!(row.contains(&format!("href=\"#step-{note_id}\"")), "evidence links in the row: {row}");
    assert!(row.contains("class=\"warning\""), "the warning shows: {row}");
}

/// A collective budget whose latency comes from an all-reduce sweep a run printed
/// (the real H200 log) and whose speed comes from a benchmark run.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn calculators_take_their_inputs_from_measurements() {
    let sshd = crate::sshd::Sshd::start();
    let app = crate::runs::app_with_host(&sshd).await;
    let log = sshd.dir.path().join("allreduce-LL.log");
    std::fs::write(&log, server::fixtures::read("gpu-host-h200x2/allreduce-LL.log")).unwrap();
    let command = format!(
        "cat {}; echo 'Throughput: 1.00 requests/s, 9.00 total tokens/s, 57.50 output tokens/s'",
        log.display()
    );
    let step = crate::runs::command_step(&app, json!({ "command": command })).await;
    let investigation =
        app.get(&format!("/api/v1/steps/{step}")).await.json()["investigation_id"].as_str().unwrap().to_string();
    let run = crate::runs::start(&app, step, json!({})).await[0];
    crate::runs::finished(&app, run).await;
    let measurements = app.get(&format!("/api/v1/investigations/{investigation}/measurements")).await.json();
    let find = |metric: &str, key: Option<&str>| {
        measurements
            .as_array()
            .unwrap()
            .iter()
            .find(|m| m["metric"] == metric && m["key"].as_str() == key)
            .unwrap_or_else(|| panic!("{metric} {key:?} in {measurements}"))["id"]
            .as_i64()
            .unwrap()
    };
    let latency = find("allreduce_time_us", Some("16384 B"));
    let speed = find("output_throughput", None);

    let steps = format!("/api/v1/investigations/{investigation}/steps");
    let budget = app
        .post_json(
            &steps,
            json!({ "kind": "calculator", "calculator": "collective", "layers": 78, "per_layer": 2,
                    "latency_from": { "measurement": latency }, "tok_s_from": { "measurement": speed } }),
        )
        .await;
    assert_eq!(budget.status, StatusCode::CREATED, "{}", budget.text());
    let budget = budget.json();
    let body = &budget;
    assert_eq!(body["latency_us"], 38.96, "{body}");
    assert_eq!(body["tok_s"], 57.5, "{body}");
    assert_eq!(body["latency_from"]["run"], run, "{body}");
    assert_eq!(body["latency_from"]["step"], step, "{body}");
    assert_eq!(body["latency_from"]["key"], "16384 B", "{body}");
    let page = app.get(&format!("/i/{investigation}")).await.text();
    assert!(page.contains(&format!("allreduce_time_us at 16384 B of run #{run}")), "the source is shown");
    // 156 × 38.96 µs = 6.08 ms of a 17.4 ms token: 35 %.
    assert!(page.contains("6.08 ms") && page.contains("35 % of 17.4 ms"), "the budget's numbers");

    for (bad, needle) in [
        (json!({ "latency_from": { "measurement": speed } }), "needs a latency"),
        (json!({ "latency_from": { "measurement": 999_999 } }), "no measurement 999999"),
        (json!({ "latency_us": 40, "tok_s_from": { "measurement": latency } }), "needs a speed"),
    ] {
        let mut body = json!({ "kind": "calculator", "calculator": "collective", "layers": 78, "per_layer": 2 });
        body.as_object_mut().unwrap().extend(bad.as_object().unwrap().clone());
        let response = app.post_json(&steps, body.clone()).await;
        assert_eq!(response.status, StatusCode::UNPROCESSABLE_ENTITY, "{body}: {}", response.text());
        assert!(response.text().contains(needle), "{body}: {}", response.text());
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stale_save_of_a_hypothesis_is_refused_with_the_newer_text() {
    let app = crate::helpers::spawn_app().await;
    let investigation = app.investigation("two editors").await;
    let created = app
        .post_json(
            &format!("/api/v1/investigations/{investigation}/hypotheses"),
            json!({ "statement": "NCCL allreduce is the bottleneck" }),
        )
        .await
        .json();
    let id = created["id"].as_i64().unwrap();
    assert_eq!(created["version"], 1);
    // Two people opened version 1; the first save wins and bumps the version.
    let first = app
        .patch_json(
            &format!("/api/v1/hypotheses/{id}"),
            json!({ "statement": "156 allreduces per token", "version": 1 }),
        )
        .await;
    assert_eq!(first.status, StatusCode::OK, "{}", first.text());
    assert_eq!((first.json()["version"].as_i64(), first.json()["updated_by"].as_str()), (Some(2), Some("local")));
    let second =
        app.patch_json(&format!("/api/v1/hypotheses/{id}"), json!({ "status": "refuted", "version": 1 })).await;
    assert_eq!(second.status, StatusCode::CONFLICT);
    assert_eq!(second.error_code(), "conflict");
    let message = second.json()["error"]["message"].as_str().unwrap().to_string();
    assert!(message.contains("changed by local") && message.contains("156 allreduces per token"), "{message}");
    let now = app.get(&format!("/api/v1/hypotheses/{id}")).await.json();
    assert_eq!(
        (now["status"].as_str(), now["version"].as_i64()),
        (Some("open"), Some(2)),
        "nothing of the stale save applied"
    );
    // A script without a version writes over whatever is there.
    assert_eq!(
        app.patch_json(&format!("/api/v1/hypotheses/{id}"), json!({ "status": "supported" })).await.status,
        StatusCode::OK
    );
    // An expected size set, then taken away with `null` (absent leaves it).
    let set = app.patch_json(&format!("/api/v1/hypotheses/{id}"), json!({ "expected_pct": 15 })).await.json();
    assert_eq!(set["expected_pct"], 15.0, "{set}");
    let kept = app.patch_json(&format!("/api/v1/hypotheses/{id}"), json!({ "metric": "tpot_ms" })).await.json();
    assert_eq!(kept["expected_pct"], 15.0, "absent: unchanged: {kept}");
    let cleared = app.patch_json(&format!("/api/v1/hypotheses/{id}"), json!({ "expected_pct": null })).await.json();
    assert!(cleared["expected_pct"].is_null(), "{cleared}");
    // Each edit is in the audit log, saying what changed.
    let audit = app.get("/api/v1/audit?limit=20").await.json();
    let edits: Vec<&str> = audit
        .as_array()
        .unwrap()
        .iter()
        .filter(|e| e["action"] == "hypothesis.edit")
        .filter_map(|e| e["outcome"].as_str())
        .collect();
    assert!(edits.contains(&"expected: 15 % → —"), "{edits:?}");
    assert!(edits.contains(&"metric: — → tpot_ms"), "{edits:?}");
    assert!(
        edits.contains(&"status: open (auto) → refuted") || edits.contains(&"status: open (auto) → supported"),
        "{edits:?}"
    );
    assert!(edits.contains(&"statement changed"), "{edits:?}");
}

/// A blank metric is refused with the page's sentence, through the API too; a
/// script that has none yet leaves it out.
#[tokio::test]
async fn a_blank_metric_is_refused_and_one_left_out_is_not() {
    let app = crate::helpers::spawn_app().await;
    let investigation = app.investigation("metrics named").await;
    let hypotheses = format!("/api/v1/investigations/{investigation}/hypotheses");
    for blank in ["", "   ", "\t"] {
        let refused = app.post_json(&hypotheses, json!({ "statement": "LL is faster", "metric": blank })).await;
        assert_eq!(refused.status, StatusCode::UNPROCESSABLE_ENTITY, "{blank:?}: {}", refused.text());
        assert!(refused.text().contains("Choose the metric this hypothesis is judged on"), "{}", refused.text());
    }
    let odd = app.post_json(&hypotheses, json!({ "statement": "LL is faster", "metric": "tok/s <b>" })).await;
    assert_eq!(odd.status, StatusCode::UNPROCESSABLE_ENTITY, "{}", odd.text());
    assert!(odd.text().contains("is not a metric name"), "{}", odd.text());
    let later = app.post_json(&hypotheses, json!({ "statement": "LL is faster" })).await;
    assert_eq!(later.status, StatusCode::CREATED, "{}", later.text());
    let id = later.json()["id"].as_i64().unwrap();
    assert!(later.json()["metric"].is_null());
    let cleared = app.patch_json(&format!("/api/v1/hypotheses/{id}"), json!({ "metric": " " })).await;
    assert_eq!(cleared.status, StatusCode::UNPROCESSABLE_ENTITY, "{}", cleared.text());
    let named = app.patch_json(&format!("/api/v1/hypotheses/{id}"), json!({ "metric": " output_throughput " })).await;
    assert_eq!(named.json()["metric"], "output_throughput", "{}", named.text());
}

/// A latency that falls from 100–5000 ms to 10 ms: the Welch interval in
/// percent of the baseline would reach below −100 %, which no positive
/// metric can; the interval is then the ratio's, from the logarithms, and
/// the verdict says so.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_positive_metric_never_falls_by_more_than_all_of_it() {
    let sshd = crate::sshd::Sshd::start();
    let app = crate::runs::app_with_host(&sshd).await;
    let dir = sshd.dir.path();
    std::fs::write(
        dir.join("lat.sh"),
        "n=$(cat \"$1.n\" 2>/dev/null || echo 0); n=$((n+1)); echo $n > \"$1.n\"\n\
         echo \"lat $(sed -n \"${n}p\" \"$1.values\") ms\"\n",
    )
    .unwrap();
    std::fs::write(dir.join("slow.values"), "100\n5000\n2500\n800\n").unwrap();
    std::fs::write(dir.join("fast.values"), "10\n10.4\n9.7\n").unwrap();
    let bench = |which: &str| format!("cd {} && sh lat.sh {which}", dir.display());
    let baseline = crate::runs::command_step(&app, json!({ "command": bench("slow"), "telemetry": false })).await;
    let investigation =
        app.get(&format!("/api/v1/steps/{baseline}")).await.json()["investigation_id"].as_str().unwrap().to_string();
    let extractor = json!({ "name": "lat_ms", "pattern": r"lat ([\d.]+) ms", "unit": "ms" });
    let added = app.post_json(&format!("/api/v1/investigations/{investigation}/extractors"), extractor).await;
    assert_eq!(added.status, StatusCode::CREATED, "{}", added.text());
    let treatment = app
        .post_json(
            &format!("/api/v1/investigations/{investigation}/steps"),
            json!({ "kind": "command", "host": "gpu", "command": bench("fast"), "telemetry": false }),
        )
        .await
        .json()["id"]
        .as_i64()
        .unwrap();
    for (step, repeat) in [(baseline, 4), (treatment, 3)] {
        for run in crate::runs::start(&app, step, json!({ "repeat": repeat })).await {
            assert_eq!(crate::runs::finished(&app, run).await["status"], "succeeded");
        }
    }
    let created = app
        .post_json(
            &format!("/api/v1/investigations/{investigation}/hypotheses"),
            json!({ "statement": "the cache makes it fast", "metric": "lat_ms", "direction": "decrease",
                    "baseline": { "steps": [baseline] }, "treatment": { "steps": [treatment] } }),
        )
        .await;
    assert_eq!(created.status, StatusCode::CREATED, "{}", created.text());
    let c = &created.json()["comparison"];
    assert_eq!((c["baseline"]["n"].as_u64(), c["treatment"]["n"].as_u64()), (Some(4), Some(3)), "{c}");
    let (lo, hi) = (c["ci_pct"][0].as_f64().unwrap(), c["ci_pct"][1].as_f64().unwrap());
    assert!(lo >= -100.0 && lo <= hi, "no latency falls by more than 100 %: {c}");
    let delta = c["delta_pct"].as_f64().unwrap();
    assert!(lo <= delta && delta <= hi, "the estimate inside its interval: {c}");
    assert!(c["verdict"].as_str().unwrap().contains("log scale"), "says which interval: {c}");
    assert_eq!(c["scale"], "log", "{c}");
    assert!(created.json()["metric_note"].is_null());

    // A metric no run has is saved (it may be measured later), with the nearest name.
    let mistyped = app
        .post_json(
            &format!("/api/v1/investigations/{investigation}/hypotheses"),
            json!({ "statement": "typo", "metric": "ms_lat", "baseline": { "steps": [baseline] },
                    "treatment": { "steps": [treatment] } }),
        )
        .await;
    assert_eq!(mistyped.status, StatusCode::CREATED, "{}", mistyped.text());
    assert_eq!(
        mistyped.json()["metric_note"],
        "No run of these groups measured ms_lat; did you mean lat_ms?",
        "{}",
        mistyped.text()
    );
    let page = app.get(&format!("/i/{investigation}")).await.text();
    assert!(page.contains("did you mean lat_ms?"), "the page says it too");
}

/// Two real torch traces of one decode loop made on the lent H200
/// (`tools/gpu-check/decode_trace.py`, 16 layers): two all-reduce calls per
/// layer against one fused (a `torch.cat` copy, then one call). The
/// hypothesis' answer says which kernels changed.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_hypothesis_with_profiles_says_which_kernels_changed() {
    let sshd = crate::sshd::Sshd::start();
    let app = crate::runs::app_with_host(&sshd).await;
    let results = concat!(env!("CARGO_MANIFEST_DIR"), "/../tools/gpu-check/results");
    let step = |trace: &str| {
        json!({ "command": format!("cp {results}/{trace} \"$SLEUTH_RUN_DIR/trace.json.gz\""), "telemetry": false,
                "artifacts": ["trace.json.gz"] })
    };
    let baseline = crate::runs::command_step(&app, step("decode_16.json.gz")).await;
    let investigation =
        app.get(&format!("/api/v1/steps/{baseline}")).await.json()["investigation_id"].as_str().unwrap().to_string();
    let mut fused = step("decode_16_fused.json.gz");
    fused["kind"] = json!("command");
    fused["host"] = json!("gpu");
    let treatment = app.post_json(&format!("/api/v1/investigations/{investigation}/steps"), fused).await.json()["id"]
        .as_i64()
        .unwrap();
    for step in [baseline, treatment] {
        for run in crate::runs::start(&app, step, json!({})).await {
            assert_eq!(crate::runs::finished(&app, run).await["status"], "succeeded");
        }
    }
    let created = app
        .post_json(
            &format!("/api/v1/investigations/{investigation}/hypotheses"),
            json!({ "statement": "Fusing the two all-reduces per layer halves the collective calls",
                    "baseline": { "steps": [baseline] }, "treatment": { "steps": [treatment] } }),
        )
        .await;
    assert_eq!(created.status, StatusCode::CREATED, "{}", created.text());
    let h = created.json();
    let d = &h["profile_diff"];
    assert_eq!(d["per"], "per step", "{d}");
    assert_eq!(d["collective_calls_per_step"], json!([32.0, 16.0]), "{d}");
    let category =
        |name: &str| d["categories"].as_array().unwrap().iter().find(|c| c["name"] == name).cloned().unwrap();
    let collective = category("collective");
    assert_eq!(
        (collective["baseline_calls"].as_f64(), collective["treatment_calls"].as_f64()),
        (Some(32.0), Some(16.0))
    );
    // The fused loop's copy: a kernel the baseline never ran, 16 times a step.
    let kernels = d["kernels"].as_array().unwrap();
    let copy = kernels
        .iter()
        .find(|k| k["name"].as_str().unwrap().contains("CatArrayBatchedCopy"))
        .unwrap_or_else(|| panic!("{d}"));
    assert!(copy["baseline_ms"].is_null(), "{copy}");
    assert_eq!(copy["treatment_calls"].as_f64(), Some(16.0), "{copy}");
    let summary = d["summary"].as_str().unwrap();
    assert!(summary.contains("collective calls per step 32.00 → 16.00"), "{summary}");
    assert!(summary.contains("new in the treatment") && summary.contains("CatArrayBatchedCopy"), "{summary}");

    // The investigation's page carries it beside the hypothesis.
    let page = app.get(&format!("/i/{investigation}")).await.text();
    assert!(page.contains("class=\"profile-diff\""), "{page}");
    assert!(page.contains("collective calls per step 32.00 → 16.00"));
}
