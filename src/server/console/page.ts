/**
 * The console's one HTML page: a static shell (header, navigation, the main
 * region, a status live region) that loads `/console/app.js` and
 * `/console/console.css`. Nothing inline: no script, no style attribute, so
 * the Content-Security-Policy can forbid both. The views are built by the
 * script with DOM calls (text nodes only, never HTML from data).
 *
 * @module
 */

const escapeHtml = (s: string): string =>
  s.replace(/[&<>"']/g, (ch) => ({ "&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;", "'": "&#39;" })[ch]!);

/** The navigation: hash routes of the script. */
const NAV: readonly [string, string][] = [
  ["#/runs", "Runs"],
  ["#/approvals", "Approvals"],
  ["#/sessions", "Sessions"],
  ["#/start", "Start a run"],
  ["#/history", "History"],
  ["#/tools", "Tools"],
];

/** The page; `csrf` is the signed-in session's CSRF token (null: not signed in). */
export function consolePage(csrf: string | null): string {
  const nav = NAV.map(([href, label]) => `<li><a href="${href}">${escapeHtml(label)}</a></li>`).join("");
  return `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="referrer" content="no-referrer">
<meta name="csrf-token" content="${csrf === null ? "" : escapeHtml(csrf)}">
<meta name="agentcore-signed-in" content="${csrf === null ? "no" : "yes"}">
<title>agentcore console</title>
<link rel="icon" href="data:,">
<link rel="stylesheet" href="/console/console.css">
<script type="module" src="/console/app.js"></script>
</head>
<body>
<a class="skip" href="#main" data-skip="1">Skip to content</a>
<header>
<p class="brand">agentcore console</p>
<nav aria-label="Console sections"><ul>${nav}</ul></nav>
<button type="button" id="signout" hidden>Sign out</button>
</header>
<main id="main" tabindex="-1"><noscript>The console needs JavaScript.</noscript></main>
<div id="announce" class="visually-hidden" role="status" aria-live="polite"></div>
</body>
</html>
`;
}
