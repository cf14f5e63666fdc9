// Prints what failed in a logged suite run (scripts/test keeps each run's output): the failing tests vitest
// listed, then its failure report (from "Failed Tests", "Failed Suites" or "Unhandled Errors" to the summary).
// A log with neither, e.g. a run that stopped before vitest, is shown by its last lines.
import { readFileSync } from 'node:fs';

const MAX_REPORT_LINES = 250;
const TAIL_LINES = 60;

const path = process.argv[2];
if (!path) {
  console.error('usage: node scripts/test-failures.mjs <suite log>');
  process.exit(2);
}
// eslint-disable-next-line no-control-regex -- ANSI colour codes are exactly what is removed here
const lines = readFileSync(path, 'utf8').replace(/\x1b\[[0-9;]*[A-Za-z]/g, '').split('\n');

const failing = lines.filter((l) => /^\s*(×|✗|FAIL\b)/.test(l) || /^\s*❯ .*\(\d+ tests? \| \d+ failed/.test(l));
const start = lines.findIndex((l) => /⎯{3,}\s*(Failed Tests|Failed Suites|Unhandled Errors?)\b/.test(l));
const summary = lines.findIndex((l, i) => i > start && /^\s*Test Files\b/.test(l));

if (failing.length > 0) {
  console.log(`failing (${failing.length}):`);
  for (const l of failing.slice(0, 40)) console.log(l);
  if (failing.length > 40) console.log(`… and ${failing.length - 40} more`);
}
if (start >= 0) {
  const end = summary >= 0 ? Math.min(summary + 4, lines.length) : lines.length;
  const report = lines.slice(start, end);
  for (const l of report.slice(0, MAX_REPORT_LINES)) console.log(l);
  if (report.length > MAX_REPORT_LINES) {
    console.log(`… ${report.length - MAX_REPORT_LINES} more lines of the report; the summary:`);
    for (const l of lines.slice(summary, end)) console.log(l);
  }
} else {
  console.log(`(no vitest failure report in the log; its last ${TAIL_LINES} lines:)`);
  for (const l of lines.slice(-TAIL_LINES)) console.log(l);
}
