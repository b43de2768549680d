// The report's only script: a click on a frame or a request shows its
// frame(s) in the detail panel. Everything else is drawn already.
(function () {
  var frames = JSON.parse(document.getElementById("frames").textContent);
  var detail = document.getElementById("detail");
  // esc is the report's one escape for the HTML built here (the frames
  // come from the record): & < > " and '.
  var escaped = { "&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;", "'": "&#39;" };
  function esc(s) { return (s == null ? "" : String(s)).replace(/[&<>"']/g, function (c) { return escaped[c]; }); }
  function describe(f) {
    var t = f.kind + (f.id !== undefined ? " id " + JSON.stringify(f.id) : "") + (f.method ? " " + f.method : "") + (f.tool ? " " + f.tool : "");
    var lines = [t, f.dir + ", " + f.n + " bytes at offset " + f.off + ", read " + (f.t0 / 1e6).toFixed(6) + "s to " + (f.t / 1e6).toFixed(6) + "s" +
      (f.delivered ? ", delivered " + (f.delivered / 1e6).toFixed(6) + "s" : ", delivery not seen")];
    if (f.hash) lines.push(f.hash + (f.redacted ? ", " + f.redacted + " value(s) redacted" : ""));
    if (f.scanned) lines.push("over the parse limit: scanned, not parsed");
    if (f.gap) lines.push("the observer lost part of it");
    return '<div class="mono">' + esc(lines.join("\n")).replace(/\n/g, "<br>") + "</div>" + (f.head ? "<pre>" + esc(f.head) + (f.head.length < f.n ? "…" : "") + "</pre>" : "");
  }
  function clearSel() { document.querySelectorAll(".sel").forEach(function (e) { e.classList.remove("sel"); }); }
  function bySeq(seq) { for (var i = 0; i < frames.length; i++) if (frames[i].seq === seq) return frames[i]; return null; }
  document.addEventListener("click", function (ev) {
    var el = ev.target.closest("[data-f],.req");
    if (!el) return;
    clearSel();
    el.classList.add("sel");
    if (el.hasAttribute("data-f")) {
      detail.innerHTML = "<b>frame</b>" + describe(frames[+el.getAttribute("data-f")]);
      return;
    }
    var html = "<b>" + esc(el.querySelector("title").textContent) + "</b>";
    var req = bySeq(+el.getAttribute("data-seq")), resp = bySeq(+el.getAttribute("data-resp-seq"));
    html += "<h4>request</h4>" + (req ? describe(req) : "<i>its frame is folded</i>");
    html += "<h4>response</h4>" + (resp ? describe(resp) : (+el.getAttribute("data-resp-seq") < 0 ? "<i>none in the record</i>" : "<i>its frame is folded</i>"));
    detail.innerHTML = html;
  });
  document.body.setAttribute("data-ready", "1");
})();
