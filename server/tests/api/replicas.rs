//! Several replicas on one PostgreSQL database (the team server): a run belongs
//! to the replica that started it, and when that replica dies another one ends
//! the run within 30 s, keeping its output. Runs only on PostgreSQL (`./dev test`
//! runs the suite there too); on SQLite there is one server by design.

use crate::helpers::on_postgres;
use crate::runs::{app_with_host, command_step};
use crate::sshd::Sshd;
use server::db::Database;
use serde_json::{Value, json};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};
use tokio::io::{AsyncReadExt, AsyncWriteExt};

/// `sleuth serve` in a process of its own, on the same store and data dir as
/// the in-process app.
struct Replica {
    child: Child,
    addr: String,
}

impl Replica {
    fn start(data: &std::path::Path, database: &Database) -> Replica {
        let Database::Postgres(url) = database else { panic!("replicas share a PostgreSQL database") };
        let mut child = Command::new(env!("CARGO_BIN_EXE_sleuth"))
            .args(["serve", "--no-auth", "--addr", "127.0.0.1:0"])
            .arg("--data")
            .arg(data)
            .arg("--site")
            .arg(data.join("site"))
            .env("SLEUTH_DATABASE", url)
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .expect("sleuth serve");
        let stdout = child.stdout.take().expect("stdout");
        // The first line names the address; read it on a thread so a replica
        // that never starts fails the test instead of hanging it.
        let (first, line_rx) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            let mut lines = std::io::BufRead::lines(std::io::BufReader::new(stdout));
            let _ = first.send(lines.next());
            // Keep reading so the replica never blocks on a full pipe.
            lines.for_each(drop);
        });
        let line = match line_rx.recv_timeout(Duration::from_secs(60)) {
            Ok(Some(Ok(line))) => line,
            other => panic!("sleuth serve printed no address within 60 s: {other:?}"),
        };
        let addr = line
            .split("http://")
            .nth(1)
            .and_then(|rest| rest.split('/').next())
            .unwrap_or_else(|| panic!("no address in {line:?}"))
            .to_string();
        Replica { child, addr }
    }

    /// One HTTP/1.1 request, the answer's status and body.
    async fn post(&self, path: &str, body: Value) -> (u16, Value) {
        let mut stream = tokio::net::TcpStream::connect(&self.addr).await.expect("connect");
        let body = body.to_string();
        let request = format!(
            "POST {path} HTTP/1.1\r\nHost: {}\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\
             Connection: close\r\n\r\n{body}",
            self.addr,
            body.len()
        );
        stream.write_all(request.as_bytes()).await.expect("send");
        let mut answer = Vec::new();
        stream.read_to_end(&mut answer).await.expect("answer");
        let answer = String::from_utf8_lossy(&answer);
        let status = answer.split(' ').nth(1).and_then(|s| s.parse().ok()).unwrap_or(0);
        let json = answer.split("\r\n\r\n").nth(1).and_then(|b| serde_json::from_str(b).ok()).unwrap_or(Value::Null);
        (status, json)
    }
}

impl Drop for Replica {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

#[tokio::test]
async fn when_a_replica_dies_another_interrupts_its_runs_and_keeps_the_output() {
    if !on_postgres() {
        eprintln!("skipped: replicas need PostgreSQL (SLEUTH_TEST_POSTGRES)");
        return;
    }
    let sshd = Sshd::start();
    // B: in process. A: `sleuth serve` beside it on the same database and data.
    let b = app_with_host(&sshd).await;
    let mut a = Replica::start(&b.data.path().join("db"), &b.database);
    let step = command_step(&b, json!({ "command": "for i in 1 2 3 4 5; do echo line-$i; done; sleep 120" })).await;

    let (status, runs) = a.post(&format!("/api/v1/steps/{step}/runs"), json!({})).await;
    assert_eq!(status, 201, "{runs}");
    let run = runs[0]["id"].as_i64().expect("run id");

    // B sees A's run going, and its output.
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        let output = b.get(&format!("/api/v1/runs/{run}/output")).await.text();
        if output.contains("line-5") {
            break;
        }
        assert!(Instant::now() < deadline, "B never saw A's output: {output:?}");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert_eq!(b.get(&format!("/api/v1/runs/{run}")).await.json()["status"], "running");

    // SIGKILL: no shutdown, no lease given back.
    a.child.kill().expect("kill -9");
    let killed = Instant::now();
    let ended = loop {
        let json = b.get(&format!("/api/v1/runs/{run}")).await.json();
        if json["status"] != "running" {
            break json;
        }
        assert!(killed.elapsed() < Duration::from_secs(30), "still running 30 s after its replica died: {json}");
        tokio::time::sleep(Duration::from_millis(250)).await;
    };
    assert_eq!(ended["status"], "interrupted", "{ended}");
    assert!(ended["error"].as_str().unwrap_or_default().contains("stopped answering"), "{ended}");
    let output = b.get(&format!("/api/v1/runs/{run}/output")).await.text();
    for i in 1..=5 {
        assert!(output.contains(&format!("line-{i}")), "output lost: {output:?}");
    }

    // B itself keeps running runs: its own lease is renewed.
    let own = crate::runs::start(&b, step, json!({})).await[0];
    tokio::time::sleep(Duration::from_secs(1)).await;
    assert_eq!(b.get(&format!("/api/v1/runs/{own}")).await.json()["status"], "running");
    assert_eq!(b.post_json(&format!("/api/v1/runs/{own}/cancel"), json!({})).await.status, 200);
}
