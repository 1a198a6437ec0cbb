import { parse } from './parse.js';
import { forest } from './forest.js';
import { render } from './render.js';

const text = JSON.stringify([
  { ph: 'B', name: 'main', ts: 0, pid: 1, tid: 1 },
  { ph: 'X', name: 'load', ts: 1, dur: 4, pid: 1, tid: 1 },
  { ph: 'E', name: 'main', ts: 10, pid: 1, tid: 1 },
]);

export const html = render(forest(parse(text)));
