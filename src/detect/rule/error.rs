//! Why a rule, or a line of a classification or threshold file, did not load.

use std::fmt;

/// A rejected rule, located for the user.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RuleError {
    pub file: String,
    pub line: usize,
    pub reason: String,
}

impl fmt::Display for RuleError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}:{}: {}", self.file, self.line, self.reason)
    }
}
