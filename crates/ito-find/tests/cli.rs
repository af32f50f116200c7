//! The `ito-find` binary: options, output, exit codes, and the hard cases (unreadable
//! directories, link loops, a reader that goes away, deep trees under a small fd limit).

mod common;

use std::fs;
use std::io::{BufRead, BufReader, Read};
use std::os::unix::fs::{PermissionsExt, symlink};
use std::path::Path;
use std::process::Stdio;

use common::{bin, is_root, join_bytes, lines, make, records, run_in, temp};

/// A small tree used by most tests.
fn sample() -> tempfile::TempDir {
    let t = temp();
    make(
        t.path(),
        &[
            "a/b/c/target",
            "a/target",
            "a/Target.TXT",
            "a/notes.md",
            ".hidden/target",
            "d/",
            "d/x.rs",
            "d/y.rs",
            "sp ace/target",
        ],
    );
    symlink("../a", t.path().join("d/link")).unwrap();
    t
}

fn code(o: &std::process::Output) -> i32 {
    o.status.code().expect("exited normally")
}

#[test]
fn finds_every_match_exit_0() {
    let t = sample();
    let o = run_in(t.path(), &["target"]);
    assert_eq!(code(&o), 0);
    assert_eq!(
        lines(&o.stdout),
        [
            "./.hidden/target",
            "./a/b/c/target",
            "./a/target",
            "./sp ace/target"
        ]
    );
    assert!(o.stderr.is_empty());
}

#[test]
fn nothing_found_exit_1() {
    let t = sample();
    let o = run_in(t.path(), &["no-such-name"]);
    assert_eq!(code(&o), 1);
    assert!(o.stdout.is_empty() && o.stderr.is_empty());
}

#[test]
fn missing_path_is_an_error_exit_2_and_the_search_goes_on() {
    let t = sample();
    let o = run_in(t.path(), &["target", "nope", "a"]);
    assert_eq!(code(&o), 2);
    assert_eq!(lines(&o.stdout), ["a/b/c/target", "a/target"]);
    let err = String::from_utf8(o.stderr).unwrap();
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(
        err.starts_with("ito-find: nope: No such file or directory"),
        "{err}"
    );
}

#[test]
fn bad_pattern_and_bad_arguments_are_one_line_exit_2() {
    let t = sample();
    for args in [
        &["-E", "a("][..],
        &["-g", "[ab"],
        &[],
        &["--no-such-flag", "x"],
        &["-t", "q", "x"],
        &["-d", "minus", "x"],
        &["-1", "--max-results", "3", "x"],
    ] {
        let o = run_in(t.path(), args);
        assert_eq!(code(&o), 2, "{args:?}");
        assert!(o.stdout.is_empty(), "{args:?}");
        let err = String::from_utf8(o.stderr).unwrap();
        assert_eq!(err.lines().count(), 1, "{args:?}: {err}");
        assert!(err.starts_with("ito-find: "), "{args:?}: {err}");
    }
    let help = run_in(t.path(), &["--help"]);
    assert_eq!(code(&help), 0);
    assert!(String::from_utf8_lossy(&help.stdout).contains("Exit status"));
}

#[test]
fn print0_separates_with_nul_and_keeps_newlines_in_names() {
    let t = temp();
    fs::create_dir(t.path().join("x\ny")).unwrap();
    fs::write(t.path().join("x\ny/n"), b"").unwrap();
    fs::write(t.path().join("n"), b"").unwrap();
    let o = run_in(t.path(), &["-0", "n"]);
    assert_eq!(code(&o), 0);
    assert_eq!(records(&o.stdout), [b"./n".to_vec(), b"./x\ny/n".to_vec()]);
}

#[test]
fn names_that_are_not_utf8_are_printed_as_bytes() {
    let t = temp();
    let dir = join_bytes(t.path(), b"caf\xe9");
    fs::create_dir(&dir).unwrap();
    fs::write(join_bytes(&dir, b"\xff\xfe.rs"), b"").unwrap();
    let o = run_in(t.path(), &["-g", "*.rs"]);
    assert_eq!(code(&o), 0);
    assert_eq!(o.stdout, b"./caf\xe9/\xff\xfe.rs\n");
}

#[test]
fn max_depth_counts_the_path_as_zero() {
    let t = sample();
    let at = |d: &str| lines(&run_in(t.path(), &["-d", d, "target"]).stdout).len();
    assert_eq!(at("0"), 0);
    assert_eq!(at("1"), 0);
    assert_eq!(at("2"), 3);
    assert_eq!(at("4"), 4);
    // The search path itself is tested at depth 0, as find does.
    let o = run_in(t.path(), &["-d", "0", "a", "a"]);
    assert_eq!(lines(&o.stdout), ["a"]);
}

#[test]
fn type_filters() {
    let t = sample();
    let run = |args: &[&str]| lines(&run_in(t.path(), args).stdout);
    assert_eq!(run(&["-t", "d", "-g", "[ab]"]), ["./a", "./a/b"]);
    assert_eq!(run(&["-t", "f", "-g", "*.rs"]), ["./d/x.rs", "./d/y.rs"]);
    assert_eq!(run(&["-t", "l", "-g", "*"]), ["./d/link"]);
    assert_eq!(run(&["-t", "l,d", "-g", "[dl]*"]), ["./d", "./d/link"]);
    assert!(run(&["-t", "d", "target"]).is_empty());
}

#[test]
fn glob_regex_and_case_folding() {
    let t = sample();
    let run = |args: &[&str]| lines(&run_in(t.path(), args).stdout);
    assert_eq!(run(&["-g", "*.TXT"]), ["./a/Target.TXT"]);
    assert!(run(&["-g", "*.txt"]).is_empty());
    assert_eq!(run(&["-i", "-g", "*.txt"]), ["./a/Target.TXT"]);
    assert_eq!(run(&["-E", r"^[xy]\.rs$"]), ["./d/x.rs", "./d/y.rs"]);
    assert_eq!(run(&["-E", "ote"]), ["./a/notes.md"]);
    assert_eq!(run(&["-i", "target.txt"]), ["./a/Target.TXT"]);
    assert_eq!(run(&["-i", "TARGET"]).len(), 4);
}

#[test]
fn hidden_is_searched_unless_no_hidden() {
    let t = sample();
    let all = lines(&run_in(t.path(), &["target"]).stdout);
    assert!(all.contains(&"./.hidden/target".to_owned()));
    let visible = lines(&run_in(t.path(), &["--no-hidden", "target"]).stdout);
    assert_eq!(visible.len(), all.len() - 1);
    assert!(!visible.iter().any(|l| l.contains(".hidden")));
    // The last of --hidden / --no-hidden wins.
    let back = lines(&run_in(t.path(), &["--no-hidden", "--hidden", "target"]).stdout);
    assert_eq!(back, all);
}

#[test]
fn gitignore_is_respected() {
    let t = temp();
    make(
        t.path(),
        &[
            ".git/config",
            "keep.log",
            "drop.log",
            "build/out.log",
            "src/a.log",
            "src/sub/b.log",
            "src/sub/c.log",
        ],
    );
    fs::write(t.path().join(".gitignore"), "*.log\n!keep.log\n/build\n").unwrap();
    fs::write(t.path().join("src/sub/.gitignore"), "!c.log\n").unwrap();
    let run = |dir: &Path, args: &[&str]| lines(&run_in(dir, args).stdout);
    let all = run(t.path(), &["-g", "*.log"]);
    assert_eq!(all.len(), 6);
    assert_eq!(
        run(t.path(), &["--gitignore", "-g", "*.log"]),
        ["./keep.log", "./src/sub/c.log"]
    );
    assert!(
        run(t.path(), &["--gitignore", "config"]).is_empty(),
        ".git is skipped"
    );
    // Started below the repository root, the root's .gitignore still applies.
    assert_eq!(
        run(&t.path().join("src"), &["--gitignore", "-g", "*.log"]),
        ["./sub/c.log"]
    );
}

#[test]
fn max_results_and_first_print_exactly_that_many() {
    let t = temp();
    for i in 0..300 {
        make(t.path(), &[&format!("d{}/e{}/hit", i % 17, i)]);
    }
    for (args, n) in [
        (&["--first", "hit"][..], 1),
        (&["-1", "hit"], 1),
        (&["--max-results", "7", "hit"], 7),
        (&["--max-results", "1000", "hit"], 300),
        (&["--max-results", "0", "hit"], 0),
    ] {
        let o = run_in(t.path(), args);
        assert_eq!(lines(&o.stdout).len(), n, "{args:?}");
        assert_eq!(code(&o), if n > 0 { 0 } else { 1 }, "{args:?}");
        assert!(o.stderr.is_empty());
    }
}

#[test]
fn sort_prints_in_byte_order() {
    let t = sample();
    let o = run_in(t.path(), &["--sort", "target"]);
    let got = String::from_utf8(o.stdout).unwrap();
    let mut want: Vec<&str> = got.lines().collect();
    want.sort_unstable();
    assert_eq!(got.lines().collect::<Vec<_>>(), want);
    assert_eq!(want.len(), 4);
    let first2 = run_in(t.path(), &["--sort", "--max-results", "2", "target"]);
    assert_eq!(
        String::from_utf8(first2.stdout).unwrap(),
        "./.hidden/target\n./a/b/c/target\n"
    );
}

#[test]
fn paths_can_be_files_links_and_have_trailing_slashes() {
    let t = sample();
    let o = run_in(t.path(), &["target", "a/target", "a/", "d/link"]);
    assert_eq!(
        lines(&o.stdout),
        [
            "a/b/c/target",
            "a/target",
            "a/target",
            "d/link/b/c/target",
            "d/link/target"
        ]
    );
    assert_eq!(code(&o), 0);
}

/// Runs the binary as user `nobody` (root is not stopped by permission bits); `None` if
/// that is not possible here.
fn as_nobody(dir: &Path, args: &[&str]) -> Option<std::process::Output> {
    let o = std::process::Command::new("setpriv")
        .args(["--reuid=65534", "--regid=65534", "--clear-groups"])
        .arg(env!("CARGO_BIN_EXE_ito-find"))
        .args(args)
        .current_dir(dir)
        .output()
        .ok()?;
    // setpriv itself failed, or nobody cannot run the binary (it lives in root's directory).
    if matches!(o.status.code(), Some(126 | 127)) || o.status.code().is_none() {
        return None;
    }
    Some(o)
}

#[test]
fn unreadable_directory_is_reported_and_the_search_goes_on() {
    let t = sample();
    let locked = t.path().join("a/b");
    fs::set_permissions(&locked, fs::Permissions::from_mode(0o000)).unwrap();
    let o = if is_root() {
        fs::set_permissions(t.path(), fs::Permissions::from_mode(0o755)).unwrap();
        match as_nobody(t.path(), &["target"]) {
            Some(o) => o,
            None => {
                eprintln!("note: running as root and cannot run as nobody: assertion skipped");
                return;
            }
        }
    } else {
        run_in(t.path(), &["target"])
    };
    fs::set_permissions(&locked, fs::Permissions::from_mode(0o755)).unwrap();
    let err = String::from_utf8(o.stderr.clone()).unwrap();
    assert_eq!(code(&o), 2, "{err}");
    assert_eq!(
        lines(&o.stdout),
        ["./.hidden/target", "./a/target", "./sp ace/target"]
    );
    assert_eq!(
        err.trim_end(),
        "ito-find: ./a/b: Permission denied (os error 13)"
    );
}

#[test]
fn symlink_loop_with_follow_is_reported_not_followed() {
    let t = temp();
    make(t.path(), &["a/b/target", "a/other/"]);
    symlink("..", t.path().join("a/b/up")).unwrap();
    symlink("../other", t.path().join("a/b/side")).unwrap();
    let o = run_in(t.path(), &["-L", "target"]);
    assert_eq!(code(&o), 2);
    assert_eq!(lines(&o.stdout), ["./a/b/target"]);
    let err = lines(&o.stderr);
    assert_eq!(err.len(), 1, "{err:?}");
    assert!(
        err[0].starts_with("ito-find: ./a/b/up: file system loop"),
        "{err:?}"
    );
    // Without -L the links are not entered, and nothing is wrong.
    let o = run_in(t.path(), &["target"]);
    assert_eq!(code(&o), 0);
    // With -L, -t d sees links to directories; -t l only broken links.
    symlink("nowhere", t.path().join("a/broken")).unwrap();
    let l = lines(&run_in(t.path(), &["-L", "-t", "l", "-g", "*"]).stdout);
    assert_eq!(l, ["./a/broken"]);
    let d = lines(&run_in(t.path(), &["-L", "-t", "d", "side"]).stdout);
    assert_eq!(d, ["./a/b/side"]);
    assert!(run_in(t.path(), &["-t", "d", "side"]).stdout.is_empty());
}

#[test]
fn closed_stdout_ends_quietly() {
    let t = temp();
    let long = "x".repeat(60);
    for i in 0..40 {
        let dir = t.path().join(format!("dir{i}"));
        fs::create_dir(&dir).unwrap();
        for j in 0..100 {
            fs::write(dir.join(format!("{long}{j}.hit")), b"").unwrap();
        }
    }
    let mut child = bin()
        .current_dir(t.path())
        .args(["-g", "*.hit"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut reader = BufReader::new(child.stdout.take().unwrap());
    let mut first = String::new();
    reader.read_line(&mut first).unwrap();
    assert!(first.ends_with(".hit\n"), "{first}");
    drop(reader); // `| head -1`
    let mut err = String::new();
    child
        .stderr
        .take()
        .unwrap()
        .read_to_string(&mut err)
        .unwrap();
    let status = child.wait().unwrap();
    assert_eq!(err, "");
    assert_eq!(status.code(), Some(0));
}

#[test]
fn deep_tree_under_a_small_fd_limit() {
    // 1,200 levels, each with a pending sibling: keeping every parent open would need
    // 1,200 descriptors; the limit is 64.
    let t = temp();
    let mut dir = t.path().to_path_buf();
    for _ in 0..1200 {
        fs::create_dir(dir.join("e")).unwrap();
        fs::write(dir.join("e/leaf"), b"").unwrap();
        dir.push("d");
        fs::create_dir(&dir).unwrap();
    }
    let o = std::process::Command::new("sh")
        .args(["-c", "ulimit -n 64 && exec \"$0\" \"$@\""])
        .arg(env!("CARGO_BIN_EXE_ito-find"))
        .args(["-j", "2", "leaf", "."])
        .current_dir(t.path())
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(code(&o), 0, "{}", err.lines().next().unwrap_or(""));
    assert_eq!(lines(&o.stdout).len(), 1200);
}

#[test]
fn one_file_system_does_not_enter_other_mounts() {
    use std::os::unix::fs::MetadataExt;
    // /dev/shm is a tmpfs mounted inside /dev on most Linux systems.
    let (Ok(dev), Ok(shm)) = (fs::metadata("/dev"), fs::metadata("/dev/shm")) else {
        eprintln!("note: no /dev/shm: skipped");
        return;
    };
    if dev.dev() == shm.dev() {
        eprintln!("note: /dev/shm is not a separate mount here: skipped");
        return;
    }
    let Ok(t) = tempfile::Builder::new()
        .prefix("itofind")
        .tempdir_in("/dev/shm")
    else {
        eprintln!("note: /dev/shm is not writable: skipped");
        return;
    };
    fs::write(t.path().join("ito-find-xdev-probe"), b"").unwrap();
    let name = "ito-find-xdev-probe";
    let inside = run_in(Path::new("/"), &["-d", "4", name, "/dev"]);
    assert_eq!(lines(&inside.stdout).len(), 1);
    let o = run_in(Path::new("/"), &["-x", "-d", "4", name, "/dev"]);
    assert!(o.stdout.is_empty());
    // The mount point itself can still match.
    let mp = run_in(Path::new("/"), &["-x", "-d", "1", "shm", "/dev"]);
    assert_eq!(lines(&mp.stdout), ["/dev/shm"]);
}
