//! Search and export against a real sshd: what the team wrote and ran is found
//! (run output by line, with its byte range), only by those who may read it, with
//! filters; hostile queries are sentences, never 500s; exports tell the story as
//! HTML (no scripts, nothing loaded), Markdown (parsed by a CommonMark library)
//! and a zip, and a share link's export hides what the link hides.

use crate::helpers::urlencode;
use crate::permissions::{Team, team};
use axum::http::{Method, StatusCode};
use pulldown_cmark::{CodeBlockKind, Event, Options, Parser, Tag};
use serde_json::{Value, json};
use std::time::{Duration, Instant};

const LOG_LINE: &str = "Custom allreduce is disabled because it's not supported on more than two PCIe-only GPUs";

async fn search(team: &Team, who: &str, q: &str) -> Value {
    let uri = format!("/api/v1/search?q={}", urlencode(q));
    team.ok(who, Method::GET, &uri, Value::Null).await
}

/// Searches until something is found (indexing runs a moment after a change).
async fn found(team: &Team, who: &str, q: &str) -> Value {
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let answer = search(team, who, q).await;
        if answer["total"].as_u64().unwrap_or(0) > 0 && answer["indexing"] == 0 {
            return answer;
        }
        assert!(Instant::now() < deadline, "{q:?} found nothing in 30 s: {answer}");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

/// Searches until results of every one of `kinds` are found (a change is
/// indexed a moment after it is made, so an older row can be found first).
async fn found_kinds(team: &Team, who: &str, q: &str, kinds: &[&str]) -> Value {
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let answer = found(team, who, q).await;
        let results = answer["results"].as_array().cloned().unwrap_or_default();
        if kinds.iter().all(|k| results.iter().any(|r| r["kind"] == *k)) {
            return answer;
        }
        assert!(Instant::now() < deadline, "{q:?} did not find all of {kinds:?} in 30 s: {answer}");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

async fn finished(team: &Team, run: i64) -> Value {
    for _ in 0..600 {
        let now = team.ok("own", Method::GET, &format!("/api/v1/runs/{run}"), Value::Null).await;
        if !matches!(now["status"].as_str(), Some("queued" | "running")) {
            return now;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    panic!("run {run} did not finish");
}

/// The story: a vLLM-like run under NCCL_PROTO=LL printing the log line and a
/// tok/s figure, a custom extractor for it, a note, the source with an
/// annotation, and a hypothesis. Returns (investigation, command step, run).
async fn story(team: &Team, sshd: &crate::sshd::Sshd, title: &str) -> (String, i64, i64) {
    let inv = team
        .ok(
            "own",
            Method::POST,
            "/api/v1/investigations",
            json!({ "title": title,
        "question": "Why is vLLM stuck at 57.5 tok/s on 8 PCIe GPUs?" }),
        )
        .await;
    let id = inv["id"].as_str().unwrap().to_string();
    team.ok(
        "own",
        Method::PUT,
        &format!("/api/v1/investigations/{id}/members"),
        json!({ "user": "view", "role": "viewer" }),
    )
    .await;
    team.ok(
        "own",
        Method::POST,
        &format!("/api/v1/investigations/{id}/extractors"),
        json!({ "name": "decode", "pattern": r"decode ([\d.]+) tok/s", "unit": "tok/s" }),
    )
    .await;
    let steps = format!("/api/v1/investigations/{id}/steps");
    team.ok(
        "own",
        Method::POST,
        &steps,
        json!({ "kind": "note",
        "body": "Sweeping **NCCL_PROTO** changed nothing; bandwidth is 13 % of HBM peak." }),
    )
    .await;
    // The source the run's traceback names, on the host.
    let dir = sshd.dir.path().join(format!("vllm-{id}"));
    std::fs::create_dir_all(&dir).unwrap();
    let file = dir.join("custom_all_reduce.py");
    let source: String = (1..=200)
        .map(|i| {
            if i == 137 {
                "    if world_size > 2 and not full_nvlink:  # PCIe\n".to_string()
            } else {
                format!("x_{i} = {i}\n")
            }
        })
        .collect();
    std::fs::write(&file, source).unwrap();
    let script = format!(
        "for i in $(seq 1 300); do echo \"INFO worker $i ready\"; done; echo \"WARNING {LOG_LINE}\"; \
         echo \"proto=$NCCL_PROTO on 127.0.0.1\"; echo 'decode 57.5 tok/s'; \
         echo '  File \"{}\", line 137, in should_custom_ar'",
        file.display()
    );
    // The NCCL_PROTO sweep: unset and LL, a run each.
    let step = team
        .ok(
            "own",
            Method::POST,
            &steps,
            json!({ "kind": "command", "host": "gpu", "command": script,
        "matrix": { "NCCL_PROTO": [null, "LL"] } }),
        )
        .await;
    let step = step["id"].as_i64().unwrap();
    let runs = team.ok("own", Method::POST, &format!("/api/v1/steps/{step}/runs"), json!({})).await;
    let config = |r: &Value| r["config"]["NCCL_PROTO"].clone();
    let baseline = runs.as_array().unwrap().iter().find(|r| config(r).is_null()).unwrap()["id"].as_i64().unwrap();
    let run = runs.as_array().unwrap().iter().find(|r| config(r) == "LL").unwrap()["id"].as_i64().unwrap();
    finished(team, baseline).await;
    let done = finished(team, run).await;
    assert_eq!(done["status"], "succeeded", "{done}");
    // The roofline from the measured tok/s.
    let measured = team.ok("own", Method::GET, &format!("/api/v1/investigations/{id}/measurements"), Value::Null).await;
    let tok_s =
        measured.as_array().unwrap().iter().find(|m| m["metric"] == "decode" && m["run_id"] == run).unwrap()["id"]
            .clone();
    team.ok(
        "own",
        Method::POST,
        &steps,
        json!({ "kind": "calculator", "calculator": "bandwidth", "gpu": "H200",
        "gpus": 8, "weights_gb": 140, "tok_s_from": { "measurement": tok_s } }),
    )
    .await;

    // Log line → snippet: the traceback's file, found on the run's host, opened around its line.
    let found = team
        .ok(
            "own",
            Method::POST,
            &format!("/api/v1/runs/{run}/source"),
            json!({ "file": "custom_all_reduce.py", "line": 137 }),
        )
        .await;
    assert_eq!(found["candidates"], json!([file.display().to_string()]), "{found}");
    let snippet = team
        .ok(
            "own",
            Method::POST,
            &steps,
            json!({ "kind": "snippet", "host": "gpu",
        "path": found["candidates"][0], "start": 130, "end": 180 }),
        )
        .await;
    let snippet = snippet["id"].as_i64().unwrap();
    team.ok(
        "own",
        Method::POST,
        &format!("/api/v1/steps/{snippet}/annotations"),
        json!({ "start": 137, "end": 138,
        "body": "More than two PCIe GPUs: **no custom allreduce**, NCCL does all 156 calls per token." }),
    )
    .await;
    team.ok(
        "own",
        Method::POST,
        &format!("/api/v1/investigations/{id}/hypotheses"),
        json!({
        "statement": "NCCL allreduce bounds decode", "rationale": "156 calls per token over PCIe",
        "metric": "decode", "direction": "increase",
        "baseline": { "runs": [baseline] }, "treatment": { "runs": [run] } }),
    )
    .await;
    (id, step, run)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn search_finds_output_lines_and_what_was_written_for_those_who_may_read_it() {
    let sshd = crate::sshd::Sshd::start();
    let team = team(&sshd).await;
    let (id, step, run) = story(&team, &sshd, "PCIe box at 57.5 tok/s").await;
    // Someone else's investigation with the same words, which `own` must not see.
    let other =
        team.ok("stranger", Method::POST, "/api/v1/investigations", json!({ "title": "secret allreduce notes" })).await;
    let other = other["id"].as_str().unwrap().to_string();
    team.ok(
        "stranger",
        Method::POST,
        &format!("/api/v1/investigations/{other}/steps"),
        json!({ "kind": "note", "body": format!("{LOG_LINE} (stranger's copy)") }),
    )
    .await;

    // A phrase from the output: the run line, its number, its bytes.
    let answer = found(&team, "own", &format!("\"{LOG_LINE}\"")).await;
    let outputs: Vec<&Value> = answer["results"].as_array().unwrap().iter().filter(|r| r["kind"] == "output").collect();
    if outputs.len() != 2 {
        // Seen once (2026-12-02, 1 run in 10 of the suite): one run's line not found
        // with nothing left to index. Whether its output has the line tells a run
        // that lost bytes from an index that missed them.
        let runs = team.ok("own", Method::GET, &format!("/api/v1/steps/{step}/runs"), Value::Null).await;
        let mut seen = Vec::new();
        for r in runs.as_array().unwrap() {
            let out =
                team.call("own", Method::GET, &format!("/api/v1/runs/{}/output", r["id"]), Value::Null).await.text();
            seen.push(format!(
                "run {} {} {} bytes, has the line: {}",
                r["id"],
                r["status"],
                out.len(),
                out.contains(LOG_LINE)
            ));
        }
        panic!("both runs' output, and nothing of the stranger's: {answer}\n{}", seen.join("\n"));
    }
    assert!(answer["results"].as_array().unwrap().iter().all(|r| r["investigation_id"] == id.as_str()), "{answer}");
    let hit = outputs.iter().find(|r| r["run_id"] == run).expect("the run");
    assert_eq!(hit["line"], 301, "300 INFO lines, then the warning: {hit}");
    assert_eq!(hit["url"], format!("/runs/{run}"), "the run's own page, not its step's newest run");
    assert_eq!(hit["step_id"], step);
    assert_eq!(hit["title"], "PCIe box at 57.5 tok/s");
    assert_eq!(
        hit["html"],
        format!("WARNING <mark>{}</mark>", LOG_LINE.replace('\'', "&#39;")),
        "escaped, then marked"
    );
    let raw = team.call("own", Method::GET, hit["output_url"].as_str().unwrap(), Value::Null).await;
    assert_eq!(raw.text(), format!("WARNING {LOG_LINE}"), "the output URL is exactly that line");

    // Everything else that was written, each with its permalink.
    let kinds = |answer: &Value| -> Vec<String> {
        answer["results"].as_array().unwrap().iter().map(|r| r["kind"].as_str().unwrap().to_string()).collect()
    };
    let note = found(&team, "own", "hbm peak").await;
    assert_eq!(kinds(&note), ["note"], "{note}");
    let annotation = found_kinds(&team, "own", "\"156 calls\"", &["annotation", "hypothesis"]).await;
    let a = annotation["results"].as_array().unwrap().iter().find(|r| r["kind"] == "annotation").unwrap();
    assert!(a["url"].as_str().unwrap().contains("#annotation-"), "{a}");
    let source = found(&team, "own", "full_nvlink").await;
    let s =
        source["results"].as_array().unwrap().iter().find(|r| r["kind"] == "snippet").expect("the snapshot's lines");
    assert_eq!(s["line"], 137, "{s}");
    assert!(s["url"].as_str().unwrap().ends_with("-L137"), "{s}");
    let question = found(&team, "own", "stuck").await;
    assert_eq!(kinds(&question), ["investigation"]);
    assert_eq!(question["results"][0]["url"], format!("/i/{id}"));
    let measured = found(&team, "own", "decode kind:measurement").await;
    assert!(measured["results"][0]["html"].as_str().unwrap().contains("<mark>decode</mark>"), "{measured}");

    // Prefixes, exclusions, filters.
    assert!(found(&team, "own", "allred*").await["total"].as_u64().unwrap() >= 3);
    let excluded = search(&team, "own", "allreduce -warning kind:output").await;
    assert_eq!(excluded["total"], 0, "every output line with allreduce also says WARNING: {excluded}");
    for (q, expect) in [
        ("allreduce env:NCCL_PROTO=LL", 1),
        ("allreduce env:NCCL_PROTO=unset", 1),
        ("allreduce env:NCCL_PROTO=SIMPLE", 0),
        ("allreduce env:NCCL_PROTO", 2),
        ("allreduce status:succeeded", 2),
        ("allreduce status:failed", 0),
        ("allreduce host:gpu kind:output", 2),
        ("allreduce host:other", 0),
        ("allreduce metric:decode kind:output", 2),
        ("allreduce author:own kind:output", 2),
        ("allreduce author:nobody", 0),
        ("allreduce after:2000-01-01 kind:output", 2),
        ("allreduce before:2000-01-01", 0),
    ] {
        let answer = search(&team, "own", q).await;
        let outputs = answer["results"].as_array().unwrap().iter().filter(|r| r["kind"] == "output").count();
        assert_eq!(outputs, expect, "{q}: {answer}");
    }
    // Pages: the total counts what the reader may see; offsets page through it.
    let all = search(&team, "own", "allreduce").await;
    let total = all["total"].as_u64().unwrap();
    assert!(total >= 5, "{all}");
    let first = team.ok("own", Method::GET, "/api/v1/search?q=allreduce&limit=2", Value::Null).await;
    let second =
        team.ok("own", Method::GET, "/api/v1/search?q=allreduce&limit=2&offset=2&sort=newest", Value::Null).await;
    assert_eq!((first["results"].as_array().unwrap().len(), first["total"].as_u64().unwrap()), (2, total));
    assert_eq!(second["sort"], "newest");

    // Rights are in the query: a viewer sees the same, a stranger only their own, an admin all.
    assert_eq!(search(&team, "view", "allreduce").await["total"].as_u64(), Some(total));
    // Their investigation is indexed a moment after it changed, like any other.
    let stranger = found(&team, "stranger", "allreduce").await;
    assert_eq!(stranger["total"], 2, "their title and note: {stranger}");
    assert!(stranger["results"].as_array().unwrap().iter().all(|r| r["investigation_id"] == other.as_str()));
    assert_eq!(search(&team, "admin", "allreduce").await["total"].as_u64(), Some(total + 2));
    assert_eq!(search(&team, "edit", "allreduce").await["total"], 0, "not a member of either");

    // Hostile queries: never a 500; an empty or malformed one is a 422 with a reason.
    for q in
        ["\"", "\" OR 1=1 --", "NEAR(a b)", "a AND", "*", "'; DROP TABLE runs; --", "<script>alert(1)</script>", "((("]
    {
        let response = team.call("own", Method::GET, &format!("/api/v1/search?q={}", urlencode(q)), Value::Null).await;
        assert!(
            matches!(response.status, StatusCode::OK | StatusCode::UNPROCESSABLE_ENTITY),
            "{q}: {}",
            response.text()
        );
        if response.status == StatusCode::OK {
            assert!(!response.text().contains("<script>"), "{q}: {}", response.text());
        }
    }
    for (q, says) in [("", "Type a word"), ("-warning", "not excluded"), ("a after:2026-13-40", "not a date")] {
        let response = team.call("own", Method::GET, &format!("/api/v1/search?q={}", urlencode(q)), Value::Null).await;
        assert_eq!(response.status, StatusCode::UNPROCESSABLE_ENTITY, "{q}: {}", response.text());
        assert!(response.text().contains(says), "{q}: {}", response.text());
    }
    let bad_sort = team.call("own", Method::GET, "/api/v1/search?q=a&sort=best", Value::Null).await;
    assert_eq!(bad_sort.status, StatusCode::UNPROCESSABLE_ENTITY);

    // A change is found, the old words are not; a deleted investigation takes its words along.
    let inv = team.ok("stranger", Method::GET, &format!("/api/v1/investigations/{other}"), Value::Null).await;
    let note_step = inv["steps"][0]["id"].as_i64().unwrap();
    team.ok("stranger", Method::PATCH, &format!("/api/v1/steps/{note_step}"), json!({ "body": "rewritten: zebra" }))
        .await;
    found(&team, "stranger", "zebra").await;
    let after = search(&team, "stranger", "allreduce").await;
    assert_eq!(kinds(&after), ["investigation"], "the old note is gone from the index, the title stays: {after}");
    team.ok("stranger", Method::DELETE, &format!("/api/v1/investigations/{other}"), Value::Null).await;
    assert_eq!(search(&team, "admin", "zebra").await["total"], 0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn exports_tell_the_story_offline_and_share_links_hide_what_they_hide() {
    let sshd = crate::sshd::Sshd::start();
    let team = team(&sshd).await;
    let title = "<script>alert(1)</script> PCIe | 57.5 tok/s";
    let (id, step, _) = story(&team, &sshd, title).await;
    let export = |format: &str| format!("/api/v1/investigations/{id}/export?format={format}");

    // HTML: one file, nothing that runs or loads, the story inside.
    let response = team.call("view", Method::GET, &export("html"), Value::Null).await;
    assert_eq!(response.status, StatusCode::OK, "{}", response.text());
    assert_eq!(response.headers["content-type"], "text/html; charset=utf-8");
    assert!(
        response.headers["content-disposition"]
            .to_str()
            .unwrap()
            .starts_with("attachment; filename=\"script-alert-1-script-pcie-57-5-tok-s-")
    );
    let html = response.text();
    assert!(html.contains("&lt;script&gt;alert(1)&lt;/script&gt; PCIe | 57.5 tok/s"), "the title, escaped");
    assert!(!html.to_lowercase().contains("<script"), "no scripts");
    for needle in ["src=\"http", "href=\"http", "url(", "@import", "<link", "<img", "<iframe"] {
        assert!(!html.contains(needle), "{needle}: nothing loads");
    }
    assert!(html.contains("default-src 'none'"), "the file declares its own policy");
    assert!(html.contains("NCCL allreduce bounds decode") && html.contains("<svg"), "hypothesis table and chart");
    assert!(
        html.contains(&format!("id=\"step-{step}\"")) && html.contains(&format!("href=\"#step-{step}\"")),
        "anchors"
    );
    assert!(html.contains("NCCL_PROTO=LL"), "command with its env");
    assert!(html.contains(&format!("WARNING {LOG_LINE}").replace('\'', "&#39;")), "the log line in the excerpt");
    assert!(html.contains("decode 57.5 tok/s"), "the measured line");
    assert!(html.contains("custom_all_reduce.py&quot;, line 137"), "the source reference line");
    assert!(html.contains("lines left out"), "what was left out is counted");
    assert!(html.contains("id=\"step-") && html.contains("-L137\""), "source lines as anchors");
    assert!(html.contains("no custom allreduce"), "the annotation beside its lines");
    assert!(html.contains("pct_of_peak") && html.contains("ms_per_token"), "the roofline's results");
    assert!(
        html.contains("NCCL_PROTO=LL") && html.contains("NCCL_PROTO = unset, LL"),
        "the sweep and each run's configuration"
    );

    // Markdown: a CommonMark parser sees tables and fenced code with languages.
    let md = team.call("own", Method::GET, &export("md"), Value::Null).await;
    assert_eq!(md.headers["content-type"], "text/markdown; charset=utf-8");
    let md = md.text();
    let mut tables = 0;
    let mut fences = Vec::new();
    let mut html_events = Vec::new();
    for event in Parser::new_ext(&md, Options::ENABLE_TABLES) {
        match event {
            Event::Start(Tag::Table(_)) => tables += 1,
            Event::Start(Tag::CodeBlock(CodeBlockKind::Fenced(lang))) => fences.push(lang.to_string()),
            Event::Html(h) | Event::InlineHtml(h) => html_events.push(h.to_string()),
            _ => {}
        }
    }
    assert!(tables >= 2, "hypotheses and runs as tables: {md}");
    assert!(
        fences.contains(&"sh".to_string())
            && fences.contains(&"python".to_string())
            && fences.contains(&"text".to_string()),
        "{fences:?}"
    );
    assert!(
        html_events.iter().all(|h| h.starts_with("<a id=") || h == "</a>" || h == "<br>"),
        "only our anchors: {html_events:?}"
    );
    assert!(md.contains("&lt;script\\>alert(1)&lt;/script\\> PCIe \\| 57.5 tok/s"), "the title, escaped for Markdown");

    // Zip: the Markdown and its charts as files.
    let zip = team.call("own", Method::GET, &export("zip"), Value::Null).await;
    assert_eq!(zip.headers["content-type"], "application/zip");
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("report.zip");
    std::fs::write(&path, &zip.body).unwrap();
    let listing = std::process::Command::new("python3")
        .args(["-c", "import sys,zipfile; z=zipfile.ZipFile(sys.argv[1]); assert z.testzip() is None; print('\\n'.join(z.namelist()))"])
        .arg(&path)
        .output()
        .unwrap();
    let names = String::from_utf8_lossy(&listing.stdout).to_string();
    assert!(names.lines().any(|n| n.ends_with(".md")) && names.contains("charts/hypothesis-"), "{names}");

    // Comments only when asked; bad formats are 422; strangers get 404.
    team.ok(
        "own",
        Method::POST,
        &format!("/api/v1/investigations/{id}/comments"),
        json!({ "step_id": step, "body": "check run <b>this</b>" }),
    )
    .await;
    let with = team.call("own", Method::GET, &format!("{}&comments=true", export("html")), Value::Null).await.text();
    let without = team.call("own", Method::GET, &export("html"), Value::Null).await.text();
    assert!(with.contains("check run &lt;b&gt;") || with.contains("check run <b>"), "the comment");
    assert!(!without.contains("check run"));
    assert_eq!(
        team.call("own", Method::GET, &export("pdf"), Value::Null).await.status,
        StatusCode::UNPROCESSABLE_ENTITY
    );
    assert_eq!(team.call("stranger", Method::GET, &export("html"), Value::Null).await.status, StatusCode::NOT_FOUND);

    // A share link's export: hosts hidden as the link hides them, no names, audited.
    let link = team
        .ok(
            "own",
            Method::POST,
            &format!("/api/v1/investigations/{id}/shares"),
            json!({ "hide_hosts": true, "label": "vendor" }),
        )
        .await;
    let token = link["url"].as_str().unwrap().trim_start_matches("/s/").to_string();
    let shared =
        team.app.send_with(Method::GET, &format!("/api/v1/shared/{token}/export?format=html"), &[], vec![]).await;
    assert_eq!(shared.status, StatusCode::OK, "{}", shared.text());
    let shared = shared.text();
    assert!(shared.contains("proto=LL on (address hidden)") && !shared.contains("127.0.0.1"), "output hidden too");
    assert!(shared.contains("Command on host 1") && !shared.contains("Command on gpu"));
    assert!(!shared.contains("Exported by own"), "no names");
    let md =
        team.app.send_with(Method::GET, &format!("/api/v1/shared/{token}/export?format=md"), &[], vec![]).await.text();
    assert!(!md.contains("127.0.0.1") && md.contains("host 1"));
    let audit = team.ok("admin", Method::GET, "/api/v1/audit?limit=200", Value::Null).await.to_string();
    assert!(audit.contains("share.export") && audit.contains("investigation.export"), "{audit}");
    let revoked = format!("/api/v1/shares/{}", link["link"]["id"]);
    team.ok("own", Method::DELETE, &revoked, Value::Null).await;
    let gone =
        team.app.send_with(Method::GET, &format!("/api/v1/shared/{token}/export?format=html"), &[], vec![]).await;
    assert_eq!(gone.status, StatusCode::GONE);
}
