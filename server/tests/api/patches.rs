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
