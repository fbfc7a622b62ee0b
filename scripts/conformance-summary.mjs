// Compact summary of MCP conformance suite results, read from the suite's checks.json files.
//
//   node scripts/conformance-summary.mjs RUNS.tsv
//
// RUNS.tsv has one line per suite invocation, tab-separated:
//   group  scenario  exit-code  result-prefix  scored(1|0)  skipped-fails(1|0)  log-file
// The suite (`-o DIR`) writes DIR/<scenario>-<ISO time with : and . as ->/checks.json, with an
// optional prefix before the scenario (authorization mode uses "authorization-server-"); the
// scenario may contain "/" (auth/metadata-default -> DIR/auth/metadata-default-<time>/).
// result-prefix is "DIR/<prefix><scenario>"; the newest matching directory is read.
//
// A checks.json is an array of {id, name, description, status, timestamp, errorMessage?, details?}
// with status SUCCESS | FAILURE | WARNING | SKIPPED | INFO.
//
// A scenario passes when the suite exited 0, its checks.json exists and has at least one check,
// no check is FAILURE or WARNING, and (when skipped-fails is 1) none is SKIPPED.
// Exit status: 1 when any scored scenario did not pass, else 0.
import fs from 'node:fs';
import path from 'node:path';

const runsFile = process.argv[2];
if (!runsFile) {
  console.error('usage: conformance-summary.mjs RUNS.tsv');
  process.exit(2);
}

const MAX_DETAILS = 5; // failing checks shown per scenario
const TIME_SUFFIX = /^\d{4}-\d{2}-\d{2}T\d{2}-\d{2}-\d{2}-\d{3}Z$/;

function findChecks(prefix) {
  const dir = path.dirname(prefix);
  const base = path.basename(prefix) + '-';
  let names;
  try {
    names = fs.readdirSync(dir);
  } catch {
    return undefined;
  }
  const hits = names
    .filter((n) => n.startsWith(base) && TIME_SUFFIX.test(n.slice(base.length)))
    .sort();
  for (let i = hits.length - 1; i >= 0; i--) {
    const file = path.join(dir, hits[i], 'checks.json');
    if (fs.existsSync(file)) return file;
  }
  return undefined;
}

// Lines of the suite's own output that explain a failure the checks do not show.
function suiteNotes(log) {
  if (!log) return [];
  let text;
  try {
    text = fs.readFileSync(log, 'utf8');
  } catch {
    return [];
  }
  const wanted = /Client timed out after|Client exited with code|CLIENT EXITED WITH ERROR|Timeout: No callback received|Failed to run scenario|test error:/;
  return [...new Set(text.split('\n').filter((l) => wanted.test(l)).map((l) => oneLine(l)))].slice(0, 3);
}

function oneLine(s, max = 220) {
  const t = String(s ?? '').replace(/\s+/g, ' ').trim();
  return t.length > max ? t.slice(0, max - 1) + '…' : t;
}

const rows = fs
  .readFileSync(runsFile, 'utf8')
  .split('\n')
  .filter((l) => l.trim() !== '')
  .map((l) => {
    const [group, scenario, rc, prefix, scored, skippedFails, log] = l.split('\t');
    return { group, scenario, rc: Number(rc), prefix, scored: scored === '1', skippedFails: skippedFails === '1', log };
  });

const width = Math.max(10, ...rows.map((r) => r.scenario.length));
const groups = [...new Set(rows.map((r) => r.group))];
let scoredTotal = 0;
let scoredFailed = 0;
const failedNames = [];

for (const group of groups) {
  const inGroup = rows.filter((r) => r.group === group);
  const scored = inGroup.some((r) => r.scored);
  console.log(`\n${group}${scored ? '' : ' (not scored)'}:`);
  let groupPassed = 0;
  for (const r of inGroup) {
    const file = findChecks(r.prefix);
    let checks = [];
    let problem = '';
    if (!file) {
      problem = 'no checks.json written';
    } else {
      try {
        checks = JSON.parse(fs.readFileSync(file, 'utf8'));
        if (!Array.isArray(checks)) throw new Error('not an array');
      } catch (e) {
        problem = `unreadable checks.json (${e.message})`;
        checks = [];
      }
    }
    const count = (s) => checks.filter((c) => c.status === s).length;
    const passed = count('SUCCESS');
    const failed = count('FAILURE');
    const warnings = count('WARNING');
    const skipped = count('SKIPPED');
    if (!problem && checks.length === 0) problem = 'no checks recorded';
    if (!problem && r.rc !== 0 && failed === 0 && warnings === 0) {
      problem = `suite exited ${r.rc} (client timeout or unexpected client exit; see log)`;
    }
    const ok =
      !problem && r.rc === 0 && failed === 0 && warnings === 0 && !(r.skippedFails && skipped > 0);
    if (ok) groupPassed++;
    if (r.scored) {
      scoredTotal++;
      if (!ok) {
        scoredFailed++;
        failedNames.push(r.scenario);
      }
    }
    const counts =
      `${passed} passed, ${failed} failed` +
      (warnings ? `, ${warnings} warnings` : '') +
      (skipped ? `, ${skipped} skipped` : '');
    console.log(`  ${ok ? 'PASS' : 'FAIL'}  ${r.scenario.padEnd(width)}  ${counts}`);
    if (!ok) {
      if (problem) console.log(`        ! ${problem}`);
      for (const line of suiteNotes(r.log)) console.log(`        ! ${line}`);
      const bad = checks.filter(
        (c) => c.status === 'FAILURE' || c.status === 'WARNING' || (r.skippedFails && c.status === 'SKIPPED')
      );
      for (const c of bad.slice(0, MAX_DETAILS)) {
        console.log(`        ${c.status} ${c.id}: ${oneLine(c.errorMessage || c.description)}`);
      }
      if (bad.length > MAX_DETAILS) console.log(`        … ${bad.length - MAX_DETAILS} more`);
      if (r.log) console.log(`        log: ${r.log}${file ? `  checks: ${file}` : ''}`);
    }
  }
  console.log(`  -- ${groupPassed}/${inGroup.length} scenarios passed`);
}

console.log('');
if (scoredFailed > 0) {
  console.log(`FAILED scenarios: ${failedNames.join(' ')}`);
}
console.log(`conformance: ${scoredTotal - scoredFailed} passed, ${scoredFailed} failed`);
process.exit(scoredFailed > 0 ? 1 : 0);
