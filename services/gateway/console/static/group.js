// One consumer group: state, protocol, members with host and assignment, and per partition
// the committed offset, log end and lag. Redrawn every few seconds, so lag is seen moving.
import { call, enc } from "./api.js";
import { failure, h, table } from "./ui.js";

const REFRESH_MS = 3000;
let timer = null;

export function leave() {
  clearTimeout(timer);
  timer = null;
}

export async function render(main, { arg, stillCurrent }) {
  const body = h("div", {});
  const stamp = h("p", { class: "muted", role: "status" });
  main.replaceChildren(h("h1", {}, "Group ", h("span", { id: "group-name" }, arg)),
    h("p", {}, h("a", { href: "#/groups" }, "All groups")), stamp, body);
  const draw = async () => {
    try {
      const view = await call("GET", `/groups/${enc(arg)}`);
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
