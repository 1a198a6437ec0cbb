// verdicts.js FILE... loads each trace with both real importers
// (perfetto-check and catapult-check from $TRACER_IMPORTERS, default
// /work/shared/importers) and prints, as JSON keyed by base name, what
// each viewer makes of it, in the form of ../others/verdicts.json: "ok",
// "refuses the file", "shows nothing", or the sorted names of what
// Perfetto's import reports and chrome://tracing warns of. A "counts"
// object beside them says how often each was reported.
'use strict';
const { execFileSync } = require('node:child_process');
const path = require('node:path');

const dir = process.env.TRACER_IMPORTERS || '/work/shared/importers';

function run(tool, file) {
  let out;
  try {
    out = execFileSync(path.join(dir, tool), ['--brief', file], { maxBuffer: 1 << 30 });
  } catch (e) {
    if (e.status !== 1 || !e.stdout) throw e; // 1: the importer refused the file
    out = e.stdout;
  }
  return JSON.parse(out);
}

function say(r, items, key) {
  if (r.ok !== true) return { verdict: 'refuses the file', counts: {} };
  const counts = {};
  for (const it of items || []) counts[it[key]] = (counts[it[key]] || 0) + (it.value ?? 1);
  const names = Object.keys(counts).sort();
  return { verdict: names.length ? names.join(', ') : 'ok', counts };
}

const out = {};
for (const file of process.argv.slice(2)) {
  const p = run('perfetto-check', file);
  const c = run('catapult-check', file);
  const pv = say(p, p.importErrors, 'name');
  const cv = say(c, c.warnings, 'type');
  const pt = p.totals || {};
  const ct = c.totals || {};
  // Perfetto loads a file it does not take for JSON without a word, and shows nothing.
  if (pv.verdict === 'ok' && (pt.slices || 0) + (pt.counter_samples || 0) === 0 && (ct.slices || 0) + (ct.counters || 0) > 0) {
    pv.verdict = 'shows nothing';
  }
  out[path.basename(file)] = {
    perfetto: pv.verdict,
    catapult: cv.verdict,
    counts: { perfetto: pv.counts, catapult: cv.counts },
    totals: { perfetto: pt, catapult: ct },
  };
}
process.stdout.write(JSON.stringify(out, null, 2) + '\n');
