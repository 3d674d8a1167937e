// Prints the path of a headless Chromium for the browser tests: `$CHROMIUM` when it
// is set, else the build inside the npm package `@sparticuz/chromium` (pinned in
// package.json), unpacked into the temporary folder on first use.
//
//   node chromium.mjs

if (process.env.CHROMIUM) {
  console.log(process.env.CHROMIUM);
} else {
  const { default: chromium } = await import('@sparticuz/chromium');
  console.log(await chromium.executablePath());
}
