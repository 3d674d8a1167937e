//! Empty: this crate only hosts the trybuild ui tests in `tests/` (see `README.md`).
