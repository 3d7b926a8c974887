// SCRAM users: each user's mechanisms and iterations (never a secret), setting a password
// (typed twice, never shown, salted by the gateway) and deleting a credential once confirmed.
import { call, cluster, enc } from "./api.js";
import { confirmTyped, field, h, notice, table } from "./ui.js";
import { explained, redrawSaying } from "./rights.js";

const MECHANISMS = ["SCRAM-SHA-512", "SCRAM-SHA-256"];
const MIN_ITERATIONS = 4096;
const MAX_ITERATIONS = 16384;

export async function render(main, { stillCurrent }) {
  const outcome = h("div", { "aria-live": "polite", id: "users-outcome" });
  const results = h("section", { "aria-labelledby": "users-title" }, h("h2", { id: "users-title" }, "Users"));
  const form = passwordForm(outcome);
  main.replaceChildren(h("h1", {}, "SCRAM users"), outcome, results, form.section);
  let users;
  try {
    users = await call("GET", `${await cluster()}/user-scram-credentials`);
  } catch (error) {
    if (stillCurrent()) results.append(explained(error, "DESCRIBE on the cluster"));
    return;
  }
  if (!stillCurrent()) return;
  const rows = users.data.flatMap((u) => u.credentials.map((c) => [
    u.user_name, c.mechanism, String(c.iterations),
    h("span", { class: "toolbar" },
      h("button", { type: "button", class: "secondary", onclick: () => form.choose(u.user_name, c.mechanism) }, `Set password of ${u.user_name}`),
      h("button", { type: "button", class: "danger", onclick: () => remove(u.user_name, c.mechanism, outcome) }, `Delete ${c.mechanism} of ${u.user_name}…`)),
  ]));
  results.append(table(`${users.data.length} users; one row per credential`, [
    { title: "User" }, { title: "Mechanism" }, { title: "Iterations", num: true }, { title: "" },
  ], rows));
}

async function remove(user, mechanism, outcome) {
  if (!(await confirmTyped(`Delete ${user}'s ${mechanism} credential? Clients logging in with it will be refused.`, user))) return;
  try {
    await call("DELETE", `${await cluster()}/user-scram-credentials/${enc(user)}?mechanism=${enc(mechanism)}`);
    redrawSaying("users-outcome", `${user}'s ${mechanism} credential deleted.`, notice);
  } catch (error) {
    outcome.replaceChildren(explained(error, "ALTER on the cluster"));
  }
}

function passwordForm(outcome) {
  const user = h("input", { name: "user_name", required: true, autocomplete: "off" });
  const mechanism = h("select", { name: "mechanism" }, MECHANISMS.map((m) => h("option", { value: m }, m)));
  const iterations = h("input", { name: "iterations", type: "number", min: MIN_ITERATIONS, max: MAX_ITERATIONS, value: MIN_ITERATIONS, required: true });
  const password = h("input", { name: "password", type: "password", required: true, autocomplete: "new-password" });
  const again = h("input", { name: "password_again", type: "password", required: true, autocomplete: "new-password" });
  const submit = async (event) => {
    event.preventDefault();
    const typed = password.value;
    const same = typed === again.value;
    // The password leaves the page only in the request; the fields never keep it.
    password.value = "";
    again.value = "";
    if (!same) {
      outcome.replaceChildren(h("div", { class: "error", role: "alert" }, h("strong", {}, "Not set: "), "the two passwords differ; type the same password twice."));
      password.focus();
      return;
    }
    const name = user.value.trim();
    try {
      await call("PUT", `${await cluster()}/user-scram-credentials/${enc(name)}`, {
        body: { mechanism: mechanism.value, iterations: Number(iterations.value), password: typed },
      });
      redrawSaying("users-outcome", `Password of ${name} set (${mechanism.value}, ${iterations.value} iterations).`, notice);
    } catch (error) {
      outcome.replaceChildren(explained(error, "ALTER on the cluster"));
    }
  };
  const section = h("section", { "aria-labelledby": "password-title" },
    h("h2", { id: "password-title" }, "Set a password"),
    h("p", { class: "muted" }, "Creates the user's credential or replaces it. The gateway salts the password as Kafka's admin client does; the brokers keep only keys derived from it, never the password."),
    h("form", { class: "inline", onsubmit: submit },
      field("User name", user), field("Mechanism", mechanism), field("Iterations", iterations),
      field("New password", password), field("New password again", again),
      h("button", { type: "submit" }, "Set password")));
  const choose = (name, mech) => {
    user.value = name;
    mechanism.value = mech;
    password.focus();
  };
  return { section, choose };
}
