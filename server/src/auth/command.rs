//! `sleuth user …` and `sleuth token …`: accounts from a shell, on the same data
//! store a running server uses (SQLite in WAL mode takes both; so does Postgres).

use super::Auth;
use crate::cli::{DataArg, TokenCommand, UserCommand};
use crate::db::{Database, Store};
use crate::error::{Context, Result};
use std::io::BufRead;

async fn open(data: &DataArg) -> Result<Auth> {
    let database = Database::from_flag(data.database.as_deref(), &data.data).context("--database")?;
    let store = Store::open(&database).await.context("opening the store")?;
    Ok(Auth::new(store, false, false))
}

/// One line of standard input, without its line end.
fn password_from_stdin() -> Result<String> {
    let mut password = String::new();
    std::io::stdin().lock().read_line(&mut password).context("reading the password from stdin")?;
    Ok(password.trim_end_matches(['\n', '\r']).to_string())
}

pub async fn user(command: UserCommand) -> Result<()> {
    let (auth, done) = match command {
        UserCommand::Add { name, admin, password_stdin: _, data } => {
            let password = password_from_stdin()?;
            let auth = open(&data).await?;
            let done = auth.add_user(name.trim(), &password, admin).await.map(|account| {
                println!("added {}{}", account.user.name, if account.user.admin { " (admin)" } else { "" })
            });
            (auth, done)
        }
        UserCommand::List { data } => {
            let auth = open(&data).await?;
            let done = auth.users().await.map(|users| {
                for user in users {
                    println!("{}{}", user.name, if user.admin { " (admin)" } else { "" });
                }
            });
            (auth, done)
        }
        UserCommand::Password { name, password_stdin: _, data } => {
            let password = password_from_stdin()?;
            let auth = open(&data).await?;
            let done = auth.set_password(name.trim(), &password).await.map(|()| {
                println!("password of {} changed; their sessions ended", name.trim());
            });
            (auth, done)
        }
        UserCommand::Remove { name, data } => {
            let auth = open(&data).await?;
            let done = auth.remove_user(name.trim()).await.map(|()| println!("removed {}", name.trim()));
            (auth, done)
        }
    };
    auth.store().close().await;
    done
}

pub async fn token(command: TokenCommand) -> Result<()> {
    match command {
        TokenCommand::Create { user, label, data } => {
            let auth = open(&data).await?;
            let created = auth.create_token(&user, &label).await?;
            // The token alone on stdout, so `TOKEN=$(sleuth token create …)` works.
            println!("{}", created.token);
            eprintln!("API token {:?} for {user}: send it as `Authorization: Bearer …`; it is not shown again.", label);
            auth.store().close().await;
            Ok(())
        }
    }
}
