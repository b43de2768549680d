// The live page: polls status.json twice a second and draws every running
// proxy. It only reads; closing it changes nothing in the proxies.
(function () {
  var token = new URLSearchParams(location.search).get("token") || "";
  var root = document.getElementById("proxies"), meta = document.getElementById("meta"), detail = document.getElementById("detail");
  var frames = new Map(), polls = 0;
  // esc is the page's one escape: every value from status.json that goes
  // into the HTML built here, text or attribute, goes through it. Numbers
  // are formatted from Number(x) (dur, size, at), so a string in their
  // place shows as NaN, never as markup.
  var escaped = { "&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;", "'": "&#39;" };
  function esc(s) { return (s == null ? "" : String(s)).replace(/[&<>"']/g, function (c) { return escaped[c]; }); }
  function dur(us) {
    us = Number(us);
    var ms = us / 1000;
    if (ms >= 10000) return Math.round(ms / 1000) + "s";
    if (ms >= 1000) return (ms / 1000).toFixed(1) + "s";
    if (ms >= 1) return Math.round(ms) + "ms";
    return Math.round(us) + "µs";
  }
  function size(n) {
    n = Number(n);
    if (n >= 1 << 30) return (n / (1 << 30)).toFixed(1) + " GiB";
    if (n >= 1 << 20) return (n / (1 << 20)).toFixed(1) + " MiB";
    if (n >= 10 << 10) return (n >> 10) + " KiB";
    return n + " bytes";
  }
  var dirs = { "in": "host → server", "out": "server → host", "err": "server stderr" };
  var readers = { "in": "the server is not reading its stdin", "out": "the host is not reading the server's output", "err": "the host is not reading the server's stderr" };
  var pipes = { "in": ["the host's stdin pipe", "the server's stdin pipe"], "out": ["the server's stdout pipe", "the host's stdout pipe"], "err": ["the server's stderr pipe", "the host's stderr pipe"] };
  // own looks a direction up in one of the tables above: a direction they
  // do not know (a broken or crafted file) is shown as it is.
  function own(table, d) { return Object.prototype.hasOwnProperty.call(table, d) ? table[d] : null; }
  function dirName(d) { return own(dirs, d) || String(d); }
  function reader(d) { return own(readers, d) || "direction " + d; }
  function pipe(d, i) { return (own(pipes, d) || ["the source pipe", "the destination pipe"])[i]; }
  function at(us) { return "+" + (Number(us) / 1e6).toFixed(3) + "s"; }
  function name(p) { return "id " + JSON.stringify(p.id) + " " + (p.method || "") + (p.tool ? " " + p.tool : ""); }
  // ended reports whether the record, fresher than the status file, says
  // that the write the status saw in progress has ended since.
  function ended(p, s) {
    var st = p.status, since = (Date.parse(st.updated) - Date.parse(st.start)) * 1000 - s.blocked_us;
    return (p.blocks || []).some(function (b) { return b.kind === "block" && b.dir === s.dir && b.end && Math.abs(b.since - since) < 20000; });
  }
  function blocked(p, updatedAgoUS) {
    var out = [], st = p.status || {};
    (st.streams || []).forEach(function (s) {
      if (p.ending || !s.blocked_us || s.blocked_us < 200000 || ended(p, s)) return;
      var t = s.spliced ?
        reader(s.dir) + ": a splice of " + size(s.blocked_bytes) + " (still in " + pipe(s.dir, 0) + ", the proxy holds none) blocked for " + dur(s.blocked_us + updatedAgoUS) :
        reader(s.dir) + ": a write of " + size(s.blocked_bytes) + " held by the proxy for " + dur(s.blocked_us + updatedAgoUS);
      if (s.source_pipe) t += "; " + size(s.source_pipe) + " more waiting in " + pipe(s.dir, 0);
      if (s.dest_pipe) t += "; " + size(s.dest_pipe) + " unread in " + pipe(s.dir, 1);
      out.push(t);
    });
    // A write the record shows blocked (its block event comes 100ms into
    // the write) that the status file, rewritten once a second, has not
    // seen yet.
    (p.blocks || []).forEach(function (b) {
      if (b.kind !== "block" || b.end) return;
      var seen = !p.ending && (st.streams || []).some(function (s) { return s.dir === b.dir && s.blocked_us >= 200000; });
      if (!seen) out.push(reader(b.dir) + ": a write of " + size(b.n) + " held by the proxy for " + dur(p.now_us - b.since) + (p.ending ? ", still when the record ends" : " (from the record)"));
    });
    return out;
  }
  function plural(n, one, many) { return n + " " + (n === 1 ? one : many); }
  // more says how many items of a list were left out, "" if none.
  function more(n, what) { n = Number(n); return n ? '<p class="folded">… and ' + n + " more " + esc(n === 1 ? what : what + "s") + ", not listed</p>" : ""; }
  // respText says how much of q's response was read and delivered: the
  // status file's own count (a proxy's pending request), the record's
  // (one the record shows unanswered), or the line in progress.
  function respText(p, q) {
    if (!q.response_bytes) return inProgress(p, q) || "none";
    if (q.record) return size(q.response_bytes) + " read, not all delivered";
    return size(q.response_bytes) + " read, " + size(q.response_delivered || 0) + " delivered" + (q.state === "responding" ? " (in progress)" : "");
  }

  // inProgress says how much of q's response is read, from the status
  // file's line in progress on its response's stream or the record.
  function inProgress(p, q) {
    var st = p.status || {}, resp = q.dir === "in" ? "out" : "in", t = "";
    (st.streams || []).forEach(function (s) {
      var c = s.current;
      if (s.dir !== resp || !c || JSON.stringify(c.id) !== JSON.stringify(q.id) || c.method) return;
      var from = Number(s.read) - Number(c.bytes), sent = Math.max(0, Math.min(Number(s.delivered) - from, Number(c.bytes)));
      t = size(c.bytes) + " read, " + size(sent) + " delivered (in progress)";
    });
    (p.requests || []).forEach(function (r) {
      if (!t && r.resp_read && r.dir === q.dir && JSON.stringify(r.id) === JSON.stringify(q.id)) t = size(r.resp_read) + " read, " + size(r.resp_sent) + " delivered (in progress)";
    });
    return t;
  }
  function card(p, now) {
    // ago is how old the status file is; run how far its durations have
    // run on since (none for a stale one: its proxy is gone or stopped).
    var st = p.status || {}, ago = Math.max(0, (now - Date.parse(st.updated)) * 1000), run = p.stale ? 0 : ago, m = p.more || {};
    var state = p.ending ? "STALE: " + p.ending : p.stale ? "STALE (not updated for " + dur(ago) + ": the proxy was probably killed)" : (st.running ? "running" : "server " + (st.exit ? st.exit.text : "ended"));
    var stuck = blocked(p, run), verdicts = (p.ending ? p.verdicts : st.verdicts) || [];
    var h = '<div class="card' + (stuck.length || verdicts.length ? " stuckcard" : "") + '" data-proxy="' + esc(st.proxy_pid) + '">';
    h += "<h2>proxy " + esc(st.proxy_pid) + " → server " + esc(st.server_pid) + ' <span class="mono">' + esc((st.argv || []).join(" ")) + "</span></h2>";
    h += '<div class="folded">' + esc(state) + (p.stale ? "" : ", up " + dur((now - Date.parse(st.start)) * 1000)) + ", status from " + dur(ago) + " ago · " + esc(p.record) + "</div>";
    stuck.forEach(function (t) { h += '<div class="banner blocked">STUCK: ' + esc(t) + "</div>"; });
    if (!stuck.length && !verdicts.length) h += '<div class="banner ok">nothing is stuck</div>';
    // At most five verdicts of a kind (a flood of unanswered requests has
    // one each); the others are counted.
    var perKind = {}, hidden = p.ending ? 0 : Number(m.verdicts || 0);
    h += '<ul class="verdicts">' + verdicts.map(function (v) {
      var k = String(v.kind);
      perKind[k] = (perKind[k] || 0) + 1;
      if (perKind[k] > 5) { hidden++; return ""; }
      return '<li data-kind="' + esc(v.kind) + '">' + esc(v.text) + "</li>";
    }).join("") + "</ul>" + more(hidden, "verdict");
    if (p.metrics) {
      var x = p.metrics;
      h += '<p class="folded">from the record\'s events: ' + esc(plural(Number(x.requests), "request", "requests") + ", " + plural(Number(x.responses), "response", "responses") + ", " + plural(Number(x.cancels), "cancel", "cancels") +
        "; stdin " + size(x.stdin_bytes) + ", stdout " + size(x.stdout_bytes) + ", stderr " + size(x.stderr_bytes) + "; blocked writes: server's stdin " + dur(x.blocked_in_us) + ", host's stdout " + dur(x.blocked_out_us) + ", host's stderr " + dur(x.blocked_err_us)) + "</p>";
    }
    h += '<div class="cols"><section><h3>pending</h3>';
    // The record is fresher than the status file: a request it shows
    // delivered since is no longer pending.
    // One it shows unseen (detail lost since it was sent) is not claimed
    // to be waiting.
    var pend = (st.pending || []).filter(function (q) {
      return !(p.requests || []).some(function (r) { return r.dir === q.dir && JSON.stringify(r.id) === JSON.stringify(q.id) && r.state === "delivered"; });
    }).map(function (q) {
      var unseen = (p.requests || []).some(function (r) { return r.dir === q.dir && JSON.stringify(r.id) === JSON.stringify(q.id) && r.state === "unseen"; });
      return unseen && (q.state === "waiting" || q.state === "responding") ? Object.assign({}, q, { state: "unseen" }) : q;
    });
    // Requests the record shows unanswered that the status file does not
    // list yet (when its list is cut, only those sent since its update).
    var updatedUS = (Date.parse(st.updated) - Date.parse(st.start)) * 1000;
    (p.requests || []).forEach(function (r) {
      if (r.state === "delivered" || m.pending && r.sent <= updatedUS || pend.some(function (q) { return q.dir === r.dir && JSON.stringify(q.id) === JSON.stringify(r.id); })) return;
      pend.push({ dir: r.dir, id: r.id, method: r.method, tool: r.tool, state: r.state, age_us: p.now_us - r.sent - run, response_bytes: r.resp_bytes, progress: r.progress, cancelled_us: r.cancel ? p.now_us - r.cancel - run : 0, record: true });
    });
    // The oldest ten and the latest ten; the others are counted.
    var pendMore = Number(m.pending || 0);
    if (pend.length > 20) { pendMore += pend.length - 20; pend = pend.slice(0, 10).concat([null], pend.slice(-10)); }
    if (!pend.length) h += "<p>none</p>";
    else {
      h += '<table class="pending"><tr><th>direction</th><th>request</th><th>state</th><th>age</th><th>response</th><th>progress</th><th>cancel</th></tr>';
      pend.forEach(function (q) {
        if (!q) { h += '<tr class="more"><td colspan="7">… ' + pendMore + " more pending requests, not listed</td></tr>"; return; }
        h += '<tr class="stuck"><td>' + esc(dirName(q.dir)) + '</td><td class="mono">' + esc(name(q)) + '</td><td class="state-' + esc(q.state) + '">' + esc(q.state === "unseen" ? "unseen: detail lost, the response may have passed" : q.state) +
          '</td><td class="num">' + dur(q.age_us + run) + '</td><td class="num">' + esc(respText(p, q)) +
          '</td><td class="num">' + esc(q.progress || "") + "</td><td>" + (q.cancelled_us ? dur(q.cancelled_us + run) + (p.stale ? " before the status's last update" : " ago") : "") + "</td></tr>";
      });
      h += "</table>";
    }
    h += '</section><section><h3>pipes</h3><table class="streams"><tr><th>direction</th><th>read</th><th>delivered</th><th>write in progress</th><th>waiting in source pipe</th><th>unread in destination pipe</th><th>idle</th></tr>';
    (st.streams || []).forEach(function (s) {
      var w = s.blocked_us ? size(s.blocked_bytes) + " for " + dur(s.blocked_us + run) + " (since " + new Date(Date.parse(st.updated) - s.blocked_us / 1000).toLocaleTimeString() + ")" : "";
      var done = s.blocked_us && ended(p, s);
      if (done) w = "none (the record shows the write ended)";
      h += "<tr" + (s.blocked_us >= 200000 && !done ? ' class="stuck"' : "") + "><td>" + esc(dirName(s.dir)) + '</td><td class="num">' + size(s.read) + '</td><td class="num">' + size(s.delivered) +
        '</td><td class="num">' + esc(w) + '</td><td class="num">' + (s.source_pipe == null ? "?" : size(s.source_pipe)) + '</td><td class="num">' + (s.dest_pipe == null ? "?" : size(s.dest_pipe)) +
        '</td><td class="num">' + (s.ended ? "ended" : s.idle_us ? dur(s.idle_us) : "") + "</td></tr>";
    });
    h += "</table></section></div>";
    if (p.timeline) {
      h += "<h3>timeline, last minutes</h3>" + p.timeline;
      (p.folded || []).forEach(function (f) { h += '<p class="folded">folded: ' + esc(f) + "</p>"; });
    }
    h += '<div class="cols"><section><h3>latest requests</h3>';
    if (!p.has_record) h += "<p>no record read (see above)</p>";
    else if (!(p.requests || []).length) h += "<p>none in the record</p>";
    else {
      h += '<table class="requests"><tr><th>direction</th><th>request</th><th>sent</th><th>outcome</th></tr>';
      p.requests.forEach(function (r) {
        var o = r.state === "delivered" ? "delivered after " + dur(r.delivered - r.sent) + " (" + size(r.resp_bytes) + ")" :
          r.state === "unseen" ? "no response seen for " + dur(p.now_us - r.sent) + ", but detail was lost since: it may have passed" : r.state + " for " + dur(p.now_us - r.sent);
        if (r.cancel) o += ", cancelled at " + at(r.cancel);
        if (r.late_us) o += ", answered " + dur(r.late_us) + " after the cancel";
        if (r.resp_read) o += ", response in progress: " + size(r.resp_read) + " read, " + size(r.resp_sent) + " delivered";
        h += '<tr class="req-' + esc(r.state) + '"><td>' + esc(dirName(r.dir)) + '</td><td class="mono">' + esc(name(r)) + '</td><td class="num">' + at(r.sent) + "</td><td>" + esc(o) + "</td></tr>";
      });
      h += "</table>" + more(p.requests_more, "unfinished request");
    }
    h += "</section><section><h3>latest blocked writes and stalls</h3>";
    if (!p.has_record) h += "<p>no record read (see above)</p>";
    else if (!(p.blocks || []).length) h += "<p>none in the record</p>";
    else {
      h += '<table class="blocks"><tr><th>what</th><th>bytes held</th><th>from</th><th>outcome</th></tr>';
      p.blocks.forEach(function (b) {
        var block = b.kind === "block";
        var o = b.end ? "ended after " + dur(b.end - b.since) : (block ? "still blocked, " : "still in effect, ") + dur(p.now_us - b.since) + (p.ending ? " when the record ends" : " so far");
        h += '<tr class="' + (b.end ? "ended" : "stuck") + '"><td>' + esc(block ? reader(b.dir).replace("is not reading", "not reading") : "the proxy's fault " + b.dir + ":" + b.kind + " holds " + pipe(b.dir, 0)) +
          '</td><td class="num">' + (block ? size(b.n) : "(in the pipe)") + '</td><td class="num">' + at(b.since) + "</td><td>" + esc(o) + "</td></tr>";
      });
      h += "</table>";
    }
    h += "</section></div></div>";
    frames.set(String(st.proxy_pid), Array.isArray(p.frames) ? p.frames : []);
    return h;
  }
  function show(data) {
    var now = Date.parse(data.now);
    polls++;
    var gone = data.proxies.filter(function (p) { return p.stale; }).length, running = data.proxies.length - gone;
    meta.textContent = plural(running, "proxy", "proxies") + " running" + (gone ? ", " + gone + " gone (stale status file)" : "") + " · updated " + new Date(now).toLocaleTimeString() + " (twice a second) · read-only" + (data.error ? " · " + data.error : "");
    frames = new Map();
    root.innerHTML = data.proxies.length ? data.proxies.map(function (p) { return card(p, now); }).join("") : "<p>no running mcpstdio proxy</p>";
    document.body.setAttribute("data-polls", polls);
  }
  function poll() {
    fetch("status.json?token=" + encodeURIComponent(token), { cache: "no-store" }).then(function (r) {
      if (!r.ok) throw new Error(r.status + " " + r.statusText);
      return r.json();
    }).then(show).catch(function (e) { meta.textContent = "cannot update: " + e.message; }).finally(function () { setTimeout(poll, 500); });
  }
  document.addEventListener("click", function (ev) {
    var el = ev.target.closest("[data-f],.req"), c = ev.target.closest(".card");
    if (!el || !c) return;
    var fs = frames.get(c.getAttribute("data-proxy")) || [];
    var f = el.hasAttribute("data-f") ? fs[+el.getAttribute("data-f")] : fs.filter(function (x) { return x.seq === +el.getAttribute("data-seq"); })[0];
    detail.innerHTML = "<b>" + esc(el.querySelector("title").textContent) + "</b>" + (f ? "<pre>" + esc(f.head || "(no head recorded)") + "</pre>" : "");
  });
  poll();
})();
