// Messages: browse one partition from an offset, newest or oldest first, filtered by key or
// text, values shown as JSON or text with their headers; and produce a record.
import { BINARY, call, cluster, enc } from "./api.js";
import { b64, recordsTable, text } from "./record_cells.js";
import { searchSection } from "./message_search.js";
import { failure, field, h, notice } from "./ui.js";

const MAX_SHOWN = 500;

// The browser's time zone, as the time field is read in it: "Europe/Paris, UTC+01:00".
export function zone(at = new Date()) {
  const minutes = -at.getTimezoneOffset();
  const sign = minutes < 0 ? "-" : "+";
  const abs = Math.abs(minutes);
  const offset = `UTC${sign}${String(Math.floor(abs / 60)).padStart(2, "0")}:${String(abs % 60).padStart(2, "0")}`;
  const name = Intl.DateTimeFormat().resolvedOptions().timeZone;
  return name ? `${name}, ${offset}` : offset;
}

function go(form) {
  const query = new URLSearchParams();
  for (const [k, v] of new FormData(form)) if (String(v).trim() !== "") query.set(k, String(v).trim());
  location.hash = `#/messages?${query}`;
}

export async function render(main, { params, stillCurrent }) {
  const topic = params.get("topic") || "";
  const partition = Math.max(0, Number(params.get("partition")) || 0);
  const order = params.get("order") === "oldest" ? "oldest" : "newest";
  const limit = Math.min(MAX_SHOWN, Math.max(1, Number(params.get("limit")) || 50));
  let from = params.get("offset");
  const time = params.get("time") || "";
  const key = params.get("key") || "";
  const contains = params.get("text") || "";
  const mode = params.get("render") === "text" ? "text" : "json";
  const sel = (name, options, value) => h("select", { name },
    options.map(([v, label]) => h("option", { value: v, selected: v === value }, label)));
  const browse = h("form", { class: "inline", onsubmit: (e) => { e.preventDefault(); go(e.target); } },
    field("Topic", h("input", { name: "topic", value: topic, required: true })),
    field("Partition", h("input", { name: "partition", type: "number", min: 0, value: partition })),
    field("From offset", h("input", { name: "offset", type: "number", min: 0, value: from ?? "", placeholder: order === "newest" ? "the end" : "the start" })),
    field(`Or from time (${zone(time ? new Date(time) : new Date())})`,
      h("input", { name: "time", type: "datetime-local", step: 1, value: time })),
    field("Order", sel("order", [["newest", "Newest first"], ["oldest", "Oldest first"]], order)),
    field("At most", h("input", { name: "limit", type: "number", min: 1, max: MAX_SHOWN, value: limit })),
    field("Key contains", h("input", { name: "key", value: key })),
    field("Value or header contains", h("input", { name: "text", value: contains })),
    field("Show values as", sel("render", [["json", "JSON (if it parses)"], ["text", "Text"]], mode)),
    h("button", { type: "submit" }, "Browse"));
  const results = h("section", { "aria-labelledby": "records-title" });
  const search = topic ? searchSection(topic, partition, mode) : null;
  main.replaceChildren(...[h("h1", {}, "Messages"), browse, results, search, produceForm(topic, partition)].filter(Boolean));
  if (!topic) {
    results.replaceChildren(h("p", { class: "muted" }, "Choose a topic to browse."));
    return;
  }
  const path = `/topics/${enc(topic)}/partitions/${partition}`;
  const range = await call("GET", `${path}/offsets`);
  // A time: the first offset at or after it (Kafka's offsetsForTimes), none that late: the
  // log end. Oldest first reads on from that record; newest first reads back from the one
  // before it, as newest first from an offset reads back from that offset.
  let fromTime = null;
  if (time) {
    const at = new Date(time).getTime();
    if (Number.isNaN(at)) {
      results.replaceChildren(failure(new Error(`${time} is not a date and time`)));
      return;
    }
    const found = await call("GET", `${await cluster()}/topics/${enc(topic)}/offsets-for-times?timestamp_ms=${at}&partition_id=${partition}`);
    fromTime = found.data[0];
    from = String(fromTime.offset);
  }
  let start;
  let stop;
  if (order === "newest") {
    const end = fromTime !== null ? Number(from) : from === null ? range.end_offset : Number(from) + 1;
    stop = Math.min(range.end_offset, end);
    start = Math.max(range.beginning_offset, stop - limit);
  } else {
    start = from === null ? range.beginning_offset : Math.max(range.beginning_offset, Number(from));
    stop = Math.min(range.end_offset, start + limit);
  }
  const records = [];
  for (let at = start; at < stop;) {
    const got = await call("GET", `${path}/records?offset=${at}&max_records=${stop - at}`, { accept: BINARY });
    for (const r of got.records) if (r.offset < stop) records.push(r);
    if (got.next_offset <= at) break;
    at = got.next_offset;
  }
  if (!stillCurrent()) return;
  if (order === "newest") records.reverse();
  const shown = records.filter((r) => matches(r, key, contains));
  const when = `${time.replace("T", " ")} (${zone(new Date(time))})`;
  const direction = order === "newest" ? "the records before it, newest first" : "from there, oldest first";
  const timeNote = fromTime === null ? null : notice(fromTime.found
    ? `The first record at or after ${when} is offset ${fromTime.offset}: ${direction}.`
    : `No record at or after ${when}: from the log end, offset ${fromTime.offset}${order === "newest" ? ", newest first" : ""}.`);
  results.replaceChildren(...[
    h("h2", { id: "records-title" }, `${topic} partition ${partition}`),
    timeNote,
    h("p", { class: "muted" }, `Offsets ${start} to ${Math.max(start, stop - 1)} of ${range.beginning_offset}–${range.end_offset - 1}; `,
      `${shown.length} of ${records.length} records match.`),
    recordsTable("Records", shown, mode),
  ].filter(Boolean));
}

function matches(record, key, contains) {
  if (key && !(text(record.key) || "").includes(key)) return false;
  if (!contains) return true;
  const haystack = [text(record.value) || "", ...(record.headers || []).map((hd) => `${hd.name}: ${text(hd.value) || ""}`)];
  return haystack.some((s) => s.includes(contains));
}

function produceForm(topic, partition) {
  const name = h("input", { name: "topic", value: topic, required: true });
  const part = h("input", { name: "partition", type: "number", min: 0, placeholder: "by key" });
  const key = h("input", { name: "key" });
  const value = h("textarea", { name: "value", rows: 3 });
  const headers = h("textarea", { name: "headers", rows: 2, placeholder: "name: value, one a line" });
  const outcome = h("div", { "aria-live": "polite" });
  const submit = async (event) => {
    event.preventDefault();
    const record = { value: b64(value.value) };
    if (key.value) record.key = b64(key.value);
    if (part.value !== "") record.partition = Number(part.value);
    const lines = headers.value.split("\n").map((l) => l.trim()).filter(Boolean);
    if (lines.length) {
      record.headers = lines.map((line) => {
        const at = line.indexOf(":");
        return at < 0 ? { name: line, value: null } : { name: line.slice(0, at).trim(), value: b64(line.slice(at + 1).trim()) };
      });
    }
    try {
      const answer = await call("POST", `/topics/${enc(name.value.trim())}`, { body: { records: [record] }, contentType: BINARY });
      const o = answer.offsets[0];
      if (o.error) throw new Error(o.error);
      outcome.replaceChildren(notice(`Produced to partition ${o.partition} at offset ${o.offset}.`),
        h("a", { href: `#/messages?topic=${enc(name.value.trim())}&partition=${o.partition}&order=newest` }, "See it"));
    } catch (error) {
      outcome.replaceChildren(failure(error));
    }
  };
  return h("section", { "aria-labelledby": "produce-title" },
    h("h2", { id: "produce-title" }, "Produce a record"),
    h("form", { class: "inline", onsubmit: submit },
      field("Topic", name), field("Partition", part), field("Key", key),
      field("Value", value), field("Headers", headers),
      h("button", { type: "submit" }, "Produce")),
    outcome);
}
