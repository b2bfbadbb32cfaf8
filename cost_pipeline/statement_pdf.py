"""``cost-pipeline report --pdf``: the HTML statement (``cost_pipeline.statement``) as PDF, with WeasyPrint.

One job: lay the same self-contained HTML out as printed pages. WeasyPrint comes from PyPI (the ``pdf`` extra) and
draws text with Pango from Debian (libpango-1.0-0, libpangoft2-1.0-0) and the fonts fontconfig finds; nothing is
fetched (the statement names no address: a URL fetcher that refuses every one makes sure of it). Without either,
``--pdf`` is refused with one line naming what to install (exit 11); the HTML statement does not need them.
"""

from __future__ import annotations

from cost_pipeline.command_error import CommandError

# A page, and tables that break between rows, not through them.
_PRINT_CSS = """
@page { size: A4 landscape; margin: 12mm; }
table { page-break-inside: auto; }
tr, svg { page-break-inside: avoid; }
"""
PDF_UNAVAILABLE = 11


class PdfUnavailable(CommandError):
    default_exit_code = PDF_UNAVAILABLE


def _no_fetching(url: str, *args: object, **kwargs: object) -> dict:
    raise ValueError(f"the statement fetches nothing, not {url}")


def html_to_pdf(document: str) -> bytes:
    """The statement ``document`` (HTML) as the bytes of a PDF file."""
    try:
        import weasyprint
    except ImportError as missing:
        raise PdfUnavailable(
            "--pdf needs WeasyPrint (pip install -e '.[pdf]') and Pango from Debian (apt-get install libpango-1.0-0 "
            f"libpangoft2-1.0-0): {str(missing).splitlines()[0]}"
        ) from None
    except OSError as missing:  # WeasyPrint is there, Pango is not
        raise PdfUnavailable(
            "--pdf needs Pango from Debian (apt-get install libpango-1.0-0 libpangoft2-1.0-0): "
            f"{str(missing).splitlines()[0]}"
        ) from None
    html = weasyprint.HTML(string=document, url_fetcher=_no_fetching)
    return html.write_pdf(stylesheets=[weasyprint.CSS(string=_PRINT_CSS)])
