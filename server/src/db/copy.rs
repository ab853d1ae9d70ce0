//! Copying a SQLite store into an empty PostgreSQL one (`sleuth migrate`,
//! `crate::migrate` drives it). The two schemas keep the same tables, columns
//! and kinds of values (see `migrations/postgres/0001_schema.sql`), so the copy
//! is generic: the target's catalog says which tables to copy, in which order
//! (referenced tables first), which columns each has and of which type, and
//! which ids are identities whose sequences must continue after the copied
//! ones. Everything goes in one transaction: a failed copy leaves the target
//! as empty as it was.

use super::{Backend, Store, StoreResult};
use sqlx::{Any, Row, Transaction};
use std::collections::{BTreeMap, BTreeSet};

/// Tables that are not copied: the migrations' own, what lives only while a
/// server does (replica leases, sign-in failures), run output and logs, which SQLite
/// keeps in files (`crate::migrate` copies those), and the search index
/// (`search_*`: FTS5's tables have no PostgreSQL twin; the new server builds it).
const NOT_COPIED: [&str; 5] = ["_sqlx_migrations", "replicas", "sign_in_failures", "run_output", "log_output"];

fn copied(table: &str) -> bool {
    !NOT_COPIED.contains(&table) && !table.starts_with("search_")
}
/// Rows per INSERT (PostgreSQL takes at most 65 535 parameters a statement).
const ROWS_PER_INSERT: usize = 200;

#[derive(Debug, thiserror::Error)]
pub enum CopyError {
    #[error("{0}")]
    Refused(String),
    #[error(transparent)]
    Store(#[from] super::StoreError),
}

impl From<sqlx::Error> for CopyError {
    fn from(e: sqlx::Error) -> Self {
        CopyError::Store(e.into())
    }
}

struct Column {
    name: String,
    kind: String,
    /// `GENERATED ALWAYS AS IDENTITY`: inserting it needs OVERRIDING SYSTEM VALUE.
    always: bool,
    identity: bool,
}

struct Table {
    name: String,
    columns: Vec<Column>,
    primary_key: Vec<String>,
    /// Columns that reference this same table (a comment's parent, a host's
    /// jump host): copied as NULL, then set once every row is there.
    self_references: Vec<String>,
}

enum Value {
    Int(Option<i64>),
    Text(Option<String>),
    Float(Option<f64>),
    Bytes(Option<Vec<u8>>),
}

fn quoted(name: &str) -> String {
    format!("\"{}\"", name.replace('"', "\"\""))
}

/// An open copy into a PostgreSQL store; nothing is visible there until
/// [`Copy::commit`].
pub struct Copy {
    tx: Transaction<'static, Any>,
}

impl Store {
    /// Starts copying into `self`, which must be PostgreSQL and hold no data.
    pub async fn begin_copy(&self) -> Result<Copy, CopyError> {
        if self.backend != Backend::Postgres {
            return Err(CopyError::Refused("the target of a copy is a PostgreSQL database".into()));
        }
        let (investigations, users, hosts, audit): (i64, i64, i64, i64) = sqlx::query_as(
            "SELECT (SELECT COUNT(*) FROM investigations), (SELECT COUNT(*) FROM users),
                    (SELECT COUNT(*) FROM hosts), (SELECT COUNT(*) FROM audit_log)",
        )
        .fetch_one(&self.pool)
        .await?;
        if investigations + users + hosts + audit > 0 {
            return Err(CopyError::Refused(format!(
                "the target already holds data ({investigations} investigations, {users} users, {hosts} hosts, \
                 {audit} audit entries); migrate into an empty database"
            )));
        }
        Ok(Copy { tx: self.pool.begin().await? })
    }
}

impl Copy {
    /// The target's tables in an order that inserts referenced rows first.
    async fn tables(&mut self) -> StoreResult<Vec<Table>> {
        let columns = sqlx::query(
            "SELECT table_name::text, column_name::text, data_type::text, is_identity::text,
                    COALESCE(identity_generation::text, '')
             FROM information_schema.columns WHERE table_schema = current_schema()
             ORDER BY table_name, ordinal_position",
        )
        .fetch_all(&mut *self.tx)
        .await?;
        let mut tables: BTreeMap<String, Table> = BTreeMap::new();
        for row in columns {
            let table: String = row.try_get(0)?;
            if !copied(&table) {
                continue;
            }
            let entry = tables.entry(table.clone()).or_insert_with(|| Table {
                name: table,
                columns: Vec::new(),
                primary_key: Vec::new(),
                self_references: Vec::new(),
            });
            let identity: String = row.try_get(3)?;
            let generation: String = row.try_get(4)?;
            entry.columns.push(Column {
                name: row.try_get(1)?,
                kind: row.try_get(2)?,
                always: generation == "ALWAYS",
                identity: identity == "YES",
            });
        }
        let keys = sqlx::query(
            "SELECT kcu.table_name::text, kcu.column_name::text
             FROM information_schema.table_constraints tc
             JOIN information_schema.key_column_usage kcu
               ON kcu.constraint_name = tc.constraint_name AND kcu.table_schema = tc.table_schema
             WHERE tc.constraint_type = 'PRIMARY KEY' AND tc.table_schema = current_schema()
             ORDER BY kcu.table_name, kcu.ordinal_position",
        )
        .fetch_all(&mut *self.tx)
        .await?;
        for row in keys {
            let table: String = row.try_get(0)?;
            if let Some(t) = tables.get_mut(&table) {
                t.primary_key.push(row.try_get(1)?);
            }
        }
        let references = sqlx::query(
            "SELECT kcu.table_name::text, kcu.column_name::text, ccu.table_name::text
             FROM information_schema.referential_constraints rc
             JOIN information_schema.key_column_usage kcu
               ON kcu.constraint_name = rc.constraint_name AND kcu.constraint_schema = rc.constraint_schema
             JOIN information_schema.constraint_column_usage ccu
               ON ccu.constraint_name = rc.unique_constraint_name AND ccu.constraint_schema = rc.unique_constraint_schema
             WHERE kcu.table_schema = current_schema()",
        )
        .fetch_all(&mut *self.tx)
        .await?;
        let mut needs: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
        for row in references {
            let (table, column, referenced): (String, String, String) =
                (row.try_get(0)?, row.try_get(1)?, row.try_get(2)?);
            if table == referenced {
                if let Some(t) = tables.get_mut(&table) {
                    t.self_references.push(column);
                }
            } else if tables.contains_key(&referenced) {
                needs.entry(table).or_default().insert(referenced);
            }
        }
        // Kahn's order; a cycle between tables (none today) would leave tables
        // out, which the row counts after the copy would show.
        let mut ordered = Vec::new();
        let mut done: BTreeSet<String> = BTreeSet::new();
        while done.len() < tables.len() {
            let ready: Vec<String> = tables
                .keys()
                .filter(|t| !done.contains(*t))
                .filter(|t| needs.get(*t).is_none_or(|n| n.iter().all(|r| done.contains(r))))
                .cloned()
                .collect();
            if ready.is_empty() {
                break;
            }
            done.extend(ready.iter().cloned());
            ordered.extend(ready);
        }
        Ok(ordered.into_iter().filter_map(|name| tables.remove(&name)).collect())
    }

    /// Copies every row of every table from `source` (SQLite); calls `progress`
    /// with each table's name and row count as it is done.
    pub async fn rows_from(&mut self, source: &Store, mut progress: impl FnMut(&str, u64)) -> Result<(), CopyError> {
        if source.backend != Backend::Sqlite {
            return Err(CopyError::Refused("the source of a copy is a SQLite data dir".into()));
        }
        for table in self.tables().await? {
            let n = self.copy_table(source, &table).await?;
            progress(&table.name, n);
        }
        Ok(())
    }

    async fn copy_table(&mut self, source: &Store, table: &Table) -> Result<u64, CopyError> {
        // A column the source has and the target lacks would be lost: refuse.
        let present: Vec<(String,)> =
            sqlx::query_as("SELECT name FROM pragma_table_info($1)").bind(&table.name).fetch_all(&source.pool).await?;
        let missing: Vec<&str> = present
            .iter()
            .map(|(name,)| name.as_str())
            .filter(|name| !table.columns.iter().any(|c| c.name == *name))
            .collect();
        if !missing.is_empty() {
            return Err(CopyError::Refused(format!(
                "the target's table {} has no column {} (is it from an older Sleuth?)",
                table.name,
                missing.join(", ")
            )));
        }
        let select: Vec<String> = table.columns.iter().map(|c| quoted(&c.name)).collect();
        let order = if table.primary_key.is_empty() {
            "rowid".to_string()
        } else {
            table.primary_key.iter().map(|c| quoted(c)).collect::<Vec<_>>().join(", ")
        };
        let query = format!("SELECT {} FROM {} ORDER BY {order}", select.join(", "), quoted(&table.name));
        let rows = sqlx::query(sqlx::AssertSqlSafe(query)).fetch_all(&source.pool).await.map_err(|e| {
            CopyError::Refused(format!(
                "cannot read table {} of the SQLite store ({e}); is it from this version of Sleuth?",
                table.name
            ))
        })?;
        let mut values = Vec::with_capacity(rows.len());
        for row in &rows {
            let mut row_values = Vec::with_capacity(table.columns.len());
            for (i, column) in table.columns.iter().enumerate() {
                let value = match column.kind.as_str() {
                    "bigint" | "integer" | "smallint" => Value::Int(row.try_get(i)?),
                    "double precision" | "real" => Value::Float(row.try_get(i)?),
                    "bytea" => Value::Bytes(row.try_get(i)?),
                    _ => Value::Text(row.try_get(i)?),
                };
                // Self references come later, once every row they may name is in.
                let value = if table.self_references.contains(&column.name) {
                    match value {
                        Value::Int(_) => Value::Int(None),
                        _ => Value::Text(None),
                    }
                } else {
                    value
                };
                row_values.push(value);
            }
            values.push(row_values);
        }
        let columns: Vec<String> = table.columns.iter().map(|c| quoted(&c.name)).collect();
        let overriding = if table.columns.iter().any(|c| c.always) { " OVERRIDING SYSTEM VALUE" } else { "" };
        for batch in values.chunks(ROWS_PER_INSERT) {
            let mut sql = format!("INSERT INTO {} ({}){overriding} VALUES ", quoted(&table.name), columns.join(", "));
            let width = table.columns.len();
            for r in 0..batch.len() {
                let slots: Vec<String> = (1..=width).map(|c| format!("${}", r * width + c)).collect();
                sql.push_str(&format!("{}({})", if r == 0 { "" } else { ", " }, slots.join(", ")));
            }
            let mut insert = sqlx::query(sqlx::AssertSqlSafe(sql));
            for row in batch {
                for value in row {
                    insert = match value {
                        Value::Int(v) => insert.bind(*v),
                        Value::Text(v) => insert.bind(v.clone()),
                        Value::Float(v) => insert.bind(super::float::Float(*v)),
                        Value::Bytes(v) => insert.bind(v.clone()),
                    };
                }
            }
            insert.execute(&mut *self.tx).await?;
        }
        self.set_self_references(source, table).await?;
        for column in table.columns.iter().filter(|c| c.identity) {
            // The next id after the copied ones (1 for an empty table).
            let sql = format!(
                "SELECT setval(pg_get_serial_sequence($1, $2), COALESCE((SELECT MAX({c}) FROM {t}), 0) + 1, false)",
                c = quoted(&column.name),
                t = quoted(&table.name)
            );
            sqlx::query(sqlx::AssertSqlSafe(sql)).bind(&table.name).bind(&column.name).execute(&mut *self.tx).await?;
        }
        Ok(rows.len() as u64)
    }

    /// Sets the self-referencing columns copied as NULL (text or integer keys).
    async fn set_self_references(&mut self, source: &Store, table: &Table) -> Result<(), CopyError> {
        if table.self_references.is_empty() {
            return Ok(());
        }
        let [key] = table.primary_key.as_slice() else {
            return Err(CopyError::Refused(format!("{} refers to itself without a one-column key", table.name)));
        };
        let key_kind = table.columns.iter().find(|c| &c.name == key).map(|c| c.kind.clone()).unwrap_or_default();
        for column in &table.self_references {
            let kind = table.columns.iter().find(|c| &c.name == column).map(|c| c.kind.clone()).unwrap_or_default();
            let query = format!(
                "SELECT {k}, {c} FROM {t} WHERE {c} IS NOT NULL",
                k = quoted(key),
                c = quoted(column),
                t = quoted(&table.name)
            );
            let rows = sqlx::query(sqlx::AssertSqlSafe(query)).fetch_all(&source.pool).await?;
            let update =
                format!("UPDATE {} SET {} = $1 WHERE {} = $2", quoted(&table.name), quoted(column), quoted(key));
            for row in rows {
                let mut query = sqlx::query(sqlx::AssertSqlSafe(update.clone()));
                query = if kind == "bigint" {
                    query.bind(row.try_get::<i64, _>(1)?)
                } else {
                    query.bind(row.try_get::<String, _>(1)?)
                };
                query = if key_kind == "bigint" {
                    query.bind(row.try_get::<i64, _>(0)?)
                } else {
                    query.bind(row.try_get::<String, _>(0)?)
                };
                query.execute(&mut *self.tx).await?;
            }
        }
        Ok(())
    }

    /// One block of a run's output or log (see `db::output`).
    pub async fn output_block(
        &mut self,
        key: super::OutputKey,
        start: u64,
        data: &[u8],
        chunks: &[u8],
    ) -> StoreResult<()> {
        let offset = |n: u64| i64::try_from(n).unwrap_or(i64::MAX);
        let (table, column, id) = key.table();
        let sql = format!("INSERT INTO {table} ({column}, start, stop, data, chunks) VALUES ($1, $2, $3, $4, $5)");
        sqlx::query(sqlx::AssertSqlSafe(sql))
            .bind(id)
            .bind(offset(start))
            .bind(offset(start + data.len() as u64))
            .bind(data)
            .bind(chunks)
            .execute(&mut *self.tx)
            .await?;
        Ok(())
    }

    pub async fn commit(self) -> StoreResult<()> {
        Ok(self.tx.commit().await?)
    }
}

impl Store {
    /// Every run's id, for copying their output.
    pub async fn run_ids(&self) -> StoreResult<Vec<i64>> {
        let rows: Vec<(i64,)> = sqlx::query_as("SELECT id FROM runs ORDER BY id").fetch_all(&self.pool).await?;
        Ok(rows.into_iter().map(|(id,)| id).collect())
    }

    /// Every log's id (server logs, artifacts), for copying their bytes.
    pub async fn log_ids(&self) -> StoreResult<Vec<i64>> {
        let rows: Vec<(i64,)> = sqlx::query_as("SELECT id FROM run_logs ORDER BY id").fetch_all(&self.pool).await?;
        Ok(rows.into_iter().map(|(id,)| id).collect())
    }

    /// SQLite only: a consistent copy of the whole database into a new file,
    /// taken while others read and write (`VACUUM INTO`).
    pub async fn vacuum_into(&self, file: &std::path::Path) -> StoreResult<()> {
        sqlx::query("VACUUM INTO $1").bind(file.display().to_string()).execute(&self.pool).await?;
        Ok(())
    }

    /// SQLite's `PRAGMA integrity_check`: `ok`, or what is wrong.
    pub async fn integrity(&self) -> StoreResult<String> {
        let rows: Vec<(String,)> = sqlx::query_as("PRAGMA integrity_check").fetch_all(&self.pool).await?;
        Ok(rows.into_iter().map(|(line,)| line).collect::<Vec<_>>().join("\n"))
    }

    /// Rows per table (those a copy copies), to compare a copy with its source.
    pub async fn row_counts(&self) -> StoreResult<BTreeMap<String, i64>> {
        let tables: Vec<(String,)> = match self.backend {
            Backend::Sqlite => {
                sqlx::query_as("SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%'")
                    .fetch_all(&self.pool)
                    .await?
            }
            Backend::Postgres => {
                sqlx::query_as(
                    "SELECT table_name::text FROM information_schema.tables
                     WHERE table_schema = current_schema() AND table_type = 'BASE TABLE'",
                )
                .fetch_all(&self.pool)
                .await?
            }
        };
        let mut counts = BTreeMap::new();
        for (table,) in tables.into_iter().filter(|(t,)| copied(t)) {
            let (n,): (i64,) = sqlx::query_as(sqlx::AssertSqlSafe(format!("SELECT COUNT(*) FROM {}", quoted(&table))))
                .fetch_one(&self.pool)
                .await?;
            counts.insert(table, n);
        }
        Ok(counts)
    }
}
