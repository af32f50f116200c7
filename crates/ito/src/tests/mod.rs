//! Loom models of ito's atomic state machines. Run with
//! `RUSTFLAGS="--cfg loom" cargo test -p ito --release --lib loom`.

mod loom_cell;
mod loom_io;
mod loom_join;
mod loom_notify;
mod loom_owners;
mod loom_park;
mod loom_process;
mod loom_stm;
mod loom_sync;
mod loom_task;
mod loom_trace;
