// What the ACL and users pages show when a call fails: the cluster's own reasons said plainly
// (no authorizer on the brokers; no right on the cluster), anything else as ui.js shows it.
import { ApiError } from "./api.js";
import { failure, h } from "./ui.js";

// Kafka's SECURITY_DISABLED, as the gateway answers it (400 with the broker's message).
export function noAuthorizer(error) {
  return error instanceof ApiError && error.status === 400 && /no authorizer/i.test(error.message);
}

// ``needs``: the right the call needed, e.g. "DESCRIBE on the cluster".
export function explained(error, needs) {
  if (noAuthorizer(error)) {
    return h("div", { class: "caution", role: "status", id: "no-authorizer" },
      h("strong", {}, "No authorizer is configured on this cluster: "),
      "its brokers run without ACLs (authorizer.class.name is not set), so every client may do everything and there are no ACLs to list or change.");
  }
  const shown = failure(error);
  if (error instanceof ApiError && error.refused) {
    shown.append(h("span", { class: "needs" }, ` This needs ${needs}.`));
  }
  return shown;
}

// Tell the page drawn next (after a redraw this action asked for) what was done.
export function redrawSaying(id, text, notice) {
  document.addEventListener("console:drawn", () => {
    const place = document.getElementById(id);
    if (place) place.replaceChildren(notice(text));
  }, { once: true });
  window.dispatchEvent(new HashChangeEvent("hashchange"));
}
