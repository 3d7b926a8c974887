// One topic: partitions (replicas, leader, ISR with lagging replicas marked, log start and
// end), configs, adding partitions, and deleting it once its name is typed again.
import { call, cluster, enc } from "./api.js";
import { NOT_PERMITTED, bytes, refused } from "./sizes.js";
import { confirmTyped, failure, field, h, notice, pager, table } from "./ui.js";

const PAGE = 100;
// The config last chosen, chosen again when the page is redrawn after a change.
let lastConfig = null;

export async function render(main, { arg, params, stillCurrent }) {
  const name = arg;
  const offset = Math.max(0, Number(params.get("offset")) || 0);
  const base = `${await cluster()}/topics/${enc(name)}`;
  const partitions = h("section", { "aria-labelledby": "partitions-title" }, h("h2", { id: "partitions-title" }, "Partitions"));
  const configs = h("section", { "aria-labelledby": "configs-title" }, h("h2", { id: "configs-title" }, "Configs"));
  const outcome = h("div", { "aria-live": "polite", id: "topic-outcome" });
  main.replaceChildren(
    h("h1", {}, "Topic ", h("span", { id: "topic-name" }, name)),
    h("p", {}, h("a", { href: `#/messages?topic=${enc(name)}&partition=0` }, "Browse messages"), " · ",
      h("a", { href: "#/topics" }, "All topics")),
    outcome, partitions, configs, actions(name, base, outcome));
  const [parts, conf] = await Promise.allSettled([
    call("GET", `${base}/partition-summaries?offset=${offset}&limit=${PAGE}`),
    call("GET", `${base}/configs`),
  ]);
  if (!stillCurrent()) return;
  if (parts.status === "rejected") partitions.append(failure(parts.reason));
  else {
    const p = parts.value;
    partitions.append(
      h("p", { id: "topic-size" }, "Size: …"),
      table(`${p.total} partitions; replicas out of the ISR are marked lagging`, [
        { title: "Partition", num: true }, { title: "Leader", num: true }, { title: "Replicas" },
        { title: "In sync (ISR)" }, { title: "Log start", num: true }, { title: "Log end", num: true },
        { title: "Size", num: true }, { title: "Replica sizes" }, { title: "Messages" },
      ], p.data.map((s) => [
        String(s.partition_id),
        s.leader_id === null ? h("span", { class: "bad" }, "offline") : String(s.leader_id),
        h("span", {}, s.replica_ids.map((r, i) => [i ? ", " : "", s.lagging_replica_ids.includes(r)
          ? h("span", { class: "lagging", title: "not in sync" }, `${r} (lagging)`) : String(r)])),
        s.isr_ids.join(", "),
        offsetText(s.log_start_offset), offsetText(s.log_end_offset),
        h("span", { class: "size", "data-partition": s.partition_id }, "…"),
        h("span", { class: "replica-sizes", "data-partition": s.partition_id }, "…"),
        h("a", { href: `#/messages?topic=${enc(name)}&partition=${s.partition_id}` }, "browse"),
      ])),
      pager(p.total, offset, PAGE, (next) => { location.hash = `#/topic/${enc(name)}?offset=${next}`; }));
  }
  if (conf.status === "rejected") configs.append(failure(conf.reason));
  else {
    configs.append(table("Configs; overrides are set on this topic, defaults come from the brokers", [
      { title: "Name" }, { title: "Value" }, { title: "Source" },
    ], conf.value.data.map((c) => [
      c.name, c.is_sensitive ? "(sensitive)" : (c.value ?? "–"),
      h("span", { class: c.is_default ? "muted" : null }, c.source || (c.is_default ? "default" : "override")),
    ])), configForm(base, conf.value.data.filter((c) => !c.is_read_only), outcome));
  }
  // Sizes once the partitions are shown (asked only when they could be read at all).
  if (parts.status === "fulfilled") await fillSizes(partitions, `${base}/partition-sizes?offset=${offset}&limit=${PAGE}`, stillCurrent);
}

// Set one config, or reset it to the brokers' default (configs:alter, all or nothing).
function configForm(base, configs, outcome) {
  const name = h("select", { name: "config" },
    configs.map((c) => h("option", { value: c.name, selected: c.name === lastConfig }, c.name)));
  const value = h("input", { name: "value" });
  const fill = () => {
    const c = configs.find((x) => x.name === name.value);
    value.value = c && c.value !== null ? c.value : "";
  };
  name.addEventListener("change", () => { lastConfig = name.value; fill(); });
  fill();
  const send = async (operation) => {
    try {
      await call("POST", `${base}/configs:alter`, { body: { data: [{ name: name.value, value: value.value, operation }] } });
      const done = operation === "SET" ? `${name.value} set to ${value.value}.` : `${name.value} reset to its default.`;
      document.addEventListener("console:drawn", () => document.getElementById("topic-outcome").replaceChildren(notice(done)), { once: true });
      window.dispatchEvent(new HashChangeEvent("hashchange"));
    } catch (error) {
      outcome.replaceChildren(failure(error));
    }
  };
  return h("form", { class: "inline", onsubmit: (e) => { e.preventDefault(); send("SET"); } },
    field("Config", name), field("Value", value),
    h("button", { type: "submit" }, "Set config"),
    h("button", { type: "button", class: "secondary", onclick: () => send("DELETE") }, "Reset to default"));
}

// The topic's size and, per partition, the leader replica's and every replica's, from
// partition-sizes; "not permitted" without DESCRIBE on the cluster, the rest of the page as it is.
async function fillSizes(partitions, path, stillCurrent) {
  let summary;
  let leader;
  let replicas;
  try {
    const d = await call("GET", path);
    const byId = new Map(d.data.map((p) => [String(p.partition_id), p]));
    const unknown = d.unknown_replicas ? `; ${d.unknown_replicas} replicas did not report` : "";
    summary = `Size: ${bytes(d.size_bytes)} (${bytes(d.replicas_size_bytes)} with every replica${unknown})`;
    leader = (id) => bytes(byId.get(id)?.size_bytes ?? null);
    replicas = (id) => (byId.get(id)?.replicas || []).map((r) => `${r.broker_id}: ${bytes(r.size_bytes)}`).join(", ");
  } catch (error) {
    const why = refused(error) ? NOT_PERMITTED : `unavailable (${error.message})`;
    summary = `Size: ${why}`;
    leader = () => why;
    replicas = () => "–";
  }
  if (!stillCurrent()) return;
  partitions.querySelector("#topic-size").textContent = summary;
  for (const cell of partitions.querySelectorAll("span.size")) cell.textContent = leader(cell.dataset.partition);
  for (const cell of partitions.querySelectorAll("span.replica-sizes")) cell.textContent = replicas(cell.dataset.partition);
}

function offsetText(offset) {
  return offset < 0 ? "unknown" : String(offset);
}

function actions(name, base, outcome) {
  const count = h("input", { type: "number", min: 1, name: "partitions_count", required: true });
  const grow = async (event) => {
    event.preventDefault();
    try {
      await call("PATCH", base, { body: { partitions_count: Number(count.value) } });
      const done = `${name} now has ${count.value} partitions.`;
      document.addEventListener("console:drawn", () => document.getElementById("topic-outcome").replaceChildren(notice(done)), { once: true });
      window.dispatchEvent(new HashChangeEvent("hashchange"));
    } catch (error) {
      outcome.replaceChildren(failure(error));
    }
  };
  const remove = async () => {
    if (!(await confirmTyped(`Delete topic ${name} and all its records? This cannot be undone.`, name))) return;
    try {
      await call("DELETE", base);
      location.hash = `#/topics?deleted=${enc(name)}`;
    } catch (error) {
      outcome.replaceChildren(failure(error));
    }
  };
  return h("section", { "aria-labelledby": "actions-title" },
    h("h2", { id: "actions-title" }, "Change"),
    h("form", { class: "inline", onsubmit: grow },
      field("New partition count", count), h("button", { type: "submit" }, "Add partitions")),
    h("button", { type: "button", class: "danger", onclick: remove }, "Delete topic…"));
}
