#!/usr/bin/env node
// Takes a screenshot of a trace as chrome://tracing draws it: the catapult
// Trace Viewer of ../shared/importers (the one catapult-check runs), in
// headless Chromium, through playwright-core installed there by its setup.
//
// Usage: node docs/pictures/screenshot.js TRACE.json OUT.png [WIDTHxHEIGHT]
// (docs/pictures/retake.sh retakes every picture of the docs.)
'use strict';
const fs = require('fs');
const os = require('os');
const path = require('path');

const IMPORTERS = process.env.TRACER_IMPORTERS ||
    path.join(__dirname, '..', '..', '..', 'shared', 'importers');
const { chromium } = require(path.join(IMPORTERS, 'node_modules', 'playwright-core'));

async function main() {
  const [trace, out, size = '1200x560'] = process.argv.slice(2);
  if (!trace || !out) {
    console.error('usage: screenshot.js TRACE.json OUT.png [WIDTHxHEIGHT]');
    process.exit(2);
  }
  const [width, height] = size.split('x').map(Number);
  const browser = await chromium.launch({
    executablePath: process.env.CHROMIUM_PATH || '/usr/bin/chromium',
    args: ['--no-sandbox', '--allow-file-access-from-files'],
  });
  try {
    const page = await browser.newPage({ viewport: { width, height } });
    // As trace2html does: the trace goes into the viewer's page as its
    // viewer-data, which the viewer imports and draws when it loads.
    const html = fs.readFileSync(path.join(IMPORTERS, 'catapult', 'viewer.html'), 'utf8') +
        '\n<script id="viewer-data" type="application/json">' +
        fs.readFileSync(trace).toString('base64') + '</script>\n';
    const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'screenshot-'));
    fs.writeFileSync(path.join(tmp, 'trace.html'), html);
    await page.goto('file://' + path.join(tmp, 'trace.html'));
    await page.waitForFunction(() => typeof g_timelineViewEl !== 'undefined' && g_timelineViewEl.model &&
        g_timelineViewEl.model.getAllProcesses().length > 0);
    fs.rmSync(tmp, { recursive: true });
    const importWarnings = await page.evaluate(() => g_timelineViewEl.model.importWarnings.map((w) => w.message));
    if (importWarnings.length) throw new Error('import warnings: ' + importWarnings.join('; '));
    await page.evaluate(() => { // every flow's arrow, as ticking all of "Flow events" does
      const vp = g_timelineViewEl.trackView.viewport;
      for (const f of g_timelineViewEl.model.flowEvents) {
        for (const c of tr.b.getCategoryParts(f.category)) vp.selectedFlowEvents.add(c);
      }
      vp.dispatchChangeEvent();
    });
    await page.waitForTimeout(1500); // the tracks draw on the next frames
    // Leave out the empty part of the track area and the selection panel
    // below it: down to the bottom of the last track.
    const bottom = await page.evaluate(() => {
      let max = 0;
      const all = document.getElementsByTagName('*'); // the viewer's polyfill breaks querySelectorAll
      for (let i = 0; i < all.length; i++) {
        const el = all[i];
        if (el.tagName.startsWith('TR-UI-TRACKS-') || el.tagName === 'TR-UI-B-HEADING') {
          max = Math.max(max, el.getBoundingClientRect().bottom);
        }
      }
      return max;
    });
    await page.screenshot({ path: out, clip: { x: 0, y: 0, width, height: Math.min(height, Math.ceil(bottom) + 4) } });
  } finally {
    await browser.close();
  }
}

main().catch((e) => { console.error(e); process.exit(1); });
