// How a record read through the gateway's binary format is shown: key, value (JSON when it
// parses, else text, else base64) and headers; shared by browsing and searching.
import { h, table, when } from "./ui.js";

const decoder = new TextDecoder("utf-8", { fatal: true });

// base64 from the gateway to text; null for a null field, undefined when it is not UTF-8.
export function text(b64) {
  if (b64 === null || b64 === undefined) return null;
  const bytes = Uint8Array.from(atob(b64), (c) => c.charCodeAt(0));
  try { return decoder.decode(bytes); } catch { return undefined; }
}

export function b64(value) {
  const bytes = new TextEncoder().encode(value);
  let s = "";
  for (const b of bytes) s += String.fromCharCode(b);
  return btoa(s);
}

export function renderValue(b64value, mode) {
  if (b64value === null || b64value === undefined) return h("span", { class: "muted" }, "null");
  const t = text(b64value);
  if (t === undefined) return h("pre", { title: "not UTF-8: base64" }, b64value);
  if (mode !== "text") {
    try { return h("pre", { class: "json" }, JSON.stringify(JSON.parse(t), null, 2)); } catch { /* text */ }
  }
  return h("pre", {}, t);
}

function cells(r, mode) {
  return [
    String(r.offset), when(r.timestamp), renderValue(r.key, "text"), renderValue(r.value, mode),
    h("ul", {}, (r.headers || []).map((hd) => h("li", {}, `${hd.name}: `, text(hd.value) ?? hd.value ?? "null"))),
  ];
}

const COLUMNS = [{ title: "Offset", num: true }, { title: "Timestamp" }, { title: "Key" }, { title: "Value" }, { title: "Headers" }];

export function recordsTable(caption, records, mode) {
  return table(caption, COLUMNS, records.map((r) => cells(r, mode)));
}

// More rows for a table made by recordsTable (a search continued).
export function appendRecords(tableBox, records, mode) {
  const body = tableBox.querySelector("tbody");
  for (const r of records) {
    body.append(h("tr", {}, cells(r, mode).map((cell, i) => h("td", { class: COLUMNS[i].num ? "num" : null }, cell))));
  }
}
