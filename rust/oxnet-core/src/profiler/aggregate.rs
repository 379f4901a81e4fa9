//! Aggregate statistics (`aggregate_stats=True`), returned by `dumps()`:
//! per section (operators per device, API calls, each Python domain,
//! device storage) and name: count, total, min, max and average.
use super::{Kind, Record};
use crate::error::{Error, Result};
use parking_lot::Mutex;
use serde_json::Value;
use std::collections::BTreeMap;
use std::fmt::Write;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
    Table,
    Json,
}

impl Format {
    pub fn parse(s: &str) -> Result<Format> {
        match s {
            "table" => Ok(Format::Table),
            "json" => Ok(Format::Json),
            _ => Err(Error::Param(format!(
                "dumps: format must be 'table' or 'json', got '{s}'"
            ))),
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SortBy {
    Total,
    Avg,
    Min,
    Max,
    Count,
}

impl SortBy {
    pub fn parse(s: &str) -> Result<SortBy> {
        match s {
            "total" => Ok(SortBy::Total),
            "avg" => Ok(SortBy::Avg),
            "min" => Ok(SortBy::Min),
            "max" => Ok(SortBy::Max),
            "count" => Ok(SortBy::Count),
            _ => Err(Error::Param(format!(
                "dumps: sort_by must be 'total', 'avg', 'min', 'max' or 'count', got '{s}'"
            ))),
        }
    }
}

/// What a section's numbers are.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Unit {
    /// Durations, kept in ns, shown in ms.
    Time,
    /// Bytes, shown in kB.
    Memory,
    /// Counter values.
    Value,
}

#[derive(Debug, Clone, Copy)]
pub struct Stat {
    pub unit: Unit,
    pub count: u64,
    pub total: f64,
    pub min: f64,
    pub max: f64,
}

impl Stat {
    fn add(&mut self, v: f64) {
        self.count += 1;
        self.total += v;
        self.min = self.min.min(v);
        self.max = self.max.max(v);
    }
    pub fn avg(&self) -> f64 {
        if self.count == 0 {
            0.0
        } else {
            self.total / self.count as f64
        }
    }
    fn key(&self, by: SortBy) -> f64 {
        match by {
            SortBy::Total => self.total,
            // MXNet's "average" of a counter: half its range
            SortBy::Avg if self.unit == Unit::Value => (self.max - self.min) / 2.0,
            SortBy::Avg => self.avg(),
            SortBy::Min => self.min,
            SortBy::Max => self.max,
            SortBy::Count => self.count as f64,
        }
    }
    /// (total, min, max, avg) in MXNet's display units: ms for times, kB
    /// (1000 bytes) for memory; a counter's values divided by 1000 as MXNet
    /// does, its "average" half its range.
    fn shown(&self) -> (f64, f64, f64, f64) {
        let s = match self.unit {
            Unit::Time => 1e-6,
            Unit::Memory | Unit::Value => 1e-3,
        };
        let avg = match self.unit {
            Unit::Value => (self.max - self.min) / 2.0,
            _ => self.avg(),
        };
        (self.total * s, self.min * s, self.max * s, avg * s)
    }
}

type Table = BTreeMap<String, BTreeMap<String, Stat>>;

fn table() -> &'static Mutex<Table> {
    static T: Mutex<Table> = Mutex::new(BTreeMap::new());
    &T
}

/// Section and unit of a record (None: not aggregated).
fn section(r: &Record) -> Option<(String, Unit)> {
    match r.kind {
        // MXNet 1.9.1 groups every operator under one domain, "operator"
        Kind::Operator => Some(("operator".to_string(), Unit::Time)),
        Kind::Api => Some(("MXNET_C_API".to_string(), Unit::Time)),
        Kind::Task | Kind::Frame => Some((
            r.domain.as_deref().unwrap_or("default").to_string(),
            Unit::Time,
        )),
        Kind::Event => Some(("event".to_string(), Unit::Time)),
        Kind::Counter => Some((
            r.domain.as_deref().unwrap_or("default").to_string(),
            Unit::Value,
        )),
        Kind::Memory => Some(("Device Storage".to_string(), Unit::Memory)),
        Kind::Marker => None,
    }
}

/// Add records to the statistics.
pub(crate) fn fold(records: &[Record]) {
    if records.is_empty() {
        return;
    }
    let mut t = table().lock();
    for r in records {
        let Some((sec, unit)) = section(r) else {
            continue;
        };
        let v = match unit {
            Unit::Time => r.dur_ns as f64,
            Unit::Memory | Unit::Value => r.value as f64,
        };
        let name = r.full_name();
        t.entry(sec)
            .or_default()
            .entry(name)
            .or_insert(Stat {
                unit,
                count: 0,
                total: 0.0,
                min: f64::INFINITY,
                max: f64::NEG_INFINITY,
            })
            .add(v);
    }
}

pub(crate) fn reset() {
    table().lock().clear();
}

/// A copy of the statistics: section -> name -> stat.
pub fn snapshot() -> BTreeMap<String, BTreeMap<String, Stat>> {
    table().lock().clone()
}

/// Rows in MXNet's order: by the key, largest first (smallest first when
/// `ascending`), ties by name, last first (its heap of (key, name) pairs).
fn sorted(rows: &BTreeMap<String, Stat>, by: SortBy, ascending: bool) -> Vec<(&String, &Stat)> {
    let mut v: Vec<(&String, &Stat)> = rows.iter().collect();
    v.sort_by(|a, b| {
        let o =
            a.1.key(by)
                .partial_cmp(&b.1.key(by))
                .unwrap_or(std::cmp::Ordering::Equal);
        let o = if ascending { o } else { o.reverse() };
        o.then_with(|| b.0.cmp(a.0))
    });
    v
}

pub(crate) fn render(fmt: Format, by: SortBy, ascending: bool) -> String {
    let t = table().lock();
    match fmt {
        Format::Table => render_table(&t, by, ascending),
        Format::Json => render_json(&t, by, ascending),
    }
}

fn render_table(t: &Table, by: SortBy, ascending: bool) -> String {
    // MXNet's layout: name in 25 columns, then 16-wide right-aligned
    // columns separated by a space; memory sections have no total
    let mut s = String::new();
    s.push_str("\nProfile Statistics:\n\tNote the difference in units for different entries.\n");
    for (sec, rows) in t {
        let Some(unit) = rows.values().next().map(|r| r.unit) else {
            continue;
        };
        let mem = unit == Unit::Memory;
        let _ = writeln!(s, "{sec}\n=================");
        let (mn, mx, av) = if mem {
            ("Min Use  (kB)", "Max Use  (kB)", "Avg Use  (kB)")
        } else {
            ("Min Time (ms)", "Max Time (ms)", "Avg Time (ms)")
        };
        let total = if mem {
            String::new()
        } else {
            format!("{:>16} ", "Time (ms)")
        };
        let _ = writeln!(
            s,
            "{:<25}{:>16} {total}{mn:>16} {mx:>16} {av:>16}",
            "Name", "Total Count"
        );
        let total = if mem {
            String::new()
        } else {
            format!("{:>16} ", "---------")
        };
        let d = "-------------";
        let _ = writeln!(
            s,
            "{:<25}{:>16} {total}{d:>16} {d:>16} {d:>16}",
            "----", "-----------"
        );
        for (name, st) in sorted(rows, by, ascending) {
            let (tot, mn, mx, avg) = st.shown();
            let total = if mem {
                String::new()
            } else {
                format!("{tot:>16.4} ")
            };
            let _ = writeln!(
                s,
                "{name:<25}{:>16} {total}{mn:>16.4} {mx:>16.4} {avg:>16.4}",
                st.count
            );
        }
        s.push('\n');
    }
    s
}

/// `v` with 4 significant digits, as MXNet's `setprecision(4)` prints it.
fn sig4(v: f64) -> Value {
    if !v.is_finite() {
        return Value::Null;
    }
    let r: f64 = format!("{v:.3e}").parse().unwrap_or(v);
    if r == r.trunc() && r.abs() < 1e15 {
        Value::from(r as i64)
    } else {
        Value::from(r)
    }
}

/// MXNet's JSON: {"Time": {domain: {name: {Count, Total, Min, Max, Avg}}},
/// "Memory": {domain: {name: {Count, Min, Max, Avg}}}, "Unit": ...}, each
/// domain's names in the requested order (written by hand: the order of
/// keys carries the sort).
fn render_json(t: &Table, by: SortBy, ascending: bool) -> String {
    let mut time = Vec::new();
    let mut memory = Vec::new();
    for (sec, rows) in t {
        let Some(unit) = rows.values().next().map(|r| r.unit) else {
            continue;
        };
        let mut items = Vec::new();
        for (name, st) in sorted(rows, by, ascending) {
            let (tot, mn, mx, avg) = st.shown();
            let mut fields = vec![format!("\"Count\": {}", st.count)];
            if unit != Unit::Memory {
                fields.push(format!("\"Total\": {}", sig4(tot)));
            }
            fields.push(format!("\"Min\": {}", sig4(mn)));
            fields.push(format!("\"Max\": {}", sig4(mx)));
            fields.push(format!("\"Avg\": {}", sig4(avg)));
            items.push(format!(
                "{}: {{{}}}",
                Value::from(name.as_str()),
                fields.join(", ")
            ));
        }
        let dom = format!("{}: {{{}}}", Value::from(sec.as_str()), items.join(", "));
        match unit {
            Unit::Memory => memory.push(dom),
            Unit::Time | Unit::Value => time.push(dom),
        }
    }
    format!(
        "{{\"Time\": {{{}}}, \"Memory\": {{{}}}, \"Unit\": {{\"Time\": \"ms\", \"Memory\": \"kB\"}}}}",
        time.join(", "),
        memory.join(", ")
    )
}
