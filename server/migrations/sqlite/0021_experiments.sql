-- Experiments as the field runs them (sweeps, GPU telemetry, derived metrics).

-- A sweep: a command step's runs over every configuration of its matrix, in an
-- order that fights drift. Its runs point at it (runs.sweep_id), each with the
-- configuration it ran (runs.config: JSON of the matrix values, null = unset)
-- and its place in the order (runs.sweep_index, 1-based).
CREATE TABLE sweeps (
    id          INTEGER PRIMARY KEY AUTOINCREMENT,
    step_id     INTEGER NOT NULL REFERENCES steps (id) ON DELETE CASCADE,
    configs     INTEGER NOT NULL,
    repeat      INTEGER NOT NULL,
    warmup      INTEGER NOT NULL,
    run_order   TEXT NOT NULL CHECK (run_order IN ('interleaved', 'shuffled', 'grouped')),
    seed        INTEGER,
    keep_going  INTEGER NOT NULL,
    runs        INTEGER NOT NULL,
    who         TEXT,
    created_at  INTEGER NOT NULL
) STRICT;
CREATE INDEX sweeps_by_step ON sweeps (step_id, id);

ALTER TABLE runs ADD COLUMN config TEXT CHECK (config IS NULL OR json_valid(config));
ALTER TABLE runs ADD COLUMN sweep_id INTEGER REFERENCES sweeps (id) ON DELETE SET NULL;
ALTER TABLE runs ADD COLUMN sweep_index INTEGER;

-- GPU telemetry: whether the run was sampled (its step's setting when queued),
-- the GPUs seen (JSON [{"index","name"}]), notes (JSON array of sentences:
-- no nvidia-smi, a sampler that failed), and the samples.
ALTER TABLE runs ADD COLUMN telemetry INTEGER NOT NULL DEFAULT 1;
ALTER TABLE runs ADD COLUMN telemetry_gpus TEXT CHECK (telemetry_gpus IS NULL OR json_valid(telemetry_gpus));
ALTER TABLE runs ADD COLUMN telemetry_notes TEXT CHECK (telemetry_notes IS NULL OR json_valid(telemetry_notes));
-- The telemetry drawn (SVG), once the run has ended: pages show it without reading every sample.
ALTER TABLE runs ADD COLUMN telemetry_svg TEXT;

CREATE TABLE run_telemetry (
    run_id        INTEGER NOT NULL REFERENCES runs (id) ON DELETE CASCADE,
    gpu           INTEGER NOT NULL,
    t_ms          INTEGER NOT NULL,
    gpu_util      REAL,
    mem_util      REAL,
    mem_used_mib  REAL,
    power_w       REAL,
    sm_clock_mhz  REAL,
    mem_clock_mhz REAL,
    temp_c        REAL,
    pcie_rx_mbs   REAL,
    pcie_tx_mbs   REAL
) STRICT;
CREATE INDEX run_telemetry_by_run ON run_telemetry (run_id, gpu, t_ms);

-- Metrics computed from a run's other measurements by a formula the team
-- writes once per investigation (`hbm_gbps = output_throughput * weights_gb`),
-- with named constants (JSON object of numbers).
CREATE TABLE derived_metrics (
    investigation_id  TEXT NOT NULL REFERENCES investigations (id) ON DELETE CASCADE,
    name              TEXT NOT NULL,
    unit              TEXT NOT NULL,
    formula           TEXT NOT NULL,
    constants         TEXT NOT NULL DEFAULT '{}' CHECK (json_valid(constants)),
    created_at        INTEGER NOT NULL,
    PRIMARY KEY (investigation_id, name)
) STRICT;
