// Brain capture — the popup: which page is about to be saved, optional tags, note and layer,
// and the outcome. The capture itself runs in the service worker (brainCapture), so the
// popup may close at any time without losing it.
"use strict";

const $ = (id) => document.getElementById(id);

function show(result) {
  const status = $("status");
  status.replaceChildren();
  if (!result) return;
  const line = document.createElement("p");
  line.className = result.ok ? "ok" : "error";
  line.textContent = result.ok ? result.message : result.error;
  status.append(line);
  if (result.ok && result.memoryUrl) {
    const link = document.createElement("a");
    link.href = result.memoryUrl;
    link.target = "_blank";
    link.rel = "noopener";
    link.textContent = "Open the memory in Brain";
    status.append(link);
  }
}

// The tab to capture: the active one, or `?tab=<id>` when the popup is opened as a page
// (the browser tests do, since a headless browser shows no toolbar popup to type into).
async function targetTab() {
  const asked = Number(new URLSearchParams(location.search).get("tab"));
  if (asked) return chrome.tabs.get(asked);
  const [tab] = await chrome.tabs.query({ active: true, currentWindow: true });
  return tab;
}

async function start() {
  const [tab, settings, session] = await Promise.all([
    targetTab(),
    brainSettings(),
    chrome.storage.session.get("lastResult"),
  ]);
  if (!settings.brainUrl || !settings.token) {
    $("setup").hidden = false;
    $("open-options").addEventListener("click", () => chrome.runtime.openOptionsPage());
    return;
  }
  $("page").textContent = tab && tab.title ? tab.title : "This page";
  $("capture").hidden = false;
  const last = session.lastResult;
  if (last && Date.now() - last.at < 60000) show(last); // e.g. a context-menu capture just now
  $("capture").addEventListener("submit", async (event) => {
    event.preventDefault();
    $("save").disabled = true;
    show({ ok: true, message: "Saving…" });
    const result = await chrome.runtime.sendMessage({
      type: "capture",
      tabId: tab.id,
      note: $("note").value,
      tags: $("tags").value,
      workspace: $("workspace").value,
    });
    show(result);
    $("save").disabled = false;
  });
}

start().catch((failure) => show({ ok: false, error: failure.message }));
