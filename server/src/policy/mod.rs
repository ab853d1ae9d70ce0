//! Who may do what, and the permits that say so.
//!
//! | need | role | what |
//! |---|---|---|
//! | read | viewer | see it, its runs' output, charts; comment |
//! | edit | editor | notes, steps, hypotheses, annotations, measurements, extractors |
//! | run  | runner | run commands, fetch snippets, grep, search source on hosts |
//! | own  | owner  | share (members), delete the investigation |
//!
//! Admins may do everything. Someone with no role sees a 404, as if the
//! investigation did not exist; a role too small is a 403 that names it.
//! Running on a host also needs the host's allow-list to include the caller.
//!
//! [`Access`] is the only maker of permits: a [`Permit`] for an investigation
//! and a right, [`RunOn`] for a host as well, [`Admin`], [`HostUse`],
//! [`Readers`], [`Anyone`] and [`Shared`] (a share link that works). Every
//! service method that needs a right takes the permit for it, so a route or
//! server function that forgot to ask does not compile. The policy layer
//! (`crate::guarded`) asks here, once per operation, and hands the permit on.

mod permit;
mod roles;

pub use permit::{
    Admin, Anyone, Edit, FactsPermit, ForBody, HostUse, Own, Permit, Read, Readers, Replaying, Right, Run, RunOn,
    Shared,
};
pub use roles::{Need, Role};

use crate::db::{OwnedBy, ShareRow, Store};
use crate::error::Result;
use domain::error::{ApiError, ErrorCode};
use domain::ports::Actor;
use domain::steps::StepBody;

/// What an id names when it names nothing (the 404's words).
fn missing(what: OwnedBy, id: i64) -> ApiError {
    let noun = match what {
        OwnedBy::Step => "step",
        OwnedBy::Run => "run",
        OwnedBy::Annotation => "annotation",
        OwnedBy::Hypothesis => "hypothesis",
        OwnedBy::Comment => "comment",
        OwnedBy::ShareLink => "share link",
        OwnedBy::Measurement => "measurement",
        OwnedBy::Sweep => "sweep",
    };
    ApiError::not_found(format!("There is no {noun} {id}."))
}

#[derive(Clone)]
pub struct Access {
    store: Store,
}

impl Access {
    pub fn new(store: Store) -> Self {
        Self { store }
    }

    /// The caller's role there (`Owner` for admins); `None` without one.
    pub async fn role(&self, actor: &Actor, investigation: &str) -> Result<Option<Role>> {
        if actor.admin {
            return Ok(Some(Role::Owner));
        }
        Ok(self.store.role_of(investigation, &actor.name).await?)
    }

    /// The caller's role, if it is enough for `need`; a 404 without one, a 403 naming it if too small.
    async fn checked_role(&self, actor: &Actor, investigation: &str, need: Need) -> Result<Role> {
        match self.role(actor, investigation).await? {
            Some(role) if role >= need.role() => Ok(role),
            Some(role) => Err(ApiError::new(
                ErrorCode::Forbidden,
                format!(
                    "{} this investigation needs the {} role; you are its {} (ask an owner).",
                    need.doing(),
                    need.role().as_str(),
                    role.as_str()
                ),
            )
            .into()),
            None => Err(ApiError::not_found(format!("There is no investigation {investigation:?}.")).into()),
        }
    }

    /// A permit for `R` in `investigation`.
    pub async fn permit<R: Right>(&self, actor: &Actor, investigation: &str) -> Result<Permit<R>> {
        let role = self.checked_role(actor, investigation, R::NEED).await?;
        Ok(Permit::new(actor.clone(), investigation.to_string(), role))
    }

    /// A permit for `R` in the investigation the `what` with this id belongs
    /// to; a 404 that names it if there is none.
    pub async fn permit_for<R: Right>(&self, actor: &Actor, what: OwnedBy, id: i64) -> Result<Permit<R>> {
        let investigation = self.store.investigation_of(what, id).await?.ok_or_else(|| missing(what, id))?;
        // Someone with no role there is told of the run (or step…) alone, as
        // if it did not exist: never which investigation holds it.
        match self.role(actor, &investigation).await? {
            None => Err(missing(what, id).into()),
            Some(_) => self.permit(actor, &investigation).await,
        }
    }

    /// The investigation the `what` with this id belongs to, if any (for
    /// checks that depend on more than a role).
    pub async fn investigation_of(&self, what: OwnedBy, id: i64) -> Result<String> {
        Ok(self.store.investigation_of(what, id).await?.ok_or_else(|| missing(what, id))?)
    }

    /// Running on `host` from the investigation: the runner role, and the host's allow-list.
    pub async fn run_on(&self, actor: &Actor, investigation: &str, host: &str) -> Result<RunOn> {
        let permit = self.permit::<Run>(actor, investigation).await?;
        self.check_host(actor, host).await?;
        Ok(RunOn::new(permit, host.to_string()))
    }

    /// Running what a step runs or reads (a command, a snippet) on its host.
    pub async fn run_on_step(&self, actor: &Actor, step: i64) -> Result<RunOn> {
        let row = self.store.step(step).await?.ok_or_else(|| missing(OwnedBy::Step, step))?;
        if self.role(actor, &row.investigation_id).await?.is_none() {
            return Err(missing(OwnedBy::Step, step).into());
        }
        // Every kind that reaches a host names it in its `host` field.
        let body: serde_json::Value = crate::error::stored(&row.body, || format!("step {step}'s body"))?;
        let host = body.get("host").and_then(serde_json::Value::as_str).unwrap_or_default();
        self.run_on(actor, &row.investigation_id, host).await
    }

    /// Running on the host a run ran on (finding the files its output names).
    pub async fn run_on_run(&self, actor: &Actor, run: i64) -> Result<RunOn> {
        let row = self.store.run(run).await?.ok_or_else(|| missing(OwnedBy::Run, run))?;
        let investigation = self.investigation_of(OwnedBy::Run, run).await?;
        if self.role(actor, &investigation).await?.is_none() {
            return Err(missing(OwnedBy::Run, run).into());
        }
        self.run_on(actor, &investigation, &row.host).await
    }

    /// Saving a step body: editing; and for a snippet, a grep or a patch
    /// without its bases, which read their host when saved, running on that host.
    pub async fn for_body(&self, actor: &Actor, investigation: &str, body: &StepBody) -> Result<ForBody> {
        Ok(match body {
            StepBody::Snippet(s) => ForBody::Fetch(self.run_on(actor, investigation, &s.host).await?),
            StepBody::Grep(g) => ForBody::Fetch(self.run_on(actor, investigation, &g.host).await?),
            StepBody::Patch(p) if p.reads_host() => ForBody::Fetch(self.run_on(actor, investigation, &p.host).await?),
            _ => ForBody::Edit(self.permit(actor, investigation).await?),
        })
    }

    /// Deleting a step: editing; and if a run of it is queued or running,
    /// cancelling that run, which needs the runner role.
    pub async fn step_deletion(&self, actor: &Actor, step: i64) -> Result<Permit<Edit>> {
        let permit = self.permit_for::<Edit>(actor, OwnedBy::Step, step).await?;
        let runs = self.store.runs_of_step(step).await?;
        let active = runs.iter().any(|r| !r.status.is_finished());
        if active && permit.role() < Role::Runner {
            return Err(ApiError::new(
                ErrorCode::Forbidden,
                "This step has a run in progress; deleting it would cancel the run, which needs the runner role. \
                 Wait for the run to end, or ask a runner.",
            )
            .into());
        }
        Ok(permit)
    }

    /// Running on `host` needs its allow-list to include the caller (or be the whole team).
    async fn check_host(&self, actor: &Actor, host: &str) -> Result<()> {
        if actor.admin {
            return Ok(());
        }
        match self.store.host_allows(host, &actor.name).await? {
            Some(false) => Err(ApiError::new(
                ErrorCode::Forbidden,
                format!("You may not run on {host:?}: it is for the users on its list (ask an admin)."),
            )
            .into()),
            _ => Ok(()),
        }
    }

    /// Remote actions on a host outside any investigation (testing the
    /// connection, capturing facts) and reading what they found: admins, or
    /// someone who may run somewhere (the runner or owner role in some
    /// investigation) and is on the host's allow-list.
    pub async fn host_use(&self, actor: &Actor, host: &str) -> Result<HostUse> {
        if !actor.admin {
            let runs_somewhere =
                self.store.has_role_anywhere(&actor.name, &[Role::Runner.as_str(), Role::Owner.as_str()]).await?;
            if !runs_somewhere {
                return Err(ApiError::new(
                    ErrorCode::Forbidden,
                    format!(
                        "Testing {host:?} or reading its facts needs the runner role in some investigation \
                         (you have none; ask an owner or an admin)."
                    ),
                )
                .into());
            }
            self.check_host(actor, host).await?;
        }
        Ok(HostUse::new(actor.clone(), host.to_string()))
    }

    /// Replaying into a new investigation of the caller's (so they own it and
    /// may run there): every host its copies reach must exist and be on the
    /// caller's list. Checked before anything is copied.
    pub async fn replaying(&self, actor: &Actor, hosts: &[String]) -> Result<Replaying> {
        for host in hosts {
            if self.store.host(host).await?.is_none() {
                return Err(ApiError::not_found(format!(
                    "There is no host {host:?} here: add it on the Hosts page, or replay on another (`host`)."
                ))
                .into());
            }
            self.check_host(actor, host).await?;
        }
        Ok(Replaying::new(actor.clone(), hosts.to_vec()))
    }

    /// Reading one capture of host facts: those who may use the host, and
    /// readers of an investigation with a run that points at these facts (its
    /// provenance shows them). Anyone else is told there are none.
    pub async fn facts(&self, actor: &Actor, id: i64) -> Result<FactsPermit> {
        let hidden = || ApiError::not_found(format!("There are no host facts {id} that you may read."));
        let row = self.store.facts(id).await?.ok_or_else(hidden)?;
        let mut allowed = self.host_use(actor, &row.host_name).await.is_ok();
        if !allowed {
            for investigation in self.store.investigations_with_facts(id).await? {
                if self.checked_role(actor, &investigation, Need::Read).await.is_ok() {
                    allowed = true;
                    break;
                }
            }
        }
        if !allowed {
            return Err(hidden().into());
        }
        Ok(FactsPermit::new(id))
    }

    /// Admins manage users and hosts, and read the audit log (403 for anyone else).
    pub fn admin(&self, actor: &Actor, what: &str) -> Result<Admin> {
        if actor.admin {
            Ok(Admin::new(actor.clone()))
        } else {
            Err(ApiError::new(ErrorCode::Forbidden, format!("Only admins may {what}.")).into())
        }
    }

    /// What any signed-in caller may do (create an investigation, read the
    /// host list, their own tokens and mentions).
    pub fn anyone(&self, actor: &Actor) -> Anyone {
        Anyone::new(actor.clone())
    }

    /// The investigations the caller may read (all of them, for admins).
    pub async fn readers(&self, actor: &Actor) -> Result<Readers> {
        let only = if actor.admin { None } else { Some(self.store.investigations_of(&actor.name).await?) };
        Ok(Readers::new(actor.clone(), only))
    }

    /// Reading a run's whole output, server log, telemetry or files through a
    /// share link: the run must be in the link's investigation (else 404, as
    /// for any id the link does not show), and the link must not hide hosts —
    /// whole files are not vetted for host names, only the page's excerpts are.
    pub async fn shared_run(&self, token: &str, run: i64) -> Result<Permit<Read>> {
        let shared = self.shared(token).await?;
        let investigation = self.store.investigation_of(OwnedBy::Run, run).await?;
        if investigation.as_deref() != Some(shared.investigation()) {
            return Err(missing(OwnedBy::Run, run).into());
        }
        if shared.hide_hosts() {
            return Err(ApiError::new(
                ErrorCode::Forbidden,
                "This link hides host names and addresses, so it offers no whole output or files (they may name \
                 hosts); its page shows each run's last lines with hosts hidden.",
            )
            .into());
        }
        Ok(shared.read())
    }

    /// A share link's token, if the link works: 404 for one that never did (or
    /// whose investigation is gone), 410 for a revoked or expired one.
    pub async fn shared(&self, token: &str) -> Result<Shared> {
        let unknown = || {
            ApiError::not_found("This share link does not exist: it may be mistyped, or its investigation was deleted.")
        };
        let row: ShareRow = self.store.share_by_hash(&crate::ids::hash_secret(token)).await?.ok_or_else(unknown)?;
        let now = crate::time::now_ms();
        if let Some(at) = row.revoked_at {
            return Err(ApiError::new(
                ErrorCode::Gone,
                format!("This share link was revoked on {}. Ask whoever sent it for a new one.", crate::time::day(at)),
            )
            .into());
        }
        if let Some(at) = row.expires_at.filter(|at| *at <= now) {
            return Err(ApiError::new(
                ErrorCode::Gone,
                format!("This share link expired on {}. Ask whoever sent it for a new one.", crate::time::day(at)),
            )
            .into());
        }
        Ok(Shared::new(row))
    }

    /// Whether the caller may still read `investigation` (event streams end when not).
    pub async fn may_read(&self, actor: &Actor, investigation: &str) -> bool {
        self.checked_role(actor, investigation, Need::Read).await.is_ok()
    }
}
