//! The contract between the runner and the pocketbench app
//! (`crates/runner-ios/app/`): where the spec and the result live in the
//! app's data container, the app's identity, and the two console lines the
//! app ends with. The app's Swift code spells the same strings, and a test
//! (`tests/app.rs`) holds it to these.

/// Where the runner copies the spec, relative to the app's data container;
/// the app is launched with `--spec` and this path.
pub const SPEC: &str = "Documents/pocketbench/spec.json";
/// Where the app writes its result.
pub const RESULT: &str = "Documents/pocketbench/result.json";
/// Where the app keeps the model files it builds from a spec.
pub const MODELS: &str = "Documents/pocketbench/models";
/// The launch argument that names the spec.
pub const SPEC_ARG: &str = "--spec";
/// The app's bundle identifier (`PRODUCT_BUNDLE_IDENTIFIER` in its project).
pub const DEFAULT_BUNDLE_ID: &str = "dev.pocketbench.probe";
/// The app's executable (`PRODUCT_NAME`): what a hung launch is found by
/// among `device info processes`.
pub const DEFAULT_EXECUTABLE: &str = "PocketbenchProbe";
/// The line the app prints when its result is written.
pub const DONE: &str = "[pocketbench] done";
/// The prefix of the line the app prints when it failed.
pub const ERROR: &str = "[pocketbench] error: ";
