// The Trace Event Format's events, as a tagged union on the phase.

export type Phase = "X" | "B" | "E" | "i" | "C" | "b" | "n" | "e" | "s" | "t" | "f" | "M";

interface Base<P extends Phase> {
  readonly ph: P;
  readonly name: string;
  readonly ts: number;
  readonly pid: number;
  readonly tid: number;
  readonly cat?: string;
  readonly args?: Readonly<Record<string, unknown>>;
}

export interface Complete extends Base<"X"> {
  readonly dur: number;
}
export type Begin = Base<"B">;
export type End = Base<"E">;
export interface Instant extends Base<"i"> {
  readonly s?: "g" | "p" | "t";
}
export interface Counter extends Base<"C"> {
  readonly args: Readonly<Record<string, number>>;
}
export interface Async<P extends "b" | "n" | "e"> extends Base<P> {
  readonly id: string | number;
}
export interface Flow<P extends "s" | "t" | "f"> extends Base<P> {
  readonly id: string | number;
  readonly bp?: "e";
}
export type Metadata = Base<"M">;

export type TraceEvent =
  | Complete
  | Begin
  | End
  | Instant
  | Counter
  | Async<"b">
  | Async<"n">
  | Async<"e">
  | Flow<"s">
  | Flow<"t">
  | Flow<"f">
  | Metadata;

export type EventOf<P extends Phase> = Extract<TraceEvent, { ph: P }>;

export function isPhase<P extends Phase>(e: TraceEvent, ph: P): e is EventOf<P> {
  return e.ph === ph;
}
