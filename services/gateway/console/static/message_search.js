// Searching a whole partition on the gateway (record-search): key equals, value contains,
// header matches; each request scans a bounded number of records and says how far it got, and
// "Continue" scans on from there, adding what it finds to the same table.
import { call, cluster, enc } from "./api.js";
import { appendRecords, recordsTable } from "./record_cells.js";
import { failure, field, h } from "./ui.js";

const DEFAULT_SCANNED = 10000;
const MAX_SCANNED = 100000;

export function searchSection(topic, partition, mode) {
  const key = h("input", { name: "key" });
  const value = h("input", { name: "value" });
  const header = h("input", { name: "header" });
  const headerValue = h("input", { name: "header_value" });
  const direction = h("select", { name: "direction" },
    h("option", { value: "backward" }, "Newest first"), h("option", { value: "forward" }, "Oldest first"));
  const offset = h("input", { name: "offset", type: "number", min: 0, placeholder: "the end or the start" });
  const scanned = h("input", { name: "max_scanned", type: "number", min: 1, max: MAX_SCANNED, value: DEFAULT_SCANNED });
  const outcome = h("div", { id: "search-outcome", "aria-live": "polite" });
  let query = null;
  let total = 0;
  let found = null;

  const progress = (answer) => {
    const edge = answer.direction === "forward" ? "the end" : "the start";
    const where = answer.reached_offset === null ? "" : `, up to offset ${answer.reached_offset}`;
    const status = h("p", { id: "search-progress", role: "status" },
      `Scanned ${total} records${where}; ${found.querySelectorAll("tbody tr").length} found. `,
      answer.exhausted ? `Reached ${edge} of the partition.` : null);
    const more = answer.exhausted ? null
      : h("button", { type: "button", class: "secondary", onclick: () => run(answer.next_offset) }, "Continue");
    return [status, more];
  };

  const run = async (from) => {
    const params = new URLSearchParams(query);
    if (from !== null) params.set("offset", String(from));
    try {
      const answer = await call("GET",
        `${await cluster()}/topics/${enc(topic)}/partitions/${partition}/record-search?${params}`);
      total += answer.scanned;
      if (found === null) found = recordsTable("Records found", answer.matches, mode);
      else appendRecords(found, answer.matches, mode);
      outcome.replaceChildren(...[...progress(answer), found].filter(Boolean));
    } catch (error) {
      outcome.replaceChildren(failure(error));
    }
  };

  const submit = (event) => {
    event.preventDefault();
    query = new URLSearchParams({ direction: direction.value, max_scanned: scanned.value || String(DEFAULT_SCANNED) });
    for (const [name, input] of [["key", key], ["value", value], ["header", header], ["header_value", headerValue]]) {
      if (input.value !== "") query.set(name, input.value);
    }
    total = 0;
    found = null;
    // The API's backward offset is the one below which it reads: the offset typed is included.
    const backward = direction.value === "backward";
    run(offset.value === "" ? null : Number(offset.value) + (backward ? 1 : 0));
  };

  return h("section", { "aria-labelledby": "search-title" },
    h("h2", { id: "search-title" }, "Search the whole partition"),
    h("p", { class: "muted" }, "The gateway reads the partition itself, a bounded number of records per search; ",
      "every condition given must hold."),
    h("form", { class: "inline", onsubmit: submit },
      field("Key equals", key), field("Value contains", value),
      field("Header name", header), field("Header value contains", headerValue),
      field("Search order", direction), field("Start at offset", offset),
      field("Records to scan", scanned),
      h("button", { type: "submit" }, "Search")),
    outcome);
}
