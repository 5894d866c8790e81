// The console's script, part 6 of 6: the hash router and the start-up.
// ------------------------------------------------------------------ router

/** The view of an address that names nothing: what is wrong with it, and a way on. */
function viewNotFound(hash, why) {
  show(
    "Not found",
    h("p", { role: "alert" }, "Nothing is at the address ", h("code", {}, hash), `: ${why}.`),
    h("p", {}, link("#/runs", "All runs")),
  );
}

/** The address's parts, %-decoded; null when an escape is broken (`%E0%A4%A`, `%ZZ`). */
function addressParts(hash) {
  try {
    return hash.replace(/^#\/?/, "").split("/").map(decodeURIComponent);
  } catch {
    return null;
  }
}

function route() {
  for (const fn of cleanups) fn();
  cleanups = [];
  const hash = location.hash;
  const parts = addressParts(hash);
  for (const a of document.querySelectorAll("nav a")) {
    if (parts !== null && hash.startsWith(a.getAttribute("href"))) a.setAttribute("aria-current", "page");
    else a.removeAttribute("aria-current");
  }
  if (parts === null) {
    viewNotFound(hash, "it has a broken %-escape");
    main.focus();
    return;
  }
  switch (parts[0]) {
    case "runs":
      if (parts[1]) viewRun(parts[1]);
      else viewRuns();
      break;
    case "approvals":
      viewApprovals();
      break;
    case "sessions":
      if (parts[1]) viewSession(parts[1]);
      else viewSessions();
      break;
    case "start":
      viewStart();
      break;
    case "history":
      viewHistory();
      break;
    case "tools":
      viewTools();
      break;
    case "":
    case "main": // the skip link's target, on a reload
      viewRuns();
      break;
    default:
      viewNotFound(hash, "the console has no such page");
  }
  main.focus();
}

/** The sign-in code in the address's fragment, if any. */
const codeInHash = () => /^#code=([0-9a-fA-F]+)$/.exec(location.hash)?.[1];

window.addEventListener("hashchange", () => {
  const code = codeInHash();
  if (code) signIn(code);
  else if (location.hash === "#main")
    return; // the skip link
  else if (signedIn) route();
});
const code = codeInHash();
if (code) signIn(code);
else if (!signedIn) renderSignedOut();
else {
  const out = document.getElementById("signout");
  out.hidden = false;
  out.addEventListener("click", async () => {
    await api("POST", "/console/logout").catch(() => {});
    history.replaceState(null, "", "/");
    location.reload();
  });
  route();
}
