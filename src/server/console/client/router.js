// The console's script, part 6 of 6: the hash router and the start-up.
// ------------------------------------------------------------------ router

function route() {
  for (const fn of cleanups) fn();
  cleanups = [];
  const hash = location.hash;
  const parts = hash.replace(/^#\/?/, "").split("/").map(decodeURIComponent);
  for (const a of document.querySelectorAll("nav a")) {
    if (hash.startsWith(a.getAttribute("href"))) a.setAttribute("aria-current", "page");
    else a.removeAttribute("aria-current");
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
    default:
      viewRuns();
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
