"""A page's elements, read back with the standard library's HTML parser (for the view's tests)."""

from __future__ import annotations

from html.parser import HTMLParser


class Elements(HTMLParser):
    """Every start tag's attributes, in document order."""

    def __init__(self, page: str):
        super().__init__()
        self.tags: list[tuple[str, dict[str, str]]] = []
        self.feed(page)

    def handle_starttag(self, tag: str, attrs: list) -> None:
        self.tags.append((tag, {k: v or "" for k, v in attrs}))

    def with_class(self, name: str) -> list[dict[str, str]]:
        """The attributes of every element of class `name`."""
        return [attrs for _, attrs in self.tags if name in attrs.get("class", "").split()]
