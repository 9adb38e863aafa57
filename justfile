# Recipes for pocketbench. `just` is optional: install it with `cargo install just`.
# The README's two set-up commands do not need it.

# The main job: predict the reference study's space on the four target devices.
sweep file="sweeps/pocket.toml":
    cargo run --release -- sweep {{file}}

# The test suite (what CI runs).
test:
    cargo test --workspace

# Prediction throughput (criterion); target >= 1M predictions/s on one core.
bench:
    cargo bench -p pocketbench --bench predict

# Re-render frontier.csv and summary.md from a stored results.json.
report results="reports/pocket/results.json":
    cargo run --release -- report {{results}}

# Formatting and lints, as CI runs them.
lint:
    cargo fmt --all --check
    cargo clippy --workspace --all-targets -- -D warnings

# Everything CI runs.
ci:
    bash .ci/run

# Build with the llama.cpp engine (needs cmake and libclang: apt-get install cmake libclang-dev).
build-llama:
    cargo build --release --features llama

# Measure one preset on this host (e.g. `just run mnn-pocket-0.3b llama.cpp`).
run preset="mnn-pocket-0.3b" engine="candle":
    cargo run --release --features llama -- run --preset {{preset}} --device host --engine {{engine}}
