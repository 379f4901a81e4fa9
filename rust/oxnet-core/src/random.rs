//! Per-context random generators. Random operators declare the generator's
//! engine var as written, so they run in push order and a seed gives the
//! same numbers whatever the thread count.
use crate::base::Context;
use crate::engine::Var;
use parking_lot::Mutex;
use std::collections::HashMap;
use std::sync::OnceLock;

/// xoshiro256++: small, fast, good statistical quality.
#[derive(Clone)]
pub struct Rng {
    s: [u64; 4],
}

fn splitmix(x: &mut u64) -> u64 {
    *x = x.wrapping_add(0x9E3779B97F4A7C15);
    let mut z = *x;
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58476D1CE4E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D049BB133111EB);
    z ^ (z >> 31)
}

impl Rng {
    pub fn seeded(seed: u64) -> Rng {
        let mut x = seed;
        Rng {
            s: [
                splitmix(&mut x),
                splitmix(&mut x),
                splitmix(&mut x),
                splitmix(&mut x),
            ],
        }
    }
    #[inline]
    pub fn next_u64(&mut self) -> u64 {
        let r = (self.s[0].wrapping_add(self.s[3]))
            .rotate_left(23)
            .wrapping_add(self.s[0]);
        let t = self.s[1] << 17;
        self.s[2] ^= self.s[0];
        self.s[3] ^= self.s[1];
        self.s[1] ^= self.s[2];
        self.s[0] ^= self.s[3];
        self.s[2] ^= t;
        self.s[3] = self.s[3].rotate_left(45);
        r
    }
    /// Uniform in [0, 1).
    #[inline]
    pub fn uniform(&mut self) -> f64 {
        (self.next_u64() >> 11) as f64 * (1.0 / (1u64 << 53) as f64)
    }
    #[inline]
    pub fn uniform_f32(&mut self) -> f32 {
        (self.next_u64() >> 40) as f32 * (1.0 / (1u64 << 24) as f32)
    }
    /// Standard normal (Box-Muller).
    pub fn normal(&mut self) -> f64 {
        let u1 = 1.0 - self.uniform();
        let u2 = self.uniform();
        (-2.0 * u1.ln()).sqrt() * (2.0 * std::f64::consts::PI * u2).cos()
    }
    /// Uniform integer in [0, n).
    pub fn below(&mut self, n: u64) -> u64 {
        if n == 0 {
            return 0;
        }
        ((self.next_u64() as u128 * n as u128) >> 64) as u64
    }
    /// A generator for a sub-stream (e.g. one image record or one block of
    /// a parallel kernel) that does not depend on thread scheduling.
    pub fn fork(&mut self, stream: u64) -> Rng {
        Rng::seeded(self.next_u64() ^ stream.wrapping_mul(0xD1B54A32D192ED03))
    }
}

struct Slot {
    var: Var,
    rng: Mutex<Rng>,
}

fn slots() -> &'static Mutex<HashMap<Context, &'static Slot>> {
    static S: OnceLock<Mutex<HashMap<Context, &'static Slot>>> = OnceLock::new();
    S.get_or_init(|| Mutex::new(HashMap::new()))
}

const DEFAULT_SEED: u64 = 0x5EED_0F0A_17E7;

fn slot(ctx: Context) -> &'static Slot {
    let mut m = slots().lock();
    m.entry(ctx).or_insert_with(|| {
        Box::leak(Box::new(Slot {
            var: Var::new(),
            rng: Mutex::new(Rng::seeded(
                DEFAULT_SEED ^ ((ctx.dev_type as u64) << 32) ^ ctx.dev_id as u64,
            )),
        }))
    })
}

/// The engine var guarding `ctx`'s generator.
pub fn rng_var(ctx: Context) -> Var {
    slot(ctx).var.clone()
}

/// Run `f` with `ctx`'s generator (call only from an op that declared
/// `rng_var(ctx)` as written, or after waiting for it).
pub fn with_rng<R>(ctx: Context, f: impl FnOnce(&mut Rng) -> R) -> R {
    f(&mut slot(ctx).rng.lock())
}

/// Seed one context's generator (or all known ones and future defaults).
/// Ordered after every random op already pushed.
pub fn seed(seed: u64, ctx: Option<Context>) {
    let targets: Vec<Context> = match ctx {
        Some(c) => vec![c],
        None => {
            let mut v: Vec<Context> = slots().lock().keys().copied().collect();
            if !v.contains(&Context::cpu(0)) {
                v.push(Context::cpu(0));
            }
            v
        }
    };
    for c in targets {
        let s = slot(c);
        let mixed = seed ^ ((c.dev_type as u64) << 40) ^ ((c.dev_id as u64) << 48);
        crate::engine::push(
            "_random_seed",
            c,
            vec![],
            vec![s.var.clone()],
            true,
            Box::new(move |_| {
                *s.rng.lock() = Rng::seeded(mixed);
                Ok(())
            }),
        );
    }
}
