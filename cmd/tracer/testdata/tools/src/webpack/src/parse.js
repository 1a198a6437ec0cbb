export function parse(text) {
  const doc = JSON.parse(text);
  const events = Array.isArray(doc) ? doc : doc.traceEvents;
  if (!Array.isArray(events)) throw new Error('no traceEvents');
  return events.filter((e) => typeof e === 'object' && e !== null && typeof e.ph === 'string');
}
