//! The ports the UI's server functions call through: one trait per domain,
//! which the server implements (its policy layer) and provides as context, so
//! neither the pages nor these types link the store, SSH or anything else
//! server-only. Who is asking ([`Actor`]) is an explicit argument of each call.
//! They exist because the pages must compile without the server: each holds
//! what a page calls, and nothing else.

use crate::accounts::{ApiToken, Member, MemberChange, NewApiToken, NewUser, SignInLink, TeamUser, User};
use crate::comments::{Comment, Mention, MentionIn, NewComment};
use crate::error::ApiError;
use crate::hosts::{ConnectionReport, Host, HostFacts, HostImport, HostPatch, ImportReport, NewHost};
use crate::hypotheses::{Hypothesis, HypothesisInput};
use crate::metrics::{ExtractorDef, NewMeasurement, StoredMeasurement};
use crate::model::{
    Investigation, InvestigationPatch, InvestigationSummary, NewInvestigation, SharedView, Step, StepWindow,
};
use crate::runs::{OutputTail, Run, RunRequest};
use crate::search::{SearchRequest, SearchResults};
use crate::shares::{CreatedShareLink, NewShareLink, ShareLink};
use crate::steps::StepBody;
use crate::steps::patch::{PatchCheck, PatchOnHost};
use crate::steps::snippet::{Annotation, AnnotationPatch, NewAnnotation, SourceCandidates};

/// Who an operation is for. The server's sign-in check makes one per request
/// and keeps it with the request; JSON handlers take it as an extractor and
/// server functions with [`actor`], and every [`Notebook`] call receives it.
/// Nothing below the call looks it up again.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Actor {
    pub name: String,
    pub admin: bool,
    /// The one user of `--no-auth` (no accounts), where a typed author name is kept.
    pub local: bool,
}

impl Actor {
    /// Who `--no-auth` makes every request (and tools on the server's own machine).
    pub fn local() -> Self {
        Self { name: "local".into(), admin: true, local: true }
    }

    pub fn user(&self) -> User {
        User { name: self.name.clone(), admin: self.admin }
    }
}

/// Declares a port from its methods' list (`investigation_ops!` and the rest).
macro_rules! declare_port {
    ($(#[$doc:meta])* $port:ident {
        $(sync fn $sync:ident(&self) -> $sync_ret:ty;)*
        $($(#[$fn_doc:meta])* fn $name:ident(&self $(, $arg:ident: $ty:ty)*) -> $ret:ty;)*
    }) => {
        $(#[$doc])*
        #[async_trait::async_trait]
        pub trait $port: Send + Sync + 'static {
            $(fn $sync(&self) -> $sync_ret;)*
            $($(#[$fn_doc])* async fn $name(&self $(, $arg: $ty)*) -> $ret;)*
        }
    };
}

/// The notebook, as one object the server provides: every operation a page
/// calls, in one trait per domain. The server answers each in its policy
/// layer (`server/src/guarded/`), which checks the actor's rights and calls
/// the service. Pages hold an `Arc<dyn Notebook>`, whose methods are all of
/// them. What only the JSON API does is no port: its handlers call the
/// policy layer directly.
pub trait Notebook:
    InvestigationOps + StepOps + HostOps + RunOps + SourceOps + MeasurementOps + HypothesisOps + TeamOps + FindOps
{
}

impl<T> Notebook for T where
    T: InvestigationOps + StepOps + HostOps + RunOps + SourceOps + MeasurementOps + HypothesisOps + TeamOps + FindOps
{
}

/// `investigation_ops!(then)`: calls `then!` with the [`InvestigationOps`] port's methods, written
/// once here: the trait below and the server's forwarding (`guarded/ports.rs`) both
/// come from it.
#[macro_export]
macro_rules! investigation_ops {
    ($($then:tt)+) => { $($then)+! {
        /// Investigations: list, create, read, rename or close, delete.
        InvestigationOps {
            fn list_investigations(&self, actor: &Actor) -> Result<Vec<InvestigationSummary>, ApiError>;
            /// What the caller may do in the investigation (404 when they may not read it).
            fn abilities(&self, actor: &Actor, id: &str) -> Result<$crate::model::Abilities, ApiError>;
            fn create_investigation(&self, actor: &Actor, new: NewInvestigation) -> Result<Investigation, ApiError>;
            /// A replay beside its original (`/replays/{id}`).
            fn replay(&self, actor: &Actor, id: i64) -> Result<$crate::replays::Replay, ApiError>;
            /// "Replay on…": the investigation replayed into a new one of the caller's.
            fn replay_investigation(&self, actor: &Actor, id: &str, request: $crate::replays::ReplayRequest) -> Result<$crate::replays::Replay, ApiError>;
            /// "Watch…": a step run on a schedule; `through`: the address the page was asked at.
            fn watch_step(&self, actor: &Actor, step: i64, request: $crate::watches::WatchRequest, through: Option<String>) -> Result<$crate::watches::Watch, ApiError>;
            /// "Stop": a watch stopped and gone.
            fn delete_watch(&self, actor: &Actor, id: i64) -> Result<(), ApiError>;
            /// `window`: only the steps a page shows in full, the rest as an outline;
            /// `None`: everything (the API).
            fn investigation(&self, actor: &Actor, id: &str, window: Option<&StepWindow>) -> Result<Investigation, ApiError>;
            fn update_investigation(&self, actor: &Actor, id: &str, patch: InvestigationPatch) -> Result<Investigation, ApiError>;
            fn delete_investigation(&self, actor: &Actor, id: &str) -> Result<(), ApiError>;
        }
    } };
}
investigation_ops!(declare_port);

/// `step_ops!(then)`: calls `then!` with the [`StepOps`] port's methods, written
/// once here: the trait below and the server's forwarding (`guarded/ports.rs`) both
/// come from it.
#[macro_export]
macro_rules! step_ops {
    ($($then:tt)+) => { $($then)+! {
        /// The steps of an investigation's timeline.
        StepOps {
            fn add_step(&self, actor: &Actor, investigation: &str, body: StepBody) -> Result<Step, ApiError>;
            fn step(&self, actor: &Actor, id: i64) -> Result<Step, ApiError>;
            /// Replaces the step's body; its kind cannot change. With `version`, refused
            /// (409, saying who changed it when, with their text) unless it is still that one.
            fn update_step(&self, actor: &Actor, id: i64, body: StepBody, version: Option<i64>) -> Result<Step, ApiError>;
            /// Moves the step to `position` (1-based, clamped to the timeline).
            fn move_step(&self, actor: &Actor, id: i64, position: u32) -> Result<Step, ApiError>;
            /// A copy of the step (its body, no runs) right after it.
            fn duplicate_step(&self, actor: &Actor, id: i64) -> Result<Step, ApiError>;
            /// "Edit these lines": a snippet's shown lines, edited, saved as a patch step after it.
            fn patch_snippet(&self, actor: &Actor, id: i64, text: &str) -> Result<Step, ApiError>;
            fn delete_step(&self, actor: &Actor, id: i64) -> Result<(), ApiError>;
        }
    } };
}
step_ops!(declare_port);

/// `host_ops!(then)`: calls `then!` with the [`HostOps`] port's methods, written
/// once here: the trait below and the server's forwarding (`guarded/ports.rs`) both
/// come from it.
#[macro_export]
macro_rules! host_ops {
    ($($then:tt)+) => { $($then)+! {
        /// GPU hosts: the list, keys, connection tests, facts, who may run on them.
        HostOps {
            fn hosts(&self, actor: &Actor) -> Result<Vec<Host>, ApiError>;
            fn add_host(&self, actor: &Actor, host: NewHost) -> Result<Host, ApiError>;
            /// Replaces the host called `name` (which may be renamed by `host.name`).
            fn update_host(&self, actor: &Actor, name: &str, host: NewHost) -> Result<Host, ApiError>;
            fn remove_host(&self, actor: &Actor, name: &str) -> Result<(), ApiError>;
            /// Changes what `patch` gives (admins); a new price reprices the host's runs.
            fn patch_host(&self, actor: &Actor, name: &str, patch: HostPatch) -> Result<Host, ApiError>;
            /// Trusts the key the host offered, if `fingerprint` is its SHA256 fingerprint.
            fn trust_host(&self, actor: &Actor, name: &str, fingerprint: &str) -> Result<Host, ApiError>;
            /// Keeps the passphrase of the host's key file in memory (never stored).
            fn set_passphrase(&self, actor: &Actor, name: &str, passphrase: String) -> Result<(), ApiError>;
            fn test_host(&self, actor: &Actor, name: &str) -> Result<ConnectionReport, ApiError>;
            /// Adds the hosts an ssh_config defines (existing names are left alone).
            fn import_hosts(&self, actor: &Actor, source: HostImport) -> Result<ImportReport, ApiError>;
            /// Captures GPUs, links, CPU and package versions (of `python`, default python3) now.
            fn capture_facts(&self, actor: &Actor, host: &str, python: Option<String>) -> Result<HostFacts, ApiError>;
            /// The newest captured facts, if any.
            fn facts(&self, actor: &Actor, host: &str) -> Result<Option<HostFacts>, ApiError>;
            /// Whether writes are refused (anyone), and the server's disk, store and
            /// connections (admins).
            fn server_status(&self, actor: &Actor) -> Result<$crate::hosts::ServerStatus, ApiError>;
            /// A dirty patch made good (admins): its originals put back (`restore`), or accepted as it is.
            fn settle_host_patch(&self, actor: &Actor, host: &str, run: i64, restore: bool) -> Result<PatchOnHost, ApiError>;
        }
    } };
}
host_ops!(declare_port);

/// `run_ops!(then)`: calls `then!` with the [`RunOps`] port's methods, written
/// once here: the trait below and the server's forwarding (`guarded/ports.rs`) both
/// come from it.
#[macro_export]
macro_rules! run_ops {
    ($($then:tt)+) => { $($then)+! {
        /// Runs of command steps.
        RunOps {
            /// Queues runs of a command step (warm-ups first); they start right away.
            fn start_runs(&self, actor: &Actor, step_id: i64, request: RunRequest) -> Result<Vec<Run>, ApiError>;
            fn run(&self, actor: &Actor, id: i64) -> Result<Run, ApiError>;
            /// The run with everything its page shows (`/runs/{id}`).
            fn run_page(&self, actor: &Actor, id: i64) -> Result<$crate::run_pages::RunPage, ApiError>;
            /// Runs side by side (`/compare`): two to eight, the first the reference.
            fn compare_runs(&self, actor: &Actor, runs: Vec<i64>) -> Result<$crate::run_pages::RunsCompared, ApiError>;
            fn cancel_run(&self, actor: &Actor, id: i64) -> Result<Run, ApiError>;
            /// Up to `bytes` of a run's output ending at `before`, as HTML, from a line start.
            fn output_before(&self, actor: &Actor, id: i64, before: u64, bytes: u64) -> Result<OutputTail, ApiError>;
            /// Cancels a sweep's runs that have not finished.
            fn cancel_sweep(&self, actor: &Actor, id: i64) -> Result<$crate::sweeps::Sweep, ApiError>;
        }
    } };
}
run_ops!(declare_port);

/// `source_ops!(then)`: calls `then!` with the [`SourceOps`] port's methods, written
/// once here: the trait below and the server's forwarding (`guarded/ports.rs`) both
/// come from it.
#[macro_export]
macro_rules! source_ops {
    ($($then:tt)+) => { $($then)+! {
        /// Source on hosts: snippets fetched again, annotations, files named in output, patches checked.
        SourceOps {
            /// Fetches a snippet step's file again (optionally another range) as a new snapshot.
            fn refresh_snippet(&self, actor: &Actor, step_id: i64, start: Option<u64>, end: Option<u64>) -> Result<Step, ApiError>;
            /// Writes an annotation beside lines the snippet step shows.
            fn add_annotation(&self, actor: &Actor, step_id: i64, new: NewAnnotation) -> Result<Annotation, ApiError>;
            fn update_annotation(&self, actor: &Actor, id: i64, patch: AnnotationPatch) -> Result<Annotation, ApiError>;
            fn delete_annotation(&self, actor: &Actor, id: i64) -> Result<(), ApiError>;
            /// The files on the run's host that a reference in its output (`x.py:137`) may name.
            fn source_candidates(&self, actor: &Actor, run_id: i64, file: &str, line: u64) -> Result<SourceCandidates, ApiError>;
            /// A dry run of a patch step on its host: does each file still have its base?
            fn check_patch(&self, actor: &Actor, step_id: i64) -> Result<PatchCheck, ApiError>;
        }
    } };
}
source_ops!(declare_port);

/// `measurement_ops!(then)`: calls `then!` with the [`MeasurementOps`] port's methods, written
/// once here: the trait below and the server's forwarding (`guarded/ports.rs`) both
/// come from it.
#[macro_export]
macro_rules! measurement_ops {
    ($($then:tt)+) => { $($then)+! {
        /// Numbers: measurements, the chart, extractors.
        MeasurementOps {
            fn add_measurement(&self, actor: &Actor, investigation: &str, new: NewMeasurement) -> Result<StoredMeasurement, ApiError>;
            fn delete_measurement(&self, actor: &Actor, id: i64) -> Result<(), ApiError>;
            /// A sweep's configurations as a frontier (`/i/{id}/frontier?step=`).
            fn frontier(&self, actor: &Actor, step: i64, query: &$crate::frontier::FrontierQuery) -> Result<$crate::frontier::Frontier, ApiError>;
            /// A step's history of a metric and its change points (`/i/{id}/history?step=`).
            fn history(&self, actor: &Actor, step: i64, query: &$crate::history::HistoryQuery) -> Result<$crate::history::History, ApiError>;
            /// One metric by configuration (`/i/{id}/chart`); none while no two runs measured it.
            fn overview(&self, actor: &Actor, investigation: &str, query: &$crate::metrics::OverviewQuery) -> Result<Option<$crate::metrics::Overview>, ApiError>;
            /// Sets (an empty text removes) the SLO, and reads every finished run again
            /// for its goodput and knee.
            fn set_slo(&self, actor: &Actor, investigation: &str, input: $crate::distributions::SloInput) -> Result<Option<$crate::distributions::SloView>, ApiError>;
            /// Adds a derived metric and computes it for every finished run of the investigation.
            fn add_derived(&self, actor: &Actor, investigation: &str, def: $crate::metrics::DerivedDef) -> Result<$crate::metrics::DerivedDef, ApiError>;
            fn remove_derived(&self, actor: &Actor, investigation: &str, name: &str) -> Result<(), ApiError>;
            /// Adds an extractor and extracts every finished run of the investigation again.
            fn add_extractor(&self, actor: &Actor, investigation: &str, def: ExtractorDef) -> Result<ExtractorDef, ApiError>;
            fn remove_extractor(&self, actor: &Actor, investigation: &str, name: &str) -> Result<(), ApiError>;
        }
    } };
}
measurement_ops!(declare_port);

/// `hypothesis_ops!(then)`: calls `then!` with the [`HypothesisOps`] port's methods, written
/// once here: the trait below and the server's forwarding (`guarded/ports.rs`) both
/// come from it.
#[macro_export]
macro_rules! hypothesis_ops {
    ($($then:tt)+) => { $($then)+! {
        /// Hypotheses and their experiments.
        HypothesisOps {
            fn hypothesis(&self, actor: &Actor, id: i64) -> Result<Hypothesis, ApiError>;
            fn add_hypothesis(&self, actor: &Actor, investigation: &str, input: HypothesisInput) -> Result<Hypothesis, ApiError>;
            /// Changes the fields `input` has; the experiment is computed again.
            fn update_hypothesis(&self, actor: &Actor, id: i64, input: HypothesisInput) -> Result<Hypothesis, ApiError>;
            fn delete_hypothesis(&self, actor: &Actor, id: i64) -> Result<(), ApiError>;
        }
    } };
}
hypothesis_ops!(declare_port);

/// `find_ops!(then)`: calls `then!` with the [`FindOps`] port's methods, written
/// once here: the trait below and the server's forwarding (`guarded/ports.rs`) both
/// come from it.
#[macro_export]
macro_rules! find_ops {
    ($($then:tt)+) => { $($then)+! {
        /// Finding and handing over: search over everything the reader may read, and
        /// an investigation as one file for people without an account.
        FindOps {
            fn search(&self, actor: &Actor, request: SearchRequest) -> Result<SearchResults, ApiError>;
        }
    } };
}
find_ops!(declare_port);

/// `team_ops!(then)`: calls `then!` with the [`TeamOps`] port's methods, written
/// once here: the trait below and the server's forwarding (`guarded/ports.rs`) both
/// come from it.
#[macro_export]
macro_rules! team_ops {
    ($($then:tt)+) => { $($then)+! {
        /// Working together: members, share links, comments and mentions.
        TeamOps {
            /// Gives `member.user` that role (owners only); a role of `none` removes it.
            fn set_member(&self, actor: &Actor, investigation: &str, change: MemberChange) -> Result<Vec<Member>, ApiError>;
            /// The team's users not yet members (owners only): whom the Members form offers.
            fn member_candidates(&self, actor: &Actor, investigation: &str) -> Result<Vec<String>, ApiError>;
            fn create_share_link(&self, actor: &Actor, investigation: &str, new: NewShareLink) -> Result<CreatedShareLink, ApiError>;
            fn revoke_share_link(&self, actor: &Actor, id: i64) -> Result<ShareLink, ApiError>;
            /// What the link with this token shows; anyone may ask (the token is the right).
            fn shared(&self, token: &str, window: Option<&StepWindow>) -> Result<SharedView, ApiError>;
            /// Adds a comment (a thread, or a reply to one); `@name`s become mentions.
            fn add_comment(&self, actor: &Actor, investigation: &str, new: NewComment) -> Result<Comment, ApiError>;
            /// Resolves (or reopens) the thread the comment is in.
            fn resolve_comment(&self, actor: &Actor, id: i64, resolved: bool) -> Result<Comment, ApiError>;
            /// The signed-in user's mentions, newest first: unread ones, or `all`.
            fn mentions(&self, actor: &Actor, all: bool) -> Result<Vec<Mention>, ApiError>;
            /// Marks one comment's mention read, or all of them (`None`).
            fn read_mentions(&self, actor: &Actor, which: Option<MentionIn>) -> Result<(), ApiError>;
        }
    } };
}
team_ops!(declare_port);

/// `accounts!(then)`: calls `then!` with the [`Accounts`] port's methods, written
/// once here: the trait below and the server's forwarding (`guarded/ports.rs`) both
/// come from it.
#[macro_export]
macro_rules! accounts {
    ($($then:tt)+) => { $($then)+! {
        /// The signed-in user's API tokens, and what admins read about accounts.
        Accounts {
            // `false` under `--no-auth` (one local user, nothing to sign into).
            sync fn enabled(&self) -> bool;
            fn tokens(&self, actor: &Actor) -> Result<Vec<ApiToken>, ApiError>;
            fn create_token(&self, actor: &Actor, label: &str) -> Result<NewApiToken, ApiError>;
            fn revoke_token(&self, actor: &Actor, id: i64) -> Result<(), ApiError>;
            /// Admins only: the newest remote actions.
            fn audit_log(&self, actor: &Actor, limit: i64) -> Result<Vec<$crate::accounts::AuditEntry>, ApiError>;
            /// Admins only: the team's users.
            fn team_users(&self, actor: &Actor) -> Result<Vec<TeamUser>, ApiError>;
            /// Admins only: adds a user, answering the one-time link they choose a password with.
            fn add_team_user(&self, actor: &Actor, new: NewUser) -> Result<SignInLink, ApiError>;
            /// Admins only: a new one-time link for a user; their password stops working and their sessions end.
            fn reset_team_user(&self, actor: &Actor, name: &str) -> Result<SignInLink, ApiError>;
            /// Admins only: makes a user an admin, or not (never the last admin).
            fn set_team_admin(&self, actor: &Actor, name: &str, admin: bool) -> Result<TeamUser, ApiError>;
            /// Admins only: removes a user (never the last admin).
            fn remove_team_user(&self, actor: &Actor, name: &str) -> Result<(), ApiError>;
            /// Whom a one-time sign-in link is for, while it works; anyone may ask (the token is the right).
            fn sign_in_link_user(&self, token: &str) -> Result<Option<String>, ApiError>;
            /// Whether a first-admin setup link still works; anyone may ask.
            fn setup_link_works(&self, token: &str) -> Result<bool, ApiError>;
            /// Whether nobody has an account yet (the sign-in page then points at the
            /// setup link the server printed); anyone may ask.
            fn awaiting_setup(&self) -> Result<bool, ApiError>;
        }
    } };
}
accounts!(declare_port);
