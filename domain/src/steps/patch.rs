//! Patch steps (#52): a unified diff against files on a host, each file with
//! the sha256 of the text it was made from (its base). A patch is made once
//! and checked against its host whenever asked: it applies, or a file's base
//! differs, or a file is gone.

use serde::{Deserialize, Serialize};

/// The most a patch's diff may hold.
pub const MAX_DIFF_BYTES: usize = 1 << 20;

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(schemars::JsonSchema))]
#[serde(deny_unknown_fields)]
pub struct PatchBody {
    pub host: String,
    /// The diff as `diff -u` or `git diff` prints it, of files named by
    /// absolute paths on the host (`--- /opt/vllm/…/custom_all_reduce.py`).
    pub diff: String,
    /// The files the diff changes, in its order, each with its base. Filled
    /// in when saved: bases not given are read from the host then.
    #[serde(default)]
    pub files: Vec<PatchFile>,
    /// Caches removed on the host before the patched run and after it is put
    /// back, so neither arm runs what the other compiled
    /// (`~/.cache/vllm/torch_compile_cache`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub caches: Vec<String>,
    /// Lines that must (or must not) be in a patched run's output or server
    /// log: the proof the patch was loaded. A run that fails one is not
    /// counted by hypotheses.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub expect: Vec<Expectation>,
}

/// Text a patched run's output or server log must hold (`present`), or not.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(schemars::JsonSchema))]
#[serde(deny_unknown_fields)]
pub struct Expectation {
    pub text: String,
    #[serde(default = "yes")]
    pub present: bool,
}

fn yes() -> bool {
    true
}

/// An expectation, read after the run.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(schemars::JsonSchema))]
pub struct ExpectationMet {
    pub text: String,
    pub present: bool,
    pub met: bool,
    /// Where it was found: `output` or `server log`.
    pub found_in: Option<String>,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(schemars::JsonSchema))]
#[serde(deny_unknown_fields)]
pub struct PatchFile {
    pub path: String,
    /// The sha256 (hex) of the file the diff was made from.
    #[serde(default)]
    pub base: Option<String>,
    /// Lines the diff adds and removes in it.
    #[serde(default)]
    pub added: u32,
    #[serde(default)]
    pub removed: u32,
}

impl PatchBody {
    /// Saving it reads its host: some file's base is not given.
    pub fn reads_host(&self) -> bool {
        self.files.is_empty() || self.files.iter().any(|f| f.base.is_none() || !f.path.starts_with('/'))
    }

    /// Lines added and removed over all its files.
    pub fn counts(&self) -> (u32, u32) {
        self.files.iter().fold((0, 0), |(a, r), f| (a + f.added, r + f.removed))
    }
}

/// Where one of a patch's files stands on its host now (a dry run).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(schemars::JsonSchema))]
#[serde(rename_all = "snake_case")]
pub enum FileState {
    /// Its sha256 is the patch's base: the patch applies.
    Applies,
    /// It changed since the patch was made.
    BaseDiffers,
    Missing,
    /// A symlink to somewhere outside its directory: never written.
    Escapes,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(schemars::JsonSchema))]
pub struct FileCheck {
    pub path: String,
    pub state: FileState,
    pub base: String,
    /// The sha256 found on the host (none where the file is missing or escapes).
    pub found: Option<String>,
    /// The state as a person reads it.
    pub text: String,
}

/// A dry run of a patch on its host.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(schemars::JsonSchema))]
pub struct PatchCheck {
    /// Every file applies.
    pub applies: bool,
    pub files: Vec<FileCheck>,
    pub checked_at: String,
}

impl FileCheck {
    pub fn new(path: &str, base: &str, state: FileState, found: Option<String>) -> Self {
        let text = match state {
            FileState::Applies => "applies".to_string(),
            FileState::BaseDiffers => format!(
                "base differs: file changed since the patch was made (expected {}…, found {}…)",
                &base[..base.len().min(12)],
                found.as_deref().map_or("", |f| &f[..f.len().min(12)])
            ),
            FileState::Missing => "file missing".to_string(),
            FileState::Escapes => "refused: a symlink that leaves its directory".to_string(),
        };
        Self { path: path.to_string(), state, base: base.to_string(), found, text }
    }
}

/// Where a run's patch stands on its host.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(schemars::JsonSchema))]
#[serde(rename_all = "snake_case")]
pub enum ArmState {
    /// Being written (a restart finds it so: put back).
    Applying,
    /// Written; the run goes on with it.
    Applied,
    /// Put back after the run, every file's base verified.
    Reverted,
    /// Not applied: a base differed, a file was missing (nothing written).
    Refused,
    /// Put back, but not verified: the host refuses runs until an admin restores or accepts it.
    Dirty,
    /// Was dirty; an admin accepted the host as it is.
    Accepted,
}

impl ArmState {
    pub const ALL: [ArmState; 6] =
        [Self::Applying, Self::Applied, Self::Reverted, Self::Refused, Self::Dirty, Self::Accepted];

    pub fn as_str(self) -> &'static str {
        match self {
            Self::Applying => "applying",
            Self::Applied => "applied",
            Self::Reverted => "reverted",
            Self::Refused => "refused",
            Self::Dirty => "dirty",
            Self::Accepted => "accepted",
        }
    }
}

closed_set_words!(ArmState, UnknownArmState);

/// A stored state that is none of [`ArmState`].
#[derive(Debug, thiserror::Error)]
#[error("{0:?} is not a state of a run's patch")]
pub struct UnknownArmState(pub String);

/// One file of a run's patch: its proof.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(schemars::JsonSchema))]
pub struct ArmFile {
    pub path: String,
    /// The sha256 before the patch (its base).
    pub base: String,
    /// The sha256 of what the patch wrote.
    #[serde(default)]
    pub applied: Option<String>,
    /// The sha256 found when the run ended, before it was put back; one that
    /// is not `applied` means the file changed during the run.
    #[serde(default)]
    pub at_end: Option<String>,
    /// The sha256 after it was put back.
    #[serde(default)]
    pub reverted: Option<String>,
}

/// The patch a run ran with: which, where it stands, and each file's hashes.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(schemars::JsonSchema))]
pub struct RunPatch {
    /// The patch step.
    pub step: i64,
    pub state: ArmState,
    pub files: Vec<ArmFile>,
    /// What happened, as a person reads it ("patch 12 loaded, hashes held, put back").
    pub text: String,
    /// Caches removed before the run (and after it was put back).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub caches_cleared: Vec<String>,
    /// The patch's expectations, read after the run.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub expectations: Vec<ExpectationMet>,
}

impl RunPatch {
    /// Whether hypotheses count the run: its patch was applied and every
    /// expectation met; else why not.
    pub fn unfit(&self) -> Option<String> {
        if matches!(self.state, ArmState::Refused | ArmState::Applying) {
            return Some(format!("patch {} was not applied", self.step));
        }
        let failed: Vec<String> = self
            .expectations
            .iter()
            .filter(|e| !e.met)
            .map(|e| format!("{:?} {}", e.text, if e.present { "never appeared" } else { "appeared" }))
            .collect();
        (!failed.is_empty()).then(|| format!("patch {}'s expectation failed: {}", self.step, failed.join("; ")))
    }
}

/// A run's patch as its host's page lists it: one left dirty (or applied now).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(schemars::JsonSchema))]
pub struct PatchOnHost {
    pub run: i64,
    pub host: String,
    #[serde(flatten)]
    pub patch: RunPatch,
}
