import { byThread } from './threads.js';

export function forest(events) {
  const out = new Map();
  for (const [key, list] of byThread(events)) {
    const roots = [];
    const stack = [];
    for (const e of list) {
      if (e.ph === 'E') {
        const s = stack.pop();
        if (s) s.end = e.ts;
        continue;
      }
      if (e.ph !== 'B' && e.ph !== 'X') continue;
      const s = { name: e.name, start: e.ts, end: e.ph === 'X' ? e.ts + e.dur : Infinity, children: [] };
      while (stack.length && stack[stack.length - 1].end <= s.start) stack.pop();
      (stack.length ? stack[stack.length - 1].children : roots).push(s);
      stack.push(s);
    }
    out.set(key, roots);
  }
  return out;
}
