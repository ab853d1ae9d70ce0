//! Snippet steps against a real sshd: SFTP range reads, snapshots, bad input.

use crate::helpers::TestApp;
use crate::sshd::Sshd;
use axum::http::StatusCode;
use serde_json::{Value, json};
use std::path::Path;
use std::process::Command;

async fn snippet(app: &TestApp, body: Value) -> crate::helpers::Response {
    let id = app.investigation("source").await;
    let mut step = json!({ "kind": "snippet", "host": "gpu" });
    // Bodies that name their own kind (grep) keep it.
    if let (Some(step), Some(body)) = (step.as_object_mut(), body.as_object()) {
        step.extend(body.clone());
    }
    app.post_json(&format!("/api/v1/investigations/{id}/steps"), step).await
}

fn sed(path: &Path, start: u64, end: u64) -> Vec<u8> {
    Command::new("sed").arg("-n").arg(format!("{start},{end}p")).arg(path).output().unwrap().stdout
}

fn joined(step: &Value) -> Vec<u8> {
    let snapshot = step["snapshots"].as_array().unwrap().last().unwrap();
    let mut text =
        snapshot["lines"].as_array().unwrap().iter().map(|l| l.as_str().unwrap()).collect::<Vec<_>>().join("\n");
    text.push('\n');
    text.into_bytes()
}

/// A host whose SFTP subsystem never starts: every snippet is refused with the
/// reason, and no failed start keeps a channel of the pooled connection — after
/// more failures than it has channels, a command still runs there.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_host_without_sftp_refuses_snippets_and_still_runs_commands() {
    let sshd = Sshd::start_with_sftp("/bin/false");
    let app = crate::runs::app_with_host(&sshd).await;
    let file = sshd.dir.path().join("model.py");
    std::fs::write(&file, "line 1\nline 2\n").unwrap();
    for _ in 0..=server::ssh::MAX_CHANNELS {
        let refused = snippet(&app, json!({ "path": file.display().to_string(), "start": 1, "end": 2 })).await;
        assert_eq!(refused.status, StatusCode::BAD_GATEWAY, "{}", refused.text());
        assert!(refused.text().contains("SFTP"), "says why: {}", refused.text());
    }
    let step = crate::runs::command_step(&app, json!({ "command": "echo still here" })).await;
    let run = crate::runs::start(&app, step, json!({})).await[0];
    let done = crate::runs::finished(&app, run).await;
    assert_eq!(done["status"], "succeeded", "{done}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_python_module_resolves_and_its_lines_match_sed() {
    let sshd = Sshd::start();
    let app = crate::runs::app_with_host(&sshd).await;
    let response =
        snippet(&app, json!({ "module": "json.decoder", "python": "python3", "start": 130, "end": 180 })).await;
    assert_eq!(response.status, StatusCode::CREATED, "{}", response.text());
    let step = response.json();
    let snapshot = &step["snapshots"][0];
    let path = snapshot["path"].as_str().unwrap();
    assert!(path.ends_with("json/decoder.py"), "{path}");
    assert_eq!(joined(&step), sed(Path::new(path), 130, 180), "byte for byte as sed -n 130,180p prints");
    let sha = Command::new("sha256sum").arg(path).output().unwrap().stdout;
    assert_eq!(snapshot["sha256"].as_str().unwrap(), String::from_utf8_lossy(&sha[..64]));
    let lines = Command::new("wc").arg("-l").arg(path).output().unwrap().stdout;
    let wc: u64 = String::from_utf8_lossy(&lines).split_whitespace().next().unwrap().parse().unwrap();
    assert_eq!(snapshot["total_lines"].as_u64().unwrap(), wc);
    assert_eq!((snapshot["start"].as_u64(), snapshot["end"].as_u64()), (Some(130), Some(180)));

    // The page shows it highlighted, with line anchors.
    let page = app.get(&format!("/i/{}", step["investigation_id"].as_str().unwrap())).await.text();
    assert!(page.contains(&format!("id=\"step-{}-L130\"", step["id"])), "line anchors");
    assert!(page.contains("<span class=\"hl-"), "highlighted");
    assert!(page.contains("name=\"author\""), "without accounts, an annotation may be signed by a typed name");

    let bad = snippet(&app, json!({ "module": "no_such_module_xyz", "start": 1, "end": 2 })).await;
    assert_eq!(bad.status, StatusCode::UNPROCESSABLE_ENTITY, "{}", bad.text());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn hostile_paths_never_execute_anything() {
    let sshd = Sshd::start();
    let app = crate::runs::app_with_host(&sshd).await;
    // Commands on the host run in $HOME: that is where a leaked `touch` would land.
    let marker = Path::new(&std::env::var("HOME").unwrap_or_else(|_| "/root".into())).join("sleuth-pwned-snippet");
    let name = "a b'c\";$(touch sleuth-pwned-snippet) `touch sleuth-pwned-snippet`\nnext.py";
    let path = sshd.dir.path().join(name);
    std::fs::write(&path, "x = 1\ny = 2\n").unwrap();
    let response = snippet(&app, json!({ "path": path.to_str().unwrap() })).await;
    assert_eq!(response.status, StatusCode::CREATED, "{}", response.text());
    assert_eq!(joined(&response.json()), b"x = 1\ny = 2\n");
    assert!(response.json()["snapshots"][0]["sha256"].is_string(), "{}", response.text());
    assert!(!marker.exists(), "nothing ran");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bad_input_gets_a_reason_and_never_a_5xx() {
    let sshd = Sshd::start();
    let app = crate::runs::app_with_host(&sshd).await;
    let dir = sshd.dir.path();
    std::fs::write(dir.join("short.txt"), "one\ntwo\nthree\n").unwrap();
    std::fs::write(dir.join("bin.dat"), [0u8, 1, 2, 3, 0, 255]).unwrap();
    std::fs::write(dir.join("latin1.txt"), b"caf\xe9\n").unwrap();
    std::fs::write(dir.join("long.txt"), format!("{}\n", "x".repeat(10_000))).unwrap();
    let p = |name: &str| dir.join(name).display().to_string();

    let cases: Vec<(Value, StatusCode, &str)> = vec![
        (json!({ "path": p("missing.txt"), "start": 1, "end": 2 }), StatusCode::NOT_FOUND, "There is no file"),
        (
            json!({ "path": dir.display().to_string(), "start": 1, "end": 2 }),
            StatusCode::UNPROCESSABLE_ENTITY,
            "is a directory",
        ),
        (json!({ "path": p("bin.dat") }), StatusCode::UNPROCESSABLE_ENTITY, "binary"),
        (
            json!({ "path": p("short.txt"), "start": 5, "end": 2 }),
            StatusCode::UNPROCESSABLE_ENTITY,
            "starts after it ends",
        ),
        (json!({ "path": p("short.txt"), "start": 10, "end": 20 }), StatusCode::UNPROCESSABLE_ENTITY, "past its end"),
        (json!({ "path": "relative/path.py" }), StatusCode::UNPROCESSABLE_ENTITY, "absolute path"),
        (json!({ "path": p("short.txt"), "start": 1 }), StatusCode::UNPROCESSABLE_ENTITY, "both"),
        (
            json!({ "path": p("short.txt"), "start": 1, "end": 2, "marked": [3] }),
            StatusCode::UNPROCESSABLE_ENTITY,
            "Marked line 3 is not among the lines shown",
        ),
    ];
    for (body, status, reason) in cases {
        let response = snippet(&app, body.clone()).await;
        assert_eq!(response.status, status, "{body}: {}", response.text());
        assert!(response.text().contains(reason), "{body}: {}", response.text());
    }

    // A marked line (a grep hit it was opened from) is kept with the step.
    let marked = snippet(&app, json!({ "path": p("short.txt"), "start": 1, "end": 3, "marked": [2, 2] })).await.json();
    assert_eq!(marked["marked"], json!([2]), "{marked}");

    let clamped = snippet(&app, json!({ "path": p("short.txt"), "start": 2, "end": 50 })).await.json();
    assert_eq!(joined(&clamped), b"two\nthree\n");
    assert!(clamped["snapshots"][0]["notes"][0].as_str().unwrap().contains("showing 2–3"), "{clamped}");

    let latin1 = snippet(&app, json!({ "path": p("latin1.txt") })).await.json();
    assert_eq!(latin1["snapshots"][0]["lines"][0], "caf\u{fffd}");
    assert!(latin1["snapshots"][0]["notes"][0].as_str().unwrap().contains("not UTF-8"));

    let long = snippet(&app, json!({ "path": p("long.txt") })).await.json();
    assert_eq!(long["snapshots"][0]["lines"][0].as_str().unwrap().chars().count(), 4_001);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_range_of_a_100_mb_file_and_refresh_after_a_change() {
    let sshd = Sshd::start();
    let app = crate::runs::app_with_host(&sshd).await;
    let big = sshd.dir.path().join("big.log");
    let line = format!("{}\n", "y".repeat(99));
    std::fs::write(&big, line.repeat(1_000_000)).unwrap();
    let started = std::time::Instant::now();
    let response = snippet(&app, json!({ "path": big.display().to_string(), "start": 5, "end": 7 })).await;
    assert_eq!(response.status, StatusCode::CREATED, "{}", response.text());
    let step = response.json();
    assert_eq!(step["snapshots"][0]["total_lines"], 1_000_000);
    assert_eq!(step["snapshots"][0]["size"], 100_000_000);
    assert!(started.elapsed().as_secs() < 20, "only the range crosses the wire");
    let whole = snippet(&app, json!({ "path": big.display().to_string() })).await;
    assert_eq!(whole.status, StatusCode::UNPROCESSABLE_ENTITY, "{}", whole.text());

    let small = sshd.dir.path().join("mod.py");
    std::fs::write(&small, "a = 1\nb = 2\n").unwrap();
    let step = snippet(&app, json!({ "path": small.display().to_string(), "start": 1, "end": 2 })).await.json();
    std::fs::write(&small, "a = 10\nb = 2\n").unwrap();
    let refreshed = app.post_json(&format!("/api/v1/steps/{}/refresh", step["id"]), json!({})).await;
    assert_eq!(refreshed.status, StatusCode::OK, "{}", refreshed.text());
    let refreshed = refreshed.json();
    let snapshots = refreshed["snapshots"].as_array().unwrap();
    assert_eq!(snapshots.len(), 2, "both snapshots are kept");
    assert_ne!(snapshots[0]["sha256"], snapshots[1]["sha256"]);
    assert_eq!(snapshots[0]["lines"][0], "a = 1");
    assert_eq!(snapshots[1]["lines"][0], "a = 10");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn grep_finds_caps_and_never_executes_the_pattern() {
    let sshd = Sshd::start();
    let app = crate::runs::app_with_host(&sshd).await;
    let src = sshd.dir.path().join("src");
    std::fs::create_dir_all(src.join("sub")).unwrap();
    let mut py: Vec<String> = (1..=200).map(|i| format!("line {i}")).collect();
    py[136] = "    logger.warning(\"Custom allreduce is disabled because <reasons>\")".into();
    std::fs::write(src.join("sub").join("custom_all_reduce.py"), py.join("\n") + "\n").unwrap();
    std::fs::write(src.join("notes.txt"), "Custom allreduce is disabled here too\n").unwrap();
    std::fs::write(src.join("many.py"), "hit\n".repeat(300)).unwrap();
    let dir = src.display().to_string();

    let response = snippet(
        &app,
        json!({ "kind": "grep", "pattern": "Custom allreduce is disabled", "path": dir, "glob": "*.py" }),
    )
    .await;
    assert_eq!(response.status, StatusCode::CREATED, "{}", response.text());
    let step = response.json();
    let search = &step["search"];
    assert_eq!(search["total"], 1, "{search}");
    let hit = &search["hits"][0];
    assert!(hit["file"].as_str().unwrap().ends_with("sub/custom_all_reduce.py"));
    assert_eq!(hit["line"], 137);
    assert!(hit["html"].as_str().unwrap().contains("<mark>Custom&#32;allreduce&#32;is&#32;disabled</mark>"), "{hit}");
    assert!(hit["html"].as_str().unwrap().contains("&lt;reasons&gt;"));

    let capped = snippet(&app, json!({ "kind": "grep", "pattern": "hit", "path": dir, "max_hits": 50 })).await.json();
    assert_eq!(capped["search"]["total"], 300);
    assert_eq!(capped["search"]["hits"].as_array().unwrap().len(), 50);

    let regex =
        snippet(&app, json!({ "kind": "grep", "pattern": "^line 1[0-9]$", "path": dir, "regex": true })).await.json();
    assert_eq!(regex["search"]["total"], 10, "{regex}");

    let marker = Path::new(&std::env::var("HOME").unwrap_or_else(|_| "/root".into())).join("sleuth-pwned-grep");
    let hostile = snippet(
        &app,
        json!({ "kind": "grep", "pattern": "'\"; touch sleuth-pwned-grep; $(touch sleuth-pwned-grep)", "path": dir }),
    )
    .await;
    assert_eq!(hostile.status, StatusCode::CREATED, "{}", hostile.text());
    assert_eq!(hostile.json()["search"]["total"], 0);
    assert!(!marker.exists());

    let missing = snippet(&app, json!({ "kind": "grep", "pattern": "x", "path": "/no/such/dir" })).await;
    assert_eq!(missing.status, StatusCode::NOT_FOUND, "{}", missing.text());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn annotations_sit_beside_shown_lines_and_follow_the_file() {
    let sshd = Sshd::start();
    let app = crate::runs::app_with_host(&sshd).await;
    let path = sshd.dir.path().join("custom_all_reduce.py");
    let source: String = (1..=200).map(|n| format!("line_{n} = {n}\n")).collect();
    std::fs::write(&path, &source).unwrap();
    let step = snippet(&app, json!({ "path": path.to_str().unwrap(), "start": 130, "end": 180 })).await.json();
    let step_id = step["id"].as_i64().unwrap();
    let investigation = step["investigation_id"].as_str().unwrap().to_string();
    let annotations = format!("/api/v1/steps/{step_id}/annotations");

    // `</textarea>` too: the edit form's textarea holds the Markdown as written.
    let body = "The **PCIe** check. </textarea><script>alert(1)</script><img src=x onerror=alert(2)>";
    let created = app.post_json(&annotations, json!({ "start": 137, "end": 140, "body": body, "author": "Ada" })).await;
    assert_eq!(created.status, StatusCode::CREATED, "{}", created.text());
    let annotation = created.json();
    let id = annotation["id"].as_i64().unwrap();
    assert_eq!((annotation["start"].as_u64(), annotation["end"].as_u64()), (Some(137), Some(140)));
    assert_eq!(annotation["author"], "Ada");
    assert_eq!(annotation["body"], body, "the Markdown is kept as written");
    let html = annotation["html"].as_str().unwrap();
    assert!(html.contains("<strong>PCIe</strong>"), "{html}");
    assert!(!html.contains("<script") && !html.contains("onerror"), "{html}");
    assert_eq!(annotation["url"], format!("/i/{investigation}#annotation-{id}"));
    assert_eq!(annotation["outdated"], false);

    // The step carries its annotations; the page shows them with their anchors.
    let shown = app.get(&format!("/api/v1/steps/{step_id}")).await.json();
    assert_eq!(shown["annotations"][0]["id"], id);
    assert_eq!(shown["snapshots"][0]["sha256"].as_str().map(str::len), Some(64));
    let page = app.get(&format!("/i/{investigation}")).await.text();
    assert!(page.contains(&format!("id=\"annotation-{id}\"")), "annotation anchor");
    assert!(page.contains(&format!("id=\"step-{step_id}-L137-L140\"")), "range anchor for links without JS");
    assert!(!page.contains("<script>alert(1)") && !page.contains("<img src=x"), "inert");
    assert!(page.contains("&lt;/textarea&gt;&lt;script&gt;"), "the edit form holds the text, escaped");

    // Bad input: a reason, nothing stored.
    for (bad, needle) in [
        (json!({ "start": 150, "end": 140, "body": "x" }), "after"),
        (json!({ "start": 120, "end": 140, "body": "x" }), "130–180"),
        (json!({ "start": 170, "end": 190, "body": "x" }), "Expand"),
        (json!({ "start": 140, "end": 141, "body": "  " }), "empty"),
        (json!({ "start": 140, "end": 141, "body": "x", "author": "a\nb" }), "one line"),
    ] {
        let response = app.post_json(&annotations, bad.clone()).await;
        assert_eq!(response.status, StatusCode::UNPROCESSABLE_ENTITY, "{bad}: {}", response.text());
        assert!(response.json()["error"]["message"].as_str().unwrap().contains(needle), "{}", response.text());
    }
    let note = app.note(&investigation, "not code").await;
    let on_note = app
        .post_json(&format!("/api/v1/steps/{}/annotations", note["id"]), json!({ "start": 1, "end": 1, "body": "x" }))
        .await;
    assert_eq!(on_note.status, StatusCode::UNPROCESSABLE_ENTITY, "{}", on_note.text());
    let missing = app.post_json("/api/v1/steps/999999/annotations", json!({ "start": 1, "end": 1, "body": "x" })).await;
    assert_eq!(missing.status, StatusCode::NOT_FOUND);
    assert_eq!(app.get("/api/v1/annotations/999999").await.status, StatusCode::NOT_FOUND);
    assert_eq!(app.get(&format!("/api/v1/steps/{step_id}")).await.json()["annotations"].as_array().unwrap().len(), 1);

    // Edit.
    let edited = app
        .patch_json(&format!("/api/v1/annotations/{id}"), json!({ "body": "Only *two* GPUs pass.", "end": 138 }))
        .await;
    assert_eq!(edited.status, StatusCode::OK, "{}", edited.text());
    let edited = edited.json();
    assert_eq!((edited["start"].as_u64(), edited["end"].as_u64()), (Some(137), Some(138)));
    assert!(edited["html"].as_str().unwrap().contains("<em>two</em>"));
    assert_eq!(edited["author"], "Ada", "the author stays");

    // The file changes on the host: after a refresh the annotation says it may have moved.
    std::fs::write(&path, format!("# a new first line\n{source}")).unwrap();
    let refreshed = app.post_json(&format!("/api/v1/steps/{step_id}/refresh"), json!({})).await;
    assert_eq!(refreshed.status, StatusCode::OK, "{}", refreshed.text());
    assert_eq!(refreshed.json()["annotations"][0]["outdated"], true, "{}", refreshed.text());
    let page = app.get(&format!("/i/{investigation}")).await.text();
    assert!(page.contains("earlier version of the file"), "the page says so");

    // Delete.
    assert_eq!(app.delete(&format!("/api/v1/annotations/{id}")).await.status, StatusCode::NO_CONTENT);
    assert_eq!(app.get(&format!("/api/v1/annotations/{id}")).await.status, StatusCode::NOT_FOUND);
    assert_eq!(app.delete(&format!("/api/v1/annotations/{id}")).await.status, StatusCode::NOT_FOUND);
}

/// A venv with a `vllm` package whose custom_all_reduce.py has the PCIe check at line 137.
fn fake_vllm_env(root: &Path) -> (std::path::PathBuf, std::path::PathBuf) {
    let venv = root.join("ml-env");
    let made = Command::new("python3").args(["-m", "venv", "--without-pip"]).arg(&venv).status().unwrap();
    assert!(made.success(), "python3 -m venv");
    let out = Command::new(venv.join("bin/python"))
        .args(["-c", "import site; print(site.getsitepackages()[0])"])
        .output()
        .unwrap();
    let site = std::path::PathBuf::from(String::from_utf8(out.stdout).unwrap().trim());
    let dir = site.join("vllm/distributed/device_communicators");
    std::fs::create_dir_all(&dir).unwrap();
    let mut lines: Vec<String> = (1..=200).map(|n| format!("x_{n} = {n}")).collect();
    lines[136] = "            logger.warning(\"Custom allreduce is disabled because it's not supported on more than two PCIe-only GPUs.\")".into();
    let file = dir.join("custom_all_reduce.py");
    std::fs::write(&file, lines.join("\n") + "\n").unwrap();
    (venv, file)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn log_references_link_to_the_files_the_run_used() {
    let sshd = Sshd::start();
    let app = crate::runs::app_with_host(&sshd).await;
    let (venv, file) = fake_vllm_env(sshd.dir.path());
    let log = server::fixtures::dir().join("bench-outputs/vllm_startup_custom_allreduce_issue15340.txt");
    let traceback = format!("  File \"{}\", line 137, in __init__\n", file.display());
    // The run is the command a person would type: the venv's python printing the real vLLM log.
    let command = format!(
        "{}/bin/python -c 'import sys; sys.stdout.write(open(sys.argv[1]).read() + sys.argv[2])' {} '{traceback}'",
        venv.display(),
        log.display()
    );
    let step = crate::runs::command_step(&app, json!({ "command": command })).await;
    let run = crate::runs::start(&app, step, json!({})).await[0];
    assert_eq!(crate::runs::finished(&app, run).await["status"], "succeeded");

    // Every reference in the output is a link to the run's source page.
    let html =
        app.get(&format!("/api/v1/steps/{step}")).await.json()["runs"][0]["tail"]["html"].as_str().unwrap().to_string();
    let link = format!("href=\"/runs/{run}/source?file=custom_all_reduce.py&amp;line=137\"");
    assert_eq!(html.matches(&link).count(), 3, "{html}");
    assert!(html.contains(&format!("href=\"/runs/{run}/source?file=shm_broadcast.py&amp;line=258\"")), "{html}");
    assert!(html.contains(&format!("data-file=\"{}\" data-line=\"137\"", file.display())), "the traceback line");

    // The bare name resolves through the interpreter the command used.
    let source = |file: &str, line: u64| json!({ "file": file, "line": line });
    let source_url = format!("/api/v1/runs/{run}/source");
    // A remote action: never on GET.
    let get = app.get(&format!("{source_url}?file=custom_all_reduce.py&line=137")).await;
    assert_eq!(get.status, StatusCode::METHOD_NOT_ALLOWED, "{}", get.text());
    let found = app.post_json(&source_url, source("custom_all_reduce.py", 137)).await;
    assert_eq!(found.status, StatusCode::OK, "{}", found.text());
    let found = found.json();
    assert_eq!(found["candidates"], json!([file.display().to_string()]), "{found}");
    assert_eq!(found["host"], "gpu");
    assert!(
        found["searched"].as_array().unwrap().iter().any(|d| d.as_str().unwrap().ends_with("site-packages")),
        "{found}"
    );
    let relative = app.post_json(&source_url, source("device_communicators/custom_all_reduce.py", 137)).await.json();
    assert_eq!(relative["candidates"], json!([file.display().to_string()]), "{relative}");
    let absolute = app.post_json(&source_url, source(&file.display().to_string(), 137)).await.json();
    assert_eq!(absolute["candidates"], json!([file.display().to_string()]), "{absolute}");
    let nowhere = app.post_json(&source_url, source("shm_broadcast.py", 258)).await.json();
    assert_eq!(nowhere["candidates"], json!([]), "{nowhere}");

    // A second copy on the run's PYTHONPATH makes the name ambiguous: both are offered.
    let other = sshd.dir.path().join("checkout");
    std::fs::create_dir_all(&other).unwrap();
    std::fs::copy(&file, other.join("custom_all_reduce.py")).unwrap();
    let step2 = crate::runs::command_step(
        &app,
        json!({ "command": command, "env": { "PYTHONPATH": other.display().to_string() } }),
    )
    .await;
    let run2 = crate::runs::start(&app, step2, json!({})).await[0];
    crate::runs::finished(&app, run2).await;
    let both = app
        .post_json(&format!("/api/v1/runs/{run2}/source"), json!({"file": "custom_all_reduce.py", "line": 137}))
        .await
        .json();
    let mut candidates: Vec<String> = serde_json::from_value(both["candidates"].clone()).unwrap();
    candidates.sort();
    let mut expected = vec![file.display().to_string(), other.join("custom_all_reduce.py").display().to_string()];
    expected.sort();
    assert_eq!(candidates, expected, "{both}");

    // The page searches nothing when opened; it offers the search, and lists
    // what a search found when its address carries the answer.
    let page = app.get(&format!("/runs/{run2}/source?file=custom_all_reduce.py&line=137")).await;
    assert_eq!(page.status, StatusCode::OK);
    assert!(page.text().contains("Search gpu for custom_all_reduce.py"), "{}", page.text());
    assert!(!page.text().contains("files match"), "{}", page.text());
    let listed = app
        .get(&format!("/runs/{run2}/source?file=custom_all_reduce.py&line=137&searched=1&c=%2Fa.py&c=%2Fb.py"))
        .await;
    assert!(listed.text().contains("2 files match"), "{}", listed.text());
    assert_eq!(app.post_json(&source_url, source("x.py", 0)).await.status, StatusCode::UNPROCESSABLE_ENTITY);
    let no_file = app.post_json(&source_url, json!({"line": 3})).await.status;
    assert!(no_file.is_client_error() && no_file != StatusCode::NOT_FOUND, "{no_file}");
    let nowhere = app.post_json("/api/v1/runs/999999/source", source("x.py", 3)).await.status;
    assert_eq!(nowhere, StatusCode::NOT_FOUND);
}
