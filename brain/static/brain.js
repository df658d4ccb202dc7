// Forms with data-confirm ask before submitting (no inline handlers: the CSP allows none).
document.addEventListener("submit", (event) => {
  const message = event.target.dataset && event.target.dataset.confirm;
  if (message && !window.confirm(message)) {
    event.preventDefault();
  }
});

// A POST form is sent once: a second click while the first is on its way filed a second
// question, opened a second build (whose credential nobody saw) or issued a second token. The
// buttons come back when the page is shown again (Back) or, for a download, after a while.
const SUBMIT_BUTTONS = "button:not([type]), button[type=submit], input[type=submit]";
document.addEventListener("submit", (event) => {
  const form = event.target;
  if (event.defaultPrevented || form.method.toLowerCase() !== "post" || form.hasAttribute("hx-post")) return;
  if (form.dataset.submitting) {
    event.preventDefault();
    return;
  }
  form.dataset.submitting = "true";
  // After this event: a button disabled now would not send its own name and value.
  setTimeout(() => form.querySelectorAll(SUBMIT_BUTTONS).forEach((button) => {
    button.disabled = true;
    button.dataset.sending = "true";
  }), 0);
  setTimeout(() => release(form), 10000);
});
function release(form) {
  delete form.dataset.submitting;
  form.querySelectorAll("[data-sending]").forEach((button) => {
    button.disabled = false;
    delete button.dataset.sending;
  });
}
window.addEventListener("pageshow", () => document.querySelectorAll("form[data-submitting]").forEach(release));

// Progressive enhancement: with script, the navigation collapses behind "Menu" on small screens.
document.documentElement.classList.add("js");
document.addEventListener("click", (event) => {
  const toggle = event.target.closest && event.target.closest(".menu-toggle");
  if (!toggle) return;
  const nav = document.getElementById(toggle.getAttribute("aria-controls"));
  const open = toggle.getAttribute("aria-expanded") !== "true";
  toggle.setAttribute("aria-expanded", String(open));
  nav.classList.toggle("open", open);
});

// The export link, with script: download through fetch and show how many of the archive's files
// have arrived (the server says how many it will hold; each file in a ZIP starts with "PK\x03\x04").
// Without script, or without streams, the plain link downloads the same archive.
document.addEventListener("click", async (event) => {
  const link = event.target.closest && event.target.closest("a[data-export]");
  if (!link || !window.fetch || !window.ReadableStream || !window.URL.createObjectURL) return;
  event.preventDefault();
  const box = link.parentElement.querySelector(".export-progress");
  const bar = box.querySelector("progress");
  const status = box.querySelector(".export-status");
  box.hidden = false;
  link.setAttribute("aria-disabled", "true");
  try {
    const response = await fetch(link.href, { credentials: "same-origin" });
    if (!response.ok) throw new Error("the server answered " + response.status);
    const total = Number(response.headers.get("X-Brain-Export-Files")) || 0;
    if (total) bar.max = total;
    const name = (/filename="([^"]+)"/.exec(response.headers.get("Content-Disposition") || "") || [])[1] || "brain-export.zip";
    const reader = response.body.getReader();
    const parts = [];
    let files = 0, bytes = 0, tail = new Uint8Array(0);
    for (;;) {
      const { done, value } = await reader.read();
      if (done) break;
      parts.push(value);
      bytes += value.length;
      const seen = new Uint8Array(tail.length + value.length);
      seen.set(tail);
      seen.set(value, tail.length);
      for (let i = 0; i + 3 < seen.length; i++) {
        if (seen[i] === 0x50 && seen[i + 1] === 0x4b && seen[i + 2] === 0x03 && seen[i + 3] === 0x04) files++;
      }
      tail = seen.slice(Math.max(0, seen.length - 3));
      if (total) bar.value = Math.min(files, total);
      status.textContent = (total ? files + " of " + total + " files" : files + " files") +
        " · " + (bytes / 1e6).toFixed(1) + " MB";
    }
    const url = URL.createObjectURL(new Blob(parts, { type: "application/zip" }));
    const save = document.createElement("a");
    save.href = url;
    save.download = name;
    document.body.appendChild(save);
    save.click();
    save.remove();
    setTimeout(() => URL.revokeObjectURL(url), 60000);
    if (total) bar.value = total;
    status.textContent = "Done: " + (total || files) + " files, " + (bytes / 1e6).toFixed(1) + " MB — saved as " + name;
  } catch (error) {
    status.textContent = "The export failed (" + error.message + "). Try again, or use the link without script.";
  } finally {
    link.removeAttribute("aria-disabled");
  }
});
