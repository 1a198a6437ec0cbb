package tracedebug

import (
	"html/template"
	"net/http"
	"time"

	"github.com/gotracer/tracer"
)

// serveIndex answers with the index page: what the program can give, a
// form for a capture, and a button that opens one in ui.perfetto.dev.
func serveIndex(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.Header().Set("Cache-Control", "no-store")
	w.Header().Set("X-Content-Type-Options", "nosniff")
	_ = indexPage.Execute(w, struct {
		Capturing, Tracing, Recorder bool
		Default, Max                 int
	}{capturing.Load(), tracer.Enabled(), recorder.Load() != nil, defaultSeconds, MaxSeconds})
}

// indexPage is the index. Its links are relative, so that it works under
// any prefix. Perfetto's UI fetches traces only from its own origins and
// 127.0.0.1:9001, so the button fetches the capture here and hands it to
// a UI tab through postMessage, as Perfetto documents for other origins
// (the UI asks the user to confirm a trace from an origin it does not
// know).
var indexPage = template.Must(template.New("index").Parse(`<!DOCTYPE html>
<html><head><meta charset="utf-8"><title>tracer</title>
<style>body{font-family:sans-serif;max-width:48em;margin:2em auto;line-height:1.4}code{background:#eee;padding:0 .2em}</style>
</head><body>
<h1>tracer</h1>
<h2>A trace of the next seconds</h2>
<form action="trace" method="get">
<label>seconds <input name="seconds" type="number" min="0.1" max="{{.Max}}" step="any" value="{{.Default}}"></label>
<label><input name="gzip" type="checkbox" value="1"> gzip</label>
<button type="submit">download</button>
<button type="button" id="open">open in ui.perfetto.dev</button>
</form>
{{if .Capturing}}<p><b>A capture is running</b>: one at a time.</p>{{end}}
{{if .Tracing}}<p><b>The program traces already</b> (its default tracer runs): a capture is a copy of what it records meanwhile, and its own trace{{if .Recorder}} (the flight recorder below){{end}} loses nothing.</p>{{end}}
<p>From a shell: <code>tracer view 'URL'</code>, <code>tracer stats 'URL'</code> or <code>curl -o trace.json 'URL'</code> with this page's <code>trace?seconds=5</code>.</p>
<h2>The last seconds</h2>
{{if .Recorder}}<p><a href="recent">recent</a>: the window of the program's flight recorder (<a href="recent?gzip=1">gzip</a>).</p>
{{else}}<p>No flight recorder: see <a href="recent">recent</a> for how to keep one.</p>{{end}}
<p>A trace holds the names and args of what the program records: serve this page only to those who may see them.</p>
<script>
document.getElementById("open").onclick = async function () {
  const ui = "https://ui.perfetto.dev";
  const secs = document.querySelector("input[name=seconds]").value;
  const tab = window.open(ui); // now, in the click: later, a popup blocker stops it
  const resp = await fetch("trace?seconds=" + encodeURIComponent(secs));
  if (!resp.ok) { alert(await resp.text()); tab.close(); return; }
  const buffer = await resp.arrayBuffer();
  const ping = setInterval(() => tab.postMessage("PING", ui), 50);
  window.addEventListener("message", function pong(e) {
    if (e.origin !== ui || e.data !== "PONG") return;
    clearInterval(ping);
    window.removeEventListener("message", pong);
    tab.postMessage({perfetto: {buffer: buffer, title: "capture of " + secs + " s", keepApiOpen: false}}, ui);
  });
};
</script>
</body></html>
`))

// attachment sets the headers of a trace download named prefix and the
// time, gzipped or not.
func attachment(h http.Header, prefix string, gz bool) {
	name := prefix + "-" + time.Now().UTC().Format("20060102T150405Z") + ".json"
	if gz {
		name += ".gz"
		h.Set("Content-Type", "application/gzip")
	} else {
		h.Set("Content-Type", "application/json")
	}
	h.Set("Content-Disposition", `attachment; filename="`+name+`"`)
	h.Set("Cache-Control", "no-store")
	h.Set("X-Content-Type-Options", "nosniff")
}
