// Consumer groups: every group the caller may describe, with its state and assignor.
import { call, cluster, enc } from "./api.js";
import { h, notice, table } from "./ui.js";

export async function render(main, { params, stillCurrent }) {
  const deleted = params.get("deleted");
  main.replaceChildren(h("h1", {}, "Consumer groups"), deleted ? notice(`Group ${deleted} deleted.`) : null);
  const groups = await call("GET", `${await cluster()}/consumer-groups`);
  if (!stillCurrent()) return;
  main.append(table(`${groups.data.length} groups`, [
    { title: "Group" }, { title: "State" }, { title: "Assignor" },
  ], groups.data.map((g) => [
    h("a", { href: `#/group/${enc(g.consumer_group_id)}` }, g.consumer_group_id),
    g.state, g.partition_assignor || "–",
  ])));
}
