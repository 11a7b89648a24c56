// imixs-archive UI: progressive enhancement only. Pages work without this file; it adds
// tabs and live job progress.
"use strict";
document.documentElement.classList.add("js");

function tabs() {
  const bar = document.querySelector("[data-tabs]");
  if (!bar) return;
  const links = Array.from(bar.querySelectorAll("a.tab"));
  const show = (id) => {
    links.forEach((a) => a.classList.toggle("active", a.getAttribute("href") === "#" + id));
    links.forEach((a) => {
      const panel = document.querySelector(a.getAttribute("href"));
      if (panel) panel.classList.toggle("hidden", a.getAttribute("href") !== "#" + id);
    });
  };
  links.forEach((a) => a.addEventListener("click", (event) => {
    event.preventDefault();
    show(a.getAttribute("href").slice(1));
    history.replaceState(null, "", a.getAttribute("href"));
  }));
  const wanted = location.hash.slice(1);
  show(links.some((a) => a.getAttribute("href") === "#" + wanted) ? wanted : "items");
}

function render(box, status) {
  const set = (field, text) => {
    const el = box.querySelector(`[data-field="${field}"]`);
    if (el) el.textContent = text;
  };
  set("state", status.state);
  const state = box.querySelector('[data-field="state"]');
  if (state) state.className = "state " + status.state;
  set("started", localTime(status.started, box.getAttribute("data-tz") || "UTC"));
  set("message", status.error || status.message);
  const shown = Object.assign({}, status.progress, status.result);
  // a dry run's plan is a table of the page, not part of the summary
  for (const key of ["planned", "back", "not_yet", "request", "token"]) delete shown[key];
  const table = box.querySelector('[data-field="progress"]');
  if (table) table.replaceChildren(...Object.entries(shown).map(([key, value]) => row(key, value)));
}

// An instant as the server draws it (web/app.py local_time()): date and time in the
// service's time zone (ARCHIVE_TIMEZONE), the zone named.
function localTime(iso, zone) {
  if (!iso) return "–";
  const when = new Date(iso);
  if (Number.isNaN(when.getTime())) return String(iso);
  const parts = {};
  new Intl.DateTimeFormat("en-GB", {
    timeZone: zone, hourCycle: "h23", year: "numeric", month: "2-digit", day: "2-digit",
    hour: "2-digit", minute: "2-digit", second: "2-digit",
  }).formatToParts(when).forEach((p) => { parts[p.type] = p.value; });
  return `${parts.year}-${parts.month}-${parts.day} ${parts.hour}:${parts.minute}:${parts.second} ${zone}`;
}

// One labelled value, as the server draws it (web/app.py labelled()).
function row(key, value) {
  const tr = document.createElement("tr");
  const th = document.createElement("th");
  const td = document.createElement("td");
  const label = key.replace(/_/g, " ");
  th.textContent = label.charAt(0).toUpperCase() + label.slice(1);
  td.textContent = text(key, value);
  tr.append(th, td);
  return tr;
}

function text(key, value) {
  if (value === null || value === undefined) return "–";
  if (typeof value === "boolean") return value ? "yes" : "no";
  if (typeof value === "number" && key.includes("bytes")) return bytes(value);
  if (Array.isArray(value)) return value.length ? value.join(", ") : "none";
  if (typeof value === "object") {
    const parts = Object.entries(value).map(([k, v]) => `${k}: ${text(k, v)}`);
    return parts.length ? parts.join(", ") : "none";
  }
  return String(value);
}

function bytes(count) {
  const units = ["B", "KiB", "MiB", "GiB", "TiB"];
  let size = count;
  let unit = 0;
  while (size >= 1024 && unit < units.length - 1) { size /= 1024; unit += 1; }
  return unit ? `${size.toFixed(1)} ${units[unit]}` : `${count} B`;
}

function poll(box) {
  const url = box.getAttribute("data-poll");
  const tick = async () => {
    try {
      const answer = await fetch(url, { headers: { Accept: "application/json" } });
      if (answer.ok) {
        const status = await answer.json();
        if (!box.querySelector('[data-field="state"]')) { location.reload(); return; }
        render(box, status);
        if (status.active) { setTimeout(tick, 1000); return; }
        box.removeAttribute("data-active");
        // A page that shows the job's outcome (e.g. a restore plan) is drawn again.
        if (box.hasAttribute("data-reload-when-done")) location.reload();
      }
    } catch (error) { setTimeout(tick, 3000); }
  };
  tick();
}

// A page that shows live figures (the Monitor) is drawn again every few seconds, unless
// the tab is hidden or someone is typing in it.
function refresh() {
  const holder = document.querySelector("[data-refresh-seconds]");
  if (!holder) return;
  const seconds = Number(holder.getAttribute("data-refresh-seconds")) || 15;
  const again = () => {
    const typing = document.activeElement && document.activeElement.matches("input, textarea, select");
    if (document.hidden || typing) { setTimeout(again, 1000 * seconds); return; }
    location.reload();
  };
  setTimeout(again, 1000 * seconds);
}

// Seconds until something (the sync's next round) count down where the page shows them.
function countdown() {
  const shown = Array.from(document.querySelectorAll("[data-countdown]"));
  if (!shown.length) return;
  const loaded = Date.now();
  const from = shown.map((el) => Number(el.textContent) || 0);
  setInterval(() => {
    const gone = Math.floor((Date.now() - loaded) / 1000);
    shown.forEach((el, i) => { el.textContent = String(Math.max(0, from[i] - gone)); });
  }, 1000);
}

document.addEventListener("DOMContentLoaded", () => {
  tabs();
  refresh();
  countdown();
  document.querySelectorAll("[data-poll][data-active]").forEach(poll);
});
