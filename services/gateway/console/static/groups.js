// Consumer groups: a search answered by the gateway a page at a time (name, state, kind), each
// group with its state and assignor; ZooKeeper-era groups are marked and open their own view.
import { call, cluster, enc } from "./api.js";
import { field, h, notice, pager, table } from "./ui.js";

const PAGE = 100;
const STATES = ["Stable", "Empty", "PreparingRebalance", "CompletingRebalance", "Dead"];
const KINDS = [["", "Any"], ["broker", "Broker-coordinated"], ["zookeeper", "ZooKeeper"]];

function go(filters, offset) {
  const query = new URLSearchParams();
  for (const [name, value] of Object.entries(filters)) if (value) query.set(name, value);
  if (offset) query.set("offset", String(offset));
  location.hash = `#/groups?${query}`;
}

export function groupLink(g) {
  const zk = g.kind === "zookeeper";
  return h("a", { href: `#/group/${enc(g.consumer_group_id)}${zk ? "?kind=zookeeper" : ""}` }, g.consumer_group_id);
}

export async function render(main, { params, stillCurrent }) {
  const filters = { q: params.get("q") || "", state: params.get("state") || "", kind: params.get("kind") || "" };
  const offset = Math.max(0, Number(params.get("offset")) || 0);
  const search = h("input", { type: "search", name: "q", value: filters.q, placeholder: "part of a group id" });
  const state = h("select", { name: "state" }, h("option", { value: "" }, "Any"),
    STATES.map((s) => h("option", { value: s, selected: s === filters.state }, s)));
  const kind = h("select", { name: "kind" },
    KINDS.map(([v, l]) => h("option", { value: v, selected: v === filters.kind }, l)));
  const results = h("section", { "aria-labelledby": "groups-found" });
  const deleted = params.get("deleted");
  const submit = (e) => {
    e.preventDefault();
    go({ q: search.value.trim(), state: state.value, kind: kind.value }, 0);
  };
  // replaceChildren would write a null as the text "null": absent parts are left out.
  main.replaceChildren(...[h("h1", {}, "Consumer groups"),
    deleted ? notice(`Group ${deleted} deleted.`) : null,
    h("form", { class: "inline", role: "search", onsubmit: submit },
      field("Search groups", search), field("State", state), field("Coordinated by", kind),
      h("button", { type: "submit" }, "Search")),
    results].filter(Boolean));
  const query = new URLSearchParams({ ...filters, offset: String(offset), limit: String(PAGE) });
  for (const name of ["q", "state", "kind"]) if (!filters[name]) query.delete(name);
  const found = await call("GET", `${await cluster()}/group-search?${query}`);
  if (!stillCurrent()) return;
  const filtered = filters.q || filters.state || filters.kind;
  results.replaceChildren(
    h("h2", { id: "groups-found" }, filtered ? "Groups matching the filters" : "All groups"),
    table(`${found.total} groups`, [
      { title: "Group" }, { title: "Coordinated by" }, { title: "State" }, { title: "Assignor" },
    ], found.data.map((g) => [
      groupLink(g),
      g.kind === "zookeeper" ? h("span", { class: "tag" }, "ZooKeeper") : "Broker",
      g.problem ? [g.state, " ", h("span", { class: "bad" }, `(unreadable: ${g.problem})`)] : g.state,
      g.partition_assignor || "–",
    ])),
    pager(found.total, offset, PAGE, (next) => go(filters, next)));
}
