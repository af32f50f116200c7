//! Embeds the commit this binary is built from (`ITO_BENCH_COMMIT`): `git rev-parse --short
//! HEAD`, with `-dirty` when tracked files differ from it, or `unknown` without git. Every
//! record carries it, so that a result names the code that produced it, not the checkout
//! it was later read in.

use std::process::Command;

fn git(args: &[&str]) -> Option<String> {
    let out = Command::new("git").args(args).output().ok()?;
    let text = String::from_utf8(out.stdout).ok()?.trim().to_owned();
    out.status.success().then_some(text)
}

fn main() {
    let commit = match git(&["rev-parse", "--short", "HEAD"]).filter(|c| !c.is_empty()) {
        None => "unknown".to_owned(),
        Some(c) => {
            let dirty = git(&["status", "--porcelain", "--untracked-files=no"])
                .is_some_and(|s| !s.is_empty());
            if dirty { format!("{c}-dirty") } else { c }
        }
    };
    println!("cargo:rustc-env=ITO_BENCH_COMMIT={commit}");
    // A new commit moves HEAD or the branch it names; an edit changes the sources or the index.
    let mut watched = vec!["HEAD".to_owned(), "index".to_owned()];
    watched.extend(git(&["symbolic-ref", "-q", "HEAD"]));
    for path in watched {
        if let Some(p) = git(&["rev-parse", "--git-path", &path]) {
            println!("cargo:rerun-if-changed={p}");
        }
    }
    for dir in [
        "src",
        "build.rs",
        "Cargo.toml",
        "../ito/src",
        "../ito/Cargo.toml",
    ] {
        println!("cargo:rerun-if-changed={dir}");
    }
}
