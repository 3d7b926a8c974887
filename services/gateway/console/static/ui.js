// Small DOM helpers shared by the pages: elements, tables, refusals and errors.
import { ApiError } from "./api.js";

export function h(tag, attrs = {}, ...children) {
  const el = document.createElement(tag);
  for (const [name, value] of Object.entries(attrs)) {
    if (value === null || value === undefined || value === false) continue;
    if (name.startsWith("on")) el.addEventListener(name.slice(2), value);
    else if (name === "class") el.className = value;
    else el.setAttribute(name, value === true ? "" : String(value));
  }
  for (const child of children.flat(Infinity)) {
    if (child === null || child === undefined || child === false) continue;
    el.append(child instanceof Node ? child : String(child));
  }
  return el;
}

// columns: [{title, num?}], rows: arrays of cells (strings or nodes).
export function table(caption, columns, rows) {
  return h("div", { class: "scroll" },
    h("table", {},
      h("caption", { class: "muted" }, caption),
      h("thead", {}, h("tr", {}, columns.map((c) => h("th", { scope: "col", class: c.num ? "num" : null }, c.title)))),
      h("tbody", {}, rows.map((row) => h("tr", {}, row.map((cell, i) => h("td", { class: columns[i].num ? "num" : null }, cell)))))));
}

export function field(label, input) {
  const id = input.id || `f-${Math.random().toString(36).slice(2, 9)}`;
  input.id = id;
  return h("div", { class: "field" }, h("label", { for: id }, label), input);
}

// What a failed call shows: a refusal (403) says so plainly; anything else is an error.
export function failure(error) {
  if (error instanceof ApiError && error.refused) {
    return h("div", { class: "refusal", role: "alert" },
      h("strong", {}, "Refused: "), `you are not allowed to do this (${error.message}).`);
  }
  if (error instanceof ApiError) {
    return h("div", { class: "error", role: "alert" }, h("strong", {}, `Error ${error.status}: `), error.message);
  }
  return h("div", { class: "error", role: "alert" }, h("strong", {}, "Error: "), String(error && error.message || error));
}

export function notice(text) {
  return h("p", { class: "notice", role: "status" }, text);
}

export function when(ms) {
  return ms > 0 ? new Date(ms).toISOString().replace("T", " ").replace(/\.\d+Z$/, " UTC") : "–";
}

export function pager(total, offset, limit, go) {
  const last = Math.min(total, offset + limit);
  return h("div", { class: "pager" },
    h("button", { type: "button", class: "secondary", disabled: offset === 0, onclick: () => go(Math.max(0, offset - limit)) }, "Previous"),
    h("span", { role: "status" }, total === 0 ? "none" : `${offset + 1}–${last} of ${total}`),
    h("button", { type: "button", class: "secondary", disabled: last >= total, onclick: () => go(offset + limit) }, "Next"));
}

// Ask for confirmation by typing ``expected``; resolves true only then.
export function confirmTyped(text, expected) {
  const dialog = document.getElementById("confirm");
  const form = document.getElementById("confirm-form");
  const input = document.getElementById("confirm-input");
  document.getElementById("confirm-text").textContent = text;
  document.getElementById("confirm-label").textContent = `Type ${expected} to confirm`;
  input.value = "";
  return new Promise((resolve) => {
    const done = (ok) => {
      form.onsubmit = null;
      dialog.close();
      resolve(ok);
    };
    form.onsubmit = (event) => {
      event.preventDefault();
      if (input.value === expected) done(true);
      else input.setAttribute("aria-invalid", "true");
    };
    document.getElementById("confirm-cancel").onclick = () => done(false);
    dialog.addEventListener("cancel", () => done(false), { once: true });
    dialog.showModal();
    input.focus();
  });
}

// Draw ``body`` from ``read()`` now, then every ``ms`` while the page is current (a failed
// read shows its failure and is tried again). Resolves to a function that stops it and
// resolves once a draw under way has ended (so nothing reads after, say, a deletion).
export async function redrawn(ms, stillCurrent, body, stamp, read, paint) {
  let timer = null;
  let stopped = false;
  let drawing = Promise.resolve();
  const draw = async () => {
    try {
      const data = await read();
      if (stopped || !stillCurrent()) return;
      body.replaceChildren(...paint(data));
      stamp.textContent = `Updated ${new Date().toLocaleTimeString()}`;
    } catch (error) {
      if (stopped || !stillCurrent()) return;
      body.replaceChildren(failure(error));
    }
    if (!stopped && stillCurrent()) timer = setTimeout(() => { drawing = draw(); }, ms);
  };
  drawing = draw();
  await drawing;
  return () => {
    stopped = true;
    clearTimeout(timer);
    return drawing;
  };
}
