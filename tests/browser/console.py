#!/usr/bin/env python3
"""Browser tests of the operator's console, in a real headless Chromium (Debian's, driven by
Playwright with the system browser). The Rust tests that call this (cli/tests/console.rs) make
the data and start the server; this script only does what an operator does in the browser, and
asserts what the operator sees. Each scenario exits non-zero on the first failed check, with the
page's address and text.

    console.py local --url URL --shots DIR   # native serve's printed console URL
    console.py aws --url URL --shots DIR     # native console --aws's printed console URL

Screenshots of the main pages go to DIR (docs/console/ when the docs are being updated).
"""

import argparse
import os
import sys
import tempfile
import urllib.error
import urllib.request

from playwright.sync_api import expect, sync_playwright

# As the machine's notes say to start Chromium here: headless, no sandbox (root), no network of
# its own (the closed network refuses it), a fresh profile.
FLAGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
]

# What the hostile tenant texts would do if they ran: none of these may ever be seen.
PWNED = ("1", "2", "3", "5", "pwned")
# A barrier id of markup and URL syntax (cli/tests/console.rs makes it).
HOSTILE_ID = "<img src=x onerror=alert(5)>/?#&\"'"


class Failed(Exception):
    pass


def check(cond, what, page=None):
    if not cond:
        where = f" at {page.url}" if page is not None else ""
        raise Failed(f"{what}{where}")


def open_browser(p):
    return p.chromium.launch_persistent_context(
        tempfile.mkdtemp(prefix="console-chromium-"),
        executable_path=os.environ.get("NATIVE_CHROMIUM", "/usr/bin/chromium"),
        headless=True,
        args=FLAGS,
        viewport={"width": 1280, "height": 860},
    )


def watch(page):
    """Every dialog (accepted, so confirmations go on) and every console error of the page."""
    seen = {"dialogs": [], "errors": []}

    def dialog(d):
        seen["dialogs"].append(d.message)
        d.accept()

    page.on("dialog", dialog)
    page.on("console", lambda m: m.type == "error" and seen["errors"].append(m.text))
    page.on("pageerror", lambda e: seen["errors"].append(str(e)))
    return seen


def no_tenant_script_ran(page, seen):
    hostile = [d for d in seen["dialogs"] if d in PWNED]
    check(not hostile, f"a tenant's text ran as script: dialogs {hostile}", page)
    check("pwned" not in page.title(), "a tenant's text changed the page's title", page)
    check(
        page.evaluate("() => window.__pwned === undefined"),
        "a tenant's text set window.__pwned",
        page,
    )
    check(not seen["errors"], f"the console logged errors: {seen['errors']}", page)


def shot(page, shots, name):
    if shots:
        os.makedirs(shots, exist_ok=True)
        page.screenshot(path=os.path.join(shots, f"{name}.png"), full_page=True)


def tab(page, name):
    page.locator("nav.tabs").get_by_role("link", name=name, exact=True).click()


def base_of(url):
    return url.split("/console/")[0]


def local(ctx, url, shots):
    page = ctx.new_page()
    seen = watch(page)
    base = base_of(url)

    # The printed URL opens the console; the token leaves the address bar for a cookie.
    page.goto(url)
    expect(page).to_have_url(f"{base}/console/")
    expect(page.locator("h1")).to_have_text("Tenants")
    cookies = {c["name"]: c for c in ctx.cookies()}
    check("native_console" in cookies, "no console cookie after opening the URL", page)
    check(cookies["native_console"]["httpOnly"], "the cookie is not HttpOnly", page)
    check(cookies["native_console"]["sameSite"] == "Strict", "the cookie is not SameSite=Strict", page)
    expect(page.locator("table.list")).to_contain_text("acme")
    expect(page.locator("table.list")).to_contain_text("bulk")
    shot(page, shots, "overview")

    # Find a barrier with pending members: acme's open barriers.
    page.locator("table.list").get_by_role("link", name="acme", exact=True).click()
    expect(page.locator("h1")).to_have_text("Tenant acme")
    shot(page, shots, "tenant")
    tab(page, "Barriers")
    page.locator("p.filters").get_by_role("link", name="open", exact=True).click()
    # order-7 and the one with the odd id are open; order-6 is complete.
    expect(page.locator("#barriers tbody tr")).to_have_count(2)
    expect(page.locator("#barriers tbody tr[data-state=open]")).to_have_count(2)
    page.locator("p.filters").get_by_role("link", name="all", exact=True).click()
    expect(page.locator("#barriers tbody tr")).to_have_count(3)
    shot(page, shots, "barriers")
    # A barrier id made of markup and URL syntax links to its own page, shown as text.
    page.locator("#barriers").get_by_role("link", name=HOSTILE_ID, exact=True).click()
    expect(page.locator("h1")).to_have_text(f"Barrier {HOSTILE_ID}")
    expect(page.locator("#members tr[data-state=pending]")).to_have_count(1)
    page.go_back()
    page.locator("#barriers").get_by_role("link", name="order-7", exact=True).click()
    expect(page.locator("h1")).to_have_text("Barrier order-7")
    # Hold the page still while acting on it (the choice holds for this tab).
    page.uncheck("#live")

    # A member named <script>... is shown, not run.
    hostile_name = "<script>alert(1)</script>.xml"
    hostile = page.locator("#members tr", has=page.get_by_text(hostile_name, exact=True))
    expect(hostile).to_have_count(1)
    expect(hostile.locator("td.member")).to_have_text(hostile_name)
    expect(page.locator("#members tr[data-state=pending]")).to_have_count(3)
    shot(page, shots, "barrier")

    # Ack one from the page and see it resolved.
    row = page.locator('#members tr[data-member="a.xml"]')
    row.get_by_role("button", name="Ack ok").click()
    expect(page.locator("p.notice")).to_contain_text('acknowledged "a.xml" (ok)')
    row = page.locator('#members tr[data-member="a.xml"]')
    expect(row).to_have_attribute("data-state", "ok")
    expect(row.locator("td.time time")).to_have_count(1)

    # Fail the hostile one with an error that is markup too: shown as text.
    hostile = page.locator("#members tr", has=page.get_by_text(hostile_name, exact=True))
    hostile.locator("input[name=error]").fill("<b>rejected</b> <img src=x onerror=alert(3)>")
    hostile.get_by_role("button", name="Fail").click()
    hostile = page.locator("#members tr", has=page.get_by_text(hostile_name, exact=True))
    expect(hostile).to_have_attribute("data-state", "failed")
    expect(hostile.locator("td.detail .error")).to_have_text("<b>rejected</b> <img src=x onerror=alert(3)>")

    # The last one completes it: the continuation is sent, and the serving process runs it.
    page.locator('#members tr[data-member="c.xml"]').get_by_role("button", name="Ack ok").click()
    expect(page.locator("p.notice")).to_contain_text("the barrier is complete and its continuation was sent")
    expect(page.locator("dl.facts")).to_contain_text("finalize: sent")
    expect(page.locator("p.state .badge").first).to_have_text("complete")
    shot(page, shots, "barrier-complete")
    page.check("#live")
    tab(page, "Invocations")
    expect(page.locator("#invocations")).to_contain_text("finalize", timeout=20_000)
    finalize = page.locator("#invocations tbody tr", has=page.get_by_role("link", name="finalize", exact=True)).first
    expect(finalize).to_have_attribute("data-state", "ok")
    expect(finalize).to_contain_text("queue")
    shot(page, shots, "invocations")

    # The run's chain, as a timeline: the continuation's run with its entry point.
    page.uncheck("#live")
    finalize.locator("a.chain").click()
    expect(page.locator("h1")).to_contain_text("Chain ")
    run = page.locator("#timeline tr.run", has=page.get_by_role("link", name="finalize", exact=True)).first
    expect(run).to_contain_text("on_queue")
    expect(run).to_have_attribute("data-state", "ok")
    shot(page, shots, "chain")

    # Redrive a dead letter and see it run.
    tab(page, "Dead letters")
    letters = page.locator("#dead-letters tbody tr")
    expect(letters).to_have_count(1)
    expect(letters.first).to_contain_text("<img src=x onerror=\"document.title='pwned'\">boom")
    expect(letters.first).to_contain_text("redriven")
    shot(page, shots, "dead-letters")
    page.uncheck("#live")
    letters.first.get_by_role("button", name="Redrive").click()
    expect(page.locator("p.notice")).to_contain_text("1 dead letter(s) moved back to their queue")
    page.check("#live")
    expect(page.locator("p.empty")).to_have_text("No dead letters.", timeout=20_000)
    tab(page, "Invocations")
    redriven = page.locator("#invocations tbody tr", has=page.get_by_role("link", name="redriven", exact=True))
    expect(redriven.first).to_have_attribute("data-state", "ok", timeout=20_000)
    redriven.first.locator("td.num a").click()
    expect(page.locator("h1")).to_contain_text("redriven")
    expect(page.locator("ol.logs")).to_contain_text("the dead letter ran")
    expect(page.locator("ol.logs")).to_contain_text("<i>logged markup</i>")
    shot(page, shots, "invocation")

    # A job, with its parts read through and checked.
    tab(page, "Jobs")
    page.locator("#jobs").get_by_role("link", name="nightly-1", exact=True).click()
    expect(page.locator("p.state .badge")).to_have_text("done")
    page.get_by_role("link", name="Read every part and check it").click()
    expect(page.locator("table.parts")).to_contain_text("rows")
    expect(page.locator("table.parts .badge.good")).to_have_count(1)
    shot(page, shots, "job")

    # A rendezvous barrier: generation, arrivals, participants with their metadata as text.
    tab(page, "Rendezvous")
    page.locator("#namespaces").get_by_role("link", name="default", exact=True).click()
    page.locator("#rendezvous").get_by_role("link", name="phase_1", exact=True).click()
    expect(page.locator("dl.facts")).to_contain_text("2 of 3 expected")
    expect(page.locator("#participants tbody tr")).to_have_count(2)
    expect(page.locator("#participants")).to_contain_text("<img src=x onerror=alert(2)>")
    shot(page, shots, "rendezvous")

    tab(page, "Timers")
    # The script's timer (and, until the tick finds its continuation sent, order-7's dispatch
    # guard, which links to the barrier it watches).
    wake = page.locator("#timers tbody tr", has=page.get_by_role("cell", name="wake", exact=True))
    expect(wake).to_have_count(1)
    expect(wake.locator(".badge")).to_have_text("waiting")
    shot(page, shots, "timers")

    # Page through 2 500 barriers, 100 a page.
    page.goto(f"{base}/console/tenants/bulk/barriers")
    ids = set()
    pages = 0
    while True:
        expect(page.locator("#barriers tbody tr").first).to_be_visible()
        shown = page.locator("#barriers td.id a").all_inner_texts()
        check(len(shown) == 100, f"page {pages + 1} shows {len(shown)} barriers, not 100", page)
        ids.update(shown)
        pages += 1
        nxt = page.locator("nav.pager a[rel=next]")
        if nxt.count() == 0:
            break
        nxt.click()
        check(pages < 30, "the pager never ends", page)
    check(pages == 25, f"2 500 barriers took {pages} pages, not 25", page)
    check(len(ids) == 2500, f"paging showed {len(ids)} distinct barriers, not 2 500", page)
    expect(page.locator("nav.pager .end")).to_have_text("end of the list")
    # And by state: every third one is complete.
    page.goto(f"{base}/console/tenants/bulk/barriers?state=complete&limit=500")
    complete = 0
    while True:
        complete += page.locator("#barriers tbody tr[data-state=complete]").count()
        check(page.locator("#barriers tbody tr:not([data-state=complete])").count() == 0, "the complete filter shows others", page)
        nxt = page.locator("nav.pager a[rel=next]")
        if nxt.count() == 0:
            break
        nxt.click()
    check(complete == 834, f"{complete} complete barriers, not 834", page)

    # Without the token (a client without the cookie) nothing opens.
    try:
        urllib.request.urlopen(f"{base}/console/tenants/acme/barriers", timeout=10)
        check(False, "a page opened without the token", page)
    except urllib.error.HTTPError as e:
        check(e.code == 401, f"a page without the token answered {e.code}", page)
    no_tenant_script_ran(page, seen)


def aws(ctx, url, shots):
    page = ctx.new_page()
    seen = watch(page)
    base = base_of(url)
    page.goto(url)
    expect(page).to_have_url(f"{base}/console/")
    expect(page.locator("header .source")).to_contain_text("AWS")
    expect(page.locator("table.list")).to_contain_text("acme")
    shot(page, shots, "aws-overview")
    page.goto(f"{base}/console/tenants/acme/barriers?state=open")
    page.locator("#barriers").get_by_role("link", name="order-7", exact=True).click()
    page.uncheck("#live")
    hostile_name = "<script>alert(1)</script>.xml"
    hostile = page.locator("#members tr", has=page.get_by_text(hostile_name, exact=True))
    expect(hostile.locator("td.member")).to_have_text(hostile_name)
    row = page.locator('#members tr[data-member="a.xml"]')
    row.get_by_role("button", name="Ack ok").click()
    expect(page.locator("p.notice")).to_contain_text('acknowledged "a.xml" (ok)')
    expect(page.locator('#members tr[data-member="a.xml"]')).to_have_attribute("data-state", "ok")
    shot(page, shots, "aws-barrier")
    tab(page, "Dead letters")
    letters = page.locator("#dead-letters tbody tr")
    expect(letters).to_have_count(1)
    expect(letters.first).to_contain_text("<img src=x onerror=\"document.title='pwned'\">boom")
    letters.first.get_by_role("button", name="Redrive").click()
    expect(page.locator("p.notice")).to_contain_text("1 dead letter(s) moved back to their queue")
    expect(page.locator("p.empty")).to_have_text("No dead letters.")
    tab(page, "Invocations")
    expect(page.locator("p.empty")).to_contain_text("CloudWatch Logs Insights")
    no_tenant_script_ran(page, seen)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("scenario", choices=["local", "aws"])
    ap.add_argument("--url", required=True)
    ap.add_argument("--shots", default="")
    a = ap.parse_args()
    expect.set_options(timeout=15_000)
    with sync_playwright() as p:
        ctx = open_browser(p)
        try:
            {"local": local, "aws": aws}[a.scenario](ctx, a.url, a.shots)
        except Exception as e:  # noqa: BLE001 - every failure is reported with the page
            page = ctx.pages[-1] if ctx.pages else None
            print(f"console.py {a.scenario}: {type(e).__name__}: {e}", file=sys.stderr)
            if page is not None:
                print(f"at {page.url}; its main reads:", file=sys.stderr)
                try:
                    print(page.inner_text("main")[:4000], file=sys.stderr)
                    if a.shots:
                        os.makedirs(a.shots, exist_ok=True)
                        page.screenshot(path=os.path.join(a.shots, f"failed-{a.scenario}.png"), full_page=True)
                except Exception:  # noqa: BLE001
                    pass
            return 1
        finally:
            ctx.close()
    print(f"console.py {a.scenario}: every check passed")
    return 0


if __name__ == "__main__":
    sys.exit(main())
