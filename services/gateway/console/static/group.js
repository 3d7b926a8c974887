// One consumer group: state, protocol, members with host and assignment, and per partition
// the committed offset, log end and lag, redrawn every 3 s (``?refresh_ms=``) so lag is seen moving;
// resetting its offsets (previewed first by a dry run) and deleting it.
import { call, cluster, enc } from "./api.js";
import { confirmTyped, failure, field, h, notice, redrawn, table } from "./ui.js";

const REFRESH_MS = 3000;
const MIN_REFRESH_MS = 500;
let stop = async () => {};

export function leave() {
  stop();
}

export async function render(main, { arg, params, stillCurrent }) {
  const every = Math.max(MIN_REFRESH_MS, Number(params.get("refresh_ms")) || REFRESH_MS);
  const body = h("div", {});
  const stamp = h("p", { class: "muted", role: "status" });
  main.replaceChildren(h("h1", {}, "Group ", h("span", { id: "group-name" }, arg)),
    h("p", {}, h("a", { href: "#/groups" }, "All groups")), stamp, body,
    administer(arg, `${await cluster()}/consumer-groups/${enc(arg)}`));
  const read = () => call("GET", `/groups/${enc(arg)}`);
  // The total lag of each reading since the page opened, drawn as a line.
  const history = [];
  const paint = (view) => {
    history.push(view.partitions.reduce((sum, p) => sum + (p.lag || 0), 0));
    if (history.length > HISTORY) history.shift();
    return [...content(view), lagChart(history, every)];
  };
  stop = await redrawn(every, stillCurrent, body, stamp, read, paint);
}

const HISTORY = 60;
const SVG = "http://www.w3.org/2000/svg";

function lagChart(history, every) {
  const width = 300;
  const height = 60;
  const top = Math.max(1, ...history);
  const step = width / (HISTORY - 1);
  const points = history.map((lag, i) => `${(i * step).toFixed(1)},${(height - (lag / top) * (height - 4) - 2).toFixed(1)}`);
  const svg = document.createElementNS(SVG, "svg");
  svg.setAttribute("viewBox", `0 0 ${width} ${height}`);
  svg.setAttribute("class", "spark");
  svg.setAttribute("role", "img");
  svg.setAttribute("aria-label", `Total lag over the last ${history.length} readings: from ${Math.min(...history)} to ${top}, now ${history[history.length - 1]}`);
  const line = document.createElementNS(SVG, "polyline");
  line.setAttribute("points", points.join(" "));
  line.setAttribute("id", "lag-line");
  svg.append(line);
  return h("section", { "aria-labelledby": "lag-history-title" },
    h("h2", { id: "lag-history-title" }, "Lag over time"),
    h("p", { class: "muted" }, `Total lag at each reading, every ${every / 1000} s since this page opened (highest ${top}).`),
    svg);
}

function content(view) {
  const total = view.partitions.reduce((sum, p) => sum + (p.lag || 0), 0);
  const card = (label, value, id) =>
    h("div", { class: "card" }, h("dl", {}, h("dt", {}, label), h("dd", { id }, value)));
  return [
    h("div", { class: "cards" },
      card("State", view.state, "group-state"),
      card("Protocol", view.protocol || "–"),
      card("Generation", view.generation ?? "–"),
      card("Members", view.members.length),
      card("Total lag", total, "group-lag")),
    h("section", { "aria-labelledby": "members-title" },
      h("h2", { id: "members-title" }, "Members"),
      table("Members and the partitions assigned to them", [
        { title: "Member" }, { title: "Client" }, { title: "Host" }, { title: "Assigned" },
      ], view.members.map((m) => [
        m.instance_id ? `${m.member_id} (static: ${m.instance_id})` : m.member_id,
        m.client_id, m.host,
        m.assignment.map((a) => `${a.topic}-${a.partition}`).join(", ") || "–",
      ]))),
    h("section", { "aria-labelledby": "lags-title" },
      h("h2", { id: "lags-title" }, "Offsets and lag"),
      table("Committed offset, log end (last stable offset) and lag per partition", [
        { title: "Topic" }, { title: "Partition", num: true }, { title: "Committed", num: true },
        { title: "Log end", num: true }, { title: "Lag", num: true },
      ], view.partitions.map((p) => [
        h("a", { href: `#/topic/${enc(p.topic)}` }, p.topic), String(p.partition),
        p.committed_offset < 0 ? "none" : String(p.committed_offset),
        p.end_offset === null ? "unknown" : String(p.end_offset),
        p.lag === null ? "–" : h("span", { class: p.lag > 0 ? "lagging" : null }, String(p.lag)),
      ]))),
  ];
}

// Outside the redrawn part, so what is typed survives the redraws.
function administer(group, base) {
  const topic = h("input", { name: "topic_name", required: true });
  const to = h("select", { name: "to" },
    [["earliest", "Earliest"], ["latest", "Latest"], ["offset", "An offset"]].map(([v, l]) => h("option", { value: v }, l)));
  const offset = h("input", { name: "offset", type: "number", min: 0 });
  const outcome = h("div", { "aria-live": "polite", id: "group-outcome" });
  const reset = async (dryRun) => {
    const body = { topic_name: topic.value.trim(), to: to.value, dry_run: dryRun };
    if (to.value === "offset") body.offset = Number(offset.value);
    try {
      const answer = await call("POST", `${base}/offsets:reset`, { body });
      outcome.replaceChildren(
        notice(dryRun ? "Dry run: nothing was committed. These offsets would be:" : "Offsets reset:"),
        table(dryRun ? "Planned offsets" : "Committed offsets", [
          { title: "Partition", num: true }, { title: "Committed before", num: true }, { title: "New offset", num: true },
        ], answer.data.map((p) => [String(p.partition_id), p.current_offset === null ? "none" : String(p.current_offset), String(p.new_offset)])));
    } catch (error) {
      outcome.replaceChildren(failure(error));
    }
  };
  const remove = async () => {
    if (!(await confirmTyped(`Delete group ${group} and its committed offsets?`, group))) return;
    // No redraw may ask for the group once it is gone.
    await stop();
    try {
      await call("DELETE", base);
      location.hash = `#/groups?deleted=${enc(group)}`;
    } catch (error) {
      outcome.replaceChildren(failure(error));
    }
  };
  return h("section", { "aria-labelledby": "admin-title" },
    h("h2", { id: "admin-title" }, "Reset offsets or delete"),
    h("p", { class: "muted" }, "A reset commits only while the group has no members; a dry run shows what it would commit."),
    h("form", { class: "inline", onsubmit: (e) => { e.preventDefault(); reset(true); } },
      field("Topic to reset", topic), field("Reset to", to), field("Offset", offset),
      h("button", { type: "submit" }, "Preview (dry run)"),
      h("button", { type: "button", class: "danger", onclick: () => reset(false) }, "Reset offsets")),
    h("button", { type: "button", class: "danger", onclick: remove }, "Delete group…"),
    outcome);
}
