// Handset dashboard: live updates over server-sent events, and the recording's playhead.
// Event text is only ever set as textContent.
"use strict";

(function () {
  function text(el, s) { el.textContent = s == null ? "" : String(s); }

  function clock(ms) {
    var m = Math.floor(ms / 60000), s = (ms % 60000) / 1000;
    return m + ":" + (s < 10 ? "0" : "") + s.toFixed(1);
  }

  // The lines a journal event adds to a live conversation, if any.
  function lineOf(ev) {
    switch (ev.type) {
      case "turn.commit": return { who: "Caller", kind: "caller", text: ev.text };
      case "agent.done": return { who: "Agent", kind: "agent", text: ev.text };
      case "barge_in": return { who: "Handset", kind: "note", text: "The caller barged in after hearing: " + (ev.text || "") };
      case "tts.request": return ev.kind === "filler" ? { who: "Handset", kind: "filler", text: ev.text } : null;
      case "dtmf": return { who: "Handset", kind: "note", text: "The caller pressed " + ev.digit };
      case "agent.error": case "stt.error": case "tts.error":
        return { who: "Handset", kind: "error", text: ev.type + " " + (ev.kind || "") + ": " + (ev.message || "") };
      case "call.end": return { who: "Handset", kind: "note", text: "The call ended: " + (ev.reason || "") };
    }
    return null;
  }

  function addLine(list, ev, line) {
    var li = document.createElement("li");
    li.className = "line line-" + line.kind;
    var at = document.createElement("span"); at.className = "at"; text(at, clock(ev.ms || 0));
    var who = document.createElement("span"); who.className = "who"; text(who, line.who);
    var body = document.createElement("span"); body.className = "text"; text(body, line.text);
    li.append(at, who, body);
    list.append(li);
  }

  // One live call's section on its page.
  function followCall(section) {
    var list = document.getElementById("live-lines");
    var state = document.getElementById("live-state");
    var es = new EventSource(section.dataset.stream);
    es.addEventListener("hello", function () { list.replaceChildren(); });
    es.addEventListener("journal", function (m) {
      var d = JSON.parse(m.data);
      text(state, d.state);
      var line = lineOf(d.event);
      if (line) addLine(list, d.event, line);
    });
    es.addEventListener("lost", function (m) { text(state, JSON.parse(m.data).message); });
    es.addEventListener("end", function () { text(state, "ended"); es.close(); });
  }

  // The live list: one row per call, its state and latest words.
  function followList(table) {
    var body = table.tBodies[0];
    var empty = document.getElementById("live-empty");
    var status = document.getElementById("live-status");
    function row(id) {
      for (var i = 0; i < body.rows.length; i++) {
        if (body.rows[i].dataset.call === id) return body.rows[i];
      }
      var tr = body.insertRow();
      tr.dataset.call = id;
      var th = document.createElement("th"); th.scope = "row";
      var a = document.createElement("a"); a.href = "/dashboard/calls/" + encodeURIComponent(id); text(a, id);
      th.append(a); tr.append(th);
      ["since", "carrier", "caller", "state", "said-caller", "said-agent"].forEach(function (c) {
        var td = document.createElement("td"); td.className = c; tr.append(td);
      });
      empty.hidden = true;
      return tr;
    }
    var es = new EventSource(table.dataset.stream);
    es.addEventListener("journal", function (m) {
      var d = JSON.parse(m.data), ev = d.event, tr = row(d.call);
      if (ev.type === "call.start") {
        text(tr.querySelector(".since"), (ev.ts || "").replace("T", " ").slice(0, 19));
        text(tr.querySelector(".carrier"), ev.carrier);
        text(tr.querySelector(".caller"), ev.caller_hash || ev.caller || "");
      }
      text(tr.querySelector(".state"), d.state);
      if (ev.type === "turn.commit") text(tr.querySelector(".said-caller"), ev.text);
      if (ev.type === "agent.done") text(tr.querySelector(".said-agent"), ev.text);
      if (ev.type === "call.end") { tr.remove(); empty.hidden = body.rows.length > 0; }
    });
    es.addEventListener("lost", function (m) { text(status, JSON.parse(m.data).message); es.close(); });
  }

  // The recording: a playhead over the waveform, and marks that seek.
  function player(audio) {
    var wave = document.getElementById("wave"), head = document.getElementById("playhead");
    if (!wave || !head) return;
    var total = Number(wave.dataset.durationMs) || 1;
    var width = wave.viewBox.baseVal.width;
    audio.addEventListener("timeupdate", function () {
      var x = Math.min(audio.currentTime * 1000 / total, 1) * width;
      head.setAttribute("x1", x); head.setAttribute("x2", x);
    });
    document.addEventListener("click", function (e) {
      var t = e.target.closest("[data-seek-ms]");
      if (!t) return;
      audio.currentTime = Number(t.dataset.seekMs) / 1000;
      audio.play();
    });
  }

  document.addEventListener("DOMContentLoaded", function () {
    var call = document.getElementById("live-call");
    if (call) followCall(call);
    var list = document.getElementById("live-calls");
    if (list) followList(list);
    var audio = document.getElementById("player");
    if (audio) player(audio);
  });
})();
