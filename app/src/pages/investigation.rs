//! `/i/{id}`: one investigation and its timeline of steps.
//!
//! Rendered whole on the server. In the browser, `browser::page` draws it anew
//! from the server when it changes (a form posted here, an edit or run in
//! anyone's browser: the `data-live` event stream), with the same address
//! query this page reads: `?steps=` for the parts of a long timeline shown, and
//! `?edit=` for the step whose editor is open. Both are plain links too, so the
//! page works without JavaScript.

use super::shown::{Shown, editor_href};
use crate::api::{
    DeleteInvestigation, DeleteStep, DuplicateStep, MoveStep, RenameInvestigation, SetInvestigationStatus,
    get_investigation,
};
use crate::components::PageTitle;
use crate::components::{Ability, ActionError, Can, Confirm, StatusBadge};
use crate::steps::{StepContent, command::AddCommand, grep::AddGrep, note::AddNote, snippet::AddSnippet};
use domain::model::{Investigation, InvestigationStatus, Step, StepOutline, StepWindow, limits, short_time};
use leptos::form::ActionForm;
use leptos::prelude::*;
use leptos_router::hooks::use_params_map;

#[component]
pub fn InvestigationPage() -> impl IntoView {
    let params = use_params_map();
    let id = params.with_untracked(|p| p.get("id").unwrap_or_default());
    let shown = Shown::provide();
    let investigation = Resource::new(move || (), move |_| get_investigation(id.clone(), shown.window.query()));
    view! {
        <Suspense fallback=|| view! { <p class="muted">"Loading investigation…"</p> }>
                {move || Suspend::new(async move {
                    super::or_error(investigation.await.map(|inv| view! { <InvestigationView inv live=true/> }))
                })}
        </Suspense>
    }
}

/// The investigation as its reader may see it: forms only for what their role
/// allows. `notice` replaces the "you can read…" line (a share link's terms).
/// `live`: the browser follows its changes (`browser::live`); a share link's
/// page is not.
#[component]
pub(crate) fn InvestigationView(
    inv: Investigation,
    #[prop(optional)] notice: Option<String>,
    /// Where its exports come from (a share link's own); the investigation's by default.
    #[prop(optional)]
    export: Option<String>,
    #[prop(optional)] live: bool,
) -> impl IntoView {
    // Shared, not cloned, by the sections: a thousand runs' measurements are
    // a quarter of a million allocations to copy.
    let inv = std::sync::Arc::new(inv);
    provide_context(inv.abilities);
    provide_context(super::comments::AllComments {
        investigation: inv.id.clone(),
        comments: std::sync::Arc::new(inv.comments.clone()),
    });
    let (id, run_id) = (inv.id.clone(), inv.id.clone());
    let steps = timeline(&inv);
    let calculator = inv.clone();
    view! {
        <PageTitle text=format!("{} · Sleuth", inv.title)/>
        <article
            class=if super::outsider() { "investigation shared-page" } else { "investigation" }
            data-investigation=inv.id.clone()
            data-live=live.then_some("")
            data-known=inv.runs_fingerprint.to_string()
        >
        {if super::outsider() {
            view! { <nav class="crumbs"><span>"Shared investigation"</span></nav> }.into_any()
        } else {
            view! { <nav class="crumbs"><a href="/">"Investigations"</a> " / " <span title=inv.id.clone()>{super::crumb_title(&inv.title, &inv.id)}</span></nav> }.into_any()
        }}
        <Header inv=inv.clone() export=export.unwrap_or_else(|| format!("/api/v1/investigations/{}/export", inv.id))/>
        {match notice {
            Some(text) => Some(view! { <p class="notice read-only shared-terms">{text}</p> }.into_any()),
            None => read_only_notice(&inv).map(IntoAny::into_any),
        }}
        <super::hypotheses::HypothesesSection inv=inv.clone()/>
        <super::measurements::MeasurementsSection inv=inv.clone()/>
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
            <crate::steps::calculator::AddCalculator investigation=id.clone() inv=calculator.clone()/>
        </Can>
        <Can what=Ability::Run>
            <AddSnippet investigation=run_id.clone()/>
            <AddGrep investigation=run_id.clone()/>
            <crate::steps::patch::AddPatch investigation=run_id/>
        </Can>
        </article>
    }
}

/// The steps in order: in full, or (in a long investigation, outside the parts
/// shown) one line each under a "Show steps 21–60" head that opens its part.
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

/// The address that shows `range` as well as what is shown now. The browser
/// (`browser::timeline`) opens the part in place; without JavaScript the
/// server renders it.
fn part_href(range: (u32, u32), target: &str) -> String {
    let shown = Shown::get();
    Shown::href(&shown.window.with(range), shown.edit, target)
}

/// "Show steps 21–60": opens the part when clicked, or when it scrolls near.
#[component]
fn PartHead(range: (u32, u32), first: i64) -> impl IntoView {
    let href = part_href(range, &domain::model::step_anchor(first));
    view! {
        <li class="part" data-from=range.0 data-to=range.1>
            <a class="show-part" href=href>{format!("Show steps {}–{}", range.0, range.1)}</a>
        </li>
    }
}

/// One line for a step outside the parts shown. Its anchors (and those of its
/// comments and annotations) are here, so a permalink lands on it.
#[component]
fn FoldedStep(step: StepOutline, part: (u32, u32)) -> impl IntoView {
    let anchor = domain::model::step_anchor(step.id);
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
        .map(|c| domain::comments::comment_anchor(*c))
        .chain(step.annotations.iter().map(|a| domain::steps::snippet::annotation_anchor(*a)))
        .map(|id| view! { <span class="anchor" id=id></span> })
        .collect_view();
    view! {
        <li class="step folded" id=anchor data-kind=step.kind.as_str()>
            <a class="step-link" href=href title="Show this part of the timeline">"#" {step.position}</a>
            " "
            <span class="kind">{step.kind.as_str()}</span>
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
    let owners: Vec<String> =
        inv.members.iter().filter(|m| m.role == domain::accounts::Role::Owner).map(|m| m.user.clone()).collect();
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
fn Header(inv: std::sync::Arc<Investigation>, export: String) -> impl IntoView {
    let rename = ServerAction::<RenameInvestigation>::new();
    let set_status = ServerAction::<SetInvestigationStatus>::new();
    let delete = ServerAction::<DeleteInvestigation>::new();
    let (next_status, toggle_label) = match inv.status {
        InvestigationStatus::Open => ("closed", "Close"),
        InvestigationStatus::Closed => ("open", "Reopen"),
    };
    // One copy per form: each form's view is its own closure.
    let (rename_id, status_id, delete_id) = (inv.id.clone(), inv.id.clone(), inv.id.clone());
    let (title, question_text, links) = (inv.title.clone(), inv.question.clone(), inv.share_links.clone());
    let question = (!inv.question.is_empty()).then(|| view! { <p class="question">{inv.question.clone()}</p> });
    view! {
        <header class="investigation-head">
            <div class="title-row">
                <h1>{inv.title.clone()}</h1>
                <StatusBadge status=inv.status/>
            </div>
            {question}
            {(!inv.watches.is_empty()).then(|| view! { <WatchBanner watches=inv.watches.clone()/> })}
            <ReplayLinks replays=inv.replays.clone() replay_of=inv.replay_of.clone()/>
            <DirtyHosts steps=inv.steps.clone()/>
            <p class="muted meta">
                "Started " <crate::components::Time at=inv.created_at.clone()/> " · updated " <crate::components::Time at=inv.updated_at.clone()/>
            </p>
            // Who else has it open: filled in by the browser (`browser::live`).
            <p class="also-here muted" hidden></p>
            <div class="toolbar">
                <Can what=Ability::Edit>
                <details class="inline-form">
                    <summary class="button">"Rename…"</summary>
                    <ActionForm action=rename attr:class="stacked">
                        <input type="hidden" name="id" value=rename_id/>
                        <label>"Title"
                            <input name="title" required maxlength=limits::TITLE_CHARS value=title.clone()/>
                        </label>
                        <label>"Question"
                            <textarea name="question" rows="2" maxlength=limits::QUESTION_CHARS>
                                {crate::components::textarea_text(&question_text)}
                            </textarea>
                        </label>
                        <ActionError action=rename/>
                        <div class="form-actions"><button type="submit" class="primary">"Save"</button></div>
                    </ActionForm>
                </details>
                </Can>
                <ExportMenu base=export/>
                {(!super::outsider()).then(|| view! { <super::replay::ReplayForm investigation=inv.id.clone()/> })}
                // A share link's reader is not told who the team is.
                {(!super::outsider()).then(|| view! { <super::members::Members investigation=inv.id.clone() members=inv.members.clone()/> })}
                <Can what=Ability::Own>
                    <super::share_links::SharePanel investigation=inv.id.clone() links=links.clone()/>
                </Can>
                <Can what=Ability::Edit>
                <ActionForm action=set_status attr:class="inline">
                    <input type="hidden" name="id" value=status_id/>
                    <input type="hidden" name="status" value=next_status/>
                    <button type="submit">{toggle_label}</button>
                    <ActionError action=set_status/>
                </ActionForm>
                </Can>
                <Can what=Ability::Own>
                <Confirm label="Delete…" prompt="Delete this investigation and all its steps? This cannot be undone.">
                    <ActionForm action=delete attr:class="inline">
                        <input type="hidden" name="id" value=delete_id/>
                        <button type="submit" class="danger">"Delete investigation"</button>
                        <ActionError action=delete/>
                    </ActionForm>
                </Confirm>
                </Can>
            </div>
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
            <div class="popover">
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
            </div>
        </details>
    }
}

#[component]
fn StepItem(step: Step, last: u32) -> impl IntoView {
    let step_id = step.id;
    let shown = Shown::get();
    let editing = shown.edit == Some(step.id);
    let move_step = ServerAction::<MoveStep>::new();
    let duplicate = ServerAction::<DuplicateStep>::new();
    let delete = ServerAction::<DeleteStep>::new();
    let position = step.position;
    let anchor = step.anchor();
    let editable = matches!(step.body, domain::steps::StepBody::Note(_) | domain::steps::StepBody::Command(_));
    let toggle = editor_href(step.id, !editing);
    let (kind, created) = (step.body.kind().as_str(), step.created_at.clone());
    view! {
        <li class="step" id=anchor.clone() data-kind=kind data-editing=editing.then_some("") data-step=step_id data-position=position tabindex="-1">
            <div class="step-head">
                // Dragged to move the step (`browser::drag`); ↑ and ↓ stay for keyboards.
                <Can what=Ability::Edit>
                    <span class="drag-handle" draggable="true" title="Drag to move this step" aria-hidden="true">"⠿"</span>
                </Can>
                <a class="step-link" href=format!("#{anchor}") title="Link to this step">
                    "#" {position}
                </a>
                <button type="button" class="copy quiet step-copy" data-copy-link=format!("#{anchor}") title="Copy a link to this step">"Copy link"</button>
                <span class="kind">{kind}</span>
                <span class="muted time"><crate::components::Time at=created/></span>
                <span class="spacer"></span>
                // Snippets and greps change by refreshing, not by editing.
                <Can what=Ability::Edit>
                {editable.then(|| view! {
                    <a class="button quiet edit" href=toggle data-view=if editing { "close" } else { "edit" }>
                        {if editing { "Close editor" } else { "Edit" }}
                    </a>
                })}
                <ActionForm action=move_step attr:class="inline">
                    <input type="hidden" name="step_id" value=step_id/>
                    <input type="hidden" name="position" value=position.saturating_sub(1).max(1)/>
                    <button type="submit" class="quiet" title="Move up" disabled={position <= 1}>"↑"</button>
                </ActionForm>
                <ActionForm action=move_step attr:class="inline">
                    <input type="hidden" name="step_id" value=step_id/>
                    <input type="hidden" name="position" value=position + 1/>
                    <button type="submit" class="quiet" title="Move down" disabled={position >= last}>"↓"</button>
                </ActionForm>
                <ActionForm action=duplicate attr:class="inline">
                    <input type="hidden" name="step_id" value=step_id/>
                    <button type="submit" class="quiet duplicate" title="A copy of this step after it, without its runs">"Duplicate"</button>
                </ActionForm>
                <Confirm label="Delete…" prompt="Delete this step, with its runs and their output?">
                    <ActionForm action=delete attr:class="inline" attr:data-undo=format!("step #{position}")>
                        <input type="hidden" name="step_id" value=step_id/>
                        <button type="submit" class="danger">"Delete step"</button>
                        <ActionError action=delete/>
                    </ActionForm>
                </Confirm>
                </Can>
            </div>
            <ActionError action=move_step/>
            <ActionError action=duplicate/>
            <div class="step-body">
                <StepContent step editing/>
            </div>
            <super::comments::Threads step_id/>
        </li>
    }
}

/// The investigation's watched steps: each schedule, and the newest change
/// it found (or why it stopped), its history (its configuration in the link)
/// and, for runners, Stop.
#[component]
fn WatchBanner(watches: Vec<domain::watches::Watch>) -> impl IntoView {
    let items = watches
        .into_iter()
        .map(|w| {
            let every = match (&w.every_s, &w.cron) {
                (Some(s), _) => format!("every {s} s"),
                (None, Some(c)) => format!("cron {c}"),
                _ => String::new(),
            };
            let href = w.url.clone();
            let config = w.config.clone().map(|c| format!(" [{c}]")).unwrap_or_default();
            let by = w.created_by.clone().map(|b| format!(" by {b}")).unwrap_or_default();
            let id = w.id;
            let change = w.last_change.map(|c| {
                view! {
                    " · " <strong class=format!("change {}", c.direction)>{c.direction.as_str()}</strong>
                    {format!(" {:+.1} % from run #{}", c.delta_pct, c.run_id)}
                }
            });
            let running = w.stopped.is_none();
            view! {
                <li data-watch=id>
                    <a href=href>{format!("Watching step {}{config} ({}) {every}{by}", w.step_id, w.metric)}</a>
                    <span class="muted">{format!(" · {} runs", w.runs)}</span>
                    {change}
                    {w.last_told.map(|t| view! { <span class="muted">" · " {t}</span> })}
                    {w.stopped.map(|why| view! { " · " <span class="warning">{why}</span> })}
                    {running.then(|| view! {
                        <Can what=Ability::Run><crate::steps::watch::StopWatch id/></Can>
                    })}
                </li>
            }
        })
        .collect_view();
    view! { <ul class="watch-banner">{items}</ul> }
}

/// Hosts this investigation's runs left dirty: a patch that could not be put
/// back, which refuses new runs there until an admin settles it.
#[component]
fn DirtyHosts(steps: Vec<domain::model::Step>) -> impl IntoView {
    let dirty: Vec<(i64, String, domain::steps::patch::RunPatch)> = steps
        .iter()
        .flat_map(|s| s.runs.iter())
        .filter_map(|r| {
            let patch = r.patch.clone()?;
            (patch.state == domain::steps::patch::ArmState::Dirty).then(|| (r.id, r.host.clone(), patch))
        })
        .collect();
    (!dirty.is_empty()).then(|| {
        let items = dirty
            .into_iter()
            .map(|(run, host, patch)| {
                view! {
                    <li><a href=format!("/hosts#host-{host}")>{host.clone()}</a> " is dirty: "
                        <a href=format!("/runs/{run}")>{format!("run {run}")}</a> " — " {patch.text.clone()}
                        " New runs there are refused until an admin restores or accepts it."</li>
                }
            })
            .collect_view();
        view! { <ul class="notice dirty-hosts" aria-label="Dirty hosts">{items}</ul> }
    })
}

/// This investigation's replays (each a link to its page), and the replay it
/// is itself the copy of.
#[component]
fn ReplayLinks(replays: Vec<domain::model::ReplayLink>, replay_of: Option<domain::model::ReplayLink>) -> impl IntoView {
    let of = replay_of.map(|r| {
        view! {
            <p class="notice replay-of">"A replay" {r.host.clone().map(|h| format!(" on {h}"))} " — "
                <a href=r.url.clone()>{format!("replay {} beside its original", r.id)}</a>
                {r.original.clone().map(|o| view! { " · " <a href=format!("/i/{o}")>"the original"</a> })}
            </p>
        }
    });
    let listed = (!replays.is_empty()).then(|| {
        let items = replays
            .into_iter()
            .map(|r| {
                view! {
                    <li><a href=r.url.clone()>{format!("Replay {}", r.id)}</a>
                        {r.host.clone().map(|h| format!(" on {h}"))} " · " <crate::components::Time at=r.created_at.clone()/>
                        {r.created_by.clone().map(|b| format!(" by {b}"))}</li>
                }
            })
            .collect_view();
        view! { <ul class="replay-links">{items}</ul> }
    });
    view! { {of} {listed} }
}
