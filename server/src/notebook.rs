//! The notebook: every domain's service, and the few operations that need
//! several of them — an investigation as a page shows it (steps, runs,
//! snapshots, measurements, hypotheses, members, comments), its chart, its
//! deletion, what a share link shows, and exports. Each service holds only the
//! handles it uses; this struct holds the services. Who may call what is
//! decided in `crate::guarded`, which gives each call its permit.

use crate::comments::Comments;
use crate::db::Store;
use crate::error::{Context, Result};
use crate::export::Report;
use crate::facts::Facts;
use crate::hosts::Hosts;
use crate::hypotheses::Hypotheses;
use crate::investigations::Investigations;
use crate::members::Members;
use crate::metrics::Metrics;
use crate::output::Outputs;
use crate::policy::{Own, Permit, Read, Shared};
use crate::runs::{Runner, Runs};
use crate::search::Search;
use crate::shares::Shares;
use crate::snippets::Source;
use crate::ssh::Pool;
use crate::steps::Steps;
use domain::error::ApiError;
use domain::metrics::Overview;
use domain::model::SharedView;
use domain::model::{Investigation, Step, StepWindow};
use domain::search::{Export, ExportFormat};
use std::collections::{HashMap, HashSet};
use std::sync::Arc;

pub struct Notebook {
    store: Store,
    outputs: Outputs,
    pub investigations: Investigations,
    pub steps: Steps,
    pub hosts: Hosts,
    pub facts: Facts,
    pub runs: Runs,
    pub source: Source,
    pub metrics: Metrics,
    pub hypotheses: Hypotheses,
    pub comments: Comments,
    pub members: Members,
    pub shares: Shares,
    pub search: Search,
    pub replays: crate::replays::Replays,
    pub watches: crate::watches::Watches,
    pub patches: crate::patches::Patches,
}

impl Notebook {
    pub fn new(
        store: Store,
        pool: Arc<Pool>,
        runner: Arc<Runner>,
        outputs: Outputs,
        watching: crate::watches::Settings,
    ) -> Self {
        let hosts = Hosts::new(store.clone(), pool);
        let runs = Runs::new(store.clone(), runner, hosts.clone(), outputs.clone());
        let source = Source::new(store.clone(), hosts.clone(), outputs.clone());
        let metrics = Metrics::new(store.clone(), outputs.clone());
        let patches = crate::patches::Patches::new(store.clone(), hosts.clone());
        Self {
            investigations: Investigations::new(store.clone()),
            steps: Steps::new(
                store.clone(),
                hosts.clone(),
                source.clone(),
                metrics.clone(),
                runs.clone(),
                patches.clone(),
            ),
            facts: Facts::new(store.clone(), hosts.clone()),
            hypotheses: Hypotheses::new(store.clone()),
            comments: Comments::new(store.clone()),
            members: Members::new(store.clone()),
            shares: Shares::new(store.clone()),
            search: Search::new(store.clone(), outputs.clone()),
            replays: crate::replays::Replays::new(store.clone()),
            watches: crate::watches::Watches::new(store.clone(), watching),
            patches,
            hosts,
            runs,
            source,
            metrics,
            outputs,
            store,
        }
    }

    /// The whole investigation (`window` `None`, as the API answers), or as a
    /// page shows it: only the steps `window` shows are rendered and carry runs'
    /// output, snapshots, searches and comments; `outline` lists every step; of
    /// a step's runs only the one shown carries its numbers, artifacts and
    /// reports. What a page costs then follows what it shows, not what the
    /// runs printed.
    pub async fn investigation(&self, permit: &Permit<Read>, window: Option<&StepWindow>) -> Result<Investigation> {
        let id = permit.investigation();
        if !crate::ids::is_investigation_id(id) {
            return Err(crate::investigations::not_found(id).into());
        }
        let summary = self.investigations.summary(permit).await?;
        let mut steps =
            self.store.steps(id).await?.into_iter().map(crate::steps::unrendered).collect::<Result<Vec<_>>>()?;
        let count = u32::try_from(steps.len()).unwrap_or(u32::MAX);
        let shown: HashSet<i64> =
            steps.iter().filter(|s| window.is_none_or(|w| w.shows(s.position, count))).map(|s| s.id).collect();
        for step in steps.iter_mut().filter(|s| shown.contains(&s.id)) {
            step.html = crate::steps::render(&step.body);
        }
        // Before the rows: what is kept under them was read after (a write
        // between the two can only cause a miss).
        let versions = self.store.data_versions(id).await?;
        let runs = self.store.runs_of_investigation(id).await?;
        // Read once for the runs, the hypotheses and the chart: a thousand runs
        // carry tens of thousands of numbers.
        let measured = self.store.measurements_of_investigation(id).await?;
        self.runs.attach(permit, &mut steps, runs.clone(), &shown, Some(&measured), window.is_some()).await?;
        let runs_fingerprint = domain::runs::runs_fingerprint(steps.iter().flat_map(|s| s.runs.iter()));
        let mut snapshots = self.store.snapshots_of_investigation(id).await?;
        snapshots.retain(|row| shown.contains(&row.step_id));
        self.source.attach_snapshots(permit, &mut steps, snapshots)?;
        let annotations = self.store.annotations_of_investigation(id).await?;
        let mut annotated: HashMap<i64, Vec<i64>> = HashMap::new();
        for row in &annotations {
            annotated.entry(row.step_id).or_default().push(row.id);
        }
        let shown_annotations = annotations.into_iter().filter(|row| shown.contains(&row.step_id)).collect();
        self.source.attach_annotations(permit, &mut steps, shown_annotations);
        let mut searches = self.store.searches_of_investigation(id).await?;
        searches.retain(|row| shown.contains(&row.step_id));
        self.source.attach_searches(permit, &mut steps, searches)?;
        let hypotheses = self.hypotheses.list(permit, Some((&runs, &measured, versions))).await?;
        let extractors = self.metrics.extractors(permit).await?;
        let derived = self.metrics.derived(permit).await?;
        let measurements = crate::metrics::measurements_of(&measured);
        let overview = crate::metrics::overview::overview(None, None, &steps, &measurements, &hypotheses);
        crate::metrics::profiles::beside_calculators(&mut steps, &measurements);
        let slo = self.metrics.slo(permit).await?;
        let rates = crate::metrics::rates::chart(&steps, slo.as_ref().map(|s| &s.slo));
        let members = self.store.members(id).await?;
        let mut comments = self.comments.of(permit).await?;
        let mut outline = Vec::new();
        if shown.len() < steps.len() {
            let mut commented: HashMap<i64, Vec<i64>> = HashMap::new();
            for c in &comments {
                commented.entry(c.step_id).or_default().push(c.id);
            }
            outline = steps.iter().map(Step::outline).collect();
            for entry in &mut outline {
                entry.annotations = annotated.remove(&entry.id).unwrap_or_default();
                entry.comments = commented.remove(&entry.id).unwrap_or_default();
            }
            comments.retain(|c| shown.contains(&c.step_id));
            steps.retain(|s| shown.contains(&s.id));
        }
        if window.is_some() {
            // A page shows one run of a step in full; the charts above used
            // every run's numbers, and the rest would be copied and dropped
            // unseen (a thousand runs carry ~24 000).
            for step in &mut steps {
                let shown = domain::runs::shown_run(&step.runs).map(|r| r.id);
                for run in step.runs.iter_mut().filter(|r| Some(r.id) != shown) {
                    run.measurements = Vec::new();
                }
            }
        }
        Ok(Investigation {
            outline,
            runs_fingerprint,
            members,
            share_links: Vec::new(),
            replays: Vec::new(),
            replay_of: None,
            watches: self
                .watches
                .rows_of(permit)
                .await?
                .iter()
                .map(crate::watches::rows::view)
                .collect::<Result<_>>()?,
            comments,
            abilities: permit.abilities(),
            hypotheses,
            extractors,
            derived,
            measurements,
            slo,
            rates,
            overview,
            id: summary.id,
            url: summary.url,
            title: summary.title,
            question: summary.question,
            status: summary.status,
            created_at: summary.created_at,
            updated_at: summary.updated_at,
            steps,
        })
    }

    /// What every page's banner says while writes or new runs are refused:
    /// below the free-space floor, or a write refused for a full disk lately.
    pub fn refusing(&self, _: &crate::policy::Anyone) -> Option<String> {
        if let Err(e) = self.runs.runner().room_for_runs() {
            return Some(e.message);
        }
        crate::operations::refused_full_recently().then(crate::operations::full_disk_message)
    }

    /// The server's disk, store errors and connections, for its admins.
    pub fn server_detail(&self, _: &crate::policy::Admin) -> domain::hosts::ServerDetail {
        let floor = self.runs.runner().floor();
        let data_dir = crate::operations::data_dir();
        // This server's own disk where it keeps output (the data dir is the
        // process's: one server in production, several in the tests).
        let space = match &floor {
            Some((_, free, size, _)) => Some((*free, *size)),
            None => data_dir.as_deref().and_then(crate::operations::space),
        };
        let errors = crate::operations::store_errors();
        domain::hosts::ServerDetail {
            data_dir: data_dir.map(|d| d.display().to_string()),
            disk_free_bytes: space.map(|(free, _)| free),
            disk_size_bytes: space.map(|(_, size)| size),
            min_free_bytes: floor.map(|(.., floor)| floor),
            store_errors_full: errors[0],
            store_errors_unavailable: errors[1],
            store_errors_other: errors[2],
            last_full_at: crate::operations::last_full_ms().map(crate::time::timestamp),
            connections: self.hosts.pool().states(),
        }
    }

    /// Changes a host; a new price reprices its finished runs. Returns the host
    /// and the investigations whose runs' costs changed.
    pub async fn patch_host(
        &self,
        admin: &crate::policy::Admin,
        name: &str,
        patch: domain::hosts::HostPatch,
    ) -> Result<(domain::hosts::Host, Vec<String>)> {
        let (host, repriced) = self.hosts.patch(admin, name, patch).await?;
        if !repriced {
            return Ok((host, Vec::new()));
        }
        let changed = crate::metrics::record::reprice(&self.store, name, host.price_per_hour).await?;
        Ok((host, changed))
    }

    /// What `/metrics` shows.
    pub async fn operations(&self, _: &crate::policy::Admin) -> Result<crate::operations::Snapshot> {
        Ok(crate::operations::Snapshot { runs: self.store.runs_by_status().await?, ssh: self.hosts.pool().states() })
    }

    /// See [`crate::db::Store::reachable_now`].
    pub fn store_reachable_now(&self) -> bool {
        self.store.reachable_now()
    }

    pub fn note_store_unreachable(&self) {
        self.store.note_unreachable();
    }

    /// Deletes the investigation, its runs cancelled and their output removed.
    pub async fn delete_investigation(&self, permit: &Permit<Own>) -> Result<()> {
        let id = permit.investigation();
        let runs =
            if crate::ids::is_investigation_id(id) { self.store.runs_of_investigation(id).await? } else { Vec::new() };
        self.runs.forget(&permit.edit(), &runs).await;
        self.investigations.delete(permit).await
    }

    /// The frontier of a sweep step's configurations, judged against the
    /// investigation's SLO.
    pub async fn frontier(
        &self,
        permit: &Permit<Read>,
        step: i64,
        query: &domain::frontier::FrontierQuery,
    ) -> Result<domain::frontier::Frontier> {
        use crate::metrics::frontier::{MAXIMIZE, MINIMIZE, frontier};
        let step = self.steps.get(permit, step).await?;
        let slo = self
            .store
            .slo(permit.investigation())
            .await?
            .and_then(|text| domain::distributions::Slo::parse(&text).ok());
        let pick = |asked: &Option<String>, default: &'static str| {
            asked.as_deref().map(str::trim).filter(|m| !m.is_empty()).unwrap_or(default).to_string()
        };
        let (maximize, minimize) = (pick(&query.maximize, MAXIMIZE), pick(&query.minimize, MINIMIZE));
        let (bounds, _) = crate::metrics::guard_bounds_of(&self.store, permit.investigation()).await?;
        let watch_runs = query.include_watch_runs == Some(true);
        let hosts = crate::facts::links_of_runs(&self.store, &step.runs).await?;
        Ok(frontier(&step, (&maximize, &minimize), slo.as_ref(), &bounds, &hosts, watch_runs)?)
    }

    /// A capture of host facts a run of the permit's investigation started under.
    pub async fn facts_of_run(&self, permit: &Permit<Read>, run: i64) -> Result<Option<domain::hosts::HostFacts>> {
        if self.store.run_investigation(run).await?.as_deref() != Some(permit.investigation()) {
            return Ok(None);
        }
        let Some(row) = self.store.run(run).await? else { return Ok(None) };
        let Some(id) = row.facts_id else { return Ok(None) };
        self.store.facts(id).await?.map(crate::facts::of_row).transpose()
    }

    /// A step's history of a metric, its change points, and what differed
    /// across each.
    pub async fn history(
        &self,
        permit: &Permit<Read>,
        step: i64,
        query: &domain::history::HistoryQuery,
    ) -> Result<domain::history::History> {
        use crate::metrics::history::{history, measured, metric_of};
        // The permit is for the step's investigation (`OwnedBy::Step`); only
        // its runs' values are read, not the runs whole.
        let rows = self.store.history_rows(step, &metric_of(query)).await?;
        let known = match rows.iter().any(|r| r.value.is_some()) {
            true => Vec::new(),
            false => self.store.metrics_of_step(step).await?,
        };
        let (values, configs) = measured(&rows, query, || known)?;
        // Only the runs either side of a change need their facts: read once
        // per capture, for the captures those runs started under.
        let mut facts = std::collections::HashMap::new();
        let series: Vec<f64> = values.iter().map(|m| m.value).collect();
        let changes = domain::history::change_points(&series);
        let wanted: std::collections::BTreeSet<i64> = changes
            .iter()
            .flat_map(|c| [&values[c.index - 1], &values[c.index]])
            .filter_map(|m| m.row.facts_id)
            .collect();
        for id in wanted {
            if let Some(row) = self.store.facts(id).await? {
                facts.insert(id, crate::facts::of_row(row)?);
            }
        }
        let _ = permit;
        Ok(history(step, query, &values, configs, changes, &facts)?)
    }

    /// The investigation's chart of `metric` (default: its main one) by
    /// configuration, against `baseline`; `None` while no metric was measured in two runs.
    pub async fn overview(
        &self,
        permit: &Permit<Read>,
        query: &domain::metrics::OverviewQuery,
    ) -> Result<Option<Overview>> {
        let inv = self.investigation(permit, None).await?;
        let metric = query.metric.as_deref().map(str::trim).filter(|m| !m.is_empty());
        let baseline = query.baseline.as_deref().map(str::trim).filter(|b| !b.is_empty());
        if metric.is_none() && baseline.is_none() {
            return Ok(inv.overview);
        }
        let found =
            crate::metrics::overview::overview(metric, baseline, &inv.steps, &inv.measurements, &inv.hypotheses);
        match (found, metric) {
            (Some(found), _) => {
                if let Some(baseline) = baseline
                    && !found.groups.iter().any(|g| g.label == baseline)
                {
                    let labels: Vec<&str> = found.groups.iter().map(|g| g.label.as_str()).collect();
                    return Err(ApiError::not_found(format!(
                        "No configuration is called {baseline:?}; the groups are: {}.",
                        labels.join(", ")
                    ))
                    .into());
                }
                Ok(Some(found))
            }
            (None, None) => Ok(None),
            (None, Some(metric)) => {
                let measured: Vec<&str> = inv
                    .overview
                    .iter()
                    .flat_map(|o| std::iter::once(&o.metric).chain(&o.metrics))
                    .map(String::as_str)
                    .collect();
                Err(ApiError::not_found(format!(
                    "{metric:?} was not measured in two runs of this investigation{}.",
                    if measured.is_empty() { String::new() } else { format!("; these were: {}", measured.join(", ")) }
                ))
                .into())
            }
        }
    }

    /// What a share link shows: the investigation without the team, and without
    /// hosts if the link hides them.
    pub async fn shared(&self, permit: &Shared, window: Option<&StepWindow>) -> Result<SharedView> {
        let investigation = self.investigation(&permit.read(), window).await?;
        let investigation = self.shares.for_outsiders(permit, investigation).await?;
        let link = permit.link();
        Ok(SharedView {
            investigation,
            expires_at: link.expires_at.map(crate::time::timestamp),
            hide_hosts: permit.hide_hosts(),
            shared_by: link.created_by.clone(),
        })
    }

    /// The investigation as a file, for a reader (audited).
    pub async fn export(&self, permit: &Permit<Read>, format: ExportFormat, comments: bool) -> Result<Export> {
        let by = &permit.actor().name;
        let export = async {
            let investigation = self.investigation(permit, None).await?;
            let mut report =
                Report::gather(investigation, &self.store, &self.outputs, comments, format!("Exported by {by}")).await;
            if format == ExportFormat::Zip {
                report.attach(&self.store, &self.outputs, crate::export::ZIP_FILES_BUDGET).await;
                // What a replay here or on another Sleuth reads back.
                report.with_manifest(&self.store).await?;
            }
            crate::export::render(&report, format)
        }
        .await;
        let (store, id) = (&self.store, permit.investigation());
        crate::export::audited(store, by.clone(), "investigation.export", id, comments, export).await
    }

    /// A share link's investigation as a file, hidden as the link hides it
    /// (its output excerpts too), and audited.
    pub async fn export_shared(&self, permit: &Shared, format: ExportFormat) -> Result<Export> {
        let export = async {
            let mut investigation = self.investigation(&permit.read(), None).await?;
            crate::shares::without_team(&mut investigation);
            let provenance = "Shared through a Sleuth link".to_string();
            let mut report = Report::gather(investigation, &self.store, &self.outputs, false, provenance).await;
            // The files the link serves go in its zip too; a link that hides hosts serves none.
            if format == ExportFormat::Zip && !permit.hide_hosts() {
                report.attach(&self.store, &self.outputs, crate::export::ZIP_FILES_BUDGET).await;
            }
            // One JSON of the investigation and its excerpts, so hosts and people go from both alike.
            let mut value = serde_json::to_value(report.parts()).context("a shared report as JSON")?;
            self.shares.hide(permit, &mut value).await?;
            let report = report.with_parts(serde_json::from_value(value).context("a shared report from JSON")?);
            crate::export::render(&report, format)
        }
        .await;
        let who = format!("share link {}", permit.link().label);
        crate::export::audited(&self.store, who, "share.export", permit.investigation(), false, export).await
    }
}
