// Brain capture — the options page: the brain's address and the personal token, kept in
// chrome.storage.local; Save asks for access to that one address (an optional host
// permission), Test asks the brain how many memories the token can see.
"use strict";

const $ = (id) => document.getElementById(id);

function say(text, ok) {
  const line = document.createElement("p");
  line.className = ok ? "ok" : "error";
  line.textContent = text;
  $("status").replaceChildren(line);
}

function patternOf(brainUrl) {
  try {
    return brainUrl ? brainLocation(brainUrl).pattern : "";
  } catch (invalid) {
    return "";
  }
}

async function load() {
  const saved = await brainSettings();
  $("brain-url").value = saved.brainUrl;
  $("token").value = saved.token;
}

$("settings").addEventListener("submit", (event) => {
  event.preventDefault();
  let where;
  try {
    where = brainLocation($("brain-url").value);
  } catch (invalid) {
    say(invalid.message, false);
    return;
  }
  // Asked at once, inside the click: Chrome grants a permission only during a user gesture.
  // Already granted: it answers true without asking again.
  chrome.permissions.request({ origins: [where.pattern] }).then(async (granted) => {
    const before = await brainSettings();
    await chrome.storage.local.set({ brainUrl: where.base, token: $("token").value.trim() });
    $("brain-url").value = where.base;
    const old = patternOf(before.brainUrl);
    if (old && old !== where.pattern) {
      await chrome.permissions.remove({ origins: [old] }).catch(() => false); // the old brain's access goes
    }
    if (granted) say(`Saved. The extension may send captures to ${where.origin}.`, true);
    else say(`Saved, but without access to ${where.origin} nothing can be sent: press Save again and allow it.`, false);
  }, (failure) => say(failure.message, false));
});

$("test").addEventListener("click", async () => {
  say("Testing…", true);
  const result = await chrome.runtime.sendMessage({
    type: "test",
    settings: { brainUrl: $("brain-url").value, token: $("token").value },
  });
  if (result.ok) say(`Connected: the token sees ${result.count} memories.`, true);
  else say(result.error, false);
});

load();
