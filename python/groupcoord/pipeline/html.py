"""A report as one self-contained directory: ``index.html`` with PNG plots and CSV tables next
to it, opened from disk with no server and no network (no scripts, no remote fonts or styles).

Jobs build a :class:`Report` of sections (headings, text, figures, tables) and call
:meth:`Report.write`; figures are matplotlib figures saved as PNG (the Agg backend, so no
display is needed).
"""

from __future__ import annotations

import csv
import html
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

__all__ = ["Report", "new_figure"]

_STYLE = """
body { font-family: sans-serif; max-width: 1100px; margin: 2em auto; color: #222; }
h1 { border-bottom: 2px solid #444; } h2 { margin-top: 2em; border-bottom: 1px solid #aaa; }
table { border-collapse: collapse; margin: 1em 0; font-size: 0.9em; }
th, td { border: 1px solid #bbb; padding: 0.25em 0.6em; text-align: right; }
th { background: #eee; } td.text { text-align: left; }
img { max-width: 100%; border: 1px solid #ddd; margin: 0.5em 0; }
p.note { color: #555; }
"""


@dataclass
class Report:
    title: str
    _parts: list[str] = field(default_factory=list)
    _figures: list[tuple[str, Any]] = field(default_factory=list)
    _tables: list[tuple[str, Sequence[str], Sequence[Sequence[object]]]] = field(
        default_factory=list
    )

    def heading(self, text: str) -> None:
        self._parts.append(f"<h2>{html.escape(text)}</h2>")

    def text(self, text: str, *, note: bool = False) -> None:
        css = ' class="note"' if note else ""
        self._parts.append(f"<p{css}>{html.escape(text)}</p>")

    def figure(self, name: str, figure: Any, caption: str) -> None:
        """A matplotlib figure, saved as ``name``.png next to index.html."""
        filename = f"{name}.png"
        self._figures.append((filename, figure))
        self._parts.append(
            f'<figure><img src="{html.escape(filename)}" alt="{html.escape(caption)}">'
            f"<figcaption>{html.escape(caption)}</figcaption></figure>"
        )

    def table(
        self,
        name: str,
        columns: Sequence[str],
        rows: Sequence[Sequence[object]],
        *,
        caption: str = "",
        max_rows: int = 50,
    ) -> None:
        """A table shown in the page (up to ``max_rows``) and written whole as ``name``.csv."""
        filename = f"{name}.csv"
        self._tables.append((filename, columns, rows))
        head = "".join(f"<th>{html.escape(str(c))}</th>" for c in columns)
        body = []
        for row in rows[:max_rows]:
            cells = "".join(_cell(v) for v in row)
            body.append(f"<tr>{cells}</tr>")
        link = f'<a href="{html.escape(filename)}">{html.escape(filename)}</a>'
        more = (
            f'<p class="note">{len(rows) - max_rows} more rows in {link}</p>'
            if len(rows) > max_rows
            else f'<p class="note">{link}</p>'
        )
        title = f"<p>{html.escape(caption)}</p>" if caption else ""
        self._parts.append(f"{title}<table><tr>{head}</tr>{''.join(body)}</table>{more}")

    def write(self, directory: str | Path) -> Path:
        """Write index.html, the PNGs and the CSVs into ``directory``; return index.html."""
        import matplotlib.pyplot as plt

        out = Path(directory)
        out.mkdir(parents=True, exist_ok=True)
        for filename, figure in self._figures:
            figure.savefig(out / filename, dpi=110, bbox_inches="tight")
            plt.close(figure)
        for filename, columns, rows in self._tables:
            with (out / filename).open("w", newline="", encoding="utf-8") as handle:
                writer = csv.writer(handle)
                writer.writerow(columns)
                writer.writerows(rows)
        page = (
            '<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">'
            f"<title>{html.escape(self.title)}</title><style>{_STYLE}</style></head>"
            f"<body><h1>{html.escape(self.title)}</h1>\n"
            + "\n".join(self._parts)
            + "\n</body></html>\n"
        )
        index = out / "index.html"
        index.write_text(page, encoding="utf-8")
        return index


def _cell(value: object) -> str:
    if isinstance(value, float):
        return f"<td>{value:,.3g}</td>" if abs(value) < 1000 else f"<td>{value:,.0f}</td>"
    if isinstance(value, int) and not isinstance(value, bool):
        return f"<td>{value:,}</td>"
    return f'<td class="text">{html.escape("" if value is None else str(value))}</td>'


def new_figure(width: float = 8, height: float = 4.5) -> tuple[Any, Any]:
    """A matplotlib (figure, axes) on the Agg backend (no display needed)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt.subplots(figsize=(width, height))
