//! A small disk of its own for a test or benchmark (a real tmpfs), and
//! filling it to the last byte, as another program would.

use std::process::Command;

/// A tmpfs mounted for the test, lazily unmounted when it ends.
pub struct Tmpfs(std::path::PathBuf);

impl Tmpfs {
    /// `None` where this user may not mount (not root, or in a container
    /// without the right): the test says so and checks nothing.
    pub fn mount(at: &std::path::Path, size: &str) -> Option<Tmpfs> {
        std::fs::create_dir_all(at).ok()?;
        let done = Command::new("mount").args(["-t", "tmpfs", "-o", &format!("size={size}"), "tmpfs"]).arg(at).status();
        match done {
            Ok(status) if status.success() => Some(Tmpfs(at.to_path_buf())),
            _ => {
                eprintln!("skipped: cannot mount a tmpfs here (run the suite as root)");
                None
            }
        }
    }
}

impl Drop for Tmpfs {
    fn drop(&mut self) {
        let _ = Command::new("umount").arg("-l").arg(&self.0).status();
    }
}

/// Files that take `dir`'s disk to its last byte (big blocks, then small ones).
pub fn fill_to_the_last_byte(dir: &std::path::Path) -> [std::path::PathBuf; 2] {
    let fillers = [dir.join("fill"), dir.join("fill2")];
    for (filler, block) in fillers.iter().zip(["bs=64k", "bs=512"]) {
        let _ = Command::new("dd").args(["if=/dev/zero", block]).arg(format!("of={}", filler.display())).output();
    }
    assert!(server::operations::free_bytes(dir).expect("free bytes") < 4096, "full to the last byte");
    fillers
}
