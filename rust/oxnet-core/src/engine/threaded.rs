//! The threaded engine: per-device worker queues fed by per-variable
//! dependency queues.
use super::{execute, mark_worker_thread, Engine, Opr, Shared, Var};
use crate::base::{Context, DevType};
use crate::error::Result;
use crossbeam_channel::{unbounded, Sender};
use parking_lot::{Condvar, Mutex};
use std::collections::HashMap;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

type DeviceQueues = Mutex<HashMap<(DevType, i32), Sender<Arc<Opr>>>>;

pub struct ThreadedEngine {
    pub(crate) shared: Arc<Shared>,
    queues: DeviceQueues,
    cpu_queue: Sender<Arc<Opr>>,
}

fn worker_count(dev: DevType) -> usize {
    let env = |k: &str| std::env::var(k).ok().and_then(|v| v.parse::<usize>().ok());
    match dev {
        DevType::Gpu => env("MXNET_GPU_WORKER_NTHREADS").unwrap_or(2),
        _ => env("OXNET_CPU_WORKER_NTHREADS")
            .or_else(|| env("MXNET_CPU_WORKER_NTHREADS"))
            .unwrap_or_else(|| super::num_cores().clamp(2, 8)),
    }
    .max(1)
}

fn spawn_workers(shared: &Arc<Shared>, ctx: Context) -> Sender<Arc<Opr>> {
    let (tx, rx) = unbounded::<Arc<Opr>>();
    for i in 0..worker_count(ctx.dev_type) {
        let rx = rx.clone();
        let shared = shared.clone();
        let tx2 = tx.clone();
        std::thread::Builder::new()
            .name(format!(
                "oxnet-{}{}-worker{}",
                ctx.dev_type.name(),
                ctx.dev_id,
                i
            ))
            .spawn(move || {
                mark_worker_thread();
                crate::profiler::register_thread(ctx, i);
                let me = Dispatcher {
                    shared: &shared,
                    local: Some(&tx2),
                };
                while let Ok(opr) = rx.recv() {
                    me.run(opr);
                }
            })
            .expect("failed to spawn engine worker thread");
    }
    tx
}

struct Dispatcher<'a> {
    shared: &'a Shared,
    local: Option<&'a Sender<Arc<Opr>>>,
}

impl Dispatcher<'_> {
    fn run(&self, opr: Arc<Opr>) {
        execute(self.shared, &opr);
        self.complete(&opr);
    }

    /// Release the operation's variables and dispatch what became ready.
    fn complete(&self, opr: &Arc<Opr>) {
        let mut ready: Vec<Arc<Opr>> = Vec::new();
        for v in &opr.reads {
            let mut s = v.0.state.lock();
            s.running_reads -= 1;
            if s.running_reads == 0 {
                if let Some((_, true)) = s.queue.front() {
                    let (o, _) = s.queue.pop_front().unwrap();
                    s.running_write = true;
                    ready.push(o);
                }
            }
        }
        for v in &opr.writes {
            let mut s = v.0.state.lock();
            s.running_write = false;
            let mut any_read = false;
            while let Some((_, false)) = s.queue.front() {
                let (o, _) = s.queue.pop_front().unwrap();
                s.running_reads += 1;
                any_read = true;
                ready.push(o);
            }
            if !any_read {
                if let Some((_, true)) = s.queue.front() {
                    let (o, _) = s.queue.pop_front().unwrap();
                    s.running_write = true;
                    ready.push(o);
                }
            }
        }
        self.shared.op_finished();
        for o in ready {
            if o.wait.fetch_sub(1, Ordering::AcqRel) == 1 {
                self.dispatch(o);
            }
        }
    }

    fn dispatch(&self, opr: Arc<Opr>) {
        if opr.is_wait {
            // Waits do no work: signal right here.
            self.run(opr);
            return;
        }
        match self.local {
            Some(tx) if opr.ctx.is_cpu() => {
                let _ = tx.send(opr);
            }
            _ => engine_ref().send(opr),
        }
    }
}

fn engine_ref() -> &'static ThreadedEngine {
    let e = super::engine();
    super::e_as_threaded(e).expect("threaded engine")
}

impl ThreadedEngine {
    pub fn new() -> ThreadedEngine {
        let shared = Arc::new(Shared::new());
        let cpu_queue = spawn_workers(&shared, Context::cpu(0));
        ThreadedEngine {
            shared,
            queues: Mutex::new(HashMap::new()),
            cpu_queue,
        }
    }

    fn send(&self, opr: Arc<Opr>) {
        if opr.ctx.is_cpu() {
            let _ = self.cpu_queue.send(opr);
            return;
        }
        let key = (opr.ctx.dev_type, opr.ctx.dev_id);
        let mut q = self.queues.lock();
        let tx = q
            .entry(key)
            .or_insert_with(|| spawn_workers(&self.shared, opr.ctx))
            .clone();
        drop(q);
        let _ = tx.send(opr);
    }
}

impl Default for ThreadedEngine {
    fn default() -> Self {
        Self::new()
    }
}

/// Register `opr` on its variables; returns how many dependencies were
/// satisfied right away.
fn enqueue(opr: &Arc<Opr>) -> usize {
    let mut ready = 0;
    for v in &opr.reads {
        let mut s = v.0.state.lock();
        if !s.running_write && s.queue.is_empty() {
            s.running_reads += 1;
            ready += 1;
        } else {
            s.queue.push_back((opr.clone(), false));
        }
    }
    for v in &opr.writes {
        let mut s = v.0.state.lock();
        if !s.running_write && s.running_reads == 0 && s.queue.is_empty() {
            s.running_write = true;
            ready += 1;
        } else {
            s.queue.push_back((opr.clone(), true));
        }
    }
    ready
}

impl Engine for ThreadedEngine {
    fn push_opr(&self, opr: Arc<Opr>) {
        self.shared.op_started();
        let ready = enqueue(&opr) + 1;
        if opr.wait.fetch_sub(ready, Ordering::AcqRel) == ready {
            let d = Dispatcher {
                shared: &self.shared,
                local: None,
            };
            if opr.inline || opr.is_wait {
                d.run(opr);
            } else {
                self.send(opr);
            }
        }
    }

    fn wait_for_var(&self, var: &Var, for_write: bool) -> Result<()> {
        super::check_not_worker("wait_to_read")?;
        {
            let s = var.0.state.lock();
            let idle =
                s.queue.is_empty() && !s.running_write && (!for_write || s.running_reads == 0);
            if idle {
                drop(s);
                return match var.take_error() {
                    Some(e) => Err(e),
                    None => Ok(()),
                };
            }
        }
        let signal = Arc::new((Mutex::new(false), Condvar::new()));
        let sig2 = signal.clone();
        let (reads, writes) = if for_write {
            (vec![], vec![var.clone()])
        } else {
            (vec![var.clone()], vec![])
        };
        let opr = Arc::new(Opr {
            wait: AtomicUsize::new(reads.len() + writes.len() + 1),
            reads,
            writes,
            func: Mutex::new(Some(Box::new(move |_| {
                let (m, cv) = &*sig2;
                *m.lock() = true;
                cv.notify_all();
                Ok(())
            }))),
            name: "WaitForVar",
            ctx: Context::cpu(0),
            inline: true,
            is_wait: true,
            prof: None,
        });
        self.push_opr(opr);
        let (m, cv) = &*signal;
        let mut done = m.lock();
        while !*done {
            cv.wait(&mut done);
        }
        drop(done);
        match var.take_error() {
            Some(e) => Err(e),
            None => Ok(()),
        }
    }

    fn wait_for_all(&self) -> Result<()> {
        super::check_not_worker("waitall")?;
        self.shared.wait_idle();
        self.shared.take_all_errors()
    }

    fn kind(&self) -> &'static str {
        "ThreadedEnginePerDevice"
    }
}
