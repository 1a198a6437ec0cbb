import { escape } from './escape.js';

function row(s, depth) {
  const dur = Number.isFinite(s.end) ? (s.end - s.start).toFixed(1) : 'open';
  return `<li style="margin-left:${depth}em">${escape(s.name)} ${dur}</li>` + s.children.map((c) => row(c, depth + 1)).join('');
}

export function render(threads) {
  let html = '';
  for (const [key, roots] of threads) {
    html += `<h2>${escape(key)}</h2><ul>${roots.map((r) => row(r, 0)).join('')}</ul>`;
  }
  return html;
}
