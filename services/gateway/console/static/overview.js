// Overview: brokers with rack, registration time and load; the active controller and its
// epoch; partitions under-replicated or offline; traffic in and out from the brokers' own
// counters, as rates between two readings. Redrawn every 3 s while shown (``?refresh_ms=``).
import { call, cluster } from "./api.js";
import { h, redrawn, table, when } from "./ui.js";

const REFRESH_MS = 3000;
const MIN_REFRESH_MS = 500;
let stop = () => {};

export function leave() {
  stop();
}

export async function render(main, { params, stillCurrent }) {
  const every = Math.max(MIN_REFRESH_MS, Number(params.get("refresh_ms")) || REFRESH_MS);
  const body = h("div", { id: "overview-body" });
  const stamp = h("p", { class: "muted", role: "status" });
  // Drawn on its own: the brokers' counters can take longer to read than the overview.
  const traffic = h("div", {}, h("p", { class: "muted" }, "Reading the brokers' traffic counters…"));
  main.replaceChildren(h("h1", {}, "Overview"), stamp, body, traffic);
  const at = await cluster();
  // The previous reading of the brokers' counters, for rates.
  let previous = null;
  const paintTraffic = (now) => {
    const nodes = [trafficSection(now, previous, every)];
    previous = now;
    return nodes;
  };
  // The counters only once the overview is drawn: a broker busy writing out its metrics
  // answers the overview's Metadata later.
  const stopOverview = await redrawn(every, stillCurrent, body, stamp, () => call("GET", `${at}/overview`), content);
  stop = stopOverview;
  const stopTraffic = await redrawn(every, stillCurrent, traffic, h("span"), () => call("GET", `${at}/throughput`), paintTraffic);
  stop = () => Promise.all([stopOverview(), stopTraffic()]);
}

function content(view) {
  const card = (label, value, cls) =>
    h("div", { class: "card" }, h("dl", {}, h("dt", {}, label), h("dd", { class: cls }, value)));
  const controller = view.controller_id === null ? "none" : `controller ${view.controller_id}`;
  return [
    h("section", { "aria-labelledby": "cluster-title" },
      h("h2", { id: "cluster-title" }, `Cluster ${view.cluster_id}`),
      h("div", { class: "cards" },
        card("Brokers", view.brokers.length),
        card("Active controller", controller),
        card("Controller epoch", view.controller_epoch ?? "–"),
        card("Topics", view.topics),
        card("Partitions", view.partitions),
        card("Under-replicated", view.under_replicated_partitions, view.under_replicated_partitions ? "bad" : "ok"),
        card("Offline", view.offline_partitions, view.offline_partitions ? "bad" : "ok"))),
    h("section", { "aria-labelledby": "brokers-title" },
      h("h2", { id: "brokers-title" }, "Brokers"),
      table("Live brokers", [
        { title: "Id", num: true }, { title: "Address" }, { title: "Rack" },
        { title: "Registered" }, { title: "Partitions", num: true }, { title: "Leaders", num: true },
      ], view.brokers.map((b) => [
        String(b.broker_id), `${b.host}:${b.port}`, b.rack ?? "–", when(b.registered_at_ms),
        String(b.partitions), String(b.leaders),
      ]))),
  ];
}

function rate(now, before, field, id) {
  const old = before && before.brokers.find((b) => b.broker_id === id);
  const current = now.brokers.find((b) => b.broker_id === id)[field];
  if (!old || old[field] === null || current === null) return null;
  const seconds = (now.read_at_ms - before.read_at_ms) / 1000;
  return seconds > 0 ? Math.max(0, (current - old[field]) / seconds) : null;
}

function amount(value, unit) {
  if (value === null || value === undefined) return "–";
  const steps = unit === "B" ? ["B", "KiB", "MiB", "GiB", "TiB"] : ["", "k", "M", "G", "T"];
  const base = unit === "B" ? 1024 : 1000;
  let i = 0;
  while (value >= base && i < steps.length - 1) { value /= base; i += 1; }
  return `${value.toFixed(i ? 1 : 0)} ${steps[i]}${unit === "B" ? "" : unit}`.trim();
}

function trafficSection(now, before, every) {
  const total = (field) => now.brokers.reduce((sum, b) => sum + (b[field] || 0), 0);
  const totalRate = (field) => {
    const rates = now.brokers.map((b) => rate(now, before, field, b.broker_id));
    return rates.some((r) => r === null) ? null : rates.reduce((a, b) => a + b, 0);
  };
  return h("section", { "aria-labelledby": "traffic-title" },
    h("h2", { id: "traffic-title" }, "Throughput"),
    h("div", { class: "cards" },
      h("div", { class: "card" }, h("dl", {}, h("dt", {}, "In"), h("dd", { id: "rate-in" }, `${amount(totalRate("bytes_in_total"), "B")}/s`))),
      h("div", { class: "card" }, h("dl", {}, h("dt", {}, "Out"), h("dd", { id: "rate-out" }, `${amount(totalRate("bytes_out_total"), "B")}/s`))),
      h("div", { class: "card" }, h("dl", {}, h("dt", {}, "Messages in"), h("dd", {}, `${amount(totalRate("messages_in_total"), "/s")}`)))),
    table(`Rates over the last ${every / 1000} s; totals since each broker started (${amount(total("bytes_in_total"), "B")} in)`, [
      { title: "Broker", num: true }, { title: "In/s", num: true }, { title: "Out/s", num: true },
      { title: "Messages in/s", num: true }, { title: "Bytes in", num: true }, { title: "Bytes out", num: true },
      { title: "Messages in", num: true },
    ], now.brokers.map((b) => [
      String(b.broker_id),
      amount(rate(now, before, "bytes_in_total", b.broker_id), "B"),
      amount(rate(now, before, "bytes_out_total", b.broker_id), "B"),
      amount(rate(now, before, "messages_in_total", b.broker_id), ""),
      b.error ? h("span", { class: "bad", title: b.error }, "unavailable") : amount(b.bytes_in_total, "B"),
      amount(b.bytes_out_total, "B"),
      amount(b.messages_in_total, ""),
    ])));
}
