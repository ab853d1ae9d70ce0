//! The ports the pages' server functions call through (`domain::ports`: the
//! pages compile against them, and never against this crate). Each method is
//! answered by [`Guarded`](super::Guarded)'s own method of the same name,
//! which the JSON API's handlers call directly, so that "go to definition"
//! from a handler lands on the code. What only the API does is not a port.
//!
//! The forwarding is generated from the one list of each port's methods in
//! `domain/src/ports.rs` (`investigation_ops!(answer)` hands it to `answer!`):
//! an operation's signature is written there and on its `Guarded` method, not
//! here.

use domain::accounts::{ApiToken, Member, MemberChange, NewApiToken, NewUser, SignInLink, TeamUser};
use domain::comments::{Comment, Mention, MentionIn, NewComment};
use domain::error::ApiError;
use domain::hosts::{ConnectionReport, Host, HostFacts, HostImport, HostPatch, ImportReport, NewHost};
use domain::hypotheses::{Hypothesis, HypothesisInput};
use domain::metrics::{ExtractorDef, NewMeasurement, StoredMeasurement};
use domain::model::{
    Investigation, InvestigationPatch, InvestigationSummary, NewInvestigation, SharedView, Step, StepWindow,
};
use domain::ports::Actor;
use domain::runs::{OutputTail, Run, RunRequest};
use domain::search::{SearchRequest, SearchResults};
use domain::shares::{CreatedShareLink, NewShareLink, ShareLink};
use domain::steps::StepBody;
use domain::steps::patch::{PatchCheck, PatchOnHost};
use domain::steps::snippet::{Annotation, AnnotationPatch, NewAnnotation, SourceCandidates};

/// `impl $port for Guarded`, each method calling `Guarded`'s own.
macro_rules! answer {
    ($(#[$doc:meta])* $port:ident {
        $(sync fn $sync:ident(&self) -> $sync_ret:ty;)*
        $($(#[$fn_doc:meta])* fn $name:ident(&self $(, $arg:ident: $ty:ty)*) -> $ret:ty;)*
    }) => {
        #[async_trait::async_trait]
        impl domain::ports::$port for super::Guarded {
            $(fn $sync(&self) -> $sync_ret {
                super::Guarded::$sync(self)
            })*
            $(async fn $name(&self $(, $arg: $ty)*) -> $ret {
                super::Guarded::$name(self $(, $arg)*).await
            })*
        }
    };
}

domain::investigation_ops!(answer);
domain::step_ops!(answer);
domain::host_ops!(answer);
domain::run_ops!(answer);
domain::source_ops!(answer);
domain::measurement_ops!(answer);
domain::hypothesis_ops!(answer);
domain::find_ops!(answer);
domain::team_ops!(answer);
domain::accounts!(answer);
