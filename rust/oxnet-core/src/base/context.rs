//! Device contexts. `cpu(i)` and `gpu(i)` exist as types from day one; the
//! GPU backend plugs in behind the same engine queues.
use std::fmt;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum DevType {
    Cpu = 1,
    Gpu = 2,
    CpuPinned = 3,
    CpuShared = 5,
}

impl DevType {
    pub fn from_id(id: i32) -> Option<DevType> {
        match id {
            1 => Some(DevType::Cpu),
            2 => Some(DevType::Gpu),
            3 => Some(DevType::CpuPinned),
            5 => Some(DevType::CpuShared),
            _ => None,
        }
    }
    pub fn name(self) -> &'static str {
        match self {
            DevType::Cpu => "cpu",
            DevType::Gpu => "gpu",
            DevType::CpuPinned => "cpu_pinned",
            DevType::CpuShared => "cpu_shared",
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Context {
    pub dev_type: DevType,
    pub dev_id: i32,
}

impl Context {
    pub const fn cpu(id: i32) -> Context {
        Context {
            dev_type: DevType::Cpu,
            dev_id: id,
        }
    }
    pub const fn gpu(id: i32) -> Context {
        Context {
            dev_type: DevType::Gpu,
            dev_id: id,
        }
    }
    pub fn is_cpu(&self) -> bool {
        self.dev_type != DevType::Gpu
    }
}

impl Default for Context {
    fn default() -> Self {
        Context::cpu(0)
    }
}

impl fmt::Display for Context {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}({})", self.dev_type.name(), self.dev_id)
    }
}
