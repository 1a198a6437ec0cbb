// Three worker threads hash messages from the main thread; each thread's
// events carry its own tid, and async work crosses threads.
'use strict';
const { Worker, isMainThread, parentPort, workerData } = require('node:worker_threads');
const crypto = require('node:crypto');
const { performance } = require('node:perf_hooks');

if (isMainThread) {
  const workers = [0, 1, 2].map((n) => new Worker(__filename, { workerData: { n } }));
  let pending = 0;
  performance.mark('work-start');
  for (const w of workers) {
    w.on('message', () => {
      if (--pending === 0) {
        performance.measure('work', 'work-start');
        for (const x of workers) x.postMessage(null);
      }
    });
    for (let i = 0; i < 20; i++) {
      pending++;
      w.postMessage(`message ${i}`);
    }
  }
} else {
  parentPort.on('message', (msg) => {
    if (msg === null) {
      parentPort.close();
      return;
    }
    let h = msg;
    for (let i = 0; i < 2000; i++) h = crypto.createHash('sha256').update(h).digest('hex');
    crypto.pbkdf2(h, 'salt', 1000, 32, 'sha256', () => parentPort.postMessage(h));
  });
}
