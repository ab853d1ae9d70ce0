//! `/i/{id}`: one investigation and its timeline of steps.

use crate::api::{
    DeleteInvestigation, DeleteStep, MoveStep, RenameInvestigation, SetInvestigationStatus, get_investigation,
};
use crate::components::PageTitle;
use crate::components::{Ability, ActionError, Can, Confirm, StatusBadge};
use crate::model::{Investigation, InvestigationStatus, Step, StepOutline, StepWindow, limits, short_time};
use crate::steps::{StepContent, command::AddCommand, grep::AddGrep, note::AddNote, snippet::AddSnippet};
use leptos::form::ActionForm;
use leptos::prelude::*;
use leptos::server_fn::ServerFn;
use leptos_router::hooks::{use_params_map, use_query_map};

/// The steps of a long investigation the page shows in full: `?steps=` from the
/// address, and the parts the reader opened since (by scrolling, a click, or a
/// permalink to a folded step).
#[derive(Clone, Copy)]
pub(crate) struct Shown(pub RwSignal<StepWindow>);

impl Shown {
    pub fn provide() -> Self {
        let query = use_query_map();
        let asked = query.with_untracked(|q| StepWindow::parse(&q.get("steps").unwrap_or_default()));
        let shown = Shown(RwSignal::new(asked));
        provide_context(shown);
        shown
    }

    /// Shows the part `range` too (the page fetches it).
    pub(crate) fn open(self, range: (u32, u32)) {
        if !self.0.with_untracked(|w| w.covers(range)) {
            self.0.update(|w| *w = w.with(range));
        }
    }
}

/// The names of everyone else with this investigation open.
#[derive(Clone, Copy)]
struct Viewers(RwSignal<Vec<String>>);

/// "Also here: bob, carol" — nothing when you are alone.
#[component]
fn AlsoHere() -> impl IntoView {
    let viewers = use_context::<Viewers>();
    move || {
        let others = viewers.and_then(|v| v.0.try_get()).unwrap_or_default();
        (!others.is_empty()).then(|| view! { <p class="also-here muted">"Also here: " {others.join(", ")}</p> })
    }
}

/// Bumped after every successful change, so the page refetches the investigation.
#[derive(Clone, Copy)]
struct TimelineVersion(RwSignal<u64>);

/// Refreshes the investigation page from anywhere (callbacks outside the
/// reactive tree included); captures the page's version signal now.
pub fn refresher() -> impl Fn() + Clone + 'static {
    let version = use_context::<TimelineVersion>();
    move || {
        if let Some(v) = version {
            v.0.update(|n| *n += 1);
        }
    }
}

/// A server action whose success refreshes the investigation page. Failures leave
/// the page as it is, so whatever the user typed stays in its form.
pub fn timeline_action<S>() -> ServerAction<S>
where
    S: ServerFn + Clone + Send + Sync + 'static,
    S::Output: Send + Sync + 'static,
    S::Error: Send + Sync + 'static,
{
    let action = ServerAction::<S>::new();
    if let Some(version) = use_context::<TimelineVersion>() {
        crate::components::on_success(action, move || version.0.update(|v| *v += 1));
    }
    action
}

#[component]
pub fn InvestigationPage() -> impl IntoView {
    let params = use_params_map();
    let id = move || params.read().get("id").unwrap_or_default();
    let version = TimelineVersion(RwSignal::new(0));
    provide_context(version);
    provide_context(super::shared::CreatedLink(RwSignal::new(None)));
    // Who else has the page open: told by the event stream, kept across refreshes.
    let viewers = Viewers(RwSignal::new(Vec::new()));
    provide_context(viewers);
    crate::steps::annotation::LineFocus::provide();
    let shown = Shown::provide();
    let investigation = Resource::<_, super::Light>::new_with_options(
        move || (id(), version.0.get(), shown.0.get()),
        |(id, _, shown)| get_investigation(id, shown.query()),
        false,
    );
    // Runs started here or in another browser refresh the page as they change.
    #[cfg(feature = "hydrate")]
    Effect::new(move |_| {
        let known = investigation.get_untracked().and_then(Result::ok).map_or(0, |inv| inv.runs_fingerprint);
        crate::live::follow_investigation(id(), known, refresher(), viewers.0)
    });
    // A permalink to a folded step opens its part, then goes to it.
    #[cfg(feature = "hydrate")]
    crate::live::reveal_fragment(move || investigation.get().and_then(Result::ok), move |range| shown.open(range));
    view! {
        <Transition fallback=|| view! { <p class="muted">"Loading investigation…"</p> }>
            <ErrorBoundary fallback=super::error_fallback>
                {move || Suspend::new(async move {
                    investigation.await.map(|inv| view! { <InvestigationView inv/> })
                })}
            </ErrorBoundary>
        </Transition>
    }
}

/// The investigation as its reader may see it: forms only for what their role
/// allows. `notice` replaces the "you can read…" line (a share link's terms).
#[component]
pub(crate) fn InvestigationView(
    inv: Investigation,
    #[prop(optional)] notice: Option<String>,
    /// Where its exports come from (a share link's own); the investigation's by default.
    #[prop(optional)]
    export: Option<String>,
) -> impl IntoView {
    provide_context(inv.abilities);
    provide_context(super::comments::AllComments {
        investigation: inv.id.clone(),
        comments: std::sync::Arc::new(inv.comments.clone()),
    });
    let (id, run_id) = (inv.id.clone(), inv.id.clone());
    let steps = timeline(&inv);
    view! {
        <PageTitle text=format!("{} · Sleuth", inv.title)/>
        <nav class="crumbs"><a href="/">"Investigations"</a> " / " <span>{inv.id.clone()}</span></nav>
        <Header inv=inv.clone() export=export.unwrap_or_else(|| format!("/api/v1/investigations/{}/export", inv.id))/>
        {match notice {
            Some(text) => Some(view! { <p class="notice read-only shared-terms">{text}</p> }.into_any()),
            None => read_only_notice(&inv).map(IntoAny::into_any),
        }}
        <super::hypotheses::HypothesesSection inv=inv.clone()/>
        <super::hypotheses::MeasurementsSection inv=inv.clone()/>
        <section class="timeline" aria-label="Steps">
            {if inv.steps.is_empty() && inv.outline.is_empty() {
                Some(view! {
                    <p class="empty">"No steps yet. Write down what you know so far as a first note."</p>
                })
            } else {
                None
            }}
            <ol class="steps">{steps}</ol>
        </section>
        <Can what=Ability::Edit>
            <AddNote investigation=id.clone()/>
            <AddCommand investigation=id.clone()/>
            <crate::steps::calculator::AddCalculator investigation=id.clone() measurements=inv.measurements.clone()/>
        </Can>
        <Can what=Ability::Run>
            <AddSnippet investigation=run_id.clone()/>
            <AddGrep investigation=run_id/>
        </Can>
    }
}

/// The steps in order: in full, or (in a long investigation, outside the parts
/// shown) one line each under a "Show steps 21–60" head that loads its part.
fn timeline(inv: &Investigation) -> Vec<AnyView> {
    if inv.outline.is_empty() {
        let count = inv.steps.len() as u32;
        return inv.steps.iter().cloned().map(|step| view! { <StepItem step last=count/> }.into_any()).collect();
    }
    let count = inv.outline.len() as u32;
    let mut full: std::collections::HashMap<i64, Step> = inv.steps.iter().map(|s| (s.id, s.clone())).collect();
    let mut items = Vec::with_capacity(inv.outline.len() + 16);
    let mut part = None;
    for entry in &inv.outline {
        if let Some(step) = full.remove(&entry.id) {
            items.push(view! { <StepItem step last=count/> }.into_any());
            continue;
        }
        let this = StepWindow::part_of(entry.position, count);
        if part != Some(this) {
            part = Some(this);
            items.push(view! { <PartHead range=this first=entry.id/> }.into_any());
        }
        items.push(view! { <FoldedStep step=entry.clone() part=this/> }.into_any());
    }
    items
}

/// The address that shows `range` as well as what is shown now; without
/// JavaScript it is a plain link, and the server renders that part.
fn part_href(range: (u32, u32), target: &str) -> String {
    let shown = use_context::<Shown>().map(|s| s.0.get_untracked()).unwrap_or_default();
    format!("?steps={}#{target}", shown.with(range).query())
}

/// "Show steps 21–60": opens the part when clicked, or when it scrolls near.
#[component]
fn PartHead(range: (u32, u32), first: i64) -> impl IntoView {
    let href = part_href(range, &crate::model::step_anchor(first));
    let shown = use_context::<Shown>();
    let node = NodeRef::<leptos::html::Li>::new();
    #[cfg(feature = "hydrate")]
    if let Some(shown) = shown {
        crate::live::when_near(node, move || shown.open(range));
    }
    view! {
        <li class="part" node_ref=node data-from=range.0 data-to=range.1>
            <a
                class="show-part"
                href=href
                on:click=move |ev| {
                    if let Some(shown) = shown {
                        ev.prevent_default();
                        shown.open(range);
                    }
                }
            >
                {format!("Show steps {}–{}", range.0, range.1)}
            </a>
        </li>
    }
}

/// One line for a step outside the parts shown. Its anchors (and those of its
/// comments and annotations) are here, so a permalink lands on it.
#[component]
fn FoldedStep(step: StepOutline, part: (u32, u32)) -> impl IntoView {
    let anchor = crate::model::step_anchor(step.id);
    let href = part_href(part, &anchor);
    let details = [
        step.config.clone().filter(|c| !c.is_empty()),
        (step.runs > 0).then(|| format!("{} run{}", step.runs, if step.runs == 1 { "" } else { "s" })),
        Some(short_time(&step.created_at)),
    ]
    .into_iter()
    .flatten()
    .collect::<Vec<_>>()
    .join(" · ");
    let targets = step
        .comments
        .iter()
        .map(|c| crate::comments::comment_anchor(*c))
        .chain(step.annotations.iter().map(|a| crate::steps::snippet::annotation_anchor(*a)))
        .map(|id| view! { <span class="anchor" id=id></span> })
        .collect_view();
    view! {
        <li class="step folded" id=anchor data-kind=step.kind.clone()>
            <a class="step-link" href=href title="Show this part of the timeline">"#" {step.position}</a>
            " "
            <span class="kind">{step.kind.clone()}</span>
            " "
            <span class="headline">{step.headline.clone()}</span>
            " "
            <span class="muted">{details}</span>
            {targets}
        </li>
    }
}

/// Why a signed-in reader sees no forms, and whom to ask.
fn read_only_notice(inv: &Investigation) -> Option<impl IntoView + use<>> {
    let owners: Vec<String> = inv.members.iter().filter(|m| m.role == "owner").map(|m| m.user.clone()).collect();
    let ask = if owners.is_empty() { String::new() } else { format!(" (ask an owner: {})", owners.join(", ")) };
    let text = match (inv.abilities.edit, inv.abilities.run) {
        (false, _) => format!("You can read this investigation; changing it needs the editor role{ask}."),
        (true, false) => {
            format!("You can edit this investigation; running commands on hosts needs the runner role{ask}.")
        }
        (true, true) => return None,
    };
    Some(view! { <p class="notice read-only">{text}</p> })
}

#[component]
fn Header(inv: Investigation, export: String) -> impl IntoView {
    let rename = timeline_action::<RenameInvestigation>();
    let set_status = timeline_action::<SetInvestigationStatus>();
    let delete = ServerAction::<DeleteInvestigation>::new();
    let (next_status, toggle_label) = match inv.status {
        InvestigationStatus::Open => ("closed", "Close"),
        InvestigationStatus::Closed => ("open", "Reopen"),
    };
    // One copy per form: each form's view is its own closure.
    let (rename_id, status_id, delete_id) = (inv.id.clone(), inv.id.clone(), inv.id.clone());
    let question = (!inv.question.is_empty()).then(|| view! { <p class="question">{inv.question.clone()}</p> });
    view! {
        <header class="investigation-head">
            <div class="title-row">
                <h1>{inv.title.clone()}</h1>
                <StatusBadge status=inv.status/>
            </div>
            {question}
            <p class="muted meta">
                "Started " {short_time(&inv.created_at)} " · updated " {short_time(&inv.updated_at)}
            </p>
            <AlsoHere/>
            <div class="toolbar">
                <Can what=Ability::Edit>
                <details class="inline-form">
                    <summary class="button">"Rename…"</summary>
                    <ActionForm action=rename attr:class="stacked">
                        <input type="hidden" name="id" value=rename_id/>
                        <label>"Title"
                            <input name="title" required maxlength=limits::TITLE_CHARS value=inv.title.clone()/>
                        </label>
                        <label>"Question"
                            <textarea name="question" rows="2" maxlength=limits::QUESTION_CHARS>
                                {crate::components::textarea_text(&inv.question)}
                            </textarea>
                        </label>
                        <ActionError action=rename/>
                        <div class="form-actions"><button type="submit" class="primary">"Save"</button></div>
                    </ActionForm>
                </details>
                </Can>
                <ExportMenu base=export/>
                <super::members::Members investigation=inv.id.clone() members=inv.members.clone()/>
                <Can what=Ability::Own>
                    <super::shared::SharePanel investigation=inv.id.clone() links=inv.share_links.clone()/>
                </Can>
                <Can what=Ability::Edit>
                <ActionForm action=set_status attr:class="inline">
                    <input type="hidden" name="id" value=status_id/>
                    <input type="hidden" name="status" value=next_status/>
                    <button type="submit">{toggle_label}</button>
                </ActionForm>
                </Can>
                <Can what=Ability::Own>
                <Confirm label="Delete…" prompt="Delete this investigation and all its steps? This cannot be undone.">
                    <ActionForm action=delete attr:class="inline">
                        <input type="hidden" name="id" value=delete_id/>
                        <button type="submit" class="danger">"Delete investigation"</button>
                    </ActionForm>
                </Confirm>
                </Can>
            </div>
            <ActionError action=set_status/>
            <ActionError action=delete/>
        </header>
    }
}

/// Downloads of the investigation as one file (plain links: GET, no JavaScript needed).
#[component]
fn ExportMenu(base: String) -> impl IntoView {
    let shared = base.starts_with("/api/v1/shared/");
    view! {
        <details class="inline-form export-menu">
            <summary class="button">"Export…"</summary>
            <ul class="export-links">
                <li><a href=format!("{base}?format=html") download>"HTML report"</a>
                    <span class="muted">" one file: opens offline, no scripts"</span></li>
                {(!shared).then(|| view! {
                    <li><a href=format!("{base}?format=html&comments=true") download>"HTML report with comments"</a></li>
                })}
                <li><a href=format!("{base}?format=md") download>"Markdown"</a>
                    <span class="muted">" for a GitHub issue or a wiki"</span></li>
                <li><a href=format!("{base}?format=zip") download>"Markdown and charts (.zip)"</a></li>
            </ul>
        </details>
    }
}

#[component]
fn StepItem(step: Step, last: u32) -> impl IntoView {
    let editing = RwSignal::new(false);
    let move_step = timeline_action::<MoveStep>();
    let delete = timeline_action::<DeleteStep>();
    let position = step.position;
    let anchor = step.anchor();
    let editable = matches!(step.body, crate::steps::StepBody::Note(_) | crate::steps::StepBody::Command(_));
    view! {
        <li class="step" id=anchor.clone() data-kind=step.body.kind()>
            <div class="step-head">
                <a class="step-link" href=format!("#{anchor}") title="Link to this step">
                    "#" {position}
                </a>
                <span class="kind">{step.body.kind()}</span>
                <span class="muted time">{short_time(&step.created_at)}</span>
                <span class="spacer"></span>
                // Snippets and greps change by refreshing, not by editing.
                <Can what=Ability::Edit>
                {editable.then(|| view! {
                    <button type="button" class="quiet edit" on:click=move |_| editing.update(|e| *e = !*e)>
                        "Edit"
                    </button>
                })}
                <ActionForm action=move_step attr:class="inline">
                    <input type="hidden" name="step_id" value=step.id/>
                    <input type="hidden" name="position" value=position.saturating_sub(1).max(1)/>
                    <button type="submit" class="quiet" title="Move up" disabled={position <= 1}>"↑"</button>
                </ActionForm>
                <ActionForm action=move_step attr:class="inline">
                    <input type="hidden" name="step_id" value=step.id/>
                    <input type="hidden" name="position" value=position + 1/>
                    <button type="submit" class="quiet" title="Move down" disabled={position >= last}>"↓"</button>
                </ActionForm>
                <Confirm label="Delete…" prompt="Delete this step?">
                    <ActionForm action=delete attr:class="inline">
                        <input type="hidden" name="step_id" value=step.id/>
                        <button type="submit" class="danger">"Delete step"</button>
                    </ActionForm>
                </Confirm>
                </Can>
            </div>
            <div class="step-body">
                <StepContent step=step.clone() editing/>
            </div>
            <super::comments::Threads step_id=step.id/>
            <ActionError action=move_step/>
            <ActionError action=delete/>
        </li>
    }
}
