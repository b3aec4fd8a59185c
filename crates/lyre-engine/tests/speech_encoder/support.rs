#[path = "../common/fixtures.rs"]
mod fixtures;
pub use fixtures::*;
