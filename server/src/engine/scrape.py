# The engine scraper Sleuth runs on a GPU host, one per run (see scraper.rs).
# Arguments: the /metrics URL, the interval in ms, the most bytes of a body.
# A scrape, a frame `sleuth-scrape STATUS LEN`, the body; until stdin says
# `last` (one more) or closes. A /metrics slower than the interval is waited
# for, then what is left of the interval (none); how many scrapes were late is
# said at the end (`sleuth-late N SLOWEST_MS`). Standard library only.
import select, sys, time, urllib.error, urllib.request
url, every, most = sys.argv[1], int(sys.argv[2]) / 1000.0, int(sys.argv[3])
out = sys.stdout.buffer
late, slowest = 0, 0.0
def scrape():
    global late, slowest
    began = time.monotonic()
    try:
        with urllib.request.urlopen(url, timeout=5) as r:
            status, body = r.status, r.read(most)
    except urllib.error.HTTPError as e:
        status, body = e.code, b""
    except Exception as e:
        status, body = 0, repr(e).encode()[:300]
    out.write(b"sleuth-scrape %d %d\n" % (status, len(body)) + body + b"\n")
    out.flush()
    took = time.monotonic() - began
    if took > every:
        late, slowest = late + 1, max(slowest, took)
due = time.monotonic()
while True:
    scrape()
    due = max(due + every, time.monotonic())
    ready, _, _ = select.select([sys.stdin], [], [], max(0.0, due - time.monotonic()))
    if ready:
        line = sys.stdin.buffer.readline()
        if line.strip() == b"last":
            scrape()
        break
if late:
    out.write(b"sleuth-late %d %d\n" % (late, int(slowest * 1000)))
    out.flush()
