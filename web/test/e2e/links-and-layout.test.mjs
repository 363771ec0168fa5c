// What a newcomer meets, at a desktop's size and a phone's, against `pipelab
// serve` in front of a real redis-server: a permalink that keeps every
// control of every view (the playground's, each lesson's, Compare's, the
// sweep's, the export menus), the open tab and the place in the page, and
// an address bar that follows the tab; view tabs that follow the WAI-ARIA
// tabs pattern inside one main landmark; on the phone, a floating Run that
// covers neither the run controls nor the summary, charts tall enough for
// their legends and axis titles, tables that say they scroll and are
// reachable by keyboard, headings that never break inside a word; log axes
// whose ticks can be read (1, 2, 5, … with units).
// Screenshots: artifacts/layout-*.png.
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { VIEWPORTS, artifacts, fillFields, openPage, usePage, useServedBrowser } from './harness.mjs';

const lab = useServedBrowser();
/** A new browser context (harness openPage) at `vp` on `url`. */
const openTab = (vp, url = lab.serve.base) => openPage(lab.browser, url, vp);

/** Sets an input's value as a person's edit does (`input` and `change` fire). */
const setValue = (page, selector, value) =>
  page.$eval(
    selector,
    (e, v) => {
      if (e.type === 'checkbox') e.checked = v;
      else e.value = String(v);
      e.dispatchEvent(new Event('input', { bubbles: true }));
      e.dispatchEvent(new Event('change', { bubbles: true }));
    },
    value,
  );

/** Every control the permalink must keep, as the page shows it now. */
const readControls = (page) =>
  page.evaluate(() => {
    const v = (id) => {
      const e = document.getElementById(id);
      return e.type === 'checkbox' ? e.checked : e.value;
    };
    const lessons = {};
    for (const e of document.querySelectorAll('#tutorial-view input[id], #tutorial-view select[id]')) lessons[e.id] = e.type === 'checkbox' ? e.checked : e.value;
    return {
      text: window.pipelab.editors.snapshot().inlineText,
      mode: document.querySelector('input[name="mode"]:checked').value,
      playground: Object.fromEntries(['clients', 'batch-size', 'rtt', 'bandwidth', 'on-error', 'resp3', 'export-target', 'export-mode', 'keys-pattern'].map((id) => [id, v(id)])),
      compare: Object.fromEntries(['compare-rtt', 'compare-batch-size', 'compare-clients'].map((id) => [id, v(id)])),
      sweep: Object.fromEntries(['sweep-command', 'sweep-total', 'sweep-sizes', 'sweep-rtt'].map((id) => [id, v(id)])),
      lessons,
      tab: document.querySelector('[role="tab"][aria-selected="true"]').id,
      l1Output: document.querySelector('#l1-rtt + output')?.textContent,
    };
  });

const innerHeight = (vp) => vp.height;
const boxesApart = (a, b) => a.right <= b.left + 0.5 || b.right <= a.left + 0.5 || a.bottom <= b.top + 0.5 || b.bottom <= a.top + 0.5;

for (const vp of VIEWPORTS) {
  describe(`at ${vp.width}×${vp.height}`, () => {
    test('a permalink keeps every control of every view, the open tab and the place in the page', { timeout: 120_000 }, async () => {
      const a = await openTab(vp);
      const b = { close: async () => {} };
      try {
        const { page } = a;
        await page.evaluate(() => window.pipelab.editors.setInline('SET pl:a 1\nINCR pl:n\nGET pl:a'));
        // The playground: mode auto with 25 clients, and every other control off its default.
        await page.check('input[name="mode"][value="auto"]');
        await fillFields(page, { '#clients': '25', '#rtt': '0.2', '#bandwidth': '100' });
        await page.selectOption('#on-error', 'stop');
        await page.check('#resp3');
        await page.selectOption('#export-target', 'ioredis');
        await page.selectOption('#export-mode', 'transaction');
        await setValue(page, '#keys-pattern', 'pl:*');
        // Compare's and the sweep's settings.
        await page.click('#tab-compare');
        await fillFields(page, { '#compare-rtt': '2.5', '#compare-batch-size': '50', '#compare-clients': '7' });
        await page.click('#tab-sweep');
        await fillFields(page, { '#sweep-command': 'INCR pl:{i}', '#sweep-total': '3000', '#sweep-sizes': '1, 5, 50', '#sweep-rtt': '0.4' });
        // Every lesson's controls: lesson 1's RTT at 3 ms, each other slider one step off its default, each checkbox flipped.
        await page.click('#tab-tutorial');
        const inputs = await page.$$eval('#tutorial-view input[id], #tutorial-view select[id]', (es) => es.map((e) => ({ id: e.id, type: e.type, value: e.value, min: e.min, max: e.max, step: e.step, checked: e.checked })));
        assert.ok(inputs.filter((i) => i.type === 'range').length >= 8, `the lessons' sliders: ${JSON.stringify(inputs)}`);
        for (const i of inputs) {
          if (i.id === 'l1-rtt') await setValue(page, '#l1-rtt', 3);
          else if (i.type === 'checkbox') await setValue(page, `#${i.id}`, !i.checked);
          else if (i.type === 'range') {
            const up = Number(i.value) + Number(i.step);
            await setValue(page, `#${i.id}`, up <= Number(i.max) ? up : Number(i.value) - Number(i.step));
          }
        }
        const set = await readControls(page);
        assert.equal(set.l1Output, '3 ms');
        assert.equal(set.playground.clients, '25');
        for (const i of inputs) {
          if (i.type === 'checkbox') assert.notEqual(set.lessons[i.id], i.checked, `${i.id} was flipped`);
          else if (i.type === 'range') assert.notEqual(set.lessons[i.id], i.value, `${i.id} was moved`);
        }
        // The place: lesson 5 at the top of the screen, under the tab bar, and Copy permalink from there.
        await page.$eval('#lesson-5', (e) => e.scrollIntoView({ block: 'start' }));
        await page.waitForTimeout(100);
        const lesson5Top = () => page.$eval('#lesson-5', (e) => e.getBoundingClientRect().top);
        const top = await lesson5Top();
        assert.ok((await page.evaluate(() => window.scrollY)) > 500, 'lesson 5 is well down the page');
        assert.ok(await page.isVisible('#permalink'), 'Copy permalink stays on screen');
        await page.click('#permalink');
        await page.waitForSelector('#permalink-status:not([hidden])');
        assert.ok(Math.abs((await lesson5Top()) - top) <= 2, 'copying the link did not move the page');
        const said = await page.evaluate(() => ({ status: document.getElementById('permalink-status').getBoundingClientRect().toJSON(), tabs: document.getElementById('tabs').getBoundingClientRect().toJSON() }));
        assert.ok(said.status.top >= said.tabs.bottom - 1 && said.status.bottom <= innerHeight(vp), `what Copy did is said on screen, under the tab bar: ${JSON.stringify(said)}`);
        const url = await page.evaluate(() => location.href);
        assert.match(url, /#s=/);

        // A fresh context (nothing shared) opens the link: every value comes back.
        const fresh = await openTab(vp, url);
        Object.assign(b, fresh);
        await fresh.page.waitForFunction(() => window.pipelab.editors.snapshot().inlineText.includes('pl:n'));
        await fresh.page.waitForTimeout(300);
        const got = await readControls(fresh.page);
        assert.deepEqual(got, set);
        assert.equal(got.tab, 'tab-tutorial');
        const place = await fresh.page.evaluate(() => ({ lesson: document.getElementById('lesson-5').getBoundingClientRect().top, tabs: document.getElementById('tabs').getBoundingClientRect().bottom }));
        assert.ok(place.lesson >= place.tabs - 2 && place.lesson <= place.tabs + 40, `lesson 5 opens at the top, under the tab bar: ${JSON.stringify(place)}`);
        await fresh.page.screenshot({ path: join(artifacts, `layout-permalink-${vp.name}.png`) });

        // Another tab: the address bar follows it, so a reload opens that tab (with every setting still there).
        await fresh.page.click('#tab-compare');
        await fresh.page.waitForFunction((old) => location.href !== old, url);
        await fresh.page.reload();
        await fresh.page.waitForSelector('#tabs');
        await fresh.page.waitForFunction(() => window.pipelab?.editors.snapshot().inlineText.includes('pl:n'));
        await fresh.page.waitForTimeout(300);
        const reloaded = await readControls(fresh.page);
        assert.equal(reloaded.tab, 'tab-compare', 'the reload opens the tab last shown');
        assert.deepEqual({ ...reloaded, tab: set.tab }, set);
        assert.deepEqual(a.errors, []);
        assert.deepEqual(fresh.errors, []);
      } finally {
        await a.close();
        await b.close();
      }
    });

    test('the view tabs follow the WAI-ARIA tabs pattern, all inside one main landmark', { timeout: 60_000 }, async () => {
      const { page, errors, close } = await openTab(vp);
      try {
        const state = () =>
          page.evaluate(() => ({
            focused: document.activeElement?.id,
            selected: [...document.querySelectorAll('[role="tab"][aria-selected="true"]')].map((t) => t.id),
            tabStops: [...document.querySelectorAll('[role="tab"]')].filter((t) => t.tabIndex === 0).map((t) => t.id),
            shown: [...document.querySelectorAll('[role="tabpanel"]')].filter((p) => !p.hidden).map((p) => p.id),
            mainShown: document.querySelectorAll('main').length === 1 && document.querySelector('main').offsetParent !== null,
          }));
        assert.equal(await page.$$eval('[role="tabpanel"]', (ps) => ps.filter((p) => p.tagName === 'MAIN' || !p.closest('main')).length), 0, 'every tab panel is inside <main>, none is <main>');
        assert.equal(await page.$$eval('[role="tabpanel"]', (ps) => ps.every((p) => document.getElementById(p.getAttribute('aria-labelledby'))?.getAttribute('role') === 'tab')), true, 'each panel is labelled by its tab');
        await page.focus('#tab-playground');
        // Tab `id` focused, selected, the only tab stop, and its panel (`id-view`) the only one shown.
        const expect = async (id) => {
          const s = await state();
          assert.deepEqual(s, { focused: `tab-${id}`, selected: [`tab-${id}`], tabStops: [`tab-${id}`], shown: [`${id}-view`], mainShown: true });
        };
        await expect('playground');
        for (const [key, id] of [['ArrowRight', 'tutorial'], ['ArrowRight', 'compare'], ['End', 'sweep'], ['ArrowRight', 'playground'], ['ArrowLeft', 'sweep'], ['Home', 'playground']]) {
          await page.keyboard.press(key);
          await expect(id);
        }
        // Tab leaves the tab list: the next stop is not another tab.
        await page.keyboard.press('Tab');
        assert.notEqual(await page.evaluate(() => document.activeElement?.getAttribute('role')), 'tab');
        assert.deepEqual(errors, []);
      } finally {
        await close();
      }
    });

    test('the sweep chart: log axes with 1-2-5 ticks and units, a plot tall enough for its legend and axis titles', { timeout: 120_000 }, async () => {
      const { page, errors, close } = await openTab(vp);
      try {
        await page.click('#tab-sweep');
        await page.fill('#sweep-total', '2000');
        await page.fill('#sweep-sizes', '1, 10, 100, 1000');
        for (const rtt of ['0.2', '1']) {
          await page.fill('#sweep-rtt', rtt);
          await page.click('#sweep-run');
          await page.waitForFunction(() => !document.getElementById('sweep-run').disabled && document.querySelector('#sweep-out [data-table="sweep"], #sweep-out .message.error'), null, { timeout: 90_000 });
          assert.equal(await page.$('#sweep-out .message.error'), null, await page.innerText('#sweep-out'));
        }
        await page.waitForTimeout(300);
        const chart = await chartFacts(page, '#sweep-chart');
        checkChart(chart, vp);
        assert.ok(chart.legendItems >= 8, `two runs: ${chart.legendItems} legend entries`);
        await page.$eval('#sweep-chart', (c) => c.scrollIntoView({ block: 'center' }));
        await page.screenshot({ path: join(artifacts, `layout-sweep-chart-${vp.name}.png`) });
        assert.deepEqual(errors, []);
      } finally {
        await close();
      }
    });
  });
}

/** What a chart drew: its plot, legend, canvas, each axis's ticks (value, label) and title. */
function chartFacts(page, selector) {
  return page.$eval(selector, (canvas) => {
    const c = window.pipelab.chartOf(canvas);
    const ctx = canvas.getContext('2d');
    const scales = {};
    for (const [id, s] of Object.entries(c.scales)) {
      const t = s.options.title;
      ctx.font = `${t.font?.size ?? 12}px ${t.font?.family ?? 'sans-serif'}`;
      scales[id] = {
        type: s.type,
        position: s.position,
        ticks: s.ticks.map((k) => ({ value: k.value, label: k.label })),
        title: t.display ? t.text : null,
        // A title of several lines (an array) is as wide as its widest line.
        titleWidth: t.display ? Math.max(...[t.text].flat().map((line) => ctx.measureText(line).width)) : 0,
        top: s.top,
        bottom: s.bottom,
        left: s.left,
        right: s.right,
      };
    }
    return {
      area: { ...c.chartArea },
      legend: c.legend.options.display ? { top: c.legend.top, bottom: c.legend.bottom, height: c.legend.height } : null,
      legendItems: c.legend.legendItems?.length ?? 0,
      canvas: { width: canvas.clientWidth, height: canvas.clientHeight },
      scales,
    };
  });
}

/** A log axis's ticks are 1, 2 or 5 times a power of ten, at least three of them, each labelled (with `unit`). */
function checkLogTicks(scale, unit, what) {
  const labelled = scale.ticks.filter((t) => t.label !== '' && t.label !== undefined);
  assert.ok(labelled.length >= 3, `${what}: ${JSON.stringify(scale.ticks)}`);
  for (const t of labelled) {
    const m = t.value / 10 ** Math.floor(Math.log10(t.value) + 1e-9);
    assert.ok([1, 2, 5].some((x) => Math.abs(m - x) < 1e-6), `${what}: tick ${t.value} is 1, 2 or 5 × 10^k`);
    if (unit) assert.ok(String(t.label).endsWith(unit), `${what}: "${t.label}" says ${unit}`);
  }
}

function checkChart(chart, vp) {
  checkPlot(chart, vp);
  checkLogTicks(chart.scales.latency, ' ms', 'reply latency');
  checkLogTicks(chart.scales.y, '', 'commands/s');
}

/** The plot at least 200 px tall, under its legend, each axis title within its axis and the canvas. */
function checkPlot(chart, vp) {
  const plotH = chart.area.bottom - chart.area.top;
  assert.ok(plotH >= 200, `the plot is ${plotH} px tall at ${vp.name} (${JSON.stringify(chart)})`);
  if (chart.legend) assert.ok(chart.legend.bottom <= chart.area.top + 1, `the legend ends above the plot: ${JSON.stringify(chart.legend)} ${JSON.stringify(chart.area)}`);
  for (const [id, s] of Object.entries(chart.scales)) {
    if (!s.title) continue;
    const room = s.position === 'left' || s.position === 'right' ? s.bottom - s.top : s.right - s.left;
    assert.ok(s.titleWidth <= room, `${id}'s title "${s.title}" (${Math.round(s.titleWidth)} px) fits its axis (${Math.round(room)} px)`);
    assert.ok(s.top >= (chart.legend?.bottom ?? 0) - 1 && s.bottom <= chart.canvas.height + 1, `${id} is below the legend and inside the canvas`);
  }
}


describe("at a phone's width (390×844)", () => {
  const vp = VIEWPORTS.find((v) => v.name === 'phone');
  const tab = usePage(lab, vp);

  test('the floating Run covers neither the run controls (Mode, Clients) nor the summary, wherever the page is scrolled', { timeout: 60_000 }, async () => {
    const { page } = tab;
    await page.check('input[name="mode"][value="auto"]');
    await page.fill('#clients', '25');
    await page.click('#run');
    await page.waitForSelector('#summary dl', { timeout: 30_000 });
    await page.waitForTimeout(200);
    const height = await page.evaluate(() => document.documentElement.scrollHeight);
    let onScreen = 0;
    let steps = 0;
    for (let y = 0; y <= height; y += 97) {
      await page.evaluate((to) => window.scrollTo(0, to), y);
      await page.waitForTimeout(60); // the button is placed on the next frame
      const b = await page.evaluate(() => {
        const box = (s) => document.querySelector(s).getBoundingClientRect().toJSON();
        return { run: box('#run'), mode: box('#controls fieldset.mode'), clients: box('#clients'), controls: box('#controls'), summary: box('#summary'), edge: document.getElementById('run').dataset.edge ?? 'docked' };
      });
      for (const k of ['mode', 'clients', 'controls', 'summary']) {
        if (k === 'controls' && b.edge === 'docked') continue; // Run in its place is part of the controls
        assert.ok(boxesApart(b.run, b[k]), `scrolled to ${y}, Run (${b.edge}) covers ${k}: ${JSON.stringify(b)}`);
      }
      if (b.run.top >= 0 && b.run.bottom <= vp.height) onScreen++;
      steps++;
    }
    // Reachable nearly everywhere: only where the controls and the summary fill both edges does it stay in its place.
    assert.ok(onScreen >= steps * 0.8, `Run on screen at ${onScreen} of ${steps} scroll positions`);
    for (const y of [0, 100000]) {
      await page.evaluate((to) => window.scrollTo(0, to), y);
      await page.waitForTimeout(60);
      const r = await page.$eval('#run', (e) => e.getBoundingClientRect().toJSON());
      assert.ok(r.top >= 0 && r.bottom <= vp.height, `Run on screen at scroll ${y}: ${JSON.stringify(r)}`);
    }
    await page.evaluate(() => window.scrollTo(0, 0));
    await page.screenshot({ path: join(artifacts, 'layout-run-phone.png') });
  });

  test("lessons 3 and 11: log axes with readable ticks, plots tall enough; tables that scroll say so and are reachable by keyboard; no heading breaks inside a word", { timeout: 240_000 }, async () => {
    const { page } = tab;
    await page.click('#tab-tutorial');
    for (const [n, canvas] of [[3, '#l3-chart'], [11, '#bw-chart']]) {
      await page.click(`#lesson-${n} button.run-lesson`);
      await page.waitForSelector(`#lesson-${n} .lesson-result:is([data-state="done"], [data-state="failed"])`, { timeout: 180_000 });
      assert.equal(await page.getAttribute(`#lesson-${n} .lesson-result`, 'data-state'), 'done', await page.innerText(`#lesson-${n} .lesson-result`));
      await page.waitForTimeout(300);
      const chart = await chartFacts(page, canvas);
      checkChart(chart, vp);
    }
    await page.click('#tab-compare');
    await page.fill('#compare-rtt', '0.2');
    await page.click('#compare-run');
    await page.waitForSelector('#compare-out [data-table="compare"]', { timeout: 200_000 });
    await page.waitForTimeout(300);
    for (const canvas of ['#compare-time-chart', '#compare-rt-chart']) checkPlot(await chartFacts(page, canvas), vp);
    await page.click('#tab-tutorial');
    await page.waitForTimeout(300);
    const scan = () =>
      page.evaluate(() =>
        [...document.querySelectorAll('.scroll-box')]
          .filter((b) => b.offsetParent !== null)
          .map((b) => ({
            table: b.querySelector('table')?.dataset.table,
            overflows: b.scrollWidth > b.clientWidth + 1,
            scrolls: b.dataset.scrolls ?? null,
            tabindex: b.getAttribute('tabindex'),
            role: b.getAttribute('role'),
            label: b.getAttribute('aria-label'),
            hint: getComputedStyle(b, '::before').content,
            shadow: getComputedStyle(b).backgroundImage,
          })),
      );
    const boxes = [...(await scan())];
    await page.click('#tab-compare');
    await page.waitForTimeout(300);
    boxes.push(...(await scan()));
    assert.ok(boxes.length >= 3, JSON.stringify(boxes));
    const wide = boxes.filter((b) => b.overflows);
    assert.ok(wide.length >= 1, `at least one table is wider than a phone: ${JSON.stringify(boxes)}`);
    for (const b of boxes) {
      if (b.overflows) {
        assert.equal(b.scrolls, 'x', JSON.stringify(b));
        assert.equal(b.tabindex, '0', `reachable by keyboard: ${JSON.stringify(b)}`);
        assert.equal(b.role, 'region', JSON.stringify(b));
        assert.ok(b.label && b.label.length > 3, JSON.stringify(b));
        assert.match(b.hint, /scrolls sideways/, JSON.stringify(b));
        assert.match(b.shadow, /gradient/, JSON.stringify(b));
      } else {
        assert.equal(b.tabindex, null, `no tab stop where nothing scrolls: ${JSON.stringify(b)}`);
      }
    }
    // The arrow keys scroll a focused wide table.
    await page.click('#tab-tutorial');
    const target = await page.evaluate(() => {
      const b = [...document.querySelectorAll('.scroll-box[data-scrolls]')].find((x) => x.offsetParent !== null);
      if (!b) return null;
      b.id ||= 'wide-table-under-test';
      return `#${b.id}`;
    });
    assert.ok(target, 'a wide table in the tutorial');
    await page.focus(target);
    for (let i = 0; i < 5; i++) await page.keyboard.press('ArrowRight');
    // Keyboard scrolling is animated: give it time on a loaded machine.
    await page.waitForFunction((t) => document.querySelector(t).scrollLeft > 0, target, { timeout: 10_000 }).catch(() => {});
    const after = await page.$eval(target, (b) => ({ scrollLeft: b.scrollLeft, scrollWidth: b.scrollWidth, clientWidth: b.clientWidth, focused: document.activeElement === b, table: b.querySelector('table')?.dataset.table }));
    assert.ok(after.scrollLeft > 0, `ArrowRight scrolled it: ${JSON.stringify(after)}`);
    await page.$eval(target, (b) => b.scrollIntoView({ block: 'center' }));
    await page.screenshot({ path: join(artifacts, 'layout-table-phone.png') });
    // Headings (table headers, titles) break between words only.
    for (const tab of ['tutorial', 'compare']) {
      await page.click(`#tab-${tab}`);
      const broken = await page.evaluate(() => {
        const out = [];
        for (const h of document.querySelectorAll('main th, main h2, main h3, main dt')) {
          if (h.offsetParent === null) continue;
          const walker = document.createTreeWalker(h, NodeFilter.SHOW_TEXT);
          for (let t = walker.nextNode(); t; t = walker.nextNode()) {
            for (const m of t.textContent.matchAll(/\S+/g)) {
              const r = document.createRange();
              r.setStart(t, m.index);
              r.setEnd(t, m.index + m[0].length);
              const lines = new Set([...r.getClientRects()].filter((x) => x.width > 0).map((x) => Math.round(x.top)));
              if (lines.size > 1) out.push(`${h.tagName} "${h.textContent.trim()}": "${m[0]}" on ${lines.size} lines`);
            }
          }
        }
        return out;
      });
      assert.deepEqual(broken, [], `${tab}: words broken across lines`);
    }
  });
});
