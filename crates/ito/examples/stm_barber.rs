//! The sleeping barber (Dijkstra): a barber, a waiting room with a few chairs (a bounded
//! `TQueue`), and customers arriving in bursts. A customer who finds every chair taken
//! leaves; the barber sleeps (`retry`) while the room is empty and wakes when someone sits
//! down.
//!
//! Customers are ito tasks: each one tries to take a chair (`try_push`) and, if it got one,
//! waits on its own `TMVar<()>` until the barber is done with it. Taking a chair also draws a
//! ticket in the same transaction, so the barber can check that he serves customers in the
//! order they sat down. The barber is a thread; a `None` in the queue closes the shop.
//!
//! Checked: served + turned away == arrived; the barber served everyone who got a chair,
//! in ticket order.
//!
//! ```text
//! cargo run --release -p ito --example stm_barber
//! ```

use std::time::{Duration, Instant};

use ito::stm::{TMVar, TQueue, TVar, atomically, atomically_async};

/// Someone in the waiting room.
#[derive(Clone)]
struct Customer {
    ticket: u64,
    /// Filled by the barber when the haircut is done.
    done: TMVar<()>,
}

/// What a run did.
#[derive(Debug)]
pub(crate) struct Report {
    pub(crate) chairs: usize,
    pub(crate) arrived: u64,
    /// Customers who got a chair and then a haircut (as the customers saw it).
    pub(crate) served: u64,
    pub(crate) turned_away: u64,
    /// Haircuts the barber gave.
    pub(crate) haircuts: u64,
    /// Haircuts given out of ticket order.
    pub(crate) out_of_order: u64,
    /// Times the barber found the room empty and went to sleep.
    pub(crate) naps: u64,
    pub(crate) elapsed: Duration,
}

/// Spins for about `d` (a haircut, or the time between bursts of arrivals).
fn busy(d: Duration) {
    let t = Instant::now();
    while t.elapsed() < d {
        std::hint::spin_loop();
    }
}

/// `customers` customers arriving in bursts at a shop with `chairs` chairs.
pub(crate) fn run(chairs: usize, customers: u64) -> Report {
    let began = Instant::now();
    let room: TQueue<Option<Customer>> = TQueue::bounded(chairs);
    let tickets = TVar::new(0u64);

    let barber = {
        let room = room.clone();
        std::thread::spawn(move || {
            let (mut haircuts, mut out_of_order, mut naps) = (0, 0, 0);
            loop {
                let next = match atomically(|tx| room.try_pop(tx)) {
                    Some(next) => next,
                    None => {
                        naps += 1;
                        atomically(|tx| room.pop(tx)) // sleeps until someone sits down
                    }
                };
                let Some(customer) = next else {
                    return (haircuts, out_of_order, naps); // closing time
                };
                out_of_order += u64::from(customer.ticket != haircuts);
                busy(Duration::from_micros(15)); // the haircut
                haircuts += 1;
                customer.done.put_atomic(());
            }
        })
    };

    let mut rng = 0x2545_F491_4F6C_DD1Du64;
    let mut visits = Vec::new();
    let mut arrived = 0;
    while arrived < customers {
        rng ^= rng << 13;
        rng ^= rng >> 7;
        rng ^= rng << 17;
        let burst = (1 + rng % 6).min(customers - arrived);
        for _ in 0..burst {
            let (room, tickets) = (room.clone(), tickets.clone());
            visits.push(ito::spawn(async move {
                let done = TMVar::new_empty();
                let seated = atomically_async(|tx| {
                    let ticket = tickets.read(tx)?;
                    let me = Customer {
                        ticket,
                        done: done.clone(),
                    };
                    if room.try_push(tx, Some(me))? {
                        tickets.write(tx, ticket + 1)?;
                        Ok(true)
                    } else {
                        Ok(false) // every chair taken: leave
                    }
                })
                .await;
                if seated {
                    atomically_async(|tx| done.take(tx)).await;
                }
                seated
            }));
        }
        arrived += burst;
        busy(Duration::from_micros((rng >> 32) % 120));
    }

    let seated: Vec<bool> = visits
        .into_iter()
        .map(|v| v.wait().expect("a customer failed"))
        .collect();
    room.push_atomic(None); // close the shop
    let (haircuts, out_of_order, naps) = barber.join().unwrap();
    let served = seated.iter().filter(|&&s| s).count() as u64;
    Report {
        chairs,
        arrived,
        served,
        turned_away: arrived - served,
        haircuts,
        out_of_order,
        naps,
        elapsed: began.elapsed(),
    }
}

fn main() {
    let r = run(3, 5000);
    println!(
        "{} customers at a shop with {} chairs, in {:.1?}:",
        r.arrived, r.chairs, r.elapsed
    );
    println!(
        "  served {} + turned away {} = {} (arrived {})",
        r.served,
        r.turned_away,
        r.served + r.turned_away,
        r.arrived
    );
    println!(
        "  the barber gave {} haircuts, {} out of arrival order, and fell asleep {} times",
        r.haircuts, r.out_of_order, r.naps
    );
    assert_eq!(r.served + r.turned_away, r.arrived);
    assert_eq!((r.haircuts, r.out_of_order), (r.served, 0));
}
