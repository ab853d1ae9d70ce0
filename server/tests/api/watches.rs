//! Watching a step: runs on a schedule, a change told to a webhook (a real
//! local receiver), stopped at once by DELETE, stopped by failures in a row.

use crate::runs::{app_with_host, app_with_host_and_loopback_webhooks, command_step};
use crate::sshd::Sshd;
use axum::http::StatusCode;
use serde_json::{Value, json};
use std::time::{Duration, Instant};
use tokio::io::{AsyncReadExt, AsyncWriteExt};

/// A webhook receiver on 127.0.0.1: each POST's body, as JSON, on the channel.
pub async fn receiver() -> (String, tokio::sync::mpsc::UnboundedReceiver<Value>) {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://127.0.0.1:{}/hooks/secret-path-T0B0", listener.local_addr().unwrap().port());
    let (tx, rx) = tokio::sync::mpsc::unbounded_channel();
    tokio::spawn(async move {
        loop {
            let Ok((mut socket, _)) = listener.accept().await else { return };
            let tx = tx.clone();
            tokio::spawn(async move {
                let mut data = Vec::new();
                let mut buf = [0u8; 4096];
                loop {
                    let n = socket.read(&mut buf).await.unwrap_or(0);
                    if n == 0 {
                        break;
                    }
                    data.extend_from_slice(&buf[..n]);
                    let text = String::from_utf8_lossy(&data).to_string();
                    if let Some((head, body)) = text.split_once("\r\n\r\n") {
                        let length = head
                            .lines()
                            .find_map(|l| {
                                l.to_ascii_lowercase()
                                    .strip_prefix("content-length:")
                                    .map(|v| v.trim().parse::<usize>().unwrap_or(0))
                            })
                            .unwrap_or(0);
                        if body.len() >= length {
                            let _ = tx.send(serde_json::from_str(body).unwrap_or(Value::Null));
                            break;
                        }
                    }
                }
                let _ = socket.write_all(b"HTTP/1.1 200 OK\r\nContent-Length: 0\r\nConnection: close\r\n\r\n").await;
            });
        }
    });
    (url, rx)
}

async fn runs_of(app: &crate::helpers::TestApp, step: i64) -> usize {
    app.get(&format!("/api/v1/steps/{step}/runs")).await.json().as_array().map_or(0, Vec::len)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_watched_step_that_drops_tells_the_webhook_and_delete_stops_it() {
    let sshd = Sshd::start();
    let app = app_with_host_and_loopback_webhooks(&sshd).await;
    let dir = tempfile::tempdir().unwrap();
    let counter = dir.path().join("counter");
    // 60 ± 1.5 tok/s for 10 runs, then 48.
    let command = format!(
        "n=$(cat {c} 2>/dev/null || echo 0); n=$((n+1)); echo $n > {c}; \
         v=$(awk -v n=$n 'BEGIN {{ srand(n * 7919); printf \"%.2f\", (n > 10 ? 48 : 60) + (rand() * 2 - 1) * 1.5 }}'); \
         printf '============ Serving Benchmark Result ============\\nOutput token throughput (tok/s):          %s\\n==================================================\\n' $v",
        c = counter.display()
    );
    let step = command_step(&app, json!({ "command": command, "telemetry": false })).await;
    let (webhook, mut told) = receiver().await;
    let created = app
        .post_json(
            &format!("/api/v1/steps/{step}/watch"),
            json!({ "every_s": 1, "metric": "output_throughput", "webhook": webhook }),
        )
        .await;
    assert_eq!(created.status, StatusCode::CREATED, "{}", created.text());
    let watch = created.json();
    // Where it posts, never the secret path.
    assert_eq!(watch["webhook"], format!("{}/…", &webhook[..webhook.find("/hooks").unwrap()]));
    assert!(!created.text().contains("secret-path"), "{}", created.text());

    let message =
        tokio::time::timeout(Duration::from_secs(120), told.recv()).await.expect("told within 120 s").unwrap();
    let text = message["text"].as_str().unwrap_or_default();
    assert!(text.contains(&format!("step {step}")) && text.contains("regressed"), "{message}");
    assert_eq!(message["step"], step);
    assert_eq!(message["metric"], "output_throughput");
    assert_eq!(message["change"]["direction"], "regression");
    let delta = message["change"]["delta_pct"].as_f64().unwrap();
    assert!((-23.0..=-17.0).contains(&delta), "{delta}");

    // What the webhook answered is kept once its answer is in.
    let deadline = Instant::now() + Duration::from_secs(15);
    let mine = loop {
        let listed = app.get("/api/v1/watches").await.json();
        let mine = listed.as_array().unwrap().iter().find(|w| w["id"] == watch["id"]).cloned().unwrap();
        if mine["last_told"] != "being told" || Instant::now() > deadline {
            break mine;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    };
    assert_eq!(mine["last_change"]["direction"], "regression", "{mine}");
    assert!(mine["last_told"].as_str().unwrap().contains("delivered (200)"), "{mine}");
    // The investigation's page says so.
    let investigation = watch["investigation_id"].as_str().unwrap();
    let page = app.get(&format!("/i/{investigation}")).await.text();
    assert!(page.contains("class=\"watch-banner\"") && page.contains("regression"), "{page}");
    let list = app.get("/api/v1/investigations").await.json();
    let listed = list.as_array().unwrap().iter().find(|i| i["id"] == investigation).cloned().unwrap();
    assert!(listed["alerts"][0].as_str().unwrap().contains("regression"), "{listed}");

    let deleted = app.delete(&format!("/api/v1/watches/{}", watch["id"])).await;
    assert_eq!(deleted.status, StatusCode::NO_CONTENT);
    let after = runs_of(&app, step).await;
    tokio::time::sleep(Duration::from_secs(3)).await;
    assert_eq!(runs_of(&app, step).await, after, "no run queued after DELETE");
    assert_eq!(app.get(&format!("/api/v1/watches/{}", watch["id"])).await.status, StatusCode::NOT_FOUND);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_watch_whose_runs_fail_says_so_and_stops() {
    let sshd = Sshd::start();
    let app = app_with_host(&sshd).await;
    let step = command_step(&app, json!({ "command": "echo broken >&2; exit 3", "telemetry": false })).await;
    let watch =
        app.post_json(&format!("/api/v1/steps/{step}/watch"), json!({ "every_s": 1, "max_failures": 2 })).await.json();
    let deadline = Instant::now() + Duration::from_secs(60);
    let stopped = loop {
        let w = app.get(&format!("/api/v1/watches/{}", watch["id"])).await.json();
        if !w["stopped"].is_null() {
            break w;
        }
        assert!(Instant::now() < deadline, "{w}");
        tokio::time::sleep(Duration::from_millis(300)).await;
    };
    let why = stopped["stopped"].as_str().unwrap();
    assert!(why.contains("2 runs in a row did not succeed") && why.contains("failed"), "{why}");
    assert_eq!(stopped["stop_reason"], "failing", "{stopped}");
    let runs = runs_of(&app, step).await;
    tokio::time::sleep(Duration::from_secs(3)).await;
    assert_eq!(runs_of(&app, step).await, runs, "a stopped watch runs no more");

    // Asked for badly: refused with a reason.
    for (body, says) in [
        (json!({}), "every_s"),
        (json!({ "every_s": 1, "cron": "* * * * *" }), "one of them"),
        (json!({ "cron": "61 * * * *" }), "minute 0–59"),
        (json!({ "every_s": 1, "webhook": "file:///etc/passwd" }), "http:// or https://"),
        (json!({ "every_s": 1, "config": "X=1" }), "no configuration"),
    ] {
        let refused = app.post_json(&format!("/api/v1/steps/{step}/watch"), body.clone()).await;
        assert_eq!(refused.status, StatusCode::UNPROCESSABLE_ENTITY, "{body}: {}", refused.text());
        assert!(refused.text().contains(says), "{body}: {}", refused.text());
    }
}

/// A webhook reaches only the outside: every spelling of an inside address
/// (and a name that resolves there) is refused when the watch is made, with
/// the reason; a step takes at most 5 running watches.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_webhook_to_the_inside_is_refused_in_every_spelling() {
    let sshd = Sshd::start();
    let app = app_with_host(&sshd).await;
    let step = command_step(&app, json!({ "command": "true", "telemetry": false })).await;
    for url in [
        "http://127.0.0.1:3000/hook",
        "http://localhost:3000/hook",
        "http://localhost.:3000/hook",
        "http://2130706433/hook",
        "http://0177.0.0.1/hook",
        "http://127.1/hook",
        "http://0.0.0.0/hook",
        "http://[::ffff:127.0.0.1]/hook",
        "http://[::1]/hook",
        "http://10.0.0.1/hook",
        "http://192.168.0.1/hook",
        "http://169.254.169.254/latest/meta-data",
    ] {
        let refused =
            app.post_json(&format!("/api/v1/steps/{step}/watch"), json!({ "every_s": 60, "webhook": url })).await;
        assert_eq!(refused.status, StatusCode::UNPROCESSABLE_ENTITY, "{url}: {}", refused.text());
        let text = refused.text();
        assert!(text.contains("reaches only the outside"), "{url}: {text}");
        assert!(!text.contains("/hook") && !text.contains("meta-data"), "never the path: {text}");
    }
    assert_eq!(runs_of(&app, step).await, 0, "nothing was made");
    // Five watches of one step at most.
    for _ in 0..5 {
        let made = app.post_json(&format!("/api/v1/steps/{step}/watch"), json!({ "cron": "0 3 * * *" })).await;
        assert_eq!(made.status, StatusCode::CREATED, "{}", made.text());
    }
    let sixth = app.post_json(&format!("/api/v1/steps/{step}/watch"), json!({ "cron": "0 3 * * *" })).await;
    assert_eq!(sixth.status, StatusCode::UNPROCESSABLE_ENTITY, "{}", sixth.text());
    assert!(sixth.text().contains("the most it may have"), "{}", sixth.text());
}

/// A webhook that never answers holds only its own watch: another keeps its
/// schedule meanwhile (watches are tended side by side).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_silent_webhook_does_not_delay_another_watch() {
    let sshd = Sshd::start();
    let app = app_with_host_and_loopback_webhooks(&sshd).await;
    let dir = tempfile::tempdir().unwrap();
    let dropping = dropping_at_the_fifth_run(&dir.path().join("counter"));
    let told = command_step(&app, json!({ "command": dropping, "telemetry": false })).await;
    let steady = command_step(&app, json!({ "command": "true", "telemetry": false })).await;
    // Accepts, reads, never answers.
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let silent = format!("http://127.0.0.1:{}/hook", listener.local_addr().unwrap().port());
    let (reached_tx, mut reached) = tokio::sync::mpsc::unbounded_channel();
    tokio::spawn(async move {
        let mut held = Vec::new();
        while let Ok((socket, _)) = listener.accept().await {
            let _ = reached_tx.send(Instant::now());
            held.push(socket);
        }
    });
    for (step, webhook) in [(told, Some(silent)), (steady, None)] {
        let made = app
            .post_json(
                &format!("/api/v1/steps/{step}/watch"),
                json!({ "every_s": 1, "max_failures": 100, "webhook": webhook }),
            )
            .await;
        assert_eq!(made.status, StatusCode::CREATED, "{}", made.text());
    }
    let since =
        tokio::time::timeout(Duration::from_secs(90), reached.recv()).await.expect("the webhook is tried").unwrap();
    let before = runs_of(&app, steady).await;
    tokio::time::sleep_until((since + Duration::from_secs(8)).into()).await;
    let after = runs_of(&app, steady).await;
    assert!(after >= before + 4, "the other watch ran {} times in the 8 s the webhook held its own", after - before);
}

/// vLLM's throughput line: 60 tok/s for 4 runs, then 30 (a change to tell at
/// the eighth run), counted in `counter`.
fn dropping_at_the_fifth_run(counter: &std::path::Path) -> String {
    format!(
        "n=$(cat {c} 2>/dev/null || echo 0); n=$((n+1)); echo $n > {c}; \
         printf '============ Serving Benchmark Result ============\\nOutput token throughput (tok/s):          %s\\n' $([ $n -gt 4 ] && echo 30.$n || echo 60.$n)",
        c = counter.display()
    )
}

/// Measured in a process of its own: a test's peak RSS is then its own.
#[test]
fn a_webhook_answering_a_gigabyte_is_read_no_further_than_a_few_kilobytes() {
    crate::helpers::in_a_process_of_its_own("watches::gigabyte_answer_in_a_process_of_its_own");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "run by a_webhook_answering_a_gigabyte_is_read_no_further_than_a_few_kilobytes in a process of its own"]
async fn gigabyte_answer_in_a_process_of_its_own() {
    let sshd = Sshd::start();
    let app = app_with_host_and_loopback_webhooks(&sshd).await;
    let dir = tempfile::tempdir().unwrap();
    let dropping = dropping_at_the_fifth_run(&dir.path().join("counter"));
    let step = command_step(&app, json!({ "command": dropping, "telemetry": false })).await;
    // Reads the request, then answers 200 with a body of 1 GiB, written as
    // fast as the socket takes it, until the server hangs up.
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://127.0.0.1:{}/hook", listener.local_addr().unwrap().port());
    let (sent_tx, mut sent) = tokio::sync::mpsc::unbounded_channel();
    tokio::spawn(async move {
        while let Ok((mut socket, _)) = listener.accept().await {
            let sent_tx = sent_tx.clone();
            tokio::spawn(async move {
                let mut request = Vec::new();
                let mut buf = [0u8; 8192];
                while !String::from_utf8_lossy(&request).contains("}") {
                    match socket.read(&mut buf).await {
                        Ok(0) | Err(_) => return,
                        Ok(n) => request.extend_from_slice(&buf[..n]),
                    }
                }
                const GIB: u64 = 1 << 30;
                let head = format!("HTTP/1.1 200 OK\r\nContent-Length: {GIB}\r\nContent-Type: text/plain\r\n\r\n");
                let mut written = 0u64;
                if socket.write_all(head.as_bytes()).await.is_ok() {
                    let chunk = vec![b'x'; 64 * 1024];
                    while written < GIB && socket.write_all(&chunk).await.is_ok() {
                        written += chunk.len() as u64;
                    }
                }
                let _ = sent_tx.send(written);
            });
        }
    });
    let before = crate::helpers::peak_rss_kb();
    let made = app
        .post_json(&format!("/api/v1/steps/{step}/watch"), json!({ "every_s": 1, "max_failures": 100, "webhook": url }))
        .await;
    assert_eq!(made.status, StatusCode::CREATED, "{}", made.text());
    let written = tokio::time::timeout(Duration::from_secs(90), sent.recv())
        .await
        .expect("the webhook is told within 90 s")
        .unwrap();
    let watch = made.json()["id"].as_i64().unwrap();
    let told = loop {
        let shown = app.get(&format!("/api/v1/watches/{watch}")).await.json();
        // "being told" while the delivery is under way; then what came of it.
        if let Some(told) = shown["last_told"].as_str().filter(|t| *t != "being told") {
            break told.to_string();
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    };
    let growth_mb = crate::helpers::peak_rss_kb().saturating_sub(before) / 1024;
    println!(
        "a 1 GiB webhook answer: the receiver got {} KB out before the hang-up; peak RSS grew {growth_mb} MB",
        written / 1024
    );
    assert!(told.ends_with(": delivered (200)"), "{told}");
    assert!(written < 64 << 20, "the rest of the gigabyte was never asked for ({written} bytes went out)");
    assert!(growth_mb <= 16, "peak RSS grew {growth_mb} MB");
}
