//! Aggregate statistics (`aggregate_stats=True`), returned by `dumps()`:
//! per section (operators per device, API calls, each Python domain,
//! device storage) and name: count, total, min, max and average.
use super::trace::device_name;
use super::{Kind, Record};
use crate::error::{Error, Result};
use parking_lot::Mutex;
use serde_json::{json, Map, Value};
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
            SortBy::Avg => self.avg(),
            SortBy::Min => self.min,
            SortBy::Max => self.max,
            SortBy::Count => self.count as f64,
        }
    }
    /// (total, min, max, avg) in display units (ms, kB or raw).
    fn shown(&self) -> (f64, f64, f64, f64) {
        let s = match self.unit {
            Unit::Time => 1e-6,
            Unit::Memory => 1.0 / 1024.0,
            Unit::Value => 1.0,
        };
        (self.total * s, self.min * s, self.max * s, self.avg() * s)
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
        Kind::Operator => Some((format!("operator ({})", device_name(r.ctx)), Unit::Time)),
        Kind::Api => Some(("MXNET_C_API".to_string(), Unit::Time)),
        Kind::Task | Kind::Frame => Some((
            r.domain.as_deref().unwrap_or("default").to_string(),
            Unit::Time,
        )),
        Kind::Event => Some(("event".to_string(), Unit::Time)),
        Kind::Counter => Some((
            format!("{} (counters)", r.domain.as_deref().unwrap_or("default")),
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

fn sorted(rows: &BTreeMap<String, Stat>, by: SortBy, ascending: bool) -> Vec<(&String, &Stat)> {
    let mut v: Vec<(&String, &Stat)> = rows.iter().collect();
    v.sort_by(|a, b| {
        let o =
            a.1.key(by)
                .partial_cmp(&b.1.key(by))
                .unwrap_or(std::cmp::Ordering::Equal);
        let o = if ascending { o } else { o.reverse() };
        o.then_with(|| a.0.cmp(b.0))
    });
    v
}

pub(crate) fn render(fmt: Format, by: SortBy, ascending: bool) -> String {
    let t = table().lock();
    match fmt {
        Format::Table => render_table(&t, by, ascending),
        Format::Json => render_json(&t),
    }
}

fn render_table(t: &Table, by: SortBy, ascending: bool) -> String {
    let mut s = String::new();
    s.push_str("\nProfile Statistics:\n\tNote the difference in units for different entries.\n");
    for (sec, rows) in t {
        let Some(unit) = rows.values().next().map(|r| r.unit) else {
            continue;
        };
        let w = rows
            .keys()
            .map(|k| k.chars().count())
            .max()
            .unwrap_or(0)
            .max(29)
            + 1;
        let _ = writeln!(s, "{sec}\n=================");
        let cols: [&str; 4] = match unit {
            Unit::Time => [
                "Time (ms)",
                "Min Time (ms)",
                "Max Time (ms)",
                "Avg Time (ms)",
            ],
            Unit::Memory => [
                "Total Use (kB)",
                "Min Use  (kB)",
                "Max Use  (kB)",
                "Avg Use  (kB)",
            ],
            Unit::Value => ["Total Value", "Min Value", "Max Value", "Avg Value"],
        };
        let _ = writeln!(
            s,
            "{:<w$}{:>11}    {:>14}    {:>14}    {:>14}    {:>14}",
            "Name", "Total Count", cols[0], cols[1], cols[2], cols[3]
        );
        let dash = |c: &str| "-".repeat(c.chars().count());
        let _ = writeln!(
            s,
            "{:<w$}{:>11}    {:>14}    {:>14}    {:>14}    {:>14}",
            "----",
            dash("Total Count"),
            dash(cols[0]),
            dash(cols[1]),
            dash(cols[2]),
            dash(cols[3])
        );
        for (name, st) in sorted(rows, by, ascending) {
            let (tot, mn, mx, avg) = st.shown();
            let _ = writeln!(
                s,
                "{:<w$}{:>11}    {:>14.4}    {:>14.4}    {:>14.4}    {:>14.4}",
                name, st.count, tot, mn, mx, avg
            );
        }
        s.push('\n');
    }
    s
}

fn render_json(t: &Table) -> String {
    let mut time = Map::new();
    let mut memory = Map::new();
    let mut counter = Map::new();
    for (sec, rows) in t {
        let Some(unit) = rows.values().next().map(|r| r.unit) else {
            continue;
        };
        let mut m = Map::new();
        for (name, st) in rows {
            let (tot, mn, mx, avg) = st.shown();
            let v = match unit {
                Unit::Time => json!({"Total Count": st.count, "Total Time": tot, "Min Time": mn,
                                     "Max Time": mx, "Avg Time": avg}),
                Unit::Memory => json!({"Total Count": st.count, "Min Use": mn, "Max Use": mx,
                                       "Avg Use": avg}),
                Unit::Value => json!({"Total Count": st.count, "Total Value": tot, "Min Value": mn,
                                      "Max Value": mx, "Avg Value": avg}),
            };
            m.insert(name.clone(), v);
        }
        let dst = match unit {
            Unit::Time => &mut time,
            Unit::Memory => &mut memory,
            Unit::Value => &mut counter,
        };
        dst.insert(sec.clone(), Value::Object(m));
    }
    json!({
        "Unit": {"Time": "ms", "Memory": "kB"},
        "Time": time,
        "Memory": memory,
        "Counter": counter,
    })
    .to_string()
}
