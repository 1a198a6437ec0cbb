// Building each thread's slices from X events and B/E pairs.

import { EventOf, TraceEvent, isPhase } from "./event";

export interface Slice {
  readonly name: string;
  readonly start: number;
  end: number;
  depth: number;
  readonly children: Slice[];
}

type ThreadKey = `${number}:${number}`;

export class Forest {
  private readonly open = new Map<ThreadKey, Slice[]>();
  readonly roots = new Map<ThreadKey, Slice[]>();

  add(e: TraceEvent): void {
    if (isPhase(e, "X")) {
      this.push(e, e.ts + e.dur);
      this.pop(e.pid, e.tid);
    } else if (isPhase(e, "B")) {
      this.push(e, Number.POSITIVE_INFINITY);
    } else if (isPhase(e, "E")) {
      this.end(e);
    }
  }

  private key(pid: number, tid: number): ThreadKey {
    return `${pid}:${tid}`;
  }

  private push(e: EventOf<"X"> | EventOf<"B">, end: number): void {
    const k = this.key(e.pid, e.tid);
    const stack = this.open.get(k) ?? [];
    this.open.set(k, stack);
    while (stack.length > 0 && stack[stack.length - 1].end <= e.ts) {
      stack.pop();
    }
    const parent = stack[stack.length - 1];
    const s: Slice = { name: e.name, start: e.ts, end, depth: stack.length, children: [] };
    if (parent) {
      parent.children.push(s);
    } else {
      const roots = this.roots.get(k) ?? [];
      roots.push(s);
      this.roots.set(k, roots);
    }
    stack.push(s);
  }

  private pop(pid: number, tid: number): void {
    const stack = this.open.get(this.key(pid, tid));
    const top = stack?.[stack.length - 1];
    if (top && Number.isFinite(top.end)) {
      // An X slice stays on the stack until something starts after it.
      return;
    }
  }

  private end(e: EventOf<"E">): void {
    const stack = this.open.get(this.key(e.pid, e.tid)) ?? [];
    for (let i = stack.length - 1; i >= 0; i--) {
      if (!Number.isFinite(stack[i].end)) {
        stack[i].end = e.ts;
        stack.length = i;
        return;
      }
    }
  }

  *walk(): Generator<Slice> {
    const visit = function* (s: Slice): Generator<Slice> {
      yield s;
      for (const c of s.children) {
        yield* visit(c);
      }
    };
    for (const roots of this.roots.values()) {
      for (const r of roots) {
        yield* visit(r);
      }
    }
  }
}
