export function byThread(events) {
  const out = new Map();
  for (const e of events) {
    const key = `${e.pid}:${e.tid}`;
    if (!out.has(key)) out.set(key, []);
    out.get(key).push(e);
  }
  for (const list of out.values()) list.sort((a, b) => a.ts - b.ts);
  return out;
}
