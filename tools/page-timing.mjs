// Opens a page in headless Chromium N times and prints, as JSON, the median time
// from navigation start to `load` and to hydrated (`body[data-hydrated]`, set by
// the app once the page is interactive). Used by `cargo bench --bench big`.
//   node tools/page-timing.mjs URL [N]
import { chromium } from 'playwright-core';

const [url, times = '3'] = process.argv.slice(2);
const browser = await chromium.launch({
  executablePath: process.env.CHROMIUM ?? '/usr/bin/chromium',
  headless: true,
  args: ['--headless', '--no-sandbox', '--disable-gpu', '--disable-background-networking', '--no-first-run'],
});
const load = [];
const hydrated = [];
const problems = [];
try {
  for (let i = 0; i < Number(times); i++) {
    const context = await browser.newContext({ viewport: { width: 1280, height: 900 } });
    const page = await context.newPage();
    page.on('pageerror', (e) => problems.push(e.message));
    await page.goto(url, { waitUntil: 'load', timeout: 120_000 });
    await page.waitForSelector('body[data-hydrated]', { state: 'attached', timeout: 120_000 });
    const [l, h] = await page.evaluate(() => {
      const nav = performance.getEntriesByType('navigation')[0];
      return [nav.loadEventEnd, performance.now()];
    });
    load.push(l);
    // The marker was set before this evaluation; its own time is recorded by the app.
    const marked = await page.evaluate(() => Number(document.body.dataset.hydratedAt ?? NaN));
    hydrated.push(Number.isFinite(marked) ? marked : h);
    await context.close();
  }
} finally {
  await browser.close();
}
const median = (xs) => xs.sort((a, b) => a - b)[Math.floor(xs.length / 2)];
console.log(JSON.stringify({ load_ms: median(load), hydrated_ms: median(hydrated), problems }));
