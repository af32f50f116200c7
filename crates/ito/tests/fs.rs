//! `ito::fs`: every function against a temporary directory, `File`'s read, write and seek
//! round trips, dropped reads and writes that lose nothing and keep the order, errors that
//! come back to the caller.

use std::io::{ErrorKind, SeekFrom};
use std::path::{Path, PathBuf};
use std::pin::pin;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::task::{Context, Waker};

use futures_util::StreamExt;
use futures_util::io::{AsyncReadExt, AsyncSeekExt, AsyncWriteExt};
use ito::fs::{self, File, OpenOptions};

/// A fresh directory under the system's temporary directory, removed when dropped.
struct TempDir(PathBuf);

impl TempDir {
    fn new(name: &str) -> TempDir {
        static NEXT: AtomicUsize = AtomicUsize::new(0);
        let n = NEXT.fetch_add(1, Ordering::Relaxed);
        let dir = std::env::temp_dir().join(format!("ito-fs-{}-{n}-{name}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        TempDir(dir)
    }

    fn path(&self, name: &str) -> PathBuf {
        self.0.join(name)
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// Opens `p` for reading and writing, creating it if it is missing.
async fn open_rw(p: &Path) -> File {
    OpenOptions::new()
        .read(true)
        .write(true)
        .create(true)
        .open(p)
        .await
        .unwrap()
}

fn run<T>(f: impl std::future::Future<Output = T>) -> T {
    ito::block_on(f)
}

/// Polls `fut` once with a waker that does nothing; whether it finished.
fn poll_once_ready<F: std::future::Future>(fut: std::pin::Pin<&mut F>) -> bool {
    fut.poll(&mut Context::from_waker(Waker::noop())).is_ready()
}

/// The handles move between tasks and threads, and `File` can be shared (`&self` methods).
#[test]
fn handles_are_send_and_sync() {
    fn send_sync<T: Send + Sync + Unpin>() {}
    fn send<T: Send + Unpin>() {}
    send_sync::<File>();
    send_sync::<OpenOptions>();
    send_sync::<fs::DirEntry>();
    send::<fs::ReadDir>();
}

#[test]
fn whole_file_functions_round_trip() {
    let dir = TempDir::new("contents");
    let p = dir.path("a");
    run(async {
        fs::write(&p, b"hello").await.unwrap();
        assert_eq!(fs::read(&p).await.unwrap(), b"hello");
        assert_eq!(fs::read_to_string(&p).await.unwrap(), "hello");
        assert_eq!(fs::copy(&p, dir.path("b")).await.unwrap(), 5);
        assert_eq!(std::fs::read(dir.path("b")).unwrap(), b"hello");
        fs::write(&p, [0xff, 0xfe]).await.unwrap();
        let err = fs::read_to_string(&p).await.unwrap_err();
        assert_eq!(err.kind(), ErrorKind::InvalidData);
        let err = fs::read(dir.path("missing")).await.unwrap_err();
        assert_eq!(err.kind(), ErrorKind::NotFound);
    });
}

#[test]
fn directory_functions() {
    let dir = TempDir::new("dirs");
    run(async {
        fs::create_dir(dir.path("d")).await.unwrap();
        let err = fs::create_dir(dir.path("d")).await.unwrap_err();
        assert_eq!(err.kind(), ErrorKind::AlreadyExists);
        let err = fs::create_dir(dir.path("x/y")).await.unwrap_err();
        assert_eq!(err.kind(), ErrorKind::NotFound);
        fs::create_dir_all(dir.path("x/y/z")).await.unwrap();
        fs::create_dir_all(dir.path("x/y/z")).await.unwrap(); // exists: fine
        assert!(dir.path("x/y/z").is_dir());

        // A non-empty directory is refused, and everything in it is still there.
        fs::write(dir.path("x/y/z/f"), b"keep").await.unwrap();
        assert!(fs::remove_dir(dir.path("x")).await.is_err());
        assert_eq!(std::fs::read(dir.path("x/y/z/f")).unwrap(), b"keep");

        fs::remove_dir(dir.path("d")).await.unwrap();
        assert!(!dir.path("d").exists());
        fs::remove_dir_all(dir.path("x")).await.unwrap();
        assert!(!dir.path("x").exists());
        let err = fs::remove_dir_all(dir.path("x")).await.unwrap_err();
        assert_eq!(err.kind(), ErrorKind::NotFound);
    });
}

#[test]
fn name_and_metadata_functions() {
    let dir = TempDir::new("names");
    run(async {
        let a = dir.path("a");
        assert!(!fs::try_exists(&a).await.unwrap());
        fs::write(&a, b"1234").await.unwrap();
        assert!(fs::try_exists(&a).await.unwrap());

        let meta = fs::metadata(&a).await.unwrap();
        assert!(meta.is_file());
        assert_eq!(meta.len(), 4);

        fs::rename(&a, dir.path("b")).await.unwrap();
        assert!(!a.exists());
        fs::hard_link(dir.path("b"), dir.path("c")).await.unwrap();
        assert_eq!(std::fs::read(dir.path("c")).unwrap(), b"1234");

        std::os::unix::fs::symlink("b", dir.path("link")).unwrap();
        assert_eq!(
            fs::read_link(dir.path("link")).await.unwrap(),
            Path::new("b")
        );
        assert!(
            fs::symlink_metadata(dir.path("link"))
                .await
                .unwrap()
                .file_type()
                .is_symlink()
        );
        assert!(fs::metadata(dir.path("link")).await.unwrap().is_file()); // followed
        assert_eq!(
            fs::canonicalize(dir.path("link")).await.unwrap(),
            std::fs::canonicalize(dir.path("b")).unwrap()
        );

        let mut perms = meta.permissions();
        perms.set_readonly(true);
        fs::set_permissions(dir.path("b"), perms).await.unwrap();
        assert!(
            std::fs::metadata(dir.path("b"))
                .unwrap()
                .permissions()
                .readonly()
        );

        fs::remove_file(dir.path("c")).await.unwrap();
        let err = fs::remove_file(dir.path("c")).await.unwrap_err();
        assert_eq!(err.kind(), ErrorKind::NotFound);
        let err = fs::read_link(dir.path("b")).await.unwrap_err(); // not a link
        assert_eq!(err.kind(), ErrorKind::InvalidInput);
    });
}

/// More entries than one batch: each comes exactly once, through `next_entry` and through
/// the `Stream`, and a `next_entry` dropped while its batch is read loses none.
#[test]
fn read_dir_yields_every_entry_once() {
    let dir = TempDir::new("read-dir");
    let n = 100;
    for i in 0..n {
        std::fs::write(dir.path(&format!("f{i:03}")), b"").unwrap();
    }
    let expected: Vec<String> = (0..n).map(|i| format!("f{i:03}")).collect();
    run(async {
        let mut rd = fs::read_dir(&dir.0).await.unwrap();
        let mut names = Vec::new();
        {
            let first = pin!(rd.next_entry());
            // Dropped after starting the first batch, done or not.
            if poll_once_ready(first) {
                // It returned an entry, which this test dropped: count it by name below.
                names.push(None);
            }
        }
        while let Some(e) = rd.next_entry().await.unwrap() {
            assert!(e.file_type().await.unwrap().is_file());
            assert_eq!(e.path(), dir.0.join(e.file_name()));
            names.push(Some(e.file_name().into_string().unwrap()));
        }
        assert!(rd.next_entry().await.unwrap().is_none()); // stays ended
        let dropped = names.iter().filter(|n| n.is_none()).count();
        let mut got: Vec<String> = names.into_iter().flatten().collect();
        got.sort();
        got.dedup();
        assert_eq!(got.len() + dropped, n);

        let streamed: Vec<_> = fs::read_dir(&dir.0).await.unwrap().collect().await;
        let mut streamed: Vec<String> = streamed
            .into_iter()
            .map(|e| e.unwrap().file_name().into_string().unwrap())
            .collect();
        streamed.sort();
        assert_eq!(streamed, expected);
    });
    let err = run(fs::read_dir(dir.path("missing"))).unwrap_err();
    assert_eq!(err.kind(), ErrorKind::NotFound);
}

#[test]
fn file_write_seek_read_round_trip() {
    let dir = TempDir::new("round-trip");
    let p = dir.path("f");
    run(async {
        let mut f = open_rw(&p).await;
        f.write_all(b"0123456789").await.unwrap();
        assert_eq!(f.seek(SeekFrom::Start(2)).await.unwrap(), 2);
        let mut two = [0; 2];
        f.read_exact(&mut two).await.unwrap();
        assert_eq!(&two, b"23");
        assert_eq!(f.seek(SeekFrom::Current(1)).await.unwrap(), 5);
        f.write_all(b"ab").await.unwrap();
        assert_eq!(f.seek(SeekFrom::End(-1)).await.unwrap(), 9);
        let mut rest = Vec::new();
        f.read_to_end(&mut rest).await.unwrap();
        assert_eq!(rest, b"9");
        f.seek(SeekFrom::Start(0)).await.unwrap();
        let mut all = String::new();
        f.read_to_string(&mut all).await.unwrap();
        assert_eq!(all, "01234ab789");
    });
}

/// More than the 2 MiB one job moves: `write_all` loops over short writes, every byte lands.
#[test]
fn large_writes_and_reads_move_every_byte() {
    let dir = TempDir::new("large");
    let p = dir.path("big");
    let data: Vec<u8> = (0..5 * 1024 * 1024 + 7)
        .map(|i| (i * 31 % 251) as u8)
        .collect();
    run(async {
        let mut f = File::create(&p).await.unwrap();
        f.write_all(&data).await.unwrap();
        f.flush().await.unwrap();
        let mut back = Vec::new();
        File::open(&p)
            .await
            .unwrap()
            .read_to_end(&mut back)
            .await
            .unwrap();
        assert!(back == data, "the bytes read differ from the bytes written");
    });
}

/// A read dropped while its job runs loses nothing: the next reads get every byte in order.
/// The bytes it read ahead go back when the file is written or seeked (the position is the
/// caller's, not the OS's).
#[test]
fn a_dropped_read_loses_no_bytes() {
    let dir = TempDir::new("dropped-read");
    let p = dir.path("f");
    std::fs::write(&p, b"abcdef").unwrap();
    let mut saw_pending = false;
    for _ in 0..100 {
        std::fs::write(&p, b"abcdef").unwrap();
        let done = run(async {
            let mut f = open_rw(&p).await;
            let mut six = [0; 6];
            let ready = poll_once_ready(pin!(f.read(&mut six)));
            if ready {
                return false; // the read finished and its bytes went to the dropped call
            }
            let mut two = [0; 2];
            f.read_exact(&mut two).await.unwrap();
            assert_eq!(&two, b"ab");
            // Four bytes are read ahead; the write goes where the caller stands.
            f.write_all(b"XY").await.unwrap();
            f.flush().await.unwrap();
            let mut rest = Vec::new();
            f.read_to_end(&mut rest).await.unwrap();
            assert_eq!(rest, b"ef");
            true
        });
        assert_eq!(
            std::fs::read(&p).unwrap(),
            if done { &b"abXYef"[..] } else { b"abcdef" }
        );
        if done {
            saw_pending = true;
            break;
        }
    }
    assert!(
        saw_pending,
        "the read job never outlived one poll in 100 tries"
    );
}

/// Writes land in the order they were made, whether or not a write's future was dropped
/// while it waited for the one before; a dropped write that had not started writes nothing.
#[test]
fn a_dropped_write_then_a_new_write_keeps_order() {
    let dir = TempDir::new("dropped-write");
    let p = dir.path("f");
    for _ in 0..20 {
        let content = run(async {
            let mut f = File::create(&p).await.unwrap();
            // Starts at once: the bytes are in flight when it returns.
            assert!(poll_once_ready(pin!(f.write(b"first "))));
            // Waits for the first write; dropped, it takes its bytes only if it started.
            let second_taken = poll_once_ready(pin!(f.write(b"second ")));
            f.write_all(b"third").await.unwrap();
            f.flush().await.unwrap();
            (second_taken, std::fs::read(&p).unwrap())
        });
        let expected: &[u8] = if content.0 {
            b"first second third"
        } else {
            b"first third"
        };
        assert_eq!(content.1, expected);
    }
}

/// A write that fails after `poll_write` returned is reported by the next flush, and by
/// nothing else after it: the error is neither lost nor reported twice.
#[test]
fn a_failed_write_is_reported_by_flush() {
    let dir = TempDir::new("write-error");
    let p = dir.path("read-only");
    std::fs::write(&p, b"").unwrap();
    run(async {
        let mut f = File::open(&p).await.unwrap(); // opened for reading only
        assert_eq!(f.write(b"nope").await.unwrap(), 4); // in flight
        assert!(f.flush().await.is_err());
        f.flush().await.unwrap(); // reported once
        let mut g = File::open(&p).await.unwrap();
        g.write_all(b"nope").await.unwrap();
        let err = g.sync_all().await.unwrap_err(); // sync reports it too
        assert_eq!(err.raw_os_error(), Some(9)); // EBADF
    });
}

#[test]
fn open_errors_are_clear() {
    let dir = TempDir::new("open-errors");
    run(async {
        let err = File::open(dir.path("missing")).await.unwrap_err();
        assert_eq!(err.kind(), ErrorKind::NotFound);
        File::create_new(dir.path("new")).await.unwrap();
        let err = File::create_new(dir.path("new")).await.unwrap_err();
        assert_eq!(err.kind(), ErrorKind::AlreadyExists);
        let err = OpenOptions::new().open(dir.path("new")).await.unwrap_err();
        assert_eq!(err.kind(), ErrorKind::InvalidInput);
    });
}

#[test]
fn file_methods() {
    let dir = TempDir::new("file-methods");
    let p = dir.path("f");
    run(async {
        let mut f = OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .mode(0o600)
            .open(&p)
            .await
            .unwrap();
        f.write_all(b"0123456789").await.unwrap();
        f.sync_all().await.unwrap();
        assert_eq!(f.metadata().await.unwrap().len(), 10);
        f.set_len(4).await.unwrap();
        f.sync_data().await.unwrap();
        assert_eq!(std::fs::read(&p).unwrap(), b"0123");
        // set_len does not move the position (10): a write there leaves a hole of zeros.
        f.write_all(b"!").await.unwrap();
        f.flush().await.unwrap();
        assert_eq!(std::fs::read(&p).unwrap(), b"0123\0\0\0\0\0\0!");

        let mut g = f.try_clone().await.unwrap();
        assert_eq!(g.seek(SeekFrom::Current(0)).await.unwrap(), 11); // shared position
        let mut perms = f.metadata().await.unwrap().permissions();
        perms.set_readonly(true);
        f.set_permissions(perms).await.unwrap();
        assert!(std::fs::metadata(&p).unwrap().permissions().readonly());

        f.seek(SeekFrom::Start(1)).await.unwrap();
        let mut std_file = f.into_std().await.unwrap();
        let mut rest = String::new();
        std::io::Read::read_to_string(&mut std_file, &mut rest).unwrap();
        assert_eq!(rest, "123\0\0\0\0\0\0!");

        let mut back = File::from_std(std::fs::File::open(&p).unwrap());
        let mut first = [0; 4];
        back.read_exact(&mut first).await.unwrap();
        assert_eq!(&first, b"0123");
    });
}

/// `into_std` hands back a file positioned where the reader stands, even with bytes read
/// ahead by a dropped read.
#[test]
fn into_std_gives_back_read_ahead_bytes() {
    let dir = TempDir::new("into-std");
    let p = dir.path("f");
    std::fs::write(&p, b"abcdef").unwrap();
    run(async {
        let mut f = File::open(&p).await.unwrap();
        let mut six = [0; 6];
        let ready = poll_once_ready(pin!(f.read(&mut six)));
        let mut one = [0; 1];
        let n = f.read(&mut one).await.unwrap();
        let mut std_file = f.into_std().await.unwrap();
        let mut rest = String::new();
        std::io::Read::read_to_string(&mut std_file, &mut rest).unwrap();
        if ready {
            assert_eq!((n, rest.as_str()), (0, ""));
        } else {
            assert_eq!((n, one[0], rest.as_str()), (1, b'a', "bcdef"));
        }
    });
}

/// The same round trip through tokio's traits (`--features tokio-io`).
#[cfg(feature = "tokio-io")]
#[test]
fn tokio_traits_round_trip() {
    let dir = TempDir::new("tokio-io");
    let p = dir.path("f");
    run(async {
        let mut f = open_rw(&p).await;
        tokio::io::AsyncWriteExt::write_all(&mut f, b"tokio traits")
            .await
            .unwrap();
        tokio::io::AsyncWriteExt::flush(&mut f).await.unwrap();
        assert_eq!(
            tokio::io::AsyncSeekExt::seek(&mut f, SeekFrom::Start(6))
                .await
                .unwrap(),
            6
        );
        let mut rest = String::new();
        tokio::io::AsyncReadExt::read_to_string(&mut f, &mut rest)
            .await
            .unwrap();
        assert_eq!(rest, "traits");
        assert_eq!(
            tokio::io::AsyncSeekExt::stream_position(&mut f)
                .await
                .unwrap(),
            12
        );
    });
}
