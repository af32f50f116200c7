//! Stackful coroutines: synchronous code that can suspend in the middle of a call and resume
//! later, on a pooled stack of its own, so that a blocking wait costs a stack, not a thread.
//!
//! - [`StackPool`] hands out guarded, lazily committed stacks and recycles them per thread.
//! - [`Coro`] runs a `FnOnce() -> R` on such a stack; [`suspend`] (from any depth inside it)
//!   hands control back to [`Coro::resume`]'s caller. A panic comes out of `resume` as a value;
//!   dropping a suspended coroutine unwinds its stack.
//! - A coroutine runs only on the thread it started on: [`Coro`] is `!Send`; the scheduler
//!   keeps each worker's coroutines (its loops, `runtime/loops.rs`) on that worker.
//! - An overflow hits the stack's guard page and is reported by name before the process aborts.
//!
//! The stack switch itself is the `corosensei` crate's. `docs/coroutines.md` gives the design,
//! the soundness argument and the figures.

mod coroutine;
#[cfg(test)]
mod measure;
mod overflow;
mod stack;
#[cfg(test)]
mod tests;

#[cfg(test)]
pub(crate) use coroutine::in_coroutine;
pub(crate) use coroutine::{Coro, Resumed, suspend};
#[cfg(test)]
pub(crate) use overflow::running_stack;
pub(crate) use stack::{StackPool, trim_cache};
