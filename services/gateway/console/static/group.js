// One consumer group: state, protocol, members with host and assignment, and per partition
// the committed offset, log end and lag, redrawn every 3 s (``?refresh_ms=``) so lag is seen moving,
// with its total lag over time from before the page opened (the active controller's record);
// resetting its offsets (previewed first by a dry run) and deleting it. A ZooKeeper-era group
// (``?kind=zookeeper``) is read from ZooKeeper: consumers, owners, offsets, read-only.
import { call, cluster, enc } from "./api.js";
import { confirmTyped, failure, field, h, notice, redrawn, table, when } from "./ui.js";

const REFRESH_MS = 3000;
const MIN_REFRESH_MS = 500;
let stop = async () => {};

export function leave() {
  stop();
}

export async function render(main, { arg, params, stillCurrent }) {
  const every = Math.max(MIN_REFRESH_MS, Number(params.get("refresh_ms")) || REFRESH_MS);
  const zookeeper = params.get("kind") === "zookeeper";
  const body = h("div", {});
  const stamp = h("p", { class: "muted", role: "status" });
  const root = await cluster();
  const base = `${root}/consumer-groups/${enc(arg)}`;
  main.replaceChildren(h("h1", {}, "Group ", h("span", { id: "group-name" }, arg)),
    h("p", {}, h("a", { href: "#/groups" }, "All groups")), stamp, body,
    zookeeper ? zkAdminister(arg, base, () => latest) : administer(arg, base));
  const read = zookeeper
    ? () => call("GET", `${root}/zookeeper-groups/${enc(arg)}`)
    : () => call("GET", `/groups/${enc(arg)}`);
  // The active controller's record of the group's total lag from before the page opened,
  // then each reading of this page appended. Asked beside the first reading, not before it:
  // the record joins the line at the next redraw.
  const history = [];
  let recorded = { points: [], interval_ms: 0, note: "the controller's record is not here yet" };
  call("GET", `${base}/lag-history`).then((answer) => {
    recorded = answer;
    const first = history.length ? history[0].time_ms : Infinity;
    history.unshift(...answer.points.filter((p) => p.time_ms < first)
      .map((p) => ({ time_ms: p.time_ms, lag: p.total_lag, recorded: true })));
  }, (error) => {
    // Without it the line starts at this page's first reading.
    recorded = { points: [], interval_ms: 0, note: `the controller's record could not be read: ${error.message}` };
  });
  let latest = null;
  const paint = (view) => {
    latest = view;
    history.push({ time_ms: Date.now(), lag: totalLag(view), recorded: false });
    while (history.length > HISTORY) history.shift();
    const chart = lagChart(history, recorded, every);
    return (zookeeper ? [...zkContent(view), chart] : [...content(view), chart]).filter(Boolean);
  };
  stop = await redrawn(every, stillCurrent, body, stamp, read, paint);
}

const HISTORY = 2000;
const SVG = "http://www.w3.org/2000/svg";

function totalLag(view) {
  return view.partitions.reduce((sum, p) => sum + (p.lag || 0), 0);
}

function svg(tag, attrs) {
  const el = document.createElementNS(SVG, tag);
  for (const [name, value] of Object.entries(attrs)) if (value !== null) el.setAttribute(name, String(value));
  return el;
}

// One line over time: the controller's recorded points (solid), this page's readings after
// them (dashed), x by time, y by lag from 0 to the highest.
function lagChart(history, recorded, every) {
  const width = 600;
  const height = 120;
  const lags = history.map((p) => p.lag);
  const top = Math.max(1, ...lags);
  const first = history[0].time_ms;
  const span = Math.max(1, history[history.length - 1].time_ms - first);
  const pad = 6;  // keeps the dots at the edges inside the box
  const x = (p) => pad + ((p.time_ms - first) / span) * (width - 2 * pad);
  const y = (p) => height - pad - (p.lag / top) * (height - 2 * pad);
  const at = (p) => `${x(p).toFixed(1)},${y(p).toFixed(1)}`;
  const old = history.filter((p) => p.recorded);
  const live = history.filter((p) => !p.recorded);
  const chart = svg("svg", { viewBox: `0 0 ${width} ${height}`, class: "spark", role: "img", preserveAspectRatio: "none",
    "aria-label": `Total lag over the last ${history.length} readings: from ${Math.min(...lags)} to ${top}, now ${lags[lags.length - 1]}` });
  if (old.length) chart.append(svg("polyline", { id: "lag-recorded", points: old.map(at).join(" ") }));
  // A dot per recorded point, so even one reads as a point in time.
  for (const p of old) chart.append(svg("circle", { class: "recorded", cx: x(p).toFixed(1), cy: y(p).toFixed(1), r: 3 }));
  // The live line starts where the recorded one ends, so the two read as one.
  const joined = old.length ? [old[old.length - 1], ...live] : live;
  chart.append(svg("polyline", { id: "lag-line", class: old.length ? "live" : null, points: joined.map(at).join(" ") }));
  const now = history[history.length - 1];
  chart.append(svg("circle", { class: "now", cx: x(now).toFixed(1), cy: y(now).toFixed(1), r: 3 }));
  const since = old.length
    ? `recorded by the active controller every ${recorded.interval_ms / 1000} s from ${new Date(first).toLocaleTimeString()} (solid), then every ${every / 1000} s on this page (dashed)`
    : `every ${every / 1000} s since this page opened${recorded.note ? ` (${recorded.note})` : ""}`;
  return h("section", { "aria-labelledby": "lag-history-title" },
    h("h2", { id: "lag-history-title" }, "Lag over time"),
    h("p", { class: "muted", id: "lag-history-source" }, `Total lag ${since}; highest ${top}.`),
    chart);
}

function problemCell(problem) {
  return problem ? h("span", { class: "bad" }, problem) : "–";
}

function zkContent(view) {
  const card = (label, value, id) =>
    h("div", { class: "card" }, h("dl", {}, h("dt", {}, label), h("dd", { id }, value)));
  return [
    h("div", { class: "cards" },
      card("State", view.state, "group-state"),
      card("Coordinated by", "ZooKeeper", "group-kind"),
      card("Members", view.members.length),
      card("Total lag", totalLag(view), "group-lag")),
    view.problems.length ? h("div", { class: "error", role: "alert" }, h("strong", {}, "Unreadable nodes: "), view.problems.join("; ")) : null,
    h("section", { "aria-labelledby": "members-title" },
      h("h2", { id: "members-title" }, "Members"),
      view.members.length ? null : h("p", { class: "muted" }, "No consumer is registered now."),
      table("Consumers registered in ZooKeeper", [
        { title: "Consumer" }, { title: "Host" }, { title: "Subscription" }, { title: "Registered" }, { title: "Problem" },
      ], view.members.map((m) => [
        m.consumer_id, m.host || "–",
        m.topics.length ? `${m.topics.join(", ")}${m.pattern === "static" ? "" : ` (${m.pattern})`}` : "–",
        when(m.registered_at_ms), problemCell(m.problem),
      ]))),
    h("section", { "aria-labelledby": "lags-title" },
      h("h2", { id: "lags-title" }, "Offsets and lag"),
      table("Owner, committed offset (from ZooKeeper), log end and lag per partition", [
        { title: "Topic" }, { title: "Partition", num: true }, { title: "Owner" }, { title: "Committed", num: true },
        { title: "Log end", num: true }, { title: "Lag", num: true }, { title: "Problem" },
      ], view.partitions.map((p) => [
        h("a", { href: `#/topic/${enc(p.topic)}` }, p.topic), String(p.partition), p.owner || "–",
        p.committed_offset === null ? "none" : String(p.committed_offset),
        p.end_offset === null ? "unknown" : String(p.end_offset),
        p.lag === null ? "–" : h("span", { class: p.lag > 0 ? "lagging" : null }, String(p.lag)),
        problemCell(p.problem),
      ]))),
  ];
}

function content(view) {
  const total = totalLag(view);
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
  return h("section", { "aria-labelledby": "admin-title" },
    h("h2", { id: "admin-title" }, "Reset offsets or delete"),
    h("p", { class: "muted" }, "A reset commits only while the group has no members; a dry run shows what it would commit."),
    h("form", { class: "inline", onsubmit: (e) => { e.preventDefault(); reset(true); } },
      field("Topic to reset", topic), field("Reset to", to), field("Offset", offset),
      h("button", { type: "submit" }, "Preview (dry run)"),
      h("button", { type: "button", class: "danger", onclick: () => reset(false) }, "Reset offsets")),
    deleteButton(group, base, outcome),
    outcome);
}

// ``refusal()`` may name why the group cannot be deleted now, before anything is asked.
function deleteButton(group, base, outcome, refusal = () => null) {
  const remove = async () => {
    const why = refusal();
    if (why) {
      outcome.replaceChildren(h("div", { class: "error", role: "alert" }, h("strong", {}, "Not deleted: "), why));
      return;
    }
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
  return h("button", { type: "button", class: "danger", onclick: remove }, "Delete group…");
}

// A ZooKeeper-era group is read-only but for deleting it, which its coordinator does only while
// no consumer is registered (as Kafka's ``kafka-consumer-groups.sh --zookeeper --delete``).
function zkAdminister(group, base, latest) {
  const outcome = h("div", { "aria-live": "polite", id: "group-outcome" });
  return h("section", { "aria-labelledby": "admin-title" },
    h("h2", { id: "admin-title" }, "Delete"),
    h("p", { class: "muted" },
      "A ZooKeeper-era group: its consumers coordinate through ZooKeeper and commit their offsets there, so the console only reads it, ",
      "and deletes it (its offsets with it) only while no consumer is registered."),
    deleteButton(group, base, outcome, () => {
      // Its coordinator will not touch a group with a node it cannot read.
      const view = latest();
      if (!view) return null;
      const broken = [
        ...view.members.filter((m) => m.problem).map((m) => `the registration of ${m.consumer_id}`),
        ...view.partitions.filter((p) => p.problem).map((p) => `the nodes of ${p.topic}-${p.partition}`),
        ...view.problems,
      ];
      return broken.length ? `${broken.join("; ")}: unreadable, so its coordinator will not handle the group; fix or remove them first.` : null;
    }),
    outcome);
}
