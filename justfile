# Recipes for pocketbench. `just` is optional: install it with `cargo install just`.
# The README's two set-up commands do not need it.

# The main job: predict the reference study's space on the four target devices.
sweep file="sweeps/pocket.toml":
    cargo run --release -- sweep {{file}}

# The test suite (what CI runs), ending with one line: what was skipped for a
# missing tool, and how to install it.
test:
    rm -f target/debug/skipped-tests.txt
    cargo test --workspace
    @f=target/debug/skipped-tests.txt; if [ -s "$f" ]; then \
      echo "SKIPPED $(wc -l < "$f") test(s), needing: $(sed -n 's/.*needs \(.*\) (install: \(.*\)); under.*/\1 (\2)/p' "$f" | sort -u | paste -sd ';' -)"; \
    else echo "skipped: none"; fi

# Prediction throughput (criterion); target >= 1M predictions/s on one core.
bench:
    cargo bench -p pocketbench --bench predict

# Engine speed (criterion): Q4_0 kernel bandwidth, one decode step per preset and
# engine, and the probe's own overhead.
bench-engines:
    cargo bench -p pocketbench-probe --bench kernels
    cargo bench -p pocketbench-probe --features llama --bench decode

# The built-in engine (`native`) and the llama.cpp engine against llama-bench on
# the same GGUF, quantization and threads, in alternating processes (this host
# drifts), decode (1+128) then prefill (512+1), each as a ratio to the
# llama-bench run just before it. Needs a llama-bench of your own, on PATH or in
# $POCKETBENCH_LLAMA_BENCH.
compare-llama-bench preset="mnn-pocket-0.3b" quant="q4_0" threads="2" rounds="3":
    cargo build --release --features llama
    for i in $(seq {{rounds}}); do \
      for w in "--prompt 1 --gen 128 decode_tok_s" "--prompt 512 --gen 1 prefill_tok_s"; do \
        set -- $w; base=""; \
        for e in llama-bench native llama.cpp; do \
          v=$(./target/release/pocketbench run --preset {{preset}} --quant "{{quant}}" --device host-llama --engine $e --threads {{threads}} $1 $2 $3 $4 --json 2>/dev/null \
            | python3 -c "import json,sys; print(round(json.load(sys.stdin)['$5'], 1))" || echo failed); \
          [ -z "$base" ] && base=$v; \
          python3 -c "import sys; v, b, i = sys.argv[1:]; r = f'{float(v) / float(b):.2f}x' if 'failed' not in (v, b) else '-'; print(f'round {i} $5 $e: {v} tok/s ({r} llama-bench)')" "$v" "$base" "$i"; \
        done; \
      done; \
    done

# Re-render every export (report.html included) of a sweep from its store.
report out="reports/pocket":
    cargo run --release -- report {{out}}

# Predict, store and render a 100,000-record sweep, printing the split.
bench-store:
    cargo bench -p pocketbench --bench store

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
run preset="mnn-pocket-0.3b" engine="native":
    cargo run --release --features llama -- run --preset {{preset}} --device host --engine {{engine}}

# The AArch64 (phone) kernels and native engine under qemu-aarch64, as CI runs
# them: needs `rustup target add aarch64-unknown-linux-gnu` and Debian's
# gcc-aarch64-linux-gnu, libc6-dev-arm64-cross and qemu-user.
test-aarch64:
    CARGO_TARGET_AARCH64_UNKNOWN_LINUX_GNU_LINKER=aarch64-linux-gnu-gcc \
    CARGO_TARGET_AARCH64_UNKNOWN_LINUX_GNU_RUNNER="qemu-aarch64 -cpu max -L /usr/aarch64-linux-gnu" POCKETBENCH_EXPECT_DOTPROD=1 \
    sh -c 'cargo test -p pocketbench-probe --target aarch64-unknown-linux-gnu --lib kernels && cargo test -p pocketbench-probe --target aarch64-unknown-linux-gnu --test native'

# The book under docs/ (needs mdbook: `cargo install mdbook --version 0.4.52 --no-default-features`).
docs:
    mdbook build docs

# The README's sample output and docs/src/images/report.png from a real run of
# the main job on this machine (run it on a quiet machine: the host's lines are
# measured). Prints the summary to paste into README.md; the iPhone card in it
# is checked against the binary by tests/readme.rs. Needs Debian's chromium.
readme-figures out="target/readme-figures":
    rm -rf {{out}} && mkdir -p {{out}}
    cargo run --release -- sweep sweeps/pocket.toml --out {{out}}/pocket 2>&1 | tee {{out}}/console.txt
    chromium --headless --no-sandbox --disable-gpu --hide-scrollbars --window-size=1280,2200 \
      --screenshot="$PWD/docs/src/images/report.png" "file://$PWD/{{out}}/pocket/report.html"
    @echo "wrote docs/src/images/report.png; the console output is in {{out}}/console.txt"
