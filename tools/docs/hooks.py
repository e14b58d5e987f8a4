"""mkdocs hook: a page's link to a file of the repository outside docs/ (a benchmark result, a
build file) would be a dead link on the site, and mkdocs cannot check it. Each such link is checked
here (the file must exist, or the strict build fails naming the page and the link) and then
pointed at the file in the repository (``HYPERSPACE_SCM_URL``, as the POM's <scm> takes it), or
shown as the file's path in code font when no repository is named."""

from __future__ import annotations

import logging
import os
import re
from pathlib import Path
from typing import Any

log = logging.getLogger("mkdocs.plugins.hyperspace")

# [text](target) where the target is outside docs/ ("../...").
_OUTSIDE_LINK = re.compile(r"\[([^\]]+)\]\((\.\./[^)\s]+)\)")


def on_page_markdown(markdown: str, page: Any, config: Any, files: Any) -> str:
    docs_dir = Path(config["docs_dir"]).resolve()
    repo = docs_dir.parent
    source = (docs_dir / page.file.src_path).parent
    scm = os.environ.get("HYPERSPACE_SCM_URL", "").rstrip("/")

    def rewrite(match: re.Match[str]) -> str:
        text, target = match.group(1), match.group(2)
        path, _, anchor = target.partition("#")
        resolved = (source / path).resolve()
        if docs_dir in resolved.parents or resolved == docs_dir:
            return match.group(0)  # a page of the site: mkdocs checks it
        if repo not in resolved.parents or not resolved.exists():
            log.warning(
                "Doc file '%s' links to '%s', which is not a file of the repository", page.file.src_path, target
            )
            return match.group(0)
        relative = resolved.relative_to(repo).as_posix()
        if scm:
            return f"[{text}]({scm}/blob/main/{relative}{'#' + anchor if anchor else ''})"
        return text if text.strip("`") == relative else f"{text} (`{relative}`)"

    return _OUTSIDE_LINK.sub(rewrite, markdown)
