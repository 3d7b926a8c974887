// Every read and action of the console: a call to the gateway's own REST API, with the
// credentials the person typed (kept for this tab only). A 401 asks for credentials and tries
// again; a 403 is a refusal the page shows as it is.

const KEY = "pafka-console-credentials";
// Where the gateway's API is: the page's own path without "/ui" (a proxy may add a prefix).
const ROOT = location.pathname.replace(/\/ui\/?$/, "");
const BINARY = "application/vnd.kafka.binary.v2+json";

export class ApiError extends Error {
  constructor(status, code, message) {
    super(message);
    this.status = status;
    this.code = code;
  }
  get refused() { return this.status === 403; }
}

function stored() {
  try { return JSON.parse(sessionStorage.getItem(KEY) || "null"); } catch { return null; }
}

export function signedInAs() {
  const c = stored();
  if (!c) return null;
  return c.scheme === "basic" ? c.user : "token";
}

export function signOut() {
  sessionStorage.removeItem(KEY);
}

function authorization() {
  const c = stored();
  if (!c) return null;
  if (c.scheme === "bearer") return `Bearer ${c.token}`;
  const bytes = new TextEncoder().encode(`${c.user}:${c.password}`);
  return `Basic ${btoa(String.fromCharCode(...bytes))}`;
}

let pending = null;

// One dialog for every call waiting on credentials; resolves false if the person cancels.
function askCredentials(reason) {
  if (pending) return pending;
  const dialog = document.getElementById("login");
  const form = document.getElementById("login-form");
  document.getElementById("login-reason").textContent = reason;
  const sync = () => {
    const bearer = form.elements.scheme.value === "bearer";
    form.querySelector(".bearer").hidden = !bearer;
    form.querySelector(".basic").hidden = bearer;
  };
  form.onchange = sync;
  sync();
  pending = new Promise((resolve) => {
    const done = (ok) => {
      form.onsubmit = null;
      document.getElementById("login-cancel").onclick = null;
      dialog.close();
      pending = null;
      resolve(ok);
    };
    form.onsubmit = (event) => {
      event.preventDefault();
      const e = form.elements;
      const c = e.scheme.value === "bearer"
        ? { scheme: "bearer", token: e.token.value }
        : { scheme: "basic", user: e.user.value, password: e.password.value };
      sessionStorage.setItem(KEY, JSON.stringify(c));
      document.dispatchEvent(new CustomEvent("credentials"));
      done(true);
    };
    document.getElementById("login-cancel").onclick = () => done(false);
    dialog.addEventListener("cancel", () => done(false), { once: true });
  });
  dialog.showModal();
  (form.elements.scheme.value === "bearer" ? form.elements.token : form.elements.user).focus();
  return pending;
}

// A call: JSON body in (if any), JSON out (null for 204). Throws ApiError.
export async function call(method, path, { body, accept, contentType } = {}) {
  for (;;) {
    const headers = { Accept: accept || "application/json" };
    const auth = authorization();
    if (auth) headers.Authorization = auth;
    if (body !== undefined) headers["Content-Type"] = contentType || "application/json";
    const response = await fetch(ROOT + path, {
      method,
      headers,
      body: body === undefined ? undefined : JSON.stringify(body),
      cache: "no-store",
    });
    if (response.status === 401) {
      const answer = await response.json().catch(() => ({}));
      // Credentials typed while this call was on its way (another call's dialog): use them
      // rather than asking again for what was just given.
      if (authorization() !== auth) continue;
      const why = stored()
        ? `The gateway did not accept these credentials: ${answer.message || "401"}`
        : `The gateway asks who you are: ${answer.message || "401"}`;
      if (await askCredentials(why)) continue;
      throw new ApiError(401, answer.error_code, answer.message || "credentials are required");
    }
    if (response.status === 204) return null;
    const text = await response.text();
    let data = null;
    try { data = text ? JSON.parse(text) : null; } catch { data = { message: text }; }
    if (!response.ok) {
      throw new ApiError(response.status, data && data.error_code, (data && data.message) || response.statusText);
    }
    return data;
  }
}

let clusterId = null;

export async function cluster() {
  if (clusterId === null) {
    const listing = await call("GET", "/v3/clusters");
    clusterId = listing.data[0].cluster_id;
  }
  return `/v3/clusters/${encodeURIComponent(clusterId)}`;
}

export const enc = encodeURIComponent;
export { BINARY };
