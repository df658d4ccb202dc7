// Brain capture — what the service worker, the popup and the options page share: where the
// brain is, and the one rule for which addresses a token may be sent to.
"use strict";

// Loopback hosts: the only ones a token may travel to over plain http (a brain on the same
// machine, in development). Everything else must be https: the token is a password.
const BRAIN_LOOPBACK = ["localhost", "127.0.0.1"];

/**
 * The brain's base URL (no trailing slash) and the host permission pattern it needs.
 * Throws an Error whose message says what is wrong with `value`.
 */
function brainLocation(value) {
  let url;
  try {
    url = new URL(String(value || "").trim());
  } catch (invalid) {
    throw new Error("Set the brain's address in the options, e.g. https://brain.example.org");
  }
  const loopback = BRAIN_LOOPBACK.includes(url.hostname);
  if (url.protocol !== "https:" && !(url.protocol === "http:" && loopback)) {
    throw new Error("The brain's address must start with https:// (plain http only for localhost)");
  }
  if (url.username || url.password || url.search || url.hash) {
    throw new Error("The brain's address is just its origin (and path), without a query or credentials");
  }
  const base = url.origin + url.pathname.replace(/\/+$/, "");
  // Match patterns cover every port of a host; the request is for this host alone.
  return { base, origin: url.origin, pattern: `${url.protocol}//${url.hostname}/*` };
}

/** Saved settings: `{brainUrl, token}` (empty strings when not set). */
async function brainSettings() {
  const stored = await chrome.storage.local.get(["brainUrl", "token"]);
  return { brainUrl: stored.brainUrl || "", token: stored.token || "" };
}
