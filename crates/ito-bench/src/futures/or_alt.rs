//! `futures or-alt`: chains of alternatives.

use super::*;

/// The result of alternative `i` of a chain of `chain` or_alts.
pub(super) fn alternative_succeeds(i: usize, chain: usize, succeed: Succeed) -> bool {
    match succeed {
        Succeed::First => i == 0,
        Succeed::Last => i == chain,
    }
}

pub(super) fn or_alt_ito(chain: usize, succeed: Succeed) -> bool {
    let alt = |i| {
        if alternative_succeeds(i, chain, succeed) {
            ito::Future::successful(VALUE)
        } else {
            ito::Future::failed(ito::Failure::NoSuchElement)
        }
    };
    let mut f = alt(0);
    for i in 1..=chain {
        f = f.or_alt(&alt(i));
    }
    black_box(f.wait()) == Ok(VALUE)
}

pub(super) fn peer_alt(i: usize, chain: usize, succeed: Succeed) -> PeerRes {
    if alternative_succeeds(i, chain, succeed) {
        Ok(VALUE)
    } else {
        Err(Fail)
    }
}

pub(super) fn or_alt_shared(chain: usize, succeed: Succeed) -> bool {
    let alt = |i| shared_completed(peer_alt(i, chain, succeed));
    let mut f = shared_or_alt(alt(0), alt(1));
    for i in 2..=chain {
        f = shared_or_alt(f, alt(i));
    }
    black_box(f.now_or_never()) == Some(Ok(VALUE))
}

pub(super) fn or_alt_tokio(chain: usize, succeed: Succeed) -> bool {
    let alt = |i| tokio_completed(peer_alt(i, chain, succeed));
    let mut f = tokio_or_alt(alt(0), alt(1));
    for i in 2..=chain {
        f = tokio_or_alt(f, alt(i));
    }
    black_box(f.now_or_never()) == Some(Ok(VALUE))
}

pub(super) fn or_alt(ctx: &mut Ctx, imps: &[FutImpl], chains: &[usize], succeeds: &[Succeed]) {
    for &chain in chains {
        for &succeed in succeeds {
            let name = match succeed {
                Succeed::First => "first",
                Succeed::Last => "last",
            };
            let mut templates = Vec::new();
            let mut ops: Vec<Box<dyn FnMut() -> bool>> = Vec::new();
            for &imp in imps {
                let mut t = template("or-alt", imp, name.to_owned(), chain);
                t.chain = Some(chain);
                t.succeed = Some(name);
                templates.push(t);
                ops.push(match imp {
                    FutImpl::Ito => Box::new(move || or_alt_ito(chain, succeed)),
                    FutImpl::Shared => Box::new(move || or_alt_shared(chain, succeed)),
                    FutImpl::Tokio => Box::new(move || or_alt_tokio(chain, succeed)),
                    FutImpl::Mutex | FutImpl::ItoInline => {
                        unreachable!("checked: mutex is the peer of philosophers only")
                    }
                });
            }
            micro(ctx, templates, ops, chain);
        }
    }
}
