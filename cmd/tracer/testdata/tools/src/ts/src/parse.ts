// Parsing a trace file in either of its two forms: a bare array of
// events, or an object with a traceEvents array.

import { Phase, TraceEvent } from "./event";

const phases: ReadonlySet<string> = new Set<Phase>(["X", "B", "E", "i", "C", "b", "n", "e", "s", "t", "f", "M"]);

export class ParseError extends Error {
  constructor(readonly index: number, message: string) {
    super(`event ${index}: ${message}`);
  }
}

function field<T>(o: Record<string, unknown>, key: string, check: (v: unknown) => v is T, index: number): T {
  const v = o[key];
  if (!check(v)) {
    throw new ParseError(index, `bad ${key}: ${JSON.stringify(v)}`);
  }
  return v;
}

const isNumber = (v: unknown): v is number => typeof v === "number" && Number.isFinite(v);
const isString = (v: unknown): v is string => typeof v === "string";

export function parse(text: string): TraceEvent[] {
  const doc: unknown = JSON.parse(text);
  const list = Array.isArray(doc) ? doc : (doc as { traceEvents?: unknown }).traceEvents;
  if (!Array.isArray(list)) {
    throw new ParseError(-1, "no traceEvents array");
  }
  return list.map((raw: unknown, i): TraceEvent => {
    if (typeof raw !== "object" || raw === null) {
      throw new ParseError(i, "not an object");
    }
    const o = raw as Record<string, unknown>;
    const ph = field(o, "ph", isString, i);
    if (!phases.has(ph)) {
      throw new ParseError(i, `unknown phase ${ph}`);
    }
    const ts = ph === "M" ? 0 : field(o, "ts", isNumber, i);
    return { ...o, ph, ts, name: String(o.name ?? ""), pid: Number(o.pid ?? 0), tid: Number(o.tid ?? 0) } as TraceEvent;
  });
}
