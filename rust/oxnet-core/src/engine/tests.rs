use super::*;
use crate::base::Context;
use std::sync::atomic::{AtomicI64, Ordering};
use std::sync::Arc;

/// Tests that poison vars or call wait_for_all share the global engine.
static ERR_LOCK: parking_lot::Mutex<()> = parking_lot::Mutex::new(());

fn push_fn(reads: Vec<Var>, writes: Vec<Var>, f: impl FnOnce() -> Result<()> + Send + 'static) {
    push(
        "test_op",
        Context::cpu(0),
        reads,
        writes,
        false,
        Box::new(move |_| f()),
    );
}

#[test]
fn write_order_is_push_order() {
    let v = Var::new();
    let cell = Arc::new(parking_lot::Mutex::new(Vec::new()));
    for i in 0..200 {
        let c = cell.clone();
        push_fn(vec![], vec![v.clone()], move || {
            c.lock().push(i);
            Ok(())
        });
    }
    wait_for_var(&v, false).unwrap();
    assert_eq!(*cell.lock(), (0..200).collect::<Vec<_>>());
}

#[test]
fn errors_poison_and_engine_keeps_working() {
    let _g = ERR_LOCK.lock();
    let a = Var::new();
    let b = Var::new();
    push_fn(vec![], vec![a.clone()], || Err(Error::Param("boom".into())));
    let ran = Arc::new(AtomicI64::new(0));
    let r2 = ran.clone();
    push_fn(vec![a.clone()], vec![b.clone()], move || {
        r2.fetch_add(1, Ordering::SeqCst);
        Ok(())
    });
    let e = wait_for_var(&b, false).unwrap_err();
    assert!(e.message().contains("boom"), "{e}");
    assert!(e.message().contains("test_op"), "{e}");
    assert_eq!(
        ran.load(Ordering::SeqCst),
        0,
        "dependent op must be skipped"
    );
    let _ = wait_for_var(&a, false);
    let _ = wait_for_all();
    // Later work succeeds.
    let c = Var::new();
    let r3 = ran.clone();
    push_fn(vec![], vec![c.clone()], move || {
        r3.fetch_add(10, Ordering::SeqCst);
        Ok(())
    });
    wait_for_var(&c, false).unwrap();
    assert_eq!(ran.load(Ordering::SeqCst), 10);
}

#[test]
fn an_error_is_reported_once() {
    // As MXNet: an error raised by a wait on a variable it poisoned (the
    // failing op's output or anything downstream) is not raised again by
    // waitall; an error nobody waited for is.
    let _g = ERR_LOCK.lock();
    let _ = wait_for_all();
    let (a, b, c) = (Var::new(), Var::new(), Var::new());
    push_fn(vec![], vec![a.clone()], || {
        Err(Error::Param("first".into()))
    });
    push_fn(vec![a.clone()], vec![b.clone()], || Ok(()));
    let e = wait_for_var(&b, false).unwrap_err();
    assert!(e.message().contains("first"), "{e}");
    // reported through b: a and waitall are clean
    wait_for_var(&a, false).unwrap();
    wait_for_all().unwrap();
    push_fn(vec![], vec![c.clone()], || {
        Err(Error::Param("second".into()))
    });
    let e = wait_for_all().unwrap_err();
    assert!(e.message().contains("second"), "{e}");
    wait_for_var(&c, false).unwrap();
    wait_for_all().unwrap();
}

#[test]
fn panics_become_errors() {
    let _g = ERR_LOCK.lock();
    let a = Var::new();
    push_fn(vec![], vec![a.clone()], || panic!("kaboom"));
    let e = wait_for_var(&a, false).unwrap_err();
    assert!(e.message().contains("kaboom"));
    let _ = wait_for_all();
}

#[test]
fn reads_run_concurrently() {
    // Two reads of the same var that each wait for the other to start can
    // only finish if the engine runs them at the same time.
    let v = Var::new();
    let w1 = Var::new();
    let w2 = Var::new();
    let flag = Arc::new(AtomicI64::new(0));
    for w in [w1.clone(), w2.clone()] {
        let f = flag.clone();
        push_fn(vec![v.clone()], vec![w], move || {
            f.fetch_add(1, Ordering::SeqCst);
            let t0 = std::time::Instant::now();
            while f.load(Ordering::SeqCst) < 2 {
                if t0.elapsed().as_secs() > 5 {
                    return Err(Error::Engine("reads did not overlap".into()));
                }
                std::thread::yield_now();
            }
            Ok(())
        });
    }
    wait_for_var(&w1, false).unwrap();
    wait_for_var(&w2, false).unwrap();
}

#[test]
fn wait_from_worker_is_an_error_not_a_deadlock() {
    let _g = ERR_LOCK.lock();
    let inner = Var::new();
    let out = Var::new();
    let v2 = inner.clone();
    push_fn(vec![], vec![out.clone()], move || wait_for_var(&v2, false));
    let e = wait_for_var(&out, false).unwrap_err();
    assert!(e.message().contains("engine worker"), "{e}");
    let _ = wait_for_all();
}
