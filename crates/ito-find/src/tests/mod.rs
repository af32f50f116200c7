//! Loom models of the walk's atomic state machine. Run with
//! `RUSTFLAGS="--cfg loom" cargo test -p ito-find --release --lib loom`.

mod loom_tally;
