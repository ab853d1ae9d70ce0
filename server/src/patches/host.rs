//! A patch on its host: its files read (their bases), written and put back,
//! each step checked by sha256, through one POSIX shell script per action
//! (run over the pooled connection like a run's own). The scripts answer one
//! line per file, `WORD<TAB>N<TAB>…`, which [`answers`] reads; nothing here
//! trusts a file it has not just hashed.
//!
//! - Applying checks every file's base first and writes nothing unless all
//!   match; then, per file, keeps the original in the run's directory, writes
//!   the new text beside it and renames it over (atomic; mode and owner kept),
//!   removes its `.pyc`, and hashes what is there now.
//! - Reverting puts an original back only over the text the patch wrote (or
//!   leaves an original that is back already): a file changed since is never
//!   overwritten. It hashes the result; one that is not the base is said so.
//! - A path that is a symlink is followed only within its own directory.

use crate::error::Result;
use crate::ssh::exec;
use crate::ssh::quote::quote;
use crate::ssh::{Pool, Target};
use domain::error::{ApiError, ErrorCode};

/// One file's change, as applying needs it.
#[derive(Clone, Debug)]
pub struct Change {
    pub path: String,
    /// The sha256 (hex) the file must have before it is written.
    pub base: String,
    pub text: Vec<u8>,
}

/// A file a patch wrote, as reverting needs it.
#[derive(Clone, Debug)]
pub struct Written {
    pub path: String,
    pub base: String,
    /// The sha256 of what the patch wrote.
    pub applied: String,
}

/// What a script said of one file.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Said {
    /// Read: its sha256.
    Hash(String),
    Missing,
    /// A symlink to somewhere outside its directory.
    Escapes(String),
    /// Its sha256 is not the patch's base.
    Differs(String),
    /// Written; the sha256 of what is there now.
    Applied(String),
    /// Put back; the sha256 of what is there now (the base).
    Reverted(String),
    /// Changed by someone since the patch wrote it: left alone.
    Changed(String),
    /// Put back, but what is there now is not the base (its sha256).
    Unverified(String),
    /// An action on it failed: what the shell said.
    Failed(String),
}

/// The lines the shell functions below share: a file's hash (one file, or
/// many at once), and a path followed through a symlink only within its own
/// directory. They set variables rather than print into a `$(…)`, and hash
/// many files with one `sha256sum`: every process is a fork and an exec, and
/// processes are what a patch's time on the host is made of (the `patches`
/// benchmark).
const COMMON: &str = r#"set -u
# Sets h to the sha256 of file $1 (empty when it cannot be read).
hash() { h=$(sha256sum < "$1") || { h=; return 1; }; h=${h%% *}; }
# Sets h0, h1, … to the sha256 of each file named, in order (empty for one
# that cannot be read): one sha256sum for all, one each only if that fails.
# (sha256sum starts a line with a backslash for a name it had to escape.)
hashes() {
  i=0
  if out=$(sha256sum -- "$@" 2>/dev/null); then
    while IFS= read -r l; do l=${l#\\}; eval "h$i=\${l%% *}"; i=$((i + 1)); done <<EOF
$out
EOF
  else
    for p in "$@"; do if [ -n "$p" ] && hash "$p"; then :; else h=; fi; eval "h$i=\$h"; i=$((i + 1)); done
  fi
}
# Sets f to the file path $1 names: itself, or a symlink's target in the same
# directory; one that leaves it is said (file number $2) and refused.
target() {
  f=$1
  [ -L "$1" ] || return 0
  t=$(readlink -f -- "$1") || return 1
  d=$(cd -- "${1%/*}" && pwd -P) || return 1
  case "$t" in "$d"/*) f=$t ;; *) echo "escapes	$2	$t"; return 1 ;; esac
}
# The caches of compiled code of file $1: gone with each change.
pyc() { [ -d "${1%/*}/__pycache__" ] || return 0; b=${1##*/}; rm -f -- "${1%/*}/__pycache__/${b%.py}".*.pyc; }
"#;

/// Reads each path's sha256 (or says it is missing or escapes).
pub fn read_script(paths: &[String]) -> String {
    let mut script = String::from(COMMON);
    script.push_str(
        r#"read1() {
  target "$2" "$1" || return 0
  if [ -f "$f" ] && hash "$f"; then echo "hash	$1	$h"; else echo "missing	$1"; fi
}
"#,
    );
    for (n, path) in paths.iter().enumerate() {
        script.push_str(&format!("read1 {n} {}\n", quote(path)));
    }
    script
}

/// Finds each relative path (`vllm/distributed/…/custom_all_reduce.py`, as
/// `git diff` names files) where Python on the host would import it from: the
/// first directory of `python3`'s `sys.path` (in its order: the one it
/// imports) that holds it, else the home directory. A path not found whole is
/// tried without its leading directories (a repository's `python/sglang/…`
/// is installed as `sglang/…`), down to a directory and its file. Answers
/// `found<TAB>N<TAB>PATH` or `none<TAB>N`.
pub fn resolve_script(paths: &[String]) -> String {
    let mut script = String::from(
        r#"set -u
dirs=$(python3 -c 'import sys
print("\n".join(p for p in sys.path if p.startswith("/")))' 2>/dev/null)
dirs="$dirs
$HOME"
resolve() {
  r=$2
  while :; do
    while IFS= read -r d; do
      [ -n "$d" ] && [ -f "$d/$r" ] && { echo "found	$1	$d/$r"; return 0; }
    done <<EOF
$dirs
EOF
    case "$r" in */*/*) r=${r#*/} ;; *) break ;; esac
  done
  echo "none	$1"
}
"#,
    );
    for (n, path) in paths.iter().enumerate() {
        script.push_str(&format!("resolve {n} {}\n", quote(path.trim_start_matches("./"))));
    }
    script
}

/// Where each relative path is on the host ([`resolve_script`]); `None` for
/// one found nowhere.
pub async fn resolve(pool: &Pool, target: &Target, paths: &[String]) -> Result<Vec<Option<String>>> {
    let captured = exec::capture(pool, target, &resolve_script(paths), 1 << 20).await?;
    let mut found: Vec<Option<Option<String>>> = vec![None; paths.len()];
    for line in String::from_utf8_lossy(&captured.stdout).lines() {
        let mut parts = line.splitn(3, '\t');
        let (word, n, path) = (parts.next(), parts.next().and_then(|n| n.parse::<usize>().ok()), parts.next());
        match (word, n.filter(|n| *n < paths.len()), path) {
            (Some("found"), Some(n), Some(path)) if path.starts_with('/') => found[n] = Some(Some(path.to_string())),
            (Some("none"), Some(n), _) => found[n] = Some(None),
            _ => {}
        }
    }
    if found.iter().any(Option::is_none) {
        let stderr = String::from_utf8_lossy(&captured.stderr);
        return Err(ApiError::new(
            ErrorCode::HostUnreachable,
            format!("{} did not say where the patch's files are: {}", target.name, stderr.trim()),
        )
        .into());
    }
    Ok(found.into_iter().flatten().collect())
}

/// Prints each path's text, framed: `text<TAB>N<TAB>SIZE` and its bytes (or
/// says it is missing or escapes).
pub fn texts_script(paths: &[String]) -> String {
    let mut script = String::from(COMMON);
    script.push_str(
        r#"text1() {
  target "$2" "$1" || return 0
  if [ -f "$f" ]; then s=$(wc -c < "$f") && printf 'text\t%s\t%s\n' "$1" $s && cat -- "$f"; else echo "missing	$1"; fi
}
"#,
    );
    for (n, path) in paths.iter().enumerate() {
        script.push_str(&format!("text1 {n} {}\n", quote(path)));
    }
    script
}

/// What [`texts_script`] printed: per file its text, or what it said
/// instead (`Missing`, `Escapes`); `None` for a file it said nothing of.
pub fn texts_of(out: &[u8], files: usize) -> Vec<Option<Result<Vec<u8>, Said>>> {
    let mut found: Vec<Option<Result<Vec<u8>, Said>>> = vec![None; files];
    let mut rest = out;
    while let Some(end) = rest.iter().position(|b| *b == b'\n') {
        let line = String::from_utf8_lossy(&rest[..end]).into_owned();
        rest = &rest[end + 1..];
        let mut parts = line.splitn(3, '\t');
        let (word, n, more) = (parts.next().unwrap_or(""), parts.next(), parts.next().unwrap_or(""));
        let Some(n) = n.and_then(|n| n.parse::<usize>().ok()).filter(|n| *n < files) else { continue };
        match word {
            "text" => {
                let Ok(size) = more.trim().parse::<usize>() else { break };
                if rest.len() < size {
                    break; // cut short: said of none
                }
                found[n] = Some(Ok(rest[..size].to_vec()));
                rest = &rest[size..];
            }
            "missing" => found[n] = Some(Err(Said::Missing)),
            "escapes" => found[n] = Some(Err(Said::Escapes(more.to_string()))),
            _ => {}
        }
    }
    found
}

/// Applies `changes`, keeping the originals under `keep` (a directory of the
/// run's, as `keep/files/<the file's absolute path>`): the script, and what
/// goes on its stdin (the new texts, one after another; a command line holds
/// at most 128 KiB).
///
/// Each new text goes first into a copy of its file beside it (its mode and
/// owner, as `cp -p` keeps them); then every file and every copy is hashed
/// at once. Only if every base holds are the originals kept and the copies
/// renamed over their files — readers see the old file or the new — and
/// the hash said of each is that of the copy renamed into place.
pub fn apply_script(keep: &str, changes: &[Change]) -> (String, Vec<u8>) {
    let mut script = String::from(COMMON);
    script.push_str(&format!("keep={}\nn={}\n", quote(keep), changes.len()));
    script.push_str(
        r#"ok=1
# The next $1 bytes of stdin, exactly (each file's text is read whatever else fails).
take() { if [ "$1" -gt 0 ]; then dd bs="$1" count=1 iflag=fullblock 2>/dev/null; fi; }
# File $1 (path $2): its new text ($3 bytes) into a copy beside it (t$1).
stage() {
  target "$2" "$1" || { take "$3" > /dev/null; ok=0; return 0; }
  [ -f "$f" ] || { take "$3" > /dev/null; echo "missing	$1"; ok=0; return 0; }
  tmp="${f%/*}/.sleuth-patch.$$.$1"
  if cp -p -- "$f" "$tmp" 2>/dev/null; then
    take "$3" > "$tmp"
    eval "f$1=\$f t$1=\$tmp"
  else
    take "$3" > /dev/null; echo "failed	$1	cannot write beside it"; ok=0
  fi
}
# File $1 found with sha256 $2, its base $3; $4: its staged copy, if any.
based() {
  [ -n "$4" ] || return 0
  if [ "$2" = "$3" ]; then echo "hash	$1	$2"; else echo "differs	$1	$2"; ok=0; fi
}
# Every file said of with $1.
all() { i=0; while [ "$i" -lt "$n" ]; do echo "failed	$i	$1"; i=$((i + 1)); done; }
# The original of file $1 kept under $keep/files, where cp has no --parents.
keep1() { mkdir -p -- "$keep/files${1%/*}" && cp -- "$1" "$keep/files$1"; }
# File $1 (path $2): its copy $3, hashed $4, renamed over it.
place() {
  if mv -f -- "$3" "$2"; then pyc "$2"; echo "applied	$1	$4"; else rm -f -- "$3"; echo "failed	$1	cannot replace it"; fi
}
"#,
    );
    let mut input = Vec::new();
    for (n, c) in changes.iter().enumerate() {
        script.push_str(&format!("stage {n} {} {}\n", quote(&c.path), c.text.len()));
        input.extend_from_slice(&c.text);
    }
    let count = changes.len();
    let each = |form: &dyn Fn(usize) -> String, sep: &str| (0..count).map(form).collect::<Vec<_>>().join(sep);
    let originals = each(&|n| format!("\"${{f{n}-}}\""), " ");
    let copies = each(&|n| format!("\"${{t{n}-}}\""), " ");
    script.push_str(&format!("hashes {originals} {copies}\n"));
    for (n, c) in changes.iter().enumerate() {
        script.push_str(&format!("based {n} \"$h{n}\" {} \"${{t{n}-}}\"\n", quote(&c.base)));
    }
    script.push_str(&format!("[ \"$ok\" = 1 ] || {{ rm -f -- {copies}; exit 0; }}\n"));
    let one_by_one = each(&|n| format!("keep1 \"$f{n}\""), " && ");
    script.push_str(&format!(
        "if ! {{ mkdir -p -- \"$keep/files\" && {{ cp --parents --preserve=timestamps -- {originals} \"$keep/files/\" 2>/dev/null || {{ {one_by_one}; }}; }}; }}; then\n  rm -f -- {copies}; all \"cannot keep the original in $keep\"; exit 0\nfi\n"
    ));
    for n in 0..count {
        script.push_str(&format!("place {n} \"$f{n}\" \"$t{n}\" \"$h{}\"\n", count + n));
    }
    (script, input)
}

/// Puts back what [`apply_script`] kept under `keep`.
pub fn revert_script(keep: &str, written: &[Written]) -> String {
    put_back_script(keep, written, false)
}

/// The same, and `over_changes`: over a file changed since the patch wrote it
/// too (an admin restoring a dirty host).
///
/// Every file is hashed at once; those to put back are copied back in place
/// with one `cp` (into the inode the patch renamed there, whose mode and
/// owner were the original's; nothing runs on the host while a patch is on),
/// and hashed again at once.
fn put_back_script(keep: &str, written: &[Written], over_changes: bool) -> String {
    let mut script = String::from(COMMON);
    script.push_str(&format!("keep={}\nover={}\nback=\n", quote(keep), u8::from(over_changes)));
    script.push_str(
        r#"# File $1 (path $2): f$1 is the file to hash, empty where it escapes.
look() { if target "$2" "$1"; then eval "f$1=\$f"; else eval "f$1="; fi; }
# File $1 found with sha256 $2, written as $3, its base $4, $5 its path:
# said, or to be put back (b$1=1).
judge() {
  eval "b$1=0"
  [ -n "$5" ] || return 0
  if [ "$2" = "$4" ]; then echo "reverted	$1	$2"; return 0; fi
  if [ "$2" != "$3" ] && [ "$over" != 1 ]; then echo "changed	$1	$2"; return 0; fi
  eval "b$1=1"; back=1
}
# The originals named (relative to $keep/files) copied back in place, all
# with one cp --parents.
putback() {
  here=$PWD
  if cd -- "$keep/files" 2>/dev/null && cp --parents --preserve=timestamps -- "$@" / 2>/dev/null; then cd -- "$here"; return 0; fi
  cd -- "$here"; return 1
}
# File $1 (path $2) put back by itself: where cp has no --parents, or its
# original was kept as $keep/N.orig (as patches applied before this layout kept them).
back1() {
  src="$keep/files$2"
  [ -f "$src" ] || src="$keep/$1.orig"
  cp -- "$src" "$2" 2>/dev/null || { echo "failed	$1	cannot put the original back"; eval "b$1=0"; }
}
# File $1 put back, its sha256 now $2, its base $3, $4 its path: said.
verify() {
  if [ "$2" = "$3" ]; then pyc "$4"; echo "reverted	$1	$2"; else echo "unverified	$1	$2"; fi
}
"#,
    );
    let count = written.len();
    for (n, w) in written.iter().enumerate() {
        script.push_str(&format!("look {n} {}\n", quote(&w.path)));
    }
    let files = (0..count).map(|n| format!("\"$f{n}\"")).collect::<Vec<_>>().join(" ");
    script.push_str(&format!("hashes {files}\n"));
    for (n, w) in written.iter().enumerate() {
        script.push_str(&format!("judge {n} \"$h{n}\" {} {} \"$f{n}\"\n", quote(&w.applied), quote(&w.base)));
    }
    script.push_str("[ -n \"$back\" ] || exit 0\nset --\n");
    for n in 0..count {
        script.push_str(&format!("[ \"$b{n}\" = 0 ] || set -- \"$@\" \"${{f{n}#/}}\"\n"));
    }
    script.push_str("if ! putback \"$@\"; then\n");
    for n in 0..count {
        script.push_str(&format!("  [ \"$b{n}\" = 0 ] || back1 {n} \"$f{n}\"\n"));
    }
    script.push_str(&format!("fi\nhashes {files}\n"));
    for (n, w) in written.iter().enumerate() {
        script.push_str(&format!("[ \"$b{n}\" = 0 ] || verify {n} \"$h{n}\" {} \"$f{n}\"\n", quote(&w.base)));
    }
    script
}

/// Puts the originals back over whatever is there now (an admin's restore
/// of a dirty host): each file `Reverted` (its base again), `Unverified` or `Failed`.
pub async fn restore(pool: &Pool, target: &Target, keep: &str, written: &[Written]) -> Result<Vec<Said>> {
    absolute(written.iter().map(|w| &w.path))?;
    run(pool, target, &put_back_script(keep, written, true), &[], written.len()).await
}

/// Runs `script` on the host: what it said of each of its `files` files, in
/// order. A file it said nothing of (a script cut short, a shell that is not
/// POSIX) is an error with what it did say.
async fn run(pool: &Pool, target: &Target, script: &str, input: &[u8], files: usize) -> Result<Vec<Said>> {
    let captured = exec::capture_with_input(pool, target, script, input, 1 << 20).await?;
    let (said, other) = answers(&String::from_utf8_lossy(&captured.stdout), files);
    let answered = said.iter().flatten().count();
    if answered < files {
        let stderr = String::from_utf8_lossy(&captured.stderr);
        let more: Vec<&str> = other.iter().map(String::as_str).chain(stderr.lines()).take(5).collect();
        return Err(ApiError::new(
            ErrorCode::HostUnreachable,
            format!("{} answered for {answered} of the patch's {files} files: {}", target.name, more.join(" / ")),
        )
        .into());
    }
    Ok(said.into_iter().flatten().collect())
}

/// The scripts take absolute paths (a diff's relative ones are resolved
/// before: against what is the step's to say).
fn absolute<'a>(paths: impl IntoIterator<Item = &'a String>) -> Result<()> {
    match paths.into_iter().find(|p| !p.starts_with('/')) {
        Some(path) => Err(ApiError::invalid(format!("{path:?} is not an absolute path on the host.")).into()),
        None => Ok(()),
    }
}

/// Each path's sha256 on the host (or that it is missing, or escapes its directory).
pub async fn read(pool: &Pool, target: &Target, paths: &[String]) -> Result<Vec<Said>> {
    absolute(paths)?;
    run(pool, target, &read_script(paths), &[], paths.len()).await
}

/// Each path's text on the host (or that it is missing, or escapes its
/// directory), at most `limit` bytes in all.
pub async fn texts(pool: &Pool, target: &Target, paths: &[String], limit: usize) -> Result<Vec<Result<Vec<u8>, Said>>> {
    absolute(paths)?;
    let captured = exec::capture_with_input(pool, target, &texts_script(paths), &[], limit).await?;
    if captured.truncated {
        return Err(
            ApiError::invalid(format!("The patch's files on {} hold over {} MiB.", target.name, limit >> 20)).into()
        );
    }
    let found = texts_of(&captured.stdout, paths.len());
    let answered = found.iter().flatten().count();
    if answered < paths.len() {
        let stderr = String::from_utf8_lossy(&captured.stderr);
        return Err(ApiError::new(
            ErrorCode::HostUnreachable,
            format!(
                "{} gave the text of {answered} of the patch's {} files: {}",
                target.name,
                paths.len(),
                stderr.trim()
            ),
        )
        .into());
    }
    Ok(found.into_iter().flatten().collect())
}

/// Applies `changes` on the host, the originals kept under `keep`: each file
/// `Applied`, or — where one base differs, is missing or escapes — nothing
/// written and each file's state said.
pub async fn apply(pool: &Pool, target: &Target, keep: &str, changes: &[Change]) -> Result<Vec<Said>> {
    absolute(changes.iter().map(|c| &c.path))?;
    let (script, input) = apply_script(keep, changes);
    run(pool, target, &script, &input, changes.len()).await
}

/// Puts back what [`apply`] wrote: each file `Reverted`, `Changed` (left
/// alone), `Unverified` or `Failed`.
pub async fn revert(pool: &Pool, target: &Target, keep: &str, written: &[Written]) -> Result<Vec<Said>> {
    absolute(written.iter().map(|w| &w.path))?;
    run(pool, target, &revert_script(keep, written), &[], written.len()).await
}

/// What a script said of each of its `files` files, in their order (`None`
/// where it said nothing: a script cut short); and what it said of none (a
/// line for `-`, or one it does not know).
pub fn answers(out: &str, files: usize) -> (Vec<Option<Said>>, Vec<String>) {
    let mut said: Vec<Option<Said>> = vec![None; files];
    let mut other = Vec::new();
    for line in out.lines() {
        let mut parts = line.splitn(3, '\t');
        let (word, n, rest) = (parts.next().unwrap_or(""), parts.next(), parts.next().unwrap_or("").to_string());
        let what = match word {
            "hash" => Some(Said::Hash(rest)),
            "missing" => Some(Said::Missing),
            "escapes" => Some(Said::Escapes(rest)),
            "differs" => Some(Said::Differs(rest)),
            "applied" => Some(Said::Applied(rest)),
            "reverted" => Some(Said::Reverted(rest)),
            "changed" => Some(Said::Changed(rest)),
            "unverified" => Some(Said::Unverified(rest)),
            "failed" => Some(Said::Failed(rest)),
            _ => None,
        };
        match (what, n.and_then(|n| n.parse::<usize>().ok()).filter(|n| *n < files)) {
            (Some(what), Some(n)) => said[n] = Some(what),
            _ => other.push(line.to_string()),
        }
    }
    (said, other)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::PermissionsExt;

    /// The script run by the shell a host has, here.
    fn run(script: &str) -> String {
        sh((script.to_string(), Vec::new()))
    }

    /// The same with its stdin.
    fn sh((script, input): (String, Vec<u8>)) -> String {
        use std::io::Write;
        let mut child = std::process::Command::new("sh")
            .arg("-c")
            .arg(script)
            .stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::piped())
            .spawn()
            .expect("sh");
        let mut stdin = child.stdin.take().expect("stdin");
        let writer = std::thread::spawn(move || {
            let _ = stdin.write_all(&input);
        });
        let out = child.wait_with_output().expect("sh");
        let _ = writer.join();
        String::from_utf8_lossy(&out.stdout).into_owned()
    }

    fn sha(bytes: &[u8]) -> String {
        use sha2::Digest;
        format!("{:x}", sha2::Sha256::digest(bytes))
    }

    #[test]
    fn texts_come_framed_whatever_bytes_they_hold() {
        let dir = tempfile::tempdir().unwrap();
        let (a, b) = (dir.path().join("a.py"), dir.path().join("b.py"));
        let odd = b"line\ntext\t0\t99\n\x00\xff no newline at the end";
        std::fs::write(&a, odd).unwrap();
        std::fs::write(&b, "").unwrap();
        let paths =
            [a.display().to_string(), dir.path().join("gone.py").display().to_string(), b.display().to_string()];
        let out = std::process::Command::new("sh").arg("-c").arg(texts_script(&paths)).output().unwrap().stdout;
        let found = texts_of(&out, 3);
        assert_eq!(found[0], Some(Ok(odd.to_vec())));
        assert_eq!(found[1], Some(Err(Said::Missing)));
        assert_eq!(found[2], Some(Ok(Vec::new())));
        // Cut short inside a text: that file is said of by none.
        let cut = &out[..out.len() / 3];
        assert_eq!(texts_of(cut, 3)[0], None);
    }

    #[test]
    fn applying_checks_every_base_first_then_writes_in_place_and_reverting_puts_back() {
        let dir = tempfile::tempdir().unwrap();
        let (a, b) = (dir.path().join("gate.py"), dir.path().join("other.py"));
        std::fs::write(&a, "if world_size > 2:\n").unwrap();
        std::fs::write(&b, "x = 1\n").unwrap();
        std::fs::set_permissions(&a, std::fs::Permissions::from_mode(0o640)).unwrap();
        std::fs::create_dir(dir.path().join("__pycache__")).unwrap();
        let pyc = dir.path().join("__pycache__/gate.cpython-312.pyc");
        std::fs::write(&pyc, "stale").unwrap();
        let keep = dir.path().join("run/patch").display().to_string();
        let paths = [a.display().to_string(), b.display().to_string()];
        let change =
            |path: &str, base: &str, text: &str| Change { path: path.into(), base: base.into(), text: text.into() };

        // Read: both hashes.
        let (read, _) = answers(&run(&read_script(&paths)), 2);
        assert_eq!(read[0], Some(Said::Hash(sha(b"if world_size > 2:\n"))));

        // One base differs: nothing is written, and it says which and what it found.
        let wrong = [
            change(&paths[0], &sha(b"if world_size > 2:\n"), "if world_size > 8:\n"),
            change(&paths[1], &"0".repeat(64), "x = 2\n"),
        ];
        let (said, _) = answers(&sh(apply_script(&keep, &wrong)), 2);
        assert_eq!(said[1], Some(Said::Differs(sha(b"x = 1\n"))));
        assert_eq!(said[0], Some(Said::Hash(sha(b"if world_size > 2:\n"))), "checked, not written: {said:?}");
        assert_eq!(std::fs::read_to_string(&a).unwrap(), "if world_size > 2:\n");

        // Both bases right: written in place, mode kept, the .pyc gone, the new hash said.
        let right = [change(&paths[0], &sha(b"if world_size > 2:\n"), "if world_size > 8:\n")];
        let (said, _) = answers(&sh(apply_script(&keep, &right)), 1);
        assert_eq!(said[0], Some(Said::Applied(sha(b"if world_size > 8:\n"))));
        assert_eq!(std::fs::read_to_string(&a).unwrap(), "if world_size > 8:\n");
        assert_eq!(std::fs::metadata(&a).unwrap().permissions().mode() & 0o777, 0o640);
        assert!(!pyc.exists(), "the stale .pyc is removed");

        // Reverting: the original back, verified by its hash.
        let written = [Written {
            path: paths[0].clone(),
            base: sha(b"if world_size > 2:\n"),
            applied: sha(b"if world_size > 8:\n"),
        }];
        let (said, _) = answers(&run(&revert_script(&keep, &written)), 1);
        assert_eq!(said[0], Some(Said::Reverted(sha(b"if world_size > 2:\n"))));
        assert_eq!(std::fs::read_to_string(&a).unwrap(), "if world_size > 2:\n");
        // Again (a recovery after the first revert): already back, nothing written.
        let (said, _) = answers(&run(&revert_script(&keep, &written)), 1);
        assert_eq!(said[0], Some(Said::Reverted(sha(b"if world_size > 2:\n"))));
    }

    #[test]
    fn a_file_changed_since_is_never_overwritten_and_a_symlink_out_of_its_directory_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        let a = dir.path().join("gate.py");
        std::fs::write(&a, "v1\n").unwrap();
        let keep = dir.path().join("run/patch").display().to_string();
        let path = a.display().to_string();
        let applied = [Change { path: path.clone(), base: sha(b"v1\n"), text: b"v2\n".to_vec() }];
        assert!(matches!(answers(&sh(apply_script(&keep, &applied)), 1).0[0], Some(Said::Applied(_))));
        // Someone edits it while the patch is on.
        std::fs::write(&a, "hand-edited\n").unwrap();
        let written = [Written { path: path.clone(), base: sha(b"v1\n"), applied: sha(b"v2\n") }];
        let (said, _) = answers(&run(&revert_script(&keep, &written)), 1);
        assert_eq!(said[0], Some(Said::Changed(sha(b"hand-edited\n"))));
        assert_eq!(std::fs::read_to_string(&a).unwrap(), "hand-edited\n", "left as they made it");
        // An admin's restore puts the original back over it, verified.
        let (said, _) = answers(&run(&put_back_script(&keep, &written, true)), 1);
        assert_eq!(said[0], Some(Said::Reverted(sha(b"v1\n"))));
        assert_eq!(std::fs::read_to_string(&a).unwrap(), "v1\n");
        std::fs::write(&a, "hand-edited\n").unwrap();

        // A symlink whose target is elsewhere: refused, the target named.
        let outside = tempfile::tempdir().unwrap();
        let secret = outside.path().join("secret.py");
        std::fs::write(&secret, "s\n").unwrap();
        let link = dir.path().join("link.py");
        std::os::unix::fs::symlink(&secret, &link).unwrap();
        let (said, _) = answers(&run(&read_script(&[link.display().to_string()])), 1);
        assert!(matches!(&said[0], Some(Said::Escapes(t)) if t.ends_with("secret.py")), "{said:?}");
        let change = [Change { path: link.display().to_string(), base: sha(b"s\n"), text: b"x\n".to_vec() }];
        sh(apply_script(&keep, &change));
        assert_eq!(std::fs::read_to_string(&secret).unwrap(), "s\n");
        // A symlink within its directory is followed, and the link kept.
        let inside = dir.path().join("inside.py");
        std::os::unix::fs::symlink(&a, &inside).unwrap();
        let (said, _) = answers(&run(&read_script(&[inside.display().to_string()])), 1);
        assert_eq!(said[0], Some(Said::Hash(sha(b"hand-edited\n"))));
    }

    #[test]
    fn texts_larger_than_a_command_line_arrive_whole_each_in_its_file() {
        let dir = tempfile::tempdir().unwrap();
        let keep = dir.path().join("run/patch").display().to_string();
        let mut changes = Vec::new();
        for (name, fill) in [("a.py", "a"), ("b.py", "b")] {
            let path = dir.path().join(name);
            std::fs::write(&path, "old\n").unwrap();
            let text = format!("{}\n", fill.repeat(300 * 1024));
            changes.push(Change { path: path.display().to_string(), base: sha(b"old\n"), text: text.into_bytes() });
        }
        let (said, _) = answers(&sh(apply_script(&keep, &changes)), 2);
        for (c, said) in changes.iter().zip(&said) {
            assert_eq!(said, &Some(Said::Applied(sha(&c.text))));
            assert_eq!(std::fs::read(&c.path).unwrap(), c.text);
        }
    }

    /// `sh` with a `cp` that has no `--parents` (as BusyBox's) first in its PATH.
    fn sh_without_parents((script, input): (String, Vec<u8>), bin: &std::path::Path) -> String {
        let cp = bin.join("cp");
        std::fs::write(
            &cp,
            "#!/bin/sh\nfor a in \"$@\"; do [ \"$a\" = --parents ] && exit 1; done\nexec /bin/cp \"$@\"\n",
        )
        .unwrap();
        std::fs::set_permissions(&cp, std::fs::Permissions::from_mode(0o755)).unwrap();
        let path = format!("{}:{}", bin.display(), std::env::var("PATH").unwrap_or_default());
        sh((format!("PATH={}\n{script}", quote(&path)), input))
    }

    #[test]
    fn many_files_at_once_odd_names_no_parents_and_a_refusal_that_leaves_nothing() {
        let dir = tempfile::tempdir().unwrap();
        let sub = dir.path().join("pkg");
        std::fs::create_dir(&sub).unwrap();
        // sha256sum escapes these names; a line per file must still be read as one.
        let names = ["plain.py", "new\nline.py", "back\\slash.py"];
        let paths: Vec<String> = names.iter().map(|n| sub.join(n).display().to_string()).collect();
        let mtime = std::time::SystemTime::UNIX_EPOCH + std::time::Duration::from_secs(1_600_000_000);
        for (i, p) in paths.iter().enumerate() {
            std::fs::write(p, format!("v1 {i}\n")).unwrap();
            std::fs::File::options().write(true).open(p).unwrap().set_modified(mtime).unwrap();
        }
        let keep = dir.path().join("run/patch").display().to_string();
        let changes: Vec<Change> = paths
            .iter()
            .enumerate()
            .map(|(i, p)| Change {
                path: p.clone(),
                base: sha(format!("v1 {i}\n").as_bytes()),
                text: format!("v2 {i}\n").into_bytes(),
            })
            .collect();
        let leftovers = || {
            std::fs::read_dir(&sub)
                .unwrap()
                .filter(|e| e.as_ref().unwrap().file_name().to_string_lossy().starts_with(".sleuth-patch"))
                .count()
        };

        // One file gone: the others say their bases held, nothing is written, no copy is left beside them.
        std::fs::rename(&paths[2], sub.join("away")).unwrap();
        let (said, _) = answers(&sh(apply_script(&keep, &changes)), 3);
        assert_eq!(
            said,
            vec![
                Some(Said::Hash(changes[0].base.clone())),
                Some(Said::Hash(changes[1].base.clone())),
                Some(Said::Missing)
            ]
        );
        assert_eq!(std::fs::read_to_string(&paths[0]).unwrap(), "v1 0\n");
        assert_eq!(leftovers(), 0);
        std::fs::rename(sub.join("away"), &paths[2]).unwrap();

        // All there: applied, each with the hash of its new text; reverted, each verified, its mtime back.
        let (said, other) = answers(&sh(apply_script(&keep, &changes)), 3);
        for (c, said) in changes.iter().zip(&said) {
            assert_eq!(said, &Some(Said::Applied(sha(&c.text))), "{other:?}");
            assert_eq!(std::fs::read(&c.path).unwrap(), c.text);
        }
        let written: Vec<Written> = changes
            .iter()
            .map(|c| Written { path: c.path.clone(), base: c.base.clone(), applied: sha(&c.text) })
            .collect();
        let (said, other) = answers(&run(&revert_script(&keep, &written)), 3);
        for (w, said) in written.iter().zip(&said) {
            assert_eq!(said, &Some(Said::Reverted(w.base.clone())), "{other:?}");
            assert_eq!(std::fs::metadata(&w.path).unwrap().modified().unwrap(), mtime);
        }
        assert_eq!(leftovers(), 0);

        // The same where cp has no --parents: one cp each, the same answers.
        let bin = tempfile::tempdir().unwrap();
        let keep = dir.path().join("run2/patch").display().to_string();
        let (said, _) = answers(&sh_without_parents(apply_script(&keep, &changes), bin.path()), 3);
        assert!(said.iter().all(|s| matches!(s, Some(Said::Applied(_)))), "{said:?}");
        let (said, _) = answers(&sh_without_parents((revert_script(&keep, &written), Vec::new()), bin.path()), 3);
        assert!(said.iter().zip(&written).all(|(s, w)| s == &Some(Said::Reverted(w.base.clone()))), "{said:?}");
        assert_eq!(std::fs::read_to_string(&paths[1]).unwrap(), "v1 1\n");
    }

    #[test]
    fn an_original_kept_as_before_is_still_put_back() {
        // Patches applied before originals were kept by path kept them as N.orig.
        let dir = tempfile::tempdir().unwrap();
        let a = dir.path().join("gate.py");
        std::fs::write(&a, "v2\n").unwrap();
        let keep = dir.path().join("run/patch");
        std::fs::create_dir_all(&keep).unwrap();
        std::fs::write(keep.join("0.orig"), "v1\n").unwrap();
        let written = [Written { path: a.display().to_string(), base: sha(b"v1\n"), applied: sha(b"v2\n") }];
        let (said, _) = answers(&run(&revert_script(&keep.display().to_string(), &written)), 1);
        assert_eq!(said[0], Some(Said::Reverted(sha(b"v1\n"))));
        assert_eq!(std::fs::read_to_string(&a).unwrap(), "v1\n");
    }

    #[test]
    fn relative_paths_are_found_where_python_imports_from_then_home() {
        let (site, home) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
        for (root, file) in
            [(site.path(), "vllm/dist/gate.py"), (home.path(), "vllm/dist/gate.py"), (home.path(), "sglang/srt/ar.py")]
        {
            let path = root.join(file);
            std::fs::create_dir_all(path.parent().unwrap()).unwrap();
            std::fs::write(&path, "x\n").unwrap();
        }
        let paths = ["vllm/dist/gate.py", "python/sglang/srt/ar.py", "./nowhere/x.py", "gate.py"].map(String::from);
        let script = format!(
            "export PYTHONPATH={} HOME={}\n{}",
            quote(&site.path().display().to_string()),
            quote(&home.path().display().to_string()),
            resolve_script(&paths)
        );
        let out = run(&script);
        let found = |n: usize, path: &std::path::Path| format!("found\t{n}\t{}", path.display());
        // On the import path before home; a repository's leading directory let go; a bare name is not searched for.
        assert!(out.contains(&found(0, &site.path().join("vllm/dist/gate.py"))), "{out}");
        assert!(out.contains(&found(1, &home.path().join("sglang/srt/ar.py"))), "{out}");
        assert!(out.contains("none\t2") && out.contains("none\t3"), "{out}");
    }

    #[test]
    fn names_with_quotes_and_spaces_stay_one_word() {
        let dir = tempfile::tempdir().unwrap();
        let odd = dir.path().join("it's a $(file).py");
        std::fs::write(&odd, "a\n").unwrap();
        let (said, other) = answers(&run(&read_script(&[odd.display().to_string()])), 1);
        assert_eq!(said[0], Some(Said::Hash(sha(b"a\n"))), "{other:?}");
    }
}
