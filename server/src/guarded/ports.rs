//! The ports the pages' server functions call through (`domain::ports`: the
//! pages compile against them, and never against this crate). Each method is
//! answered by [`Guarded`](super::Guarded)'s own method of the same name,
//! which the JSON API's handlers call directly, so that "go to definition"
//! from a handler lands on the code. What only the API does is not a port.

use domain::accounts::{ApiToken, Member, MemberChange, NewApiToken, NewUser, SignInLink, TeamUser};
use domain::comments::{Comment, Mention, MentionIn, NewComment};
use domain::error::ApiError;
use domain::hosts::{ConnectionReport, Host, HostFacts, HostImport, HostPatch, ImportReport, NewHost};
use domain::hypotheses::{Hypothesis, HypothesisInput};
use domain::metrics::{ExtractorDef, NewMeasurement, Overview, OverviewQuery, StoredMeasurement};
use domain::model::{
    Investigation, InvestigationPatch, InvestigationSummary, NewInvestigation, SharedView, Step, StepWindow,
};
use domain::ports::Actor;
use domain::runs::{OutputTail, Run, RunRequest};
use domain::search::{SearchRequest, SearchResults};
use domain::shares::{CreatedShareLink, NewShareLink, ShareLink};
use domain::steps::StepBody;
use domain::steps::snippet::{Annotation, AnnotationPatch, NewAnnotation, SourceCandidates};

/// `impl $port for Guarded`, each method calling `Guarded`'s own.
macro_rules! answer {
    ($port:path {
        $(sync fn $sync:ident(&self) -> $sync_ret:ty;)*
        $(fn $name:ident(&self $(, $arg:ident: $ty:ty)*) -> $ret:ty;)*
    }) => {
        #[async_trait::async_trait]
        impl $port for super::Guarded {
            $(fn $sync(&self) -> $sync_ret {
                super::Guarded::$sync(self)
            })*
            $(async fn $name(&self $(, $arg: $ty)*) -> $ret {
                super::Guarded::$name(self $(, $arg)*).await
            })*
        }
    };
}

answer! { domain::ports::InvestigationOps {
        fn list_investigations(&self, actor: &Actor) -> Result<Vec<InvestigationSummary>, ApiError>;
        fn abilities(&self, actor: &Actor, id: &str) -> Result<domain::model::Abilities, ApiError>;
        fn create_investigation(&self, actor: &Actor, new: NewInvestigation) -> Result<Investigation, ApiError>;
        fn replay(&self, actor: &Actor, id: i64) -> Result<domain::replays::Replay, ApiError>;
        fn replay_investigation(&self, actor: &Actor, id: &str, request: domain::replays::ReplayRequest) -> Result<domain::replays::Replay, ApiError>;
        fn watch_step(&self, actor: &Actor, step: i64, request: domain::watches::WatchRequest, through: Option<String>) -> Result<domain::watches::Watch, ApiError>;
        fn delete_watch(&self, actor: &Actor, id: i64) -> Result<(), ApiError>;
        fn investigation(&self, actor: &Actor, id: &str, window: Option<&StepWindow>) -> Result<Investigation, ApiError>;
        fn update_investigation(&self, actor: &Actor, id: &str, patch: InvestigationPatch) -> Result<Investigation, ApiError>;
        fn delete_investigation(&self, actor: &Actor, id: &str) -> Result<(), ApiError>;
} }

answer! { domain::ports::StepOps {
        fn add_step(&self, actor: &Actor, investigation: &str, body: StepBody) -> Result<Step, ApiError>;
        fn step(&self, actor: &Actor, id: i64) -> Result<Step, ApiError>;
        fn update_step(&self, actor: &Actor, id: i64, body: StepBody, version: Option<i64>) -> Result<Step, ApiError>;
        fn move_step(&self, actor: &Actor, id: i64, position: u32) -> Result<Step, ApiError>;
        fn duplicate_step(&self, actor: &Actor, id: i64) -> Result<Step, ApiError>;
        fn delete_step(&self, actor: &Actor, id: i64) -> Result<(), ApiError>;
} }

answer! { domain::ports::HostOps {
        fn hosts(&self, actor: &Actor) -> Result<Vec<Host>, ApiError>;
        fn add_host(&self, actor: &Actor, host: NewHost) -> Result<Host, ApiError>;
        fn update_host(&self, actor: &Actor, name: &str, host: NewHost) -> Result<Host, ApiError>;
        fn remove_host(&self, actor: &Actor, name: &str) -> Result<(), ApiError>;
        fn patch_host(&self, actor: &Actor, name: &str, patch: HostPatch) -> Result<Host, ApiError>;
        fn trust_host(&self, actor: &Actor, name: &str, fingerprint: &str) -> Result<Host, ApiError>;
        fn set_passphrase(&self, actor: &Actor, name: &str, passphrase: String) -> Result<(), ApiError>;
        fn test_host(&self, actor: &Actor, name: &str) -> Result<ConnectionReport, ApiError>;
        fn import_hosts(&self, actor: &Actor, source: HostImport) -> Result<ImportReport, ApiError>;
        fn capture_facts(&self, actor: &Actor, host: &str, python: Option<String>) -> Result<HostFacts, ApiError>;
        fn facts(&self, actor: &Actor, host: &str) -> Result<Option<HostFacts>, ApiError>;
        fn server_status(&self, actor: &Actor) -> Result<domain::hosts::ServerStatus, ApiError>;
} }

answer! { domain::ports::RunOps {
        fn start_runs(&self, actor: &Actor, step_id: i64, request: RunRequest) -> Result<Vec<Run>, ApiError>;
        fn run(&self, actor: &Actor, id: i64) -> Result<Run, ApiError>;
        fn run_page(&self, actor: &Actor, id: i64) -> Result<domain::run_pages::RunPage, ApiError>;
        fn compare_runs(&self, actor: &Actor, runs: Vec<i64>) -> Result<domain::run_pages::RunsCompared, ApiError>;
        fn cancel_run(&self, actor: &Actor, id: i64) -> Result<Run, ApiError>;
        fn output_before(&self, actor: &Actor, id: i64, before: u64, bytes: u64) -> Result<OutputTail, ApiError>;
        fn cancel_sweep(&self, actor: &Actor, id: i64) -> Result<domain::sweeps::Sweep, ApiError>;
} }

answer! { domain::ports::SourceOps {
        fn refresh_snippet(&self, actor: &Actor, step_id: i64, start: Option<u64>, end: Option<u64>) -> Result<Step, ApiError>;
        fn add_annotation(&self, actor: &Actor, step_id: i64, new: NewAnnotation) -> Result<Annotation, ApiError>;
        fn update_annotation(&self, actor: &Actor, id: i64, patch: AnnotationPatch) -> Result<Annotation, ApiError>;
        fn delete_annotation(&self, actor: &Actor, id: i64) -> Result<(), ApiError>;
        fn source_candidates(&self, actor: &Actor, run_id: i64, file: &str, line: u64) -> Result<SourceCandidates, ApiError>;
} }

answer! { domain::ports::MeasurementOps {
        fn add_measurement(&self, actor: &Actor, investigation: &str, new: NewMeasurement) -> Result<StoredMeasurement, ApiError>;
        fn delete_measurement(&self, actor: &Actor, id: i64) -> Result<(), ApiError>;
        fn overview(&self, actor: &Actor, investigation: &str, query: &OverviewQuery) -> Result<Option<Overview>, ApiError>;
        fn frontier(&self, actor: &Actor, step: i64, query: &domain::frontier::FrontierQuery) -> Result<domain::frontier::Frontier, ApiError>;
        fn history(&self, actor: &Actor, step: i64, query: &domain::history::HistoryQuery) -> Result<domain::history::History, ApiError>;
        fn set_slo(&self, actor: &Actor, investigation: &str, input: domain::distributions::SloInput) -> Result<Option<domain::distributions::SloView>, ApiError>;
        fn add_derived(&self, actor: &Actor, investigation: &str, def: domain::metrics::DerivedDef) -> Result<domain::metrics::DerivedDef, ApiError>;
        fn remove_derived(&self, actor: &Actor, investigation: &str, name: &str) -> Result<(), ApiError>;
        fn add_extractor(&self, actor: &Actor, investigation: &str, def: ExtractorDef) -> Result<ExtractorDef, ApiError>;
        fn remove_extractor(&self, actor: &Actor, investigation: &str, name: &str) -> Result<(), ApiError>;
} }

answer! { domain::ports::HypothesisOps {
        fn hypothesis(&self, actor: &Actor, id: i64) -> Result<Hypothesis, ApiError>;
        fn add_hypothesis(&self, actor: &Actor, investigation: &str, input: HypothesisInput) -> Result<Hypothesis, ApiError>;
        fn update_hypothesis(&self, actor: &Actor, id: i64, input: HypothesisInput) -> Result<Hypothesis, ApiError>;
        fn delete_hypothesis(&self, actor: &Actor, id: i64) -> Result<(), ApiError>;
} }

answer! { domain::ports::FindOps {
        fn search(&self, actor: &Actor, request: SearchRequest) -> Result<SearchResults, ApiError>;
} }

answer! { domain::ports::TeamOps {
        fn set_member(&self, actor: &Actor, investigation: &str, change: MemberChange) -> Result<Vec<Member>, ApiError>;
        fn member_candidates(&self, actor: &Actor, investigation: &str) -> Result<Vec<String>, ApiError>;
        fn create_share_link(&self, actor: &Actor, investigation: &str, new: NewShareLink) -> Result<CreatedShareLink, ApiError>;
        fn revoke_share_link(&self, actor: &Actor, id: i64) -> Result<ShareLink, ApiError>;
        fn shared(&self, token: &str, window: Option<&StepWindow>) -> Result<SharedView, ApiError>;
        fn add_comment(&self, actor: &Actor, investigation: &str, new: NewComment) -> Result<Comment, ApiError>;
        fn resolve_comment(&self, actor: &Actor, id: i64, resolved: bool) -> Result<Comment, ApiError>;
        fn mentions(&self, actor: &Actor, all: bool) -> Result<Vec<Mention>, ApiError>;
        fn read_mentions(&self, actor: &Actor, which: Option<MentionIn>) -> Result<(), ApiError>;
} }

answer! { domain::ports::Accounts {
        sync fn enabled(&self) -> bool;
        fn tokens(&self, actor: &Actor) -> Result<Vec<ApiToken>, ApiError>;
        fn create_token(&self, actor: &Actor, label: &str) -> Result<NewApiToken, ApiError>;
        fn revoke_token(&self, actor: &Actor, id: i64) -> Result<(), ApiError>;
        fn audit_log(&self, actor: &Actor, limit: i64) -> Result<Vec<domain::accounts::AuditEntry>, ApiError>;
        fn team_users(&self, actor: &Actor) -> Result<Vec<TeamUser>, ApiError>;
        fn add_team_user(&self, actor: &Actor, new: NewUser) -> Result<SignInLink, ApiError>;
        fn reset_team_user(&self, actor: &Actor, name: &str) -> Result<SignInLink, ApiError>;
        fn set_team_admin(&self, actor: &Actor, name: &str, admin: bool) -> Result<TeamUser, ApiError>;
        fn remove_team_user(&self, actor: &Actor, name: &str) -> Result<(), ApiError>;
        fn sign_in_link_user(&self, token: &str) -> Result<Option<String>, ApiError>;
        fn setup_link_works(&self, token: &str) -> Result<bool, ApiError>;
        fn awaiting_setup(&self) -> Result<bool, ApiError>;
} }
