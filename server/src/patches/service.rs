//! Patch steps' calls to their host: the bases a new patch lacks read when
//! it is saved, and a dry run of a saved one (does it apply right now?).

use super::host::{self, Said};
use crate::db::{NewAudit, Store};
use crate::error::Result;
use crate::hosts::Hosts;
use crate::policy::{Admin, ForBody, HostUse, RunOn};
use domain::error::ApiError;
use domain::steps::StepBody;
use domain::steps::patch::{ArmState, FileCheck, FileState, PatchBody, PatchCheck, PatchOnHost};

#[derive(Clone)]
pub struct Patches {
    store: Store,
    hosts: Hosts,
}

impl Patches {
    pub fn new(store: Store, hosts: Hosts) -> Self {
        Self { store, hosts }
    }

    /// A patch whose files' bases were not all given gets them from its host,
    /// where every file must be (and be no symlink out of its directory);
    /// other bodies pass as they are.
    pub async fn with_bases(&self, permit: &ForBody, body: StepBody) -> Result<StepBody> {
        let StepBody::Patch(mut patch) = body else { return Ok(body) };
        if !patch.reads_host() {
            return Ok(StepBody::Patch(patch));
        }
        let Some(run_on) = permit.fetch_on(&patch.host) else {
            return Err(crate::error::Error::bug(format!("reading {}'s files without a permit to", patch.host)));
        };
        if patch.files.iter().any(|f| !f.path.starts_with('/')) {
            patch = self.resolved(run_on, patch).await?;
        }
        let said = self.read(run_on, &patch, "patch.read").await?;
        for (file, said) in patch.files.iter_mut().zip(said) {
            match said {
                Said::Hash(hash) => file.base = file.base.take().or(Some(hash)),
                Said::Missing => {
                    return Err(ApiError::invalid(format!("There is no file {} on {}.", file.path, patch.host)).into());
                }
                Said::Escapes(to) => {
                    return Err(ApiError::invalid(format!(
                        "{} is a symlink to {to}, outside its directory: a patch does not follow it there.",
                        file.path
                    ))
                    .into());
                }
                other => return Err(unexpected(&file.path, &other).into()),
            }
        }
        Ok(StepBody::Patch(patch))
    }

    /// `patch` with its relative paths resolved on its host (where Python
    /// would import them from, [`host::resolve`]): its diff's headers name
    /// the absolute paths, and so do its files (a given base kept with its file).
    async fn resolved(&self, permit: &RunOn, mut patch: PatchBody) -> Result<PatchBody> {
        let relative: Vec<String> =
            patch.files.iter().filter(|f| !f.path.starts_with('/')).map(|f| f.path.clone()).collect();
        let target = self.hosts.target(&patch.host).await?;
        let found = host::resolve(self.hosts.pool(), &target, &relative).await;
        let entry = NewAudit {
            who: permit.actor().name.clone(),
            action: "patch.resolve",
            host: Some(patch.host.clone()),
            target: relative.join(" "),
            outcome: crate::audit::outcome(&found),
            ..Default::default()
        };
        crate::audit::record(&self.store, entry).await;
        let mut paths = std::collections::HashMap::new();
        for (path, found) in relative.iter().zip(found?) {
            let Some(found) = found else {
                return Err(ApiError::invalid(format!(
                    "{path} was found on {} neither under python3's import path nor the home directory: name it by its absolute path (`--- /opt/…/{path}`).",
                    patch.host
                ))
                .into());
            };
            paths.insert(path.clone(), found);
        }
        patch.diff = super::diff::with_paths(&patch.diff, &paths);
        for file in &mut patch.files {
            if let Some(found) = paths.get(&file.path) {
                file.path = found.clone();
            }
        }
        Ok(crate::steps::patch::validate(patch)?)
    }

    /// A dry run: each file's sha256 on the host now against its base.
    pub async fn check(&self, permit: &RunOn, patch: &PatchBody) -> Result<PatchCheck> {
        let said = self.read(permit, patch, "patch.check").await?;
        let mut files = Vec::new();
        for (file, said) in patch.files.iter().zip(said) {
            let base = file.base.as_deref().unwrap_or_default();
            let (state, found) = match said {
                Said::Hash(hash) if hash == base => (FileState::Applies, Some(hash)),
                Said::Hash(hash) => (FileState::BaseDiffers, Some(hash)),
                Said::Missing => (FileState::Missing, None),
                Said::Escapes(_) => (FileState::Escapes, None),
                other => return Err(unexpected(&file.path, &other).into()),
            };
            files.push(FileCheck::new(&file.path, base, state, found));
        }
        Ok(PatchCheck {
            applies: files.iter().all(|f| f.state == FileState::Applies),
            files,
            checked_at: crate::time::timestamp(crate::time::now_ms()),
        })
    }

    /// The patches runs left on the host: dirty ones (which refuse new runs)
    /// and any applied now.
    pub async fn on_host(&self, permit: &HostUse) -> Result<Vec<PatchOnHost>> {
        let states = [ArmState::Dirty, ArmState::Applying, ArmState::Applied];
        let rows = self.store.run_patches_in(&states, Some(permit.host())).await?;
        rows.iter()
            .map(|row| Ok(PatchOnHost { run: row.run_id, host: row.host.clone(), patch: super::arm::shown(row)? }))
            .collect()
    }

    /// An admin's answer to a dirty host: its originals put back over
    /// whatever is there (`restore`), or the host taken as it is.
    pub async fn settle(&self, admin: &Admin, host: &str, run: i64, restore: bool) -> Result<PatchOnHost> {
        let rows = self.store.run_patches_in(&[ArmState::Dirty], Some(host)).await?;
        let Some(row) = rows.into_iter().find(|r| r.run_id == run) else {
            return Err(ApiError::not_found(format!("{host} has no dirty patch of run {run}.")).into());
        };
        let by = &admin.actor().name;
        let patch = if restore {
            let target = self.hosts.target(host).await?;
            super::arm::restore(&self.store, self.hosts.pool(), &target, &row, by).await?
        } else {
            let text =
                format!("Accepted by {by} as it is; {}", row.said.as_deref().unwrap_or("its files were not verified"));
            self.store.set_run_patch(run, ArmState::Accepted, &row.files, &text).await?;
            super::arm::shown(&crate::db::RunPatchRow { state: ArmState::Accepted, said: Some(text), ..row })?
        };
        let entry = NewAudit {
            who: by.clone(),
            action: if restore { "patch.restore" } else { "patch.accept" },
            host: Some(host.to_string()),
            target: format!("run {run}: patch {}", patch.step),
            outcome: Some(format!("{}: {}", patch.state.as_str(), patch.text)),
            run_id: Some(run),
            ..Default::default()
        };
        crate::audit::record(&self.store, entry).await;
        Ok(PatchOnHost { run, host: host.to_string(), patch })
    }

    /// The files' hashes on the patch's host, the reading audited.
    async fn read(&self, permit: &RunOn, patch: &PatchBody, action: &'static str) -> Result<Vec<Said>> {
        let paths: Vec<String> = patch.files.iter().map(|f| f.path.clone()).collect();
        let read = async {
            let target = self.hosts.target(&patch.host).await?;
            host::read(self.hosts.pool(), &target, &paths).await
        };
        let result = read.await;
        let entry = NewAudit {
            who: permit.actor().name.clone(),
            action,
            host: Some(patch.host.clone()),
            target: paths.join(" "),
            outcome: crate::audit::outcome(&result),
            ..Default::default()
        };
        crate::audit::record(&self.store, entry).await;
        result
    }
}

/// A read answered with what only writing says: the host's script is not ours.
fn unexpected(path: &str, said: &Said) -> ApiError {
    ApiError::new(
        domain::error::ErrorCode::HostUnreachable,
        format!("The host said {said:?} of {path} when asked its hash."),
    )
}
