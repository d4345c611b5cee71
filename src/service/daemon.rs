//! See `super` (service module table).
