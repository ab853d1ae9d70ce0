// `sqlx::migrate!` embeds the migrations at compile time; on stable Rust it
// cannot tell cargo to rebuild when they change, so this does.
fn main() {
    println!("cargo:rerun-if-changed=migrations");
}
