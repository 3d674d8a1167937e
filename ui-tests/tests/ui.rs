//! Compile-time tests of `#[tool]`: `pass/` must build and run, `fail/` must fail to
//! build with exactly the error in the `.stderr` next to each case.

#[test]
fn ui() {
    let t = trybuild::TestCases::new();
    t.pass("tests/pass/*.rs");
    t.compile_fail("tests/fail/*.rs");
}
