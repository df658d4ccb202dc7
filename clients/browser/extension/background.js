// Brain capture — the service worker. One capture function, `brainCapture(tabId, options)`,
// serves the popup's Save button, the "Save selection to Brain" context-menu item and the
// tests; it reads the tab, sends one JSON POST to <brain>/api/memory/capture with the
// person's own token, and reports the outcome on the toolbar badge and to the popup.
"use strict";

importScripts("config.js");

const MENU_ID = "brain-save-selection";
const SOURCE = "browser";
const MAX_CONTENT = 20000; // the brain refuses a memory over 20,000 characters
const MAX_NOTE = 2000;
const MAX_READ = 50000; // never pull more than this out of a page
const BADGES = {
  stored: ["✓", "#1a7f37"],
  flagged: ["✓", "#9a6700"],
  duplicate: ["=", "#57606a"],
  error: ["!", "#cf222e"],
  busy: ["…", "#57606a"],
};
const MESSAGES = {
  stored: "Saved to Brain.",
  flagged: "Saved — it looks like one you already have.",
  duplicate: "Already remembered: nothing new was stored.",
};

/**
 * What the page shows: its URL, title and selected text. Runs inside the page (injected
 * with chrome.scripting, allowed by activeTab after the person clicked the button or the
 * menu), so it must not use anything from this file.
 */
function readSelection(limit) {
  const active = document.activeElement;
  let selection = String(window.getSelection ? window.getSelection() : "");
  // Text selected inside a text field is not part of the document selection.
  if (!selection && active && typeof active.selectionStart === "number" && active.type !== "password") {
    selection = String(active.value || "").slice(active.selectionStart, active.selectionEnd);
  }
  return { url: location.href, title: document.title, selection: selection.slice(0, limit) };
}

async function readPage(tabId, fallbackSelection) {
  try {
    const [frame] = await chrome.scripting.executeScript({ target: { tabId }, func: readSelection, args: [MAX_READ] });
    const page = frame && frame.result;
    if (page) {
      // A selection inside a frame is not the top document's: the menu click knows it.
      return { ...page, selection: page.selection || fallbackSelection || "" };
    }
  } catch (refused) {
    // Not a page we may script (chrome://, the Web Store, a PDF, or no click granted access):
    // with a context-menu click, the tab's address and the selected text are still known.
    if (fallbackSelection) {
      const tab = await chrome.tabs.get(tabId);
      if (tab.url) return { url: tab.url, title: tab.title || "", selection: fallbackSelection };
    }
  }
  throw new Error("This page cannot be read: open it and click the Brain button (or right-click a selection).");
}

/** The memory's text: the note, the selection, then the title and URL on their own lines. */
function composeContent({ note, selection, title, url }) {
  const reference = [title.trim(), url].filter(Boolean).join("\n");
  const head = note.trim();
  let text = selection.trim();
  const room = MAX_CONTENT - reference.length - head.length - 4;
  if (text.length > room) text = text.slice(0, Math.max(0, room - 1)).replace(/[\ud800-\udbff]$/, "") + "…";
  return [head, text, reference].filter(Boolean).join("\n\n");
}

function tagList(tags) {
  const raw = Array.isArray(tags) ? tags : String(tags || "").split(",");
  return raw.map((tag) => String(tag).trim()).filter(Boolean);
}

/** A sentence for a refused request, from the status and the brain's JSON error. */
function describeFailure(status, body, base) {
  const message = body && body.error && body.error.message;
  if (status === 401) {
    return `The brain refused the token (wrong, revoked, or without the memory scope). Issue one at ${base}/account/memory-tokens/ and set it in the options.`;
  }
  if (status === 0) return "The brain answered with a redirect: check its address in the options (https?).";
  if (status === 429) return message || "Too many captures just now; try again in a minute.";
  return message ? `The brain refused it: ${message}` : `The brain answered ${status}.`;
}

/** One authenticated request to the brain; returns `{status, body}` or throws a readable Error. */
async function brainRequest({ base, token }, path, init = {}) {
  let response;
  try {
    response = await fetch(base + path, {
      ...init,
      headers: { Authorization: `Bearer ${token}`, Accept: "application/json", ...(init.headers || {}) },
      credentials: "omit", // the token is the whole credential: never the person's cookies
      cache: "no-store",
      redirect: "manual", // a redirect is a wrong address, and must not carry the request on
    });
  } catch (unreachable) {
    throw new Error(`Could not reach ${base}: check the address in the options and your connection.`);
  }
  const body = await response.json().catch(() => null);
  if (!response.ok) throw new Error(describeFailure(response.status, body, base));
  return { status: response.status, body };
}

/** Where to send and with what, or an Error saying what to set up. */
async function connection(override) {
  const saved = override || (await brainSettings());
  const where = brainLocation(saved.brainUrl);
  const token = String(saved.token || "").trim();
  if (!token) throw new Error("Set your personal token in the options (issue one on the brain's Memory tokens page).");
  if (!(await chrome.permissions.contains({ origins: [where.pattern] }))) {
    throw new Error(`Allow access to ${where.origin} in the options (press Save there).`);
  }
  return { ...where, token };
}

async function report(tabId, result) {
  const [text, color] = BADGES[result.ok ? result.outcome : "error"] || BADGES.stored;
  const title = result.ok ? result.message : `Brain: ${result.error}`;
  try {
    await chrome.action.setBadgeBackgroundColor({ tabId, color });
    await chrome.action.setBadgeText({ tabId, text });
    await chrome.action.setTitle({ tabId, title });
  } catch (closed) {
    // The tab is gone: the popup still shows the last result.
  }
  await chrome.storage.session.set({ lastResult: { ...result, at: Date.now() } });
}

/**
 * Capture tab `tabId` to the brain: its URL, title and selected text, with `options.note`
 * (put first), `options.tags` (a list or comma-separated text) and `options.workspace`
 * ("personal" or "company"; omitted: the person's default layer). `options.selectionText`
 * is the context menu's selection, used when the page itself cannot be read.
 *
 * Resolves (never rejects) to `{ok: true, outcome, memoryId, memoryUrl, message}` or
 * `{ok: false, error}`; either way the badge and `lastResult` (chrome.storage.session) show it.
 */
async function brainCapture(tabId, options = {}) {
  let result;
  try {
    await chrome.action.setBadgeText({ tabId, text: BADGES.busy[0] }).catch(() => {});
    const brain = await connection();
    const page = await readPage(tabId, options.selectionText);
    if (!/^https?:\/\//.test(page.url)) throw new Error("Only http and https pages can be captured.");
    const note = String(options.note || "").slice(0, MAX_NOTE);
    const body = {
      content: composeContent({ note, selection: page.selection, title: page.title, url: page.url }),
      tags: tagList(options.tags),
      source: SOURCE,
    };
    if (options.workspace) body.workspace = options.workspace;
    const { body: saved } = await brainRequest(brain, "/api/memory/capture", {
      method: "POST",
      headers: { "Content-Type": "application/json" },
      body: JSON.stringify(body),
    });
    const memoryId = saved.memory.id;
    result = {
      ok: true,
      outcome: saved.outcome,
      memoryId,
      memoryUrl: `${brain.base}/memory/${memoryId}/`,
      message: MESSAGES[saved.outcome] || MESSAGES.stored,
      title: page.title,
    };
  } catch (failure) {
    result = { ok: false, error: failure && failure.message ? failure.message : String(failure) };
  }
  await report(tabId, result);
  return result;
}

/**
 * Check a brain address and token (the options page's Test button): `GET /api/memory/count`.
 * Resolves to `{ok: true, count}` or `{ok: false, error}`.
 */
async function brainTest(settings) {
  try {
    const { body } = await brainRequest(await connection(settings), "/api/memory/count");
    return { ok: true, count: body.count };
  } catch (failure) {
    return { ok: false, error: failure.message };
  }
}

self.brainCapture = brainCapture;
self.brainTest = brainTest;

chrome.runtime.onInstalled.addListener(() => {
  chrome.contextMenus.create({ id: MENU_ID, title: "Save selection to Brain", contexts: ["selection"] });
});

chrome.contextMenus.onClicked.addListener((info, tab) => {
  if (info.menuItemId === MENU_ID && tab && tab.id !== undefined) {
    brainCapture(tab.id, { selectionText: info.selectionText || "" });
  }
});

// The popup and the options page ask through messages; nothing else can send them (no
// content scripts, no externally_connectable), and the sender is checked all the same.
chrome.runtime.onMessage.addListener((message, sender, reply) => {
  if (sender.id !== chrome.runtime.id || !String(sender.url || "").startsWith(chrome.runtime.getURL(""))) {
    return false;
  }
  if (message && message.type === "capture") {
    brainCapture(Number(message.tabId), message).then(reply);
    return true;
  }
  if (message && message.type === "test") {
    brainTest(message.settings).then(reply);
    return true;
  }
  return false;
});
