//! A real OpenSSH server for the tests: Debian's `sshd` on 127.0.0.1, a free
//! port, a fresh host key and an authorized client key, all in a temp dir.

use std::net::TcpStream;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};
use tempfile::TempDir;

pub struct Sshd {
    pub port: u16,
    pub dir: TempDir,
    pub client_key: PathBuf,
    /// What `Subsystem sftp` runs.
    sftp: String,
    child: Option<Child>,
}

fn keygen(path: &Path) {
    let status = Command::new("ssh-keygen")
        .args(["-q", "-t", "ed25519", "-N", "", "-C", "sleuth-test", "-f"])
        .arg(path)
        .status()
        .expect("ssh-keygen runs (install openssh-client)");
    assert!(status.success());
}

pub fn whoami() -> String {
    let out = Command::new("id").arg("-un").output().expect("id");
    String::from_utf8_lossy(&out.stdout).trim().to_string()
}

/// What `ssh-keygen -lf` says the key's fingerprint is.
pub fn fingerprint_of(public_key: &Path) -> String {
    let out = Command::new("ssh-keygen").arg("-lf").arg(public_key).output().expect("ssh-keygen -lf");
    let text = String::from_utf8_lossy(&out.stdout);
    text.split_whitespace().nth(1).expect("fingerprint field").to_string()
}

fn free_port() -> u16 {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
    listener.local_addr().expect("addr").port()
}

impl Sshd {
    pub fn start() -> Sshd {
        Self::start_with_sftp("internal-sftp")
    }

    /// An sshd whose SFTP subsystem is `subsystem` (`/bin/false`: one that never starts).
    pub fn start_with_sftp(subsystem: &str) -> Sshd {
        let dir = tempfile::tempdir().expect("temp dir");
        let client_key = dir.path().join("client");
        keygen(&client_key);
        std::fs::copy(dir.path().join("client.pub"), dir.path().join("authorized_keys")).expect("authorized_keys");
        keygen(&dir.path().join("hostkey"));
        let mut sshd = Sshd { port: free_port(), dir, client_key, sftp: subsystem.to_string(), child: None };
        sshd.spawn();
        sshd
    }

    /// What every session's shell runs first, as a login shell's rc file does
    /// (bash reads `$BASH_ENV`): `""` for nothing, or the CPU work of a conda
    /// or pyenv init, as GPU hosts often have.
    pub fn set_login(&self, script: &str) {
        std::fs::write(self.dir.path().join("login.sh"), script).expect("login.sh");
    }

    pub fn host_key_fingerprint(&self) -> String {
        fingerprint_of(&self.dir.path().join("hostkey.pub"))
    }

    fn spawn(&mut self) {
        // sshd refuses to start without its privilege separation directory.
        let _ = std::fs::create_dir_all("/run/sshd");
        let d = self.dir.path().display();
        // Sessions run the user's shell, and bash reads ~/.bashrc for sshd sessions
        // unless it is nested (SHLVL ≥ 1 in its environment). The tests' hosts must
        // not depend on the developer's dotfiles: here ~/.bashrc runs `pyenv
        // rehash` under a lock file, the tests kill sessions (cancel, timeout, a
        // killed sshd), and a kill at the wrong moment left the lock behind, after
        // which every login waited 60 s for it. `$BASH_ENV` stands in for it
        // where a test wants a login that costs something (`set_login`).
        let config = format!(
            "Port {port}\nListenAddress 127.0.0.1\nHostKey {d}/hostkey\nPidFile {d}/sshd.pid\n\
             AuthorizedKeysFile {d}/authorized_keys\nStrictModes no\nUsePAM no\n\
             PasswordAuthentication no\nKbdInteractiveAuthentication no\nPubkeyAuthentication yes\n\
             PermitRootLogin prohibit-password\nLogLevel ERROR\nSubsystem sftp {sftp}\n\
             SetEnv SHLVL=1 BASH_ENV={d}/login.sh\n",
            port = self.port,
            sftp = self.sftp
        );
        let config_path = self.dir.path().join("sshd_config");
        std::fs::write(&config_path, config).expect("sshd_config");
        if !self.dir.path().join("login.sh").exists() {
            self.set_login("");
        }
        let sshd = ["/usr/sbin/sshd", "/usr/bin/sshd"]
            .into_iter()
            .find(|p| Path::new(p).exists())
            .expect("sshd (install openssh-server)");
        let child = Command::new(sshd)
            .arg("-D")
            .arg("-e")
            .arg("-f")
            .arg(&config_path)
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("sshd starts");
        self.child = Some(child);
        let deadline = Instant::now() + Duration::from_secs(10);
        while TcpStream::connect(("127.0.0.1", self.port)).is_err() {
            assert!(Instant::now() < deadline, "sshd did not listen on {}", self.port);
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    /// Kills sshd and every connection it serves (as a crash or a reboot would).
    pub fn kill(&mut self) {
        if let Some(mut child) = self.child.take() {
            // Per-connection sshd processes outlive the listener: end them first.
            for pid in descendants(child.id()) {
                let _ = Command::new("kill").arg("-KILL").arg(pid.to_string()).stderr(Stdio::null()).status();
            }
            let _ = child.kill();
            let _ = child.wait();
        }
    }

    /// Stops every connection it serves without closing them (SIGSTOP): no
    /// RST, no data, as a host that froze or lost its network.
    pub fn freeze(&self) {
        if let Some(child) = &self.child {
            for pid in descendants(child.id()).into_iter().filter(|p| *p != child.id()) {
                let _ = Command::new("kill").arg("-STOP").arg(pid.to_string()).stderr(Stdio::null()).status();
            }
        }
    }

    pub fn restart(&mut self) {
        self.kill();
        self.spawn();
    }

    /// A new host key, as after a reinstall (or an attack).
    pub fn restart_with_new_host_key(&mut self) {
        self.kill();
        let _ = std::fs::remove_file(self.dir.path().join("hostkey"));
        let _ = std::fs::remove_file(self.dir.path().join("hostkey.pub"));
        keygen(&self.dir.path().join("hostkey"));
        self.spawn();
    }
}

impl Drop for Sshd {
    fn drop(&mut self) {
        self.kill();
    }
}

/// Every process below `root`, from /proc.
fn descendants(root: u32) -> Vec<u32> {
    let mut parent_of = Vec::new();
    for entry in std::fs::read_dir("/proc").into_iter().flatten().flatten() {
        let Ok(pid) = entry.file_name().to_string_lossy().parse::<u32>() else { continue };
        let Ok(stat) = std::fs::read_to_string(entry.path().join("stat")) else { continue };
        // "pid (comm) state ppid ...": comm may hold spaces, so split after ')'.
        let Some(rest) = stat.rsplit_once(')').map(|(_, rest)| rest) else { continue };
        if let Some(ppid) = rest.split_whitespace().nth(1).and_then(|p| p.parse::<u32>().ok()) {
            parent_of.push((pid, ppid));
        }
    }
    let mut found = vec![root];
    let mut i = 0;
    while i < found.len() {
        let parent = found[i];
        found.extend(parent_of.iter().filter(|(_, pp)| *pp == parent).map(|(p, _)| *p));
        i += 1;
    }
    found.remove(0);
    found
}
