//! Permits: values only [`super::Access`] makes (their constructors are private
//! to `policy`), each saying that one caller may do one kind of thing to one
//! investigation or host. Services take them as arguments, so a service cannot
//! be asked for something nobody checked; and they read who is asking, and
//! which investigation, from the permit rather than from a second argument that
//! could disagree with it.

use super::roles::{Need, Role};
use crate::db::ShareRow;
use domain::ports::Actor;
use std::marker::PhantomData;

mod sealed {
    pub trait Sealed {}
}

/// A right in an investigation: [`Read`], [`Edit`], [`Run`] or [`Own`].
pub trait Right: sealed::Sealed {
    const NEED: Need;
}

/// See it, its runs' output, charts.
#[derive(Debug)]
pub enum Read {}
/// Notes, steps, hypotheses, annotations, measurements, extractors.
#[derive(Debug)]
pub enum Edit {}
/// Run commands and read files on hosts (with [`RunOn`] for the host).
#[derive(Debug)]
pub enum Run {}
/// Share, and delete the investigation.
#[derive(Debug)]
pub enum Own {}

impl sealed::Sealed for Read {}
impl sealed::Sealed for Edit {}
impl sealed::Sealed for Run {}
impl sealed::Sealed for Own {}
impl Right for Read {
    const NEED: Need = Need::Read;
}
impl Right for Edit {
    const NEED: Need = Need::Edit;
}
impl Right for Run {
    const NEED: Need = Need::Run;
}
impl Right for Own {
    const NEED: Need = Need::Own;
}

/// `actor` may do what `R` allows in `investigation`.
#[derive(Debug)]
pub struct Permit<R: Right> {
    actor: Actor,
    investigation: String,
    role: Role,
    _right: PhantomData<fn() -> R>,
}

impl<R: Right> Permit<R> {
    pub(super) fn new(actor: Actor, investigation: String, role: Role) -> Self {
        debug_assert!(role >= R::NEED.role());
        Self { actor, investigation, role, _right: PhantomData }
    }

    pub fn actor(&self) -> &Actor {
        &self.actor
    }

    /// What the reader may do here, and whether they are a signed-in user.
    pub fn abilities(&self) -> domain::model::Abilities {
        domain::model::Abilities { named: !self.actor.local, ..domain::model::Abilities::of(self.role) }
    }

    pub fn investigation(&self) -> &str {
        &self.investigation
    }

    /// The caller's role there (`Owner` for admins).
    pub fn role(&self) -> Role {
        self.role
    }

    /// Every right includes reading.
    pub fn read(&self) -> Permit<Read> {
        self.narrowed()
    }

    fn narrowed<S: Right>(&self) -> Permit<S> {
        Permit::new(self.actor.clone(), self.investigation.clone(), self.role)
    }
}

impl Permit<Run> {
    /// Runners edit too.
    pub fn edit(&self) -> Permit<Edit> {
        self.narrowed()
    }
}

impl Permit<Own> {
    pub fn edit(&self) -> Permit<Edit> {
        self.narrowed()
    }
}

/// Running on one host from one investigation: the runner role there, and the
/// host's allow-list.
#[derive(Debug)]
pub struct RunOn {
    permit: Permit<Run>,
    host: String,
}

impl RunOn {
    pub(super) fn new(permit: Permit<Run>, host: String) -> Self {
        Self { permit, host }
    }

    pub fn permit(&self) -> &Permit<Run> {
        &self.permit
    }

    pub fn actor(&self) -> &Actor {
        self.permit.actor()
    }

    pub fn investigation(&self) -> &str {
        self.permit.investigation()
    }

    /// The host it allows.
    pub fn host(&self) -> &str {
        &self.host
    }
}

/// Saving a step body: [`ForBody::Edit`] for what stays in Sleuth,
/// [`ForBody::Fetch`] for a snippet or grep, which read their host when saved.
#[derive(Debug)]
pub enum ForBody {
    Edit(Permit<Edit>),
    Fetch(RunOn),
}

impl ForBody {
    pub fn edit(&self) -> Permit<Edit> {
        match self {
            Self::Edit(permit) => permit.narrowed(),
            Self::Fetch(run_on) => run_on.permit().edit(),
        }
    }

    pub fn actor(&self) -> &Actor {
        match self {
            Self::Edit(permit) => permit.actor(),
            Self::Fetch(run_on) => run_on.actor(),
        }
    }

    pub fn investigation(&self) -> &str {
        match self {
            Self::Edit(permit) => permit.investigation(),
            Self::Fetch(run_on) => run_on.investigation(),
        }
    }

    /// The permit to read from `host`, if this is one.
    pub fn fetch_on(&self, host: &str) -> Option<&RunOn> {
        match self {
            Self::Fetch(run_on) if run_on.host() == host => Some(run_on),
            _ => None,
        }
    }
}

/// An admin: users, hosts, keys, the audit log.
#[derive(Debug)]
pub struct Admin {
    actor: Actor,
}

impl Admin {
    pub(super) fn new(actor: Actor) -> Self {
        Self { actor }
    }

    pub fn actor(&self) -> &Actor {
        &self.actor
    }
}

/// Testing a host, capturing and reading its facts.
#[derive(Debug)]
pub struct HostUse {
    actor: Actor,
    host: String,
}

impl HostUse {
    pub(super) fn new(actor: Actor, host: String) -> Self {
        Self { actor, host }
    }

    pub fn actor(&self) -> &Actor {
        &self.actor
    }

    pub fn host(&self) -> &str {
        &self.host
    }
}

/// Replaying an investigation into a new one of the caller's own, whose
/// copies reach these hosts (each on the caller's list, or the caller an admin).
#[derive(Debug)]
pub struct Replaying {
    actor: Actor,
    hosts: Vec<String>,
}

impl Replaying {
    pub(super) fn new(actor: Actor, hosts: Vec<String>) -> Self {
        Self { actor, hosts }
    }

    pub fn actor(&self) -> &Actor {
        &self.actor
    }

    /// Whether the copies may reach `host`.
    pub fn reaches(&self, host: &str) -> bool {
        self.hosts.iter().any(|h| h == host)
    }
}

/// Reading one capture of host facts.
#[derive(Debug)]
pub struct FactsPermit {
    id: i64,
}

impl FactsPermit {
    pub(super) fn new(id: i64) -> Self {
        Self { id }
    }

    pub fn id(&self) -> i64 {
        self.id
    }
}

/// Any signed-in caller: what needs no role (creating an investigation, the
/// host list, one's own tokens and mentions).
#[derive(Debug)]
pub struct Anyone {
    actor: Actor,
}

impl Anyone {
    pub(super) fn new(actor: Actor) -> Self {
        Self { actor }
    }

    pub fn actor(&self) -> &Actor {
        &self.actor
    }
}

/// The investigations a caller may read.
#[derive(Debug)]
pub struct Readers {
    actor: Actor,
    /// `None`: every investigation (admins).
    only: Option<Vec<String>>,
}

impl Readers {
    pub(super) fn new(actor: Actor, only: Option<Vec<String>>) -> Self {
        Self { actor, only }
    }

    pub fn actor(&self) -> &Actor {
        &self.actor
    }

    pub fn may_read(&self, investigation: &str) -> bool {
        self.only.as_ref().is_none_or(|ids| ids.iter().any(|id| id == investigation))
    }

    /// The member whose investigations these are; `None` for an admin (all of them).
    pub fn member(&self) -> Option<&str> {
        self.only.as_ref().map(|_| self.actor.name.as_str())
    }
}

/// A share link that works: its token is the right to read what it shows.
#[derive(Debug)]
pub struct Shared {
    link: ShareRow,
}

impl Shared {
    pub(super) fn new(link: ShareRow) -> Self {
        Self { link }
    }

    pub fn link(&self) -> &ShareRow {
        &self.link
    }

    pub fn investigation(&self) -> &str {
        &self.link.investigation_id
    }

    pub fn hide_hosts(&self) -> bool {
        self.link.hide_hosts != 0
    }

    /// Reading the investigation the link shows, as a viewer no one can name.
    pub fn read(&self) -> Permit<Read> {
        let reader = Actor { name: format!("share link {}", self.link.id), admin: false, local: false };
        Permit::new(reader, self.link.investigation_id.clone(), Role::Viewer)
    }
}
