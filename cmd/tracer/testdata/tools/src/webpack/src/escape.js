const table = { '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' };

export function escape(s) {
  return String(s).replace(/[&<>"']/g, (c) => table[c]);
}
