//! "Watch…" on a command step (run it on a schedule, judge its history after
//! each run, tell a webhook of a change) and "Stop" on a watch.

use domain::error::ApiError;
use leptos::form::ActionForm;
use leptos::prelude::*;

#[server]
pub async fn watch_step_form(
    step_id: i64,
    metric: String,
    #[server(default)] config: String,
    schedule: String,
    #[server(default)] webhook: String,
) -> Result<domain::watches::Watch, ApiError> {
    let some = |text: String| Some(text.trim().to_string()).filter(|t| !t.is_empty());
    // One field for both: a number of seconds, or a cron line.
    let schedule = schedule.trim().to_string();
    let (every_s, cron) = match schedule.trim_end_matches('s').trim().parse::<u64>() {
        Ok(seconds) => (Some(seconds), None),
        Err(_) => (None, some(schedule)),
    };
    let request = domain::watches::WatchRequest {
        every_s,
        cron,
        metric: some(metric),
        config: some(config),
        webhook: some(webhook),
        max_failures: None,
    };
    let through = leptos::prelude::use_context::<http::request::Parts>().and_then(|parts| {
        let get = |name: &str| parts.headers.get(name).and_then(|v| v.to_str().ok());
        domain::watches::asked_origin(get("host"), get("x-forwarded-proto"))
    });
    crate::backend::call(
        move |notebook, actor| async move { notebook.watch_step(&actor, step_id, request, through).await },
    )
    .await
}

#[server]
pub async fn stop_watch(id: i64) -> Result<(), ApiError> {
    crate::backend::call(move |notebook, actor| async move { notebook.delete_watch(&actor, id).await }).await
}

/// The form, for those who may run the step: which metric, which
/// configuration of a sweep, how often, where to tell.
#[component]
pub fn WatchForm(step_id: i64, configs: Vec<String>) -> impl IntoView {
    let watch = ServerAction::<WatchStepForm>::new();
    let config = (!configs.is_empty()).then(|| {
        let options =
            configs.into_iter().map(|c| view! { <option value=c.clone()>{c.clone()}</option> }).collect_view();
        view! { <label>"Configuration" <select name="config" required>{options}</select></label> }
    });
    view! {
        <details class="watch-form inline-form" id=format!("watch-{step_id}")>
            <summary class="button quiet">"Watch…"</summary>
            <ActionForm action=watch attr:class="stacked">
                <input type="hidden" name="step_id" value=step_id/>
                <p class="muted hint">"Runs this step on a schedule, as you, while it is the version you see now; \
                    an edit by anyone else stops it. Its runs are marked and join no hypothesis unless it asks for them."</p>
                <div class="row">
                    <label>"Metric" <input name="metric" value="output_throughput" list="hypothesis-metrics" required/></label>
                    {config}
                    <label>"Every" <input name="schedule" required placeholder="3600 (seconds) or 0 3 * * 1-5 (cron, UTC)"/></label>
                </div>
                <label>"Webhook " <span class="muted">"(optional; told of each change, e.g. a Slack incoming webhook)"</span>
                    <input name="webhook" type="url" maxlength="2000" placeholder="https://hooks.slack.com/services/…"/>
                </label>
                <crate::components::ActionError action=watch/>
                <div class="form-actions"><button type="submit" class="primary">"Watch"</button></div>
            </ActionForm>
        </details>
    }
}

/// "Stop" on a watch: it runs no more, at once.
#[component]
pub fn StopWatch(id: i64) -> impl IntoView {
    let stop = ServerAction::<StopWatch>::new();
    view! {
        <ActionForm action=stop attr:class="inline">
            <input type="hidden" name="id" value=id/>
            <button type="submit" class="quiet">"Stop"</button>
            <crate::components::ActionError action=stop/>
        </ActionForm>
    }
}
