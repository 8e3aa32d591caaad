"""What fetch.py does with robots.txt answers, without bounds on seconds (against a real local server): the
crawl delay it hands the throttle, the exact refusal message, what an unreachable or redirecting robots.txt means."""

from __future__ import annotations

import pytest
from web_servers import LocalServer, load_all, make_loader

from ragloom.errors import RobotsDisallowedError


def _local(**options):  # type: ignore[no-untyped-def]
    return make_loader(allow_private_network=True, **options)


def _site(server: LocalServer) -> str:
    return server.url("/").rstrip("/")


def test_a_crawl_delay_is_set_for_the_site_capped_at_max_crawl_delay(server: LocalServer) -> None:
    server.route("/robots.txt", "User-agent: *\nCrawl-delay: 7\n", content_type="text/plain")
    server.route("/page", "<p>page</p>")
    loader = _local(max_crawl_delay=3.0)
    [document] = load_all(loader, server.url("/page"))
    assert document.text == "page"
    assert loader.throttle._delays == {_site(server): 3.0}


def test_the_crawl_delay_of_the_loaders_own_group_is_the_one_set(server: LocalServer) -> None:
    server.route("/robots.txt", "User-agent: lumen-bot\nCrawl-delay: 4\n\nUser-agent: *\nCrawl-delay: 9\n", content_type="text/plain")
    server.route("/page", "<p>page</p>")
    loader = _local(user_agent="lumen-bot/1.0", max_crawl_delay=30.0)
    load_all(loader, server.url("/page"))
    assert loader.throttle._delays == {_site(server): 4.0}


def test_no_crawl_delay_sets_no_delay(server: LocalServer) -> None:
    server.route("/robots.txt", "User-agent: *\nDisallow: /no/\n", content_type="text/plain")
    server.route("/page", "<p>page</p>")
    loader = _local()
    load_all(loader, server.url("/page"))
    assert loader.throttle._delays == {}


def test_a_refusal_by_the_rules_names_the_site_and_url_and_nothing_more(server: LocalServer) -> None:
    server.route("/robots.txt", "User-agent: *\nDisallow: /no/\n", content_type="text/plain")
    server.route("/no/page", "<p>no</p>")
    url = server.url("/no/page")
    with pytest.raises(RobotsDisallowedError) as caught:
        load_all(_local(), url)
    assert caught.value.reason == f"robots.txt of {_site(server)} disallows {url}"
    assert caught.value.source == url
    assert "/no/page" not in server.paths()


@pytest.mark.parametrize("status", [429, 500, 503])
def test_an_unreachable_robots_txt_disallows_with_its_status(server: LocalServer, status: int) -> None:
    server.route("/robots.txt", "busy", status=status, content_type="text/plain")
    server.route("/page", "<p>page</p>")
    url = server.url("/page")
    with pytest.raises(RobotsDisallowedError) as caught:
        load_all(_local(retries=0), url)
    assert caught.value.reason == f"robots.txt of {_site(server)} disallows {url} (robots.txt is unreachable (HTTP {status}))"
    assert "/page" not in server.paths()


def test_a_refusal_after_a_redirect_names_the_hop(server: LocalServer) -> None:
    server.route("/robots.txt", "User-agent: *\nDisallow: /no/\n", content_type="text/plain")
    server.route("/start", "", status=301, headers={"Location": "/no/page"})
    server.route("/no/page", "<p>no</p>")
    start, hop = server.url("/start"), server.url("/no/page")
    with pytest.raises(RobotsDisallowedError) as caught:
        load_all(_local(), start)
    assert (caught.value.reason, caught.value.source) == (f"redirect to {hop}: robots.txt of {_site(server)} disallows {hop}", start)
    assert server.paths() == ["/robots.txt", "/start"]


def test_only_a_byte_order_mark_is_stripped_from_the_start_of_robots_txt(server: LocalServer) -> None:
    # an unknown first line stays unknown: "XUser-agent" opens no group, so the Disallow after it binds no one
    server.route("/robots.txt", "XUser-agent: *\nDisallow: /no/\n", content_type="text/plain")
    server.route("/no/page", "<p>yes</p>")
    [document] = load_all(_local(), server.url("/no/page"))
    assert document.text == "yes"
