// ACLs: a search with REST Proxy's filters (kept in the page's address), the matching ACLs
// with a deletion each (confirmed by typing the principal), and a form creating one.
import { call, cluster } from "./api.js";
import { confirmTyped, field, h, notice, table } from "./ui.js";
import { explained, noAuthorizer, redrawSaying } from "./rights.js";

const RESOURCE_TYPES = ["TOPIC", "GROUP", "CLUSTER", "TRANSACTIONAL_ID", "DELEGATION_TOKEN"];
const PATTERN_TYPES = ["LITERAL", "PREFIXED"];
const OPERATIONS = ["ALL", "READ", "WRITE", "CREATE", "DELETE", "ALTER", "DESCRIBE",
  "CLUSTER_ACTION", "DESCRIBE_CONFIGS", "ALTER_CONFIGS", "IDEMPOTENT_WRITE"];
const PERMISSIONS = ["ALLOW", "DENY"];
const ENUMS = ["resource_type", "pattern_type", "operation", "permission"];
const TEXTS = ["resource_name", "principal", "host"];
const FIELDS = ["resource_type", "resource_name", "pattern_type", "principal", "host", "operation", "permission"];

function select(name, values, chosen) {
  return h("select", { name }, values.map((v) => h("option", { value: v, selected: v === chosen }, v)));
}

function searchQuery(params) {
  const query = new URLSearchParams();
  for (const name of ENUMS) query.set(name, params.get(name) || "ANY");
  for (const name of TEXTS) if (params.get(name)) query.set(name, params.get(name));
  return query;
}

export async function render(main, { params, stillCurrent }) {
  const outcome = h("div", { "aria-live": "polite", id: "acls-outcome" });
  const results = h("section", { "aria-labelledby": "acls-found" });
  const create = createForm(outcome);
  main.replaceChildren(h("h1", {}, "ACLs"), outcome, searchForm(params), results, create);
  const query = searchQuery(params);
  let found;
  try {
    found = await call("GET", `${await cluster()}/acls?${query}`);
  } catch (error) {
    if (!stillCurrent()) return;
    results.replaceChildren(explained(error, "DESCRIBE on the cluster"));
    // Without an authorizer there is nothing an ACL would change.
    if (noAuthorizer(error)) create.remove();
    return;
  }
  if (!stillCurrent()) return;
  const filtered = [...query.entries()].some(([k, v]) => v !== "ANY" || TEXTS.includes(k));
  results.replaceChildren(
    h("h2", { id: "acls-found" }, filtered ? "ACLs matching the filter" : "All ACLs"),
    table(`${found.data.length} ACLs`, [
      { title: "Resource type" }, { title: "Resource" }, { title: "Pattern" }, { title: "Principal" },
      { title: "Host" }, { title: "Operation" }, { title: "Permission" }, { title: "" },
    ], found.data.map((acl) => [
      acl.resource_type, acl.resource_name, acl.pattern_type, acl.principal, acl.host, acl.operation,
      h("span", { class: acl.permission === "DENY" ? "bad" : "ok" }, acl.permission),
      h("button", { type: "button", class: "danger", "aria-label": `Delete the ACL: ${describe(acl)}`, onclick: () => remove(acl, outcome) }, "Delete…"),
    ])));
}

function searchForm(params) {
  const inputs = {
    resource_type: select("resource_type", ["ANY", ...RESOURCE_TYPES], params.get("resource_type") || "ANY"),
    resource_name: h("input", { name: "resource_name", value: params.get("resource_name") || "", placeholder: "any" }),
    pattern_type: select("pattern_type", ["ANY", "MATCH", ...PATTERN_TYPES], params.get("pattern_type") || "ANY"),
    principal: h("input", { name: "principal", value: params.get("principal") || "", placeholder: "any, or User:name" }),
    host: h("input", { name: "host", value: params.get("host") || "", placeholder: "any" }),
    operation: select("operation", ["ANY", ...OPERATIONS], params.get("operation") || "ANY"),
    permission: select("permission", ["ANY", ...PERMISSIONS], params.get("permission") || "ANY"),
  };
  const labels = { resource_type: "Resource type", resource_name: "Resource name", pattern_type: "Pattern type",
    principal: "Principal", host: "Host", operation: "Operation", permission: "Permission" };
  const submit = (event) => {
    event.preventDefault();
    const query = new URLSearchParams();
    for (const name of FIELDS) {
      const value = inputs[name].value.trim();
      if (value && value !== "ANY") query.set(name, value);
    }
    location.hash = `#/acls?${query}`;
  };
  return h("form", { class: "inline", role: "search", "aria-label": "Filter ACLs", onsubmit: submit },
    FIELDS.map((name) => field(`Filter by ${labels[name].toLowerCase()}`, inputs[name])),
    h("button", { type: "submit" }, "Search ACLs"),
    h("a", { href: "#/acls" }, "Clear filter"));
}

function describe(acl) {
  return `${acl.permission} ${acl.principal} from ${acl.host} to ${acl.operation} ${acl.resource_type} ${acl.resource_name} (${acl.pattern_type})`;
}

async function remove(acl, outcome) {
  const what = describe(acl);
  if (!(await confirmTyped(`Delete the ACL: ${what}?`, acl.principal))) return;
  const query = new URLSearchParams();
  for (const name of FIELDS) query.set(name, acl[name]);
  try {
    const deleted = await call("DELETE", `${await cluster()}/acls?${query}`);
    redrawSaying("acls-outcome", `Deleted ${deleted.data.length} ACL${deleted.data.length === 1 ? "" : "s"}: ${what}.`, notice);
  } catch (error) {
    outcome.replaceChildren(explained(error, "ALTER on the cluster"));
  }
}

function createForm(outcome) {
  const type = select("resource_type", RESOURCE_TYPES, "TOPIC");
  const name = h("input", { name: "resource_name", required: true });
  const pattern = select("pattern_type", PATTERN_TYPES, "LITERAL");
  const principal = h("input", { name: "principal", required: true, placeholder: "User:alice", pattern: "[^:]+:.+" });
  const host = h("input", { name: "host", required: true, value: "*" });
  const operation = select("operation", OPERATIONS, "READ");
  const permission = select("permission", PERMISSIONS, "ALLOW");
  // The cluster has one name; offered when the cluster is chosen.
  type.addEventListener("change", () => { if (type.value === "CLUSTER") name.value = "kafka-cluster"; });
  const submit = async (event) => {
    event.preventDefault();
    const body = {
      resource_type: type.value, resource_name: name.value.trim(), pattern_type: pattern.value,
      principal: principal.value.trim(), host: host.value.trim(), operation: operation.value,
      permission: permission.value,
    };
    try {
      await call("POST", `${await cluster()}/acls`, { body });
      redrawSaying("acls-outcome", `ACL created: ${body.permission} ${body.principal} to ${body.operation} ${body.resource_type} ${body.resource_name} (${body.pattern_type}).`, notice);
    } catch (error) {
      outcome.replaceChildren(explained(error, "ALTER on the cluster"));
    }
  };
  return h("section", { "aria-labelledby": "acl-create-title" },
    h("h2", { id: "acl-create-title" }, "Create an ACL"),
    h("form", { class: "inline", onsubmit: submit },
      field("Resource type", type), field("Resource name", name), field("Pattern type", pattern),
      field("Principal", principal), field("Host", host), field("Operation", operation),
      field("Permission", permission),
      h("button", { type: "submit" }, "Create ACL")));
}
