//! Migrations that were edited after a released binary had applied them.
//! sqlx refuses a database whose recorded checksum of a migration differs from
//! the binary's ("previously applied but has been modified"), so a notebook
//! made by that release would not open. Each entry is the checksum a release
//! recorded (SHA-384 of the file as it was, from git) and the statements that
//! bring such a database to the migration as it is now; the recorded checksum
//! is then the current one. `tests/api/upgrade.rs` opens a notebook made by
//! each release to prove them. Never edit a migration that was committed: add one.

use sqlx::AnyPool;

struct Edited {
    /// PostgreSQL's migrations, or SQLite's.
    postgres: bool,
    version: i64,
    /// The commit whose file this checksum is of.
    commit: &'static str,
    released: &'static str,
    catch_up: &'static [&'static str],
}

const SQLITE_SETUP_TOKENS: &str = "CREATE TABLE IF NOT EXISTS setup_tokens (
    token_hash TEXT PRIMARY KEY NOT NULL, created_at INTEGER NOT NULL) STRICT";
const POSTGRES_SETUP_TOKENS: &str = "CREATE TABLE IF NOT EXISTS setup_tokens (
    token_hash TEXT PRIMARY KEY NOT NULL, created_at BIGINT NOT NULL)";
const WAITING_FOR_INDEX: &str =
    "CREATE INDEX IF NOT EXISTS runs_waiting_for_index ON runs (indexed) WHERE indexed <> 1";
/// 0003 as it is: output blocks TOASTed with lz4 (they were EXTERNAL,
/// uncompressed), and the setup links' table (added, dropped, added again).
const POSTGRES_0003: &[&str] = &[
    "ALTER TABLE run_output ALTER COLUMN data SET STORAGE EXTENDED",
    "ALTER TABLE run_output ALTER COLUMN chunks SET STORAGE EXTENDED",
    "DO $$ BEGIN ALTER TABLE run_output ALTER COLUMN data SET COMPRESSION lz4; EXCEPTION WHEN others THEN NULL; END $$",
    POSTGRES_SETUP_TOKENS,
];

const EDITED: &[Edited] = &[
    Edited {
        postgres: false,
        version: 20,
        commit: "6a02b80",
        released: "33338800b5d4135f83e728ed42d2b10073634a14e3fe26a260081c792a54a091303d8ccf3f55973460edf20ec0a5700a",
        catch_up: &[SQLITE_SETUP_TOKENS],
    },
    Edited {
        postgres: false,
        version: 22,
        commit: "5679f8d",
        released: "2660bd823679cc74ce9461f2e6ab7169242c1ab76c05b35ad1cef642ae0d18dad733508d1e2febed1b545b6dd993866f",
        catch_up: &[WAITING_FOR_INDEX],
    },
    Edited {
        postgres: true,
        version: 3,
        commit: "6a02b80",
        released: "2339f5a405e4a1b64eaa57954b08575989c6eae1573960eaf620b30b4347649b07615f62b2161f37877a2b0bfc5dbe48",
        catch_up: POSTGRES_0003,
    },
    Edited {
        postgres: true,
        version: 3,
        commit: "bb05628",
        released: "ab969c14df21ad849446532d939b84a2babac788f972932b263091da9788d97e991168f4c2bb63cc5d063b5b455d9bad",
        catch_up: POSTGRES_0003,
    },
    Edited {
        postgres: true,
        version: 3,
        commit: "29e3093",
        released: "91a6cd580122539b2631b87b303e1483e0b85b9cc5a2553c8992cb90be85571316592d85113f51761f235defdb1b37b4",
        catch_up: POSTGRES_0003,
    },
    Edited {
        postgres: true,
        version: 5,
        commit: "5679f8d",
        released: "b6e9663ca4d2d26c9aadab4baa3b7c9c173b6ea3cad68bd78666744e40740b5e263866eec9e793e876c3731942ecfa26",
        catch_up: &[WAITING_FOR_INDEX],
    },
];

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// Brings the migrations a released binary recorded with an older content
/// to their content now, before the migrator checks them.
pub(super) async fn catch_up(
    pool: &AnyPool,
    postgres: bool,
    migrator: &sqlx::migrate::Migrator,
) -> Result<(), sqlx::Error> {
    for edited in EDITED.iter().filter(|e| e.postgres == postgres) {
        let recorded: Option<(Vec<u8>,)> =
            match sqlx::query_as("SELECT checksum FROM _sqlx_migrations WHERE version = $1 AND success")
                .bind(edited.version)
                .fetch_optional(pool)
                .await
            {
                Ok(recorded) => recorded,
                // A new database: nothing was recorded yet.
                Err(_) => return Ok(()),
            };
        let Some((recorded,)) = recorded else { continue };
        if hex(&recorded) != edited.released {
            continue;
        }
        let Some(now) = migrator.iter().find(|m| m.version == edited.version) else { continue };
        let mut tx = pool.begin().await?;
        for statement in edited.catch_up {
            sqlx::query(sqlx::AssertSqlSafe(*statement)).execute(&mut *tx).await?;
        }
        sqlx::query("UPDATE _sqlx_migrations SET checksum = $1 WHERE version = $2")
            .bind(now.checksum.to_vec())
            .bind(edited.version)
            .execute(&mut *tx)
            .await?;
        tx.commit().await?;
        tracing::warn!(
            version = edited.version,
            commit = edited.commit,
            "migration {} as released in {} brought to its present content",
            edited.version,
            edited.commit
        );
    }
    Ok(())
}
