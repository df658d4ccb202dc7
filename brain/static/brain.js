// Forms with data-confirm ask before submitting (no inline handlers: the CSP allows none).
document.addEventListener("submit", (event) => {
  const message = event.target.dataset && event.target.dataset.confirm;
  if (message && !window.confirm(message)) {
    event.preventDefault();
  }
});

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
