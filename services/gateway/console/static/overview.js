// Overview: brokers with rack, registration time and load; the active controller and its
// epoch; partitions under-replicated or offline. Redrawn every few seconds while shown.
import { call, cluster } from "./api.js";
import { failure, h, table, when } from "./ui.js";

const REFRESH_MS = 3000;
let timer = null;

export function leave() {
  clearTimeout(timer);
  timer = null;
}

export async function render(main, { stillCurrent }) {
  const body = h("div", { id: "overview-body" });
  const stamp = h("p", { class: "muted", role: "status" });
  main.replaceChildren(h("h1", {}, "Overview"), stamp, body);
  const draw = async () => {
    try {
      const view = await call("GET", `${await cluster()}/overview`);
      if (!stillCurrent()) return;
      body.replaceChildren(...content(view));
      stamp.textContent = `Updated ${new Date().toLocaleTimeString()}`;
    } catch (error) {
      if (!stillCurrent()) return;
      body.replaceChildren(failure(error));
    }
    if (stillCurrent()) timer = setTimeout(draw, REFRESH_MS);
  };
  await draw();
}

function content(view) {
  const card = (label, value, cls) =>
    h("div", { class: "card" }, h("dl", {}, h("dt", {}, label), h("dd", { class: cls }, value)));
  const controller = view.controller_id === null ? "none" : `broker ${view.controller_id}`;
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
