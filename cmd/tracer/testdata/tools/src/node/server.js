// A small loopback HTTP service and its client, run under Node.js's trace
// events: timers, promises, sockets, fs, zlib and user timing all show up.
'use strict';
const http = require('node:http');
const fs = require('node:fs');
const zlib = require('node:zlib');
const os = require('node:os');
const path = require('node:path');
const { performance } = require('node:perf_hooks');

const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'tracer-node-'));
const body = Buffer.alloc(64 * 1024, 'tracer ');

const server = http.createServer((req, res) => {
  performance.mark('handle-start');
  const file = path.join(dir, `req-${req.url.slice(1)}.txt`);
  fs.writeFile(file, body, (err) => {
    if (err) throw err;
    fs.readFile(file, (err, data) => {
      if (err) throw err;
      zlib.gzip(data, (err, gz) => {
        if (err) throw err;
        res.writeHead(200, { 'content-encoding': 'gzip' });
        res.end(gz);
        performance.measure('handle', 'handle-start');
      });
    });
  });
});

function get(port, i) {
  return new Promise((resolve, reject) => {
    http.get({ host: '127.0.0.1', port, path: `/${i}` }, (res) => {
      const chunks = [];
      res.on('data', (c) => chunks.push(c));
      res.on('end', () => resolve(zlib.gunzipSync(Buffer.concat(chunks)).length));
    }).on('error', reject);
  });
}

server.listen(0, '127.0.0.1', async () => {
  const { port } = server.address();
  let total = 0;
  for (let round = 0; round < 4; round++) {
    const sizes = await Promise.all([0, 1, 2, 3, 4].map((i) => get(port, round * 5 + i)));
    total += sizes.reduce((a, b) => a + b, 0);
    await new Promise((r) => setTimeout(r, 5));
  }
  server.close(() => {
    fs.rmSync(dir, { recursive: true });
    console.log(`served ${total} bytes`);
  });
});
