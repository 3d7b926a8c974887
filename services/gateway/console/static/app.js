// The console's router: ``#/page/arg?query`` picks a page module, which draws into <main>.
import { signedInAs, signOut } from "./api.js";
import { failure, h } from "./ui.js";
import * as overview from "./overview.js";
import * as topics from "./topics.js";
import * as topic from "./topic.js";
import * as messages from "./messages.js";
import * as groups from "./groups.js";
import * as group from "./group.js";
import * as acls from "./acls.js";
import * as users from "./users.js";

const PAGES = { overview, topics, topic, messages, groups, group, acls, users };
const NAV = { topic: "topics", group: "groups" };
let current = null;
let generation = 0;

function parse() {
  const raw = location.hash.replace(/^#\/?/, "");
  const [path, query = ""] = raw.split("?");
  const [name, ...rest] = path.split("/");
  return { name: PAGES[name] ? name : "overview", arg: rest.map(decodeURIComponent).join("/"), params: new URLSearchParams(query) };
}

function who() {
  const name = signedInAs();
  document.getElementById("who").textContent = name ? `Signed in as ${name}` : "";
  document.getElementById("signout").hidden = !name;
}

async function route() {
  const { name, arg, params } = parse();
  const mine = ++generation;
  if (current && current.leave) current.leave();
  current = PAGES[name];
  for (const link of document.querySelectorAll("nav a")) {
    if (link.dataset.page === (NAV[name] || name)) link.setAttribute("aria-current", "page");
    else link.removeAttribute("aria-current");
  }
  const main = document.getElementById("main");
  main.replaceChildren(h("p", { class: "muted" }, "Loading…"));
  // A page drawn by an older navigation never overwrites a newer one.
  const stillCurrent = () => mine === generation;
  try {
    await current.render(main, { arg, params, stillCurrent });
  } catch (error) {
    if (stillCurrent()) main.replaceChildren(failure(error));
  }
  who();
  // Tells an action that started this redraw that the page is there again (and tests too).
  if (stillCurrent()) document.dispatchEvent(new CustomEvent("console:drawn"));
}

document.getElementById("signout").addEventListener("click", () => {
  signOut();
  who();
  route();
});
document.addEventListener("credentials", who);
window.addEventListener("hashchange", route);
route();
