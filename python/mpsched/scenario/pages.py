"""Workload presets and generators: the web pages of the seed experiments, and data-center
flow sizes drawn from empirical distributions.

Web pages (``PAGES``) are lists of object sizes in bytes, fetched in order over one HTTP/1.1
connection (`AppConfig::Web` in the core).

* The four pages of the CFS paper's Table 5 (`000_` §5.2: Wikipedia 76 KB, Google 220 KB,
  Amazon 742 KB, Huffington Post 1,146 KB), each one file fetched with wget / curl, as the
  paper measures them. The paper does not define KB; 1 KB = 1000 bytes here.
* ``median``: a median mobile web page built from the HTTP Archive Web Almanac 2024 (crawl of
  October 2024; page-weight and HTTP chapters, figures transcribed in `MEDIAN_PAGE_SOURCE`):
  2311 KB over 66 requests (median mobile page weight; median requests per mobile page). The
  per-type medians of a mobile home page give the objects: 2 HTML requests of 18 KB in all,
  8 CSS (73 KB), 3 fonts (111 KB), 22 scripts (558 KB), 16 images (900 KB); the 15 remaining
  requests share the remaining 651 KB. Each type's bytes are split evenly over its requests,
  fetched HTML first, then CSS, fonts, scripts, images, the rest. Medians do not add up (the
  median page is not the sum of median parts), so this is a plausible median-sized page, not
  a measured one. The Almanac's KB is 1024 bytes (HTTP Archive reports bytes / 1024).
"""

from __future__ import annotations

__all__ = ["PAGES", "MEDIAN_PAGE_SOURCE", "page_objects"]

#: Figures of the median page, as transcribed from the HTTP Archive Web Almanac 2024
#: (github.com/HTTPArchive/almanac.httparchive.org, src/content/en/2024/page-weight.md at
#: 03ebf95f and http.md at 026a1fc2).
MEDIAN_PAGE_SOURCE = {
    "page_weight_kb_mobile_median": 2311,
    "requests_mobile_median": 66,
    # (type, median requests on a mobile page, median KB on a mobile home page)
    "by_type": [("html", 2, 18), ("css", 8, 73), ("font", 3, 111), ("javascript", 22, 558), ("image", 16, 900)],
}


def _split(total_bytes: int, n: int) -> list[int]:
    """`n` sizes as equal as integers allow, summing to `total_bytes`."""
    q, r = divmod(total_bytes, n)
    return [q + (1 if i < r else 0) for i in range(n)]


def _median_page() -> list[int]:
    src = MEDIAN_PAGE_SOURCE
    kib = 1024
    objects: list[int] = []
    used_kb = used_req = 0
    for _, n, kb in src["by_type"]:
        objects += _split(kb * kib, n)
        used_kb += kb
        used_req += n
    rest_n = src["requests_mobile_median"] - used_req
    rest_kb = src["page_weight_kb_mobile_median"] - used_kb
    objects += _split(rest_kb * kib, rest_n)
    return objects


#: Named pages: object sizes in bytes, in fetch order.
PAGES: dict[str, list[int]] = {
    "wikipedia": [76_000],
    "google": [220_000],
    "amazon": [742_000],
    "huffingtonpost": [1_146_000],
    "median": _median_page(),
}


def page_objects(name: str) -> list[int]:
    """The object sizes of a named page (a copy)."""
    try:
        return list(PAGES[name])
    except KeyError:
        raise ValueError(f"unknown page {name!r}; presets: {', '.join(PAGES)}") from None
