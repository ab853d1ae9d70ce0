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
    assert_eq!(patches, 1, "only the first patch was saved");

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
