// Per-name totals: count, total and self time, deepest nesting.

import { Forest, Slice } from "./tree";

export interface NameStats {
  count: number;
  total: number;
  self: number;
  maxDepth: number;
}

type Column = keyof NameStats;

export function stats(forest: Forest): Map<string, NameStats> {
  const out = new Map<string, NameStats>();
  for (const s of forest.walk()) {
    const st = out.get(s.name) ?? { count: 0, total: 0, self: 0, maxDepth: 0 };
    const dur = s.end - s.start;
    const childTime = s.children.reduce((sum: number, c: Slice) => sum + (c.end - c.start), 0);
    st.count++;
    st.total += dur;
    st.self += dur - childTime;
    st.maxDepth = Math.max(st.maxDepth, s.depth);
    out.set(s.name, st);
  }
  return out;
}

export function top<K extends Column>(all: Map<string, NameStats>, by: K, n: number): Array<[string, NameStats[K]]> {
  return [...all.entries()]
    .map(([name, st]): [string, NameStats[K]] => [name, st[by]])
    .sort((a, b) => Number(b[1]) - Number(a[1]))
    .slice(0, n);
}

export function format(rows: ReadonlyArray<readonly [string, number]>, unit = "us"): string {
  const width = Math.max(4, ...rows.map(([name]) => name.length));
  return rows.map(([name, v]) => `${name.padEnd(width)}  ${v.toFixed(1)} ${unit}`).join("\n");
}
