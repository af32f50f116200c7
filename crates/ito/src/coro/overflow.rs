//! Stack overflow reports: a `SIGSEGV`/`SIGBUS` handler, run on an alternate signal stack,
//! that recognises a fault in the running coroutine's guard page, names the coroutine and
//! aborts, as Rust's runtime does for a thread's guard page.
//!
//! The handler is installed once, in front of whatever handler was there (Rust's own, which
//! reports thread overflows); every fault it does not recognise goes to that previous handler,
//! or to the default action when there was none.

use std::cell::Cell;
use std::mem::MaybeUninit;
use std::ptr;
use std::sync::OnceLock;

/// What the fault handler needs to know about the coroutine running on this thread.
#[derive(Clone, Copy)]
pub(crate) struct Running {
    /// The running coroutine's guard page, `[low, high)`; `high` is its stack's lowest usable
    /// address.
    pub(crate) guard: (usize, usize),
    /// One past its stack's highest address (where the stack starts: it grows down).
    #[cfg(test)]
    pub(crate) base: usize,
    /// Its name, valid while it runs (the coroutine owns it).
    pub(crate) name: *const str,
}

thread_local! {
    /// The coroutine running on this thread, if any. A `const` thread-local of a `Copy` type
    /// without a destructor is a plain TLS slot: reading it in a signal handler is safe.
    static RUNNING: Cell<Option<Running>> = const { Cell::new(None) };
    /// Whether this thread has been given an alternate signal stack (or had one).
    static ALT_STACK_CHECKED: Cell<bool> = const { Cell::new(false) };
}

/// Marks `running` as the coroutine on this thread's stack and returns what it replaces, to be
/// given back to [`set_running`] when the switch returns.
pub(crate) fn set_running(running: Option<Running>) -> Option<Running> {
    RUNNING.with(|r| r.replace(running))
}

/// The usable range `[low, base)` of the stack of the coroutine running on this thread, or
/// `None` on a thread's own stack. A check for stack room (before running a task inline) must
/// use this range inside a coroutine, not the thread's.
#[cfg(test)]
pub(crate) fn running_stack() -> Option<std::ops::Range<usize>> {
    RUNNING.with(Cell::get).map(|r| r.guard.1..r.base)
}

/// The handlers that were installed before ours, for `SIGSEGV` and `SIGBUS`.
struct Previous {
    segv: libc::sigaction,
    bus: libc::sigaction,
}

// SAFETY: `sigaction` is plain data (a function address, flags and a signal mask); it is written
// once, before our handler is installed, and only read afterwards.
unsafe impl Sync for Previous {}
// SAFETY: as above.
unsafe impl Send for Previous {}

static PREVIOUS: OnceLock<Previous> = OnceLock::new();

/// Makes sure overflows of coroutine stacks on this thread are reported: installs the process's
/// fault handler (once) and gives this thread an alternate signal stack if it has none.
pub(crate) fn prepare_thread() {
    if ALT_STACK_CHECKED.with(|c| c.replace(true)) {
        return;
    }
    PREVIOUS.get_or_init(install);
    ensure_alt_stack();
}

/// Installs `on_fault` for `SIGSEGV` and `SIGBUS` and returns the handlers it replaced.
fn install() -> Previous {
    let mut previous = Previous {
        // SAFETY: an all-zero `sigaction` is a valid value (`SIG_DFL`, no flags, empty mask).
        segv: unsafe { MaybeUninit::zeroed().assume_init() },
        // SAFETY: as above.
        bus: unsafe { MaybeUninit::zeroed().assume_init() },
    };
    for (signal, old) in [
        (libc::SIGSEGV, &mut previous.segv),
        (libc::SIGBUS, &mut previous.bus),
    ] {
        // SAFETY: as above.
        let mut action: libc::sigaction = unsafe { MaybeUninit::zeroed().assume_init() };
        action.sa_sigaction = on_fault as *const () as libc::sighandler_t;
        action.sa_flags = libc::SA_SIGINFO | libc::SA_ONSTACK;
        // SAFETY: `action` is a valid handler description with an empty mask; `old` receives
        // the previous one. The handler reads `PREVIOUS`, which is only set once this returns:
        // a fault before then finds no previous handler and takes the default action.
        unsafe {
            libc::sigemptyset(&mut action.sa_mask);
            libc::sigaction(signal, &action, old);
        }
    }
    previous
}

/// The size of the alternate signal stacks this module maps for threads that have none.
const ALT_STACK_SIZE: usize = 64 * 1024;

/// An alternate signal stack this module gave its thread; unmapped when the thread exits.
struct AltStack {
    addr: *mut libc::c_void,
}

impl Drop for AltStack {
    fn drop(&mut self) {
        let disable = libc::stack_t {
            ss_sp: ptr::null_mut(),
            ss_flags: libc::SS_DISABLE,
            ss_size: ALT_STACK_SIZE,
        };
        // SAFETY: the thread is exiting and not handling a signal; after disabling the
        // alternate stack nothing refers to the mapping, which is ours alone.
        unsafe {
            libc::sigaltstack(&disable, ptr::null_mut());
            libc::munmap(self.addr, ALT_STACK_SIZE);
        }
    }
}

thread_local! {
    static ALT_STACK: Cell<Option<AltStack>> = const { Cell::new(None) };
}

/// Gives this thread an alternate signal stack unless it has one (Rust's runtime gives one to
/// the main thread and to threads it spawns; a thread made elsewhere may have none). Without one
/// the handler could not run after an overflow, and the process would die without the report.
fn ensure_alt_stack() {
    let mut current = MaybeUninit::<libc::stack_t>::uninit();
    // SAFETY: a null new stack only queries; `current` is written by the call on success.
    if unsafe { libc::sigaltstack(ptr::null(), current.as_mut_ptr()) } != 0 {
        return;
    }
    // SAFETY: written by the successful call above.
    let current = unsafe { current.assume_init() };
    if current.ss_flags & libc::SS_DISABLE == 0 {
        return;
    }
    // SAFETY: an anonymous private mapping at an address of the kernel's choosing aliases
    // nothing.
    let addr = unsafe {
        libc::mmap(
            ptr::null_mut(),
            ALT_STACK_SIZE,
            libc::PROT_READ | libc::PROT_WRITE,
            libc::MAP_PRIVATE | libc::MAP_ANONYMOUS,
            -1,
            0,
        )
    };
    if addr == libc::MAP_FAILED {
        return;
    }
    let stack = libc::stack_t {
        ss_sp: addr,
        ss_flags: 0,
        ss_size: ALT_STACK_SIZE,
    };
    // SAFETY: `stack` describes a mapping this thread owns until `AltStack` unmaps it.
    unsafe { libc::sigaltstack(&stack, ptr::null_mut()) };
    ALT_STACK.with(|s| s.set(Some(AltStack { addr })));
}

/// Writes `bytes` to standard error with `write(2)` (async-signal-safe; no allocation, no lock).
fn write_stderr(bytes: &[u8]) {
    // SAFETY: the pointer and length describe a live byte slice.
    unsafe { libc::write(libc::STDERR_FILENO, bytes.as_ptr().cast(), bytes.len()) };
}

/// The fault handler: reports an overflow of the running coroutine's stack, or passes the fault
/// on.
extern "C" fn on_fault(
    signal: libc::c_int,
    info: *mut libc::siginfo_t,
    context: *mut libc::c_void,
) {
    // SAFETY: the kernel passes a valid `siginfo_t` to an `SA_SIGINFO` handler; for SIGSEGV and
    // SIGBUS `si_addr` is the faulting address.
    let addr = unsafe { (*info).si_addr() } as usize;
    if let Some(running) = RUNNING.with(Cell::get) {
        if (running.guard.0..running.guard.1).contains(&addr) {
            // SAFETY: `name` points into the running coroutine, alive while it runs.
            let name = unsafe { &*running.name };
            write_stderr(b"\ncoroutine '");
            write_stderr(name.as_bytes());
            write_stderr(
                b"' has overflowed its stack\nfatal runtime error: stack overflow, aborting\n",
            );
            // SAFETY: `abort` is async-signal-safe.
            unsafe { libc::abort() };
        }
    }
    pass_on(signal, info, context);
}

/// Hands a fault that is not a coroutine overflow to the handler installed before ours.
fn pass_on(signal: libc::c_int, info: *mut libc::siginfo_t, context: *mut libc::c_void) {
    let previous = PREVIOUS.get().map(|p| {
        if signal == libc::SIGBUS {
            p.bus
        } else {
            p.segv
        }
    });
    match previous {
        Some(p) if p.sa_sigaction != libc::SIG_DFL && p.sa_sigaction != libc::SIG_IGN => {
            if p.sa_flags & libc::SA_SIGINFO != 0 {
                // SAFETY: with `SA_SIGINFO` the address is a three-argument handler.
                let handler: extern "C" fn(libc::c_int, *mut libc::siginfo_t, *mut libc::c_void) =
                    unsafe { std::mem::transmute(p.sa_sigaction) };
                handler(signal, info, context);
            } else {
                // SAFETY: without `SA_SIGINFO` the address is a one-argument handler.
                let handler: extern "C" fn(libc::c_int) =
                    unsafe { std::mem::transmute(p.sa_sigaction) };
                handler(signal);
            }
        }
        _ => {
            // No handler before ours: restore the default action and return, so that the
            // faulting instruction runs again and the process dies of the signal as it would
            // have without us.
            // SAFETY: an all-zero `sigaction` is `SIG_DFL` with an empty mask.
            let default: libc::sigaction = unsafe { MaybeUninit::zeroed().assume_init() };
            // SAFETY: `sigaction` is async-signal-safe and `default` is valid.
            unsafe { libc::sigaction(signal, &default, ptr::null_mut()) };
        }
    }
}
