//! `ito-find`: see `ito-find --help` and `docs/find.md`.

fn main() -> std::process::ExitCode {
    ito_find::cli::main()
}
