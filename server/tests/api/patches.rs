//! A patch's files on a real host (loopback sshd, a login shell): read,
//! applied with every base checked first, and put back verified (#52; the
//! step kind and the arms come next).

use server::patches::diff;
use server::patches::host::{self, Change, Said, Written};
use std::sync::Arc;

fn sha(bytes: &[u8]) -> String {
    use sha2::Digest;
    format!("{:x}", sha2::Sha256::digest(bytes))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_patch_is_applied_and_put_back_on_the_host_each_step_hashed() {
    let sshd = crate::sshd::Sshd::start();
    let data = tempfile::tempdir().expect("temp dir");
    let store = server::db::Store::open(&server::db::Database::Sqlite(data.path().to_path_buf())).await.expect("store");
    let keys = server::ssh::KnownHosts::new(Arc::new(server::hosts::keys::StoredKeys::new(store)));
    let pool = server::ssh::Pool::new(keys, true);
    let target = server::ssh::Target {
        name: "gpu".into(),
        hostname: "127.0.0.1".into(),
        port: sshd.port,
        user: crate::sshd::whoami(),
        identity_file: Some(sshd.client_key.clone()),
        jump: None,
    };
    let site = sshd.dir.path().join("site-packages/vllm");
    std::fs::create_dir_all(&site).unwrap();
    let gate = site.join("custom_all_reduce.py");
    let before = "if world_size > 2 and not fully_connected:\n    logger.warning(\"Custom allreduce is disabled\")\n";
    std::fs::write(&gate, before).unwrap();
    let path = gate.display().to_string();
    let keep = sshd.dir.path().join("sleuth-run-1/patch").display().to_string();

    // The diff made from edited lines; its file's base read on the host.
    let after = before.replace("> 2", "> 8");
    let files = diff::parse(&diff::between(&path, before, &after)).expect("a diff");
    let read = host::read(&pool, &target, std::slice::from_ref(&path)).await.expect("read");
    assert_eq!(read, [Said::Hash(sha(before.as_bytes()))]);
    let (text, _) = diff::apply(before, &files[0]).expect("applies");

    // Someone changed the file since: refused, both hashes known, nothing written.
    std::fs::write(&gate, format!("{before}# edited\n")).unwrap();
    let change = [Change { path: path.clone(), base: sha(before.as_bytes()), text: text.clone().into_bytes() }];
    let refused = host::apply(&pool, &target, &keep, &change).await.expect("answered");
    assert_eq!(refused, [Said::Differs(sha(format!("{before}# edited\n").as_bytes()))]);
    std::fs::write(&gate, before).unwrap();

    // Applied: what is there now is the patched text, by its hash.
    let applied = host::apply(&pool, &target, &keep, &change).await.expect("applied");
    assert_eq!(applied, [Said::Applied(sha(after.as_bytes()))]);
    assert_eq!(std::fs::read_to_string(&gate).unwrap(), after);

    // Put back, verified.
    let written = [Written { path: path.clone(), base: sha(before.as_bytes()), applied: sha(after.as_bytes()) }];
    let reverted = host::revert(&pool, &target, &keep, &written).await.expect("reverted");
    assert_eq!(reverted, [Said::Reverted(sha(before.as_bytes()))]);
    assert_eq!(std::fs::read_to_string(&gate).unwrap(), before);

    // A path that is not there is said so, not read as empty.
    let missing = host::read(&pool, &target, &[format!("{path}.gone")]).await.expect("read");
    assert_eq!(missing, [Said::Missing]);
}

/// A patch step, as a team makes and checks one: its bases read from the
/// host when not given, a dry run that follows the file (applies, base
/// differs, file missing), paths that would leave where they point refused,
/// and who may do what (a runner reads the host; an editor may save a patch
/// whose bases it gives, but not check it).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_patch_step_is_made_checked_and_refused_where_it_must_be() {
    use axum::http::{Method, StatusCode};
    use serde_json::{Value, json};
    let sshd = crate::sshd::Sshd::start();
    let team = crate::permissions::team(&sshd).await;
    let (id, _, _) = team.shared_investigation(&sshd).await;
    let steps = format!("/api/v1/investigations/{id}/steps");
    let dir = sshd.dir.path().join("vllm <b>x</b>");
    std::fs::create_dir_all(&dir).unwrap();
    let gate = dir.join("gate.py");
    let before = "import os\nslow = True\nprint('<script>alert(1)</script>')\n";
    std::fs::write(&gate, before).unwrap();
    let path = gate.display().to_string();
    let patch = diff::between(&path, before, &before.replace("slow = True", "slow = False"));

    // A runner saves it; the base is read from the host.
    let made = team.ok("run", Method::POST, &steps, json!({ "kind": "patch", "host": "gpu", "diff": patch })).await;
    assert_eq!(made["kind"], "patch", "{made}");
    assert_eq!(made["files"][0]["path"], json!(path));
    assert_eq!(made["files"][0]["base"], json!(sha(before.as_bytes())));
    assert_eq!((made["files"][0]["added"].as_u64(), made["files"][0]["removed"].as_u64()), (Some(1), Some(1)));
    let check = format!("/api/v1/steps/{}/check", made["id"]);
    let states = |v: &Value| v["files"].as_array().unwrap().iter().map(|f| f["state"].clone()).collect::<Vec<_>>();
    let applies = team.ok("run", Method::POST, &check, Value::Null).await;
    assert_eq!((applies["applies"].clone(), states(&applies)), (json!(true), vec![json!("applies")]), "{applies}");

    // Changed by hand since: base differs, both hashes given; then gone.
    std::fs::write(&gate, format!("{before}# edited\n")).unwrap();
    let differs = team.ok("run", Method::POST, &check, Value::Null).await;
    assert_eq!(states(&differs), [json!("base_differs")]);
    assert_eq!(differs["files"][0]["found"], json!(sha(format!("{before}# edited\n").as_bytes())));
    assert!(differs["files"][0]["text"].as_str().unwrap().contains("changed since the patch was made"), "{differs}");
    std::fs::remove_file(&gate).unwrap();
    let missing = team.ok("run", Method::POST, &check, Value::Null).await;
    assert_eq!((missing["applies"].clone(), states(&missing)), (json!(false), vec![json!("missing")]));
    // Saving one of a file that is not there: 422 naming it.
    let refused =
        team.call("run", Method::POST, &steps, json!({ "kind": "patch", "host": "gpu", "diff": patch })).await;
    assert_eq!(refused.status, StatusCode::UNPROCESSABLE_ENTITY, "{}", refused.text());
    assert!(refused.text().contains("There is no file"), "{}", refused.text());
    std::fs::write(&gate, before).unwrap();

    // A `git diff` with relative paths: resolved on the host where python3
    // would import it (or the home directory), saved naming the absolute path.
    let home = std::path::PathBuf::from(std::env::var("HOME").expect("HOME"));
    let repo = tempfile::Builder::new().prefix(".sleuth-test-").tempdir_in(&home).expect("a directory in home");
    let name = repo.path().file_name().unwrap().to_string_lossy().into_owned();
    let installed = repo.path().join("pkg/gate.py");
    std::fs::create_dir_all(installed.parent().unwrap()).unwrap();
    std::fs::write(&installed, before).unwrap();
    let git = diff::between(&format!("a/{name}/pkg/gate.py"), before, &before.replace("slow = True", "slow = False"))
        .replace(&format!("+++ a/{name}"), &format!("+++ b/{name}"));
    let git = format!("diff --git a/{name}/pkg/gate.py b/{name}/pkg/gate.py\nindex 1..2 100644\n{git}");
    let made_git = team.ok("run", Method::POST, &steps, json!({ "kind": "patch", "host": "gpu", "diff": git })).await;
    let resolved = installed.display().to_string();
    assert_eq!(made_git["files"][0]["path"], json!(resolved), "{made_git}");
    assert_eq!(made_git["files"][0]["base"], json!(sha(before.as_bytes())));
    assert!(made_git["diff"].as_str().unwrap().starts_with(&format!("--- {resolved}\n+++ {resolved}\n")), "{made_git}");
    let nowhere = git.replace(&name, "no-such-repo-anywhere");
    let refused =
        team.call("run", Method::POST, &steps, json!({ "kind": "patch", "host": "gpu", "diff": nowhere })).await;
    assert_eq!(refused.status, StatusCode::UNPROCESSABLE_ENTITY, "{}", refused.text());
    assert!(
        refused.text().contains("neither under python3's import path nor the home directory"),
        "{}",
        refused.text()
    );

    // `..` in a path, and a symlink out of its directory: refused, nothing saved.
    let sneaky = patch.replace(&format!("{}/", dir.display()), &format!("{}/../", dir.display()));
    let refused =
        team.call("run", Method::POST, &steps, json!({ "kind": "patch", "host": "gpu", "diff": sneaky })).await;
    assert_eq!(refused.status, StatusCode::UNPROCESSABLE_ENTITY, "{}", refused.text());
    assert!(refused.text().contains("`..`"), "{}", refused.text());
    let outside = sshd.dir.path().join("outside.py");
    std::fs::write(&outside, before).unwrap();
    let link = dir.join("link.py");
    std::os::unix::fs::symlink(&outside, &link).unwrap();
    let via_link = patch.replace(&path, &link.display().to_string());
    let refused =
        team.call("run", Method::POST, &steps, json!({ "kind": "patch", "host": "gpu", "diff": via_link })).await;
    assert_eq!(refused.status, StatusCode::UNPROCESSABLE_ENTITY, "{}", refused.text());
    assert!(refused.text().contains("outside its directory"), "{}", refused.text());
    let kinds = team.ok("view", Method::GET, &format!("/api/v1/investigations/{id}"), Value::Null).await;
    let patches = kinds["steps"].as_array().unwrap().iter().filter(|s| s["kind"] == "patch").count();
    assert_eq!(patches, 2, "only the first patch and the resolved one were saved");

    // An editor: may save one whose bases it gives, not one that reads the
    // host, and may not check it; a viewer saves none.
    let based = json!({ "kind": "patch", "host": "gpu", "diff": patch,
                        "files": [{ "path": path, "base": sha(before.as_bytes()) }] });
    let by_editor = team.call("edit", Method::POST, &steps, based.clone()).await;
    assert_eq!(by_editor.status, StatusCode::CREATED, "{}", by_editor.text());
    let unbased = json!({ "kind": "patch", "host": "gpu", "diff": patch });
    assert_eq!(team.call("edit", Method::POST, &steps, unbased).await.status, StatusCode::FORBIDDEN);
    assert_eq!(team.call("edit", Method::POST, &check, Value::Null).await.status, StatusCode::FORBIDDEN);
    assert_eq!(team.call("view", Method::POST, &steps, based).await.status, StatusCode::FORBIDDEN);
    // Checking what is no patch: 422.
    let note = team.ok("own", Method::POST, &steps, json!({ "kind": "note", "body": "n" })).await;
    let not_patch = team.call("run", Method::POST, &format!("/api/v1/steps/{}/check", note["id"]), Value::Null).await;
    assert_eq!(not_patch.status, StatusCode::UNPROCESSABLE_ENTITY, "{}", not_patch.text());

    // Each read of the host is in the audit log.
    let audit = team.ok("admin", Method::GET, "/api/v1/audit", Value::Null).await.to_string();
    assert!(audit.contains("patch.read") && audit.contains("patch.check"), "{audit}");
}

/// A small engine on the loopback host: `gate.py` decides its speed and logs
/// the seed's line when it takes the slow path.
const GATE: &str = "import sys\nSLOW = True\n\ndef speed():\n    if SLOW:\n        print(\"Custom allreduce is disabled because it's not supported on more than two PCIe-only GPUs\")\n        return 57.5\n    return 130.0\n";
const ENGINE: &str = "import sys; sys.path.insert(0, sys.argv[1]); import gate; print('============ Serving Benchmark Result ============\\nOutput token throughput (tok/s): %.1f\\n==================================================' % gate.speed())";

/// What the gated-engine tests start from: `engine/gate.py` (GATE) on the
/// host, an investigation, and the diff that lifts the gate.
struct Gated {
    dir: std::path::PathBuf,
    gate: std::path::PathBuf,
    path: String,
    inv: String,
    steps: String,
    diff: String,
}

async fn gated(app: &crate::helpers::TestApp, sshd: &crate::sshd::Sshd, title: &str) -> Gated {
    let dir = sshd.dir.path().join("engine");
    std::fs::create_dir_all(&dir).unwrap();
    let gate = dir.join("gate.py");
    std::fs::write(&gate, GATE).unwrap();
    let inv = app.investigation(title).await;
    let steps = format!("/api/v1/investigations/{inv}/steps");
    let path = gate.display().to_string();
    let diff = diff::between(&path, GATE, &GATE.replace("SLOW = True", "SLOW = False"));
    Gated { dir, gate, path, inv, steps, diff }
}

/// The A/B: a sweep `@patch = none, P` × 3 repeats on a host whose
/// engine is gated by a file. The patched arm is faster, the slow path's log
/// line is in every baseline run and in no patched one, each patched run
/// carries its proof (applied, put back, hashes), the file's sha256 after the
/// sweep is the one before it; a file changed by hand since the patch was
/// made refuses the run with both hashes and writes nothing.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_sweep_over_a_patch_measures_both_arms_and_leaves_the_file_as_it_was() {
    use axum::http::StatusCode;
    use serde_json::json;
    let sshd = crate::sshd::Sshd::start();
    let app = crate::runs::app_with_host(&sshd).await;
    let Gated { dir, gate, path, inv, steps, diff, .. } = gated(&app, &sshd, "custom allreduce gate").await;
    let before = sha(GATE.as_bytes());
    // Proof it loaded: the slow path's line is gone. A compiled cache, cleared around each patched run.
    let cache = sshd.dir.path().join("cache/torch_compile_cache");
    std::fs::create_dir_all(&cache).unwrap();
    let expect = json!([{ "text": "Custom allreduce is disabled", "present": false }]);
    let body = json!({ "kind": "patch", "host": "gpu", "diff": diff, "expect": expect, "caches": [cache.display().to_string()] });
    let patch = app.post_json(&steps, body).await;
    assert_eq!(patch.status, StatusCode::CREATED, "{}", patch.text());
    let patch = patch.json()["id"].as_i64().unwrap();
    let engine = format!("python3 -c \"{ENGINE}\" {}", dir.display());
    let command = json!({ "kind": "command", "host": "gpu", "command": engine, "telemetry": false,
                          "matrix": { "@patch": [null, patch] } });
    let step = app.post_json(&steps, command).await;
    assert_eq!(step.status, StatusCode::CREATED, "{}", step.text());
    let step = step.json()["id"].as_i64().unwrap();

    let runs = crate::runs::start(&app, step, json!({ "repeat": 3 })).await;
    assert_eq!(runs.len(), 6);
    let mut arms: std::collections::BTreeMap<bool, Vec<f64>> = Default::default();
    for run in runs {
        let done = crate::runs::finished(&app, run).await;
        assert_eq!(done["status"], "succeeded", "{done}");
        let out = String::from_utf8_lossy(&crate::runs::output(&app, run).await).into_owned();
        let patched = !done["config"]["@patch"].is_null();
        let line = out.lines().find(|l| l.contains("tok/s")).unwrap_or_default();
        let tok: f64 = line.rsplit(": ").next().unwrap().trim().parse().unwrap();
        arms.entry(patched).or_default().push(tok);
        assert_eq!(out.contains("Custom allreduce is disabled"), !patched, "run {run}: {out}");
        if patched {
            let proof = &done["patch"];
            assert_eq!((proof["step"].as_i64(), proof["state"].as_str()), (Some(patch), Some("reverted")), "{done}");
            let file = &proof["files"][0];
            assert_eq!(file["base"], json!(before));
            assert_eq!(file["reverted"], json!(before));
            assert_eq!(file["at_end"], file["applied"], "held during the run: {proof}");
            assert_ne!(file["applied"], json!(before));
            assert_eq!(proof["expectations"][0]["met"], true, "{proof}");
            assert_eq!(proof["caches_cleared"], json!([cache.display().to_string()]), "{proof}");
        } else {
            assert!(done["patch"].is_null(), "{done}");
        }
    }
    assert!(arms[&true].iter().all(|t| *t == 130.0) && arms[&false].iter().all(|t| *t == 57.5), "{arms:?}");
    assert_eq!(sha(&std::fs::read(&gate).unwrap()), before, "the file is as it was before the sweep");
    assert!(!cache.exists(), "the cache was cleared");

    // A run with the patch whose log still says the slow path: not counted, and the verdict says why.
    let noisy = format!("echo 'Custom allreduce is disabled (from elsewhere)'; {engine}");
    let noisy = app
        .post_json(
            &steps,
            json!({ "kind": "command", "host": "gpu", "command": noisy, "telemetry": false, "patch": patch }),
        )
        .await;
    let noisy = noisy.json()["id"].as_i64().unwrap();
    let odd = crate::runs::start(&app, noisy, json!({})).await[0];
    let odd_done = crate::runs::finished(&app, odd).await;
    assert_eq!(odd_done["patch"]["expectations"][0]["met"], false, "{odd_done}");
    let hypothesis = json!({ "statement": "Lifting the gate speeds decode up", "metric": "output_throughput", "direction": "increase",
        "baseline": { "configs": [{ "step": step, "config": { "@patch": null } }] },
        "treatment": { "configs": [{ "step": step, "config": { "@patch": patch.to_string() } }], "steps": [noisy] } });
    let made = app.post_json(&format!("/api/v1/investigations/{inv}/hypotheses"), hypothesis).await;
    assert_eq!(made.status, StatusCode::CREATED, "{}", made.text());
    let h = made.json();
    assert_eq!(
        (h["baseline_values"].as_array().unwrap().len(), h["treatment_values"].as_array().unwrap().len()),
        (3, 3),
        "{h}"
    );
    assert_eq!(h["verdict_word"], "as expected", "{h}");
    assert_eq!(h["left_out"][0]["run"].as_i64(), Some(odd), "{h}");
    assert!(h["left_out"][0]["why"].as_str().unwrap().contains("expectation failed"), "{h}");
    assert_eq!(
        (h["patches"][0]["step"].as_i64(), h["patches"][0]["arms"].as_str()),
        (Some(patch), Some("treatment")),
        "{h}"
    );
    assert_eq!((h["patches"][0]["added"].as_u64(), h["patches"][0]["removed"].as_u64()), (Some(1), Some(1)), "{h}");

    // The reports say it beside the numbers, linked to the step with the whole diff, and what was left out.
    for format in ["html", "markdown"] {
        let report = app.get(&format!("/api/v1/investigations/{inv}/export?format={format}")).await.text();
        let said = format!("patch {patch} (treatment): {path}, +1 −1");
        assert!(report.contains(&said), "{format}: {said} not in the report");
        assert!(report.contains(&format!("#step-{patch}")), "{format}: no link to the patch step");
        let left_out = format!("run {odd} not counted: patch {patch}");
        assert!(report.contains(&left_out) && report.contains("expectation failed"), "{format}: {left_out}");
    }

    // The manifest carries each patched run's hashes beside the patch step's diff and bases.
    let manifest = app.get(&format!("/api/v1/investigations/{inv}/provenance")).await.json();
    let manifest_steps = manifest["steps"].as_array().unwrap();
    let patch_step = manifest_steps.iter().find(|s| s["id"].as_i64() == Some(patch)).unwrap();
    assert_eq!(patch_step["body"]["files"][0]["base"], json!(before), "{patch_step}");
    let swept = manifest_steps.iter().find(|s| s["id"].as_i64() == Some(step)).unwrap();
    let patched: Vec<&serde_json::Value> =
        swept["runs"].as_array().unwrap().iter().filter(|r| !r["patch"].is_null()).collect();
    assert_eq!(patched.len(), 3, "{swept}");
    for run in patched {
        let file = &run["patch"]["files"][0];
        assert_eq!((&file["base"], &file["reverted"]), (&json!(before), &json!(before)), "{run}");
        assert!(file["applied"].as_str().is_some_and(|a| a.len() == 64 && a != before), "{run}");
    }

    // Changed by hand since the patch was made: refused, both hashes named, nothing written.
    let edited = format!("{GATE}# tuned by hand\n");
    std::fs::write(&gate, &edited).unwrap();
    let run = crate::runs::start(&app, step, json!({ "only": { "@patch": patch.to_string() } })).await[0];
    let done = crate::runs::finished(&app, run).await;
    assert_eq!(done["status"], "failed", "{done}");
    let error = done["error"].as_str().unwrap();
    assert!(
        error.contains(&path) && error.contains(&before[..12]) && error.contains(&sha(edited.as_bytes())[..12]),
        "{error}"
    );
    assert_eq!(done["patch"]["state"], "refused", "{done}");
    assert_eq!(std::fs::read_to_string(&gate).unwrap(), edited, "nothing written");
    assert!(crate::runs::output(&app, run).await.is_empty(), "the command did not run");

    // The audit log has each apply and put back with its hashes.
    let audit = app.get("/api/v1/audit").await.text();
    assert!(audit.contains("patch.apply") && audit.contains("patch.revert") && audit.contains(&before), "{audit}");
}

/// A revert that cannot be verified — the run's command changed the patched
/// file — leaves the host dirty: the run says so, new runs on the host are
/// refused naming it, until an admin restores it (the original back,
/// verified) or accepts it as it is.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_patch_changed_during_its_run_leaves_the_host_dirty_until_an_admin_settles_it() {
    use axum::http::StatusCode;
    use serde_json::json;
    let sshd = crate::sshd::Sshd::start();
    let app = crate::runs::app_with_host(&sshd).await;
    let Gated { gate, path, steps, diff, inv, .. } = gated(&app, &sshd, "dirty").await;
    let before = sha(GATE.as_bytes());
    let patch =
        app.post_json(&steps, json!({ "kind": "patch", "host": "gpu", "diff": diff })).await.json()["id"].clone();
    // The command edits the patched file while the patch is on.
    let meddle = json!({ "kind": "command", "host": "gpu", "command": format!("echo '# meddled' >> {path}"),
                         "telemetry": false, "patch": patch });
    let step = app.post_json(&steps, meddle).await.json()["id"].as_i64().unwrap();
    let run = crate::runs::start(&app, step, json!({})).await[0];
    let done = crate::runs::finished(&app, run).await;
    assert_eq!(done["patch"]["state"], "dirty", "{done}");
    assert!(done["patch"]["text"].as_str().unwrap().contains("changed during the run"), "{done}");
    assert_ne!(done["patch"]["files"][0]["at_end"], done["patch"]["files"][0]["applied"]);
    assert!(std::fs::read_to_string(&gate).unwrap().ends_with("# meddled\n"), "left as it was found");

    // New patched runs are refused at once (409); any other fails as it starts; both say why.
    let plain =
        app.post_json(&steps, json!({ "kind": "command", "host": "gpu", "command": "true", "patch": patch })).await;
    let refused = app.post_json(&format!("/api/v1/steps/{}/runs", plain.json()["id"]), json!({})).await;
    assert_eq!(refused.status, StatusCode::CONFLICT, "{}", refused.text());
    assert!(
        refused.text().contains("is dirty") && refused.text().contains(&format!("run {run}")),
        "{}",
        refused.text()
    );
    let unpatched = crate::runs::command_step(&app, json!({ "command": "echo hi", "telemetry": false })).await;
    let other = crate::runs::start(&app, unpatched, json!({})).await[0];
    let other = crate::runs::finished(&app, other).await;
    assert_eq!(other["status"], "failed", "{other}");
    assert!(other["error"].as_str().unwrap().contains("dirty"), "{other}");
    let listed = app.get("/api/v1/hosts/gpu/patches").await.json();
    assert_eq!((listed[0]["run"].as_i64(), listed[0]["state"].as_str()), (Some(run), Some("dirty")), "{listed}");
    // The investigation says so, linking the host and the run.
    let investigation = app.get(&format!("/i/{inv}")).await.text();
    assert!(
        investigation.contains("notice dirty-hosts") && investigation.contains(&format!("href=\"/runs/{run}\"")),
        "{investigation}"
    );
    // The hosts page says so, and offers an admin both ways out.
    let page = app.get("/hosts").await.text();
    assert!(
        page.contains("host-patches") && page.contains("Restore the originals") && page.contains("Accept as it is"),
        "{page}"
    );

    // Restored: the original back over the meddling, verified; the host runs again.
    let restored = app.post_json(&format!("/api/v1/hosts/gpu/patches/{run}/restore"), json!({})).await;
    assert_eq!(restored.status, StatusCode::OK, "{}", restored.text());
    assert_eq!(restored.json()["state"], "reverted", "{}", restored.text());
    assert_eq!(sha(&std::fs::read(&gate).unwrap()), before);
    assert_eq!(app.get("/api/v1/hosts/gpu/patches").await.json(), json!([]));
    assert!(!app.get(&format!("/i/{inv}")).await.text().contains("notice dirty-hosts"), "settled: said no more");
    let again = crate::runs::start(&app, unpatched, json!({})).await[0];
    assert_eq!(crate::runs::finished(&app, again).await["status"], "succeeded");

    // Dirty again; accepted as it is this time.
    let run = crate::runs::start(&app, step, json!({})).await[0];
    assert_eq!(crate::runs::finished(&app, run).await["patch"]["state"], "dirty");
    let accepted = app.post_json(&format!("/api/v1/hosts/gpu/patches/{run}/accept"), json!({})).await;
    assert_eq!(accepted.json()["state"], "accepted", "{}", accepted.text());
    assert!(std::fs::read_to_string(&gate).unwrap().ends_with("# meddled\n"), "accepted as it is");
    let again = crate::runs::start(&app, unpatched, json!({})).await[0];
    assert_eq!(crate::runs::finished(&app, again).await["status"], "succeeded");
    let none = app.post_json(&format!("/api/v1/hosts/gpu/patches/{run}/accept"), json!({})).await;
    assert_eq!(none.status, StatusCode::NOT_FOUND, "{}", none.text());
    let audit = app.get("/api/v1/audit").await.text();
    assert!(audit.contains("patch.restore") && audit.contains("patch.accept"), "{audit}");
}

/// The case: the patched file made read-only during the run, so the
/// original cannot be put back. Read-only for whoever runs the tests: root
/// writes over mode bits, so the file is made immutable (`chattr +i`) where
/// that works, else the file and its directory lose their write bits.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_patch_that_cannot_be_put_back_leaves_the_host_dirty_until_restored() {
    use axum::http::StatusCode;
    use serde_json::json;
    let sshd = crate::sshd::Sshd::start();
    let app = crate::runs::app_with_host(&sshd).await;
    let Gated { dir, gate, path, steps, diff, .. } = gated(&app, &sshd, "read-only").await;
    let probe = dir.join("probe");
    std::fs::write(&probe, "x").unwrap();
    let immutable = std::process::Command::new("chattr").arg("+i").arg(&probe).status().is_ok_and(|s| s.success());
    if immutable {
        let _ = std::process::Command::new("chattr").arg("-i").arg(&probe).status();
    }
    let (lock, unlock) = if immutable {
        (format!("chattr +i {path}"), vec!["chattr", "-i", path.as_str()])
    } else {
        let d = dir.display().to_string();
        (format!("chmod a-w {path} {d}"), vec!["chmod", "u+w", path.as_str(), "--", ""])
    };
    let patch =
        app.post_json(&steps, json!({ "kind": "patch", "host": "gpu", "diff": diff })).await.json()["id"].clone();
    let locking = json!({ "kind": "command", "host": "gpu", "command": lock, "telemetry": false, "patch": patch });
    let step = app.post_json(&steps, locking).await.json()["id"].as_i64().unwrap();
    let run = crate::runs::start(&app, step, json!({})).await[0];
    let done = crate::runs::finished(&app, run).await;
    assert_eq!(done["patch"]["state"], "dirty", "{done}");
    assert!(done["patch"]["text"].as_str().unwrap().contains("cannot put the original back"), "{done}");
    assert_ne!(sha(&std::fs::read(&gate).unwrap()), sha(GATE.as_bytes()), "still patched");
    // The next run is refused, naming the run that left it so.
    let refused = app.post_json(&format!("/api/v1/steps/{step}/runs"), json!({})).await;
    assert_eq!(refused.status, StatusCode::CONFLICT, "{}", refused.text());
    assert!(refused.text().contains(&format!("run {run}")), "{}", refused.text());
    // Restoring while it is still read-only fails and says so; once writable, it is restored and verified.
    let failed = app.post_json(&format!("/api/v1/hosts/gpu/patches/{run}/restore"), json!({})).await;
    assert_eq!(failed.json()["state"], "dirty", "{}", failed.text());
    let args: Vec<&str> = unlock.iter().copied().filter(|a| !a.is_empty() && *a != "--").collect();
    assert!(std::process::Command::new(args[0]).args(&args[1..]).status().unwrap().success());
    if !immutable {
        assert!(std::process::Command::new("chmod").arg("u+w").arg(&dir).status().unwrap().success());
    }
    let restored = app.post_json(&format!("/api/v1/hosts/gpu/patches/{run}/restore"), json!({})).await;
    assert_eq!(restored.json()["state"], "reverted", "{}", restored.text());
    assert_eq!(sha(&std::fs::read(&gate).unwrap()), sha(GATE.as_bytes()));
    let again = app.post_json(&format!("/api/v1/steps/{step}/runs"), json!({})).await;
    assert_eq!(again.status, StatusCode::CREATED, "{}", again.text());
    let again = again.json()[0]["id"].as_i64().unwrap();
    crate::runs::finished(&app, again).await;
    let _ = std::process::Command::new("chattr").arg("-i").arg(&gate).status();
}

/// SIGKILL the Sleuth that applied a patch, mid-run: when a Sleuth starts on
/// its store again (SQLite), or another replica finds its lease lapsed
/// (PostgreSQL), the run is `interrupted` and the file is back — by its
/// hash — within 60 s.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_patch_left_on_by_a_killed_sleuth_is_put_back_by_the_next() {
    use serde_json::json;
    use std::time::{Duration, Instant};
    let sshd = crate::sshd::Sshd::start();
    let app = crate::runs::app_with_host(&sshd).await;
    let Gated { gate, steps, diff, .. } = gated(&app, &sshd, "killed mid-arm").await;
    let before = sha(GATE.as_bytes());
    let patch =
        app.post_json(&steps, json!({ "kind": "patch", "host": "gpu", "diff": diff })).await.json()["id"].clone();
    let long = json!({ "kind": "command", "host": "gpu", "command": "echo started; sleep 600", "telemetry": false, "patch": patch });
    let step = app.post_json(&steps, long).await.json()["id"].as_i64().unwrap();

    // Another `sleuth serve` on the same store drives the run.
    let mut driver = crate::replicas::Replica::start_on(&app, &[]);
    let (status, runs) = driver.post(&format!("/api/v1/steps/{step}/runs"), json!({})).await;
    assert_eq!(status, 201, "{runs}");
    let run = runs[0]["id"].as_i64().unwrap();
    let applied = crate::runs::wait_for(
        &app,
        run,
        |r| r["patch"]["state"] == "applied" && r["stdout_bytes"].as_u64() > Some(0),
        Duration::from_secs(30),
    )
    .await;
    assert_ne!(sha(&std::fs::read(&gate).unwrap()), before, "applied: {applied}");

    driver.child.kill().expect("kill -9");
    let _ = driver.child.wait();
    let killed = Instant::now();
    // SQLite: one server per store, started again. PostgreSQL: the in-process
    // replica (`app`) ends the run once the dead one's lease lapses.
    let _next = (!crate::helpers::on_postgres()).then(|| crate::replicas::Replica::start_on(&app, &[]));
    loop {
        let back = sha(&std::fs::read(&gate).unwrap()) == before;
        let json = app.get(&format!("/api/v1/runs/{run}")).await.json();
        if back && json["patch"]["state"] == "reverted" {
            assert_eq!(json["status"], "interrupted", "{json}");
            assert_eq!(json["patch"]["files"][0]["reverted"], json!(before), "{json}");
            break;
        }
        assert!(killed.elapsed() < Duration::from_secs(60), "not put back within 60 s: {json}");
        tokio::time::sleep(Duration::from_millis(250)).await;
    }
}

/// "Edit these lines": a snippet's shown lines, edited, become a patch step
/// right after it, against the snapshot's sha256 — an editor may, as it reads
/// no host — and the patch applies on the host.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_snippets_lines_edited_become_a_patch_after_it() {
    use axum::http::{Method, StatusCode};
    use serde_json::{Value, json};
    let sshd = crate::sshd::Sshd::start();
    let team = crate::permissions::team(&sshd).await;
    let (id, _, snippet) = team.shared_investigation(&sshd).await; // model.py, lines 1-10 of 20
    let model = sshd.dir.path().join("model.py");
    let shown: Vec<String> = (1..=10).map(|i| format!("line {i}")).collect();
    let edited = shown.join("\n").replace("line 5", "line 5 <b>edited</b>");
    let made =
        team.ok("edit", Method::POST, &format!("/api/v1/steps/{snippet}/patch"), json!({ "text": edited })).await;
    assert_eq!(made["kind"], "patch", "{made}");
    assert_eq!(made["files"][0]["base"], json!(sha(&std::fs::read(&model).unwrap())));
    assert!(made["diff"].as_str().unwrap().contains("+line 5 <b>edited</b>"), "{made}");
    let inv = team.ok("view", Method::GET, &format!("/api/v1/investigations/{id}"), Value::Null).await;
    let order: Vec<i64> = inv["steps"].as_array().unwrap().iter().map(|s| s["id"].as_i64().unwrap()).collect();
    let at = order.iter().position(|s| *s == snippet).unwrap();
    assert_eq!(order[at + 1], made["id"].as_i64().unwrap(), "right after the snippet: {order:?}");
    let checked = team.ok("run", Method::POST, &format!("/api/v1/steps/{}/check", made["id"]), Value::Null).await;
    assert_eq!(checked["applies"], true, "{checked}");
    // Unchanged lines, or a viewer: refused.
    let same = team
        .call("edit", Method::POST, &format!("/api/v1/steps/{snippet}/patch"), json!({ "text": shown.join("\n") }))
        .await;
    assert_eq!(same.status, StatusCode::UNPROCESSABLE_ENTITY, "{}", same.text());
    let viewer =
        team.call("view", Method::POST, &format!("/api/v1/steps/{snippet}/patch"), json!({ "text": edited })).await;
    assert_eq!(viewer.status, StatusCode::FORBIDDEN, "{}", viewer.text());
}

/// A replay on a second host entry whose copy of the file has an unrelated
/// line changed: the patch applies there by context (the run says where each
/// hunk went) and the replay comes to the same conclusion; where a hunk's
/// context is gone, the patched arm stops naming the hunk.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_replay_applies_the_patch_by_context_or_says_which_hunk_failed() {
    use axum::http::StatusCode;
    use serde_json::json;
    let sshd = crate::sshd::Sshd::start();
    let app = crate::runs::app_with_host(&sshd).await;
    crate::runs::add_host(&app, "gpu2", &sshd, &sshd.client_key.display().to_string()).await;
    let Gated { dir, gate, inv, steps, diff, .. } = gated(&app, &sshd, "replayed gate").await;
    let patch =
        app.post_json(&steps, json!({ "kind": "patch", "host": "gpu", "diff": diff })).await.json()["id"].clone();
    let engine = format!("python3 -c \"{ENGINE}\" {}", dir.display());
    let sweep = json!({ "kind": "command", "host": "gpu", "command": engine, "telemetry": false,
                        "matrix": { "@patch": [null, patch] } });
    let step = app.post_json(&steps, sweep).await.json()["id"].as_i64().unwrap();
    crate::runs::start(&app, step, json!({ "repeat": 2 })).await;
    let hypothesis = json!({ "statement": "Lifting the gate speeds decode up", "metric": "output_throughput", "direction": "increase",
        "baseline": { "configs": [{ "step": step, "config": { "@patch": null } }] },
        "treatment": { "configs": [{ "step": step, "config": { "@patch": patch.to_string() } }] } });
    for run in app.get(&format!("/api/v1/steps/{step}/runs")).await.json().as_array().unwrap() {
        crate::runs::finished(&app, run["id"].as_i64().unwrap()).await;
    }
    let h = app.post_json(&format!("/api/v1/investigations/{inv}/hypotheses"), hypothesis).await.json();
    assert_eq!(h["verdict_word"], "as expected", "{h}");

    // The other host's file: an unrelated line added at the top.
    std::fs::write(&gate, format!("# built elsewhere\n{GATE}")).unwrap();
    let replayed =
        app.post_json(&format!("/api/v1/investigations/{inv}/replay"), json!({ "host": "gpu2", "repeat": 2 })).await;
    assert_eq!(replayed.status, StatusCode::CREATED, "{}", replayed.text());
    let replay = crate::replays::replay_done(&app, replayed.json()["id"].as_i64().unwrap()).await;
    let judged = &replay["hypotheses"][0];
    assert_eq!(judged["same_conclusion"], true, "{replay}");
    let patched = patched_runs(&app, &replay).await;
    assert_eq!(patched.len(), 2, "{replay}");
    let run = &patched[0];
    let text = run["patch"]["text"].as_str().unwrap();
    assert!(text.contains("Applied by context") && text.contains("hunk 1 at line"), "{run}");
    assert_eq!(
        std::fs::read_to_string(&gate).unwrap(),
        format!("# built elsewhere\n{GATE}"),
        "put back as it was there"
    );

    // Its context gone: the patched arm stops, naming the hunk.
    std::fs::write(&gate, GATE.replace("SLOW = True", "SLOW = maybe()").replace("import sys", "import os")).unwrap();
    let replayed = app.post_json(&format!("/api/v1/investigations/{inv}/replay"), json!({ "host": "gpu2" })).await;
    let replay = crate::replays::replay_done(&app, replayed.json()["id"].as_i64().unwrap()).await;
    let failed = patched_runs(&app, &replay).await;
    assert!(!failed.is_empty() && failed.iter().all(|r| r["status"] == "failed"), "{replay}");
    let run = &failed[0];
    assert!(run["error"].as_str().unwrap().contains("hunk 1 not found"), "{run}");
    assert_ne!(replay["hypotheses"][0]["same_conclusion"], true, "no conclusion from one arm: {replay}");
}

/// A replay's runs of the patched arm, each as the API shows it.
async fn patched_runs(app: &crate::helpers::TestApp, replay: &serde_json::Value) -> Vec<serde_json::Value> {
    let mut runs = Vec::new();
    for run in replay["runs"].as_array().unwrap() {
        let run = app.get(&format!("/api/v1/runs/{}", run["id"])).await.json();
        if !run["config"]["@patch"].is_null() {
            runs.push(run);
        }
    }
    runs
}

/// While a patch is applied for a run, another run on the host waits, queued,
/// and says what for; it starts once the patch is put back.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_run_waits_while_a_patch_is_applied_on_its_host_and_says_why() {
    use serde_json::json;
    use std::time::Duration;
    let sshd = crate::sshd::Sshd::start();
    let app = crate::runs::app_with_host(&sshd).await;
    let Gated { path, steps, diff, .. } = gated(&app, &sshd, "waiting").await;
    let patch =
        app.post_json(&steps, json!({ "kind": "patch", "host": "gpu", "diff": diff })).await.json()["id"].clone();
    let slow = json!({ "kind": "command", "host": "gpu", "command": "sleep 2", "telemetry": false, "patch": patch });
    let slow = app.post_json(&steps, slow).await.json()["id"].as_i64().unwrap();
    let plain = json!({ "kind": "command", "host": "gpu", "command": format!("cat {path}"), "telemetry": false });
    let plain = app.post_json(&steps, plain).await.json()["id"].as_i64().unwrap();
    let patched = crate::runs::start(&app, slow, json!({})).await[0];
    crate::runs::wait_for(&app, patched, |r| r["patch"]["state"] == "applied", Duration::from_secs(20)).await;
    let other = crate::runs::start(&app, plain, json!({})).await[0];
    let waiting = crate::runs::wait_for(&app, other, |r| r["waiting"].is_string(), Duration::from_secs(10)).await;
    assert_eq!(waiting["status"], "queued", "{waiting}");
    assert_eq!(waiting["waiting"], json!(format!("waiting: patch {patch} applied on gpu for run {patched}")));
    let done = crate::runs::finished(&app, other).await;
    assert_eq!(done["status"], "succeeded", "{done}");
    assert!(done["waiting"].is_null(), "said no more once it ran: {done}");
    let out = String::from_utf8_lossy(&crate::runs::output(&app, other).await).into_owned();
    assert!(out.contains("SLOW = True"), "it ran on the file as it was, after the patch was put back: {out}");
    assert_eq!(crate::runs::finished(&app, patched).await["patch"]["state"], "reverted");
}

/// The same across replicas (PostgreSQL): a patched run driven by another
/// replica holds the host; a run queued here waits for it, saying so, and
/// runs on the file as it was once the patch is put back.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_run_waits_while_another_replica_has_a_patch_applied_on_its_host() {
    use serde_json::json;
    use std::time::Duration;
    if !crate::helpers::on_postgres() {
        eprintln!("skipped: replicas need PostgreSQL (SLEUTH_TEST_POSTGRES)");
        return;
    }
    let sshd = crate::sshd::Sshd::start();
    let app = crate::runs::app_with_host(&sshd).await;
    let other_replica = crate::replicas::Replica::start_on(&app, &[]);
    let Gated { path, steps, diff, .. } = gated(&app, &sshd, "waiting across replicas").await;
    let patch =
        app.post_json(&steps, json!({ "kind": "patch", "host": "gpu", "diff": diff })).await.json()["id"].clone();
    let slow = json!({ "kind": "command", "host": "gpu", "command": "sleep 3", "telemetry": false, "patch": patch });
    let slow = app.post_json(&steps, slow).await.json()["id"].as_i64().unwrap();
    let plain = json!({ "kind": "command", "host": "gpu", "command": format!("cat {path}"), "telemetry": false });
    let plain = app.post_json(&steps, plain).await.json()["id"].as_i64().unwrap();
    // The patched run, queued on (and driven by) the other replica.
    let (status, runs) = other_replica.post(&format!("/api/v1/steps/{slow}/runs"), json!({})).await;
    assert_eq!(status, 201, "{runs}");
    let patched = runs[0]["id"].as_i64().unwrap();
    crate::runs::wait_for(&app, patched, |r| r["patch"]["state"] == "applied", Duration::from_secs(30)).await;
    let here = crate::runs::start(&app, plain, json!({})).await[0];
    let waiting = crate::runs::wait_for(&app, here, |r| r["waiting"].is_string(), Duration::from_secs(10)).await;
    assert_eq!(waiting["status"], "queued", "{waiting}");
    assert_eq!(waiting["waiting"], json!(format!("waiting: patch {patch} applied on gpu for run {patched}")));
    let done = crate::runs::finished(&app, here).await;
    assert_eq!(done["status"], "succeeded", "{done}");
    let out = String::from_utf8_lossy(&crate::runs::output(&app, here).await).into_owned();
    assert!(out.contains("SLOW = True"), "it ran on the file as it was, after the patch was put back: {out}");
    let ended = crate::runs::finished(&app, patched).await;
    assert_eq!(ended["patch"]["state"], "reverted", "{ended}");
    assert!(done["started_at"].as_str() >= ended["finished_at"].as_str(), "one after the other: {done} {ended}");
}
