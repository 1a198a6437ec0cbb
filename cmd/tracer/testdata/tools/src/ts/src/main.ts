// Reads a trace from a string and prints the names that took the most
// self time.

import { parse } from "./parse";
import { Forest } from "./tree";
import { format, stats, top } from "./stats";

export function summarize(text: string, n = 10): string {
  const forest = new Forest();
  for (const e of parse(text)) {
    forest.add(e);
  }
  return format(top(stats(forest), "self", n));
}

const sample = JSON.stringify([
  { ph: "B", name: "main", ts: 0, pid: 1, tid: 1 },
  { ph: "X", name: "load", ts: 1, dur: 4, pid: 1, tid: 1 },
  { ph: "E", name: "main", ts: 10, pid: 1, tid: 1 },
]);

export const demo: string = summarize(sample);
