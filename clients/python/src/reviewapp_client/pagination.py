"""Listings that fetch their next page as you iterate: `for p in client.list_proposals()`
reads every page, one request at a time; `.pages()` gives the pages themselves."""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from typing import Generic, TypeVar

from .models import Page

T = TypeVar("T")
Cursor = str | int | None


class SyncPager(Generic[T]):  # noqa: UP046 (the client runs on Python 3.10)
    """Iterate for every item of every page. Nothing is fetched until you iterate."""

    def __init__(self, fetch: Callable[[Cursor], Page[T]], start: Cursor = None):
        self._fetch = fetch
        self._start = start

    def pages(self) -> Iterator[Page[T]]:
        cursor = self._start
        while True:
            page = self._fetch(cursor)
            yield page
            if page.next is None:
                return
            cursor = page.next

    def __iter__(self) -> Iterator[T]:
        for page in self.pages():
            yield from page.items


class AsyncPager(Generic[T]):  # noqa: UP046 (the client runs on Python 3.10)
    """`async for` every item of every page. Nothing is fetched until you iterate."""

    def __init__(self, fetch: Callable[[Cursor], Awaitable[Page[T]]], start: Cursor = None):
        self._fetch = fetch
        self._start = start

    async def pages(self) -> AsyncIterator[Page[T]]:
        cursor = self._start
        while True:
            page = await self._fetch(cursor)
            yield page
            if page.next is None:
                return
            cursor = page.next

    async def __aiter__(self) -> AsyncIterator[T]:
        async for page in self.pages():
            for item in page.items:
                yield item
