// Topics: a search answered by the gateway a page at a time, and a form creating a topic.
import { call, cluster, enc } from "./api.js";
import { NOT_PERMITTED, bytes, refused, topicSizes } from "./sizes.js";
import { failure, field, h, notice, pager, table } from "./ui.js";

const PAGE = 50;

function go(q, offset) {
  const query = new URLSearchParams();
  if (q) query.set("q", q);
  if (offset) query.set("offset", String(offset));
  location.hash = `#/topics?${query}`;
}

export async function render(main, { params, stillCurrent }) {
  const q = params.get("q") || "";
  const offset = Math.max(0, Number(params.get("offset")) || 0);
  const search = h("input", { type: "search", name: "q", value: q, placeholder: "part of a name" });
  const results = h("section", { "aria-labelledby": "topics-found" });
  const deleted = params.get("deleted");
  main.replaceChildren(...[
    h("h1", {}, "Topics"),
    deleted ? notice(`Topic ${deleted} deleted.`) : null,
    h("form", { class: "inline", role: "search", onsubmit: (e) => { e.preventDefault(); go(search.value.trim(), 0); } },
      field("Search topics", search), h("button", { type: "submit" }, "Search")),
    results,
    createForm(),
  ].filter(Boolean));
  const found = await call("GET", `${await cluster()}/topic-search?q=${enc(q)}&offset=${offset}&limit=${PAGE}`);
  if (!stillCurrent()) return;
  results.replaceChildren(
    h("h2", { id: "topics-found" }, q ? `Topics matching “${q}”` : "All topics"),
    table(`${found.total} topics`, [
      { title: "Topic" }, { title: "Partitions", num: true }, { title: "Replication", num: true },
      { title: "Under-replicated", num: true }, { title: "Offline", num: true },
      { title: "Size", num: true },
    ], found.data.map((t) => [
      h("a", { href: `#/topic/${enc(t.topic_name)}` }, t.topic_name),
      String(t.partitions_count), String(t.replication_factor),
      h("span", { class: t.under_replicated_partitions ? "lagging" : null }, String(t.under_replicated_partitions)),
      h("span", { class: t.offline_partitions ? "bad" : null }, String(t.offline_partitions)),
      h("span", { class: "size", "data-topic": t.topic_name }, "…"),
    ])),
    pager(found.total, offset, PAGE, (next) => go(q, next)));
  // Sizes after the list: only this page's topics are asked, and the list never waits on them.
  await fillSizes(results, found.data.map((t) => t.topic_name), stillCurrent);
}

async function fillSizes(results, names, stillCurrent) {
  const cells = [...results.querySelectorAll("span.size")];
  let text;
  try {
    const sizes = await topicSizes(names);
    text = (name) => {
      const s = sizes.get(name);
      return s ? bytes(s.size_bytes) : "–";
    };
  } catch (error) {
    const why = refused(error) ? NOT_PERMITTED : "unavailable";
    text = () => why;
  }
  if (!stillCurrent()) return;
  for (const cell of cells) cell.textContent = text(cell.dataset.topic);
}

function createForm() {
  const name = h("input", { name: "topic_name", required: true, maxlength: 249, pattern: "[a-zA-Z0-9._\\-]+" });
  const partitions = h("input", { name: "partitions", type: "number", min: 1, placeholder: "broker default" });
  const replication = h("input", { name: "replication", type: "number", min: 1, placeholder: "broker default" });
  const outcome = h("div", { "aria-live": "polite" });
  const submit = async (event) => {
    event.preventDefault();
    const body = { topic_name: name.value.trim() };
    if (partitions.value) body.partitions_count = Number(partitions.value);
    if (replication.value) body.replication_factor = Number(replication.value);
    try {
      await call("POST", `${await cluster()}/topics`, { body });
      outcome.replaceChildren(notice(`Topic ${body.topic_name} created.`));
      location.hash = `#/topic/${enc(body.topic_name)}`;
    } catch (error) {
      outcome.replaceChildren(failure(error));
    }
  };
  return h("section", { "aria-labelledby": "create-title" },
    h("h2", { id: "create-title" }, "Create a topic"),
    h("form", { class: "inline", onsubmit: submit },
      field("Name", name), field("Partitions", partitions), field("Replication factor", replication),
      h("button", { type: "submit" }, "Create topic")),
    outcome);
}
